"""Append new objects to an existing store, one function per geometry type.

Each function converts its input with the geometry type's own input conversion (the function
its ``write_*`` uses), then merges it into the stored level 0: chunk by chunk where
:mod:`zarr_vectors.edit.incremental` applies, else through
:func:`zarr_vectors.edit.rewrite.rewrite`.  Either way new objects get ids after the stored ones (or the
ids given, which must be new), attributes must match the stored schema, and the result equals a
fresh write of the old and the new data together, committed at one point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.deprecation import deprecated_function, renamed_keywords
from zarr_vectors.core.parts import read_parts
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreOptions, WriteSummary
from zarr_vectors.edit.commit import EditTarget
from zarr_vectors.edit.graph_links import GraphInput, link_graph, new_only_parts
from zarr_vectors.edit.incremental import AppendPath, append_chunks, record
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT
from zarr_vectors.edit.merge import ID, merge_parts
from zarr_vectors.edit.rewrite import PyramidPlan, StoredLevel, rewrite
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types.meshes import MeshInput, mesh_parts
from zarr_vectors.types.points import points_parts
from zarr_vectors.types.polylines import path_parts
from zarr_vectors.types.skeletons import skeleton_parts

__all__ = [
    "append_graph",
    "append_lines",
    "append_meshes",
    "append_points",
    "append_polylines",
    "append_skeletons",
    "append_store",
    "append_streamlines",
]

Attrs = Mapping[str, npt.ArrayLike] | None


def _append(
    store: StoreLike, gtype: str, new: GeometryParts, ids_given: bool, timeout: float
) -> WriteSummary:
    given = ids_given or ID in new.object_attributes

    def edit(stored: StoredLevel) -> GeometryParts:
        return merge_parts(
            stored.parts,
            new,
            ids_given=given,
            sort_ids=stored.meta.geometry_type == GeometryTypeName.POINT_CLOUD,
        )

    took: list[AppendPath] = []

    def fast(
        target: EditTarget, reader: LevelReader, opts: StoreOptions, plan: PyramidPlan
    ) -> WriteSummary | None:
        def coarse(staged: str) -> None:
            plan.build(staged, new, overwrite=True)  # stored schema: the same attribute names

        pyramid = coarse if plan.ratios else None
        done = append_chunks(target, reader, opts, new, ids_given=given, pyramid=pyramid)
        if done is not None:
            took.append(AppendPath.CHUNKS)
        return done

    summary = rewrite(store, edit, geometry_type=gtype, timeout=timeout, fast=fast)
    record(took[0] if took else AppendPath.REBUILD)
    return summary


@renamed_keywords(object_ids="vertex_object_ids")
def append_points(
    store: StoreLike,
    positions: npt.ArrayLike,
    *,
    attributes: Attrs = None,
    vertex_object_ids: npt.ArrayLike | None = None,
    object_attributes: Attrs = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append points to a point-cloud store.

    Parameters
    ----------
    store
        An existing point-cloud store (local directory, ``.zip`` path or memory store).
    positions, attributes, vertex_object_ids, object_attributes, groups, group_attributes
        As in :func:`~zarr_vectors.write_points`; attribute names and dtypes must be the
        stored ones.  ``vertex_object_ids`` must not name objects already in the store.
    timeout
        Seconds to wait for another writer's lock.

    Returns
    -------
    WriteSummary
        Counts of the whole store after the append.

    Raises
    ------
    InvalidInputError
        Another geometry type, other spatial dimensions, unknown or missing attribute, dtype
        change, an id already stored.  The store is untouched.
    StoreLockedError
        Another writer holds the store.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.zeros((2, 2)), chunk_shape=(4, 4))
    >>> zv.append_points(store, np.full((1, 2), -5.0)).vertex_count
    3
    """
    parts = points_parts(
        positions, attributes, vertex_object_ids, object_attributes, groups, group_attributes
    )
    given = vertex_object_ids is not None
    return _append(store, GeometryTypeName.POINT_CLOUD, parts, given, timeout)


def _paths(
    store: StoreLike,
    gtype: str,
    paths: Any,
    offsets: Any,
    kw: Mapping[str, Any],
) -> WriteSummary:
    parts = path_parts(
        paths,
        offsets,
        kw["attributes"],
        kw["object_attributes"],
        kw["object_ids"],
        kw["groups"],
        kw["group_attributes"],
    )
    return _append(store, gtype, parts, kw["object_ids"] is not None, kw["timeout"])


@renamed_keywords(ids="object_ids")
def append_polylines(
    store: StoreLike,
    polylines: Sequence[npt.ArrayLike] | npt.ArrayLike,
    *,
    offsets: npt.ArrayLike | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Attrs = None,
    object_ids: npt.ArrayLike | None = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append polylines to a polyline store.

    Input as :func:`~zarr_vectors.write_polylines`, other arguments as :func:`append_points`.
    """
    kw = {
        "attributes": attributes,
        "object_attributes": object_attributes,
        "object_ids": object_ids,
        "groups": groups,
        "group_attributes": group_attributes,
        "timeout": timeout,
    }
    return _paths(store, GeometryTypeName.POLYLINE, polylines, offsets, kw)


@renamed_keywords(ids="object_ids")
def append_streamlines(
    store: StoreLike,
    streamlines: Sequence[npt.ArrayLike] | npt.ArrayLike,
    *,
    offsets: npt.ArrayLike | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Attrs = None,
    object_ids: npt.ArrayLike | None = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append streamlines to a streamline store (arguments as :func:`append_polylines`)."""
    kw = {
        "attributes": attributes,
        "object_attributes": object_attributes,
        "object_ids": object_ids,
        "groups": groups,
        "group_attributes": group_attributes,
        "timeout": timeout,
    }
    return _paths(store, GeometryTypeName.STREAMLINE, streamlines, offsets, kw)


@renamed_keywords(ids="object_ids")
def append_lines(
    store: StoreLike,
    endpoints: npt.ArrayLike,
    *,
    attributes: Attrs = None,
    object_attributes: Attrs = None,
    object_ids: npt.ArrayLike | None = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append (M, 2, D) segments to a line store (arguments as :func:`append_points`)."""
    ends = np.asarray(endpoints)
    if ends.ndim != 3 or ends.shape[1] != 2:
        raise InvalidInputError(f"endpoints must have shape (M, 2, D), got {ends.shape}")
    m, _, d = ends.shape
    flat: dict[str, Any] = {}
    for name, values in (attributes or {}).items():
        arr = np.asarray(values)
        if arr.ndim < 2 or arr.shape[:2] != (m, 2):
            raise InvalidInputError(
                f"attribute {name!r} must have shape (M, 2, ...) with M={m}, got {arr.shape}"
            )
        flat[name] = arr.reshape(2 * m, *arr.shape[2:])
    kw = {
        "attributes": flat,
        "object_attributes": object_attributes,
        "object_ids": object_ids,
        "groups": groups,
        "group_attributes": group_attributes,
        "timeout": timeout,
    }
    offsets = np.arange(0, 2 * m + 1, 2, dtype=np.int64)
    return _paths(store, GeometryTypeName.LINE, ends.reshape(2 * m, d), offsets, kw)


@renamed_keywords(object_ids="vertex_object_ids")
def append_graph(
    store: StoreLike,
    positions: npt.ArrayLike,
    edges: npt.ArrayLike,
    *,
    vertex_object_ids: npt.ArrayLike | None = None,
    attributes: Attrs = None,
    edge_attributes: Attrs = None,
    object_attributes: Attrs = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append nodes and edges to a graph store; edges may join new nodes to stored ones.

    Parameters
    ----------
    store
        An existing ``graph`` store (local directory, ``.zip`` path or memory store).
    positions
        (N, D) new node positions, physical units.
    edges
        (E, 2) integer indices into the concatenation ``[stored nodes, new nodes]``: index
        ``i < S`` (``S`` = stored node count) is node ``i`` of ``read_graph(store)`` at level 0
        (its whole-store order), index ``i >= S`` is new node ``i - S``.  Undirected stores
        keep ``[min, max]``, directed ones ``[source, target]``.  Out-of-range indices,
        self-loops, a repeated edge and an edge already stored (for undirected stores in
        either direction) raise :class:`~zarr_vectors.errors.GeometryError` naming the row.
    vertex_object_ids
        (N,) object of each new node; ids must be new to the store.  Default: the connected
        components of the new nodes.
    attributes, edge_attributes, object_attributes, groups, group_attributes
        As in :func:`~zarr_vectors.write_graph`, for the new nodes, the new edges (aligned
        with ``edges``) and the new objects; names and dtypes must be the stored ones.
    timeout
        Seconds to wait for another writer's lock.

    Returns
    -------
    WriteSummary
        Counts of the whole store after the append.

    Raises
    ------
    GeometryError
        An edge index out of range, a self-loop, a duplicate edge (naming the row).
    InvalidInputError
        As :func:`append_points`; also an edge that merges component objects of a store that
        holds object attributes or groups (they cannot follow the merge).
    StoreLockedError
        Another writer holds the store.

    Notes
    -----
    The store afterwards equals a fresh :func:`~zarr_vectors.write_graph` of the stored
    nodes (in ``read_graph`` order) followed by the new ones, with the stored edges and the
    new edges, and the same object rule:

    * **component objects** (the store was written without ``vertex_object_ids`` and none are
      given now): objects are the connected components of the whole graph, so an edge
      joining two objects merges them, and a new node joined to a stored object belongs to it;
    * **user-given objects**: objects stay as given; an edge between two objects is kept as a
      cross-object edge, as a fresh write with those ids keeps it.

    Stability of the numbering: with user-given objects new nodes always form new objects
    after the stored ones, so stored node ``i`` is node ``i`` after every append.  With
    component objects a new node or edge joined to a stored component is placed inside that
    component in the whole-store order, so nodes of later components move up: read the graph
    again before building the next append's edges (or write with ``vertex_object_ids``).

    Appends whose edges touch only new nodes rewrite only the chunks they land in (local
    directory stores, see :mod:`zarr_vectors.edit.incremental`); an edge to a stored node
    rebuilds the store.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_graph(store, [[0.0, 0.0], [1.0, 0.0]], [[0, 1]], chunk_shape=(4, 4))
    >>> _ = zv.append_graph(store, [[2.0, 0.0]], [[1, 2]])
    >>> g = zv.read_graph(store)
    >>> g.edges.tolist(), g.vertex_object_ids.tolist()
    ([[0, 1], [1, 2]], [0, 0, 0])
    """
    inp = GraphInput(
        positions,
        edges,
        vertex_object_ids,
        attributes,
        edge_attributes,
        object_attributes,
        groups,
        group_attributes,
    )
    given = vertex_object_ids is not None
    took: list[AppendPath] = []

    def edit(stored: StoredLevel) -> GeometryParts:
        directed = bool(stored.meta.type_metadata.get("is_directed", False))
        return link_graph(stored.parts, inp, directed=directed, ids_given=given)

    def fast(
        target: EditTarget, reader: LevelReader, opts: StoreOptions, plan: PyramidPlan
    ) -> WriteSummary | None:
        directed = bool(reader.meta.type_metadata.get("is_directed", False))
        new = new_only_parts(inp, reader.level_meta.vertex_count, directed)
        if new is None:
            return None

        def coarse(staged: str) -> None:
            plan.build(staged, new, overwrite=True)

        pyramid = coarse if plan.ratios else None
        done = append_chunks(target, reader, opts, new, ids_given=given, pyramid=pyramid)
        if done is not None:
            took.append(AppendPath.CHUNKS)
        return done

    summary = rewrite(store, edit, geometry_type=GeometryTypeName.GRAPH, timeout=timeout, fast=fast)
    record(took[0] if took else AppendPath.REBUILD)
    return summary


@renamed_keywords(ids="object_ids")
def append_skeletons(
    store: StoreLike,
    positions: npt.ArrayLike | Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    parents: npt.ArrayLike | None = None,
    *,
    offsets: npt.ArrayLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    radius: npt.ArrayLike | Sequence[npt.ArrayLike] | None = None,
    swc_type: npt.ArrayLike | Sequence[npt.ArrayLike] | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Attrs = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append trees to a skeleton store (input as :func:`~zarr_vectors.write_skeletons`)."""
    parts = skeleton_parts(
        positions,
        parents,
        offsets,
        object_ids,
        radius,
        swc_type,
        attributes,
        object_attributes,
        groups,
        group_attributes,
    )
    return _append(store, GeometryTypeName.SKELETON, parts, object_ids is not None, timeout)


def append_meshes(
    store: StoreLike,
    vertices: MeshInput,
    faces: npt.ArrayLike | None = None,
    *,
    vertex_object_ids: npt.ArrayLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    attributes: Mapping[str, Any] | None = None,
    face_attributes: Mapping[str, Any] | None = None,
    object_attributes: Attrs = None,
    groups: Attrs = None,
    group_attributes: Attrs = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> WriteSummary:
    """Append meshes to a mesh store (input as :func:`~zarr_vectors.write_meshes`)."""
    parts = mesh_parts(
        vertices,
        faces,
        vertex_object_ids=vertex_object_ids,
        object_ids=object_ids,
        attributes=attributes,
        face_attributes=face_attributes,
        object_attributes=object_attributes,
        groups=groups,
        group_attributes=group_attributes,
    )
    given = vertex_object_ids is not None or object_ids is not None
    return _append(store, GeometryTypeName.MESH, parts, given, timeout)


# Deprecated singular names (removed in the next release): function nouns are plural.
append_skeleton = deprecated_function(append_skeletons, "append_skeleton")
append_mesh = deprecated_function(append_meshes, "append_mesh")


def append_store(
    store: StoreLike, source: StoreLike, *, timeout: float = DEFAULT_TIMEOUT
) -> WriteSummary:
    """Append every object of another store's level 0 (same geometry type and schema).

    ``source`` keeps its user ids when it stores them (they must be new to ``store``);
    otherwise its objects get ids after the stored ones.  Used by ``zarr-vectors append``
    (a foreign file is converted to a temporary store first).
    """
    reader = LevelReader(open_store(source, mode="r"), 0)
    gtype = reader.meta.geometry_type
    parts = read_parts(reader, sequential=type_spec(gtype).sequential)
    return _append(store, gtype, parts, ID in parts.object_attributes, timeout)
