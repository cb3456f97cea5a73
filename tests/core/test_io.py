"""Payload arrays: the batched fast path writes exactly what zarr-python reads, and back."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.codecs import BloscCodec, Crc32cCodec, GzipCodec, ZstdCodec
from zarr.errors import UnstableSpecificationWarning
from zarr.storage import LocalStore, MemoryStore

import zarr_vectors as zv
from zarr_vectors.core import zarr_adapter as zv_adapter
from zarr_vectors.core.checksums import append_crc32c, strip_crc32c
from zarr_vectors.core.payload import compression as zv_compression
from zarr_vectors.core.payload import concurrency as zv_concurrency
from zarr_vectors.core.payload import rows as zv_rows
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.core.payload.create import create_payload_array, open_payload_array
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.testing.stores import ZIP_DUPLICATE_NAMES, StoreFactory

GRID = (5, 4)
PAYLOADS = {0: b"first", 3: b"", 7: bytes(range(256)) * 3, 19: b"\x00", 12: b"x" * 1000}

CODECS = {
    "default": ("default", "default"),
    "none": (None, None),
    "zstd_checksum": (ZstdCodec(level=1, checksum=True), numcodecs.Zstd(level=1)),
    "gzip": (GzipCodec(level=1), numcodecs.GZip(level=1)),
    "blosc": (BloscCodec(cname="lz4"), numcodecs.Blosc(cname="lz4")),
    "crc32c_or_zlib": (Crc32cCodec(), numcodecs.Zlib(level=1)),
}

STORES = [
    "memory",
    "local",
    pytest.param("zip", marks=pytest.mark.filterwarnings(ZIP_DUPLICATE_NAMES)),
]


def native(array: zarr.Array[Any]) -> list[bytes]:
    """Every element as zarr-python itself decodes it (flat, C order)."""
    return [bytes(v) for v in np.asarray(array[...], dtype=object).ravel()]


def write_and_check(factory: StoreFactory, zarr_format: int, compressor: Any,
                    shards: tuple[int, ...] | None) -> None:  # fmt: skip
    store = factory()
    root = zarr.open_group(store, mode="w", zarr_format=zarr_format)  # type: ignore[arg-type]
    arr = create_payload_array(root, "p", GRID, attributes={"zv_array": "vertices"},
                               compressor=compressor, shards=shards)  # fmt: skip
    flats = np.array(list(PAYLOADS), dtype=np.int64)
    arr.write(flats[:2], [PAYLOADS[int(f)] for f in flats[:2]])
    arr.write(flats[2:], [PAYLOADS[int(f)] for f in flats[2:]])  # second batch: shard merge
    expected = [PAYLOADS.get(i, b"") for i in range(int(np.prod(GRID)))]
    assert arr.read(np.arange(int(np.prod(GRID)))) == expected
    reader = factory.for_reading(store)
    group = zarr.open_group(reader, mode="r")
    assert native(group["p"]) == expected  # type: ignore[arg-type]
    again = open_payload_array(group, "p")
    assert again.read(np.array([19, 0, 1], dtype=np.int64)) == [b"\x00", b"first", b""]
    assert again.attrs["zv_array"] == "vertices"


@pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")
@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
@pytest.mark.parametrize("zarr_format", [2, 3], ids=["v2", "v3"])
def test_payloads_match_zarr_python(tmp_path: Path, kind: str, codec: Any,
                                    zarr_format: int) -> None:  # fmt: skip
    factory = StoreFactory(kind, tmp_path)
    try:
        write_and_check(factory, zarr_format, codec[3 - zarr_format], None)
    finally:
        factory.close()


@pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")
@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("shards", [(1, 1), (2, 2), (5, 4), (3, 1)])
@pytest.mark.parametrize("codec", ["default", "none"])
def test_sharded_payloads_match_zarr_python(tmp_path: Path, kind: str,
                                            shards: tuple[int, ...], codec: str) -> None:  # fmt: skip
    factory = StoreFactory(kind, tmp_path)
    try:
        write_and_check(factory, 3, CODECS[codec][0], shards)
    finally:
        factory.close()


def test_vlen_warning_is_silenced_by_the_library() -> None:
    with pytest.warns(UnstableSpecificationWarning):  # zarr itself warns ...
        zarr.create_array(MemoryStore(), shape=(1,), dtype=zarr.core.dtype.VariableLengthBytes())
    root = zarr.open_group(MemoryStore(), mode="w")
    create_payload_array(root, "p", (2,), attributes={})  # ... the library does not


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (b"garbage", "checksum mismatch"),
        (b"", "shorter than its checksum"),
    ],
)
def test_corrupt_chunk_payload_names_array_and_chunk(tmp_path: Path, damage: bytes,
                                                     match: str) -> None:  # fmt: skip
    path = tmp_path / "s.zarrvectors"
    zv.write_points(str(path), np.array([[1.0, 1.0], [15.0, 1.0]]), chunk_shape=(10.0, 10.0))
    (path / "0" / "vertices" / "c" / "1" / "0").write_bytes(damage)
    with pytest.raises(CorruptPayloadError, match=match) as info:
        zv.read_points(str(path))
    assert "vertices" in str(info.value)


def test_payload_not_a_whole_number_of_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    zv.write_points(LocalStore(path), np.array([[1.0, 1.0]]), chunk_shape=(10.0, 10.0))
    root = zarr.open_group(str(path), mode="r+")
    arr = open_payload_array(root["0"], "vertices")  # type: ignore[arg-type]
    arr.write(np.array([0]), [b"\x00" * 12])  # 12 bytes is not a (2 x float64) row
    with pytest.raises(
        CorruptPayloadError, match=r"not a whole number of 2x.*rows|vertex_counts says"
    ):
        zv.read_points(str(path))


def test_quiet_vlen_holds_until_the_last_thread_leaves() -> None:
    """Warning filters are process-wide: one thread leaving must not unsilence another."""
    import threading
    import warnings

    from zarr.errors import UnstableSpecificationWarning

    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with zv_adapter.quiet_vlen():
            inside.set()
            release.wait(10)

    first = zv_adapter.quiet_vlen()
    first.__enter__()  # this thread enters first ...
    worker = threading.Thread(target=other)
    worker.start()
    assert inside.wait(10)
    first.__exit__(None, None, None)  # ... and leaves while the worker is still inside
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn("vlen", UnstableSpecificationWarning, stacklevel=1)
    assert not caught  # still silenced for the worker
    release.set()
    worker.join(10)
    silenced = [f for f in warnings.filters if f[2] is UnstableSpecificationWarning]
    assert silenced == []  # the last one out removed the filter


def test_serial_blosc_restores_numcodecs_setting_when_the_last_caller_leaves() -> None:
    """numcodecs' process-wide ``use_threads`` is off while any caller is inside, then back."""
    import threading

    from numcodecs import blosc

    before = blosc.use_threads
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with zv_concurrency.serial_blosc():
            inside.set()
            release.wait(10)

    with zv_concurrency.serial_blosc():
        assert blosc.use_threads is False
        worker = threading.Thread(target=other)
        worker.start()
        assert inside.wait(10)
    assert blosc.use_threads is False  # the worker is still inside
    release.set()
    worker.join(10)
    assert blosc.use_threads == before


@pytest.mark.parametrize("compressor", ["default", "lz4", None, GzipCodec(level=2)])
@pytest.mark.parametrize("path", ["p", "attributes/fa", "object_index/a/b"])
def test_direct_metadata_documents_equal_zarr_python(
    tmp_path: Path, compressor: Any, path: str
) -> None:
    """New local v3 arrays get their ``zarr.json`` written directly: zarr-python's bytes."""
    from zarr_vectors.core.payload.create import declare_dense_array
    from zarr_vectors.core.payload.dense import write_dense

    docs = {}
    for name, store in [("direct", LocalStore(tmp_path / "d")), ("zarr", MemoryStore())]:
        root = zarr.open_group(store, mode="w", zarr_format=3)
        group = root.create_group("0")
        create_payload_array(group, path, GRID, attributes={"dtype": "<f4", "width": 3},
                             compressor=compressor, frame_bytes=4096)  # fmt: skip
        dense, values = declare_dense_array(
            group, f"{path}_dense", np.arange(10, dtype="<i8").reshape(5, 2),
            attributes={"k": [1, 2]}, chunks=(4, 2), compressor=compressor)  # fmt: skip
        write_dense(dense, values)
        raw = {}
        for key in sorted(store_keys(store)):
            if key.endswith("zarr.json"):
                raw[key] = store_bytes(store, key)
        docs[name] = raw
    assert docs["direct"] == docs["zarr"]
    assert any(k.endswith(f"{path}/zarr.json") for k in docs["direct"])
    # and zarr-python opens what was written directly
    again = zarr.open_group(LocalStore(tmp_path / "d"), mode="r")
    assert again[f"0/{path}_dense"][...].tolist() == np.arange(10).reshape(5, 2).tolist()


def store_keys(store: Any) -> list[str]:
    from zarr.core.sync import sync

    async def keys() -> list[str]:
        return [k async for k in store.list()]

    return sync(keys())


def store_bytes(store: Any, key: str) -> bytes:
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync

    buf = sync(store.get(key, prototype=default_buffer_prototype()))
    assert buf is not None
    return bytes(buf.to_bytes())


@pytest.mark.parametrize(
    ("zarr_format", "encoding"),
    [
        (2, None),
        (3, None),
        (3, {"name": "default", "separator": "."}),
        (3, {"name": "v2", "separator": "/"}),
        (3, {"name": "v2", "separator": "."}),
    ],
)
@pytest.mark.parametrize("shape", [(5,), (3, 4, 5), (120, 7)])
def test_payload_keys_match_zarr_encoding(
    zarr_format: int, encoding: dict[str, str] | None, shape: tuple[int, ...]
) -> None:
    """The vectorised chunk keys equal zarr-python's ``encode_chunk_key`` for every chunk."""
    group = zarr.group(store=MemoryStore(), zarr_format=zarr_format)
    kw: dict[str, Any] = {} if encoding is None else {"chunk_key_encoding": encoding}
    arr = group.create_array(
        "lvl/vertices", shape=shape, chunks=(1,) * len(shape), dtype="i4", **kw
    )
    flats = np.random.default_rng(0).permutation(int(np.prod(shape))).tolist()
    expected = [
        "lvl/vertices/"
        + arr.metadata.encode_chunk_key(tuple(int(c) for c in np.unravel_index(f, shape)))
        for f in flats
    ]
    assert PayloadArray(arr)._keys(flats) == expected


def test_local_files_are_read_in_batches_into_shared_buffers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Missing, empty and multi-batch files read back exactly, as read-only views."""
    from zarr_vectors.core.scratch import ScratchPool

    monkeypatch.setattr(zv_store_io, "_OPEN_FILES", 3)
    rng = np.random.default_rng(0)
    contents: list[bytes | None] = []
    for i in range(8):
        data = None if i == 2 else b"" if i == 5 else rng.bytes(int(rng.integers(1, 5000)))
        if data is not None:
            (tmp_path / f"f{i}").write_bytes(data)
        contents.append(data)
    paths = [str(tmp_path / f"f{i}") for i in range(8)]
    pool = ScratchPool(limit=64 << 20)
    for lease_pool in (None, pool):
        if lease_pool is None:
            got = zv_store_io.read_files(paths)
        else:
            with lease_pool.lease() as lease:
                got = [
                    None if g is None else bytes(g) for g in zv_store_io.read_files(paths, lease)
                ]
        assert [None if g is None else bytes(g) for g in got] == contents
    views = zv_store_io.read_files(paths)
    assert all(v is None or v.readonly for v in views)


def test_lz4_links_are_single_lz4_blocks(tmp_path: Path) -> None:
    """``"lz4"`` links are Blosc buffers of 64 KiB unsplit LZ4 blocks that zarr-python reads.

    The other arrays read whole keep c-blosc's own blocks.
    """
    from zarr_vectors.core.payload.blosc_blocks import blosc_table
    from zarr_vectors.core.payload.compression import LZ4_LINKS_BLOCK

    rng = np.random.default_rng(1)
    n = 60_000
    positions = rng.random((n, 3)) * 10
    parents = np.arange(-1, n - 1)
    path = tmp_path / "s.zv"
    zv.write_skeletons(path, positions, parents, chunk_shape=(5.0,) * 3, compressor="lz4")
    links = zarr.open_array(LocalStore(path), path="0/links", mode="r")
    seen = 0
    for key in sorted((path / "0" / "links" / "c").rglob("*")):
        if key.is_file():
            raw = strip_crc32c(key.read_bytes(), str(key))  # the chunk checksum ends it
            table = blosc_table(raw, str(key))
            assert raw[2] & 0x10  # "do not split": one LZ4 stream per block
            assert table.blocksize == min(LZ4_LINKS_BLOCK, table.nbytes)
            seen += 1
    assert seen > 0
    fragments = zarr.open_array(LocalStore(path), path="0/vertex_fragments", mode="r")
    blosc = [c for c in fragments.metadata.codecs if isinstance(c, BloscCodec)]  # type: ignore[union-attr]
    assert [c.blocksize for c in blosc] == [0]
    ours = open_payload_array(zarr.open_group(LocalStore(path), mode="r", path="0"), "links")
    flats = np.arange(int(np.prod(links.shape)), dtype=np.int64)
    assert [bytes(p) for p in ours.read(flats)] == native(links)  # zarr-python decodes the same
    back = zv.read_skeletons(path)
    np.testing.assert_array_equal(back.parents, parents)


def _zstd_array(frame_bytes: int | None) -> PayloadArray:
    """A zstd payload array; with ``frame_bytes``, seekable frames as earlier versions wrote."""
    root = zarr.open_group(MemoryStore(), mode="w")
    attrs: dict[str, Any] = {"zv_array": "vertices"}
    if frame_bytes is not None:
        attrs[zv_compression.FRAME_BYTES_ATTR] = frame_bytes
    return create_payload_array(root, "p", (8,), attributes=attrs, compressor="zstd")


# elements of several sizes (one of 0 rows stored, one not at all), some cut in many frames
ZSTD_ELEMENTS = {0: 50_000, 1: 3, 2: 0, 4: 200_000, 5: 17, 6: 120_000, 7: 9_000}


def _elements(rng: np.random.Generator) -> dict[int, bytes]:
    return {f: rng.integers(0, 20, n, dtype=np.uint8).tobytes() for f, n in ZSTD_ELEMENTS.items()}


@pytest.mark.parametrize("frame_bytes", [None, 4096], ids=["one frame", "seekable"])
@pytest.mark.parametrize("threads", [1, 4])
def test_zstd_elements_decode_straight_into_one_buffer(
    frame_bytes: int | None, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_concat / iter_decoded of zstd payloads equal the element-wise decode, on one
    thread or in byte groups (group boundaries next to missing and empty elements)."""

    monkeypatch.setattr(zv_concurrency, "PARALLEL_BYTES", 1)  # groups even for these small elements
    rng = np.random.default_rng(7)
    payloads = _elements(rng)
    arr = _zstd_array(frame_bytes)
    arr.write(np.array(list(payloads), dtype=np.int64), list(payloads.values()))
    flats = np.arange(8, dtype=np.int64)
    expected = [payloads.get(i, b"") for i in range(8)]
    with zv_concurrency.decode_threads(threads):
        got = arr.read_concat(flats)
    assert got is not None
    data, sizes = got
    assert sizes == [len(e) for e in expected]
    assert bytes(data) == b"".join(expected)
    with zv.core.scratch.SCRATCH.lease() as lease:  # type: ignore[attr-defined]
        chunks = arr.iter_decoded(flats, lease)
        assert chunks is not None
        yielded = {i: bytes(b) for i, b in chunks}
    assert {i for i, e in enumerate(expected) if e} <= set(yielded)
    assert all(expected[i] == b for i, b in yielded.items())


def test_zstd_groups_split_the_bytes() -> None:

    sizes = [1 << 20] * 16
    for parts in (2, 4, 8):
        groups = zv_concurrency.byte_groups(sizes, parts)
        assert groups[0][0] == 0
        assert groups[-1][1] == 16
        assert len(groups) == parts
        assert all(a < b for a, b in groups)
        assert all(b == c for (_, b), (c, _) in pairwise(groups))
    assert zv_concurrency.byte_groups(sizes, 1) == [(0, 16)]
    assert zv_concurrency.byte_groups([10, 10, 10, 10], 4) == [(0, 4)]  # too few bytes for threads


def test_zstd_parts_queue_on_a_shared_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a pool, the parts run on its workers beside a task already there."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(zv_concurrency, "PARALLEL_BYTES", 1)
    payloads = _elements(np.random.default_rng(8))
    arr = _zstd_array(4096)
    arr.write(np.array(list(payloads), dtype=np.int64), list(payloads.values()))
    seen: set[str] = set()
    decode_group = zv_rows.PayloadArray._decode_group

    def spy(self: PayloadArray, *args: Any) -> bool:
        seen.add(threading.current_thread().name)
        return decode_group(self, *args)

    monkeypatch.setattr(zv_rows.PayloadArray, "_decode_group", spy)
    release = threading.Event()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="shared") as pool:
        busy = pool.submit(release.wait, 5)  # the caller's own task holds one worker
        with zv_concurrency.decode_threads(8, pool):
            got = arr.read_concat(np.arange(8, dtype=np.int64))
        release.set()
        busy.result()
    assert got is not None
    assert bytes(got[0]) == b"".join(payloads.get(i, b"") for i in range(8))
    assert seen
    assert all(name.startswith("shared") for name in seen)


def test_zstd_frames_without_a_seek_table_fall_back_to_the_codec() -> None:
    """Frames cut by another writer without a table: only the first says its size."""
    import zstandard

    from zarr_vectors.core.gather import ELEMENT_HEADER

    arr = _zstd_array(None)
    rows = np.arange(30_000, dtype=np.uint8).tobytes()
    element = ELEMENT_HEADER.pack(1, len(rows)) + rows
    c = zstandard.ZstdCompressor(level=3)
    stored = append_crc32c(c.compress(element[:10_000]) + c.compress(element[10_000:]))
    arr.array.store_path.store._store_dict["p/c/3"] = (  # type: ignore[attr-defined]
        zarr.core.buffer.cpu.Buffer.from_bytes(stored)
    )
    flats = np.array([3], dtype=np.int64)
    assert arr.read_concat(flats) is None  # the caller then decodes element by element
    assert arr.read(flats) == [rows]
    with zv.core.scratch.SCRATCH.lease() as lease:  # type: ignore[attr-defined]
        chunks = arr.iter_decoded(flats, lease)
        assert chunks is not None
        assert [bytes(b) for _, b in chunks] == [rows]


@pytest.mark.parametrize("kind", ["points", "streamlines"])
def test_truncated_zstd_chunk_is_named(tmp_path: Path, kind: str) -> None:
    """One frame (points) or seekable frames (streamlines), cut short on disk."""
    rng = np.random.default_rng(5)
    path = tmp_path / "s.zarrvectors"
    if kind == "points":
        zv.write_points(path, rng.random((20_000, 3)), chunk_shape=(2.0, 2.0, 2.0))
    else:
        paths = [np.cumsum(rng.random((2_000, 3)), axis=0) * 1e-4 for _ in range(3)]
        zv.write_streamlines(path, paths, chunk_shape=(2.0, 2.0, 2.0))
    chunk = next(p for p in (path / "0" / "vertices" / "c").rglob("*") if p.is_file())
    raw = chunk.read_bytes()
    chunk.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CorruptPayloadError, match="vertices") as info:
        zv.read_points(path) if kind == "points" else zv.read_polylines(path)
    assert "chunk" in str(info.value)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.one_of(st.none(), st.integers(0, 12), st.integers(0, 30_000)), max_size=8),
    parts=st.integers(2, 8),
    frame_bytes=st.sampled_from([None, 64, 4096]),
)
def test_zstd_parts_never_clobber_each_other(
    sizes: list[int | None], parts: int, frame_bytes: int | None
) -> None:
    """Any mix of missing, tiny (shorter than a header) and big elements, any split."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(len(sizes) * 31 + parts)
    payloads = {
        i: rng.integers(0, 7, n, dtype=np.uint8).tobytes()
        for i, n in enumerate(sizes)
        if n is not None
    }
    arr = _zstd_array(frame_bytes)
    if payloads:
        arr.write(np.array(list(payloads), dtype=np.int64), list(payloads.values()))
    flats = np.arange(8, dtype=np.int64)
    expected = b"".join(payloads.get(i, b"") for i in range(8))
    old = zv_concurrency.PARALLEL_BYTES
    zv_concurrency.PARALLEL_BYTES = 1
    try:
        with ThreadPoolExecutor(max_workers=2) as pool, zv_concurrency.decode_threads(parts, pool):
            got = arr.read_concat(flats)
        with zv_concurrency.decode_threads(parts):
            own = arr.read_concat(flats)
    finally:
        zv_concurrency.PARALLEL_BYTES = old
    assert got is not None
    assert own is not None
    assert bytes(got[0]) == expected
    assert bytes(own[0]) == expected
