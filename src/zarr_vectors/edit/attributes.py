"""Add, replace and drop attributes of a stored level 0 (coarse levels are rebuilt from it)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column, to_column
from zarr_vectors.core.deprecation import renamed_keywords
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT
from zarr_vectors.edit.merge import ID
from zarr_vectors.edit.rewrite import StoredLevel, rewrite
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.types._base import build_query, get_geometry_type

__all__ = ["AttributeKind", "add_attribute", "drop_attribute", "update_object_attributes"]


class AttributeKind(enum.StrEnum):
    """What an attribute's rows belong to."""

    VERTEX = "vertex"
    OBJECT = "object"
    LINK = "link"
    GROUP = "group"


def _columns(parts: GeometryParts, kind: AttributeKind) -> Mapping[str, Column]:
    if kind is AttributeKind.VERTEX:
        return parts.vertex_attributes
    if kind is AttributeKind.OBJECT:
        return parts.object_attributes
    if kind is AttributeKind.LINK:
        return parts.link_attributes
    return {} if parts.groups is None else parts.groups.attributes


def _rows(parts: GeometryParts, kind: AttributeKind) -> int:
    if kind is AttributeKind.VERTEX:
        return len(parts.positions)
    if kind is AttributeKind.OBJECT:
        if not parts.has_objects:
            raise InvalidInputError("the store has no objects: object attributes need objects")
        return parts.n_objects
    if kind is AttributeKind.LINK:
        if parts.links is None:
            raise InvalidInputError("the store's geometry type has no stored links")
        return len(parts.links)
    if parts.groups is None:
        raise InvalidInputError("the store has no groups")
    return len(parts.groups.names)


def _with(parts: GeometryParts, kind: AttributeKind, cols: dict[str, Column]) -> GeometryParts:
    if kind is AttributeKind.VERTEX:
        return replace(parts, vertex_attributes=cols)
    if kind is AttributeKind.OBJECT:
        return replace(parts, object_attributes=cols)
    if kind is AttributeKind.LINK:
        return replace(parts, link_attributes=cols)
    assert parts.groups is not None
    return replace(parts, groups=replace(parts.groups, attributes=cols))


def add_attribute(
    store: StoreLike,
    name: str,
    values: npt.ArrayLike,
    *,
    kind: AttributeKind | str = "vertex",
    overwrite: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Add (or with ``overwrite`` replace) one attribute of every level.

    Parameters
    ----------
    store
        An existing store.
    name
        Attribute name (an identifier; ``id`` is reserved for object ids).
    values
        One row per vertex (in the order a whole level-0 read returns them), object (dense
        id order), link (order of a whole read's edges / faces) or group, by ``kind``.
    kind
        ``"vertex"``, ``"object"``, ``"link"`` or ``"group"``.
    overwrite
        Replace an attribute of that name (otherwise an existing name is refused).
    timeout
        Seconds to wait for another writer's lock.

    Returns
    -------
    WriteSummary
        Counts of the store after the edit.  Coarse levels are rebuilt, so vertex attributes
        get their aggregated values there.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.zeros((2, 2)), chunk_shape=(4, 4))
    >>> _ = zv.add_attribute(store, "score", [0.5, 1.5])
    >>> zv.read_points(store).attributes["score"].tolist()
    [0.5, 1.5]
    """
    which = AttributeKind(kind)
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidInputError(f"attribute name {name!r} is not an identifier")
    if which is AttributeKind.OBJECT and name == ID:
        raise InvalidInputError("object attribute 'id' is reserved for user object ids")
    raw = np.asarray(values)

    def edit(stored: StoredLevel) -> GeometryParts:
        parts = stored.parts
        cols = dict(_columns(parts, which))
        if name in cols and not overwrite:
            raise InvalidInputError(
                f"{which.value} attribute {name!r} already exists; pass overwrite=True to replace"
            )
        col = to_column(name, raw, _rows(parts, which), f"{which.value} attribute")
        if which is AttributeKind.LINK:
            col = col.take(np.argsort(link_order(stored), kind="stable"))
        cols[name] = col
        return _with(parts, which, cols)

    return rewrite(store, edit, timeout=timeout)


def drop_attribute(
    store: StoreLike,
    name: str,
    *,
    kind: AttributeKind | str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Remove an attribute from every level (``kind`` picks one when several kinds have it)."""
    kinds = list(AttributeKind) if kind is None else [AttributeKind(kind)]

    def edit(stored: StoredLevel) -> GeometryParts:
        parts = stored.parts
        found = [k for k in kinds if name in _columns(parts, k)]
        if not found:
            raise InvalidInputError(f"the store has no attribute {name!r}")
        if len(found) > 1:
            raise InvalidInputError(
                f"{name!r} is a {' and a '.join(k.value for k in found)} attribute; pass kind="
            )
        if found[0] is AttributeKind.OBJECT and name == ID:
            raise InvalidInputError("object attribute 'id' holds the user object ids")
        cols = {n: c for n, c in _columns(parts, found[0]).items() if n != name}
        return _with(parts, found[0], cols)

    return rewrite(store, edit, timeout=timeout)


@renamed_keywords(ids="object_ids")
def update_object_attributes(
    store: StoreLike,
    object_ids: npt.ArrayLike,
    values: Mapping[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Set stored object attributes of the objects ``object_ids`` (user ids), one row per id.

    Names must be stored object attributes and values their dtype (a dtype change is refused).
    """
    from_user = np.atleast_1d(np.asarray(object_ids))

    def edit(stored: StoredLevel) -> GeometryParts:
        parts = stored.parts
        dense = dense_of(parts, from_user)
        cols = dict(parts.object_attributes)
        for name, new in values.items():
            if name == ID or name not in cols:
                raise InvalidInputError(
                    f"object attribute {name!r} is not in the store (stored: "
                    f"{sorted(n for n in cols if n != ID)})"
                )
            old = cols[name]
            col = to_column(name, np.asarray(new), len(dense), "object attribute")
            if (old.categories is None) != (col.categories is None) or (
                old.categories is None and col.values.dtype != old.values.dtype
            ):
                raise InvalidInputError(
                    f"object attribute {name!r}: the store holds "
                    f"{'strings' if old.categories else old.values.dtype}, got "
                    f"{'strings' if col.categories else col.values.dtype}"
                )
            if old.categories is None:
                vals = old.values.copy()
                vals[dense] = col.values
                cols[name] = Column(vals)
            else:
                labels = old.decoded().astype(object)
                labels[dense] = col.decoded()
                cols[name] = to_column(name, labels, len(labels), "object attribute")
        return replace(parts, object_attributes=cols)

    return rewrite(store, edit, timeout=timeout)


def link_order(stored: StoredLevel) -> npt.NDArray[np.int64]:
    """Index into the stored links of each link of a whole read (its ``edges`` / ``faces``).

    Link attributes are given in the order a whole level-0 read returns the links; the stored
    order may differ, so the two are matched by their vertex rows (a whole read numbers
    vertices as the stored parts do).
    """
    parts = stored.parts
    gtype = get_geometry_type(stored.meta.geometry_type)
    result = gtype.read(stored.reader, build_query(stored.reader))
    shown = getattr(result, "edges", getattr(result, "faces", None))
    if shown is None or parts.links is None:
        raise InvalidInputError(
            f"{stored.meta.geometry_type} stores take no link attributes through add_attribute"
        )
    read_rows = np.asarray(shown, dtype=np.int64)
    ours = np.asarray(parts.links, dtype=np.int64)
    a = np.lexsort(read_rows.T[::-1])
    b = np.lexsort(ours.T[::-1])
    if read_rows.shape != ours.shape or not np.array_equal(read_rows[a], ours[b]):
        raise InvalidInputError("the store's links do not match its read-back links")
    out = np.empty(len(a), dtype=np.int64)
    out[a] = b
    return out


def dense_of(parts: GeometryParts, user: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Dense ids of user object ids; an unknown or repeated id is an error naming it."""
    if not parts.has_objects:
        raise InvalidInputError("the store has no objects")
    if user.dtype.kind not in "iu":
        raise InvalidInputError(f"object ids must be integers, got dtype {user.dtype}")
    uniq, counts = np.unique(user, return_counts=True)
    if (counts > 1).any():
        raise InvalidInputError(f"object id {uniq[np.argmax(counts > 1)].item()!r} is repeated")
    col = parts.object_attributes.get(ID)
    stored = np.arange(parts.n_objects) if col is None else col.values
    order = np.argsort(stored, kind="stable")
    ranked = stored[order]
    pos = np.searchsorted(ranked, user)
    ok = (pos < len(ranked)) & (ranked[np.minimum(pos, max(len(ranked) - 1, 0))] == user)
    if not ok.all():
        raise InvalidInputError(f"object id {user[np.argmax(~ok)].item()!r} is not in the store")
    return order[pos].astype(np.int64)
