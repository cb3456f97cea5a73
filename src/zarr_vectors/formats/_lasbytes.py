"""LAS header and record-header bytes laspy does not round-trip, kept raw (numpy and stdlib).

laspy rewrites some header bytes from the points it writes (legacy counts by return, the
bounding box), writes today's date for a missing one, and writes strings and record headers
its own way (zero padding after the terminating NUL, zero ``reserved`` fields).  Files carry
other bytes there.  :func:`read_raw` keeps those bytes of a source file, :func:`patch` puts
them back into a file laspy wrote:

* header ranges (:data:`RANGES`, :data:`RANGES_14`), when the written file holds the source's
  point count (the counts and box describe the points: a coarser level keeps laspy's values);
  the string-and-date range always;
* the 54-byte VLR and 60-byte EVLR record headers, one by one, when the written record has
  the same user id, record id and payload length as the kept one (so only the reserved field
  and the padding of the strings change).

Examples
--------
>>> RANGES[0], HEADER_SIZE_OFFSET
((26, 94), 94)
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["HEADER_SIZE_OFFSET", "RANGES", "RANGES_14", "patch", "read_raw"]

RANGES = ((26, 94), (107, 131), (179, 227))
"""Header byte ranges of every LAS version: system identifier, generating software and
creation date; legacy point counts by return; bounding box."""
RANGES_14 = ((255, 375),)
"""LAS 1.4 only: the 64-bit point counts by return."""
HEADER_SIZE_OFFSET = 94
"""Offset of the header size (uint16); the number of VLRs (uint32) is at 100."""
_VLR_HEADER = 54
_EVLR_HEADER = 60
_REBUILT = (b"laszip encoded", b"copc")
"""User ids of records the exporter rebuilds or leaves out: never paired with kept headers."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _u(raw: bytes, offset: int, size: int) -> int:
    return int.from_bytes(raw[offset : offset + size], "little")


def _user_id(record: bytes) -> bytes:
    return record[2:18].split(b"\0")[0]


def _record_headers(f: Any, extended: bool) -> list[tuple[int, bytes]]:
    """Offset and header of a file's VLRs (``extended``: EVLRs) but rebuilt ones."""
    f.seek(0)
    head = f.read(375)
    if extended:
        if _u(head, 24, 1) != 1 or _u(head, 25, 1) < 4 or len(head) < 247:
            return []
        start, count, size, width = _u(head, 235, 8), _u(head, 243, 4), _EVLR_HEADER, 8
    else:
        start, count, size, width = _u(head, 94, 2), _u(head, 100, 4), _VLR_HEADER, 2
    out: list[tuple[int, bytes]] = []
    pos = start
    for _ in range(count if start else 0):
        f.seek(pos)
        record = f.read(size)
        if len(record) < size:
            break
        if _user_id(record) not in _REBUILT:
            out.append((pos, record))
        pos += size + _u(record, 20, width)
    return out


def read_raw(path: str | os.PathLike[str], version: str) -> dict[str, Any]:
    """Return the kept bytes of a LAS file, JSON-ready (base64 strings)."""
    with open(path, "rb") as f:
        head = f.read(375)
        vlrs = _record_headers(f, extended=False)
        evlrs = _record_headers(f, extended=True)
    ranges = RANGES + (RANGES_14 if version == "1.4" else ())
    return {
        "ranges": {str(a): _b64(head[a:b]) for a, b in ranges if len(head) >= b},
        "vlr_headers": [_b64(h) for _, h in vlrs],
        "evlr_headers": [_b64(h) for _, h in evlrs],
    }


def _same_record(a: bytes, b: bytes, extended: bool) -> bool:
    """Whether two record headers share user id (up to its NUL), record id and length."""
    end = 28 if extended else 22
    return _user_id(a) == _user_id(b) and a[18:end] == b[18:end]


def _patch_records(f: Any, kept: list[bytes], extended: bool) -> None:
    for (pos, now), old in zip(_record_headers(f, extended), kept, strict=False):
        if _same_record(now, old, extended):
            f.seek(pos)
            f.write(old)


def patch(path: str | os.PathLike[str], raw: Mapping[str, Any], same_points: bool) -> None:
    """Put kept bytes back into a LAS file laspy wrote (see the module docstring)."""
    ranges = dict(raw.get("ranges") or {})
    if not same_points:
        ranges = {k: v for k, v in ranges.items() if int(k) == RANGES[0][0]}
    with open(path, "r+b") as f:
        for offset, data in ranges.items():
            f.seek(int(offset))
            f.write(base64.b64decode(str(data)))
        for key, extended in (("vlr_headers", False), ("evlr_headers", True)):
            kept = [base64.b64decode(str(h)) for h in raw.get(key) or ()]
            if kept:
                _patch_records(f, kept, extended)
