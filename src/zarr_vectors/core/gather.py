"""Sorted rows to per-chunk payloads: the gathers of the write pipeline (FORMAT.md §6).

A level's vertex rows are stored chunk by chunk in the plan's row order.  The payload of a
chunk is its sorted rows as raw little-endian bytes; they are gathered a few whole chunks at a
time (no sorted copy of a whole array).  The level writer queues the vertex rows as soon as the
row order is known, so they are gathered, encoded and written while the rest of the level is
planned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import RowOrder

__all__ = [
    "GATHER_BYTES",
    "Payload",
    "PayloadBatch",
    "payload_batches",
    "take_rows",
]

GATHER_BYTES = 8 << 20
"""Default bytes of rows gathered and encoded at once by :func:`payload_batches` (whole
chunks); writers pick theirs per array (``PayloadArray.write_batch_bytes``)."""

Payload = bytes | memoryview
"""One chunk's payload: its raw bytes (a view of sorted rows) or an encoded element."""


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


class RowSource(Protocol):
    """(n, K) rows computed a slice at a time (e.g. :class:`~zarr_vectors.core.plan.FragmentTable`)."""

    @property
    def shape(self) -> tuple[int, int]: ...

    @property
    def dtype(self) -> np.dtype[Any]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, key: slice, /) -> npt.NDArray[Any]: ...


Rows = npt.NDArray[Any] | RowSource
"""Rows of a payload array: an array, or a source computing slices on demand."""


class PayloadBatch(NamedTuple):
    """The payloads of chunks ``first..last-1`` (indices into the chunk list)."""

    first: int
    last: int
    payloads: list[Payload]


def payload_batches(
    rows: Rows,
    order: RowOrder | None,
    bounds: npt.NDArray[np.int64],
    batch_bytes: int | None = None,
    encode: Callable[[npt.NDArray[Any]], bytes] | None = None,
) -> Iterator[PayloadBatch]:
    """Yield the payloads of the chunks in batches of whole chunks.

    Chunk ``i`` holds the sorted (n, K) rows ``bounds[i]:bounds[i + 1]``; the sorted rows are
    ``rows[order]``, or ``rows`` when ``order`` is None (``rows`` may then be a
    :class:`RowSource`, asked for one batch of rows at a time).  ``encode``
    turns one chunk's rows into its payload (default: the raw little-endian bytes, as a byte
    view of the gathered block or, without ``order``, of ``rows`` itself: no copy).  Each
    batch gathers about ``batch_bytes`` (default :data:`GATHER_BYTES`) bytes of rows, at least
    one chunk.  A writer that encodes and stores a batch before asking for the next holds one
    block of gathered rows instead of a sorted copy of the whole array, and the next batch
    reuses its memory.

    Examples
    --------
    >>> rows = np.arange(6, dtype="<i2").reshape(3, 2)
    >>> batches = payload_batches(rows, np.array([2, 0, 1]), np.array([0, 1, 3]))
    >>> [np.frombuffer(p, dtype="<i2").tolist() for b in batches for p in b.payloads]
    [[4, 5], [0, 1, 2, 3]]
    """
    data = np.ascontiguousarray(rows) if isinstance(rows, np.ndarray) else rows
    edges = bounds.tolist()
    size = GATHER_BYTES if batch_bytes is None else batch_bytes
    row_bytes = data.dtype.itemsize * int(np.prod(data.shape[1:]))
    limit = max(1, size // max(row_bytes, 1))  # rows per batch
    first = 0
    while first < len(edges) - 1:
        last = first + 1  # the batch holds chunks first..last-1
        while last < len(edges) - 1 and edges[last] - edges[first] < limit:
            last += 1
        base = edges[first]
        if order is None:
            block = data[base : edges[last]]
        elif isinstance(data, np.ndarray):
            block = take_rows(data, order[base : edges[last]])
        else:
            raise TypeError("a row order gathers rows from an array, not a row source")
        out: list[Payload] = []
        for a, b in pairwise(edges[first : last + 1]):
            part = block[a - base : b - base]
            out.append(_byte_view(part) if encode is None else encode(part))
        yield PayloadBatch(first, last, out)
        first = last


def _byte_view(rows: npt.NDArray[Any]) -> memoryview:
    """Return the bytes of C-contiguous rows, without a copy."""
    return rows.reshape(-1).view(np.uint8).data
