"""Chunk checksums: how every chunk of a new array carries one, and how it is verified.

* Zarr v3: a ``crc32c`` codec ends the chain.  The stored chunk is the compressed bytes
  followed by their CRC-32C (little-endian uint32); zarr-python, tensorstore and zarrs verify
  it.  Readers here verify it over the stored bytes before anything is decompressed.
* Zarr v2 has no bytes-to-bytes codec after the compressor, so the checksum is a numcodecs
  ``crc32`` filter with ``location="end"`` (numcodecs >= 0.14, read by zarr-python 2.18 with
  numcodecs 0.15): the *decoded* chunk is followed by its CRC-32 (zlib) before compression.
  Readers here decompress, then verify before any byte is used.

Both catch any single-bit error of the bytes they cover; a v2 flip in the compressed bytes is
caught either by the decompressor or by the checksum of what it produced.  v2 dense arrays
need no filter: they are zlib streams, whose Adler-32 every v2 reader verifies.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import google_crc32c
import numpy as np
from numcodecs.abc import Codec as NumcodecsCodec
from numcodecs.checksum32 import CRC32

from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "CHECKSUM_BYTES",
    "InnerCrc32",
    "append_crc32c",
    "crc32c_matches",
    "is_v2_checksum",
    "strip_crc32c",
    "v2_checksum_filter",
]

CHECKSUM_BYTES = 4
"""Bytes of a stored checksum (CRC-32C in v3, CRC-32 in v2)."""


def _bytes(data: Any) -> memoryview:
    """Return a flat byte view of ``data``."""
    view = memoryview(data)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _crc32c(view: memoryview) -> int:
    # google-crc32c's C function takes numpy arrays and bytes, not memoryviews
    return int(google_crc32c.value(np.frombuffer(view, dtype=np.uint8)))


def append_crc32c(data: Any) -> bytes:
    """Return ``data`` followed by its CRC-32C: what zarr's ``crc32c`` codec stores."""
    view = _bytes(data)
    return b"".join((view, _crc32c(view).to_bytes(4, "little")))


def strip_crc32c(data: Any, where: str) -> memoryview:
    """Verify the CRC-32C that ends a stored chunk; return the bytes before it (no copy).

    Raises
    ------
    CorruptPayloadError
        The chunk is shorter than a checksum, or its bytes do not match it.
    """
    view = _bytes(data)
    if len(view) < CHECKSUM_BYTES:
        raise CorruptPayloadError(f"{where}: {len(view)} bytes, shorter than its checksum")
    body = view[:-CHECKSUM_BYTES]
    if _crc32c(body) != int.from_bytes(view[-CHECKSUM_BYTES:], "little"):
        raise CorruptPayloadError(f"{where}: checksum mismatch (crc32c), the chunk is damaged")
    return body


def crc32c_matches(parts: Sequence[Any], stored: Any) -> bool:
    """Whether the CRC-32C of ``parts`` joined equals the 4 little-endian bytes ``stored``."""
    crc = 0
    for part in parts:
        crc = google_crc32c.extend(crc, np.frombuffer(_bytes(part), dtype=np.uint8))
    return int(crc) == int.from_bytes(_bytes(stored), "little")


def v2_checksum_filter() -> CRC32:
    """Return the numcodecs filter that gives a v2 chunk its checksum (after its bytes)."""
    return CRC32(location="end")


def is_v2_checksum(config: dict[str, Any]) -> bool:
    """Whether a v2 filter's configuration is :func:`v2_checksum_filter`."""
    return config.get("id") == "crc32" and config.get("location") == "end"


def _append_crc32(data: Any) -> bytes:
    view = _bytes(data)
    return b"".join((view, (zlib.crc32(view) & 0xFFFFFFFF).to_bytes(4, "little")))


def strip_crc32(data: Any, where: str) -> memoryview:
    """Verify the CRC-32 that ends a decoded v2 chunk; return the bytes before it."""
    view = _bytes(data)
    if len(view) < CHECKSUM_BYTES:
        raise CorruptPayloadError(f"{where}: {len(view)} bytes, shorter than its checksum")
    body = view[:-CHECKSUM_BYTES]
    if zlib.crc32(body) & 0xFFFFFFFF != int.from_bytes(view[-CHECKSUM_BYTES:], "little"):
        raise CorruptPayloadError(f"{where}: checksum mismatch (crc32), the chunk is damaged")
    return body


class InnerCrc32(NumcodecsCodec):  # type: ignore[misc]
    """A v2 ``crc32`` end filter followed by a compressor, as one numcodecs codec.

    Encodes as zarr-python 2 does (checksum appended, then compressed) and decodes the other
    way round, raising :class:`CorruptPayloadError` on a mismatch.  Its ``codec_id`` is none
    of the compressors', so callers' compressor-specific shortcuts (partial Blosc decodes,
    decoding straight into place) do not apply: the whole chunk is decoded and verified.
    """

    codec_id = "zv-crc32-then"

    def __init__(self, compressor: NumcodecsCodec | None) -> None:
        self.compressor = compressor

    def encode(self, buf: Any) -> bytes:
        """Append the CRC-32 of ``buf``, then compress."""
        data = _append_crc32(buf)
        return data if self.compressor is None else bytes(self.compressor.encode(data))

    def decode(self, buf: Any, out: Any = None) -> memoryview:
        """Decompress, verify and cut the CRC-32 (``out`` is ignored)."""
        raw = buf if self.compressor is None else self.compressor.decode(buf)
        if not isinstance(raw, bytes | bytearray | memoryview):
            raw = np.ascontiguousarray(raw).reshape(-1).view(np.uint8).data
        return strip_crc32(raw, "chunk")
