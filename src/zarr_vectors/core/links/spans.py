"""Spans of links: the smallest and largest vertex of each block of consecutive links.

The write side of the links (FORMAT.md §6–§7): :func:`~zarr_vectors.core.plan.plan_level`
splits explicit links into chunk-local and cross-chunk links by the chunks of their ends.  A
mesh's faces, listed mesh by mesh, mostly index vertices of one *run* (consecutive vertices of
one object in one chunk): a span whose smallest and largest vertex lie in one run is local to
that run's chunk, link by link, without looking any end up.  The spans cost what a range check
of the links costs anyway (two row-wise reductions), so the mesh input checks compute them and
hand them on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["LINK_SPAN", "LinkSpans"]

IntArray = npt.NDArray[np.int64]

LINK_SPAN = 256
"""Consecutive links summarised by one :class:`LinkSpans` entry."""
_REDUCE_SPANS = 64
"""Spans reduced at once by :meth:`LinkSpans.extremes` (their links stay in cache)."""


@dataclass(frozen=True)
class LinkSpans:
    """Smallest and largest vertex of each ``size`` consecutive links (the last: the rest).

    ``links`` is the (L, k) array summarised: planning trusts the spans only for that very
    array object (``spans.links is parts.links``), so a copy or a replacement of the links
    never meets stale spans.
    """

    links: IntArray
    size: int
    low: IntArray
    high: IntArray

    @staticmethod
    def extremes(
        links: npt.NDArray[Any], size: int = LINK_SPAN
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """Per-span smallest and largest entry of (L, k) ``links``, in their own dtype."""
        if not links.size:
            return np.zeros(0, dtype=links.dtype), np.zeros(0, dtype=links.dtype)
        arr = links.reshape(len(links), -1)
        full = len(arr) // size
        n_spans = full + (full * size < len(arr))
        low = np.empty(n_spans, dtype=arr.dtype)
        high = np.empty(n_spans, dtype=arr.dtype)
        rows = arr[: full * size].reshape(full, size * arr.shape[1])
        # a few spans at a time: the second reduction reads them from cache
        for a in range(0, full, _REDUCE_SPANS):
            b = min(a + _REDUCE_SPANS, full)
            np.minimum.reduce(rows[a:b], axis=1, out=low[a:b])
            np.maximum.reduce(rows[a:b], axis=1, out=high[a:b])
        if full < n_spans:
            low[-1], high[-1] = arr[full * size :].min(), arr[full * size :].max()
        return low, high

    @classmethod
    def of(cls, links: IntArray, size: int = LINK_SPAN) -> LinkSpans:
        """Return the spans of (L, k) integer ``links``."""
        low, high = cls.extremes(links, size)
        return cls(links, size, low.astype(np.int64), high.astype(np.int64))

    def owners(self, run_start: IntArray, run_position: IntArray, n: int) -> IntArray:
        """Chunk position of each span whose vertices all lie in one run, else -1.

        Runs cover vertices ``0..n-1`` in order: run ``r`` starts at vertex ``run_start[r]``
        (ascending, the first 0) in chunk position ``run_position[r]``.
        """
        r_lo = np.searchsorted(run_start, self.low, side="right") - 1
        r_hi = np.searchsorted(run_start, self.high, side="right") - 1
        one = (r_lo == r_hi) & (self.low >= 0) & (self.high < n)
        return np.where(one, run_position[r_lo], -1).astype(np.int64, copy=False)
