"""``explain``: what a query would touch, from dense arrays only (no payload is read)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zarr_vectors.core.reader import LevelReader
from zarr_vectors.query.execute import Selection
from zarr_vectors.query.lod import LevelCount
from zarr_vectors.query.planning import plan_chunks
from zarr_vectors.query.predicates import Scope
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import BoundingBox

__all__ = ["QueryPlan", "explain_level"]


@dataclass(frozen=True, kw_only=True)
class QueryPlan:
    """What a query reads on the level it runs on (returned by :func:`zarr_vectors.explain`).

    For path types, skeletons, graphs and meshes the chunks are those scanned to find the
    matching objects; the objects are then read whole from their own chunks.
    """

    geometry_type: str
    level: int
    """Level the query runs on (after a ``max_vertices`` budget)."""
    levels: tuple[LevelCount, ...]
    """Per-level vertex counts over the shape, finest first (every level of the store)."""
    chunks_total: int
    """Non-empty chunks of the level."""
    chunks_touching: int
    """Non-empty chunks meeting the shape (box/sphere); all without a shape."""
    chunks_read: int
    """Chunks whose payloads are read after statistics pruning."""
    chunks_inside: int
    """Chunks read that lie wholly inside the shape (counts need no positions there)."""
    pruned_by: tuple[str, ...]
    """Vertex attributes whose statistics removed chunks."""
    without_statistics: tuple[str, ...]
    """Vertex attributes of the predicate with no usable statistics (no pruning by them)."""
    arrays: tuple[str, ...]
    """Payload arrays read (paths inside the level group)."""
    vertices_read: int
    """Rows of those payloads decoded."""
    decoded_bytes: int
    """Bytes of vertex and attribute rows decoded (rows x row bytes, summed over arrays)."""


def _row_bytes(reader: LevelReader, path: str) -> int:
    attrs = reader.node(path).attrs
    width = attrs.get("width", 1)
    dtype = np.dtype(str(attrs.get("dtype", "<f4")))
    return int(dtype.itemsize * (width if isinstance(width, int) else 1))


def explain_level(
    reader: LevelReader,
    box: BoundingBox | None,
    sel: Selection,
    attributes: tuple[str, ...],
    levels: tuple[LevelCount, ...],
) -> QueryPlan:
    """Plan a query on one level and describe it."""
    plan = plan_chunks(reader, box, sel.sphere, sel.predicate)
    names = dict.fromkeys(attributes + tuple(c.name for c in sel.predicate.of(Scope.VERTEX)))
    arrays = (L.VERTICES, *(f"{L.ATTRIBUTES}/{n}" for n in names))
    if reader.has(L.OBJECT_OFFSETS):
        arrays = (*arrays, L.VERTEX_FRAGMENTS)
    rows = int(reader.vertex_counts[plan.candidates].sum())
    row_bytes = sum(_row_bytes(reader, a) for a in arrays if a != L.VERTEX_FRAGMENTS)
    return QueryPlan(
        geometry_type=reader.meta.geometry_type,
        level=reader.level_meta.level,
        levels=levels,
        chunks_total=int(np.count_nonzero(reader.vertex_counts)),
        chunks_touching=len(plan.touching),
        chunks_read=len(plan.candidates),
        chunks_inside=int(np.count_nonzero(plan.inside)),
        pruned_by=plan.pruned_by,
        without_statistics=plan.unpruned,
        arrays=arrays,
        vertices_read=rows,
        decoded_bytes=rows * row_bytes,
    )
