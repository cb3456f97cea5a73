"""Counting what a read would return, reading as little as possible.

Vertices: chunks wholly inside the shape and without vertex or object conditions count from
``vertex_counts`` alone; chunks on the shape's edge decode their positions only; conditions
decode only the attributes they name, in the chunks statistics leave.  Objects: without a
shape or vertex conditions the object index answers (no payload decode).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.reader import LevelReader
from zarr_vectors.query.execute import VERTEX_FILTERED, Selection, matching_objects
from zarr_vectors.query.planning import ChunkPlan, plan_chunks
from zarr_vectors.query.predicates import Scope
from zarr_vectors.query.shapes import box_axes_inside, in_box_chunks
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Topology
from zarr_vectors.spec.metadata import BoundingBox
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import Query

__all__ = ["CountUnit", "count_level", "default_unit"]

IntArray = npt.NDArray[np.int64]


class CountUnit(StrEnum):
    """What :func:`~zarr_vectors.count` counts."""

    VERTICES = "vertices"
    """Vertices (points of a point cloud): what point, graph and mesh reads return."""
    OBJECTS = "objects"
    """Objects: what path and skeleton reads return."""


def default_unit(gtype: str) -> CountUnit:
    """Return the unit a read of ``gtype`` returns (vertices for points, graphs, meshes)."""
    topology = type_spec(gtype).topology
    if topology is Topology.NONE or topology in VERTEX_FILTERED:
        return CountUnit.VERTICES
    return CountUnit.OBJECTS


def _decoded_count(
    reader: LevelReader, flats: IntArray, box: BoundingBox | None, sel: Selection
) -> int:
    if len(flats) == 0:
        return 0
    counts = reader.vertex_counts[flats]
    keep = np.ones(int(counts.sum()), dtype=bool)
    if box is not None or sel.sphere is not None:
        pos = reader.rows(L.VERTICES, flats).values
        if box is not None:  # per chunk, only the axes the box cuts (rows are chunk-ordered)
            dtype = np.dtype(str(reader.node(L.VERTICES).attrs.get("dtype", "<f8")))
            axes = box_axes_inside(box, reader.layout, flats, dtype)
            keep &= in_box_chunks(pos, counts, axes, box)
        if sel.sphere is not None:
            keep &= sel.sphere.contains(pos)
    for clause in sel.predicate.of(Scope.VERTEX):
        keep &= clause.mask(reader.column(f"{L.ATTRIBUTES}/{clause.name}", flats).decoded())
    obj_clauses = sel.predicate.of(Scope.OBJECT)
    if obj_clauses and keep.any():
        obj = reader.vertex_object_ids(flats)
        ids, inverse = np.unique(obj, return_inverse=True)
        ok = np.ones(len(ids), dtype=bool)
        cols = reader.object_attributes(ids.astype(np.int64))
        for clause in obj_clauses:
            ok &= clause.mask(cols[clause.name].decoded())
        keep &= ok[inverse.ravel()]
    return int(np.count_nonzero(keep))


def count_vertices(
    reader: LevelReader, box: BoundingBox | None, sel: Selection, plan: ChunkPlan | None = None
) -> int:
    """Vertices satisfying shape, vertex and object conditions on one level."""
    plan = plan or plan_chunks(reader, box, sel.sphere, sel.predicate)
    needs_values = bool(sel.predicate.of(Scope.VERTEX) or sel.predicate.of(Scope.OBJECT))
    if needs_values:
        return _decoded_count(reader, plan.candidates, box, sel)
    whole = plan.candidates[plan.inside]
    edge = plan.candidates[~plan.inside]
    return int(reader.vertex_counts[whole].sum()) + _decoded_count(reader, edge, box, sel)


def count_level(
    reader: LevelReader, box: BoundingBox | None, sel: Selection, unit: CountUnit
) -> int:
    """Count ``unit`` items a read of this level with ``box`` and ``sel`` returns."""
    if unit is CountUnit.VERTICES:
        return count_vertices(reader, box, sel)
    with reader.caching():
        return len(matching_objects(reader, Query(bbox=box), sel))
