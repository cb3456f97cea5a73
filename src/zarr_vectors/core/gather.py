"""Sorted rows to per-chunk payloads: the gathers of the write pipeline (FORMAT.md §6).

A level's vertex rows are stored chunk by chunk in the plan's row order.  The payload of a
chunk is its sorted rows as raw little-endian bytes; they are gathered a few whole chunks at a
time (no sorted copy of a whole array).  The level writer queues the vertex rows as soon as the
row order is known, so they are gathered, encoded and written while the rest of the level is
planned.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import RowOrder

__all__ = [
    "ELEMENT_HEADER",
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

ELEMENT_HEADER = struct.Struct("<II")
"""Header of a chunk's stored element (a vlen-bytes array of one item): the item count (1)
and the payload's length in bytes, little-endian uint32s, then the payload."""


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

    def fill(self, start: int, stop: int, out: npt.NDArray[Any], /) -> None:
        """Write rows ``start:stop`` into ``out``, a (stop - start, K) array."""


Rows = npt.NDArray[Any] | RowSource
"""Rows of a payload array: an array, or a source computing slices on demand."""


class PayloadBatch(NamedTuple):
    """The payloads of chunks ``first..last-1`` (indices into the chunk list)."""

    first: int
    last: int
    payloads: list[Payload]
    headed: bool = False
    """Each payload is already a whole element: :data:`ELEMENT_HEADER`, then the rows."""


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
    :class:`RowSource`, asked for one chunk's rows at a time).  Without ``encode``, each
    chunk's payload is its whole element (``headed`` batches): :data:`ELEMENT_HEADER`, then
    the rows as raw little-endian bytes, gathered or computed straight into place, so the
    encoder need not copy them again.  ``encode`` instead turns one chunk's rows into its
    payload.  Each batch holds about ``batch_bytes`` (default :data:`GATHER_BYTES`) bytes of
    rows, at least one chunk.  A writer that encodes and stores a batch before asking for
    the next holds one batch of rows instead of a sorted copy of the whole array.

    Examples
    --------
    >>> rows = np.arange(6, dtype="<i2").reshape(3, 2)
    >>> batches = payload_batches(rows, np.array([2, 0, 1]), np.array([0, 1, 3]))
    >>> [np.frombuffer(p, dtype="<i2").tolist() for b in batches for p in b.payloads]
    [[1, 0, 4, 0, 4, 5], [1, 0, 8, 0, 0, 1, 2, 3]]
    """
    data = np.ascontiguousarray(rows) if isinstance(rows, np.ndarray) else rows
    if order is not None and not isinstance(data, np.ndarray):
        raise TypeError("a row order gathers rows from an array, not a row source")
    edges = bounds.tolist()
    size = GATHER_BYTES if batch_bytes is None else batch_bytes
    row_bytes = data.dtype.itemsize * int(np.prod(data.shape[1:]))
    limit = max(1, size // max(row_bytes, 1))  # rows per batch
    first = 0
    while first < len(edges) - 1:
        last = first + 1  # the batch holds chunks first..last-1
        while last < len(edges) - 1 and edges[last] - edges[first] < limit:
            last += 1
        cut = edges[first : last + 1]
        if encode is None:
            yield PayloadBatch(first, last, _elements(data, order, cut), True)
        else:
            base = cut[0]
            if order is None:
                block = data[base : cut[-1]]
            else:
                assert isinstance(data, np.ndarray)  # checked above
                block = take_rows(data, order[base : cut[-1]])
            parts = (block[a - base : b - base] for a, b in pairwise(cut))
            yield PayloadBatch(first, last, [encode(part) for part in parts])
        first = last


def _elements(rows: Rows, order: RowOrder | None, edges: list[int]) -> list[Payload]:
    """Elements (header, then the sorted rows ``edges[i]:edges[i + 1]``) in one new buffer.

    Rows are gathered (``order``), copied (an array) or computed (a :class:`RowSource`)
    straight into place.
    """
    width = int(np.prod(rows.shape[1:]))
    row_bytes = rows.dtype.itemsize * width
    head = ELEMENT_HEADER.size
    buffer = np.empty(row_bytes * (edges[-1] - edges[0]) + head * (len(edges) - 1), np.uint8)
    index = None if order is None else order[edges[0] : edges[-1]]
    items = _records(rows) if index is not None and isinstance(rows, np.ndarray) else None
    out: list[Payload] = []
    at = 0
    for a, b in pairwise(edges):
        size = row_bytes * (b - a)
        buffer[at : at + head] = np.frombuffer(ELEMENT_HEADER.pack(1, size), dtype=np.uint8)
        place = buffer[at + head : at + head + size]
        if items is not None and index is not None:
            picked = index[a - edges[0] : b - edges[0]]
            # mode "clip": with "raise", numpy gathers into a temporary and copies it to `out`
            np.take(items, picked, out=place.view(items.dtype), mode="clip")
        elif isinstance(rows, np.ndarray):
            place.view(rows.dtype).reshape(b - a, width)[...] = rows[a:b].reshape(b - a, width)
        else:
            rows.fill(a, b, place.view(rows.dtype).reshape(b - a, width))
        out.append(buffer[at : at + head + size].data)
        at += head + size
    return out
