"""Delete objects and compact a store.

Deletion rebuilds level 0 without the objects' vertices, links, object rows and group
memberships (remaining objects keep their user ids), and every coarse level from it, so a
deleted object is in no level once the edit commits; the store holds no holes afterwards.
:func:`compact` rewrites a store as a fresh write of its own content would (it also removes
leftovers of killed edits).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.deprecation import renamed_keywords
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.edit.attributes import dense_of
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT
from zarr_vectors.edit.merge import ID
from zarr_vectors.edit.rewrite import StoredLevel, rewrite

__all__ = ["compact", "delete_objects", "without_objects"]


def without_objects(parts: GeometryParts, gone: npt.NDArray[np.int64]) -> GeometryParts:
    """Return ``parts`` without the dense objects ``gone`` (survivors renumbered in order)."""
    keep_obj = np.ones(parts.n_objects, dtype=bool)
    keep_obj[gone] = False
    new_id = np.cumsum(keep_obj) - 1
    vo = np.asarray(parts.vertex_objects, dtype=np.int64)
    keep_v = keep_obj[vo]
    new_row = np.cumsum(keep_v) - 1
    links = parts.links
    link_keep = None
    if links is not None:
        link_keep = keep_v[links].all(axis=1)
        links = new_row[links[link_keep]]
    obj = {n: c.take(np.flatnonzero(keep_obj)) for n, c in parts.object_attributes.items()}
    if ID not in obj:
        obj[ID] = Column(np.flatnonzero(keep_obj).astype(np.int64))
    n_left = int(keep_obj.sum())
    if np.array_equal(obj[ID].values, np.arange(n_left)):
        del obj[ID]
    groups = parts.groups
    if groups is not None:
        member_group = np.repeat(np.arange(len(groups.names)), np.diff(groups.offsets))
        kept = keep_obj[groups.members]
        counts = np.bincount(member_group[kept], minlength=len(groups.names))
        offsets = np.zeros(len(groups.names) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        groups = replace(groups, offsets=offsets, members=new_id[groups.members[kept]])
    rows = np.flatnonzero(keep_v)
    return replace(
        parts,
        positions=np.ascontiguousarray(parts.positions[rows]),
        vertex_object=new_id[vo[rows]],
        object_offsets=None,
        n_objects=n_left,
        vertex_attributes={n: c.take(rows) for n, c in parts.vertex_attributes.items()},
        links=links,
        link_attributes={
            n: c.take(np.flatnonzero(link_keep)) for n, c in parts.link_attributes.items()
        }
        if link_keep is not None
        else parts.link_attributes,
        object_attributes=obj,
        groups=groups,
        rank=None,
    )


@renamed_keywords(ids="object_ids")
def delete_objects(
    store: StoreLike, object_ids: npt.ArrayLike, *, timeout: float = DEFAULT_TIMEOUT
) -> WriteSummary:
    """Delete the objects ``object_ids`` (user ids) from every level of the store.

    Raises
    ------
    InvalidInputError
        An id that is not in the store (named), a repeated id, a store without objects.
        Nothing is changed.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_polylines(store, [np.zeros((2, 2)), np.ones((2, 2))], chunk_shape=(4, 4))
    >>> zv.delete_objects(store, [0]).object_count
    1
    >>> zv.read_polylines(store).object_ids.tolist()
    [1]
    """
    user = np.atleast_1d(np.asarray(object_ids))

    def edit(stored: StoredLevel) -> GeometryParts:
        return without_objects(stored.parts, dense_of(stored.parts, user))

    return rewrite(store, edit, timeout=timeout)


def compact(store: StoreLike, *, timeout: float = DEFAULT_TIMEOUT) -> WriteSummary:
    """Rewrite a store as a fresh write of its content (every level), committed at one point."""
    return rewrite(store, lambda stored: stored.parts, timeout=timeout)
