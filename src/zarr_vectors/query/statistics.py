"""Per-chunk statistics of vertex attributes: written with every level, read to prune chunks.

For each single-column numeric or bool vertex attribute ``<name>`` a level holds

* ``statistics/<name>``: dense, shape ``(n_grid_chunks, 2)``, the attribute's dtype: row ``f``
  (flat C-order index over ``chunk_grid.shape``) is ``[min, max]`` of the chunk's values,
  NaN values ignored (NaN in both when every value is NaN), zeros for empty chunks;
* ``value_sets/<name>`` (integer and bool attributes with at most :data:`MAX_VALUES` distinct
  values in the level): dense uint64, shape ``(n_grid_chunks,)``, bit ``i`` set when the chunk
  holds ``values[i]`` (array attribute ``values``, ascending).

Both carry the array attribute ``counts_crc32``: CRC-32 of the level's ``vertex_counts`` as
little-endian int64 in C order when the statistics were computed.  A reader uses statistics
only when it matches the current ``vertex_counts`` (a level changed in place by a tool that
does not rewrite statistics is then read without pruning, never wrongly pruned).  Levels
without statistics (stores written before they existed) are read without pruning.
"""

from __future__ import annotations

import weakref
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import zarr

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.gather import ELEMENT_HEADER, PayloadBatch
from zarr_vectors.core.payload.dense import read_dense_whole
from zarr_vectors.core.plan import GeometryParts, LevelPlan
from zarr_vectors.core.ragged import RangeOrder, RowOrder, as_index, unique_sorted
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind

__all__ = [
    "MAX_VALUES",
    "AttributeStatistics",
    "ChunkExtremes",
    "DenseSink",
    "counts_crc32",
    "gathered_statistics",
    "level_statistics",
    "load_statistics",
    "rows_statistics",
    "StatArray",
    "write_payload_statistics",
    "write_statistics",
]

IntArray = npt.NDArray[np.int64]

MAX_VALUES = 64
"""Most distinct values an integer attribute may have for a value set (bits of a uint64)."""


class DenseSink(Protocol):
    """What :func:`write_statistics` writes through (:class:`~zarr_vectors.core.writer.LevelWriter`)."""

    def dense(
        self,
        path: str,
        kind: ArrayKind,
        data: npt.NDArray[Any],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the dense array ``path`` holding ``data``."""

    def drain(self) -> None:
        """Wait for the writes queued so far."""


def counts_crc32(vertex_counts: npt.NDArray[Any]) -> int:
    """CRC-32 of ``vertex_counts`` as little-endian int64, C order."""
    data = np.ascontiguousarray(np.asarray(vertex_counts, dtype="<i8").ravel())
    return zlib.crc32(data.tobytes())


@dataclass(frozen=True)
class StatArray:
    """One statistics array to write."""

    path: str
    kind: ArrayKind
    data: npt.NDArray[Any]
    extra: dict[str, Any]


ChunkReduce = Callable[[np.ufunc, npt.NDArray[Any]], npt.NDArray[Any]]
"""``reduce(ufunc, values)``: ``ufunc`` reduced over each non-empty chunk's values."""


def _statistics_of(
    name: str,
    values: npt.NDArray[Any],
    reduce: ChunkReduce,
    chunks: IntArray,
    n_grid: int,
    crc: int,
) -> list[StatArray]:
    """Statistics arrays of one attribute from its values and their per-chunk ``reduce``."""
    if values.ndim != 1 or values.dtype.kind not in "biuf":
        return []
    out = np.zeros((n_grid, 2), dtype=values.dtype)
    out[chunks, 0] = reduce(np.fmin, values)
    out[chunks, 1] = reduce(np.fmax, values)
    arrays = [StatArray(f"{L.STATISTICS}/{name}", ArrayKind.STATISTICS, out, {"counts_crc32": crc})]
    if values.dtype.kind in "biu":
        distinct = _distinct(values, out[chunks, 0].min(), out[chunks, 1].max())
        if len(distinct) <= MAX_VALUES:
            codes = np.searchsorted(distinct, values).astype(np.uint64)
            bits = np.left_shift(np.uint64(1), codes)
            present = np.zeros(n_grid, dtype=np.uint64)
            present[chunks] = reduce(np.bitwise_or, bits)
            extra = {"counts_crc32": crc, "values": [v.item() for v in distinct]}
            arrays.append(StatArray(f"{L.VALUE_SETS}/{name}", ArrayKind.VALUE_SET, present, extra))
    return arrays


def _in_chunk_order(starts: IntArray) -> ChunkReduce:
    """Per-chunk reduction of values in chunk order, chunk ``i`` starting at ``starts[i]``."""

    def reduce(ufunc: np.ufunc, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return ufunc.reduceat(values, starts)

    return reduce


def _distinct(values: npt.NDArray[Any], low: Any, high: Any) -> npt.NDArray[Any]:
    """Sorted distinct values; a histogram (linear time) when the range is small."""
    if values.dtype.kind == "b":
        return np.flatnonzero(np.bincount(values.view(np.uint8), minlength=2)).astype(bool)
    span = int(high) - int(low)
    if span < 1 << 16:
        if values.dtype.kind == "u":  # values >= low: no wrap in the unsigned type
            offsets = (values - values.dtype.type(low)).astype(np.int64)
        else:  # a narrow signed type would wrap (int8: 100 - -100): widen first
            offsets = values.astype(np.int64) - int(low)
        seen = np.bincount(offsets, minlength=span + 1) > 0
        found: npt.NDArray[Any] = np.flatnonzero(seen).astype(values.dtype)
        found += values.dtype.type(low)
        return found
    return unique_sorted(values)


def level_statistics(parts: GeometryParts, plan: LevelPlan) -> list[StatArray]:
    """Compute the statistics arrays of a level from its parts and plan."""
    return rows_statistics(parts, plan.order, plan.chunk_offsets, plan.chunks, plan.vertex_counts)


def rows_statistics(
    parts: GeometryParts,
    order: RowOrder,
    chunk_offsets: IntArray,
    chunks: IntArray,
    vertex_counts: npt.NDArray[np.int64],
    skip: Collection[str] = (),
) -> list[StatArray]:
    """:func:`level_statistics` from the row order and chunk table alone.

    Known before the rest of the level is planned: a writer computes the statistics beside
    the planning.  ``chunks`` are the non-empty chunks (ascending), chunk ``chunks[i]``
    holding sorted rows ``chunk_offsets[i]:chunk_offsets[i + 1]``; ``vertex_counts`` are the
    level's (grid shape).  Attributes named in ``skip`` are left out (their statistics are
    gathered with their payloads: :class:`ChunkExtremes`).
    """
    names = [name for name in parts.vertex_attributes if name not in skip]
    if not names or len(chunks) == 0:
        return []
    n_grid = int(np.prod(vertex_counts.shape))
    crc = counts_crc32(vertex_counts)
    runs = _RunTiling.of(order, chunk_offsets)
    index = None if runs is not None else as_index(order)
    by_chunk = _in_chunk_order(chunk_offsets[:-1])
    out: list[StatArray] = []
    for name in names:
        col = parts.vertex_attributes[name]
        if col.values.ndim != 1 or col.values.dtype.kind not in "biuf":
            continue
        if runs is not None:  # no gather: each run reduced where it lies in the input
            out.extend(_statistics_of(name, col.values, runs.reduce, chunks, n_grid, crc))
        else:
            vals = col.values[index]
            out.extend(_statistics_of(name, vals, by_chunk, chunks, n_grid, crc))
    return out


def gathered_statistics(parts: GeometryParts) -> dict[str, ChunkExtremes]:
    """Collectors for the attributes whose statistics the payload writes can gather.

    Float attributes have min/max statistics only; each chunk's rows are reduced once
    gathered for their payload (in cache), instead of in a pass of their own.
    """
    return {
        name: ChunkExtremes(col.values.dtype)
        for name, col in parts.vertex_attributes.items()
        if col.values.ndim == 1 and col.values.dtype.kind == "f"
    }


class ChunkExtremes:
    """Per-chunk ``[fmin, fmax]`` of a float attribute, filled as its payloads are gathered.

    Written by one thread (the attribute's writer job) through :meth:`observe`, read by
    :meth:`statistics` once that job is done.  NaN values are ignored (NaN when a chunk holds
    only NaN), as :func:`level_statistics` does.
    """

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = np.dtype(dtype)
        self._parts: list[tuple[int, npt.NDArray[Any]]] = []

    def observe(self, batch: PayloadBatch) -> None:
        """Reduce the rows of the headed payloads of one batch (chunks ``first..last-1``)."""
        if not batch.headed:
            raise ValueError("chunk statistics need headed payloads (raw rows)")
        out = np.empty((len(batch.payloads), 2), dtype=self.dtype)
        for i, payload in enumerate(batch.payloads):
            values = np.frombuffer(payload, dtype=self.dtype, offset=ELEMENT_HEADER.size)
            out[i, 0] = np.fmin.reduce(values)
            out[i, 1] = np.fmax.reduce(values)
        self._parts.append((batch.first, out))

    def statistics(
        self, name: str, chunks: IntArray, vertex_counts: npt.NDArray[np.int64]
    ) -> StatArray:
        """Return the ``statistics/<name>`` array (every chunk of ``chunks`` observed)."""
        per_chunk = np.empty((len(chunks), 2), dtype=self.dtype)
        seen = 0
        for first, part in self._parts:
            per_chunk[first : first + len(part)] = part
            seen += len(part)
        if seen != len(chunks):
            raise RuntimeError(f"statistics of {name!r}: {seen} of {len(chunks)} chunks seen")
        out = np.zeros((int(np.prod(vertex_counts.shape)), 2), dtype=self.dtype)
        out[chunks] = per_chunk
        extra = {"counts_crc32": counts_crc32(vertex_counts)}
        return StatArray(f"{L.STATISTICS}/{name}", ArrayKind.STATISTICS, out, extra)


@dataclass(frozen=True)
class _RunTiling:
    """A level's row order as runs of consecutive input rows, each inside one chunk.

    Paths sorted by chunk move whole runs, so a chunk's values are its runs' values: reducing
    each run where it lies in the input, then the runs of each chunk (in sorted order), gives
    every per-chunk reduction without gathering the values into chunk order.  Min, max and
    bitwise or do not depend on how the values are grouped (except which of -0.0 and 0.0 a
    float extreme records: equal values, as the readers and the validator compare them).
    """

    by_start: IntArray
    """Runs (sorted-order indices) by ascending input start: the input tiled run by run."""
    input_starts: IntArray
    """Input start of each run, ascending (``starts[by_start]``)."""
    chunk_first_run: IntArray
    """Index (sorted order) of each non-empty chunk's first run."""

    @classmethod
    def of(cls, order: RowOrder, chunk_offsets: IntArray) -> _RunTiling | None:
        """Return the runs of a :class:`RangeOrder` level (none crossing a chunk), else None."""
        if not isinstance(order, RangeOrder):
            return None
        keep = np.diff(order.offsets) > 0
        starts, offsets = order.starts[keep], order.offsets[:-1][keep]
        chunk_starts = chunk_offsets[:-1]
        first = np.searchsorted(offsets, chunk_starts)
        if len(offsets) == 0 or first[-1] >= len(offsets):
            return None
        if not np.array_equal(offsets[first], chunk_starts):
            return None  # a run crosses a chunk boundary
        by_start = np.argsort(starts, kind="stable")
        return cls(by_start, starts[by_start], first)

    def reduce(self, ufunc: np.ufunc, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Return ``ufunc`` reduced over each chunk's values (``values`` in input order)."""
        per_run = np.empty(len(self.by_start), dtype=values.dtype)
        per_run[self.by_start] = ufunc.reduceat(values, self.input_starts)
        return ufunc.reduceat(per_run, self.chunk_first_run)


def write_statistics(
    sink: DenseSink,
    parts: GeometryParts,
    plan: LevelPlan,
    computed: Sequence[StatArray] | None = None,
) -> None:
    """Queue the statistics arrays of a level on ``sink`` (the level's writer).

    ``computed``: the level's :func:`rows_statistics`, when computed already.
    """
    for arr in level_statistics(parts, plan) if computed is None else computed:
        sink.dense(arr.path, arr.kind, arr.data, arr.extra)


def write_payload_statistics(
    sink: DenseSink, group: zarr.Group, layout: ChunkLayout, vertex_counts: npt.NDArray[Any]
) -> None:
    """Queue the statistics of a level whose payloads are written (streamed, partitioned).

    Decodes every single-column vertex attribute of the level once; the arrays equal those
    :func:`write_statistics` derives from the same rows in memory.
    """
    counts = np.asarray(vertex_counts, dtype=np.int64).ravel()
    chunks = np.flatnonzero(counts).astype(np.int64)
    if len(chunks) == 0:
        return
    sink.drain()  # rows queued on this writer must be stored before they are read back
    reader = LevelReader.for_payloads(group, layout, counts)
    starts = np.concatenate([[0], np.cumsum(counts[chunks])[:-1]]).astype(np.int64)
    crc = counts_crc32(vertex_counts)
    by_chunk = _in_chunk_order(starts)
    for name in reader.names(L.ATTRIBUTES):
        path = f"{L.ATTRIBUTES}/{name}"
        if reader.payload(path).attrs.get("width", 1) != 1:
            continue
        vals = reader.rows(path, chunks).values[:, 0]
        for arr in _statistics_of(name, vals, by_chunk, chunks, len(counts), crc):
            sink.dense(arr.path, arr.kind, arr.data, arr.extra)


@dataclass(frozen=True)
class AttributeStatistics:
    """Statistics of one vertex attribute over the flat chunk grid."""

    minimum: npt.NDArray[Any]
    maximum: npt.NDArray[Any]
    values: npt.NDArray[Any] | None = None
    """Distinct values of the level (value set), or None."""
    present: npt.NDArray[np.uint64] | None = None
    """Per chunk: bit i set when it holds ``values[i]``."""


_CACHE: weakref.WeakKeyDictionary[LevelReader, dict[str, AttributeStatistics | None]] = (
    weakref.WeakKeyDictionary()
)


def _usable(reader: LevelReader, path: str, rows: int) -> Any:
    if not reader.has(path):
        return None
    node = reader.node(path)
    crc = node.attrs.get("counts_crc32")
    if crc != counts_crc32(reader.vertex_counts) or node.shape[0] != rows:
        return None
    return node


def load_statistics(reader: LevelReader, name: str) -> AttributeStatistics | None:
    """Return the usable statistics of vertex attribute ``name`` (None: none or stale)."""
    cache = _CACHE.setdefault(reader, {})
    if name in cache:
        return cache[name]
    n = reader.layout.n_chunks
    stats = None
    node = _usable(reader, f"{L.STATISTICS}/{name}", n)
    if node is not None and node.shape == (n, 2):
        mm = read_dense_whole(node)
        stats = AttributeStatistics(mm[:, 0], mm[:, 1])
        vs = _usable(reader, f"{L.VALUE_SETS}/{name}", n)
        if vs is not None and isinstance(vs.attrs.get("values"), list):
            # the attribute's dtype: a mix of small and > int64 integers must not go float
            values = np.asarray(vs.attrs["values"], dtype=mm.dtype)
            if len(values) <= MAX_VALUES:
                present = read_dense_whole(vs).astype(np.uint64)
                stats = AttributeStatistics(stats.minimum, stats.maximum, values, present)
    cache[name] = stats
    return stats
