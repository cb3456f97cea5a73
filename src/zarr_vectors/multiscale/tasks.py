"""The work of a partitioned pyramid build, as pure functions any process can run (FORMAT.md §10).

* :func:`read_partition` reads one partition of level 0 in serial read order (what
  :func:`~zarr_vectors.core.parts.read_parts` returns for those objects or chunks);
* for object stores, whose objects may be scattered over every chunk, :func:`spill_rows`
  instead reads a range of *chunks* once and spills each vertex, with its traversal index, to
  the object partition holding its object; :func:`load_rows` gathers one object partition
  back in traversal order.  Every chunk is then decoded once, not once per partition;
* :func:`partition_scores` scores the objects of one partition for the sparsity ranking;
* :func:`coarsen_partition` derives every coarse level of one partition and spills each level
  with :func:`~zarr_vectors.core.spill.spill_batch` (batch number = partition index, so batch
  order is the serial vertex order); :mod:`~zarr_vectors.multiscale.spilled` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import concat_ranges, offsets_from_counts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.spill import BatchSummary, spill_batch
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.multiscale.partition import Partition, PartitionKind
from zarr_vectors.multiscale.pyramid import PyramidPlan, coarsen_level
from zarr_vectors.multiscale.sparsity import ObjectScores, object_scores
from zarr_vectors.spec import layout as L

__all__ = [
    "PartitionResult",
    "coarsen_partition",
    "load_rows",
    "partition_scores",
    "read_partition",
    "spill_rows",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PartitionResult:
    """What coarsening one partition reports back (small: no vertex travels)."""

    summaries: tuple[BatchSummary, ...]
    """Spill summary of each coarse level, level 1 first."""
    used: Mapping[str, str]
    """Aggregation applied per vertex attribute."""
    escaped: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Flat chunks outside a chunk partition its vertices moved to (then nothing is valid)."""


def read_partition(
    reader: LevelReader, part: Partition, *, sequential: bool, attributes: bool = True
) -> GeometryParts:
    """Read one partition of level 0 exactly as :func:`~zarr_vectors.core.parts.read_parts`.

    Vertices come in serial order (traversal order of the objects, or storage order of the
    chunks); object ids are local (``0..stop-start-1``).  Links, object attributes and groups
    are not read.
    """
    obj: IntArray | None = None
    names = reader.names(L.ATTRIBUTES) if attributes else []
    attrs: dict[str, Column] = {}
    if part.kind is PartitionKind.OBJECTS:
        ids = np.arange(part.start, part.stop, dtype=np.int64)
        where = reader.gather_objects(ids)
        pos = reader.rows_at(L.VERTICES, where.chunks, where.ranges, where.rows)
        attrs = {
            n: reader.column_at(f"{L.ATTRIBUTES}/{n}", where.chunks, where.ranges, where.rows)
            for n in names
        }
        obj = np.repeat(np.arange(len(ids), dtype=np.int64), np.diff(where.offsets))
    else:
        counts = reader.vertex_counts[part.start : part.stop]
        flats = (np.flatnonzero(counts) + part.start).astype(np.int64)
        pos = reader.rows(L.VERTICES, flats).values
        attrs = {n: reader.column(f"{L.ATTRIBUTES}/{n}", flats) for n in names}
    return GeometryParts(
        positions=np.ascontiguousarray(pos),
        vertex_object=obj,
        n_objects=0 if obj is None else part.stop - part.start,
        ordered=obj is not None,
        sequential=sequential,
        vertex_attributes=attrs,
    )


def _traversal(reader: LevelReader, flats: IntArray) -> tuple[IntArray, IntArray]:
    """Object and traversal index of every row of ``flats`` (concatenated), from the index."""
    d = reader.layout.ndim
    manifest = np.asarray(reader.node(L.OBJECT_MANIFEST)[...], dtype=np.int64).reshape(-1, d + 2)
    ref_obj = np.repeat(np.arange(reader.n_objects, dtype=np.int64), np.diff(reader.object_offsets))
    ref_first = offsets_from_counts(manifest[:, d + 1])[:-1]
    ref_flat = reader.layout.flat_index(manifest[:, :d])
    sel = np.flatnonzero(np.isin(ref_flat, flats))
    counts = manifest[sel, d + 1]
    base = offsets_from_counts(reader.vertex_counts[flats])
    rows = concat_ranges(base[np.searchsorted(flats, ref_flat[sel])] + manifest[sel, d], counts)
    covered = np.zeros(int(base[-1]), dtype=bool)
    covered[rows[(rows >= 0) & (rows < len(covered))]] = True
    if len(rows) != len(covered) or not covered.all():  # every row exactly once
        raise CorruptPayloadError(
            f"{reader.group.path}/{L.OBJECT_MANIFEST}: refs do not cover every row of their chunks"
        )
    obj = np.empty(len(rows), dtype=np.int64)
    trav = np.empty(len(rows), dtype=np.int64)
    obj[rows] = np.repeat(ref_obj[sel], counts)
    trav[rows] = concat_ranges(ref_first[sel], counts)
    return obj, trav


def _folder(directory: str | Path, part: int) -> Path:
    return Path(directory) / f"p{part:09d}"


def spill_rows(
    reader: LevelReader,
    chunks: Partition,
    partitions: Sequence[Partition],
    directory: str | Path,
) -> int:
    """Read a range of chunks of an object store once; spill rows to their object partitions.

    Each row goes to ``<directory>/p<partition>/r<chunks.index>_<field>.npy`` with its object
    id (``obj``) and traversal index (``trav``), its position (``pos``) and attributes
    (``a_<name>``).  Returns the number of rows read.
    """
    counts = reader.vertex_counts[chunks.start : chunks.stop]
    flats = (np.flatnonzero(counts) + chunks.start).astype(np.int64)
    obj, trav = _traversal(reader, flats)
    fields: dict[str, npt.NDArray[np.generic]] = {
        "obj": obj,
        "trav": trav,
        "pos": reader.rows(L.VERTICES, flats).values,
    }
    for name in reader.names(L.ATTRIBUTES):
        fields[f"a_{name}"] = reader.column(f"{L.ATTRIBUTES}/{name}", flats).values
    starts = np.array([p.start for p in partitions], dtype=np.int64)
    owner = np.searchsorted(starts, obj, side="right") - 1
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(len(partitions) + 1))
    for p in np.flatnonzero(np.diff(bounds)).tolist():
        folder = _folder(directory, p)
        folder.mkdir(parents=True, exist_ok=True)
        sel = order[bounds[p] : bounds[p + 1]]
        for key, values in fields.items():
            np.save(folder / f"r{chunks.index:09d}_{key}.npy", values[sel], allow_pickle=False)
    return len(obj)


def load_rows(
    reader: LevelReader,
    part: Partition,
    directory: str | Path,
    *,
    sequential: bool,
    attributes: bool = True,
) -> GeometryParts:
    """Gather the rows :func:`spill_rows` spilled for one object partition.

    The result equals :func:`read_partition` of the partition: traversal order, local ids.
    """
    folder = _folder(directory, part.index)
    if not folder.is_dir():  # no vertex in any chunk: nothing to gather
        return read_partition(reader, part, sequential=sequential, attributes=attributes)

    def load(key: str) -> npt.NDArray[np.generic]:
        return np.concatenate([np.load(f) for f in sorted(folder.glob(f"r*_{key}.npy"))])

    order = np.argsort(load("trav"), kind="stable")
    attrs = {}
    if attributes:
        for name in reader.names(L.ATTRIBUTES):
            cats = reader.payload(f"{L.ATTRIBUTES}/{name}").attrs.get("categories")
            values = load(f"a_{name}")[order]
            attrs[name] = Column(values, None if cats is None else tuple(cats))
    return GeometryParts(
        positions=np.ascontiguousarray(load("pos")[order]),
        vertex_object=load("obj").astype(np.int64)[order] - part.start,
        n_objects=part.stop - part.start,
        ordered=True,
        sequential=sequential,
        vertex_attributes=attrs,
    )


def _level0(
    reader: LevelReader,
    part: Partition,
    plan: PyramidPlan,
    rows: str | None,
    *,
    attributes: bool = True,
) -> GeometryParts:
    if rows is None:
        return read_partition(reader, part, sequential=plan.sequential, attributes=attributes)
    return load_rows(reader, part, rows, sequential=plan.sequential, attributes=attributes)


def partition_scores(
    reader: LevelReader, part: Partition, plan: PyramidPlan, *, rows: str | None = None
) -> ObjectScores:
    """Sparsity scores (length, centroid chunk) of the objects of one object partition.

    ``rows`` is the directory of :func:`spill_rows`, or None to read the store directly.
    """
    parts = _level0(reader, part, plan, rows, attributes=False)
    return object_scores(parts, plan.strategy, reader.layout)


def _escaped(parts: GeometryParts, plan: PyramidPlan, level: int, part: Partition) -> IntArray:
    """Chunks outside a chunk partition where level ``level`` would bin its vertices."""
    if part.kind is not PartitionKind.CHUNKS or len(parts.positions) == 0:
        return np.zeros(0, np.int64)
    flat = plan.layout(level).locate(parts.positions)[0].astype(np.int64, copy=False)
    return np.unique(flat[(flat < part.start) | (flat >= part.stop)])


def coarsen_partition(
    reader: LevelReader,
    part: Partition,
    plan: PyramidPlan,
    *,
    keep_rank: IntArray | None,
    directories: Sequence[str],
    partition_chunks: int,
    rows: str | None = None,
) -> PartitionResult:
    """Derive every coarse level of one partition and spill each into its directory.

    Parameters
    ----------
    reader
        Level 0 of the store.
    part
        The partition.
    plan
        The build.
    keep_rank
        Position of each of the partition's objects in the global sparsity ranking (an
        object is kept by a level keeping ``k`` objects when its position is below ``k``),
        or None to keep every object.
    directories
        Spill directory of each coarse level (shared by all partitions).
    partition_chunks
        Chunks per axis of a spill block.
    rows
        Directory of :func:`spill_rows` holding the partition's level-0 rows, or None to
        read them from the store.

    Returns
    -------
    PartitionResult
        The spill summaries, or the chunks vertices escaped to (nothing usable spilled).
    """
    parts = _level0(reader, part, plan, rows)
    weights: npt.NDArray[np.float64] | None = None  # each level-0 vertex weighs 1
    summaries: list[BatchSummary] = []
    used: Mapping[str, str] = {}
    for i, count in enumerate(plan.keep_counts(), start=1):
        escaped = _escaped(parts, plan, i, part)
        if len(escaped):
            return PartitionResult(tuple(summaries), used, escaped)
        keep = None if keep_rank is None else keep_rank < count
        parts, weights, used = coarsen_level(parts, weights, plan, i, keep)
        summaries.append(
            spill_batch(
                directories[i - 1],
                part.index,
                replace(parts, object_attributes={}, groups=None),
                chunk_shape=tuple(plan.meta.chunk_shape),
                partition_chunks=partition_chunks,
            )
        )
    return PartitionResult(tuple(summaries), used)
