"""The ``compressor="lz4"`` preset: Blosc-LZ4 payloads in fixed blocks, decoded block by block."""

from __future__ import annotations

import json
import struct
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from numcodecs import blosc

import zarr_vectors as zv
from zarr_vectors.core.payload import codec as zv_codec
from zarr_vectors.core.payload import compression as zv_compression
from zarr_vectors.core.payload import create as zv_create
from zarr_vectors.core.payload.blosc_blocks import (
    _needed_blocks,
    _runs,
    _runs_of,
    blosc_table,
    decode_blocks,
    decode_ranges,
    table_length,
)
from zarr_vectors.core.payload.blosc_many import decode_many, layout_key
from zarr_vectors.core.payload.lz4_blocks import _C_BLOSC, _encode_lz4_blocks, encode_lz4_blocks
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.testing.examples import random_walk_paths


def _ranges(n: int, pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    starts = np.array(sorted(min(a, n) for a, _ in pairs), dtype=np.int64)
    stops = np.minimum(starts + np.array([c for _, c in pairs], dtype=np.int64), n)
    return starts, stops


def _check_partial(enc: bytes, raw: bytes, skip: int, pairs: list[tuple[int, int]]) -> None:
    table = blosc_table(enc[: table_length(enc, "x")], "x", len(enc))
    assert table.nbytes == len(raw)
    body = np.frombuffer(raw, dtype=np.uint8)[skip:]
    starts, stops = _ranges(len(body), pairs)
    out = np.zeros(len(body), dtype=np.uint8)
    decode_blocks(table, out, starts, stops, skip, "x", lambda o, n: enc[o : o + n])
    got, pos = decode_ranges(table, starts, stops, skip, "x", lambda o, n: enc[o : o + n])
    for a, b, p in zip(starts.tolist(), stops.tolist(), pos.tolist(), strict=True):
        np.testing.assert_array_equal(out[a:b], body[a:b])
        np.testing.assert_array_equal(got[p : p + b - a], body[a:b])


_DATA = st.one_of(
    st.binary(max_size=5000),
    st.lists(st.floats(-1e3, 1e3, width=32), max_size=1500).map(
        lambda v: np.cumsum(np.asarray(v, dtype="<f4")).astype("<f4").tobytes()
    ),
)
_PAIRS = st.lists(st.tuples(st.integers(0, 6000), st.integers(0, 700)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    raw=_DATA,
    typesize=st.sampled_from([1, 2, 3, 4, 8, 12, 16, 32]),
    blocksize=st.sampled_from([1, 64, 100, 1000, 4096]),
    skip=st.sampled_from([0, 8]),
    pairs=_PAIRS,
)
def test_lz4_blocks_are_plain_blosc_and_seekable(
    raw: bytes, typesize: int, blocksize: int, skip: int, pairs: list[tuple[int, int]]
) -> None:
    enc = encode_lz4_blocks(raw, typesize, blocksize)
    if not raw:  # c-blosc's own empty buffer is the same header (and numcodecs refuses it)
        assert (
            enc == bytes(numcodecs.Blosc(cname="lz4").encode(np.zeros(0, np.uint8)))[:3] + enc[3:]
        )
        return
    assert bytes(blosc.decompress(enc)) == raw  # what zarr-python / numcodecs decode
    if len(raw) > skip:
        _check_partial(enc, raw, skip, pairs)


@settings(max_examples=120, deadline=None)
@given(
    raw=_DATA,
    cname=st.sampled_from(["lz4", "lz4hc", "zstd", "blosclz", "zlib"]),
    clevel=st.integers(0, 9),
    shuffle=st.sampled_from([0, 1, 2]),
    typesize=st.sampled_from([1, 4, 8]),
    blocksize=st.sampled_from([0, 128, 256, 4096]),
    pairs=_PAIRS,
)
def test_partial_decode_of_any_blosc_buffer(
    raw: bytes,
    cname: str,
    clevel: int,
    shuffle: int,
    typesize: int,
    blocksize: int,
    pairs: list[tuple[int, int]],
) -> None:
    """Buffers written by c-blosc itself (split streams, bit shuffle, memcpyed) decode too."""
    codec = numcodecs.Blosc(
        cname=cname, clevel=clevel, shuffle=shuffle, blocksize=blocksize, typesize=typesize
    )
    enc = bytes(codec.encode(np.frombuffer(raw, dtype=np.uint8)))
    if raw:
        _check_partial(enc, raw, 8 if len(raw) > 8 else 0, pairs)


@settings(max_examples=60, deadline=None)
@given(
    raw=_DATA,
    typesize=st.sampled_from([1, 4, 12]),
    blocksize=st.sampled_from([64, 1000, 4096]),
    pairs=_PAIRS,
)
def test_python_block_encoder_is_plain_blosc_and_seekable(
    raw: bytes, typesize: int, blocksize: int, pairs: list[tuple[int, int]]
) -> None:
    """The fallback encoder (numcodecs builds without c-blosc's symbols) writes the same kind."""
    enc = _encode_lz4_blocks(np.frombuffer(raw, np.uint8), typesize, blocksize)
    if raw:
        assert bytes(blosc.decompress(enc)) == raw
        _check_partial(enc, raw, 8 if len(raw) > 8 else 0, pairs)


def test_c_blosc_split_mode_is_restored_after_encoding() -> None:
    values = np.arange(300_000, dtype="<f4")
    plain = numcodecs.Blosc(cname="lz4", shuffle=1, typesize=4)
    before = bytes(plain.encode(values))
    enc = encode_lz4_blocks(values.tobytes(), 4, 4096)
    assert enc[2] & 0x10  # unsplit blocks
    assert blosc_table(enc, "x").blocksize == 4096
    after = bytes(plain.encode(values))
    assert not before[2] & 0x10  # c-blosc's default: split streams, 64 KiB+ blocks
    assert after == before
    assert _C_BLOSC.available  # the fast path ran (numcodecs wheels export the symbols)


def test_concurrent_encodes_stay_unsplit_and_restore_the_split_mode() -> None:
    rng = np.random.default_rng(3)
    payloads = [rng.normal(size=50_000 + 1000 * i).astype("<f4").tobytes() for i in range(8)]
    results: dict[int, bytes] = {}
    barrier = threading.Barrier(4)

    def work(k: int) -> None:
        barrier.wait()
        for i in range(k, len(payloads), 4):
            for _ in range(5):
                results[i] = encode_lz4_blocks(payloads[i], 4, 4096)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, raw in enumerate(payloads):
        enc = results[i]
        assert enc[2] & 0x10
        assert blosc_table(enc, "x").blocksize == 4096
        assert bytes(blosc.decompress(enc)) == raw
    plain = bytes(numcodecs.Blosc(cname="lz4", shuffle=1, typesize=4).encode(payloads[0]))
    assert not plain[2] & 0x10  # c-blosc's default split mode is back


def test_python_encoder_is_used_without_c_blosc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_C_BLOSC, "available", False)
    raw = np.arange(100_000, dtype="<f4").tobytes()
    enc = encode_lz4_blocks(raw, 4, 4096)
    assert enc == _encode_lz4_blocks(np.frombuffer(raw, np.uint8), 4, 4096)
    assert bytes(blosc.decompress(enc)) == raw


def test_blocks_have_the_requested_size() -> None:
    raw = np.arange(100_000, dtype="<f4").tobytes()
    enc = encode_lz4_blocks(raw, 4, 4096)
    table = blosc_table(enc, "x")
    assert table.blocksize == 4096
    assert table.n_blocks == -(-len(raw) // 4096)
    assert len(enc) < len(raw) / 2  # shuffled, the exponent bytes compress


def test_incompressible_data_is_stored_plain() -> None:
    raw = np.random.default_rng(0).bytes(10_000)
    enc = encode_lz4_blocks(raw, 1, 1000)
    assert blosc_table(enc, "x").memcpyed
    assert bytes(blosc.decompress(enc)) == raw
    _check_partial(enc, raw, 8, [(100, 50), (5000, 3000)])


def test_damaged_blosc_buffers_are_corrupt_payloads() -> None:
    enc = bytearray(encode_lz4_blocks(np.arange(5000, dtype="<f4").tobytes(), 4, 1024))
    with pytest.raises(CorruptPayloadError, match="Blosc header says"):
        blosc_table(bytes(enc[:-1]), "vertices chunk 2")
    bad = bytearray(enc)
    bad[0] = 9  # unknown format version
    with pytest.raises(CorruptPayloadError, match="malformed Blosc header"):
        blosc_table(bytes(bad), "x")
    bad = bytearray(enc)
    struct.pack_into("<i", bad, 16, 10**6)  # first block starts beyond the buffer
    with pytest.raises(CorruptPayloadError, match="out of order"):
        blosc_table(bytes(bad), "x")
    bad = bytearray(enc)
    first = blosc_table(bytes(enc), "x").table_bytes()
    bad[first + 4 : first + 24] = b"\xff" * 20  # garbage inside the first block
    table = blosc_table(bytes(bad), "x")
    out = np.zeros(table.nbytes, dtype=np.uint8)
    with pytest.raises(CorruptPayloadError, match=r"cannot decode Blosc blocks|decode to"):
        decode_blocks(
            table, out, np.array([0]), np.array([10]), 0, "x", lambda o, n: bad[o : o + n]
        )


def test_bad_encoder_arguments() -> None:
    with pytest.raises(ValueError, match="typesize"):
        encode_lz4_blocks(b"abc", 0, 10)
    with pytest.raises(ValueError, match="block size"):
        encode_lz4_blocks(b"abc", 1, 0)


# -- stores ----------------------------------------------------------------------------------


def _paths(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return random_walk_paths(n, seed, min_length=1)


def _codecs(path: Path) -> list[dict[str, Any]]:
    doc = json.loads((path / "zarr.json").read_text())
    return list(doc["codecs"])


@pytest.mark.parametrize("kind", ["local", "memory", "zip", "v2", "sharded"])
def test_lz4_store_round_trips_and_answers_queries(tmp_path: Path, kind: str) -> None:
    pos, offsets = _paths()
    fa = np.arange(len(pos), dtype=np.float64)
    target: Any = {
        "memory": zarr.storage.MemoryStore(),
        "zip": tmp_path / "s.zip",
    }.get(kind, tmp_path / "s.zarrvectors")
    extra: dict[str, Any] = {}
    if kind == "v2":
        extra["zarr_format"] = 2
    if kind == "sharded":
        extra["shards"] = (2, 2, 2)
    zv.write_streamlines(
        target,
        pos,
        offsets=offsets,
        chunk_shape=(4, 4, 4),
        attributes={"fa": fa},
        compressor="lz4",
        frame_bytes=256,
        **extra,
    )
    reader = zv.open(target)
    for i in [0, 17, 150, 299]:
        got = reader.read(object_ids=[i])
        np.testing.assert_array_equal(got.positions, pos[offsets[i] : offsets[i + 1]])
        np.testing.assert_array_equal(got.attributes["fa"], fa[offsets[i] : offsets[i + 1]])
    every = zv.read_streamlines(target)
    np.testing.assert_array_equal(every.positions, pos)
    np.testing.assert_array_equal(every.offsets, offsets)
    np.testing.assert_array_equal(every.attributes["fa"], fa)
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    for lo, hi in [([2, 2, 2], [5, 5, 5]), ([0, 0, 0], [1.5, 9, 9]), ([-9, -9, -9], [20, 20, 20])]:
        hit = reader.read(bbox=(lo, hi))
        inside = np.all((pos >= lo) & (pos < np.asarray(hi)), axis=1)
        expect = np.unique(owner[inside])
        np.testing.assert_array_equal(np.asarray(hit.object_ids), expect)
        want = np.concatenate([pos[offsets[i] : offsets[i + 1]] for i in expect])
        np.testing.assert_array_equal(hit.positions, want)
    assert not zv.validate(target, level=3).errors


def test_lz4_preset_metadata_and_plain_zarr(tmp_path: Path) -> None:
    """Payload arrays say Blosc LZ4 + shuffle with the frame size as block size, the object
    index too (16 KiB blocks); other dense arrays stay zstd; plain zarr-python decodes all."""
    pos, offsets = _paths(80, seed=2)
    zv.write_streamlines(
        tmp_path / "s", pos, offsets=offsets, chunk_shape=(50, 50, 50), compressor="lz4"
    )
    level = tmp_path / "s" / "0"
    blosc_cfg = _codecs(level / "vertices")[1]
    assert blosc_cfg["name"] == "blosc"
    assert blosc_cfg["configuration"] == {
        "typesize": 4,
        "cname": "lz4",
        "clevel": zv_compression.LZ4_LEVEL,
        "shuffle": "shuffle",
        "blocksize": zv_compression.PATH_FRAME_BYTES,  # streamlines: 1 KiB blocks
    }
    assert _codecs(level / "vertex_fragments")[1]["configuration"]["typesize"] == 8
    index = _codecs(level / "object_index" / "manifest")[1]
    assert index["name"] == "blosc"
    assert index["configuration"]["blocksize"] == zv_compression.DENSE_FRAME_BYTES
    assert _codecs(level / "vertex_counts")[1]["name"] == "zstd"
    man = np.asarray(zarr.open_array(level / "object_index" / "manifest", mode="r")[...])
    assert int(man[:, -1].sum()) == len(pos)  # plain zarr decodes the index too
    arr = zarr.open_array(level / "vertices", mode="r")
    counts = np.asarray(zarr.open_array(level / "vertex_counts")).ravel()
    rows = np.concatenate(
        [
            np.frombuffer(arr[np.unravel_index(flat, arr.shape)], dtype="<f4").reshape(-1, 3)
            for flat in np.flatnonzero(counts)
        ]
    )
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, pos.tolist()))


def test_unknown_compressor_name_is_refused(tmp_path: Path) -> None:
    pos, offsets = _paths(5)
    with pytest.raises((ValueError, zv.InvalidInputError), match="unknown name 'lzma'"):
        zv.write_streamlines(
            tmp_path / "s", pos, offsets=offsets, chunk_shape=(5, 5, 5), compressor="lzma"
        )


@pytest.mark.parametrize(
    "write",
    [
        lambda p: zv.write_points(
            p,
            np.random.default_rng(0).uniform(0, 10, (3000, 3)),
            chunk_shape=(3, 3, 3),
            attributes={"a": np.arange(3000, dtype=np.int16)},
            compressor="lz4",
        ),
        lambda p: zv.write_skeletons(
            p,
            np.random.default_rng(1).uniform(0, 10, (500, 3)),
            np.concatenate([[-1], np.arange(499)]),
            chunk_shape=(3, 3, 3),
            attributes={"radius": np.ones(500, np.float32)},
            compressor="lz4",
        ),
        lambda p: zv.write_meshes(
            p,
            np.random.default_rng(2).uniform(0, 10, (300, 3)),
            np.random.default_rng(3).integers(0, 300, (400, 3)),
            chunk_shape=(3, 3, 3),
            compressor="lz4",
        ),
    ],
    ids=["points", "skeleton", "mesh"],
)
def test_every_type_round_trips_with_lz4(tmp_path: Path, write: Any) -> None:
    plain, fast = tmp_path / "plain", tmp_path / "fast"
    write(fast)
    assert not zv.validate(fast, level=3).errors
    reader = zv.open(fast)
    result = reader.read()
    # the same data written with the default compressor reads back identically
    with mock.patch.object(
        zv_compression, "lz4_blosc", lambda fmt, t, b: zv_compression.default_compressor(fmt)
    ):
        write(plain)
    expected = zv.open(plain).read()
    for name in ("positions", "vertices", "edges", "faces", "parents", "object_ids"):
        if hasattr(result, name):
            np.testing.assert_array_equal(getattr(result, name), getattr(expected, name))
    for name, col in expected.attributes.items():
        np.testing.assert_array_equal(result.attributes[name], col)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "header", "length"])
def test_damaged_lz4_payload_on_disk_is_reported(tmp_path: Path, damage: str) -> None:
    pos, offsets = _paths(200, seed=4)
    store = tmp_path / "s.zarrvectors"
    zv.write_streamlines(store, pos, offsets=offsets, chunk_shape=(4, 4, 4), compressor="lz4")
    files = sorted(p for p in (store / "0" / "vertices" / "c").rglob("*") if p.is_file())
    victim = max(files, key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        first = blosc_table(bytes(data[:-4]), "x").table_bytes()  # before the checksum
        data[first + 4 : first + 64] = b"\xff" * 60
    elif damage == "header":
        data[0] = 7
    else:  # the decoded element claims another length than its rows
        struct.pack_into("<I", data, 4, struct.unpack_from("<I", data, 4)[0] - 4)
    victim.write_bytes(bytes(data))
    with pytest.raises(CorruptPayloadError):
        zv.read_streamlines(store)


@pytest.mark.parametrize("compressor", ["default", "lz4"])
def test_damaged_index_block_fails_every_time(tmp_path: Path, compressor: str) -> None:
    """A block that fails to decode is not remembered as decoded by an open Reader."""
    pos, offsets = _paths(3000, seed=6)
    store = tmp_path / "s.zarrvectors"
    zv.write_streamlines(store, pos, offsets=offsets, chunk_shape=(4, 4, 4), compressor=compressor)
    chunk = next(
        p
        for p in (store / "0" / "object_index" / "manifest").rglob("*")
        if p.is_file() and p.name != "zarr.json"
    )
    data = bytearray(chunk.read_bytes())
    mid = len(data) // 3
    data[mid : mid + 2048] = bytes(2048)  # undecodable: the frame (block) fails to decode
    chunk.write_bytes(bytes(data))
    reader = zv.open(store)
    passes: list[list[tuple[int, str]]] = []
    for _ in range(2):
        outcome = []
        for first in range(0, 3000, 100):
            ids = np.arange(first, first + 100)
            try:
                got = reader.read(object_ids=ids)
            except CorruptPayloadError:
                outcome.append((first, "error"))
                continue
            want = pos[offsets[first] : offsets[first + 100]]
            outcome.append((first, "ok" if np.array_equal(got.positions, want) else "wrong"))
        passes.append(outcome)
    assert any(kind == "error" for _, kind in passes[0])
    assert passes[1] == passes[0]  # what failed to decode still fails, never turns to garbage


@pytest.mark.parametrize("checksum", [False, True], ids=["earlier-store", "checksummed"])
def test_lz4_block_payloads_read_in_part_with_and_without_checksum(
    tmp_path: Path, checksum: bool
) -> None:
    """Stores written before checksums (no ``crc32c``) and new ones decode the same rows."""
    root = zarr.open_group(zarr.storage.LocalStore(tmp_path / "s"), mode="w")
    arr = zv_create.create_payload_array(
        root, "p", (4,), attributes={"zv_array": "vertices", "dtype": "<f4"},
        compressor="lz4", frame_bytes=4096, checksum=checksum,
    )  # fmt: skip
    rows = np.arange(30_000, dtype="<f4").tobytes()
    arr.write(np.array([2]), [rows])
    doc = json.loads((tmp_path / "s" / "p" / "zarr.json").read_text())
    names = [c["name"] for c in doc["codecs"]]
    assert names == (["vlen-bytes", "blosc", "crc32c"] if checksum else ["vlen-bytes", "blosc"])
    assert [bytes(b) for b in arr.read(np.array([2]))] == [rows]
    out = np.zeros(len(rows), dtype=np.uint8)
    starts, stops = np.array([40_000], dtype=np.int64), np.array([40_400], dtype=np.int64)
    buf, pos = arr.decode_rows_local(2, out, starts, stops)
    assert buf[pos[0] : pos[0] + 400].tobytes() == rows[40_000:40_400]
    fetched = arr.fetch(np.array([2]))
    assert fetched is not None
    again = np.zeros(len(rows), dtype=np.uint8)
    arr.decode_rows(2, fetched[0], again, starts, stops)
    assert again[40_000:40_400].tobytes() == rows[40_000:40_400]


def test_ordinary_blosc_encodes_are_deterministic_beside_block_encodes() -> None:
    """c-blosc's split mode is process-wide: a block encoder must not change others' bytes."""
    from concurrent.futures import ThreadPoolExecutor

    comp = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    data = np.random.default_rng(3).random(200_000).astype("<f4").tobytes()
    alone = zv_codec.encode_plain(comp, data)
    raw = np.random.default_rng(4).random(400_000).astype("<f4").tobytes()

    def blocks(_: int) -> object:
        return encode_lz4_blocks(raw, 4, 4096)

    def plain(_: int) -> bytes:
        return zv_codec.encode_plain(comp, data)

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(blocks if k % 2 else plain, k) for k in range(40)]
        got = [f.result() for k, f in enumerate(futures) if k % 2 == 0]
    assert all(g == alone for g in got)


_LARGE = st.one_of(
    st.binary(min_size=128, max_size=300_000),
    st.tuples(st.integers(32, 75_000), st.integers(0, 2**32 - 1)).map(
        lambda p: np.cumsum(np.random.default_rng(p[1]).normal(size=p[0])).astype("<f4").tobytes()
    ),
)


@settings(max_examples=80, deadline=None)
@given(
    raw=_LARGE,
    typesize=st.sampled_from([1, 2, 4, 8, 12]),
    blocksize=st.sampled_from([64, 1000, 4096, 16384, 65536]),
    pairs=_PAIRS,
)
def test_c_blosc_block_encoder_against_the_public_decoder(
    raw: bytes, typesize: int, blocksize: int, pairs: list[tuple[int, int]]
) -> None:
    """The ctypes encoder writes what numcodecs decodes, as the Python encoder does.

    Both encoders' buffers decode (whole, with ``numcodecs.Blosc``; in part, with
    :func:`decode_blocks`) to the input, with blocks of at most the requested size.  When
    c-blosc would not write such blocks (block sizes below its minimum), the Python encoder's
    buffer is the one stored.
    """
    assert _C_BLOSC.available
    data = np.frombuffer(raw, dtype=np.uint8)
    fast = _C_BLOSC.encode(data, typesize, blocksize)
    slow = _encode_lz4_blocks(data, typesize, blocksize)
    stored = bytes(encode_lz4_blocks(raw, typesize, blocksize))
    assert stored == (slow if fast is None else bytes(fast))
    public = numcodecs.Blosc(cname="lz4")
    for enc in (slow,) if fast is None else (bytes(fast), slow):
        assert bytes(public.decode(enc)) == raw
        table = blosc_table(enc, "x")
        assert table.memcpyed or table.blocksize <= blocksize
        assert table.memcpyed or table.n_blocks == -(-len(raw) // table.blocksize)
        _check_partial(enc, raw, 8, pairs)


@settings(max_examples=300, deadline=None)
@given(
    ranges=st.lists(st.tuples(st.integers(0, 200_000), st.integers(0, 9000)), max_size=400),
    skip=st.sampled_from([0, 8]),
    blocksize=st.sampled_from([64, 1000, 4096]),
)
def test_block_runs_of_many_ranges_match_the_plain_loop(
    ranges: list[tuple[int, int]], skip: int, blocksize: int
) -> None:
    """The numpy path of ``_runs`` (many ranges) gives the runs of the plain Python loop."""
    starts = np.array(sorted(a for a, _ in ranges), dtype=np.int64)
    stops = starts + np.array([n for _, n in ranges], dtype=np.int64)
    expected = _runs_of(starts.tolist(), stops.tolist(), skip, blocksize)
    assert _runs(starts, stops, skip, blocksize) == expected
    with mock.patch("zarr_vectors.core.payload.blosc_blocks._FEW_RANGES", -1):
        assert _runs(starts, stops, skip, blocksize) == expected


@settings(max_examples=200, deadline=None)
@given(
    ranges=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 300)), min_size=0, max_size=30),
    blocksize=st.sampled_from([1, 7, 64, 1000]),
)
def test_needed_blocks_are_the_distinct_blocks_of_the_ranges(
    ranges: list[tuple[int, int]], blocksize: int
) -> None:
    """Sorted, overlapping, empty and block-spanning ranges: exactly the blocks they touch."""
    ranges = sorted(ranges)
    at = np.array([a for a, _ in ranges], dtype=np.int64)
    end = at + np.array([n for _, n in ranges], dtype=np.int64)
    pairs = zip(at.tolist(), end.tolist(), strict=True)
    want = sorted({b // blocksize for a, e in pairs for b in range(a, e)})
    got = _needed_blocks(at, end, blocksize)
    if got is None:
        assert not want
        return
    blocks, rank = got
    assert blocks.tolist() == want
    if rank is not None:  # each range's first block, located in the needed blocks
        assert blocks[rank].tolist() == (at // blocksize).tolist()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    sizes=st.lists(st.integers(1, 9000), min_size=1, max_size=6),
    blocksize=st.sampled_from([64, 1000, 1024]),
    pieces=st.integers(0, 12),
)
def test_decode_many_equals_slices_of_each_buffer(
    seed: int, sizes: list[int], blocksize: int, pieces: int
) -> None:
    """Blocks of several buffers (short last blocks, stored-as-is blocks, empty ranges and
    ranges over several blocks included) decoded together give each range's bytes."""
    rng = np.random.default_rng(seed)
    raws = [
        rng.integers(0, 4, n, dtype=np.uint8) if i % 2 else rng.integers(0, 256, n, np.uint8)
        for i, n in enumerate(sizes)
    ]
    stored = [encode_lz4_blocks(r.tobytes(), 4, blocksize) for r in raws]
    tables = [blosc_table(s, "x") for s in stored]
    # only buffers of one layout decode together (the reader leaves the others alone)
    keys = [layout_key(t) for t in tables]
    key = keys[0] if keys[0] is not None else layout_key(blosc_table(stored[-1], "x"))
    keep = [i for i, k in enumerate(keys) if k is not None and k == key]
    raws, stored, tables = (
        [raws[i] for i in keep],
        [stored[i] for i in keep],
        [tables[i] for i in keep],
    )
    if not tables:
        return
    owner, at, end = [], [], []
    for i, r in enumerate(raws):
        for a in sorted(rng.integers(0, len(r) + 1, pieces).tolist()):
            owner.append(i)
            at.append(a)
            end.append(min(len(r), a + int(rng.integers(0, 3 * blocksize))))

    def read_into(i: int, offset: int, view: np.ndarray) -> int:
        data = stored[i][offset : offset + len(view)]
        view[: len(data)] = np.frombuffer(data, np.uint8)
        return len(data)

    raw, pos = decode_many(
        tables, np.array(owner, np.int64), np.array(at, np.int64), np.array(end, np.int64),
        read_into, "x",
    )  # fmt: skip
    for i, a, b, p in zip(owner, at, end, pos.tolist(), strict=True):
        assert bytes(raw[p : p + b - a]) == raws[i][a:b].tobytes()


def test_decode_many_reports_ranges_beyond_a_buffer() -> None:
    stored = encode_lz4_blocks(bytes(3000), 4, 1024)
    table = blosc_table(stored, "x")
    with pytest.raises(CorruptPayloadError, match="beyond"):
        decode_many(
            [table], np.zeros(1, np.int64), np.array([2000]), np.array([3100]),
            lambda i, o, v: 0, "x",
        )  # fmt: skip
