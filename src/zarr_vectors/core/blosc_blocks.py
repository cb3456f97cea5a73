"""Decode only some blocks of a Blosc (version 1 format) buffer.

A Blosc buffer is a 16-byte header, a table of block start offsets (``bstarts``, one
little-endian int32 per block) and the independently compressed blocks; each block holds
``blocksize`` decoded bytes (the last one the remainder).  So, like the seekable zstd payloads
of :mod:`zarr_vectors.core.payload.zstd_frames`, a reader that wants some rows can decode just the blocks
holding them.  Blosc's own partial-decode entry point (``blosc_getitem``) is not exposed by
numcodecs 0.16, so a run of consecutive blocks is cut out into a small, valid Blosc buffer of
its own (same header flags, re-based block offsets) and handed to ``numcodecs.blosc``.

In its default split mode c-blosc enlarges a requested block size for LZ4 with byte shuffle
(it splits each block in per-byte streams and wants >= 64 KiB blocks), so
:func:`encode_lz4_blocks` writes byte-shuffled blocks of exactly the requested size, each one
LZ4 block, flagged "do not split": with c-blosc itself switched to "never split" for the call
(through ctypes, numcodecs does not expose the setting), else block by block in Python.  Any
Blosc 1 decoder (zarr-python, numcodecs, c-blosc) reads them.

Header (all little-endian): ``version u8, versionlz u8, flags u8, typesize u8, nbytes u32,
blocksize u32, cbytes u32``.  Flag bits: 0 byte shuffle, 1 stored uncompressed ("memcpyed",
no block table), 2 bit shuffle, 4 "do not split" (blocks are not split in per-byte streams).
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from lz4 import block as lz4_block
from numcodecs import blosc

from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "BLOSC_HEADER_BYTES",
    "BloscTable",
    "blosc_table",
    "decode_blocks",
    "default_split",
    "encode_lz4_blocks",
    "table_length",
]

BLOSC_HEADER_BYTES = 16
_HEADER = struct.Struct("<BBBBIII")
_SHUFFLE = 0x01
_MEMCPYED = 0x02
_DONT_SPLIT = 0x10
_LZ4_FORMAT = 1 << 5  # compressor format code 1 (LZ4 and LZ4HC) in flag bits 5-7
_VERSION = 2  # the Blosc 1 buffer format version written by c-blosc >= 1.0
_LZ4_VERSION = 1
_MAX_BUFFER = 2**31 - 1 - 16  # BLOSC_MAX_BUFFERSIZE of c-blosc 1


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

    @property
    def n_blocks(self) -> int:
        """Number of blocks."""
        return len(self.offsets) - 1

    def table_bytes(self) -> int:
        """Bytes from the start of the buffer to the end of the block table."""
        return BLOSC_HEADER_BYTES + (0 if self.memcpyed else 4 * self.n_blocks)


def _parse_header(head: bytes | memoryview, where: str) -> tuple[int, int, int, int, int]:
    if len(head) < BLOSC_HEADER_BYTES:
        raise CorruptPayloadError(f"{where}: truncated Blosc header")
    version, _, flags, typesize, nbytes, blocksize, cbytes = _HEADER.unpack_from(head)
    if version != _VERSION or typesize == 0 or cbytes < BLOSC_HEADER_BYTES:
        raise CorruptPayloadError(f"{where}: malformed Blosc header")
    if nbytes and blocksize == 0:
        raise CorruptPayloadError(f"{where}: Blosc header with zero block size")
    return flags, typesize, nbytes, blocksize, cbytes


def table_length(head: bytes | memoryview, where: str) -> int:
    """Bytes to read from the start of a Blosc buffer to hold its header and block table."""
    flags, _, nbytes, blocksize, _ = _parse_header(head, where)
    if flags & _MEMCPYED or nbytes == 0:
        return BLOSC_HEADER_BYTES
    return BLOSC_HEADER_BYTES + 4 * -(-nbytes // blocksize)


def blosc_table(data: bytes | memoryview, where: str, size: int | None = None) -> BloscTable:
    """Parse the header and block table at the start of ``data`` (a stored Blosc buffer).

    ``data`` must hold at least :func:`table_length` bytes; ``size`` is the stored length
    when ``data`` is only its beginning.
    """
    flags, _, nbytes, blocksize, cbytes = _parse_header(data, where)
    stored = len(data) if size is None else size
    if cbytes != stored:
        raise CorruptPayloadError(f"{where}: Blosc header says {cbytes} bytes, {stored} stored")
    header = bytes(data[:BLOSC_HEADER_BYTES])
    n = -(-nbytes // blocksize) if nbytes else 0
    if flags & _MEMCPYED:
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


_MERGE_GAP = 4
"""Runs of needed blocks at most this many blocks apart are decoded as one run: decoding a
few unneeded 4 KiB blocks (cheap with LZ4) costs less than one more Python round trip."""


def _runs(
    starts: Sequence[int], stops: Sequence[int], skip: int, blocksize: int
) -> list[tuple[int, int]]:
    """Return the runs ``(first, last)`` of blocks covering the decoded ranges ``[starts, stops) + skip``.

    The ranges must be sorted by start.  Plain Python: a chunk has a few dozen ranges, too
    few for numpy to pay off.
    """
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


def _run_buffer(table: BloscTable, first: int, last: int, body: bytes) -> bytes:
    """Build a standalone Blosc buffer holding blocks ``first..last`` (their stored bytes ``body``)."""
    if first == 0 and last == table.n_blocks - 1:
        return body  # every block: the stored buffer itself
    bs = table.blocksize
    nbytes = min((last + 1) * bs, table.nbytes) - first * bs
    k = last - first + 1
    version, versionlz, flags, typesize, _, _, _ = _HEADER.unpack(table.header)
    blocksize = bs
    if nbytes < bs:  # only the short last block: keep it one unsplit stream, as stored
        blocksize = nbytes
        flags |= _DONT_SPLIT
    head = BLOSC_HEADER_BYTES + 4 * k
    shift = head - table.offsets[first]
    starts = struct.pack(f"<{k}i", *[x + shift for x in table.offsets[first : last + 1]])
    header = _HEADER.pack(version, versionlz, flags, typesize, nbytes, blocksize, head + len(body))
    return header + starts + body


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
    # Python ints: numpy scalar arithmetic is slower
    runs = _runs(starts.tolist(), stops.tolist(), skip, table.blocksize)
    if runs and runs[-1][1] >= table.n_blocks:
        raise CorruptPayloadError(f"{where}: rows beyond the Blosc buffer")
    if done is not None:
        runs = _not_done(runs, done)
    bs = table.blocksize
    offsets = table.offsets
    span = _one_read(table, runs, read, where)
    for a, b in runs:
        whole = not table.memcpyed and a == 0 and b == table.n_blocks - 1
        lo, hi = (0, table.cbytes) if whole else (offsets[a], offsets[b + 1])
        if span is not None and lo >= span[0] and hi <= span[0] + len(span[1]):
            body = span[1][lo - span[0] : hi - span[0]]
        else:
            body = bytes(read(lo, hi - lo))
        if len(body) != hi - lo:
            raise CorruptPayloadError(f"{where}: Blosc buffer truncated")
        if table.memcpyed:
            raw: bytes = body
        else:
            try:
                raw = blosc.decompress(_run_buffer(table, a, b, body))
            except RuntimeError as exc:
                raise CorruptPayloadError(f"{where}: cannot decode Blosc blocks ({exc})") from exc
        begin = a * bs
        end = begin + len(raw)
        if end != min((b + 1) * bs, table.nbytes):
            raise CorruptPayloadError(f"{where}: Blosc blocks decode to {len(raw)} bytes")
        head = max(skip - begin, 0)  # the first block starts with the element header
        out[begin + head - skip : end - skip] = np.frombuffer(raw, dtype=np.uint8, offset=head)
        if done is not None:  # only once decoded: a failed run stays to be decoded again
            done.update(range(a, b + 1))


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


def _shuffle(data: npt.NDArray[np.uint8], typesize: int) -> npt.NDArray[np.uint8]:
    """Blosc byte shuffle of one block: byte j of every value together; the tail unchanged."""
    whole = len(data) // typesize * typesize
    if typesize == 1 or whole == 0:
        return data
    planes = data[:whole].reshape(-1, typesize).T.reshape(-1)
    return np.concatenate([planes, data[whole:]]) if whole < len(data) else planes


def _shuffled_blocks(
    data: npt.NDArray[np.uint8], typesize: int, blocksize: int
) -> list[memoryview]:
    """Return the byte-shuffled blocks of ``data``; whole blocks are shuffled in one numpy pass."""
    nbytes = len(data)
    full = nbytes // blocksize
    out: list[memoryview] = []
    if full and typesize > 1 and blocksize % typesize == 0:
        planes = data[: full * blocksize].reshape(full, blocksize // typesize, typesize)
        whole = np.ascontiguousarray(planes.transpose(0, 2, 1)).reshape(-1).data
        out = [whole[i * blocksize : (i + 1) * blocksize] for i in range(full)]
    else:
        full = 0
    for start in range(full * blocksize, nbytes, blocksize):
        out.append(memoryview(_shuffle(data[start : start + blocksize], typesize).tobytes()))
    return out


_NEVER_SPLIT = 2
_FORWARD_COMPAT_SPLIT = 4  # c-blosc 1's default split mode
_CLEVEL = 5  # as the "lz4" preset


class _SplitGate:
    """c-blosc's process-wide split mode, held by callers of one mode at a time.

    Unsplit block encodes (any number at once) set "never split"; ordinary c-blosc encodes
    (any number at once) need the default.  A caller of one mode waits while the other mode
    is held, so an ordinary encode never runs under "never split" and its bytes do not depend
    on what other threads do (the same data always gives the same stored bytes).
    """

    def __init__(self, set_split: Callable[[int], None] | None) -> None:
        self._set = set_split
        self._cond = threading.Condition()
        self._unsplit = False
        self._users = 0

    @contextmanager
    def held(self, unsplit: bool) -> Iterator[None]:
        """Hold split mode "never" (``unsplit``) or c-blosc's default for the block."""
        with self._cond:
            while self._users and self._unsplit != unsplit:
                self._cond.wait()
            if self._users == 0 and unsplit and self._set is not None:
                self._set(_NEVER_SPLIT)
            self._unsplit = unsplit
            self._users += 1
        try:
            yield
        finally:
            with self._cond:
                self._users -= 1
                if self._users == 0:
                    if self._unsplit and self._set is not None:
                        self._set(_FORWARD_COMPAT_SPLIT)  # c-blosc has no getter
                    self._unsplit = False
                    self._cond.notify_all()


class _CBlosc:
    """c-blosc's own compressor, from the library numcodecs carries (through ctypes).

    numcodecs does not expose c-blosc's split mode, whose default splits each LZ4 + shuffle
    block in per-byte streams and enlarges blocks to >= 64 KiB.  Set to "never split" only
    while our calls run (the first caller in sets it, the last one out restores the default),
    c-blosc writes the unsplit blocks of exactly the requested size that
    :func:`encode_lz4_blocks` promises, faster than the Python block loop.  Ordinary
    Blosc encodes of this library hold the default mode meanwhile
    (:func:`default_split`), so they never come out unsplit by accident.
    """

    def __init__(self) -> None:
        try:
            lib = ctypes.CDLL(blosc.__file__)
            self._compress = lib.blosc_compress_ctx
            self._set_split = lib.blosc_set_splitmode
        except (OSError, AttributeError):  # a numcodecs build without these symbols
            self.available = False
            self.gate = _SplitGate(None)
            return
        self.available = True
        self._compress.argtypes = [
            ctypes.c_int,  # clevel
            ctypes.c_int,  # doshuffle
            ctypes.c_size_t,  # typesize
            ctypes.c_size_t,  # nbytes
            ctypes.c_void_p,  # src
            ctypes.c_void_p,  # dest
            ctypes.c_size_t,  # destsize
            ctypes.c_char_p,  # compressor name
            ctypes.c_size_t,  # blocksize
            ctypes.c_int,  # internal threads
        ]
        self._compress.restype = ctypes.c_int
        self._set_split.argtypes = [ctypes.c_int]
        self._set_split.restype = None
        self.gate = _SplitGate(self._set_split)

    def encode(
        self, data: npt.NDArray[np.uint8], typesize: int, blocksize: int
    ) -> memoryview | None:
        """Unsplit LZ4 + shuffle Blosc buffer of ``data``; None if c-blosc did otherwise.

        The buffer is a view of the array c-blosc wrote (no copy into a ``bytes``).
        """
        out = np.empty(len(data) + BLOSC_HEADER_BYTES, dtype=np.uint8)
        with self.gate.held(unsplit=True):  # the GIL is released during the call
            n = self._compress(
                _CLEVEL, 1, typesize, len(data), data.ctypes.data, out.ctypes.data, len(out),
                b"lz4", blocksize, 1,
            )  # fmt: skip
        if n < BLOSC_HEADER_BYTES:
            return None
        flags, _, _, got_block, _ = _parse_header(out[:BLOSC_HEADER_BYTES].tobytes(), "c-blosc")
        if not flags & (_DONT_SPLIT | _MEMCPYED) or got_block > blocksize:
            return None  # split after all (BLOSC_SPLITMODE set in the environment)
        return out[:n].data.toreadonly()


_C_BLOSC = _CBlosc()


def default_split() -> AbstractContextManager[None]:
    """Hold c-blosc's default split mode around an ordinary Blosc encode (see :class:`_CBlosc`)."""
    return _C_BLOSC.gate.held(unsplit=False)


def encode_lz4_blocks(raw: bytes | memoryview, typesize: int, blocksize: int) -> bytes | memoryview:
    """Encode ``raw`` as a Blosc 1 buffer: LZ4, byte shuffle, ``blocksize``-byte blocks.

    Parameters
    ----------
    raw : bytes-like
        Bytes to encode (at most 2 GiB).
    typesize : int
        Bytes per value for the shuffle (1-255).
    blocksize : int
        Decoded bytes per block (>= 1); readers can decode any block alone.

    Returns
    -------
    bytes-like
        The buffer; blocks that LZ4 cannot shrink are stored as they are, and a buffer that
        would not shrink at all is stored uncompressed (Blosc's "memcpyed" flag).  c-blosc
        (used when it can be) rounds ``blocksize`` down to whole values of ``typesize``.
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    nbytes = len(data)
    if nbytes > _MAX_BUFFER:
        raise ValueError(f"Blosc buffers hold at most {_MAX_BUFFER} bytes, got {nbytes}")
    if not 1 <= typesize <= 255 or blocksize < 1:
        raise ValueError(f"bad Blosc typesize {typesize} or block size {blocksize}")
    if _C_BLOSC.available and nbytes >= _MIN_C_BLOSC:
        fast = _C_BLOSC.encode(data, typesize, blocksize)
        if fast is not None:
            return fast
    return _encode_lz4_blocks(data, typesize, blocksize)


_MIN_C_BLOSC = 128
"""Smaller buffers are left to :func:`_encode_lz4_blocks` (c-blosc stores them as they are)."""


def _encode_lz4_blocks(data: npt.NDArray[np.uint8], typesize: int, blocksize: int) -> bytes:
    """:func:`encode_lz4_blocks` block by block in Python (python-lz4)."""
    nbytes = len(data)
    flags = _SHUFFLE | _DONT_SPLIT | _LZ4_FORMAT
    blocksize = min(blocksize, max(nbytes, 1))  # decoders refuse blocks longer than the data
    n = -(-nbytes // blocksize)
    parts: list[bytes | memoryview] = []
    offsets = np.empty(n, dtype="<i4")
    at = BLOSC_HEADER_BYTES + 4 * n
    for i, shuffled in enumerate(_shuffled_blocks(data, typesize, blocksize)):
        packed: bytes | memoryview = lz4_block.compress(shuffled, store_size=False)
        if len(packed) >= len(shuffled):  # incompressible block: stored as is
            packed = shuffled
        offsets[i] = at
        parts.append(struct.pack("<i", len(packed)))
        parts.append(packed)
        at += 4 + len(packed)
    if at >= BLOSC_HEADER_BYTES + nbytes:  # no gain: one uncompressed buffer
        cbytes = BLOSC_HEADER_BYTES + nbytes
        header = _HEADER.pack(
            _VERSION, _LZ4_VERSION, flags | _MEMCPYED, typesize, nbytes, blocksize, cbytes
        )
        return header + data.tobytes()
    header = _HEADER.pack(_VERSION, _LZ4_VERSION, flags, typesize, nbytes, blocksize, at)
    return b"".join([header, offsets.tobytes(), *parts])
