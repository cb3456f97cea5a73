"""Seekable zstd payloads (zstd seekable format) and bounded zstd decoding.

A seekable payload is independent zstd frames followed by a seek table in a skippable frame,
so any zstd decoder reads it whole and this package can decode only the frames holding some
rows.  Whole decodes here never allocate more than
:func:`~zarr_vectors.core.payload.element.decode_cap`.
"""

from __future__ import annotations

import os
import struct
import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt
import zstandard
from numcodecs.abc import Codec as NumcodecsCodec

from zarr_vectors.core.payload.compression import DEFAULT_ZSTD_LEVEL
from zarr_vectors.core.payload.element import HEADER, Blob, check_declared, decode_cap
from zarr_vectors.core.ragged import concat_ranges, unique_sorted
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "BATCH_ZSTD",
    "decode_frames",
    "encode_frames",
    "encode_frames_many",
    "frame_table",
    "FrameTable",
    "TailTooShort",
    "zstd_bounded",
    "zstd_into",
    "zstd_size",
]

_SKIPPABLE_MAGIC = 0x184D2A5E
_SEEKABLE_MAGIC = 0x8F92EAB1
_SKIP_HEADER = struct.Struct("<II")  # magic, frame size
_SEEK_FOOTER = struct.Struct("<IBI")  # frames, descriptor, magic


class TailTooShort(Exception):
    """The bytes given to :func:`frame_table` end the payload but miss part of its table."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


@dataclass(frozen=True)
class FrameTable:
    """Where the zstd frames of a seekable payload are (zstd seekable format)."""

    compressed: list[int]
    """(n + 1) offsets of the frames in the stored bytes."""
    decoded: list[int]
    """(n + 1) offsets of the frames in the decoded stream (element header included)."""


def frame_table(data: bytes | memoryview, where: str, size: int | None = None) -> FrameTable | None:
    """Parse the seek table at the end of a stored payload; None if it has none.

    The table follows the zstd seekable format: a skippable frame (magic ``0x184D2A5E``)
    holding ``(compressed size, decoded size)`` uint32 pairs per frame (plus a checksum
    each when the descriptor's bit 7 is set) and a 9-byte footer ``(frame count,
    descriptor, 0x8F92EAB1)``.  Any zstd decoder skips it.
    """
    have = len(data)
    size = have if size is None else size
    base = size - have  # ``data`` is the last ``have`` bytes of the stored payload
    if have < _SKIP_HEADER.size + _SEEK_FOOTER.size:
        return None
    n, desc, magic = _SEEK_FOOTER.unpack_from(data, have - _SEEK_FOOTER.size)
    if magic != _SEEKABLE_MAGIC:
        return None
    cols = 3 if desc & 0x80 else 2
    body = 4 * cols * n + _SEEK_FOOTER.size
    start = size - body - _SKIP_HEADER.size
    if desc & 0x7F or start < 0:
        raise CorruptPayloadError(f"{where}: malformed zstd seek table")
    if start < base:
        raise TailTooShort(size - start)
    skip, frame_size = _SKIP_HEADER.unpack_from(data, start - base)
    if skip != _SKIPPABLE_MAGIC or frame_size != body:
        raise CorruptPayloadError(f"{where}: malformed zstd seek table")
    entries = struct.unpack_from(f"<{cols * n}I", data, start - base + _SKIP_HEADER.size)
    compressed = [0, *accumulate(entries[0::cols])]
    decoded = [0, *accumulate(entries[1::cols])]
    if compressed[-1] != start:
        raise CorruptPayloadError(f"{where}: zstd seek table does not match the frames")
    return FrameTable(compressed, decoded)


def decode_frames(
    data: Blob,
    table: FrameTable,
    out: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
    skip: int,
    where: str,
    read: Callable[[int, int], bytes] | None = None,
    done: set[int] | None = None,
) -> None:
    """Decode the frames of a seekable zstd stream holding the ranges ``[starts, stops)``.

    ``out`` is the decoded stream without its first ``skip`` bytes (range coordinates).
    ``data`` holds the stored stream; or, with ``read(offset, n)``, the stored bytes are read
    on demand (one read spanning the frames needed).  Frames in ``done`` are already in
    ``out`` and are skipped; decoded frames are added to it.
    """
    dec = table.decoded
    if len(starts) <= 32:  # the usual case (a few objects per chunk): plain Python
        needed: set[int] = set()
        for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
            if b > a:
                lo = bisect_right(dec, a + skip) - 1
                needed.update(range(lo, bisect_right(dec, b + skip - 1, lo)))
        frames = sorted(needed)
    else:
        arr = np.asarray(dec)
        first = np.searchsorted(arr, starts + skip, side="right") - 1
        last = np.searchsorted(arr, stops + skip - 1, side="right") - 1
        keep = last >= first
        span = last[keep] - first[keep] + 1
        frames = unique_sorted(concat_ranges(first[keep], span)).tolist()
    if done is not None:
        frames = [f for f in frames if f not in done]
    if not frames:
        return
    dctx = _dctx()
    comp = table.compressed
    base = 0
    if read is not None:
        base = comp[frames[0]]
        data = read(base, comp[frames[-1] + 1] - base)
    for f in frames:
        try:
            chunk = dctx.decompress(data[comp[f] - base : comp[f + 1] - base])
        except zstandard.ZstdError as exc:
            raise CorruptPayloadError(f"{where}: cannot decompress frame {f} ({exc})") from exc
        a, b = dec[f], dec[f + 1]
        if len(chunk) != b - a:
            raise CorruptPayloadError(f"{where}: frame {f} decodes to {len(chunk)} bytes")
        head = max(skip - a, 0)  # the first frame may start with a header
        out[a + head - skip : b - skip] = np.frombuffer(chunk, dtype=np.uint8, offset=head)
        if done is not None:  # only once decoded: a failed frame stays to be decoded again
            done.add(f)


BATCH_ZSTD = getattr(zstandard, "backend", "") == "cext"
"""``ZstdCompressor.multi_compress_to_buffer`` is available (C backend only)."""

_BATCH_FRAMES_PER_THREAD = 64
"""Frames per native thread of a batched zstd encode (fewer: fewer threads)."""


def _frame_compressor(compressor: NumcodecsCodec) -> zstandard.ZstdCompressor:
    cfg = compressor.get_config()
    return zstandard.ZstdCompressor(
        level=int(cfg.get("level", DEFAULT_ZSTD_LEVEL)),
        write_checksum=bool(cfg.get("checksum", False)),
        write_content_size=True,
    )


def encode_frames_many(
    payloads: Sequence[memoryview], frame: int, compressor: NumcodecsCodec
) -> list[bytes]:
    """:func:`encode_frames` of each element (header + payload), in one native zstd batch.

    Elements are longer than ``frame`` bytes.  Only an element's first frame (header and the
    first bytes) is copied; the other frames are compressed in place.
    """
    if not payloads:
        return []
    head = HEADER.size
    elements = []  # frames as (offset, length) segments: no Python object per frame
    for view in payloads:
        first = HEADER.pack(1, len(view)) + bytes(view[: frame - head])
        elements.append(zstandard.BufferWithSegments(first, _segments([0], len(first), frame)))
        starts = np.arange(frame - head, len(view), frame, dtype="<u8")
        if len(starts):
            elements.append(zstandard.BufferWithSegments(view, _segments(starts, len(view), frame)))
    n_frames = sum(len(e) for e in elements)
    threads = min(os.cpu_count() or 1, n_frames // _BATCH_FRAMES_PER_THREAD)
    done = _frame_compressor(compressor).multi_compress_to_buffer(
        zstandard.BufferWithSegmentsCollection(*elements),  # type: ignore[no-untyped-call]
        threads=threads if threads > 1 else 0,
    )
    out = []
    first_frame = 0
    for view in payloads:
        size = head + len(view)
        n = -(-size // frame)
        out.append(_seekable([done[j] for j in range(first_frame, first_frame + n)], size, frame))
        first_frame += n
    return out


def _segments(starts: npt.ArrayLike, size: int, frame: int) -> bytes:
    """``(offset, length)`` uint64 pairs of the frames starting at ``starts`` of ``size`` bytes."""
    begin = np.asarray(starts, dtype="<u8")
    segments = np.empty((len(begin), 2), dtype="<u8")
    segments[:, 0] = begin
    segments[:, 1] = np.minimum(size - begin, frame)
    return segments.tobytes()


def encode_frames(raw: Blob, frame: int, compressor: NumcodecsCodec) -> bytes:
    """Encode ``raw`` as seekable zstd: frames of ``frame`` decoded bytes and a seek table."""
    cctx = _frame_compressor(compressor)
    view = memoryview(raw)
    frames = [cctx.compress(view[i : i + frame]) for i in range(0, len(raw), frame)]
    return _seekable(frames, len(raw), frame)


def _seekable(frames: Sequence[Any], size: int, frame: int) -> bytes:
    """Join the zstd frames of ``size`` decoded bytes (``frame`` each) and their seek table."""
    sizes = np.empty((len(frames), 2), dtype="<u4")
    sizes[:, 0] = [len(f) for f in frames]
    sizes[:, 1] = frame
    sizes[-1, 1] = size - frame * (len(frames) - 1)
    table = sizes.tobytes() + _SEEK_FOOTER.pack(len(frames), 0, _SEEKABLE_MAGIC)
    return b"".join([*frames, _SKIP_HEADER.pack(_SKIPPABLE_MAGIC, len(table)), table])


_DCTX = threading.local()


def _dctx() -> zstandard.ZstdDecompressor:
    ctx: zstandard.ZstdDecompressor | None = getattr(_DCTX, "ctx", None)
    if ctx is None:
        ctx = _DCTX.ctx = zstandard.ZstdDecompressor()
    return ctx


def zstd_size(data: Blob, where: str) -> int | None:
    """Return the decoded bytes of stored zstd frames, or None when they do not say.

    Seekable payloads give the total of their seek table; others the content size of their
    first frame (the only one, unless another writer cut frames without a table).
    """
    table = frame_table(data, where)
    if table is not None:
        return table.decoded[-1]
    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise CorruptPayloadError(f"{where}: cannot decompress (not zstd frames: {exc})") from exc
    return size if size >= 0 else None


def zstd_bounded(data: Blob, where: str) -> bytes | memoryview:
    """Decode every zstd frame of ``data``, refusing more than :func:`decode_cap` bytes.

    Streams with a cap: neither a frame's declared content size nor frames without one can
    make it allocate more than the cap (numcodecs allocates what the header declares).
    """
    cap = decode_cap(len(data))
    size = zstd_size(data, where)
    check_declared(size, len(data), where)
    if size is not None:
        slot = np.empty(size, dtype=np.uint8)
        if zstd_into(data, slot, where):
            return slot.data
    parts: list[bytes] = []
    got = 0
    try:
        with _dctx().stream_reader(data, read_across_frames=True) as reader:
            while chunk := reader.read(1 << 20):
                got += len(chunk)
                if got > cap:
                    check_declared(got, len(data), where)
                parts.append(chunk)
    except zstandard.ZstdError as exc:
        raise CorruptPayloadError(f"{where}: cannot decompress ({exc!r})") from exc
    return b"".join(parts)


def zstd_into(data: Blob, slot: npt.NDArray[np.uint8], where: str) -> bool:
    """Decode every zstd frame of ``data`` into ``slot``; whether they filled it exactly.

    Streams straight into ``slot`` (a one-shot decode of several frames would allocate and
    grow its own output, which costs more for small frames) and counts what arrives.
    """
    view = slot.data  # a contiguous uint8 slice
    got = 0
    try:
        with _dctx().stream_reader(data, read_across_frames=True) as reader:
            while got < len(view):
                n = reader.readinto(view[got:])
                if not n:
                    break
                got += n
            more = got == len(view) and bool(reader.read(1))
    except zstandard.ZstdError as exc:
        raise CorruptPayloadError(f"{where}: cannot decompress ({exc!r})") from exc
    return got == len(view) and not more
