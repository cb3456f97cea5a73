"""The codecs this library will ever decode: what ZVF writes plus the standard Zarr set.

Array metadata is untrusted input: a v2 ``.zarray`` may name numcodecs' ``pickle`` codec, whose
decoder runs arbitrary code (numcodecs before 0.15.2 / 0.16.6 unpickles by default, later ones
when ``NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE`` is set).  Every path that decodes an array's
chunks checks its codec chain here first and refuses anything else with
:class:`~zarr_vectors.errors.CorruptPayloadError` before a byte is read.
"""

from __future__ import annotations

from typing import Any

import zarr

from zarr_vectors.core.zarr_adapter import ArrayV3Metadata
from zarr_vectors.errors import CorruptPayloadError

__all__ = ["ALLOWED_V2", "ALLOWED_V3", "check_codecs", "foreign_codecs"]

ALLOWED_V3 = frozenset(
    {
        "bytes",
        "transpose",
        "vlen-bytes",
        "vlen-utf8",
        "blosc",
        "gzip",
        "zstd",
        "crc32c",
        "sharding_indexed",
    }
)
"""Zarr v3 codec names decoded: the core specification's codecs and variable-length bytes."""

ALLOWED_V2 = frozenset(
    {
        # compressors
        "blosc",
        "zstd",
        "gzip",
        "zlib",
        "bz2",
        "lzma",
        "lz4",
        # filters: object encodings of bytes and strings, checksums
        "vlen-bytes",
        "vlen-utf8",
        "crc32",
        "crc32c",
        "adler32",
    }
)
"""numcodecs ids decoded in Zarr v2 arrays (``pickle``, ``msgpack``, ``json2``... are not)."""

_CHECKED: dict[int, tuple[Any, tuple[str, ...]]] = {}
_MAX_CHECKED = 4096


def _v3_names(codecs: Any) -> list[str]:
    names = []
    for codec in codecs or ():
        if not isinstance(codec, dict):
            names.append(str(codec))
            continue
        names.append(str(codec.get("name")))
        config = codec.get("configuration")
        if isinstance(config, dict):  # sharding: its inner and index chains too
            names += _v3_names(config.get("codecs"))
            names += _v3_names(config.get("index_codecs"))
    return names


def foreign_codecs(array: zarr.Array[Any]) -> tuple[str, ...]:
    """Return the codecs of ``array``'s chain that are not on the allow-list (cached)."""
    meta = array.metadata
    hit = _CHECKED.get(id(meta))
    if hit is not None and hit[0] is meta:
        return hit[1]
    if isinstance(meta, ArrayV3Metadata):
        # each codec's own document: the array's would serialise its data type (and warn)
        names = _v3_names([c.to_dict() for c in meta.codecs])
        allowed = ALLOWED_V3
    else:
        chain = [*(meta.filters or ()), *([meta.compressor] if meta.compressor else [])]
        names = [str(getattr(c, "codec_id", c)) for c in chain]
        allowed = ALLOWED_V2
    bad = tuple(n for n in names if n not in allowed)
    if len(_CHECKED) >= _MAX_CHECKED:
        _CHECKED.clear()
    _CHECKED[id(meta)] = (meta, bad)
    return bad


def check_codecs(array: zarr.Array[Any]) -> None:
    """Raise :class:`CorruptPayloadError` unless every codec of ``array`` is allowed."""
    bad = foreign_codecs(array)
    if bad:
        raise CorruptPayloadError(
            f"{array.path}: codec {', '.join(repr(b) for b in bad)} is not one zarr-vectors "
            "decodes (allowed: the Zarr standard codecs and what ZVF writes); refused "
            "before reading any chunk"
        )
