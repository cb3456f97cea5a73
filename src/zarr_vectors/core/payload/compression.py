"""``compressor=`` of the writers: presets, checks, and the codecs new arrays get.

Also the block and frame sizes payload and dense arrays are written with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import numcodecs
import numpy as np
import zarr
from numcodecs.abc import Codec as NumcodecsCodec
from zarr.abc.codec import BytesBytesCodec
from zarr.codecs import BloscCodec, Crc32cCodec, ZstdCodec

from zarr_vectors.core.checksums import v2_checksum_filter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import Compression

__all__ = [
    "check_compressor",
    "Compressor",
    "COMPRESSOR_NAMES",
    "compressor_spec",
    "CompressorSpec",
    "default_compressor",
    "DEFAULT_FRAME_BYTES",
    "DEFAULT_PRESET",
    "DEFAULT_ZSTD_LEVEL",
    "DENSE_FRAME_BYTES",
    "FRAME_BYTES_ATTR",
    "lz4_blosc",
    "PATH_FRAME_BYTES",
    "LZ4_LEVEL",
    "LZ4_LINKS_BLOCK",
    "payload_typesize",
    "preset",
    "resolve_compressor",
    "SOURCE_COMPRESSOR",
    "TREE_FRAME_BYTES",
    "V2_DENSE_ZLIB_LEVEL",
    "with_checksum",
]

DEFAULT_ZSTD_LEVEL = 3
"""zstd level of the ``"zstd"`` preset (and of the dense arrays besides the object index)."""

DEFAULT_PRESET = Compression.LZ4
"""The preset ``compressor="default"`` stands for (chosen by measurement: docs/performance.md)."""

Compressor: TypeAlias = BytesBytesCodec | NumcodecsCodec | None
"""A zarr v3 bytes-to-bytes codec, a numcodecs codec (Zarr v2), or None for no compression."""

CompressorSpec: TypeAlias = Compressor | str | Mapping[str, Compressor | str]
"""One compressor for every array, or a mapping from array path to compressor (``"*"``: rest)."""


def default_compressor(zarr_format: int) -> Any:
    """Return the ``"zstd"`` preset's compressor for a Zarr format (that of dense arrays too)."""
    if zarr_format == 2:
        return numcodecs.Zstd(level=DEFAULT_ZSTD_LEVEL)
    return ZstdCodec(level=DEFAULT_ZSTD_LEVEL)


LZ4_LEVEL = 5
"""Blosc level of the ``"lz4"`` preset (LZ4's ratio barely changes with it; docs/performance.md)."""

COMPRESSOR_NAMES = ("default", *(c.value for c in Compression))
"""Names accepted by ``compressor=``: ``"default"``/``"lz4"`` (payload arrays Blosc-LZ4 with
byte shuffle in ``frame_bytes`` blocks, the object index in 16 KiB blocks, other dense arrays
zstd level 3), ``"zstd"`` (zstd level 3 everywhere, one frame per chunk) and ``"none"`` (as
None)."""


def preset(compressor: Any) -> Compression | None:
    """Return the preset a ``compressor=`` value names (``"default"`` resolved), else None."""
    if not isinstance(compressor, str):
        return None
    if compressor == "default":
        return DEFAULT_PRESET
    try:
        return Compression(compressor)
    except ValueError:
        return None


SOURCE_COMPRESSOR = "source"
"""``compressor=`` of the functions that write from an existing store (``build_pyramid``,
``rechunk``): each array compressed as its source array is (see
:meth:`~zarr_vectors.core.reader.LevelReader.compressors`)."""


LZ4_LINKS_BLOCK = 65536
"""Blosc block of ``"lz4"`` ``links`` payloads (read whole, and in full by every object read).

Written by :func:`~zarr_vectors.core.payload.lz4_blocks.encode_lz4_blocks` as single LZ4 blocks
("do not split"): faster to decode than c-blosc's own blocks of per-byte streams, and no
larger (docs/performance.md).  Other arrays read whole keep c-blosc's blocks: it encodes them
faster (multi-threaded C), which matters for the large fragment and cross-link arrays of path
stores."""


def lz4_blosc(zarr_format: int, typesize: int, blocksize: int | None) -> Any:
    """Blosc LZ4 + byte shuffle over ``typesize``-byte values, ``blocksize`` bytes a block.

    ``blocksize`` None lets c-blosc choose.
    """
    typesize = max(1, min(int(typesize), 255))
    blocksize = blocksize or 0
    if zarr_format == 2:
        return numcodecs.Blosc(
            cname="lz4",
            clevel=LZ4_LEVEL,
            shuffle=numcodecs.Blosc.SHUFFLE,
            blocksize=blocksize,
            typesize=typesize,
        )
    return BloscCodec(
        cname="lz4",
        clevel=LZ4_LEVEL,
        shuffle="shuffle",
        typesize=typesize,
        blocksize=blocksize,
    )


def compressor_spec(array: zarr.Array[Any]) -> Compressor | str:
    """Return the writers' ``compressor=`` for an existing array: preset name, None or codec.

    zstd at the default level is ``"zstd"``, Blosc-LZ4 with byte shuffle ``"lz4"``, no
    compressor None; any other single compressor is returned as is (for arrays of the same
    Zarr format), a chain of several as ``"default"``.  The chunk checksum (a trailing v3
    ``crc32c`` codec, a v2 ``crc32`` filter) is not a compressor: new arrays always get one.
    """
    comps = tuple(c for c in array.compressors if not isinstance(c, Crc32cCodec))
    if not comps:
        return None
    if len(comps) > 1:
        return "default"
    codec = comps[0]
    if isinstance(codec, ZstdCodec):
        plain = codec.level == DEFAULT_ZSTD_LEVEL and not codec.checksum
        return Compression.ZSTD.value if plain else codec
    if isinstance(codec, BloscCodec):
        lz4 = codec.cname.value == "lz4" and codec.shuffle is not None
        return "lz4" if lz4 and codec.shuffle.value == "shuffle" else codec
    if isinstance(codec, NumcodecsCodec):
        cfg = codec.get_config()
        if cfg.get("id") == "zstd" and cfg.get("level") == DEFAULT_ZSTD_LEVEL:
            return Compression.ZSTD.value if not cfg.get("checksum") else codec
        if cfg.get("id") == "blosc" and cfg.get("cname") == "lz4" and cfg.get("shuffle") == 1:
            return "lz4"
        return codec
    if isinstance(codec, BytesBytesCodec):
        return codec
    return "default"


def check_compressor(compressor: CompressorSpec, zarr_format: int) -> CompressorSpec:
    """Return ``compressor`` after checking it names a preset or is a codec for ``zarr_format``.

    A mapping (array path, or ``"*"`` for the rest, to compressor) has each value checked.

    Raises
    ------
    InvalidInputError
        An unknown preset name, or an object that is not a compressor of that Zarr format.
    """
    values = compressor.values() if isinstance(compressor, Mapping) else (compressor,)
    for value in values:
        resolve_compressor(value, zarr_format)
    return compressor


def resolve_compressor(
    compressor: Compressor | str,
    zarr_format: int,
    *,
    typesize: int | None = None,
    blocksize: int | None = None,
) -> Any:
    """Resolve ``compressor=`` for one array; ``typesize`` is set for payload arrays only."""
    if isinstance(compressor, str):
        if compressor not in COMPRESSOR_NAMES:
            raise InvalidInputError(
                f"compressor: unknown name {compressor!r} (expected one of {COMPRESSOR_NAMES}, "
                "a codec or None)"
            )
        name = preset(compressor)
        if name is Compression.NONE:
            return None
        if name is Compression.LZ4 and typesize is not None:
            return lz4_blosc(zarr_format, typesize, blocksize)
        return default_compressor(zarr_format)
    if compressor is None:
        return None
    wanted = NumcodecsCodec if zarr_format == 2 else BytesBytesCodec
    if not isinstance(compressor, wanted):
        raise InvalidInputError(
            f"compressor: {compressor!r} is not a Zarr v{zarr_format} compressor (expected one "
            f"of {COMPRESSOR_NAMES}, a {wanted.__name__} or None)"
        )
    return compressor


V2_DENSE_ZLIB_LEVEL = 1
"""zlib level of Zarr v2 dense arrays (zlib's Adler-32 is their checksum; docs/performance.md)."""


def with_checksum(
    codec: Any, zarr_format: int, *, vlen: bool, checksum: bool = True
) -> tuple[Any, Any]:
    """``(compressors, filters)`` of a new array: ``codec`` plus the chunk checksum.

    v3: zarr's ``crc32c`` codec after the compressor.  v2 payload arrays: a ``crc32``
    filter after the vlen-bytes filter (see :mod:`~zarr_vectors.core.checksums`).  v2 dense
    arrays: zlib, whatever ``codec`` is: its Adler-32 is the one checksum every v2 reader
    verifies (tensorstore reads no v2 filters, nor zstd's ``checksum`` option; gzip would
    also do, but its header holds the time of writing).
    """
    if not checksum:
        return codec, ([numcodecs.VLenBytes()] if vlen and zarr_format == 2 else None)
    if zarr_format == 2:
        if not vlen:
            return numcodecs.Zlib(level=V2_DENSE_ZLIB_LEVEL), None
        return codec, [numcodecs.VLenBytes(), v2_checksum_filter()]
    if isinstance(codec, Crc32cCodec):  # the caller's chain is a checksum already
        return codec, None
    return ((Crc32cCodec(),) if codec is None else (codec, Crc32cCodec())), None


# --------------------------------------------------------------------------------------------


FRAME_BYTES_ATTR = "zstd_frame_bytes"
"""Array attribute: payloads longer than this many decoded bytes are seekable zstd."""

DEFAULT_FRAME_BYTES = 4096
"""Decoded bytes per zstd frame of object-type payloads (see docs/spec.md, docs/performance.md)."""

PATH_FRAME_BYTES = 1024
"""Decoded bytes per Blosc block of polyline and streamline vertex-aligned payloads.

A box read returns every touching path whole, and a path's run of rows in one chunk is only
tens of vertices (a few hundred bytes): 1 KiB blocks decode about a quarter of the bytes that
4 KiB blocks do for the same runs, while smaller blocks cost more per block than they save
and compress worse (docs/performance.md)."""

TREE_FRAME_BYTES = 65536
"""Decoded bytes per zstd frame of skeleton payloads: trees are read whole (by id, by box,
all) and their pieces in a chunk span hundreds of nodes, so smaller frames only add a cost
per frame to whole-tree reads without making a read of one tree by id any cheaper."""

DENSE_FRAME_BYTES = 16384
"""Decoded bytes per Blosc block of ``object_index`` chunks (few-row lookups decode only
the blocks holding them).  Stores written by earlier versions hold seekable zstd frames of
this size (attribute ``zstd_frame_bytes``): they are read, never written."""


def payload_typesize(attributes: Mapping[str, Any]) -> int:
    """Byte width of one value of a payload array (its ``dtype`` attribute; 1 if unknown)."""
    try:
        return int(np.dtype(attributes["dtype"]).itemsize) or 1
    except (KeyError, TypeError, ValueError):
        return 1
