"""Closed polygons: a geometry type added to zarr_vectors from outside the package.

A polygon is a ring of at least three vertices whose last vertex joins the first.  Rings are
stored exactly as polylines (the closing edge is implicit), so the type declares
``family="polyline"`` and reuses the polyline machinery: its reads, streaming batches, file
formats, pyramid rule and validation.  What is its own: the name, the ``Polygons`` result, the
ring check at write time, and drawing the closing edge.

Registered through the ``zarr_vectors.geometry_types`` entry point ``polygon``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors import WriteSummary
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike
from zarr_vectors.errors import GeometryError
from zarr_vectors.spec.conventions import MergeRule, SceneKind, Topology
from zarr_vectors.types import Query, TypeSpec, register_geometry_type
from zarr_vectors.types.polylines import Polylines, PolylineType, read_paths, write_polylines

__all__ = ["POLYGON", "PolygonType", "Polygons", "write_polygons"]

POLYGON = TypeSpec(
    name="polygon",
    family="polyline",
    topology=Topology.PATHS,
    cross_chunk_endpoints=2,
    sequential=True,
    root_keys=("winding",),
    merge_rule=MergeRule.RUN,
    scene=SceneKind.PATHS,
)
"""Everything zarr_vectors needs to know about the type."""


@dataclass(frozen=True)
class Polygons(Polylines):
    """Rings as flat positions plus offsets; ring i closes from its last vertex to its first."""

    def closed(self) -> Polylines:
        """The rings as polylines with the first vertex repeated at the end."""
        off = np.asarray(self.offsets, dtype=np.int64)
        starts, n = off[:-1], np.diff(off)
        take = np.concatenate(
            [np.append(np.arange(s, s + k), s) for s, k in zip(starts, n, strict=True)]
            or [np.zeros(0, np.int64)]
        ).astype(np.int64)
        new_off = np.concatenate([[0], np.cumsum(n + 1)]).astype(np.int64)
        attrs = {k: np.asarray(v)[take] for k, v in self.attributes.items()}
        return Polylines(
            np.asarray(self.positions)[take],
            new_off,
            self.object_ids,
            attrs,
            self.object_attributes,
            self.groups,
            self.group_attributes,
        )


@register_geometry_type
class PolygonType(PolylineType):
    """Plug-in for ``polygon`` stores (streaming batches as for polylines)."""

    spec = POLYGON

    @classmethod
    def read(cls, reader: LevelReader, query: Query) -> Polygons:
        """Return whole rings selected by ``query``."""
        pl = read_paths(reader, query)
        return Polygons(**{f.name: getattr(pl, f.name) for f in fields(pl)})

    @classmethod
    def scene_result(cls, result: Any) -> Polylines:
        """Draw each ring closed."""
        return result.closed() if isinstance(result, Polygons) else result


def write_polygons(store: StoreLike, rings: Sequence[npt.ArrayLike], **kwargs: Any) -> WriteSummary:
    """Write rings (each an (Ni, D) array, Ni >= 3, not repeating its first vertex).

    Keywords are those of :func:`zarr_vectors.write_polylines`.
    """
    arrays = [np.asarray(r) for r in rings]
    for i, r in enumerate(arrays):
        if r.ndim != 2 or len(r) < 3:
            raise GeometryError(f"ring {i} has {len(r)} vertices; a polygon needs at least 3")
    return write_polylines(store, arrays, geometry_type="polygon", **kwargs)
