"""The only module that touches Zarr arrays (FORMAT.md §6, §9).

Two kinds of arrays live in a level group:

* **per-chunk payload arrays** — variable-length bytes, one element per spatial chunk, element
  chunks of shape ``(1,)*D``; the element is the little-endian rows of that chunk;
* **dense arrays** — ordinary numeric arrays (``vertex_counts``, object index, ...).

Arrays are created and described by zarr-python, so any Zarr reader can open them.  Reading and
writing many payload elements goes through a batched path: zarr-python costs 0.3–0.9 ms per chunk
operation, so when the array's codec chain is the plain ``vlen-bytes`` (+ optional ``zstd``)
chain, this module encodes elements itself (same bytes zarr-python writes) and moves them with
one batched store call — plain file I/O for local directories (zarr's ``LocalStore`` costs
~250–450 µs per key through its thread hop), ``asyncio.gather`` over the store API otherwise.
Any other chain (sharding, other compressors) falls back to zarr-python's own array API.
"""

from __future__ import annotations

import asyncio
import os
import struct
import warnings
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeAlias

import numcodecs
import numpy as np
import numpy.typing as npt
import zarr
from numcodecs.abc import Codec as NumcodecsCodec
from zarr.abc.codec import BytesBytesCodec
from zarr.abc.store import OffsetByteRequest, Store
from zarr.codecs import (
    BytesCodec,
    Crc32cCodec,
    Endian,
    ShardingCodec,
    ShardingCodecIndexLocation,
    VLenBytesCodec,
    ZstdCodec,
)
from zarr.core.buffer import default_buffer_prototype
from zarr.core.dtype import VariableLengthBytes
from zarr.core.metadata import ArrayV3Metadata
from zarr.core.sync import sync
from zarr.errors import UnstableSpecificationWarning
from zarr.storage import FsspecStore, LocalStore

from zarr_vectors.core.ragged import unique_sorted
from zarr_vectors.core.shards import ShardFormat
from zarr_vectors.errors import CorruptPayloadError, StoreNotFoundError

__all__ = [
    "DEFAULT_ZSTD_LEVEL",
    "Compressor",
    "CompressorSpec",
    "PayloadArray",
    "create_dense_array",
    "create_payload_array",
    "open_payload_array",
    "quiet_vlen",
    "set_many",
    "read_dense",
    "read_dense_rows",
]

DEFAULT_ZSTD_LEVEL = 3
"""zstd level of every array unless ``compressor=`` says otherwise (see BENCHMARKS.md)."""

Compressor: TypeAlias = BytesBytesCodec | NumcodecsCodec | None
"""A zarr v3 bytes-to-bytes codec, a numcodecs codec (Zarr v2), or None for no compression."""

CompressorSpec: TypeAlias = Compressor | str | Mapping[str, Compressor | str]
"""One compressor for every array, or a mapping from array path to compressor (``"*"``: rest)."""

_HEADER = struct.Struct("<II")
_PARALLEL_BYTES = 4 << 20  # below this, a thread pool costs more than it saves
_MAX_IN_FLIGHT = 64


@contextmanager
def quiet_vlen() -> Iterator[None]:
    """Silence zarr-python's warning that variable-length bytes lack a final v3 spec."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UnstableSpecificationWarning)
        yield


def _default_compressor(zarr_format: int) -> Any:
    if zarr_format == 2:
        return numcodecs.Zstd(level=DEFAULT_ZSTD_LEVEL)
    return ZstdCodec(level=DEFAULT_ZSTD_LEVEL)


def _compressors(compressor: Compressor | str, zarr_format: int) -> Any:
    if isinstance(compressor, str):
        if compressor != "default":
            raise ValueError(f"compressor: unknown name {compressor!r}")
        return _default_compressor(zarr_format)
    if compressor is None:
        return None
    return compressor


# --------------------------------------------------------------------------------------------
# fast element codec


@dataclass(frozen=True)
class _ElementCodec:
    """Encode/decode one vlen-bytes chunk holding a single element, byte-identical to zarr."""

    compressor: NumcodecsCodec | None

    def encode(self, payload: bytes | memoryview) -> bytes:
        raw = _HEADER.pack(1, len(payload)) + bytes(payload)
        if self.compressor is None:
            return raw
        return bytes(self.compressor.encode(raw))

    def decode(self, data: bytes, where: str) -> bytes | memoryview:
        try:
            raw = data if self.compressor is None else self.compressor.decode(data)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise CorruptPayloadError(f"{where}: cannot decompress ({exc})") from exc
        if len(raw) < _HEADER.size:
            raise CorruptPayloadError(f"{where}: truncated element header")
        count, length = _HEADER.unpack_from(raw)
        if count != 1 or length != len(raw) - _HEADER.size:
            raise CorruptPayloadError(
                f"{where}: malformed vlen-bytes element (count {count}, length {length}, "
                f"{len(raw) - _HEADER.size} bytes present)"
            )
        return memoryview(raw)[_HEADER.size :]  # no copy: rows are joined once by the reader


def _chain_codec(codecs: Sequence[Any]) -> _ElementCodec | None:
    kinds = [type(c) for c in codecs]
    if kinds == [VLenBytesCodec]:
        return _ElementCodec(None)
    if kinds == [VLenBytesCodec, ZstdCodec]:
        zstd = codecs[1]
        return _ElementCodec(numcodecs.Zstd(level=zstd.level, checksum=zstd.checksum))
    return None


def _shard_format(codec: ShardingCodec, ndim: int) -> ShardFormat | None:
    index = [type(c) for c in codec.index_codecs]
    if index not in ([BytesCodec], [BytesCodec, Crc32cCodec]):
        return None
    first = codec.index_codecs[0]
    if isinstance(first, BytesCodec) and first.endian not in (None, Endian.little):
        return None
    if tuple(codec.chunk_shape) != (1,) * ndim:
        return None
    return ShardFormat(
        chunks_per_shard=(1,) * ndim,  # replaced by the caller with the shard shape
        index_at_end=codec.index_location is ShardingCodecIndexLocation.end,
        checksum=len(index) == 2,
    )


def _fast_codec(array: zarr.Array[Any]) -> tuple[_ElementCodec, ShardFormat | None] | None:
    """Return the fast element codec (and shard packing) for plain chains, else None."""
    meta = array.metadata
    if isinstance(meta, ArrayV3Metadata):
        codecs = list(meta.codecs)
        if len(codecs) == 1 and isinstance(codecs[0], ShardingCodec):
            inner = _chain_codec(list(codecs[0].codecs))
            fmt = _shard_format(codecs[0], len(array.shape))
            if inner is None or fmt is None:
                return None
            per_shard = tuple(int(s) for s in meta.chunk_grid.chunk_shape)  # type: ignore[attr-defined]
            return inner, replace(fmt, chunks_per_shard=per_shard)
        plain = _chain_codec(codecs)
        return None if plain is None else (plain, None)
    filters = [f.get_config()["id"] for f in (meta.filters or ())]
    if filters != ["vlen-bytes"]:
        return None
    comp = meta.compressor
    if comp is None:
        return _ElementCodec(None), None
    if comp.codec_id == "zstd":
        return _ElementCodec(comp), None
    return None


# --------------------------------------------------------------------------------------------
# raw key I/O


def _local_root(store: Store) -> Path | None:
    return Path(store.root) if isinstance(store, LocalStore) else None


def _get_many(store: Store, keys: Sequence[str]) -> list[bytes | None]:
    root = _local_root(store)
    if root is not None:
        out: list[bytes | None] = []
        for k in keys:
            try:
                with open(root / k, "rb") as f:
                    out.append(f.read())
            except FileNotFoundError:
                out.append(None)
        return out
    proto = default_buffer_prototype()

    async def fetch() -> list[bytes | None]:
        sem = asyncio.Semaphore(_MAX_IN_FLIGHT)

        # an open-ended range read is one GET; a plain fsspec/s3fs read first asks for the
        # object's size (one HEAD per key) to decide on concurrent block downloads
        whole = OffsetByteRequest(0) if isinstance(store, FsspecStore) else None

        async def one(k: str) -> bytes | None:
            async with sem:
                buf = await store.get(k, proto, byte_range=whole)
            return None if buf is None else buf.to_bytes()

        return list(await asyncio.gather(*(one(k) for k in keys)))

    return sync(fetch())


def _set_many(store: Store, items: Sequence[tuple[str, bytes]]) -> None:
    root = _local_root(store)
    if root is not None:
        paths = [root / k for k, _ in items]
        for parent in {p.parent for p in paths}:
            parent.mkdir(parents=True, exist_ok=True)

        def put_file(i: int) -> None:
            with open(paths[i], "wb") as f:
                f.write(items[i][1])

        _map(put_file, list(range(len(items))), sum(len(v) for _, v in items))
        return
    proto = default_buffer_prototype()

    async def put() -> None:
        sem = asyncio.Semaphore(_MAX_IN_FLIGHT)

        async def one(k: str, v: bytes) -> None:
            async with sem:
                await store.set(k, proto.buffer.from_bytes(v))

        await asyncio.gather(*(one(k, v) for k, v in items))

    sync(put())


def set_many(store: Store, items: Sequence[tuple[str, bytes]]) -> None:
    """Write raw keys to a store in one batch."""
    _set_many(store, items)


def _map(func: Any, items: Sequence[Any], nbytes: int) -> list[Any]:
    if nbytes < _PARALLEL_BYTES or len(items) < 4:
        return [func(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return list(pool.map(func, items))


# --------------------------------------------------------------------------------------------
# payload arrays


@dataclass(frozen=True)
class PayloadArray:
    """A per-chunk payload array: one variable-length element per spatial chunk."""

    array: zarr.Array[Any]
    """The underlying Zarr array (shape = chunk grid shape)."""

    @property
    def name(self) -> str:
        """Path of the array inside the store."""
        return self.array.path

    @property
    def attrs(self) -> Mapping[str, Any]:
        """Array attributes (``zv_array``, ``dtype``, ``width``, ``encoding``, ...)."""
        return self.array.attrs.asdict()

    def _key(self, flat: int) -> str:
        coords = np.unravel_index(flat, self.array.shape)
        key = self.array.metadata.encode_chunk_key(tuple(int(c) for c in coords))
        prefix = self.array.store_path.path
        return f"{prefix}/{key}" if prefix else key

    def _shard_of(self, flat: int, fmt: ShardFormat) -> tuple[tuple[int, ...], int]:
        coords = np.unravel_index(flat, self.array.shape)
        shard = tuple(int(c) // s for c, s in zip(coords, fmt.chunks_per_shard, strict=True))
        inner = tuple(int(c) % s for c, s in zip(coords, fmt.chunks_per_shard, strict=True))
        return shard, int(np.ravel_multi_index(inner, fmt.chunks_per_shard))

    def _shard_key(self, shard: tuple[int, ...]) -> str:
        key = self.array.metadata.encode_chunk_key(shard)
        prefix = self.array.store_path.path
        return f"{prefix}/{key}" if prefix else key

    def write(self, flat_indices: npt.NDArray[np.int64], payloads: Sequence[bytes]) -> None:
        """Write one element per flat grid index; empty payloads are skipped."""
        pairs = [(int(i), p) for i, p in zip(flat_indices, payloads, strict=True) if len(p)]
        if not pairs:
            return
        fast = _fast_codec(self.array)
        if fast is None:
            self._write_generic(pairs)
            return
        codec, fmt = fast
        nbytes = sum(len(p) for _, p in pairs)
        encoded = _map(lambda ip: codec.encode(ip[1]), pairs, nbytes)
        store = self.array.store_path.store
        if fmt is None:
            _set_many(store, [(self._key(i), e) for (i, _), e in zip(pairs, encoded, strict=True)])
            return
        shards: dict[tuple[int, ...], dict[int, bytes]] = {}
        for (flat, _), data in zip(pairs, encoded, strict=True):
            shard, inner = self._shard_of(flat, fmt)
            shards.setdefault(shard, {})[inner] = data
        keys = [self._shard_key(k) for k in shards]
        # a shard that already exists is merged: read-modify-write of the whole shard
        for key, old, new in zip(keys, _get_many(store, keys), shards.values(), strict=True):
            if old is not None:
                merged = fmt.split(old, f"{self.name} shard {key}")
                merged.update(new)
                new.clear()
                new.update(merged)
        _set_many(store, [(k, fmt.encode(v)) for k, v in zip(keys, shards.values(), strict=True)])

    def _write_generic(self, pairs: list[tuple[int, bytes]]) -> None:
        idx = np.unravel_index(np.array([i for i, _ in pairs]), self.array.shape)
        values = np.empty(len(pairs), dtype=object)
        values[:] = [bytes(p) for _, p in pairs]
        with quiet_vlen():
            self.array.set_coordinate_selection(idx, values)

    def read(self, flat_indices: npt.NDArray[np.int64]) -> Sequence[bytes | memoryview]:
        """Return the element of each flat grid index (``b""`` where nothing is stored)."""
        flats = [int(i) for i in flat_indices]
        if not flats:
            return []
        fast = _fast_codec(self.array)
        if fast is None:
            return self._read_generic(flats)
        codec, fmt = fast
        if fmt is None:
            raw = _get_many(self.array.store_path.store, [self._key(i) for i in flats])
        else:
            raw = self._read_sharded(flats, fmt)
        nbytes = sum(len(r) for r in raw if r is not None)
        return _map(
            lambda pair: (
                b"" if pair[1] is None else codec.decode(pair[1], f"{self.name} chunk {pair[0]}")
            ),
            list(zip(flats, raw, strict=True)),
            nbytes,
        )

    def _read_sharded(self, flats: list[int], fmt: ShardFormat) -> list[bytes | None]:
        where = [self._shard_of(f, fmt) for f in flats]
        shard_ids = sorted({s for s, _ in where})
        keys = [self._shard_key(s) for s in shard_ids]
        blobs = _get_many(self.array.store_path.store, keys)
        inner = {
            s: {} if b is None else fmt.split(b, f"{self.name} shard {k}")
            for s, k, b in zip(shard_ids, keys, blobs, strict=True)
        }
        return [inner[s].get(i) for s, i in where]

    def _read_generic(self, flats: list[int]) -> list[bytes]:
        idx = np.unravel_index(np.array(flats), self.array.shape)
        with quiet_vlen():
            values = self.array.get_coordinate_selection(idx)
        return [bytes(v) for v in np.asarray(values, dtype=object).ravel()]


def create_payload_array(
    group: zarr.Group,
    path: str,
    grid_shape: Sequence[int],
    *,
    attributes: Mapping[str, Any],
    compressor: Compressor | str = "default",
    shards: Sequence[int] | None = None,
) -> PayloadArray:
    """Create a per-chunk payload array of shape ``grid_shape`` with element chunks (1,)*D."""
    zarr_format = group.metadata.zarr_format
    with quiet_vlen():
        array = group.create_array(
            path,
            shape=tuple(grid_shape),
            chunks=(1,) * len(grid_shape),
            shards=None if shards is None else tuple(shards),
            dtype=VariableLengthBytes(),
            fill_value=b"",
            compressors=_compressors(compressor, zarr_format),
            attributes=dict(attributes),
            overwrite=True,
        )
    return PayloadArray(array)


def open_payload_array(group: zarr.Group, path: str) -> PayloadArray:
    """Open an existing payload array, raising ``StoreNotFoundError`` if it is absent."""
    with quiet_vlen():
        try:
            node = group[path]
        except KeyError:
            raise StoreNotFoundError(f"array {group.path}/{path} does not exist") from None
    if not isinstance(node, zarr.Array):
        raise StoreNotFoundError(f"{group.path}/{path} is a group, expected an array")
    return PayloadArray(node)


def create_dense_array(
    group: zarr.Group,
    path: str,
    data: npt.NDArray[Any],
    *,
    attributes: Mapping[str, Any],
    chunks: Sequence[int],
    compressor: Compressor | str = "default",
) -> zarr.Array[Any]:
    """Create a dense numeric array holding ``data`` with Zarr chunk shape ``chunks``."""
    data = np.ascontiguousarray(data)
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    zarr_format = group.metadata.zarr_format
    array = group.create_array(
        path,
        shape=data.shape,
        chunks=tuple(max(1, min(int(c), n)) for c, n in zip(chunks, data.shape, strict=True)),
        dtype=data.dtype,
        fill_value=0,
        compressors=_compressors(compressor, zarr_format),
        attributes=dict(attributes),
        overwrite=True,
    )
    # integer zeros equal the fill value: nothing to store (floats keep -0.0 exactly)
    if data.size and (data.dtype.kind not in "iub" or data.any()):
        array[...] = data
    return array


def _dense_codec(array: zarr.Array[Any]) -> tuple[int, NumcodecsCodec | None] | None:
    """(rows per chunk, compressor) when a dense array can be decoded directly, else None."""
    meta = array.metadata
    shape = tuple(array.shape)
    if not shape or np.dtype(array.dtype).byteorder == ">":
        return None
    if isinstance(meta, ArrayV3Metadata):
        chunks = tuple(meta.chunk_grid.chunk_shape)  # type: ignore[attr-defined]
        codecs = list(meta.codecs)
        if not codecs or not isinstance(codecs[0], BytesCodec):
            return None
        if codecs[0].endian not in (None, Endian.little):
            return None
        rest = codecs[1:]
        comp = None
        if rest:
            zstd = rest[0]
            if len(rest) != 1 or not isinstance(zstd, ZstdCodec):
                return None
            comp = numcodecs.Zstd(level=zstd.level, checksum=zstd.checksum)
    else:
        chunks = tuple(meta.chunks)
        if meta.filters or meta.order != "C":
            return None
        comp = meta.compressor
        if comp is not None and comp.codec_id != "zstd":
            return None
    if tuple(chunks[1:]) != shape[1:]:
        return None
    return int(chunks[0]), comp


def read_dense_rows(
    array: zarr.Array[Any],
    rows: npt.NDArray[np.int64],
    cache: dict[tuple[str, int], npt.NDArray[Any]] | None = None,
) -> npt.NDArray[Any]:
    """Return ``array[rows]`` for a dense array chunked along axis 0, in one batched read.

    Plain chains (bytes [+ zstd]) are decoded here, skipping zarr-python's per-call overhead;
    decoded chunks go to ``cache`` when given.  Other arrays use zarr's own selection.
    """
    fast = _dense_codec(array)
    if fast is None:
        return np.asarray(array.get_orthogonal_selection((rows,)))
    chunk_rows, comp = fast
    dtype = np.dtype(array.dtype)
    inner = tuple(array.shape[1:])
    wanted = unique_sorted(rows // chunk_rows)
    cache = {} if cache is None else cache
    missing = [int(c) for c in wanted if (array.path, int(c)) not in cache]
    prefix = array.store_path.path
    keys = []
    for c in missing:
        key = array.metadata.encode_chunk_key((c,) + (0,) * len(inner))
        keys.append(f"{prefix}/{key}" if prefix else key)
    for c, raw in zip(missing, _get_many(array.store_path.store, keys), strict=True):
        if raw is None:
            block = np.full((chunk_rows, *inner), array.fill_value, dtype=dtype)
        else:
            try:
                data = raw if comp is None else bytes(comp.decode(raw))
                block = np.frombuffer(data, dtype=dtype).reshape(chunk_rows, *inner)
            except (RuntimeError, ValueError, TypeError) as exc:
                raise CorruptPayloadError(f"{array.path} chunk {c}: cannot decode ({exc})") from exc
        cache[(array.path, c)] = block
    out = np.empty((len(rows), *inner), dtype=dtype)
    chunk_of = rows // chunk_rows
    for c in wanted.tolist():
        sel = chunk_of == c
        out[sel] = cache[(array.path, c)][rows[sel] - c * chunk_rows]
    return out


def read_dense(group: zarr.Group, path: str, selection: Any = Ellipsis) -> npt.NDArray[Any]:
    """Read (part of) a dense array as numpy, raising ``StoreNotFoundError`` if absent."""
    try:
        node = group[path]
    except KeyError:
        raise StoreNotFoundError(f"array {group.path}/{path} does not exist") from None
    if not isinstance(node, zarr.Array):
        raise StoreNotFoundError(f"{group.path}/{path} is a group, expected an array")
    return np.asarray(node[selection])
