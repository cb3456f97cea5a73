"""Encoding Blosc 1 buffers of LZ4 blocks of exactly the requested size.

In its default split mode c-blosc enlarges a requested block size for LZ4 with byte shuffle
(it splits each block in per-byte streams and wants >= 64 KiB blocks), so
:func:`encode_lz4_blocks` writes byte-shuffled blocks of exactly the requested size, each one
LZ4 block, flagged "do not split": with c-blosc itself switched to "never split" for the call,
else block by block in Python (python-lz4).  numcodecs exposes neither c-blosc's split mode
nor a block-size-exact encoder, so this module (and only this one) calls c-blosc through
``ctypes``, in the library numcodecs ships: faster than the Python loop, and the bytes are
those of c-blosc's own LZ4 at the preset's level (python-lz4's differ).  Any Blosc 1 decoder
(zarr-python, numcodecs, c-blosc) reads either encoder's buffers;
tests/core/test_blosc_blocks.py checks both against ``numcodecs`` on random buffers.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import numpy as np
import numpy.typing as npt
from lz4 import block as lz4_block
from numcodecs import blosc

from zarr_vectors.core.payload.blosc_blocks import (
    BLOSC_HEADER,
    BLOSC_HEADER_BYTES,
    FLAG_DONT_SPLIT,
    FLAG_LZ4_FORMAT,
    FLAG_MEMCPYED,
    FLAG_SHUFFLE,
    FORMAT_VERSION,
    LZ4_FORMAT_VERSION,
    MAX_BUFFER,
    parse_header,
)

__all__ = ["default_split", "encode_lz4_blocks"]


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
        flags, _, _, got_block, _ = parse_header(out[:BLOSC_HEADER_BYTES].tobytes(), "c-blosc")
        if not flags & (FLAG_DONT_SPLIT | FLAG_MEMCPYED) or got_block > blocksize:
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
    if nbytes > MAX_BUFFER:
        raise ValueError(f"Blosc buffers hold at most {MAX_BUFFER} bytes, got {nbytes}")
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
    flags = FLAG_SHUFFLE | FLAG_DONT_SPLIT | FLAG_LZ4_FORMAT
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
        header = BLOSC_HEADER.pack(
            FORMAT_VERSION,
            LZ4_FORMAT_VERSION,
            flags | FLAG_MEMCPYED,
            typesize,
            nbytes,
            blocksize,
            cbytes,
        )
        return header + data.tobytes()
    header = BLOSC_HEADER.pack(
        FORMAT_VERSION, LZ4_FORMAT_VERSION, flags, typesize, nbytes, blocksize, at
    )
    return b"".join([header, offsets.tobytes(), *parts])
