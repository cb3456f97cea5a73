"""Which codec chains this package decodes itself, from an array's metadata.

A payload array whose chain is ``vlen-bytes`` followed by bytes-to-bytes codecs with a
synchronous implementation (optionally inside a plain sharding codec; in Zarr v2 any numcodecs
compressor) gets an :class:`~zarr_vectors.core.payload.codec.ElementCodec`; a dense array
with a plain chain a :data:`DenseCodec`.  Other chains go through zarr-python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeAlias

import numcodecs
import numpy as np
import zarr
from numcodecs.abc import Codec as NumcodecsCodec
from zarr.abc.codec import BytesBytesCodec, SupportsSyncCodec
from zarr.codecs import (
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    Endian,
    ShardingCodec,
    ShardingCodecIndexLocation,
    VLenBytesCodec,
    ZstdCodec,
)

from zarr_vectors.core.checksums import InnerCrc32, is_v2_checksum
from zarr_vectors.core.payload.caches import ELEMENT_CODECS
from zarr_vectors.core.payload.codec import ElementCodec
from zarr_vectors.core.payload.compression import FRAME_BYTES_ATTR, payload_typesize
from zarr_vectors.core.shards import ShardFormat
from zarr_vectors.core.zarr_adapter import ArrayV3Metadata, SyncBytesCodecs

__all__ = [
    "DenseCodec",
    "FastCodec",
    "cached_element_codec",
    "dense_codec",
    "element_codec",
    "lz4_blocksize",
]

FastCodec: TypeAlias = tuple[ElementCodec, ShardFormat | None]
"""The element codec of a payload array this package decodes itself, and its shard packing
(None: unsharded)."""


def cached_element_codec(array: zarr.Array[Any]) -> FastCodec | None:
    """:func:`element_codec` of ``array``, found once per metadata object."""
    meta = array.metadata
    hit = ELEMENT_CODECS.get(id(meta))
    if hit is not None and hit[0] is meta:
        return hit[1]  # type: ignore[no-any-return]
    fast = element_codec(array)
    ELEMENT_CODECS.put(id(meta), (meta, fast))
    return fast


def _chain_codec(codecs: Sequence[Any]) -> ElementCodec | None:
    if len(codecs) > 1 and isinstance(codecs[-1], Crc32cCodec):
        inner = _chain_codec(codecs[:-1])
        if inner is not None and not inner.crc32c:
            return replace(inner, crc32c=True)
    kinds = [type(c) for c in codecs]
    if kinds == [VLenBytesCodec]:
        return ElementCodec(None)
    if kinds == [VLenBytesCodec, ZstdCodec]:
        zstd = codecs[1]
        return ElementCodec(numcodecs.Zstd(level=zstd.level, checksum=zstd.checksum))
    if kinds == [VLenBytesCodec, BloscCodec]:  # same bytes as zarr's codec; seekable blocks
        return ElementCodec(codecs[1]._blosc_codec)
    rest = codecs[1:]
    if kinds[:1] == [VLenBytesCodec] and all(
        isinstance(c, BytesBytesCodec) and isinstance(c, SupportsSyncCodec) for c in rest
    ):
        return ElementCodec(SyncBytesCodecs(rest))
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


def element_codec(array: zarr.Array[Any]) -> FastCodec | None:
    """Return the fast element codec (and shard packing) for plain chains, else None."""
    found = _plain_codec(array)
    if found is None:
        return None
    codec, fmt = found
    frame = array.attrs.get(FRAME_BYTES_ATTR)
    if isinstance(frame, int) and not isinstance(frame, bool) and frame > 0:
        codec = replace(codec, frame_bytes=frame)
    lz4 = _lz4_blocks_of(array, codec)
    if lz4 is not None:
        codec = replace(codec, lz4_blocks=lz4)
    return codec, fmt


def lz4_blocksize(comp: NumcodecsCodec | None) -> int | None:
    """Block size when ``comp`` is Blosc LZ4 + byte shuffle with a fixed block size."""
    if comp is None or comp.codec_id != "blosc":
        return None
    cfg = comp.get_config()
    blocksize = cfg.get("blocksize")
    if cfg.get("cname") != "lz4" or cfg.get("shuffle") != 1 or not blocksize:
        return None
    return int(blocksize)


def _lz4_blocks_of(array: zarr.Array[Any], codec: ElementCodec) -> tuple[int, int] | None:
    """``(typesize, blocksize)`` when elements are Blosc LZ4 + byte shuffle in fixed blocks."""
    blocksize = lz4_blocksize(codec.compressor)
    if blocksize is None:
        return None
    typesize = None
    meta = array.metadata
    if isinstance(meta, ArrayV3Metadata):
        chain = list(meta.codecs)
        if len(chain) == 1 and isinstance(chain[0], ShardingCodec):
            chain = list(chain[0].codecs)
        typesize = next((c.typesize for c in chain if isinstance(c, BloscCodec)), None)
    return int(typesize or payload_typesize(array.attrs)), blocksize


def _plain_codec(array: zarr.Array[Any]) -> FastCodec | None:
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
    filters = [f.get_config() for f in (meta.filters or ())]
    if not filters or filters[0].get("id") != "vlen-bytes":
        return None
    comp = meta.compressor
    if len(filters) == 2 and is_v2_checksum(filters[1]):
        return ElementCodec(InnerCrc32(comp)), None  # decoded whole, then verified
    if len(filters) != 1:
        return None
    if comp is None:
        return ElementCodec(None), None
    return ElementCodec(comp), None  # any numcodecs compressor: same bytes as zarr v2


# --------------------------------------------------------------------------------------------
# raw key I/O


DenseCodec: TypeAlias = tuple[int, NumcodecsCodec | None, bool]
"""``(rows per chunk, compressor, crc32c)`` of a dense array decoded here: ``crc32c`` when
stored chunks end with a CRC-32C (v3 ``crc32c`` codec), verified and cut before decoding; a
v2 ``crc32`` filter is part of the compressor (:class:`~zarr_vectors.core.checksums.InnerCrc32`)."""


def dense_codec(array: zarr.Array[Any]) -> DenseCodec | None:
    """:data:`DenseCodec` when a dense array can be decoded directly, else None."""
    meta = array.metadata
    shape = tuple(array.shape)
    if not shape or np.dtype(array.dtype).byteorder == ">":
        return None
    if isinstance(meta, ArrayV3Metadata):
        chunks = tuple(meta.chunk_grid.chunk_shape)  # type: ignore[attr-defined]
        found = _dense_chain_v3(list(meta.codecs))
    else:
        chunks = tuple(meta.chunks)
        found = _dense_chain_v2(meta) if meta.order == "C" else None
    if found is None or tuple(chunks[1:]) != shape[1:]:
        return None
    return int(chunks[0]), *found


def _dense_chain_v3(codecs: list[Any]) -> tuple[NumcodecsCodec | None, bool] | None:
    """``(compressor, crc32c)`` of a plain v3 chain: bytes (little), [zstd | blosc], [crc32c]."""
    if not codecs or not isinstance(codecs[0], BytesCodec):
        return None
    if codecs[0].endian not in (None, Endian.little):
        return None
    rest = codecs[1:]
    crc = bool(rest) and isinstance(rest[-1], Crc32cCodec)
    if crc:
        rest = rest[:-1]
    if not rest:
        return None, crc
    only = rest[0]
    if len(rest) != 1:
        return None
    if isinstance(only, ZstdCodec):
        return numcodecs.Zstd(level=only.level, checksum=only.checksum), crc
    if isinstance(only, BloscCodec):
        return only._blosc_codec, crc
    return None


def _dense_chain_v2(meta: Any) -> tuple[NumcodecsCodec | None, bool] | None:
    """``(compressor, False)`` of a plain v2 chain: [crc32 filter], [zstd|blosc|gzip|zlib]."""
    filters = [f.get_config() for f in (meta.filters or ())]
    if len(filters) > 1 or (filters and not is_v2_checksum(filters[0])):
        return None
    comp = meta.compressor
    if comp is not None and comp.codec_id not in ("zstd", "blosc", "gzip", "zlib"):
        return None
    return (InnerCrc32(comp) if filters else comp), False
