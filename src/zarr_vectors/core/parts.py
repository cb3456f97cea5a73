"""Read a whole level back into :class:`~zarr_vectors.core.plan.GeometryParts`.

This is the inverse of the write pipeline, used to derive new levels (pyramids) and to rechunk:
vertices come back in traversal order (object by object) for object types and in storage
order for point clouds without objects; links are re-expressed as indices into that order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.links.keys import chunk_links
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.typespec import type_spec

__all__ = ["read_parts"]

IntArray = npt.NDArray[np.int64]


def read_parts(reader: LevelReader, *, sequential: bool) -> GeometryParts:
    """Return every vertex, attribute, link, object attribute and group of a level."""
    flats = reader.chunks()
    has_objects = reader.has(L.OBJECT_OFFSETS)
    total = int(reader.vertex_counts[flats].sum())
    vertex_object: IntArray | None = None
    n_objects = 0
    perm = np.arange(total, dtype=np.int64)
    if has_objects:
        n_objects = reader.n_objects
        where = reader.gather_objects(np.arange(n_objects, dtype=np.int64))
        perm = where.rows
        vertex_object = np.repeat(np.arange(n_objects, dtype=np.int64), np.diff(where.offsets))
        if len(perm) != total:
            raise CorruptPayloadError(
                f"{reader.group.path}: object manifests cover {len(perm)} of {total} rows"
            )
    pos = reader.rows(L.VERTICES, flats).values[perm]
    attrs = {
        n: reader.column(f"{L.ATTRIBUTES}/{n}", flats).take(perm)
        for n in reader.names(L.ATTRIBUTES)
    }
    links = None
    link_attrs = {}
    if type_spec(reader.meta.geometry_type).linked:
        names = reader.names(L.LINK_ATTRIBUTES)
        block = chunk_links(reader, flats, names)
        inverse = np.empty(total, dtype=np.int64)
        inverse[perm] = np.arange(total, dtype=np.int64)
        links = inverse[block.ends] if len(block.ends) else block.ends
        link_attrs = block.attributes
    return GeometryParts(
        positions=np.ascontiguousarray(pos),
        vertex_object=vertex_object,
        n_objects=n_objects,
        ordered=has_objects,
        sequential=sequential,
        vertex_attributes=attrs,
        links=links,
        link_attributes=link_attrs,
        object_attributes=reader.object_attributes(None),
        groups=reader.groups,
    )
