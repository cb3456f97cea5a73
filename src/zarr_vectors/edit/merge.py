"""Merging the parts of a stored level with new parts (appends), by the stored schema.

The result is exactly the parts a fresh write of the old and the new input together would
produce: objects of the store first (their dense ids unchanged), new objects after them,
attribute columns concatenated (string categories re-derived from all labels), links shifted to
the merged vertex numbering.  Point clouds number objects by ascending user id, so their merged
objects are put back into that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column, GroupTable, to_column
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.errors import InvalidInputError

__all__ = ["check_schema", "concat_columns", "merge_parts"]

IntArray = npt.NDArray[np.int64]
ID = "id"


def _kind(col: Column) -> str:
    if col.categories is not None:
        return "string"
    return f"{col.values.dtype.str} x{col.width}"


def check_schema(
    stored: Mapping[str, Column],
    new: Mapping[str, Column],
    what: str,
    *,
    skip: tuple[str, ...] = (),
) -> None:
    """Refuse new columns whose names or dtypes differ from the stored ones (naming them)."""
    old_names = set(stored) - set(skip)
    new_names = set(new) - set(skip)
    for name in sorted(new_names - old_names):
        raise InvalidInputError(
            f"{what} {name!r} is not in the store (stored: {sorted(old_names)}); add it to "
            "the whole store with add_attribute first"
        )
    for name in sorted(old_names - new_names):
        raise InvalidInputError(f"{what} {name!r} of the store is missing from the new data")
    for name in sorted(old_names):
        a, b = _kind(stored[name]), _kind(new[name])
        if a != b:
            raise InvalidInputError(f"{what} {name!r}: the store holds {a}, the new data has {b}")


def concat_columns(a: Column, b: Column, name: str) -> Column:
    """Rows of ``a`` then ``b`` (same kind: see :func:`check_schema`)."""
    if a.categories is None:
        return Column(np.ascontiguousarray(np.concatenate([a.values, b.values])))
    labels = np.concatenate([a.decoded(), b.decoded()]).astype(str)
    return to_column(name, labels, len(labels), "attribute")


def _concat_all(a: Mapping[str, Column], b: Mapping[str, Column]) -> dict[str, Column]:
    return {n: concat_columns(a[n], b[n], n) for n in a}


def _user_ids(parts: GeometryParts) -> npt.NDArray[np.integer] | None:
    col = parts.object_attributes.get(ID)
    return None if col is None else col.values


def _merged_ids(
    old: GeometryParts, new: GeometryParts, ids_given: bool
) -> npt.NDArray[np.integer] | None:
    """User ids of all objects (None: dense 0..n-1), refusing ids already in the store."""
    n_old, n_new = old.n_objects, new.n_objects
    stored = _user_ids(old)
    a = np.arange(n_old, dtype=np.int64) if stored is None else stored
    if not ids_given:
        start = int(a.max()) + 1 if n_old else 0
        b: npt.NDArray[np.integer] = np.arange(start, start + n_new, dtype=a.dtype)
    else:
        given = _user_ids(new)
        b = np.arange(n_new, dtype=np.int64) if given is None else given
        if b.dtype != a.dtype:
            if not np.can_cast(b, a.dtype) and not (
                b.size == 0
                or (b.min() >= np.iinfo(a.dtype).min and b.max() <= np.iinfo(a.dtype).max)
            ):
                raise InvalidInputError(f"ids of dtype {b.dtype} do not fit the stored {a.dtype}")
            b = b.astype(a.dtype)
        taken = np.intersect1d(a, b)
        if taken.size:
            raise InvalidInputError(f"object id {taken[0].item()!r} is already in the store")
    merged = np.concatenate([a, b])
    if np.array_equal(merged, np.arange(len(merged))):
        return None
    return merged


def _merge_groups(old: GeometryParts, new: GeometryParts, shift: int) -> GroupTable | None:
    a, b = old.groups, new.groups
    if b is None or not b.names:
        return a
    if a is None or not a.names:
        return GroupTable(b.names, b.offsets, b.members + shift, dict(b.attributes))
    clash = sorted(set(a.names) & set(b.names))
    if clash:
        raise InvalidInputError(f"group {clash[0]!r} is already in the store")
    check_schema(a.attributes, b.attributes, "group attribute")
    return GroupTable(
        a.names + b.names,
        np.concatenate([a.offsets, b.offsets[1:] + a.offsets[-1]]),
        np.concatenate([a.members, b.members + shift]),
        _concat_all(a.attributes, b.attributes),
    )


def _link_block(parts: GeometryParts, arity: int) -> IntArray:
    if parts.links is None:
        return np.zeros((0, arity), dtype=np.int64)
    return np.asarray(parts.links, dtype=np.int64)


def merge_parts(
    old: GeometryParts, new: GeometryParts, *, ids_given: bool, sort_ids: bool
) -> GeometryParts:
    """Return the parts of the store's level 0 with ``new`` appended.

    Parameters
    ----------
    old
        The stored level (from :func:`~zarr_vectors.core.parts.read_parts`).
    new
        The appended data, from the geometry type's own input conversion.
    ids_given
        The caller named the new objects' ids (else they get ids after the stored ones).
    sort_ids
        Objects are numbered by ascending user id (point clouds).
    """
    if old.has_objects != new.has_objects and len(old.positions) and len(new.positions):
        have = "objects" if old.has_objects else "no objects"
        raise InvalidInputError(f"the store's vertices have {have}; the new data must match")
    if old.positions.shape[1] != new.positions.shape[1]:
        raise InvalidInputError(
            f"the store has {old.positions.shape[1]} spatial dimensions, the new data "
            f"{new.positions.shape[1]}"
        )
    check_schema(old.vertex_attributes, new.vertex_attributes, "attribute")
    check_schema(old.object_attributes, new.object_attributes, "object attribute", skip=(ID,))
    check_schema(old.link_attributes, new.link_attributes, "link attribute")
    n_old = len(old.positions)
    pos = np.concatenate([old.positions, new.positions.astype(old.positions.dtype, copy=False)])
    links = None
    if old.links is not None or new.links is not None:
        arity = (old.links if old.links is not None else new.links).shape[1]  # type: ignore[union-attr]
        links = np.concatenate([_link_block(old, arity), _link_block(new, arity) + n_old])
    merged = GeometryParts(
        positions=np.ascontiguousarray(pos),
        ordered=old.ordered or new.ordered,
        sequential=old.sequential,
        vertex_attributes=_concat_all(old.vertex_attributes, new.vertex_attributes),
        links=links,
        link_attributes=_concat_all(old.link_attributes, new.link_attributes),
    )
    if not (old.has_objects or new.has_objects):
        return merged
    vo_old = np.asarray(old.vertex_objects, dtype=np.int64)
    vo_new = np.asarray(new.vertex_objects, dtype=np.int64) + old.n_objects
    obj = {
        n: concat_columns(old.object_attributes[n], new.object_attributes[n], n)
        for n in old.object_attributes
        if n != ID
    }
    ids = _merged_ids(old, new, ids_given)
    if ids is not None:
        obj[ID] = Column(np.ascontiguousarray(ids))
    merged = replace(
        merged,
        vertex_object=np.concatenate([vo_old, vo_new]),
        n_objects=old.n_objects + new.n_objects,
        object_attributes=obj,
        groups=_merge_groups(old, new, old.n_objects),
    )
    if sort_ids and ids is not None:
        merged = _renumber(merged, np.argsort(ids, kind="stable"))
    return merged


def _renumber(parts: GeometryParts, order: IntArray) -> GeometryParts:
    """Renumber objects so that new object k is old object ``order[k]``."""
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    obj = {n: c.take(order) for n, c in parts.object_attributes.items()}
    g = parts.groups
    groups = None if g is None else replace(g, members=rank[g.members])
    vo = np.asarray(parts.vertex_objects, dtype=np.int64)
    return replace(parts, vertex_object=rank[vo], object_attributes=obj, groups=groups)
