"""Temporary byte buffers recycled between reads.

A full read of a million-vertex store fetches and decodes ~30 MB of payloads that live only
until they are gathered into the result.  Fresh memory of that size is faulted in page by
page every time (glibc hands large blocks back to the system when they are freed), which on
small VMs costs as much as decoding it.  Readers borrow such buffers here instead: a
:class:`Lease` hands out arrays from buffers kept from earlier leases and takes them all back
when its ``with`` block ends.  Nothing borrowed may outlive that block.

The pool keeps at most :attr:`ScratchPool.limit` bytes of idle buffers (64 MiB by default;
0 keeps none).

Examples
--------
>>> with SCRATCH.lease() as lease:
...     buf = lease.empty(1000)
...     buf[:] = 7
...     int(buf.sum())
7000
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SCRATCH", "Lease", "ScratchPool", "empty_bytes"]

ByteArray = npt.NDArray[np.uint8]

_MIN_POOLED = 1 << 20
"""Smaller requests are left to the allocator (its free lists recycle them already)."""


class Lease:
    """Buffers borrowed from a :class:`ScratchPool` for the length of one ``with`` block."""

    def __init__(self, pool: ScratchPool) -> None:
        self._pool = pool
        self._held: list[ByteArray] = []

    def empty(self, nbytes: int) -> ByteArray:
        """Return an uninitialised ``uint8`` array of ``nbytes``, valid until the lease ends."""
        buffer = self._pool._take(nbytes)
        if buffer is None:
            return np.empty(nbytes, dtype=np.uint8)
        self._held.append(buffer)
        return buffer[:nbytes]

    def array(self, count: int, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        """Return an uninitialised 1-D array of ``count`` values, valid until the lease ends."""
        dt = np.dtype(dtype)
        return self.empty(count * dt.itemsize).view(dt)

    def _release(self) -> None:
        held, self._held = self._held, []
        self._pool._give(held)


class ScratchPool:
    """Idle byte buffers kept for reuse, at most ``limit`` bytes of them (thread-safe).

    Parameters
    ----------
    limit : int
        Bytes of idle buffers kept between leases; larger buffers are never kept.
    """

    def __init__(self, limit: int) -> None:
        self.limit = int(limit)
        self._idle: list[ByteArray] = []  # most recently returned last
        self._lock = threading.Lock()

    @contextmanager
    def lease(self) -> Iterator[Lease]:
        """Borrow buffers for the ``with`` block; they return to the pool when it ends."""
        lease = Lease(self)
        try:
            yield lease
        finally:
            lease._release()

    @property
    def idle_bytes(self) -> int:
        """Bytes held by idle buffers."""
        with self._lock:
            return sum(b.nbytes for b in self._idle)

    def clear(self) -> None:
        """Drop every idle buffer."""
        with self._lock:
            self._idle.clear()

    def _take(self, nbytes: int) -> ByteArray | None:
        """Return an idle or new buffer of at least ``nbytes``; None when not to be pooled."""
        if nbytes < _MIN_POOLED or nbytes > self.limit:
            return None
        with self._lock:
            # the smallest idle buffer that fits without wasting more than half of it
            fits = [i for i, b in enumerate(self._idle) if nbytes <= b.nbytes <= 2 * nbytes]
            if fits:
                return self._idle.pop(min(fits, key=lambda i: self._idle[i].nbytes))
        return np.empty(nbytes, dtype=np.uint8)

    def _give(self, buffers: list[ByteArray]) -> None:
        with self._lock:
            self._idle.extend(buffers)
            total = sum(b.nbytes for b in self._idle)
            while total > self.limit:  # the least recently returned go first
                total -= self._idle.pop(0).nbytes


SCRATCH = ScratchPool(limit=64 << 20)
"""The pool readers borrow from."""


def empty_bytes(nbytes: int, lease: Lease | None) -> ByteArray:
    """Return ``lease.empty(nbytes)``, or a new uninitialised array when there is no lease."""
    return np.empty(nbytes, dtype=np.uint8) if lease is None else lease.empty(nbytes)
