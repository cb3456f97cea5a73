"""Sorted rows to per-chunk payloads: the gathers of the write pipeline (FORMAT.md §6).

A level's vertex rows are stored chunk by chunk in the plan's row order.  The payload of a
chunk is its sorted rows as raw little-endian bytes; they are gathered a few whole chunks at a
time (no sorted copy of a whole array), and :class:`EarlyGather` starts the gathers of the
vertices and vertex attributes as soon as the row order is known, on threads of their own,
while the rest of the level is planned and the store is created.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.spec import layout as L

__all__ = ["GATHER_ROWS", "EarlyGather", "chunk_payloads", "take_rows"]

GATHER_ROWS = 1 << 18
"""Rows gathered at once by :func:`chunk_payloads` (whole chunks; bounds the temporaries)."""

GATHER_THREADS = 2
"""Threads of an :class:`EarlyGather`."""


def take_rows(values: npt.NDArray[Any], order: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """Return ``values[order]`` for (N, K) rows, gathering whole rows as opaque records.

    numpy's fancy indexing of a 2-D array is several times slower than of a 1-D one, so
    contiguous rows are viewed as single void items for the gather (``np.take``, which is
    faster than indexing).

    Examples
    --------
    >>> take_rows(np.array([[1, 2], [3, 4], [5, 6]]), np.array([2, 0])).tolist()
    [[5, 6], [1, 2]]
    """
    arr = np.ascontiguousarray(values)
    if arr.ndim < 2 or arr.shape[1] == 1 or len(arr) == 0:
        return np.take(arr, order, axis=0)
    rows = _records(arr.reshape(len(arr), -1))
    return np.take(rows, order).view(arr.dtype).reshape((len(order), *arr.shape[1:]))


def _records(rows: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """C-contiguous (n, K) rows as n opaque items (the values themselves when K == 1)."""
    if rows.shape[1] == 1:
        return rows.reshape(-1)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)


def chunk_payloads(
    rows: npt.NDArray[Any],
    order: npt.NDArray[np.int64] | None,
    bounds: npt.NDArray[np.int64],
    encode: Callable[[npt.NDArray[Any]], bytes] | None = None,
) -> list[bytes]:
    """Return the payload of each chunk: sorted (n, K) rows ``bounds[i]:bounds[i + 1]``.

    The sorted rows are ``rows[order]``, or ``rows`` when ``order`` is None; they are
    gathered a few whole chunks (about :data:`GATHER_ROWS` rows) at a time.  ``encode`` turns
    one chunk's rows into its payload (default: the raw little-endian bytes).

    Examples
    --------
    >>> rows = np.arange(6, dtype="<i2").reshape(3, 2)
    >>> out = chunk_payloads(rows, np.array([2, 0, 1]), np.array([0, 1, 3]))
    >>> [np.frombuffer(p, dtype="<i2").tolist() for p in out]
    [[4, 5], [0, 1, 2, 3]]
    """
    data = np.ascontiguousarray(rows)
    edges = bounds.tolist()
    out: list[bytes] = []
    first = 0
    while first < len(edges) - 1:
        last = first + 1  # the batch holds chunks first..last-1
        while last < len(edges) - 1 and edges[last] - edges[first] < GATHER_ROWS:
            last += 1
        base = edges[first]
        block = data[base : edges[last]]
        if order is not None:
            block = take_rows(data, order[base : edges[last]])
        for a, b in pairwise(edges[first : last + 1]):
            part = block[a - base : b - base]
            out.append(part.tobytes() if encode is None else encode(part))
        first = last
    return out


class EarlyGather:
    """Gathers the payloads of a level's vertices and vertex attributes ahead of the writer.

    Pass :meth:`start` as ``on_order`` to :func:`~zarr_vectors.core.plan.plan_level`; the
    level writer then takes the payloads with :meth:`take`.  Always :meth:`close` it.
    """

    def __init__(self, parts: GeometryParts, *, vertices: bool = True) -> None:
        self.parts = parts
        self.vertices = vertices
        """Gather the vertices too (False when a Draco encoder makes their payloads)."""
        self._pool = ThreadPoolExecutor(max_workers=GATHER_THREADS)
        self._jobs: dict[str, Future[list[bytes]]] = {}

    def start(
        self, order: npt.NDArray[np.int64], _: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]
    ) -> None:
        """Queue the gathers of a level's row order (an ``OrderHook``)."""
        if self.vertices:
            self._gather(L.VERTICES, self.parts.positions, order, offsets)
        for name, col in self.parts.vertex_attributes.items():
            self._gather(L.attribute_path(L.ATTRIBUTES, name), col.rows, order, offsets)

    def _gather(
        self,
        path: str,
        values: npt.NDArray[Any],
        order: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64],
    ) -> None:
        rows = values.reshape(len(values), -1) if values.ndim != 2 else values
        self._jobs[path] = self._pool.submit(chunk_payloads, rows, order, offsets)

    def take(self, path: str) -> Future[list[bytes]] | None:
        """Hand over the gather of the array ``path`` (None if there is none).

        It is dropped here, so its payloads are freed once written.
        """
        return self._jobs.pop(path, None)

    def close(self) -> None:
        """Drop the gathers not taken (one already running finishes first)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._jobs.clear()
