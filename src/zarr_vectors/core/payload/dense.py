"""Dense arrays (``vertex_counts``, object index, ...): batched writes and reads."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from numcodecs import blosc
from numcodecs.abc import Codec as NumcodecsCodec

from zarr_vectors.core.checksums import append_crc32c, strip_crc32c
from zarr_vectors.core.codec_policy import check_codecs
from zarr_vectors.core.payload import store_io
from zarr_vectors.core.payload.blosc_blocks import (
    BLOSC_HEADER_BYTES,
    BloscTable,
    blosc_table,
    decode_blocks,
)
from zarr_vectors.core.payload.chain import dense_codec, lz4_blocksize
from zarr_vectors.core.payload.codec import encode_plain
from zarr_vectors.core.payload.compression import FRAME_BYTES_ATTR
from zarr_vectors.core.payload.concurrency import parallel_map, serial_blosc
from zarr_vectors.core.payload.element import Blob
from zarr_vectors.core.payload.lz4_blocks import encode_lz4_blocks
from zarr_vectors.core.payload.store_io import dense_keys, set_many
from zarr_vectors.core.payload.zstd_frames import (
    FrameTable,
    decode_frames,
    encode_frames,
    frame_table,
)
from zarr_vectors.core.ragged import unique_sorted
from zarr_vectors.errors import CorruptPayloadError, StoreNotFoundError

__all__ = [
    "dense_chunk_count",
    "dense_chunks",
    "read_dense",
    "read_dense_rows",
    "read_dense_whole",
    "write_dense",
]


def read_dense_whole(array: zarr.Array[Any]) -> npt.NDArray[Any]:
    """Return all of a dense array; plain arrays chunked along axis 0 are decoded here.

    One batched read of every chunk and one decode per chunk (zarr-python's own path costs
    about twice as much on a million-row index); whole Blosc chunks decode straight into the
    result.
    """
    check_codecs(array)
    fast = dense_codec(array)
    shape = tuple(array.shape)
    if fast is None or not shape:
        return np.asarray(array[...])
    out = np.empty(shape, dtype=array.dtype)
    for lo, rows in _dense_chunks(array, *fast, out):
        if not np.may_share_memory(rows, out):  # not decoded in place: copy into place
            out[lo : lo + len(rows)] = rows
    return out


def dense_chunk_count(array: zarr.Array[Any]) -> int | None:
    """Return how many chunks :func:`dense_chunks` yields for ``array`` (None: not decoded here)."""
    check_codecs(array)
    fast = dense_codec(array)
    if fast is None or not array.shape:
        return None
    return -(-int(array.shape[0]) // fast[0])


def dense_chunks(
    array: zarr.Array[Any], chunks: range | None = None
) -> Iterator[tuple[int, npt.NDArray[Any]]] | None:
    """Decode a dense array chunk by chunk: ``(first row, rows)`` of each chunk, in order.

    For the arrays :func:`read_dense_whole` decodes itself (else None), without ever holding
    all of their rows: the rows of a chunk live in a buffer reused for the next chunk, so use
    (or copy) them before advancing.  ``chunks`` (of :func:`dense_chunk_count`) limits the
    chunks decoded, e.g. to split the work between threads (decoding releases the GIL).
    """
    check_codecs(array)
    fast = dense_codec(array)
    if fast is None or not array.shape:
        return None
    return _dense_chunks(array, *fast, chunks=chunks)


def _dense_chunks(
    array: zarr.Array[Any],
    chunk_rows: int,
    comp: NumcodecsCodec | None,
    crc: bool,
    out: npt.NDArray[Any] | None = None,
    chunks: range | None = None,
) -> Iterator[tuple[int, npt.NDArray[Any]]]:
    """``(first row, rows)`` of each chunk (of ``chunks``, default all) of a dense array, in order.

    Whole Blosc chunks decode straight into their rows of ``out`` when it is given (the
    array's shape and dtype); other chunks decode into one buffer reused chunk after chunk.
    """
    dtype = np.dtype(array.dtype)
    shape = tuple(array.shape)
    n = int(shape[0])
    row_bytes = dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
    if chunks is None:
        chunks = range(-(-n // chunk_rows) if n else 0)
    keys = dense_keys(array, chunks)
    flat = None if out is None else out.reshape(-1).view(np.uint8)
    scratch: npt.NDArray[np.uint8] | None = None
    for c, raw in zip(chunks, store_io.get_many(array.store_path.store, keys), strict=True):
        lo, hi = c * chunk_rows, min(n, (c + 1) * chunk_rows)
        if raw is None:
            yield lo, np.full((hi - lo, *shape[1:]), array.fill_value, dtype=dtype)
            continue
        if flat is not None and hi - lo == chunk_rows:
            dest = flat[lo * row_bytes : hi * row_bytes]
        else:
            if scratch is None:
                scratch = np.empty(chunk_rows * row_bytes, dtype=np.uint8)
            dest = scratch
        where = f"{array.path} chunk {c}"
        if crc:
            raw = strip_crc32c(raw, where)
        with serial_blosc():
            data = _decoded_dense(raw, comp, len(dest), where, dest)
        yield lo, data[: (hi - lo) * row_bytes].view(dtype).reshape(hi - lo, *shape[1:])


def _decoded_dense(
    raw: Blob,
    comp: NumcodecsCodec | None,
    nbytes: int,
    where: str,
    dest: npt.NDArray[np.uint8] | None = None,
) -> npt.NDArray[np.uint8]:
    """Decode a stored dense chunk of ``nbytes`` bytes; a Blosc chunk straight into ``dest``.

    ``dest`` (``nbytes`` long, optional) is returned when used, a new array otherwise.
    """
    blosc_sized = (
        comp is not None
        and comp.codec_id == "blosc"
        and len(raw) >= BLOSC_HEADER_BYTES
        and int.from_bytes(raw[4:8], "little") == nbytes
    )
    try:
        if dest is not None and blosc_sized:
            blosc.decompress(raw, dest)
            return dest
        data = raw if comp is None else comp.decode(raw)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CorruptPayloadError(f"{where}: cannot decode ({exc})") from exc
    if len(data) != nbytes:
        raise CorruptPayloadError(f"{where}: {len(data)} bytes, expected {nbytes}")
    return np.frombuffer(data, dtype=np.uint8)


# --------------------------------------------------------------------------------------------


def write_dense(array: zarr.Array[Any], data: npt.NDArray[Any]) -> None:
    """Store ``data`` as the whole of a new dense array: the bytes ``array[...] = data`` stores.

    Boolean and numeric arrays with a plain chain (bytes [+ zstd], chunked along axis 0) are
    encoded here and written in one batch, as zarr-python's codec pipeline does: each chunk
    padded to the full chunk shape with the fill value 0, its little-endian C-order bytes
    compressed; a chunk whose bytes are all zero equals the fill value bit for bit and is not
    stored (zarr's ``write_empty_chunks=False`` compares float fill values bitwise, so -0.0 is
    stored).  Other arrays go through zarr-python.
    """
    if data.size == 0:
        return
    fast = dense_codec(array) if data.dtype.kind in "biuf" else None
    if fast is None:
        # integer zeros equal the fill value: nothing to store (floats keep -0.0 exactly)
        if data.dtype.kind not in "iub" or data.any():
            array[...] = data
        return
    rows, comp, crc = fast
    full = (rows, *data.shape[1:])
    attr = array.attrs.get(FRAME_BYTES_ATTR)
    frame = attr if isinstance(attr, int) and comp is not None and comp.codec_id == "zstd" else 0
    blocksize = lz4_blocksize(comp)
    lz4 = None if blocksize is None else (data.dtype.itemsize, blocksize)
    blocks: list[tuple[int, npt.NDArray[Any]]] = []
    for c, start in enumerate(range(0, len(data), rows)):
        block = data[start : start + rows]
        if block.reshape(-1).view(np.uint8).any():
            blocks.append((c, block))

    def encode(item: tuple[int, npt.NDArray[Any]]) -> Blob:
        data = encode_block(item)
        return append_crc32c(data) if crc else data

    def encode_block(item: tuple[int, npt.NDArray[Any]]) -> Blob:
        block = item[1]
        if len(block) < rows:  # partial last chunk: padded with the fill value
            padded = np.zeros(full, dtype=data.dtype)
            padded[: len(block)] = block
            block = padded
        raw = block.tobytes()
        if comp is None:
            return raw
        if frame and len(raw) > frame:  # seekable zstd (docs/spec.md §10)
            return encode_frames(raw, frame, comp)
        if lz4 is not None:  # Blosc-LZ4 in blocks of exactly the configured size
            return encode_lz4_blocks(raw, *lz4)
        return encode_plain(comp, raw)

    encoded = parallel_map(encode, blocks, sum(b.nbytes for _, b in blocks))
    keys = dense_keys(array, [c for c, _ in blocks])
    set_many(array.store_path.store, list(zip(keys, encoded, strict=True)))


@dataclass(frozen=True)
class _SeekableChunk:
    """A seekable zstd or Blosc dense chunk, decoded frame by frame as rows are asked for."""

    data: Blob
    table: FrameTable | BloscTable
    decoded: npt.NDArray[np.uint8]
    done: set[int] = field(default_factory=set)


def read_dense_rows(
    array: zarr.Array[Any],
    rows: npt.NDArray[np.int64],
    cache: dict[tuple[str, int], Any] | None = None,
) -> npt.NDArray[Any]:
    """Return ``array[rows]`` for a dense array chunked along axis 0, in one batched read.

    Plain chains (bytes [+ zstd or Blosc]) are decoded here, skipping zarr-python's per-call
    overhead; chunks stored as seekable zstd or as Blosc decode only the frames (blocks)
    holding ``rows``.  Fetched chunks go to ``cache`` when given.  Other arrays use zarr's
    own selection.
    """
    cache = {} if cache is None else cache
    check_codecs(array)
    fast = cache.get((array.path, -1))  # the codec, found once per array
    if fast is None:
        fast = cache[(array.path, -1)] = dense_codec(array) or ()
    if not fast:
        return np.asarray(array.get_orthogonal_selection((rows,)))
    chunk_rows, comp, crc = fast
    dtype = np.dtype(array.dtype)
    inner = tuple(array.shape[1:])
    row_bytes = dtype.itemsize * int(np.prod(inner, dtype=np.int64))
    wanted = unique_sorted(rows // chunk_rows)
    missing = [int(c) for c in wanted if (array.path, int(c)) not in cache]
    keys = dense_keys(array, missing)
    for c, raw in zip(missing, store_io.get_many(array.store_path.store, keys), strict=True):
        where = f"{array.path} chunk {c}"
        if raw is None:
            cache[(array.path, c)] = np.full((chunk_rows, *inner), array.fill_value, dtype=dtype)
        else:
            if crc:
                raw = strip_crc32c(raw, where)
            cache[(array.path, c)] = _dense_chunk(raw, comp, chunk_rows * row_bytes, where)
    out = np.empty((len(rows), *inner), dtype=dtype)
    chunk_of = rows // chunk_rows
    for c in wanted.tolist():
        sel = np.flatnonzero(chunk_of == c)
        local = rows[sel] - c * chunk_rows
        got = _dense_rows_of(cache[(array.path, c)], local, row_bytes, f"{array.path} chunk {c}")
        out[sel] = got.view(dtype).reshape(-1, *inner)[local]
    return out


def _dense_chunk(
    raw: Blob, comp: NumcodecsCodec | None, nbytes: int, where: str
) -> _SeekableChunk | npt.NDArray[np.uint8]:
    """Prepare a stored dense chunk for row lookups: seekable when it can be, else decoded."""
    if comp is not None and comp.codec_id == "zstd":
        table = frame_table(raw, where)
        if table is not None and table.decoded[-1] == nbytes:
            return _SeekableChunk(raw, table, np.empty(nbytes, np.uint8))
    if comp is not None and comp.codec_id == "blosc" and len(raw) >= BLOSC_HEADER_BYTES:
        blocks = blosc_table(raw, where)
        if blocks.nbytes == nbytes:
            return _SeekableChunk(raw, blocks, np.empty(nbytes, np.uint8))
    try:
        data = raw if comp is None else bytes(comp.decode(raw))
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CorruptPayloadError(f"{where}: cannot decode ({exc})") from exc
    if len(data) != nbytes:
        raise CorruptPayloadError(f"{where}: {len(data)} bytes, expected {nbytes}")
    return np.frombuffer(data, dtype=np.uint8)


def _dense_rows_of(
    got: _SeekableChunk | npt.NDArray[Any],
    local: npt.NDArray[np.int64],
    row_bytes: int,
    where: str,
) -> npt.NDArray[Any]:
    """Return the chunk's bytes with at least rows ``local`` decoded."""
    if not isinstance(got, _SeekableChunk):
        return got.reshape(-1).view(np.uint8) if got.dtype != np.uint8 else got
    order = np.sort(local)
    starts, stops = order * row_bytes, (order + 1) * row_bytes
    if isinstance(got.table, BloscTable):
        stored = got.data
        decode_blocks(
            got.table,
            got.decoded,
            starts,
            stops,
            0,
            where,
            lambda o, n: stored[o : o + n],
            done=got.done,
        )
    else:
        decode_frames(got.data, got.table, got.decoded, starts, stops, 0, where, done=got.done)
    return got.decoded


def read_dense(group: zarr.Group, path: str, selection: Any = Ellipsis) -> npt.NDArray[Any]:
    """Read (part of) a dense array as numpy, raising ``StoreNotFoundError`` if absent."""
    try:
        node = group[path]
    except KeyError:
        raise StoreNotFoundError(f"array {group.path}/{path} does not exist") from None
    if not isinstance(node, zarr.Array):
        raise StoreNotFoundError(f"{group.path}/{path} is a group, expected an array")
    check_codecs(node)
    return np.asarray(node[selection])
