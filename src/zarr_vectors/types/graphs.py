"""Graphs (``graph``): vertices joined by explicit edges (FORMAT.md §6–§8).

Contract
--------
* **Objects** are the connected components of the graph (edge direction ignored), numbered
  ``0, 1, ...`` by their smallest vertex index, unless the writer is given per-vertex
  ``vertex_object_ids``; then objects are numbered by first appearance and the user ids are kept in
  ``object_attributes/id`` (always, so a reader knows objects were user-defined).
* **Edges** are ``links`` rows (both ends in one chunk) or ``cross_chunk_links`` records (owned by
  the chunk of endpoint 0).  Undirected edges are stored canonically as ``[min, max]`` in the
  global vertex order below; directed edges keep ``[source, target]``.  Root key
  ``is_directed`` says which.
* **Simple graphs only**: a self-loop, or the same edge twice (for undirected graphs ``(a, b)``
  and ``(b, a)`` are the same edge), is **rejected** with a :class:`GeometryError` naming the
  rows — nothing is silently dropped, so every accepted edge and edge attribute round-trips.
  Deduplicate first if your edge list is messy, e.g. ``np.unique(np.sort(e, axis=1), axis=0)``.
* **Global vertex order**: objects in id order, each object's vertices in input order.  A full
  read returns vertices in exactly this order, so a graph whose components are contiguous in the
  input (the usual case) comes back in input order; otherwise vertex ``i`` of the result is the
  ``i``-th vertex of that order.  Edges come back sorted by ``(source, target)``.
* **Queries**: a box returns the vertices with ``min <= p < max`` in storage order (chunk by
  chunk) and every edge whose two ends are returned; ``include_boundary_edges=True`` also
  returns the edges with one end in the box, plus their outside vertices.  Object and group reads
  fetch only the chunks of those objects and return their vertices in global order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.columns import normalize_columns
from zarr_vectors.core.components import connected_components
from zarr_vectors.core.deprecation import rename_keywords, renamed_keywords, warn_renamed
from zarr_vectors.core.engine import Gathered, rows_as
from zarr_vectors.core.links.keys import first_appearance
from zarr_vectors.core.links.rows import GraphRows
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.select import Query
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, check_positions, write_store
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, no_boundary, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    attribute_selection,
    decode_columns,
    object_query,
    register_geometry_type,
    take_batch_args,
    write_options,
)
from zarr_vectors.types._objects import (
    UserIdMap,
    group_members_out,
    groups_table,
    output_ids,
)
from zarr_vectors.types._order import (
    INPUT_INDEX,
    ElementOrder,
    input_permutation,
    inverse_permutation,
    missing_order,
    visible,
    with_input_index,
)

__all__ = [
    "Graph",
    "check_edges",
    "connected_components",
    "graph_parts",
    "read_graph",
    "write_graph",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]
_GRAPH_TYPES = (GeometryTypeName.GRAPH, GeometryTypeName.SKELETON)


@dataclass(frozen=True)
class Graph:
    """Result of :func:`read_graph`: vertices, edges and their attributes.

    Examples
    --------
    >>> g = Graph(np.zeros((3, 2)), np.array([[0, 1]]), np.array([0, 0, 1]))
    >>> g.n_vertices, g.n_edges, g.object_ids.tolist()
    (3, 1, [0, 1])
    """

    positions: FloatArray
    """(N, D) vertex positions, physical units."""
    edges: IntArray
    """(E, 2) edges as indices into ``positions``; ``[min, max]`` when undirected."""
    vertex_object_ids: npt.NDArray[Any]
    """(N,) object of each vertex (user ids when given at write time, else component ids)."""
    directed: bool = False
    """Whether ``edges`` are ``[source, target]`` pairs."""
    attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-vertex attributes, aligned with ``positions``."""
    edge_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-edge attributes, aligned with ``edges``."""
    object_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-object attributes, aligned with :attr:`object_ids`."""
    groups: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Group name -> ids of the returned objects that belong to it."""
    group_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-group attributes, in group order."""

    @property
    def n_vertices(self) -> int:
        """Number of vertices N."""
        return len(self.positions)

    @property
    def n_edges(self) -> int:
        """Number of edges E."""
        return len(self.edges)

    @property
    def ndim(self) -> int:
        """Spatial dimensions D."""
        return int(self.positions.shape[1])

    @property
    def object_ids(self) -> npt.NDArray[Any]:
        """Distinct object ids, in order of first appearance in ``vertex_object_ids``."""
        return first_appearance(self.vertex_object_ids)

    @property
    def objects(self) -> npt.NDArray[Any]:
        """Deprecated name of :attr:`object_ids` (one id per object)."""
        warn_renamed("Graph.objects", "Graph.object_ids")
        return self.object_ids


# -- input checks ---------------------------------------------------------------------------


def check_edges(edges: npt.ArrayLike, n: int, what: str = "edges") -> IntArray:
    """Validate an (E, 2) integer edge list against ``n`` vertices.

    Raises
    ------
    InvalidInputError
        Wrong shape or dtype.
    GeometryError
        A vertex index outside ``0..n-1`` (the message names the row).

    Examples
    --------
    >>> check_edges([[0, 2]], 3).tolist()
    [[0, 2]]
    >>> check_edges([], 3).shape
    (0, 2)
    """
    arr = np.asarray(edges)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InvalidInputError(f"{what} must have shape (E, 2), got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{what} must be integers, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= n)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        col = int(np.argmax(bad[row]))
        raise GeometryError(
            f"{what} row {row}: vertex index {arr[row, col]} is out of range for {n} vertices"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def reject_duplicate_edges(edges: IntArray, keyed: IntArray, n: int, undirected: bool) -> None:
    """Raise :class:`GeometryError` naming two rows of ``keyed`` (canonical edges) that repeat."""
    key = keyed[:, 0] * max(n, 1) + keyed[:, 1]
    ranked = np.sort(key)
    dup = np.flatnonzero(ranked[1:] == ranked[:-1])
    if dup.size:
        i, j = np.flatnonzero(key == ranked[dup[0]])[:2].tolist()
        a, b = edges[i].tolist()
        kind = "undirected edge" if undirected else "edge"
        raise GeometryError(
            f"edges rows {i} and {j} are the same {kind} ({a}, {b}); graphs "
            "must be simple (no duplicate edges)"
        )


def _reject_self_loops(edges: IntArray) -> None:
    loops = np.flatnonzero(edges[:, 0] == edges[:, 1])
    if loops.size:
        r = int(loops[0])
        raise GeometryError(
            f"edges row {r} is a self-loop on vertex {edges[r, 0]}; graphs must "
            "be simple (no self-loops)"
        )


def _user_objects(
    vertex_object_ids: npt.ArrayLike, n: int
) -> tuple[IntArray, npt.NDArray[Any], IntArray]:
    """Dense ids by first appearance, user id of each dense id, and ascending-row permutation."""
    arr = np.asarray(vertex_object_ids)
    if arr.shape != (n,) or arr.dtype.kind not in "iu":
        raise InvalidInputError(
            f"vertex_object_ids must be {n} integers (one per vertex), got shape "
            f"{arr.shape} dtype {arr.dtype}"
        )
    distinct, first, inverse = np.unique(arr, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # dense id -> row of the ascending distinct ids
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank[inverse.reshape(n)], distinct[order], order.astype(np.int64)


def traversal_rank(vertex_object: IntArray) -> IntArray:
    """Position of each vertex in the global order (object id, then input order)."""
    n = len(vertex_object)
    if n == 0 or bool(np.all(vertex_object[1:] >= vertex_object[:-1])):
        return np.arange(n, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(vertex_object, kind="stable")] = np.arange(n, dtype=np.int64)
    return rank


def graph_parts(
    positions: Any,
    edges: Any,
    directed: bool,
    vertex_object_ids: Any,
    attributes: Mapping[str, Any] | None,
    edge_attributes: Mapping[str, Any] | None,
    object_attributes: Mapping[str, Any] | None,
    groups: Mapping[str, Any] | None,
    group_attributes: Mapping[str, Any] | None,
) -> GeometryParts:
    """Check ``write_graph`` arguments and return them as write-pipeline parts."""
    pos = check_positions(positions)
    n = len(pos)
    e = check_edges(edges, n)
    _reject_self_loops(e)
    if vertex_object_ids is None:
        obj, n_obj = connected_components(n, e)
        idmap, rows = UserIdMap(None), None
    else:
        obj, ids_dense, rows = _user_objects(vertex_object_ids, n)
        n_obj, idmap = len(ids_dense), UserIdMap(ids_dense)
    stored = e
    if not directed:
        rank = traversal_rank(obj)
        swap = rank[e[:, 0]] > rank[e[:, 1]]
        stored = np.where(swap[:, None], e[:, ::-1], e)
    reject_duplicate_edges(e, stored, n, not directed)
    obj_attrs = normalize_columns(object_attributes, n_obj, "object attribute")
    if "id" in obj_attrs:
        raise InvalidInputError(
            "object attribute 'id' is reserved; pass user ids as vertex_object_ids="
        )
    if rows is not None:
        obj_attrs = {k: c.take(rows) for k, c in obj_attrs.items()}
    obj_attrs.update(idmap.columns())
    return GeometryParts(
        positions=pos,
        vertex_object=obj,
        n_objects=n_obj,
        ordered=True,
        vertex_attributes=normalize_columns(attributes, n, "attribute"),
        links=np.ascontiguousarray(stored),
        link_attributes=normalize_columns(edge_attributes, len(e), "edge attribute"),
        object_attributes=obj_attrs,
        groups=groups_table(groups, group_attributes, idmap, n_obj),
    )


@renamed_keywords(object_ids="vertex_object_ids")
def write_graph(
    store: StoreLike,
    positions: npt.ArrayLike,
    edges: npt.ArrayLike,
    *,
    directed: bool = False,
    vertex_object_ids: npt.ArrayLike | None = None,
    attributes: Mapping[str, npt.ArrayLike] | None = None,
    edge_attributes: Mapping[str, npt.ArrayLike] | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    keep_order: bool = False,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Write a graph to a new ZVF store.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL or zarr store.
    positions
        (N, D) vertex positions, physical units; finite.
    edges
        (E, 2) integer vertex indices into ``positions``.  No self-loops, no duplicate edges
        (``(a, b)`` and ``(b, a)`` are duplicates unless ``directed``): both raise.
    directed
        Store edges as ``[source, target]``; otherwise they are stored as ``[min, max]``.
    vertex_object_ids
        (N,) integer object of each vertex; default: the connected components, numbered by
        their smallest vertex index.  ``object_ids=`` is its deprecated name.
    attributes
        Per-vertex values, (N, ...) arrays (strings become categories).
    edge_attributes
        Per-edge values, (E, ...) arrays aligned with ``edges``.
    object_attributes
        Per-object values: one row per component (component order), or with
        ``vertex_object_ids`` one
        row per distinct id in ascending id order (as in :func:`~zarr_vectors.write_points`).
    groups, group_attributes
        Named groups of objects ``{name: object ids}`` and per-group values.
    keep_order
        Also store the input position of every vertex and edge (reserved attribute
        ``_input_index``, smallest unsigned dtype) so that ``read_graph(order="input")`` gives
        back the input order.

    Other Parameters
    ----------------
    **store_kwargs
        Store keywords (``chunk_shape`` required, ``bin_shape``, ``compressor``,
        ``overwrite``, ...) or ``options=``: see :class:`~zarr_vectors.StoreKwargs`.

    Returns
    -------
    WriteSummary
        Counts and chunk grid of what was written.

    Raises
    ------
    InvalidInputError
        Bad shapes or dtypes, NaN/inf positions (naming the row), bad attribute lengths,
        ``keep_order`` with an attribute named ``_input_index``.
    GeometryError
        An edge index out of range, a self-loop or a duplicate edge (naming the rows).

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> pos = np.array([[1.0, 1.0], [15.0, 1.0], [15.0, 15.0], [30.0, 30.0]])
    >>> write_graph(store, pos, [[1, 0], [1, 2]], chunk_shape=(10, 10)).object_count
    2
    >>> g = read_graph(store)
    >>> g.edges.tolist(), g.vertex_object_ids.tolist()
    ([[0, 1], [1, 2]], [0, 0, 0, 1])
    >>> read_graph(store, bbox=([10, 0], [20, 20])).edges.tolist()
    [[0, 1]]
    >>> read_graph(store, bbox=([90, 90], [99, 99])).n_vertices
    0
    """
    parts = graph_parts(
        positions,
        edges,
        directed,
        vertex_object_ids,
        attributes,
        edge_attributes,
        object_attributes,
        groups,
        group_attributes,
    )
    if keep_order:
        parts = with_input_index(parts)
    opts = write_options(
        GeometryTypeName.GRAPH, parts, store_kwargs, {"is_directed": bool(directed)}
    )
    return write_store(store, GeometryTypeName.GRAPH, parts, opts)


# -- reading --------------------------------------------------------------------------------


def graph_result(reader: LevelReader, rows: GraphRows, directed: bool) -> Graph:
    """Build the typed :class:`Graph` from gathered rows."""
    objects = first_appearance(rows.vertex_object)
    obj_attrs = decode_columns(reader.object_attributes(objects))
    obj_attrs.pop("id", None)
    groups, group_attrs = group_members_out(reader, objects)
    return Graph(
        rows.positions,
        rows.edges,
        output_ids(reader, rows.vertex_object),
        directed,
        decode_columns(rows.attributes),
        decode_columns(rows.edge_attributes),
        obj_attrs,
        groups,
        group_attrs,
    )


def _is_directed(reader: LevelReader) -> bool:
    if type_spec(reader.meta.geometry_type).always_directed:
        return True
    return bool(reader.meta.type_metadata.get("is_directed", False))


@register_geometry_type
class GraphType(GeometryType[Graph]):
    """Plug-in for ``graph`` stores."""

    spec = type_spec(GeometryTypeName.GRAPH)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> Graph:
        """Build the :class:`Graph` of gathered vertices and edges."""
        return graph_result(reader, rows_as(rows, GraphRows, cls.spec), _is_directed(reader))

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        rename_keywords(kw, "Writer.append", {"object_ids": "vertex_object_ids"}, stacklevel=6)
        edges, vertex_ids, attrs, e_attrs, o_attrs, groups, g_attrs = take_batch_args(
            kw,
            "edges",
            "vertex_object_ids",
            "attributes",
            "edge_attributes",
            "object_attributes",
            "groups",
            "group_attributes",
        )
        if edges is None:
            raise InvalidInputError("graph batches need edges=")
        parts = graph_parts(
            data,
            edges,
            bool(meta.get("is_directed", False)),
            vertex_ids,
            attrs,
            e_attrs,
            o_attrs,
            groups,
            g_attrs,
        )
        return Batch(parts)


def read_graph(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    attributes: bool | str | Sequence[str] = True,
    edge_attributes: bool | str | Sequence[str] = True,
    include_boundary_edges: bool = False,
    where: WhereLike | None = None,
    sphere: SphereLike | None = None,
    limit: int | None = None,
    max_vertices: int | None = None,
    order: str | ElementOrder = ElementOrder.STORAGE,
    storage_options: Mapping[str, Any] | None = None,
) -> Graph:
    """Read vertices and edges from a ``graph`` (or ``skeleton``) store.

    Parameters
    ----------
    store
        Path, URL or zarr store.
    level
        Resolution level.
    bbox
        ``(min, max)``: the vertices with ``min <= p < max`` (storage order) and the edges
        between them.
    object_ids
        Objects to read, by id (user ids when the store has them); only their chunks are
        fetched.  Combined with ``bbox``, their vertices inside the box.
    group
        Read the objects of one group (name or index).
    attributes, edge_attributes
        True for all per-vertex (per-edge) attributes, False for none, or names.
    include_boundary_edges
        With ``bbox``: also return edges with one end in the box, and their outside vertices.
    where, sphere, limit, max_vertices
        Attribute conditions (``{"intensity": (0.5, None), "label": {3, 7}}``), a ball
        ``(center, radius)``, the first N items, a vertex budget choosing the finest level
        that fits; see :mod:`zarr_vectors.query.execute` and :mod:`zarr_vectors.query.lod`.
    order
        ``"storage"`` (default: as below) or ``"input"``: the selected vertices and edges in
        the writer's input order (needs a store written with ``keep_order=True``; undirected
        edges still ``[min, max]`` in the returned vertex order; ``limit`` counts in
        storage order).
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    Graph
        The selected vertices (global order for whole-object reads) and edges sorted by
        ``(source, target)``.

    Raises
    ------
    InvalidInputError
        The store is not a graph or skeleton, an unknown id, group or attribute, or
        ``order="input"`` on a store written without input order.

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> pos = np.array([[1.0, 1.0], [15.0, 1.0], [30.0, 30.0]])
    >>> _ = write_graph(store, pos, [[0, 1]], directed=True, chunk_shape=(10, 10),
    ...                 edge_attributes={"w": [0.5]})
    >>> g = read_graph(store, bbox=([0, 0], [10, 10]), include_boundary_edges=True)
    >>> g.positions.tolist(), g.edges.tolist(), g.edge_attributes["w"].tolist()
    ([[1.0, 1.0], [15.0, 1.0]], [[0, 1]], [0.5])
    >>> read_graph(store, object_ids=[1]).positions.tolist()
    [[30.0, 30.0]]
    """
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, budget_level(root, level, bbox, sphere, max_vertices))
    query = object_query(reader, _GRAPH_TYPES, bbox, object_ids, group, attributes)
    edge_names = attribute_selection(visible(reader.names(L.LINK_ATTRIBUTES)), edge_attributes)
    in_input = ElementOrder.parse(order) is ElementOrder.INPUT
    if in_input:  # read the input indexes too; _in_input_order sorts by them and drops them
        query, edge_names = _with_input_indexes(reader, query, edge_names)
    sel = selection(reader, where, sphere, limit)
    if sel:  # vertices and edges filtered like a box (zarr_vectors.query.execute)
        g = run(reader, GraphType, no_boundary(query, include_boundary_edges), sel, edge_names)
    else:
        g = GraphType.read_with(reader, query, edge_names, include_boundary_edges)
    return _in_input_order(g) if in_input else g


def _with_input_indexes(
    reader: LevelReader, query: Query, edge_names: tuple[str, ...]
) -> tuple[Query, tuple[str, ...]]:
    """``query`` and ``edge_names`` plus the input index, which the level must hold."""
    if INPUT_INDEX not in reader.names(L.ATTRIBUTES) or INPUT_INDEX not in reader.names(
        L.LINK_ATTRIBUTES
    ):
        raise missing_order("this graph store")
    query = replace(query, attributes=(*(query.attributes or ()), INPUT_INDEX))
    return query, (*edge_names, INPUT_INDEX)


def _in_input_order(g: Graph) -> Graph:
    """Reorder a result read with the input indexes to input order, dropping the indexes.

    Undirected edges are put back to ``[min, max]`` in the new vertex order; per-object
    attributes follow :attr:`Graph.object_ids`, whose order changes with the vertices'.
    """
    attrs, edge_attrs = dict(g.attributes), dict(g.edge_attributes)
    vperm = input_permutation(attrs.pop(INPUT_INDEX), "graph vertices")
    eperm = input_permutation(edge_attrs.pop(INPUT_INDEX), "graph edges")
    edges = inverse_permutation(vperm)[g.edges[eperm]].reshape(-1, 2)
    if not g.directed:
        edges = np.sort(edges, axis=1)
    out = replace(
        g,
        positions=g.positions[vperm],
        edges=edges,
        vertex_object_ids=g.vertex_object_ids[vperm],
        attributes={k: v[vperm] for k, v in attrs.items()},
        edge_attributes={k: v[eperm] for k, v in edge_attrs.items()},
    )
    before = g.object_ids
    ranked = np.argsort(before, kind="stable")
    moved = ranked[np.searchsorted(before[ranked], out.object_ids)]
    return replace(out, object_attributes={k: v[moved] for k, v in g.object_attributes.items()})
