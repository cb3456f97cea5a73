"""Legacy seekable zstd payloads (no longer written): any zstd decoder reads them whole, we
decode only the frames needed; new stores hold one standard stream per chunk."""

from __future__ import annotations

import itertools
import struct
import zipfile
from pathlib import Path
from typing import Any
from unittest import mock

import numcodecs
import numpy as np
import pytest
import zarr
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.codecs import BloscCodec

import zarr_vectors as zv
from zarr_vectors.core.payload import blosc_many as zv_blosc_many
from zarr_vectors.core.payload import compression as zv_compression
from zarr_vectors.core.payload import create as zv_create
from zarr_vectors.core.payload import dense as zv_dense
from zarr_vectors.core.payload import local as zv_local
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.core.payload import zstd_frames as zv_zstd_frames
from zarr_vectors.core.payload.codec import ElementCodec
from zarr_vectors.core.payload.compression import FRAME_BYTES_ATTR
from zarr_vectors.core.payload.zstd_frames import encode_frames, frame_table
from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.testing.examples import random_walk_paths, random_walk_trees

ZSTD = numcodecs.Zstd(level=3)


def _framed(raw: bytes, frame: int = 100) -> bytes:
    return encode_frames(raw, frame, ZSTD)


def test_framed_stream_is_plain_zstd() -> None:
    raw = np.arange(1000, dtype="<f4").tobytes()
    data = _framed(raw)
    assert bytes(ZSTD.decode(data)) == raw  # numcodecs (zarr's decoder) skips the seek table
    table = frame_table(data, "x")
    assert table is not None
    assert len(table.decoded) - 1 == -(-len(raw) // 100)
    assert table.decoded[-1] == len(raw)
    assert table.compressed[-1] < len(data)


def test_unframed_payload_has_no_table() -> None:
    assert frame_table(ZSTD.encode(b"abc" * 100), "x") is None
    assert frame_table(b"", "x") is None


def test_tail_too_short_reports_what_it_needs() -> None:
    data = _framed(bytes(range(256)) * 40, frame=64)
    with pytest.raises(zv_zstd_frames.TailTooShort) as info:
        frame_table(data[-20:], "x", size=len(data))
    assert frame_table(data[-info.value.needed :], "x", size=len(data)) == frame_table(data, "x")


def test_damaged_seek_table_is_a_corrupt_payload() -> None:
    data = bytearray(_framed(bytes(1000), frame=100))
    n_frames = struct.unpack_from("<I", data, len(data) - 9)[0]
    struct.pack_into("<I", data, len(data) - 9, n_frames + 1000)  # frame count too large
    with pytest.raises(CorruptPayloadError, match="seek table"):
        frame_table(bytes(data), "vertices chunk 3")
    good = bytearray(_framed(bytes(1000), frame=100))
    good[-17] ^= 0xFF  # a compressed size: the frames no longer add up to the table start
    with pytest.raises(CorruptPayloadError, match="seek table"):
        frame_table(bytes(good), "vertices chunk 3")


@settings(max_examples=60, deadline=None)
@given(
    n_rows=st.integers(1, 400),
    width=st.integers(1, 4),
    frame=st.integers(64, 700),
    ranges=st.lists(st.tuples(st.integers(0, 399), st.integers(0, 50)), max_size=40),
)
def test_partial_decode_equals_whole(
    n_rows: int, width: int, frame: int, ranges: list[tuple[int, int]]
) -> None:
    rows = np.arange(n_rows * width, dtype="<f4").reshape(n_rows, width) * 1.5
    codec = ElementCodec(ZSTD, frame_bytes=frame)
    data = codec.encode(rows.tobytes())
    whole = np.frombuffer(codec.decode(data, "x"), dtype="<f4").reshape(n_rows, width)
    np.testing.assert_array_equal(whole, rows)
    row_bytes = 4 * width
    starts = np.array([min(a, n_rows) for a, _ in ranges], dtype=np.int64)
    stops = np.array([min(a + c, n_rows) for a, c in ranges], dtype=np.int64)
    starts, stops = starts[np.argsort(starts)], stops[np.argsort(starts)]
    out = np.zeros(n_rows * row_bytes, dtype=np.uint8)
    codec.decode_rows(data, "x", out, starts * row_bytes, stops * row_bytes)
    got = out.view("<f4").reshape(n_rows, width)
    for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
        np.testing.assert_array_equal(got[a:b], rows[a:b])


def _paths(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return random_walk_paths(n, seed, min_length=2)


@pytest.mark.parametrize("kind", ["local", "memory", "zip"])
def test_object_reads_from_framed_store(tmp_path: Path, kind: str, reframe: Any) -> None:
    pos, offsets = _paths()
    fa = np.arange(len(pos), dtype=np.float32)
    target: Any = {
        "local": tmp_path / "s.zarrvectors",
        "memory": zarr.storage.MemoryStore(),
        "zip": tmp_path / "s.zip",
    }[kind]
    local = tmp_path / "s.zarrvectors"
    written: Any = zarr.storage.MemoryStore() if kind == "memory" else local
    zv.write_streamlines(
        written,
        pos,
        offsets=offsets,
        chunk_shape=(4, 4, 4),
        attributes={"fa": fa},
        compressor="zstd",
    )
    assert reframe(zarr.open_group(written, mode="r+"), 64)
    if kind == "zip":
        with zipfile.ZipFile(target, "w") as zf:
            for f in sorted(local.rglob("*")):
                if f.is_file():
                    zf.write(f, f.relative_to(local).as_posix())
    else:
        target = written
    root = zv.open_store(target)
    vert = root["0/vertices"]
    assert isinstance(vert, zarr.Array)
    assert vert.attrs[FRAME_BYTES_ATTR] == 64
    reader = zv.open(target)
    for i in [0, 17, 150, 299]:
        got = reader.read(object_ids=[i])
        np.testing.assert_array_equal(got.positions, pos[offsets[i] : offsets[i + 1]])
        np.testing.assert_array_equal(got.attributes["fa"], fa[offsets[i] : offsets[i + 1]])
    every = zv.read_streamlines(target)
    np.testing.assert_array_equal(every.positions, pos)
    np.testing.assert_array_equal(every.offsets, offsets)
    box = ([2, 2, 2], [5, 5, 5])
    hit = zv.read_streamlines(target, bbox=box)
    inside = np.all((pos >= 2) & (pos < 5), axis=1)
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    np.testing.assert_array_equal(np.unique(owner[inside]), np.asarray(hit.object_ids))
    assert not zv.validate(target, level=3).errors


def test_plain_zarr_reads_framed_payloads(tmp_path: Path, reframe: Any) -> None:
    """Legacy seekable payloads are plain zstd streams to zarr-python 3 as well."""
    pos, offsets = _paths(50)
    zv.write_streamlines(
        tmp_path / "s", pos, offsets=offsets, chunk_shape=(50, 50, 50), compressor="zstd"
    )
    reframe(zarr.open_group(tmp_path / "s", mode="r+"), zv_compression.DEFAULT_FRAME_BYTES)
    arr = zarr.open_array(tmp_path / "s" / "0" / "vertices", mode="r")
    counts = np.asarray(zarr.open_array(tmp_path / "s" / "0" / "vertex_counts")).ravel()
    rows = np.concatenate(
        [
            np.frombuffer(arr[np.unravel_index(flat, arr.shape)], dtype="<f4").reshape(-1, 3)
            for flat in np.flatnonzero(counts)
        ]
    )
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, pos.tolist()))
    raw = (tmp_path / "s" / "0" / "vertices" / "c").rglob("*")
    stored = [p.read_bytes() for p in raw if p.is_file()]
    assert any(frame_table(b, "x") is not None for b in stored)  # really framed


def test_points_stay_single_frame_and_option_is_checked(tmp_path: Path) -> None:
    pts = np.random.default_rng(0).uniform(0, 10, (5000, 3))
    zv.write_points(tmp_path / "p", pts, chunk_shape=(10, 10, 10))
    assert FRAME_BYTES_ATTR not in zv.open_store(tmp_path / "p")["0/vertices"].attrs
    with pytest.raises(InvalidInputError, match="frame_bytes"):
        zv.write_points(tmp_path / "q", pts, chunk_shape=(10, 10, 10), frame_bytes=8)
    assert not (tmp_path / "q").exists()


def test_one_object_read_decodes_a_fraction_of_each_chunk(tmp_path: Path, reframe: Any) -> None:
    """Local legacy seekable payloads: a single-object read fetches its frames, not chunks."""
    pos, offsets = _paths(2000, seed=3)
    zv.write_streamlines(
        tmp_path / "s", pos, offsets=offsets, chunk_shape=(20, 20, 20), compressor="zstd"
    )
    reframe(zarr.open_group(tmp_path / "s", mode="r+"), zv_compression.DEFAULT_FRAME_BYTES)
    stored = sum(p.stat().st_size for p in (tmp_path / "s" / "0" / "vertices").rglob("*"))
    reader = zv.open(tmp_path / "s")
    read_bytes = 0
    original = zv_store_io.os.pread

    def spy(fd: int, n: int, offset: int) -> bytes:
        nonlocal read_bytes
        read_bytes += n
        return original(fd, n, offset)

    with mock.patch.object(zv_store_io.os, "pread", spy):
        got = reader.read(object_ids=[1234], attributes=False)
    np.testing.assert_array_equal(got.positions, pos[offsets[1234] : offsets[1235]])
    assert 0 < read_bytes < stored / 10


def test_object_index_chunks_are_single_frame_and_plain_zarr(tmp_path: Path) -> None:
    """Dense chunks are one zstd frame: a plain zstd decoder returns the whole chunk."""
    pos, offsets = _paths(2000, seed=5)
    zv.write_streamlines(
        tmp_path / "s", pos, offsets=offsets, chunk_shape=(5, 5, 5), compressor="zstd"
    )
    manifest_dir = tmp_path / "s" / "0" / "object_index" / "manifest"
    man_z = zarr.open_array(manifest_dir, mode="r")
    chunk_bytes = int(np.prod(man_z.chunks)) * man_z.dtype.itemsize
    stored = [
        p.read_bytes() for p in manifest_dir.rglob("*") if p.is_file() and p.name != "zarr.json"
    ]
    assert stored
    assert all(frame_table(b, "x") is None for b in stored)
    for b in stored:  # one frame: a decoder that stops after the first frame still gets it all
        assert len(zstandard.ZstdDecompressor().decompress(b)) == chunk_bytes
    assert FRAME_BYTES_ATTR not in man_z.attrs
    reader = zv.open(tmp_path / "s")
    for i in [0, 999, 1999]:
        got = reader.read(object_ids=[i])
        np.testing.assert_array_equal(got.positions, pos[offsets[i] : offsets[i + 1]])
    man = np.asarray(man_z[...])  # plain zarr decodes it
    off = np.asarray(zarr.open_array(manifest_dir.parent / "offsets", mode="r")[...])
    assert off[-1] == len(man)
    assert int(man[:, -1].sum()) == len(pos)


def test_legacy_seekable_dense_chunks_still_read(tmp_path: Path) -> None:
    """Dense chunks of earlier stores (seekable 16 KiB zstd frames) read row by row."""
    group = zarr.open_group(tmp_path / "g", mode="w")
    data = np.arange(60_000, dtype="<i8").reshape(-1, 2) * 7
    array, values = zv_create.declare_dense_array(
        group,
        "idx",
        data,
        attributes={FRAME_BYTES_ATTR: 16384},
        chunks=(10_000, 2),
        compressor="zstd",
    )
    zv_dense.write_dense(array, values)  # the attribute makes the old framed chunks
    stored = (tmp_path / "g" / "idx" / "c" / "0" / "0").read_bytes()[:-4]  # cut the checksum
    table = frame_table(stored, "x")
    assert table is not None
    assert len(table.decoded) > 2
    rows = np.array([0, 5, 9_999, 10_000, 29_999], dtype=np.int64)
    np.testing.assert_array_equal(zv_dense.read_dense_rows(array, rows), data[rows])
    np.testing.assert_array_equal(np.asarray(array[...]), data)


def _frames_of(store: Any) -> int | None:
    """Blosc block size of the store's ``vertices`` payloads (None: c-blosc's own)."""
    vert = zv.open_store(store)["0/vertices"]
    assert isinstance(vert, zarr.Array)
    assert FRAME_BYTES_ATTR not in vert.attrs  # no multi-frame zstd in new stores
    blosc = [c for c in vert.compressors if isinstance(c, BloscCodec)]
    assert len(blosc) == 1
    return int(blosc[0].blocksize) or None


def test_default_frames_per_geometry_type(tmp_path: Path) -> None:
    """Lines and graphs: 4 KiB blocks; polylines and streamlines (box reads gather short runs
    of many paths): 1 KiB; skeletons (read tree by tree): 64 KiB; points: none."""
    pos, parents, offsets = random_walk_trees(40, 300, seed=3)
    trees = [
        (pos[a:b], np.where(parents[a:b] < 0, -1, parents[a:b] - a))
        for a, b in itertools.pairwise(offsets)
    ]
    zv.write_skeletons(tmp_path / "sk", trees, chunk_shape=(20, 20, 20))
    zv.write_graph(tmp_path / "g", pos, np.array([[0, 1], [1, 2]]), chunk_shape=(20, 20, 20))
    assert _frames_of(tmp_path / "sk") == zv_compression.TREE_FRAME_BYTES == 65536
    assert _frames_of(tmp_path / "g") == zv_compression.DEFAULT_FRAME_BYTES == 4096
    paths, offsets = _paths(60)
    zv.write_streamlines(tmp_path / "sl", paths, offsets=offsets, chunk_shape=(4, 4, 4))
    zv.write_polylines(tmp_path / "pl", paths, offsets=offsets, chunk_shape=(4, 4, 4))
    zv.write_lines(tmp_path / "ln", paths[:80].reshape(-1, 2, 3), chunk_shape=(4, 4, 4))
    assert _frames_of(tmp_path / "sl") == zv_compression.PATH_FRAME_BYTES == 1024
    assert _frames_of(tmp_path / "pl") == 1024
    assert _frames_of(tmp_path / "ln") == 4096
    # streamed and distributed writers resolve "auto" the same way
    with zv.open_writer(tmp_path / "st", "skeleton", chunk_shape=(20, 20, 20)) as w:
        w.append(trees)
    assert _frames_of(tmp_path / "st") == 65536
    a, b = zv.read_skeletons(tmp_path / "sk"), zv.read_skeletons(tmp_path / "st")
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.parents, b.parents)
    one = zv.read_skeletons(tmp_path / "sk", object_ids=[17])
    np.testing.assert_array_equal(one.positions, trees[17][0])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_default_streamline_payloads_hold_1kib_blocks(tmp_path: Path, zarr_format: int) -> None:
    """New path stores ask for 1 KiB Blosc blocks (v3 stores hold exactly such blocks), and
    box reads through an open Reader (decoding only some blocks) equal brute force."""
    pos, offsets = random_walk_paths(400, 7, min_length=20, max_length=120)
    attr = np.arange(len(pos), dtype=np.float32)
    store = tmp_path / "s.zv"
    zv.write_streamlines(
        store,
        pos,
        offsets=offsets,
        chunk_shape=(5, 5, 5),
        attributes={"a": attr},
        zarr_format=zarr_format,
    )
    group = zv.open_store(store)
    for name in ("0/vertices", "0/attributes/a"):
        arr = group[name]
        assert isinstance(arr, zarr.Array)
        if zarr_format == 2:  # the Zarr metadata asks for 1 KiB blocks
            assert arr.metadata.compressor.get_config()["blocksize"] == 1024  # type: ignore[union-attr]
            continue
        assert [c.blocksize for c in arr.compressors if isinstance(c, BloscCodec)] == [1024]
        # each chunk file is a Blosc buffer (then the crc32c) of 1 KiB blocks: take the largest
        files = [f for f in (store / name).rglob("*") if f.is_file() and f.name != "zarr.json"]
        head = max(files, key=lambda f: f.stat().st_size).read_bytes()[:16]
        _, _, _, _, nbytes, blocksize, _ = struct.unpack("<BBBBIII", head)
        assert blocksize == zv_compression.PATH_FRAME_BYTES == 1024
        assert nbytes > 4 * blocksize  # several blocks: partial decoding applies
    calls = []
    real = zv_blosc_many.decode_many

    def counting(*args: Any) -> Any:
        calls.append(len(args[0]))
        return real(*args)

    rng = np.random.default_rng(1)
    centres = pos[rng.integers(0, len(pos), 8)]
    with (
        mock.patch.object(zv_local, "SETTLE_NS", -1),
        mock.patch.object(zv_local, "decode_many", counting),
        zv.open(store) as reader,
    ):
        for _ in range(2):  # the second pass decodes blocks of many verified chunks at once
            for centre in centres:
                lo, hi = centre - 0.8, centre + 0.8
                got = reader.read(bbox=(lo, hi))
                inside = np.all((pos >= lo) & (pos <= hi), axis=1)
                hit = np.unique(np.searchsorted(offsets, np.flatnonzero(inside), "right") - 1)
                rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in hit])
                np.testing.assert_array_equal(got.object_ids, hit)
                np.testing.assert_array_equal(got.positions, pos[rows])
                np.testing.assert_array_equal(got.attributes["a"], attr[rows])
    assert zarr_format == 2 or max(calls) > 1  # v2 chunks carry no crc32c: not batched


def test_rechunk_keeps_block_sizes(tmp_path: Path) -> None:
    pos, offsets = _paths(80)
    zv.write_streamlines(tmp_path / "s", pos, offsets=offsets, chunk_shape=(4, 4, 4))
    zv.rechunk(tmp_path / "s", tmp_path / "r", chunk_shape=(8, 8, 8))
    assert _frames_of(tmp_path / "r") == zv_compression.PATH_FRAME_BYTES
    zv.rechunk(tmp_path / "s", tmp_path / "one", chunk_shape=(8, 8, 8), frame_bytes=None)
    assert _frames_of(tmp_path / "one") is None
    for out in ("r", "one"):
        got = zv.read_streamlines(tmp_path / out, object_ids=[5])
        np.testing.assert_array_equal(got.positions, pos[offsets[5] : offsets[6]])
    with pytest.raises(InvalidInputError, match="frame_bytes"):
        zv.rechunk(tmp_path / "s", tmp_path / "bad", chunk_shape=(8, 8, 8), frame_bytes=3)
    assert not (tmp_path / "bad").exists()
