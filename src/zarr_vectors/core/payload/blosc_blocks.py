"""The Blosc 1 buffer format, and decoding only some blocks of a Blosc buffer.

A Blosc buffer is a 16-byte header, a table of block start offsets (``bstarts``, one
little-endian int32 per block) and the independently compressed blocks; each block holds
``blocksize`` decoded bytes (the last one the remainder).  So, like the seekable zstd payloads
of :mod:`zarr_vectors.core.payload.zstd_frames`, a reader that wants some rows can decode just
the blocks holding them.  Blosc's own partial-decode entry point (``blosc_getitem``) is not
exposed by numcodecs 0.16, so a run of consecutive blocks is cut out into a small, valid Blosc
buffer of its own (same header flags, re-based block offsets) and handed to the public decoder
``numcodecs.blosc.decompress``.  Encoding in fixed blocks is
:mod:`zarr_vectors.core.payload.lz4_blocks`.

Header (all little-endian): ``version u8, versionlz u8, flags u8, typesize u8, nbytes u32,
blocksize u32, cbytes u32``.  Flag bits: 0 byte shuffle, 1 stored uncompressed ("memcpyed",
no block table), 2 bit shuffle, 4 "do not split" (blocks are not split in per-byte streams).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
from numcodecs import blosc

from zarr_vectors.core.ragged import concat_ranges
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "BLOSC_HEADER",
    "BLOSC_HEADER_BYTES",
    "FLAG_DONT_SPLIT",
    "FLAG_LZ4_FORMAT",
    "FLAG_MEMCPYED",
    "FLAG_SHUFFLE",
    "FORMAT_VERSION",
    "LZ4_FORMAT_VERSION",
    "MAX_BUFFER",
    "BloscTable",
    "blosc_table",
    "decode_blocks",
    "decode_ranges",
    "decompress",
    "parse_header",
    "read_spans",
    "standalone_header",
    "table_length",
]

BLOSC_HEADER_BYTES = 16
BLOSC_HEADER = struct.Struct("<BBBBIII")
FLAG_SHUFFLE = 0x01
FLAG_MEMCPYED = 0x02
FLAG_DONT_SPLIT = 0x10
FLAG_LZ4_FORMAT = 1 << 5  # compressor format code 1 (LZ4 and LZ4HC) in flag bits 5-7
FORMAT_VERSION = 2  # the Blosc 1 buffer format version written by c-blosc >= 1.0
LZ4_FORMAT_VERSION = 1
MAX_BUFFER = 2**31 - 1 - 16  # BLOSC_MAX_BUFFERSIZE of c-blosc 1


def standalone_header(like: bytes | memoryview, nbytes: int, blocksize: int, cbytes: int) -> bytes:
    """Return the header of a Blosc buffer built from blocks of a buffer with header ``like``.

    Version bytes, flags and typesize are kept; the buffer decodes to ``nbytes`` bytes in
    blocks of ``blocksize`` and is ``cbytes`` long.  A buffer shorter than one block is a
    stored short last block alone: it stays one unsplit stream, as it was written.
    """
    version, versionlz, flags, typesize, _, _, _ = BLOSC_HEADER.unpack(like)
    if nbytes < blocksize:
        blocksize = nbytes
        flags |= FLAG_DONT_SPLIT
    return BLOSC_HEADER.pack(version, versionlz, flags, typesize, nbytes, blocksize, cbytes)


@dataclass(frozen=True)
class BloscTable:
    """Header and block table of one Blosc buffer."""

    header: bytes
    """The 16 header bytes."""
    nbytes: int
    """Decoded length in bytes."""
    blocksize: int
    """Decoded bytes per block (the last block holds the remainder)."""
    cbytes: int
    """Stored length in bytes."""
    offsets: tuple[int, ...]
    """(n_blocks + 1) offsets of the blocks in the stored bytes (last: ``cbytes``); for an
    uncompressed ("memcpyed") buffer, one pseudo-block per ``blocksize`` decoded bytes."""
    memcpyed: bool
    """Whether the bytes follow the header uncompressed."""

    @cached_property
    def offsets_array(self) -> npt.NDArray[np.int64]:
        """:attr:`offsets` as an int64 array."""
        return np.asarray(self.offsets, dtype=np.int64)

    @property
    def n_blocks(self) -> int:
        """Number of blocks."""
        return len(self.offsets) - 1

    def table_bytes(self) -> int:
        """Bytes from the start of the buffer to the end of the block table."""
        return BLOSC_HEADER_BYTES + (0 if self.memcpyed else 4 * self.n_blocks)


def parse_header(head: bytes | memoryview, where: str) -> tuple[int, int, int, int, int]:
    """Return ``(flags, typesize, nbytes, blocksize, cbytes)`` of a Blosc 1 header (checked)."""
    if len(head) < BLOSC_HEADER_BYTES:
        raise CorruptPayloadError(f"{where}: truncated Blosc header")
    version, _, flags, typesize, nbytes, blocksize, cbytes = BLOSC_HEADER.unpack_from(head)
    if version != FORMAT_VERSION or typesize == 0 or cbytes < BLOSC_HEADER_BYTES:
        raise CorruptPayloadError(f"{where}: malformed Blosc header")
    if nbytes and blocksize == 0:
        raise CorruptPayloadError(f"{where}: Blosc header with zero block size")
    return flags, typesize, nbytes, blocksize, cbytes


def table_length(head: bytes | memoryview, where: str) -> int:
    """Bytes to read from the start of a Blosc buffer to hold its header and block table."""
    flags, _, nbytes, blocksize, _ = parse_header(head, where)
    if flags & FLAG_MEMCPYED or nbytes == 0:
        return BLOSC_HEADER_BYTES
    return BLOSC_HEADER_BYTES + 4 * -(-nbytes // blocksize)


def blosc_table(data: bytes | memoryview, where: str, size: int | None = None) -> BloscTable:
    """Parse the header and block table at the start of ``data`` (a stored Blosc buffer).

    ``data`` must hold at least :func:`table_length` bytes; ``size`` is the stored length
    when ``data`` is only its beginning.
    """
    flags, _, nbytes, blocksize, cbytes = parse_header(data, where)
    stored = len(data) if size is None else size
    if cbytes != stored:
        raise CorruptPayloadError(f"{where}: Blosc header says {cbytes} bytes, {stored} stored")
    header = bytes(data[:BLOSC_HEADER_BYTES])
    n = -(-nbytes // blocksize) if nbytes else 0
    if flags & FLAG_MEMCPYED:
        if cbytes != BLOSC_HEADER_BYTES + nbytes:
            raise CorruptPayloadError(f"{where}: uncompressed Blosc buffer of wrong length")
        starts = [BLOSC_HEADER_BYTES + min(i * blocksize, nbytes) for i in range(n + 1)]
        return BloscTable(header, nbytes, blocksize, cbytes, tuple(starts), True)
    end = BLOSC_HEADER_BYTES + 4 * n
    if len(data) < end:
        raise CorruptPayloadError(f"{where}: truncated Blosc block table")
    bstarts = np.frombuffer(data, dtype="<i4", count=n, offset=BLOSC_HEADER_BYTES)
    if n and (bstarts[0] < end or bstarts[-1] > cbytes or bool((bstarts[1:] < bstarts[:-1]).any())):
        raise CorruptPayloadError(f"{where}: Blosc block table out of order")
    return BloscTable(header, nbytes, blocksize, cbytes, (*bstarts.tolist(), cbytes), False)


_MERGE_GAP = 0
"""Runs of needed blocks at most this many blocks apart are decoded as one run.  Every run of
a buffer is decoded by the same call (:func:`_decode_runs`), so a gap saves no Python round
trip: blocks between runs are not decoded."""


_FEW_RANGES = 32
"""Up to this many ranges :func:`_runs` loops in Python; more (a box read wants every
streamline piece of a chunk, hundreds of ranges) go through numpy."""


def _runs(
    starts: npt.NDArray[np.int64], stops: npt.NDArray[np.int64], skip: int, blocksize: int
) -> list[tuple[int, int]]:
    """Return the runs ``(first, last)`` of blocks covering the decoded ranges ``[starts, stops) + skip``.

    The ranges must be sorted by start.  Blocks of ranges at most :data:`_MERGE_GAP` blocks
    apart join one run.
    """
    if len(starts) <= _FEW_RANGES:  # Python ints: numpy's fixed costs dominate few ranges
        return _runs_of(starts.tolist(), stops.tolist(), skip, blocksize)
    keep = stops > starts
    first = (starts[keep] + skip) // blocksize
    last = np.maximum.accumulate((stops[keep] + skip - 1) // blocksize)
    if not len(first):
        return []
    # a run ends where the next range's first block lies beyond the gap: with starts sorted,
    # the running maximum of last blocks is the last block of the current run
    opens = np.flatnonzero(np.r_[True, first[1:] > last[:-1] + 1 + _MERGE_GAP])
    closes = np.r_[opens[1:] - 1, len(first) - 1]
    return list(zip(first[opens].tolist(), last[closes].tolist(), strict=True))


def _runs_of(
    starts: Sequence[int], stops: Sequence[int], skip: int, blocksize: int
) -> list[tuple[int, int]]:
    """:func:`_runs` of a few ranges, in plain Python."""
    runs: list[tuple[int, int]] = []
    for a, b in zip(starts, stops, strict=True):
        if b <= a:
            continue
        f, g = (a + skip) // blocksize, (b + skip - 1) // blocksize
        if runs and f <= runs[-1][1] + 1 + _MERGE_GAP:
            if g > runs[-1][1]:
                runs[-1] = (runs[-1][0], g)
        else:
            runs.append((f, g))
    return runs


def _runs_buffer(table: BloscTable, runs: list[tuple[int, int]], body: bytes) -> tuple[bytes, int]:
    """Build one standalone Blosc buffer holding the blocks of ``runs`` (stored bytes ``body``).

    Blosc locates each block through the ``bstarts`` table, and every block but the last
    holds ``blocksize`` decoded bytes: blocks taken from anywhere in the stored buffer, in
    ascending order, form a valid buffer of their own (the original last, short block can
    only come last).  Returns the buffer and its decoded length.
    """
    bs, total = table.blocksize, table.nbytes
    first = np.fromiter((a for a, _ in runs), np.int64, len(runs))
    last = np.fromiter((b for _, b in runs), np.int64, len(runs))
    blocks = concat_ranges(first, last - first + 1)
    k = len(blocks)
    nbytes = k * bs - (bs * table.n_blocks - total if int(blocks[-1]) == table.n_blocks - 1 else 0)
    head = BLOSC_HEADER_BYTES + 4 * k
    offsets = np.asarray(table.offsets, dtype=np.int64)
    sizes = offsets[blocks + 1] - offsets[blocks]
    bstarts = np.empty(k, dtype="<i4")
    bstarts[0] = head
    np.cumsum(sizes[:-1], out=bstarts[1:])
    bstarts[1:] += head
    header = standalone_header(table.header, nbytes, bs, head + len(body))
    return b"".join((header, bstarts.tobytes(), body)), nbytes


def decode_blocks(
    table: BloscTable,
    out: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
    skip: int,
    where: str,
    read: Callable[[int, int], bytes | memoryview],
    done: set[int] | None = None,
) -> None:
    """Decode the blocks holding the decoded byte ranges ``[starts, stops)`` into ``out``.

    The ranges must be sorted by start (they may overlap).

    ``out`` is the decoded buffer without its first ``skip`` bytes (range coordinates);
    ``read(offset, n)`` returns ``n`` stored bytes from ``offset``.  Other bytes of ``out``
    are left as they are.  Blocks in ``done`` are already in ``out`` and are skipped;
    decoded blocks are added to it.
    """
    runs = _checked_runs(table, starts, stops, skip, where)
    if done is not None:
        runs = _not_done(runs, done)
    if not runs:
        return
    raw = _decode_runs(table, runs, read, where)
    _scatter_runs(table, runs, raw, out, skip, where)
    if done is not None:  # only once decoded: a failed decode leaves them to be decoded again
        for a, b in runs:
            done.update(range(a, b + 1))


def decode_ranges(
    table: BloscTable,
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
    skip: int,
    where: str,
    read: Callable[[int, int], bytes | memoryview],
    read_into: Callable[[int, npt.NDArray[np.uint8]], int] | None = None,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Decode only the blocks holding the decoded byte ranges ``[starts, stops)``.

    Like :func:`decode_blocks`, without placing the blocks in a buffer of the whole decoded
    length: returns the needed blocks decoded and concatenated in ascending order, and where
    each range starts in them (range ``i`` is ``raw[pos[i] : pos[i] + stops[i] - starts[i]]``:
    the blocks of one range are consecutive, so it is contiguous there too).  The ranges must
    be sorted by start.

    The stored bytes are fetched in spans of blocks at most :data:`_READ_GAP` bytes apart (one
    ``read`` each, gaps included) and decoded by one call of the Blosc decoder, whose block
    table points at the needed blocks inside the spans: a box read wants thousands of short
    runs of blocks, and a ``read`` or a decoder call per run costs more than the decoding.
    """
    starts = np.asarray(starts, dtype=np.int64)
    stops = np.asarray(stops, dtype=np.int64)
    at = starts + skip
    needed = _needed_blocks(at, stops + skip, table.blocksize)
    if needed is None:
        return np.zeros(0, dtype=np.uint8), np.zeros(len(starts), dtype=np.int64)
    blocks, rank = needed
    if int(blocks[-1]) >= table.n_blocks:
        raise CorruptPayloadError(f"{where}: rows beyond the Blosc buffer")
    offsets = table.offsets_array
    lo, hi = offsets[blocks], offsets[blocks + 1]
    opens, span_lo, span_len = read_spans(lo, hi)
    if read_into is not None and not table.memcpyed:
        # the spans land straight after room for the header and block table: no join copy
        head = BLOSC_HEADER_BYTES + 4 * len(blocks)
        into = np.empty(head + int(span_len.sum()), dtype=np.uint8)
        for a, n in zip(span_lo.tolist(), span_len.tolist(), strict=True):
            if read_into(a, into[head : head + n]) != n:
                raise CorruptPayloadError(f"{where}: Blosc buffer truncated")
            head += n
        raw = _decode_spans(table, blocks, lo, opens, span_lo, span_len, (), where, into)
    else:
        parts: list[bytes | memoryview] = []
        for a, n in zip(span_lo.tolist(), span_len.tolist(), strict=True):
            part = read(a, n)
            if len(part) != n:
                raise CorruptPayloadError(f"{where}: Blosc buffer truncated")
            parts.append(part)
        raw = _decode_spans(table, blocks, lo, opens, span_lo, span_len, parts, where)
    block = at // table.blocksize
    if rank is None:
        rank = np.searchsorted(blocks, block)
    return raw, rank * table.blocksize + (at - block * table.blocksize)


_READ_GAP = 8192
"""Needed blocks of a Blosc buffer at most this many stored bytes apart are fetched with one
read (the bytes between them included): copying a few KiB more costs less than one more
read call."""


def read_spans(
    lo: npt.NDArray[np.int64],
    hi: npt.NDArray[np.int64],
    breaks: npt.NDArray[np.bool_] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Group needed blocks, stored at ``[lo, hi)`` (ascending), into spans read at once.

    A span ends where the gap to the next block exceeds :data:`_READ_GAP` stored bytes, or
    where ``breaks`` (one per block after the first) is True.  Returns the index of each
    span's first block, and each span's stored start and length in bytes.
    """
    k = len(lo)
    wide = np.empty(k, dtype=bool)
    wide[0] = True
    np.greater(lo[1:] - hi[:-1], _READ_GAP, out=wide[1:])
    if breaks is not None:
        wide[1:] |= breaks
    opens = np.flatnonzero(wide)
    closes = np.empty_like(opens)
    closes[:-1] = opens[1:] - 1
    closes[-1] = k - 1
    span_lo = lo[opens]
    return opens, span_lo, hi[closes] - span_lo


def _needed_blocks(
    at: npt.NDArray[np.int64], end: npt.NDArray[np.int64], blocksize: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None] | None:
    """Ascending distinct blocks holding the decoded byte ranges ``[at, end)``, or None.

    Also returns, when it comes for free (no empty range, none longer than two blocks, no
    overlap), the index in those blocks of each range's first block (else None).
    """
    keep = end > at
    whole = bool(keep.all())
    if not whole:
        at, end = at[keep], end[keep]
    if not len(at):
        return None
    first = at // blocksize
    last = (end - 1) // blocksize
    short = int((last - first).max()) <= 1  # the common case: two blocks at most
    if short:
        both = np.empty(2 * len(first), dtype=np.int64)
        both[0::2], both[1::2] = first, last
    else:
        both = concat_ranges(first, last - first + 1)
    step = both[1:] - both[:-1]
    if int(step.min(initial=0)) < 0:  # overlapping ranges: not ascending, sort it out
        return np.unique(both), None
    keep = np.empty(len(both), dtype=bool)  # ascending already: drop repeats without sorting
    keep[0] = True
    np.greater(step, 0, out=keep[1:])
    rank = np.cumsum(keep)[0::2] - 1 if short and whole else None
    return both[keep], rank


def _decode_spans(
    table: BloscTable,
    blocks: npt.NDArray[np.int64],
    lo: npt.NDArray[np.int64],
    opens: npt.NDArray[np.int64],
    span_lo: npt.NDArray[np.int64],
    span_len: npt.NDArray[np.int64],
    parts: Sequence[bytes | memoryview],
    where: str,
    into: npt.NDArray[np.uint8] | None = None,
) -> npt.NDArray[np.uint8]:
    """Decode ``blocks`` (ascending), whose stored bytes start at ``lo`` inside ``parts``.

    ``parts[j]`` holds the stored bytes from ``span_lo[j]`` (``span_len[j]`` of them); the
    blocks of span ``j`` start at index ``opens[j]``.  The Blosc buffer built is the header,
    a block table pointing into the spans, and the spans: the bytes between blocks are never
    read by the decoder.  With ``into`` (not for memcpyed buffers) the spans are already in
    it after room for the header and block table, which are written there.
    """
    bs, total = table.blocksize, table.nbytes
    k = len(blocks)
    last_short = int(blocks[-1]) == table.n_blocks - 1 and total % bs
    nbytes = k * bs - (bs - total % bs if last_short else 0)
    if table.memcpyed:  # pseudo-blocks: the stored bytes are the decoded ones
        body = np.frombuffer(b"".join(parts), dtype=np.uint8)
        base = np.repeat(np.cumsum(span_len) - span_len - span_lo, np.diff(opens, append=k))
        sizes = np.diff(table.offsets_array)[blocks]
        return body[concat_ranges(lo + base, sizes)]
    head = BLOSC_HEADER_BYTES + 4 * k
    span_at = head + np.cumsum(span_len) - span_len  # where each span lands in the buffer
    shift = np.zeros(k, dtype=np.int64)  # span_at - span_lo of each block's span
    move = span_at - span_lo
    shift[opens[0]] = move[0]
    shift[opens[1:]] = move[1:] - move[:-1]
    bstarts = (lo + np.cumsum(shift)).astype("<i4")
    header = standalone_header(table.header, nbytes, bs, head + int(span_len.sum()))
    if into is None:
        src: bytes | npt.NDArray[np.uint8] = b"".join((header, bstarts.tobytes(), *parts))
    else:
        into[:BLOSC_HEADER_BYTES] = np.frombuffer(header, dtype=np.uint8)
        into[BLOSC_HEADER_BYTES:head] = bstarts.view(np.uint8)
        src = into
    return decompress(src, nbytes, where)


def decompress(
    src: bytes | npt.NDArray[np.uint8],
    nbytes: int,
    where: str,
    dest: npt.NDArray[np.uint8] | None = None,
) -> npt.NDArray[np.uint8]:
    """Decode the Blosc buffer ``src`` that must hold ``nbytes`` bytes, as uint8.

    ``dest`` (optional, ``nbytes`` long) receives the bytes and is returned.
    """
    try:
        if dest is not None:
            head = bytes(src[:BLOSC_HEADER_BYTES])
            if len(dest) != nbytes or BLOSC_HEADER.unpack(head)[4] != nbytes:
                raise CorruptPayloadError(f"{where}: Blosc blocks do not decode to {nbytes} bytes")
            blosc.decompress(src, dest)
            return dest
        raw = blosc.decompress(src)
    except RuntimeError as exc:
        raise CorruptPayloadError(f"{where}: cannot decode Blosc blocks ({exc})") from exc
    if len(raw) != nbytes:
        raise CorruptPayloadError(f"{where}: Blosc blocks decode to {len(raw)} bytes")
    return np.frombuffer(raw, dtype=np.uint8)


def _checked_runs(
    table: BloscTable,
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
    skip: int,
    where: str,
) -> list[tuple[int, int]]:
    """:func:`_runs` of the ranges, raising when they reach beyond the buffer."""
    runs = _runs(np.asarray(starts, np.int64), np.asarray(stops, np.int64), skip, table.blocksize)
    if runs and runs[-1][1] >= table.n_blocks:
        raise CorruptPayloadError(f"{where}: rows beyond the Blosc buffer")
    return runs


def _decode_runs(
    table: BloscTable,
    runs: list[tuple[int, int]],
    read: Callable[[int, int], bytes | memoryview],
    where: str,
) -> npt.NDArray[np.uint8]:
    """Decode the blocks of ``runs`` (ascending) with one call of the Blosc decoder.

    A call per run would cost more in Python than the decoding itself (a box read wants a
    thousand runs of a few blocks); :func:`_runs_buffer` makes one buffer of them all.
    """
    bodies = _run_bodies(table, runs, read, where)
    if table.memcpyed:
        return np.frombuffer(b"".join(bodies), dtype=np.uint8)
    buffer, nbytes = _runs_buffer(table, runs, b"".join(bodies))
    return decompress(buffer, nbytes, where)


def _run_bodies(
    table: BloscTable,
    runs: list[tuple[int, int]],
    read: Callable[[int, int], bytes | memoryview],
    where: str,
) -> list[bytes | memoryview]:
    """Return the stored bytes of each run (fetched together when they lie close)."""
    offsets = table.offsets
    span = _one_read(table, runs, read, where)
    bodies: list[bytes | memoryview] = []
    for a, b in runs:
        lo, hi = offsets[a], offsets[b + 1]
        if span is not None:
            body: bytes | memoryview = memoryview(span[1])[lo - span[0] : hi - span[0]]
        else:
            body = read(lo, hi - lo)
        if len(body) != hi - lo:
            raise CorruptPayloadError(f"{where}: Blosc buffer truncated")
        bodies.append(body)
    return bodies


def _scatter_runs(
    table: BloscTable,
    runs: list[tuple[int, int]],
    raw: npt.NDArray[np.uint8],
    out: npt.NDArray[np.uint8],
    skip: int,
    where: str,
) -> None:
    """Copy the decoded blocks of ``runs`` (``raw``, runs concatenated) to their place in ``out``."""
    bs, nbytes = table.blocksize, table.nbytes
    pos = 0
    for a, b in runs:
        begin, end = a * bs, min((b + 1) * bs, nbytes)
        head = max(skip - begin, 0)  # the first block starts with the element header
        out[begin + head - skip : end - skip] = raw[pos + head : pos + end - begin]
        pos += end - begin
    if pos != len(raw):
        raise CorruptPayloadError(f"{where}: Blosc blocks decode to {len(raw)} bytes")


_SPAN_SLACK = 65536
"""Several runs are fetched with one read when the bytes between them are at most this
many more than the runs themselves (one larger read beats several small ones, above all on
a cold disk or object storage)."""


def _one_read(
    table: BloscTable,
    runs: list[tuple[int, int]],
    read: Callable[[int, int], bytes | memoryview],
    where: str,
) -> tuple[int, bytes] | None:
    """Fetch the stored bytes of all ``runs`` at once, if they lie close together."""
    if len(runs) < 2:
        return None
    offsets = table.offsets
    lo, hi = offsets[runs[0][0]], offsets[runs[-1][1] + 1]  # (two runs: never the whole buffer)
    needed = sum(offsets[b + 1] - offsets[a] for a, b in runs)
    if hi - lo > needed + _SPAN_SLACK:
        return None
    data = bytes(read(lo, hi - lo))
    if len(data) != hi - lo:
        raise CorruptPayloadError(f"{where}: Blosc buffer truncated")
    return lo, data


def _not_done(runs: list[tuple[int, int]], done: set[int]) -> list[tuple[int, int]]:
    """Split ``runs`` around the blocks in ``done``."""
    out: list[tuple[int, int]] = []
    for a, b in runs:
        first = None
        for k in range(a, b + 1):
            if k in done:
                if first is not None:
                    out.append((first, k - 1))
                    first = None
            elif first is None:
                first = k
        if first is not None:
            out.append((first, b))
    return out
