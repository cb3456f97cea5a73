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
from zarr_vectors.query.execute import VERTEX_FILTERED, Selection, kept_rows, matching_objects
from zarr_vectors.query.matching import box_count
from zarr_vectors.query.planning import ChunkPlan, plan_chunks
from zarr_vectors.query.predicates import Scope
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


def count_vertices(
    reader: LevelReader, box: BoundingBox | None, sel: Selection, plan: ChunkPlan | None = None
) -> int:
    """Vertices satisfying shape, vertex and object conditions on one level.

    Without conditions, chunks wholly inside the box count from ``vertex_counts`` and the
    others decode only their positions (:func:`~zarr_vectors.query.matching.box_count`);
    with conditions, positions are decoded only for the rows the conditions keep.
    """
    plan = plan or plan_chunks(reader, box, sel.sphere, sel.predicate)
    if sel.predicate.of(Scope.VERTEX) or sel.predicate.of(Scope.OBJECT) or sel.sphere:
        return len(kept_rows(reader, plan.candidates, box, sel).rows)
    whole = int(reader.vertex_counts[plan.candidates[plan.inside]].sum())
    if box is None:
        return whole
    return whole + box_count(reader, plan.candidates[~plan.inside], box)


def count_level(
    reader: LevelReader, box: BoundingBox | None, sel: Selection, unit: CountUnit
) -> int:
    """Count ``unit`` items a read of this level with ``box`` and ``sel`` returns."""
    if unit is CountUnit.VERTICES:
        return count_vertices(reader, box, sel)
    with reader.caching():
        return len(matching_objects(reader, Query(bbox=box), sel))
