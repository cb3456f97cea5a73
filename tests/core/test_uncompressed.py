"""Uncompressed payloads (``compressor=None`` / ``"none"``): local files read into place."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore, MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.checksums import append_crc32c
from zarr_vectors.core.gather import ELEMENT_HEADER
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.core.payload.create import create_payload_array
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.scratch import SCRATCH
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.testing import assert_geometry_equal
from zarr_vectors.testing.examples import random_walk_trees

GRID = (8,)


def _raw_array(store: Any, zarr_format: int = 3, checksum: bool = False) -> PayloadArray:
    """An uncompressed payload array; without ``checksum`` as earlier versions wrote them."""
    root = zarr.open_group(store, mode="w", zarr_format=zarr_format)
    return create_payload_array(
        root, "p", GRID, attributes={"zv_array": "vertices"}, compressor=None, checksum=checksum
    )


def _chunk_file(tmp_path: Path, flat: int) -> Path:
    return tmp_path / "s" / "p" / "c" / str(flat)


@settings(max_examples=30, deadline=None)
@given(
    sizes=st.lists(st.one_of(st.none(), st.integers(0, 12), st.integers(0, 40_000)), max_size=8),
    where=st.sampled_from(["local-v3", "local-v2", "memory"]),
    checksum=st.booleans(),
)
def test_uncompressed_elements_read_back_exactly(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int | None], where: str, checksum: bool
) -> None:
    """Missing, empty, tiny and big elements: every read path returns the stored rows."""
    rng = np.random.default_rng(len(sizes))
    payloads = {
        i: rng.integers(0, 255, n, dtype=np.uint8).tobytes()
        for i, n in enumerate(sizes)
        if n is not None
    }
    if where == "memory":
        arr = _raw_array(MemoryStore(), checksum=checksum)
    else:
        store = LocalStore(tmp_path_factory.mktemp("raw"))
        arr = _raw_array(store, zarr_format=2 if where == "local-v2" else 3, checksum=checksum)
    if payloads:
        arr.write(np.array(list(payloads), dtype=np.int64), list(payloads.values()))
    flats = np.arange(8, dtype=np.int64)
    want = [payloads.get(i, b"") for i in range(8)]
    assert [bytes(b) for b in arr.read(flats)] == want
    if checksum and where == "local-v2":  # a v2 checksum covers decoded bytes: read() only
        assert arr.read_concat(flats) is None
        return
    joined = arr.read_concat(flats)
    assert joined is not None
    assert bytes(joined[0]) == b"".join(want)
    assert joined[1] == [len(w) for w in want]
    with SCRATCH.lease() as lease:
        chunks = arr.iter_decoded(flats, lease)
        assert chunks is not None
        got = {i: bytes(b) for i, b in chunks}
    assert got == {i: p for i, p in payloads.items() if p}  # empty ones are not stored


def test_local_uncompressed_elements_skip_the_fetch_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local files go straight into the result: no batch of stored bytes is fetched."""
    arr = _raw_array(LocalStore(tmp_path / "s"))
    arr.write(np.array([1, 4]), [b"abc" * 100, b"xyz" * 7])

    def no_fetch(*args: Any) -> None:
        raise AssertionError("fetched")

    monkeypatch.setattr(zv_store_io, "read_files", no_fetch)
    joined = arr.read_concat(np.array([0, 1, 4], dtype=np.int64))
    assert joined is not None
    assert bytes(joined[0]) == b"abc" * 100 + b"xyz" * 7
    assert joined[1] == [0, 300, 21]


@pytest.mark.parametrize(
    ("stored", "match"),
    [
        (ELEMENT_HEADER.pack(1, 99) + b"x" * 12, "length 99, 12 bytes present"),
        (ELEMENT_HEADER.pack(2, 12) + b"x" * 12, "count 2"),
        (b"\x01\x00\x00", "truncated element header"),
    ],
    ids=["length", "count", "truncated"],
)
@pytest.mark.parametrize("checksum", [False, True])
def test_damaged_uncompressed_chunk_is_named(
    tmp_path: Path, stored: bytes, match: str, checksum: bool
) -> None:
    """Earlier stores (no checksum) are checked by their header; new ones by the checksum."""
    arr = _raw_array(LocalStore(tmp_path / "s"), checksum=checksum)
    match = "checksum mismatch|shorter than its checksum|truncated element" if checksum else match
    arr.write(np.array([2, 3]), [b"r" * 24, b"s" * 24])
    _chunk_file(tmp_path, 3).write_bytes(stored)
    flats = np.array([2, 3], dtype=np.int64)
    with pytest.raises(CorruptPayloadError, match=match) as info:
        arr.read_concat(flats)
    assert "p chunk 3" in str(info.value)

    def drain() -> None:
        with SCRATCH.lease() as lease:
            chunks = arr.iter_decoded(flats, lease)  # checksums: verified as bytes are fetched
            assert chunks is not None
            list(chunks)

    with pytest.raises(CorruptPayloadError, match=match):
        drain()


def test_element_reader_says_what_is_wrong(tmp_path: Path) -> None:
    """A file shorter than its size taken a moment before, rewritten, or removed."""
    path = tmp_path / "e"
    path.write_bytes(ELEMENT_HEADER.pack(1, 10) + b"0123456789")
    head = np.empty(ELEMENT_HEADER.size, dtype=np.uint8)
    rows = np.empty(20, dtype=np.uint8)
    assert zv_store_io.read_element(str(path), head, rows) == "10 bytes, expected 20"
    assert zv_store_io.read_element(str(path), head, rows[:4]) == (
        "malformed vlen-bytes element (count 1, length 10, 4 bytes present)"
    )
    assert zv_store_io.read_element(str(path), head, rows[:10]) is None
    assert rows[:10].tobytes() == b"0123456789"
    path.unlink()
    assert zv_store_io.read_element(str(path), head, rows[:10]) == "missing"


@pytest.mark.parametrize("checksum", [False, True])
def test_expected_sizes_skip_the_stat_and_fall_back_when_wrong(
    tmp_path: Path, checksum: bool
) -> None:
    arr = _raw_array(LocalStore(tmp_path / "s"), checksum=checksum)
    arr.write(np.array([1, 4]), [b"abc" * 100, b"xyz" * 7])
    flats = np.array([0, 1, 4], dtype=np.int64)
    joined = arr.read_concat(flats, expected=[0, 300, 21])
    assert joined is not None
    assert bytes(joined[0]) == b"abc" * 100 + b"xyz" * 7
    for wrong in ([0, 300, 20], [0, 300, 22], [3, 300, 21]):
        assert arr.read_concat(flats, expected=wrong) is None  # the caller's path names it


def test_uncompressed_vertices_disagreeing_with_vertex_counts_are_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    path = tmp_path / "p.zarrvectors"
    zv.write_points(path, rng.random((5_000, 3)), chunk_shape=(0.5,) * 3, compressor="none")
    chunk = next(p for p in (path / "0" / "vertices" / "c").rglob("*") if p.is_file())
    raw = chunk.read_bytes()
    rows = raw[ELEMENT_HEADER.size : -24 - 4]  # one row (3 x f8) fewer, header to match
    chunk.write_bytes(append_crc32c(ELEMENT_HEADER.pack(1, len(rows)) + rows))  # checksum too
    with pytest.raises(CorruptPayloadError, match="vertex_counts says"):
        zv.read_points(path)
    chunk.unlink()
    with pytest.raises(CorruptPayloadError, match="vertex_counts says"):
        zv.read_points(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [{"compressor": None}, {"compressor": "none"}, {"compressor": None, "shards": (2, 2, 2)}],
    ids=["None", "none", "sharded"],
)
def test_every_type_reads_uncompressed_local_stores_as_compressed_ones(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    """Whole, by-id and box reads of a local uncompressed store equal a zstd store's."""
    rng = np.random.default_rng(11)
    pos, par, off = random_walk_trees(10, 400, seed=11)
    box = ([30, 30, 30], [50, 50, 50])
    radius = rng.random(len(pos)).astype(np.float32)
    edges = np.stack([np.arange(len(pos) - 1), np.arange(1, len(pos))], axis=1)
    edges = edges[rng.random(len(edges)) < 0.9]
    weight = rng.random(len(edges))
    paths = [pos[a:b] for a, b in pairwise(off)]
    faces = np.stack([np.arange(0, 300, 3), np.arange(1, 300, 3), np.arange(2, 300, 3)], axis=1)
    cases: list[tuple[Any, Any, list[dict[str, Any]]]] = [
        (
            lambda s, **kw: zv.write_points(s, pos, attributes={"r": radius}, **kw),
            zv.read_points,
            [{}, {"bbox": box}],
        ),
        (
            lambda s, **kw: zv.write_polylines(s, paths, **kw),
            zv.read_polylines,
            [{}, {"object_ids": [2, 7]}, {"bbox": box}],
        ),
        (
            lambda s, **kw: zv.write_skeletons(s, pos, par, offsets=off, radius=radius, **kw),
            zv.read_skeletons,
            [{}, {"object_ids": [3]}, {"bbox": box}],
        ),
        (
            lambda s, **kw: zv.write_graph(s, pos, edges, edge_attributes={"w": weight}, **kw),
            zv.read_graph,
            [{}, {"object_ids": [0, 2]}, {"bbox": box}],
        ),
        (
            lambda s, **kw: zv.write_meshes(s, pos[:300], faces, **kw),
            zv.read_meshes,
            [{}, {"bbox": box}],
        ),
    ]
    for k, (write, read, queries) in enumerate(cases):
        plain, packed = tmp_path / f"plain{k}.zarrvectors", MemoryStore()
        write(plain, chunk_shape=(8, 8, 8), **options)
        write(packed, chunk_shape=(8, 8, 8))
        doc = (plain / "0" / "vertices" / "zarr.json").read_text()
        assert '"vlen-bytes"' in doc
        assert "zstd" not in doc
        for query in queries:
            assert_geometry_equal(read(plain, **query), read(packed, **query))
        assert zv.validate(plain, level=2).ok
    whole = zv.read_skeletons(tmp_path / "plain2.zarrvectors")
    assert np.array_equal(whole.parents, par)
    assert np.array_equal(whole.positions, pos)


def test_one_object_reads_only_its_span_of_an_uncompressed_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path of 100 vertices out of 200 paths in one chunk.

    The chunk's checksum covers all of it, so the chunk is read whole once (and verified);
    the path's rows are then copied out of it.
    """
    rng = np.random.default_rng(4)
    paths = [rng.random((100, 3)) for _ in range(200)]
    store = tmp_path / "p.zarrvectors"
    zv.write_polylines(store, paths, chunk_shape=(2.0,) * 3, compressor=None)
    chunk = next(p for p in (store / "0" / "vertices" / "c").rglob("*") if p.is_file())
    read: list[int] = []
    real_pread, real_preadv = zv_store_io.os.pread, zv_store_io.os.preadv

    def pread(fd: int, n: int, offset: int) -> bytes:
        read.append(n)
        return real_pread(fd, n, offset)

    def preadv(fd: int, buffers: Any, offset: int) -> int:
        got = real_preadv(fd, buffers, offset)
        read.append(got)
        return got

    reader = zv.open(store)
    monkeypatch.setattr(zv_store_io.os, "pread", pread)
    monkeypatch.setattr(zv_store_io.os, "preadv", preadv)
    one = reader.read(object_ids=[123])
    monkeypatch.undo()
    np.testing.assert_array_equal(one[0], paths[123])
    assert sum(read) == chunk.stat().st_size
    # a header that disagrees with the file is named (its checksum made to match)
    raw = chunk.read_bytes()[:-4]
    chunk.write_bytes(append_crc32c(ELEMENT_HEADER.pack(1, 12) + raw[ELEMENT_HEADER.size :]))
    with pytest.raises(CorruptPayloadError, match="length 12"):
        zv.open(store).read(object_ids=[123])
