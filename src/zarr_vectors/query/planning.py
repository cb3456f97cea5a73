"""Which chunks a query must read: shape tests on the grid, then statistics pruning.

Everything here reads only small dense arrays (``vertex_counts``, ``statistics/*``,
``value_sets/*``), never a payload.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.reader import LevelReader
from zarr_vectors.query.predicates import Clause, Predicate, Scope
from zarr_vectors.query.shapes import Sphere, box_chunks_inside, chunk_boxes
from zarr_vectors.query.statistics import AttributeStatistics, load_statistics
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import BoundingBox

__all__ = ["ChunkPlan", "plan_chunks"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ChunkPlan:
    """The chunks of one level a query reads."""

    touching: IntArray
    """Non-empty chunks (flat, ascending) that meet the query's shape (all without one)."""
    candidates: IntArray
    """``touching`` less the chunks statistics prove hold no match."""
    inside: BoolArray
    """Per candidate: every vertex it can hold lies in the shape (no position test needed)."""
    pruned_by: tuple[str, ...]
    """Attributes whose statistics removed at least one chunk."""
    unpruned: tuple[str, ...]
    """Vertex attributes of the predicate without usable statistics."""

    def allowed(self, n_chunks: int) -> BoolArray:
        """Mask over the flat grid of the candidate chunks."""
        mask = np.zeros(n_chunks, dtype=bool)
        mask[self.candidates] = True
        return mask


def _as_codes(reader: LevelReader, clause: Clause) -> Clause:
    """Category labels of a set clause as the stored integer codes."""
    cats = reader.node(f"{Scope.VERTEX.value}/{clause.name}").attrs.get("categories")
    if not isinstance(cats, list) or clause.values is None:
        return clause
    index = {c: i for i, c in enumerate(cats)}
    codes = tuple(index[v] for v in clause.values if isinstance(v, str) and v in index)
    return Clause(name=clause.name, scope=clause.scope, values=codes)


def _may_match(stats: AttributeStatistics, clause: Clause, flats: IntArray) -> BoolArray:
    lo, hi = stats.minimum[flats], stats.maximum[flats]
    if clause.values is None:
        ok = np.ones(len(flats), dtype=bool)
        low, high = clause.bounds(lo.dtype)  # exact, as the values themselves are compared
        if low is not None:
            ok &= hi >= low
        if high is not None:
            ok &= lo < high
        # a chunk whose values are all NaN has NaN statistics and matches nothing
        if lo.dtype.kind == "f":
            ok &= ~np.isnan(lo)
        return ok
    wanted = [v for v in clause.values if not isinstance(v, str)]
    if stats.values is not None and stats.present is not None:
        bits = np.uint64(0)
        for i, v in enumerate(stats.values):
            if any(v == w for w in wanted):
                bits |= np.uint64(1) << np.uint64(i)
        hit: BoolArray = (stats.present[flats] & bits) != 0
        return hit
    ok = np.zeros(len(flats), dtype=bool)
    for w in wanted:
        ok |= (lo <= w) & (hi >= w)
    return ok


def _shape_filter(
    reader: LevelReader, flats: IntArray, box: BoundingBox | None, sphere: Sphere | None
) -> tuple[IntArray, BoolArray]:
    inside = np.ones(len(flats), dtype=bool)
    if box is None and sphere is None:
        return flats, inside
    lo, hi = chunk_boxes(reader.layout, flats)
    if box is not None:
        dtype = np.dtype(str(reader.node(L.VERTICES).attrs.get("dtype", "<f8")))
        inside &= box_chunks_inside(box, reader.layout, flats, dtype)
    if sphere is not None:
        keep = sphere.may_hold(lo, hi)
        flats, lo, hi, inside = flats[keep], lo[keep], hi[keep], inside[keep]
        inside &= sphere.inside(lo, hi)
    return flats, inside


def plan_chunks(
    reader: LevelReader,
    box: BoundingBox | None,
    sphere: Sphere | None,
    predicate: Predicate,
) -> ChunkPlan:
    """Plan the chunks of ``reader``'s level a query reads (``predicate`` resolved)."""
    start = reader.chunks(box) if sphere is None else reader.chunks(_meet(box, sphere.bbox()))
    touching, inside = _shape_filter(reader, start, box, sphere)
    keep = np.ones(len(touching), dtype=bool)
    pruned_by: list[str] = []
    unpruned: list[str] = []
    for clause in predicate.of(Scope.VERTEX):
        stats = load_statistics(reader, clause.name)
        if stats is None:
            unpruned.append(clause.name)
            continue
        ok = _may_match(stats, _as_codes(reader, clause), touching)
        if not ok[keep].all():
            pruned_by.append(clause.name)
        keep &= ok
    return ChunkPlan(touching, touching[keep], inside[keep], tuple(pruned_by), tuple(unpruned))


def _meet(box: BoundingBox | None, other: BoundingBox) -> BoundingBox:
    if box is None:
        return other
    lo = np.maximum(np.asarray(box.min, np.float64), np.asarray(other.min, np.float64))
    hi = np.minimum(np.asarray(box.max, np.float64), np.asarray(other.max, np.float64))
    hi = np.maximum(hi, lo)  # empty intersection: an empty box touches no chunk
    return BoundingBox(min=tuple(lo.tolist()), max=tuple(hi.tolist()))
