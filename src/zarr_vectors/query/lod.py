"""Level-of-detail budgets: choose a level from per-level vertex counts, never trial reads.

The count of a level over a query shape is the sum of ``vertex_counts`` of the non-empty
chunks meeting the shape (box and/or sphere); without a shape it is the level's vertex count.
For point clouds, graphs and meshes this bounds the vertices a read returns, so a level chosen
under ``max_vertices`` never returns more.  Path types and skeletons return whole objects,
which may extend beyond the shape's chunks: for them the count is an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import zarr

from zarr_vectors.core.reader import BBoxLike, LevelReader, parse_bbox
from zarr_vectors.core.store import list_resolution_levels, read_root_metadata
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.planning import plan_chunks
from zarr_vectors.query.predicates import Predicate
from zarr_vectors.query.shapes import parse_sphere

__all__ = ["LevelCount", "budget_level", "level_counts"]


@dataclass(frozen=True)
class LevelCount:
    """Vertices of one level over a query shape (from ``vertex_counts``)."""

    level: int
    vertices: int
    chunks: int


def _count(reader: LevelReader, bbox: BBoxLike | None, sphere: object) -> LevelCount:
    ndim = reader.layout.ndim
    box = None if bbox is None else parse_bbox(bbox, ndim)
    ball = None if sphere is None else parse_sphere(sphere, ndim)
    level = reader.level_meta.level
    declared = reader.group.attrs.asdict()
    if box is None and ball is None and "vertex_count" in declared and "chunk_count" in declared:
        # the level's own counts (a read checks them against vertex_counts): no array read
        meta = reader.level_meta
        return LevelCount(level, meta.vertex_count, meta.chunk_count)
    if box is None and ball is None:
        flats = reader.chunks()
    else:
        flats = plan_chunks(reader, box, ball, Predicate()).candidates
    return LevelCount(level, int(reader.vertex_counts[flats].sum()), len(flats))


def level_counts(
    root: zarr.Group, bbox: BBoxLike | None = None, sphere: object = None
) -> list[LevelCount]:
    """Per-level vertex counts over the shape, finest level first."""
    return [_count(LevelReader(root, n), bbox, sphere) for n in list_resolution_levels(root)]


def _listed_levels(root: zarr.Group) -> list[int]:
    """Return the levels listed in ``multiscales[0].datasets``, ascending.

    From the root attributes already read (validate checks every level group is listed);
    listing the level groups would cost a store listing per budget read.
    """
    return sorted({d.level for d in read_root_metadata(root).multiscales.datasets})


def budget_level(
    root: zarr.Group,
    level: int,
    bbox: BBoxLike | None,
    sphere: object,
    max_vertices: int | None,
) -> int:
    """Return the finest level ``>= level`` whose count fits ``max_vertices`` (else coarsest).

    Without ``max_vertices`` this is ``level`` itself.
    """
    if max_vertices is None:
        return level
    if isinstance(max_vertices, bool) or not isinstance(max_vertices, int | np.integer | float):
        raise InvalidInputError(f"max_vertices must be a number >= 0, got {max_vertices!r}")
    if max_vertices < 0:
        raise InvalidInputError(f"max_vertices must be >= 0, got {max_vertices}")
    levels = [n for n in _listed_levels(root) if n >= level]
    if not levels:
        raise InvalidInputError(f"the store has no level {level} or coarser")
    for n in levels:
        if _count(LevelReader(root, n), bbox, sphere).vertices <= max_vertices:
            return n
    return levels[-1]
