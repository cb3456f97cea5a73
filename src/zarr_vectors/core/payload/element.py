"""The vlen-bytes element of a payload chunk: its header, and how much decoding it may ask for.

A payload chunk holds one variable-length element: an 8-byte header ``(count, length)``
(little-endian uint32 each, count 1) followed by ``length`` bytes of rows.  Every decoder
checks the header before trusting it, and refuses decoded sizes beyond :func:`decode_cap`.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.gather import ELEMENT_HEADER
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "Blob",
    "check_declared",
    "check_element_header",
    "decode_cap",
    "DECODE_RATIO_CAP",
    "HEADER",
    "header_problem",
    "MIN_DECODE_CAP",
    "with_header",
]

Blob: TypeAlias = bytes | memoryview
"""Stored bytes of one key: local reads hand out read-only views of a shared buffer."""

HEADER = ELEMENT_HEADER
"""Header of a vlen-bytes element holding one item: ``(count, length)`` as two uint32."""

MIN_DECODE_CAP = 256 << 20
"""Decoded bytes always accepted from one element whose size nothing else tells (bytes)."""

DECODE_RATIO_CAP = 64
"""Above :data:`MIN_DECODE_CAP`, the most decoded bytes accepted per stored byte of such an
element: far above what coordinates and indices compress to (x1.1-x4), so an honest chunk
passes, while a crafted one (zstd reaches x30,000 on zeros) cannot make a read allocate GBs."""


def decode_cap(stored: int) -> int:
    """Return the most decoded bytes accepted from an element of ``stored`` stored bytes."""
    return max(MIN_DECODE_CAP, DECODE_RATIO_CAP * int(stored))


def check_declared(declared: int | None, stored: int, where: str) -> None:
    """Refuse a decoded size (as a stored header declares it) beyond :func:`decode_cap`."""
    if declared is not None and declared > decode_cap(stored):
        raise CorruptPayloadError(
            f"{where}: declares {declared} decoded bytes from {stored} stored, more than "
            f"the {decode_cap(stored)} accepted (a damaged or crafted chunk)"
        )


def with_header(payload: bytes | memoryview) -> memoryview:
    """Return the vlen-bytes element of ``payload`` (8-byte header, then the bytes; one copy)."""
    data = np.frombuffer(payload, dtype=np.uint8)
    out = np.empty(HEADER.size + len(data), dtype=np.uint8)
    out[: HEADER.size] = np.frombuffer(HEADER.pack(1, len(data)), dtype=np.uint8)
    out[HEADER.size :] = data
    return out.data.toreadonly()


def header_problem(element: Blob | bytearray | npt.NDArray[np.uint8], present: int) -> str | None:
    """Return what is wrong with the vlen header opening ``element``, or None.

    The header must say one element of ``present`` bytes.
    """
    if len(element) < HEADER.size:
        return "truncated element header"
    count, length = HEADER.unpack(bytes(element[: HEADER.size]))
    if count != 1 or length != present:
        return (
            f"malformed vlen-bytes element (count {count}, length {length}, "
            f"{present} bytes present)"
        )
    return None


def check_element_header(
    element: Blob | bytearray | npt.NDArray[np.uint8], where: str, present: int | None = None
) -> None:
    """Raise unless ``element`` (decoded) starts with the vlen header of its own length.

    With ``present``, ``element`` is the header alone, of rows of ``present`` bytes.
    """
    if present is None:
        present = len(element) - HEADER.size
    wrong = header_problem(element, present)
    if wrong is not None:
        raise CorruptPayloadError(f"{where}: {wrong}")
