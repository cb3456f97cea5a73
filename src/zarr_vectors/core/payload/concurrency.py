"""How payload encodes and decodes use threads (process-wide c-blosc setting, decode plans)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
from numcodecs import blosc

from zarr_vectors.core.shared import SharedSetting

__all__ = [
    "byte_groups",
    "CPUS",
    "decode_plan",
    "decode_threads",
    "DecodePlan",
    "PARALLEL_BYTES",
    "parallel_map",
    "serial_blosc",
]

PARALLEL_BYTES = 4 << 20  # below this, a thread pool costs more than it saves

CPUS = os.cpu_count() or 1
"""Cores seen at import: ``os.cpu_count`` reads a sysfs file on every call, which small reads
would pay each time they size a decode plan."""


def _serial_blosc() -> bool:
    saved = bool(blosc.use_threads)
    blosc.use_threads = False
    return saved


def _restore_blosc(saved: bool) -> None:
    blosc.use_threads = saved


_SERIAL = SharedSetting(_serial_blosc, _restore_blosc)


def serial_blosc() -> AbstractContextManager[None]:
    """Make numcodecs decode Blosc in the calling thread only, for the duration of the block.

    Called from the main thread, numcodecs otherwise runs c-blosc's own thread pool on its
    global context (under a process-wide lock), beside the reader's threads: on two cores
    that oversubscription makes full-read times erratic.  The setting is
    process-wide: the first caller in saves and sets it, the last one out restores it.
    """
    return _SERIAL.held()


@dataclass(frozen=True)
class DecodePlan:
    """How this thread's reads spread big decodes (see :func:`decode_threads`)."""

    parts: int = 4
    pool: Executor | None = None


_DECODE: ContextVar[DecodePlan | None] = ContextVar("zv_decode", default=None)


@contextmanager
def decode_threads(parts: int, pool: Executor | None = None) -> Iterator[None]:
    """Decode big payload reads (in this thread) in at most ``parts`` parallel parts.

    Without ``pool`` the parts run on a pool of their own, at most one per core.  With
    ``pool`` they are queued on it, beside the caller's own tasks there: a caller that runs
    other work on a two-worker pool and decodes in eight parts keeps both cores busy to the
    end, where a pool of its own on top would oversubscribe them.  ``parts=1`` decodes in the
    calling thread.
    """
    token = _DECODE.set(DecodePlan(max(1, int(parts)), pool))
    try:
        yield
    finally:
        _DECODE.reset(token)


def decode_plan() -> DecodePlan:
    """Return the plan :func:`decode_threads` set for this thread (else the default plan)."""
    return _DECODE.get() or DecodePlan()


def byte_groups(sizes: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """Split elements into at most ``parts`` contiguous ``(lo, hi)`` groups of similar bytes.

    One group below :data:`PARALLEL_BYTES` or four elements.
    """
    total = sum(sizes)
    n = min(parts, len(sizes))
    if total < PARALLEL_BYTES or len(sizes) < 4 or n < 2:
        return [(0, len(sizes))]
    ends = np.searchsorted(np.cumsum(sizes), [total * (k + 1) / n for k in range(n - 1)]) + 1
    cuts = sorted({0, *(min(int(e), len(sizes)) for e in ends), len(sizes)})
    return [(a, b) for a, b in pairwise(cuts) if b > a]


def parallel_map(func: Any, items: Sequence[Any], nbytes: int) -> list[Any]:
    """``[func(i) for i in items]``, on a few threads when ``nbytes`` make it worth it."""
    if nbytes < PARALLEL_BYTES or len(items) < 4:
        return [func(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(4, CPUS)) as pool:
        return list(pool.map(func, items))
