"""Result arrays whose memory is reused once the caller has let go of them.

A read returns new arrays (a million-node skeleton read: 20 MB).  Memory that size is
faulted in page by page the first times it is written: glibc gives large blocks back to the
system when they are freed, and only after a few such rounds raises its threshold and keeps
them, so the first reads of a process spend much of their time faulting pages in.  Result arrays
taken from a :class:`RecyclingPool` are views of blocks the pool keeps: a block whose every
view is gone (its reference count is back to the pool's own) is handed out again, already
faulted in.  Nothing is reused while any view of it lives, so results never share memory.

The pool keeps at most :attr:`RecyclingPool.limit` bytes of blocks nothing else refers to
(64 MiB by default), and tracks at most :data:`_MAX_BLOCKS` blocks.  Arrays of Python objects,
and every array on free-threaded Python builds (where a reference count read by one thread is
not exact), are plain new arrays.

Examples
--------
>>> pool = RecyclingPool(limit=64 << 20)
>>> a = pool.empty((1 << 18, 3), np.float32)
>>> a.shape, a.dtype.name
((262144, 3), 'float32')
>>> address = a.__array_interface__["data"][0]
>>> pool.empty((1 << 18, 3), np.float32).__array_interface__["data"][0] == address  # a lives
False
>>> del a
>>> pool.empty((1 << 18, 3), np.float32).__array_interface__["data"][0] == address  # reused
True
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["RESULTS", "RecyclingPool", "take_result"]

_MIN_POOLED = 1 << 20
"""Smaller arrays are left to the allocator (its free lists recycle them already)."""

_MAX_BLOCKS = 32
"""Blocks tracked at most: beyond, the oldest is forgotten (its views keep it alive)."""


def _refs(blocks: list[npt.NDArray[np.uint8]], i: int) -> int:
    return sys.getrefcount(blocks[i])


_OWN_REFS = _refs([np.empty(1, dtype=np.uint8)], 0)
""":func:`_refs` of a block only the pool's list refers to."""

_COUNTS_EXACT = bool(getattr(sys, "_is_gil_enabled", lambda: True)())
"""Reference counts read by one thread are exact only with the GIL: free-threaded Python
builds get plain new arrays (no pooling)."""


class RecyclingPool:
    """Blocks handed out as result arrays, reused once no view of them is left (thread-safe).

    Parameters
    ----------
    limit : int
        Bytes of unreferenced blocks kept; larger arrays are never pooled.
    """

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self._blocks: list[npt.NDArray[np.uint8]] = []  # oldest first
        self._lock = threading.Lock()

    def empty(self, shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        """Return an uninitialised C-contiguous array, as :func:`numpy.empty` does.

        The array is a view of a pooled block (its ``base``); the block is reused only once
        this array and every view of it are gone.
        """
        dt = np.dtype(dtype)
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
        # object references must start out valid (None), never recycled bytes
        if nbytes < _MIN_POOLED or nbytes > self.limit or dt.hasobject or not _COUNTS_EXACT:
            return np.empty(dims, dtype=dt)
        block = self._take(nbytes)
        return block[:nbytes].view(dt).reshape(dims)

    @property
    def idle_bytes(self) -> int:
        """Bytes of blocks no result refers to."""
        with self._lock:
            return sum(self._blocks[i].nbytes for i in self._idle())

    def clear(self) -> None:
        """Forget every block (results still alive keep theirs)."""
        with self._lock:
            self._blocks.clear()

    def _idle(self) -> list[int]:
        """Return the indices of the blocks only the pool refers to (no view of them lives).

        Counted by index, holding no other reference to a block meanwhile.
        """
        return [i for i in range(len(self._blocks)) if _refs(self._blocks, i) <= _OWN_REFS]

    def _take(self, nbytes: int) -> npt.NDArray[np.uint8]:
        with self._lock:
            idle = self._idle()
            sizes = [self._blocks[i].nbytes for i in idle]
            # the smallest idle block that fits without wasting more than half of it
            fits = [(size, i) for size, i in zip(sizes, idle, strict=True) if size <= 2 * nbytes]
            fits = [(size, i) for size, i in fits if size >= nbytes]
            if fits:
                return self._blocks[min(fits)[1]]
            drop = set()
            total = sum(sizes)
            for size, i in zip(sizes, idle, strict=True):  # the oldest idle blocks go first
                if total <= self.limit:
                    break
                total -= size
                drop.add(i)
            kept = [i for i in range(len(self._blocks)) if i not in drop]
            # beyond _MAX_BLOCKS, forget the oldest, in use or not (its views keep it alive)
            self._blocks = [self._blocks[i] for i in kept[max(0, len(kept) + 1 - _MAX_BLOCKS) :]]
            block = np.empty(nbytes, dtype=np.uint8)
            self._blocks.append(block)
            return block


RESULTS = RecyclingPool(limit=64 << 20)
"""The pool whole-object reads take their result arrays from."""


def take_result(values: npt.NDArray[Any], index: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """``np.take(values, index, axis=0)`` into an array from :data:`RESULTS`.

    ``index`` must be valid rows of ``values`` (checked by the caller): the gather runs in
    numpy's "clip" mode, which writes straight into the result ("raise" would gather into a
    temporary first).
    """
    out = RESULTS.empty((len(index), *values.shape[1:]), values.dtype)
    return np.take(values, index, axis=0, out=out, mode="clip")
