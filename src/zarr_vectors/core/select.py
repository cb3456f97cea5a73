"""Which objects and rows a read returns on one level: the normalised query and its selection.

Shared by every geometry type's read: a :class:`Query` names a box, objects (dense ids) and
attributes; :func:`select_objects` turns it into the objects to return and
:func:`object_vertices` fetches their vertices whole, in traversal order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.ragged import unique_sorted
from zarr_vectors.core.reader import LevelReader, ObjectRows
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import BoundingBox

__all__ = [
    "ObjectVertices",
    "Query",
    "in_box",
    "object_vertices",
    "objects_touching",
    "read_objects",
    "select_objects",
    "user_ids",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, kw_only=True)
class Query:
    """A normalised read request."""

    bbox: BoundingBox | None = None
    """Half-open box ``min <= p < max``, or None for everything."""
    object_ids: IntArray | None = None
    """Dense object ids to read, or None."""
    attributes: tuple[str, ...] | None = None
    """Per-vertex attribute names to return (None = all)."""
    clip: bool = False
    """Paths: cut objects to the box instead of returning them whole."""


def user_ids(reader: LevelReader) -> npt.NDArray[Any] | None:
    """Return the stored user ids (``object_attributes/id``) or None when ids are dense."""
    path = f"{L.OBJECT_ATTRIBUTES}/id"
    if not reader.has(path):
        return None
    return reader.object_attributes(None)["id"].values


def in_box(pos: npt.NDArray[np.floating], box: BoundingBox) -> npt.NDArray[np.bool_]:
    """Return which rows satisfy ``min <= p < max`` on every axis."""
    keep = np.ones(len(pos), dtype=bool)
    test = np.empty(len(pos), dtype=bool)  # one scratch mask for every comparison
    for d in range(pos.shape[1]):
        col = pos[:, d]
        # float64 scalars: a Python float would be rounded to float32 for float32 positions
        np.greater_equal(col, np.float64(box.min[d]), out=test)
        keep &= test
        np.less(col, np.float64(box.max[d]), out=test)
        keep &= test
    return keep


def objects_touching(reader: LevelReader, box: BoundingBox) -> IntArray:
    """Dense ids (ascending) of objects with at least one vertex inside ``box``."""
    flats = reader.chunks(box)
    if flats.size == 0:
        return np.zeros(0, dtype=np.int64)
    pos = reader.rows(L.VERTICES, flats).values
    obj = reader.vertex_object_ids(flats)
    return unique_sorted(obj[in_box(pos, box)])


def select_objects(reader: LevelReader, query: Query) -> IntArray:
    """Dense object ids a query returns: named ids, objects touching the box, or all."""
    if query.object_ids is not None:
        ids = query.object_ids
        if query.bbox is not None:
            ids = ids[np.isin(ids, objects_touching(reader, query.bbox))]
        return ids
    if query.bbox is not None:
        return objects_touching(reader, query.bbox)
    ids = np.arange(reader.n_objects, dtype=np.int64)
    if reader.level_meta.level > 0:  # coarse levels return only the objects they kept
        ids = ids[np.diff(reader.object_offsets) > 0]
    return ids


@dataclass(frozen=True)
class ObjectVertices:
    """Whole objects gathered in traversal order."""

    positions: npt.NDArray[np.floating]
    """(N, D) vertices of all objects, concatenated."""
    offsets: IntArray
    """(n + 1,) CSR offsets per object."""
    attributes: dict[str, Column]
    """Per-vertex attributes aligned with ``positions``."""
    where: ObjectRows
    """Chunks fetched and the row of each vertex in their concatenation."""


def read_objects(reader: LevelReader, ids: IntArray, names: Sequence[str]) -> ObjectVertices:
    """Fetch objects ``ids`` whole, vertices in traversal order."""
    return object_vertices(reader, reader.gather_objects(ids), names)


def object_vertices(reader: LevelReader, where: ObjectRows, names: Sequence[str]) -> ObjectVertices:
    """Fetch the vertices (and attributes ``names``) of objects located by ``where``."""
    want = where.ranges  # seekable payloads decode only the frames holding these rows
    pos = reader.rows_at(L.VERTICES, where.chunks, want, where.rows)
    attrs = {
        n: reader.column_at(f"{L.ATTRIBUTES}/{n}", where.chunks, want, where.rows) for n in names
    }
    return ObjectVertices(pos, where.offsets, attrs, where)
