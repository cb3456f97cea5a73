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

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import count
from typing import Any, Generic, Literal, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column, normalize_columns
from zarr_vectors.core.components import connected_components
from zarr_vectors.core.deprecation import rename_keywords, renamed_keywords, warn_renamed
from zarr_vectors.core.io import CompressorSpec, decode_threads
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import concat_ranges, offsets_from_counts, sort_keys
from zarr_vectors.core.reader import (
    BBoxLike,
    LevelReader,
    ObjectRanges,
    RowBlock,
    check_link_rows,
    parse_bbox,
)
from zarr_vectors.core.scratch import SCRATCH, Lease
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import WriteSummary, check_positions, write_store
from zarr_vectors.errors import CorruptPayloadError, GeometryError, InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, no_boundary, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.metadata import BoundingBox
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    Query,
    attribute_selection,
    decode_columns,
    register_geometry_type,
    resolve_user_ids,
    take_batch_args,
    user_ids,
    write_options,
)
from zarr_vectors.types._objects import (
    ObjectVertices,
    UserIdMap,
    group_members_out,
    groups_table,
    in_box,
    object_vertices,
    output_ids,
    select_objects,
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

__all__ = ["Graph", "check_edges", "connected_components", "read_graph", "write_graph"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]
_GRAPH_TYPES = (GeometryTypeName.GRAPH, GeometryTypeName.SKELETON)
_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


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


def sorted_unique(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Sorted distinct values, by sorting (numpy 2.4's hashing ``np.unique`` is much slower).

    Examples
    --------
    >>> sorted_unique(np.array([3, 1, 3])).tolist()
    [1, 3]
    """
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def first_appearance(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Distinct values in order of first appearance.

    Examples
    --------
    >>> first_appearance(np.array([5, 2, 5, 7, 2])).tolist()
    [5, 2, 7]
    """
    if values.size == 0:
        return values.copy()
    if bool(np.all(values[1:] >= values[:-1])):  # sorted: no sort
        return values[np.concatenate(([True], values[1:] != values[:-1]))]
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
    return ranked[starts][np.argsort(order[starts])]


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


def _graph_parts(
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
    chunk_shape: Sequence[float],
    bin_shape: Sequence[float] | None = None,
    bounds: BBoxLike | None = None,
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    compressor: CompressorSpec = "default",
    shards: Sequence[int] | None = None,
    frame_bytes: int | Literal["auto"] | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
    coordinate_system: str = "unknown",
    axis_units: str | Sequence[str] | None = None,
    axis_names: Sequence[str] | None = None,
    source_description: str | None = None,
    notes: str | None = None,
    custom_metadata: Mapping[str, Any] | None = None,
    keep_order: bool = False,
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
    chunk_shape, bin_shape
        Chunk and level-0 bin extent per axis, same units as ``positions``.
    bounds, zarr_format, overwrite, compressor, shards, storage_options
        As in :func:`~zarr_vectors.write_points`.
    coordinate_system, axis_units, axis_names, source_description, notes, custom_metadata
        Root metadata (FORMAT.md §3).
    keep_order
        Also store the input position of every vertex and edge (reserved attribute
        ``_input_index``, smallest unsigned dtype) so that ``read_graph(order="input")`` gives
        back the input order.

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
    parts = _graph_parts(
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
    opts = write_options(GeometryTypeName.GRAPH, parts, locals(), {"is_directed": bool(directed)})
    return write_store(store, GeometryTypeName.GRAPH, parts, opts)


# -- reading --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphRows:
    """Vertices and edges gathered from one level (shared by graphs and skeletons)."""

    positions: FloatArray
    """(N, D) returned vertices."""
    vertex_object: IntArray
    """(N,) dense object id of each vertex."""
    attributes: dict[str, Column]
    """Per-vertex attributes."""
    edges: IntArray
    """(E, 2) edges as indices into ``positions``, in storage orientation, sorted by
    ``(source, target)``."""
    edge_attributes: dict[str, Column]
    """Per-edge attributes."""
    offsets: IntArray | None = None
    """CSR offsets per requested object when vertices are whole objects in order, else None."""

    def take(self, keep: npt.NDArray[np.bool_], edge_keep: npt.NDArray[np.bool_]) -> GraphRows:
        """Restrict to vertices ``keep`` and edges ``edge_keep`` (whose ends must be kept)."""
        new = np.cumsum(keep) - 1
        rows, erows = np.flatnonzero(keep), np.flatnonzero(edge_keep)
        return GraphRows(
            take_rows(self.positions, rows),
            self.vertex_object[rows],
            {k: take_column(c, rows) for k, c in self.attributes.items()},
            np.take(new, take_rows(self.edges, erows)),
            {k: take_column(c, erows) for k, c in self.edge_attributes.items()},
        )

    def restrict(self, inside: npt.NDArray[np.bool_], boundary: bool) -> GraphRows:
        """Keep vertices ``inside`` and edges between them (or, with ``boundary``, touching them)."""
        ends = np.take(inside, self.edges)
        edge_keep = (ends[:, 0] | ends[:, 1]) if boundary else (ends[:, 0] & ends[:, 1])
        keep = inside.copy()
        if boundary:
            keep[take_rows(self.edges, np.flatnonzero(edge_keep)).ravel()] = True
        return self.take(keep, edge_keep)


@dataclass(frozen=True)
class _KeySpace:
    """Vertex keys ``key = base[slot[chunk]] + row`` for the rows of some chunks.

    :meth:`of` numbers every stored vertex of a level (``slot`` is the identity);
    :meth:`fetched` numbers only the rows of some chunks, by their concatenation (``RowBlock``
    order), so keys are compact row indices and rows of other chunks have no key (-1).
    """

    base: IntArray
    """(n_slots + 1,) first key of each slot's rows, and the number of keys."""
    counts: IntArray
    """Rows of every chunk of the level."""
    slot: IntArray | None = None
    """Slot of every chunk of the level, -1 outside the space; None: the chunk itself."""

    @classmethod
    def of(cls, reader: LevelReader) -> _KeySpace:
        counts = reader.vertex_counts
        return cls(offsets_from_counts(counts), counts)

    @classmethod
    def fetched(cls, reader: LevelReader, flats: IntArray) -> _KeySpace:
        """Keys ``0..n-1`` for the rows of chunks ``flats`` (ascending), in concatenation order."""
        counts = reader.vertex_counts
        slot = np.full(len(counts), -1, dtype=np.int64)
        slot[flats] = np.arange(len(flats), dtype=np.int64)
        return cls(offsets_from_counts(counts[flats]), counts, slot)

    @property
    def size(self) -> int:
        """Number of keys."""
        return int(self.base[-1])

    def keys_of(self, flats: IntArray) -> IntArray:
        """Keys of every row of ``flats`` (level space), in their concatenation order."""
        return concat_ranges(self.base[flats], self.counts[flats])

    def flat_of(self, keys: IntArray) -> IntArray:
        """Chunk (flat index) holding each key (level space)."""
        return (np.searchsorted(self.base, keys, side="right") - 1).astype(np.int64)

    def start(self, flats: IntArray) -> IntArray:
        """First key of each chunk of ``flats``; -1 for chunks outside the space."""
        if self.slot is None:
            return self.base[flats]
        s = self.slot[flats]
        return np.where(s >= 0, self.base[s], -1)

    def local_keys(self, flats: IntArray, block: RowBlock) -> IntArray:
        """``links`` rows of chunks ``flats`` (inside the space) as keys, checking they exist."""
        rows = block.values if block.values.dtype.kind == "i" else block.values.astype(np.int64)
        if rows.shape[1] != 2:
            raise CorruptPayloadError(f"{L.LINKS} rows have width {rows.shape[1]}, expected 2")
        check_link_rows(rows, block.offsets, self.counts[flats], L.LINKS)
        keys = rows.astype(np.int64)
        keys += np.repeat(self.start(flats), np.diff(block.offsets))[:, None]
        return keys

    def cross_keys(self, reader: LevelReader, cross: npt.NDArray[Any]) -> IntArray:
        """``cross_chunk_links`` records as keys (-1: endpoint outside the space), checked."""
        d = reader.layout.ndim
        if cross.shape[1] != 2 * (d + 1):
            raise CorruptPayloadError(
                f"{L.CROSS_CHUNK_LINKS} rows have width {cross.shape[1]}, "
                f"expected {2 * (d + 1)} for edges"
            )
        cols = np.ascontiguousarray(cross.T, dtype=np.int64)  # one pass, then contiguous columns
        out = np.empty((2, len(cross)), dtype=np.int64)
        for j in range(2):
            flat = _flat_chunks(reader, cols[j * (d + 1) : j * (d + 1) + d].T)
            row = cols[j * (d + 1) + d]
            if (row.view(np.uint64) >= self.counts[flat].view(np.uint64)).any():  # -1 wraps: big
                raise CorruptPayloadError(
                    f"{L.CROSS_CHUNK_LINKS}: a link names a row outside its chunk"
                )
            start = self.start(flat)
            np.add(start, row, out=out[j])
            out[j][start < 0] = -1
        return out.T  # (E, 2) view of the (2, E) keys


def _flat_chunks(reader: LevelReader, coords: IntArray) -> IntArray:
    """Flat index of chunk coordinates (C order), raising for a chunk outside the grid."""
    grid = reader.layout.grid
    flat = np.zeros(len(coords), dtype=np.int64)
    for axis, (lo, n) in enumerate(zip(grid.origin, grid.shape, strict=True)):
        idx = coords[:, axis] - int(lo)
        if (idx.view(np.uint64) >= int(n)).any():  # negative indices wrap: too big
            raise CorruptPayloadError(
                f"{L.CROSS_CHUNK_LINKS}: an endpoint chunk is outside the chunk grid"
            )
        flat *= int(n)
        flat += idx
    return flat


def edge_keys(
    reader: LevelReader, ks: _KeySpace, local: IntArray, cross: IntArray, names: Sequence[str]
) -> tuple[IntArray, dict[str, Column]]:
    """Edges stored in chunks ``local`` (``links``) and ``cross`` (``cross_chunk_links``) as keys."""
    pieces: list[IntArray] = []
    cols: dict[str, list[Column]] = {n: [] for n in names}
    if reader.has(L.LINKS):  # also with no chunks: empty columns keep their dtype
        block = reader.rows(L.LINKS, local)
        pieces.append(ks.local_keys(local, block))
        for n in names:
            cols[n].append(reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", local, block))
    if reader.has(L.CROSS_CHUNK_LINKS):
        cross_block = reader.rows(L.CROSS_CHUNK_LINKS, cross)
        pieces.append(ks.cross_keys(reader, cross_block.values))
        for n in names:
            path = f"{L.CROSS_CHUNK_LINK_ATTRIBUTES}/{n}"
            cols[n].append(reader.aligned_column(path, cross, cross_block))
    if len(pieces) == 1:  # no copy
        keys = pieces[0]
    else:
        keys = np.concatenate(pieces) if pieces else np.zeros((0, 2), dtype=np.int64)
    attrs = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    return keys, attrs


def _locate(keys: IntArray, wanted: IntArray) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """Index of each ``keys`` entry in ``wanted`` (unique keys) and whether it is there."""
    if wanted.size == 0:
        return np.zeros(keys.shape, dtype=np.int64), np.zeros(keys.shape, dtype=bool)
    lo, span = int(wanted.min()), int(wanted.max() - wanted.min()) + 1
    if span <= 16 * keys.size + 4 * wanted.size + 4096:  # O(span) table beats a binary search
        table = np.full(span + 1, -1, dtype=np.int64)  # the last entry answers keys outside
        table[wanted - lo] = np.arange(wanted.size, dtype=np.int64)
        rel = keys - lo
        rel[(rel < 0) | (rel >= span)] = span
        idx = np.take(table, rel)
        return np.maximum(idx, 0), idx >= 0
    order = np.argsort(wanted)
    ranked = wanted[order]
    pos = np.minimum(np.searchsorted(ranked, keys), len(ranked) - 1)
    return order[pos].astype(np.int64), ranked[pos] == keys


def _edges_between(
    keys: IntArray,
    attrs: dict[str, Column],
    vertex_keys: IntArray,
) -> tuple[IntArray, dict[str, Column]]:
    """Edges whose two ends are among ``vertex_keys``, as indices into it."""
    idx, hit = _locate(keys, vertex_keys)
    keep = np.flatnonzero(hit[:, 0] & hit[:, 1])  # cheaper than hit.all(axis=1)
    return take_rows(idx, keep), {k: take_column(c, keep) for k, c in attrs.items()}


# -- whole-object reads ---------------------------------------------------------------------


def take_rows(values: npt.NDArray[Any], index: IntArray) -> npt.NDArray[Any]:
    """Rows ``index`` of ``values`` (``np.take``: faster than ``values[index]`` for 2-D).

    Examples
    --------
    >>> take_rows(np.arange(6).reshape(3, 2), np.array([2, 0])).tolist()
    [[4, 5], [0, 1]]
    """
    return np.take(values, index, axis=0)


def take_column(col: Column, index: IntArray) -> Column:
    """Rows ``index`` of a column, categories kept (as :meth:`Column.take`, via ``np.take``)."""
    return Column(take_rows(col.values, index), col.categories)


@dataclass(frozen=True)
class WholeObjects:
    """Vertices of whole objects in global order, and the chunks they were stored in."""

    positions: FloatArray
    """(N, D) vertices of all objects, concatenated."""
    attributes: dict[str, Column]
    """Per-vertex attributes aligned with ``positions``."""
    offsets: IntArray
    """(n + 1,) CSR offsets of each requested object's vertices."""
    chunks: IntArray
    """Flat indices of the chunks fetched, ascending."""


_OVERLAP_ROWS = 1 << 16
"""Vertices from which a whole-object read fetches the links in a second thread."""


class LinkWork(Protocol[_T_co]):
    """The link half of a whole-object read (:func:`read_with_links`)."""

    def share(self) -> None:
        """Do what no other thread has taken; called by one or more threads at once."""

    def result(self) -> _T_co:
        """Return the result, once every :meth:`share` call has returned."""


@dataclass(frozen=True)
class Finished(Generic[_T]):
    """Link work done when it was started: nothing left to share."""

    value: _T

    def share(self) -> None:
        """Do nothing."""

    def result(self) -> _T:
        """Return the value."""
        return self.value


class Tasks:
    """Independent tasks, each run once by whichever thread claims it first.

    :meth:`run` claims tasks in order until none is left: a thread that comes late
    (the vertex thread of :func:`read_with_links`, once its own part is done) takes the
    ones the first has not reached.
    """

    def __init__(self, *tasks: Callable[[], None]) -> None:
        self._tasks = tasks
        self._next = count()  # next() on it is atomic: no task is claimed twice

    def run(self) -> None:
        """Run the tasks no other thread has claimed."""
        for k in self._next:
            if k >= len(self._tasks):
                return
            self._tasks[k]()


def read_with_links(
    reader: LevelReader,
    dense: IntArray,
    names: Sequence[str],
    links: Callable[[ObjectRanges, IntArray], LinkWork[_T]],
) -> tuple[WholeObjects, _T]:
    """Fetch objects ``dense`` whole (global order) and the link work ``links`` of them.

    ``links(where, index)`` starts the work: ``where`` locates the objects' rows
    (:meth:`LevelReader.locate_objects`) and ``index`` maps each row of their chunks to its
    returned position (-1: not returned).  Big reads start it in a second thread beside the
    vertex decoding (reads, decompression and numpy release the GIL, and the two touch
    different arrays); the calling thread, once its vertices are out, shares what is left
    of it.
    """
    with SCRATCH.lease() as lease:  # row maps live only until vertices and links are out
        located = reader.locate_objects(dense)

        def start() -> LinkWork[_T]:
            size = int(reader.vertex_counts[located.chunks].sum())
            return links(located, _row_index(located, size, lease))

        if located.n_rows < _OVERLAP_ROWS:
            got = object_vertices(reader, located.expand(lease), names)
            work = start()
            work.share()
            return _whole(got, located), work.result()
        started: Future[LinkWork[_T]] = Future()

        def linked() -> None:
            try:
                work = start()
            except BaseException as exc:  # the calling thread waits for the work: tell it
                started.set_exception(exc)
                raise
            started.set_result(work)
            work.share()

        with ThreadPoolExecutor(max_workers=2) as pool:
            future = pool.submit(linked)
            # big vertex decodes queue in parts behind the links: the worker that is
            # done with the links takes the parts that are left
            with decode_threads(8, pool):
                got = object_vertices(reader, located.expand(lease), names)
            work = started.result()
            work.share()
            future.result()
        return _whole(got, located), work.result()


def _whole(got: ObjectVertices, located: ObjectRanges) -> WholeObjects:
    return WholeObjects(got.positions, got.attributes, located.offsets, located.chunks)


def _row_index(where: ObjectRanges, size: int, lease: Lease | None = None) -> IntArray:
    """Map each of the ``size`` fetched rows to its returned position (-1: not returned).

    With a ``lease`` the map may be in its buffers.
    """
    starts, counts = where.ranges.starts, where.ranges.counts
    if 0 < 32 * len(starts) <= size:  # refs of 32+ rows (skeletons): sort the refs, not the rows
        order = np.argsort(starts, kind="stable")
        first, n = starts[order], counts[order]
        ends = first + n
        if first[0] == 0 and ends[-1] == size and np.array_equal(first[1:], ends[:-1]):
            # the refs tile every row (full reads): one sequential pass instead of a scatter
            out = None if lease is None else lease.array(size, np.int64)
            return concat_ranges(offsets_from_counts(counts)[:-1][order], n, out)
    index = np.full(size, -1, dtype=np.int64)
    index[where.expand().rows] = np.arange(where.n_rows, dtype=np.int64)
    return index


@dataclass(frozen=True)
class LinkPiece:
    """Edges between returned vertices, as output indices, from one links array."""

    ends: IntArray
    """(2, E) endpoint 0 and endpoint 1 of each edge (``[min, max]`` or ``[source, target]``)."""
    attributes: dict[str, Column]
    """Edge attributes aligned with the edges."""

    def __len__(self) -> int:
        return int(self.ends.shape[1])

    @property
    def source(self) -> IntArray:
        """(E,) endpoint 0 of each edge."""
        src: IntArray = self.ends[0]
        return src

    @property
    def target(self) -> IntArray:
        """(E,) endpoint 1 of each edge."""
        tgt: IntArray = self.ends[1]
        return tgt


def _checked_link_rows(block: RowBlock, counts: IntArray) -> IntArray:
    """``links`` rows of some chunks, checked to name rows inside their chunk (``counts``)."""
    rows = block.values if block.values.dtype.kind == "i" else block.values.astype(np.int64)
    if rows.shape[1] != 2:
        raise CorruptPayloadError(f"{L.LINKS} rows have width {rows.shape[1]}, expected 2")
    check_link_rows(rows, block.offsets, counts, L.LINKS)
    return rows


_CHUNK_LINKS = 256
"""Mean links per chunk from which :func:`_mapped_links` maps the links chunk by chunk."""

_DECODE_EACH_ROWS = 8192
"""Mean rows per chunk from which skeleton links are decoded chunk by chunk, each just before
it is mapped (its rows still in cache); below it one read of every chunk's links costs less
than a read per chunk, whose fixed cost the few rows do not repay."""


def _mapped_links(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray
) -> Iterator[tuple[int, IntArray, IntArray]]:
    """Yield the ``links`` rows of chunks ``flats`` as returned positions, a batch at a time.

    A batch is its first link row and the positions of its two ends (``index`` of each row,
    -1: not returned), in buffers the next batch reuses: no (2, E) array of a million links.
    """
    rows = _checked_link_rows(block, reader.vertex_counts[flats])
    if not len(rows):
        return
    base = offsets_from_counts(reader.vertex_counts[flats])
    if len(rows) < _CHUNK_LINKS * len(flats):  # short chunks: one batch, vectorised
        ends = np.ascontiguousarray(rows.T, dtype=np.int64)
        ends += np.repeat(base[:-1], np.diff(block.offsets))
        # in place: take reads each key before writing its slot; keys are checked above,
        # so "clip" never clips
        np.take(index, ends, out=ends, mode="clip")
        yield 0, ends[0], ends[1]
        return
    # chunk by chunk: each gather reads one chunk's slice of ``index`` (cache resident) with
    # the stored local rows, no offset rows added.  The rows are first widened into their
    # buffer: np.take converting narrow or strided indices itself is slower
    buf = np.empty((2, int(np.diff(block.offsets).max())), dtype=np.int64)
    first, off = base.tolist(), block.offsets.tolist()
    for i in range(len(flats)):
        a, b = off[i], off[i + 1]
        if b > a:
            yield a, *_map_chunk_links(rows[a:b], index[first[i] : first[i + 1]], buf)


def _mapped_chunk_links(
    reader: LevelReader, flats: IntArray, index: IntArray
) -> Iterator[tuple[int, IntArray, IntArray]]:
    """:func:`_mapped_links` of long chunks, each decoded, checked and mapped in turn.

    The chunks' links are never decoded all at once (:meth:`LevelReader.chunk_rows`): each
    chunk's stay in cache from decoding to mapping.
    """
    counts = reader.vertex_counts[flats]
    first = offsets_from_counts(counts).tolist()
    buf = np.empty((2, 0), dtype=np.int64)
    a = 0
    for i, stored in reader.chunk_rows(L.LINKS, flats):
        block = RowBlock(stored, np.array([0, len(stored)], dtype=np.int64))
        rows = _checked_link_rows(block, counts[i : i + 1])
        if buf.shape[1] < len(rows):
            buf = np.empty((2, len(rows)), dtype=np.int64)
        yield a, *_map_chunk_links(rows, index[first[i] : first[i + 1]], buf)
        a += len(rows)


def _map_chunk_links(rows: IntArray, part: IntArray, buf: IntArray) -> tuple[IntArray, IntArray]:
    """Positions (``part`` of each local row) of the two ends of one chunk's checked links.

    The rows are first widened into ``buf``: np.take converting narrow or strided indices
    itself is slower (int32 indices especially).  The result views ``buf``.
    """
    n = len(rows)
    for j in (0, 1):
        slot = buf[j, :n]
        slot[...] = rows[:, j]
        np.take(part, slot, out=slot, mode="clip")  # rows checked: "clip" never clips
    return buf[0, :n], buf[1, :n]


def _returned_links(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray
) -> Iterator[tuple[IntArray | None, IntArray, IntArray]]:
    """:func:`_mapped_links` without the links that have an end not returned.

    Yields the link rows kept by each batch (None when the batch keeps all: every row of the
    chunks is returned, as in full reads) and the positions of their two ends.
    """
    return _returned(_mapped_links(reader, flats, block, index), index)


def _returned(
    batches: Iterator[tuple[int, IntArray, IntArray]], index: IntArray
) -> Iterator[tuple[IntArray | None, IntArray, IntArray]]:
    """Batches of mapped links without the links that have an end not returned."""
    every = not len(index) or bool(index.min() >= 0)
    for a, source, target in batches:
        if every:
            yield None, source, target
        else:
            keep = np.flatnonzero((source >= 0) & (target >= 0))
            yield keep + a, source[keep], target[keep]


def _links_among(ends: IntArray, attrs: dict[str, Column]) -> LinkPiece:
    """Keep the edges whose two ends are returned (``ends`` >= 0)."""
    if ends.size == 0 or ends.min() >= 0:  # every end returned (full reads): no copy
        return LinkPiece(ends, attrs)
    keep = np.flatnonzero((ends[0] >= 0) & (ends[1] >= 0))
    return LinkPiece(
        np.take(ends, keep, axis=1), {k: take_column(c, keep) for k, c in attrs.items()}
    )


def link_blocks(reader: LevelReader, flats: IntArray) -> dict[str, RowBlock]:
    """Return the ``links`` and ``cross_chunk_links`` rows of chunks ``flats`` (if stored)."""
    return {p: reader.rows(p, flats) for p in (L.LINKS, L.CROSS_CHUNK_LINKS) if reader.has(p)}


def cross_link_piece(
    reader: LevelReader, flats: IntArray, index: IntArray, names: Sequence[str], block: RowBlock
) -> LinkPiece:
    """Return the ``cross_chunk_links`` rows ``block`` of chunks ``flats`` as a piece.

    ``index`` maps each row of the chunks' concatenation to its returned position (-1: not
    returned), as in :func:`read_with_links`; links with an end not returned are left out.
    """
    keys = _KeySpace.fetched(reader, flats).cross_keys(reader, block.values)
    path = L.CROSS_CHUNK_LINK_ATTRIBUTES
    attrs = {n: reader.aligned_column(f"{path}/{n}", flats, block) for n in names}
    ends = np.take(index, keys.T, mode="clip")
    ends[keys.T < 0] = -1  # an endpoint in a chunk not fetched
    return _links_among(ends, attrs)


def local_link_parents(
    reader: LevelReader, flats: IntArray, index: IntArray, parents: IntArray
) -> int:
    """Set ``parents[child] = parent`` from the ``links`` rows of chunks ``flats``.

    ``[child, parent]`` rows map to returned positions through ``index`` (as in
    :func:`cross_link_piece`; links with an end not returned are skipped).  Returns the
    number of links set.  Big chunks are decoded, checked and mapped one at a time
    (:func:`_mapped_chunk_links`); smaller ones are read together, then mapped.
    """
    if int(reader.vertex_counts[flats].sum()) < _DECODE_EACH_ROWS * len(flats):
        batches = _mapped_links(reader, flats, reader.rows(L.LINKS, flats), index)
    else:
        batches = _mapped_chunk_links(reader, flats, index)
    done = 0
    for _, child, parent in _returned(batches, index):
        parents[child] = parent
        done += len(child)
    return done


def _local_link_keys(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray, bits: int, out: IntArray
) -> tuple[int, IntArray | None]:
    """Write the sort keys ``source << bits | target`` of the ``links`` rows ``block`` to ``out``.

    Links with an end not returned are skipped: returns the number of keys written and the
    link rows kept (None: all of them).
    """
    done = 0
    kept: list[IntArray] = []
    for keep, source, target in _returned_links(reader, flats, block, index):
        if keep is not None:
            kept.append(keep)
        part = out[done : done + len(source)]
        np.left_shift(source, bits, out=part)
        part |= target
        done += len(source)
    return done, np.concatenate(kept) if kept else None


def linked_edges(
    reader: LevelReader,
    flats: IntArray,
    index: IntArray,
    names: Sequence[str],
    n_vertices: int,
    fetched: Mapping[str, RowBlock] | None = None,
) -> tuple[IntArray, dict[str, Column]]:
    """Every stored edge between returned rows of chunks ``flats``, sorted, attributes along.

    ``index`` maps each row of the chunks' concatenation to its returned position (-1: not
    returned), as in :func:`read_with_links`; ``fetched`` holds link rows of ``flats``
    fetched already (:func:`link_blocks`).  Edges are (E, 2) returned positions (below
    ``n_vertices``) sorted by ``(source, target)``; each goes straight to its sort key.
    """
    fetched = fetched or {}
    # also with no chunks: empty columns keep their dtype
    blocks = {
        p: fetched[p] if p in fetched else reader.rows(p, flats)
        for p in (L.LINKS, L.CROSS_CHUNK_LINKS)
        if reader.has(p)
    }
    cross = None
    if L.CROSS_CHUNK_LINKS in blocks:
        cross = cross_link_piece(reader, flats, index, names, blocks[L.CROSS_CHUNK_LINKS])
    local = blocks.get(L.LINKS)
    bits = max(n_vertices - 1, 1).bit_length()
    key = np.empty((0 if local is None else len(local.values)) + len(cross or ()), np.int64)
    cols: dict[str, list[Column]] = {n: [] for n in names}
    done = 0
    if local is not None:
        done, keep = _local_link_keys(reader, flats, local, index, bits, key)
        for n in names:
            col = reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", flats, local)
            cols[n].append(col if keep is None else take_column(col, keep))
    if cross is not None:
        part = key[done : done + len(cross)]
        np.left_shift(cross.source, bits, out=part)
        part |= cross.target
        done += len(cross)
        for n in names:
            cols[n].append(cross.attributes[n])
    attrs = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    if done == 0:
        return np.zeros((0, 2), dtype=np.int64), attrs
    return _sorted_by_key(key[:done], bits, attrs)


def read_whole_objects(
    reader: LevelReader,
    dense: IntArray,
    names: Sequence[str],
    edge_names: Sequence[str],
    early: tuple[IntArray, Future[dict[str, RowBlock]]] | None = None,
) -> GraphRows:
    """Fetch objects ``dense`` whole (global order) and every edge between their vertices.

    ``early``: chunks whose link rows are being fetched already (:func:`link_blocks`), used
    when they are the chunks of ``dense``.
    """

    def edges(where: ObjectRanges, index: IntArray) -> Finished[tuple[IntArray, dict[str, Column]]]:
        fetched = None
        if early is not None and np.array_equal(early[0], where.chunks):
            fetched = early[1].result()
        return Finished(
            linked_edges(reader, where.chunks, index, edge_names, where.n_rows, fetched)
        )

    got, (edges_sorted, eattrs) = read_with_links(reader, dense, names, edges)
    obj = np.repeat(dense, np.diff(got.offsets))
    return GraphRows(got.positions, obj, got.attributes, edges_sorted, eattrs, got.offsets)


def _boundary_chunks(reader: LevelReader, flats: IntArray, inside: IntArray) -> IntArray:
    """Chunks that may own an edge leaving the box: those of every object touching it."""
    if user_ids(reader) is not None:  # user objects: an edge may join two objects, scan all
        return reader.chunks()
    touching = sorted_unique(reader.vertex_object_ids(flats)[inside])
    return sorted_unique(np.concatenate([flats, reader.gather_objects(touching).chunks]))


def _read_box(
    reader: LevelReader,
    box: BoundingBox,
    names: Sequence[str],
    edge_names: Sequence[str],
    boundary: bool,
) -> GraphRows:
    ks = _KeySpace.of(reader)
    f0 = reader.chunks(box)
    inside_rows = np.flatnonzero(in_box(reader.rows(L.VERTICES, f0).values, box))
    inside = ks.keys_of(f0)[inside_rows]
    cross = _boundary_chunks(reader, f0, inside_rows) if boundary else f0
    keys, attrs = edge_keys(reader, ks, f0, cross, edge_names)
    wanted = inside
    if boundary:
        on = np.isin(keys, inside)
        touch = np.flatnonzero(on[:, 0] | on[:, 1])
        keys, attrs = take_rows(keys, touch), {k: take_column(c, touch) for k, c in attrs.items()}
        wanted = sorted_unique(np.concatenate([inside, keys.ravel()]))
    flats = sorted_unique(ks.flat_of(wanted))
    rows = np.searchsorted(ks.keys_of(flats), wanted)
    edges, eattrs = _sorted_edges(*_edges_between(keys, attrs, wanted), len(wanted))
    got = GraphRows(
        take_rows(reader.rows(L.VERTICES, flats).values, rows),
        reader.vertex_object_ids(flats)[rows],
        {n: take_column(reader.column(f"{L.ATTRIBUTES}/{n}", flats), rows) for n in names},
        edges,
        eattrs,
    )
    return got.restrict(np.isin(wanted, inside), boundary)


def gather_graph(
    reader: LevelReader, query: Query, edge_names: Sequence[str], boundary: bool = False
) -> GraphRows:
    """Run a query on a graph or skeleton level and return the raw rows (edges sorted)."""
    names = query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))
    with reader.caching():
        if query.object_ids is None and query.bbox is not None:
            return _read_box(reader, query.bbox, names, edge_names, boundary)
        with ThreadPoolExecutor(max_workers=1) as pool:
            early = None
            if query.object_ids is None and query.bbox is None and _big(reader):
                # every chunk's links are needed: fetch them while the objects are located
                flats = reader.chunks()
                early = (flats, pool.submit(link_blocks, reader, flats))
            # a boundary edge may reach a named object lying wholly outside the box: keep all
            dense = first_appearance(
                select_objects(reader, replace(query, bbox=None) if boundary else query)
            )
            rows = read_whole_objects(reader, dense, names, edge_names, early)
    if query.bbox is not None:
        rows = rows.restrict(in_box(rows.positions, query.bbox), boundary)
    return rows


def _big(reader: LevelReader) -> bool:
    """Whether a full read is big enough to fetch links in a second thread (metadata read)."""
    big = int(reader.vertex_counts.sum()) >= _OVERLAP_ROWS
    if big:  # the node listing, before two threads want it
        reader.has(L.LINKS)
    return big


def effective_runs(key: IntArray) -> int:
    """Count the equal ascending runs that cost a merge sort as much as ``key``'s runs.

    ``2 ** H`` for ``H`` the entropy of the run lengths (1 when ``key`` is sorted): a few
    long runs plus many short ones (chunk-ordered local links, then cross-chunk links) count
    as few, so they merge (timsort, cheaper there) instead of being bucketed.

    Examples
    --------
    >>> effective_runs(np.array([1, 2, 3, 0, 1, 2]))
    2
    >>> effective_runs(np.arange(5))
    1
    """
    cuts = np.flatnonzero(key[1:] < key[:-1])
    if cuts.size == 0:
        return 1
    if 4 * cuts.size > len(key):  # mostly short runs: the count is as good
        return int(cuts.size) + 1
    lengths = np.diff(cuts, prepend=-1, append=len(key) - 1) / len(key)
    return max(2, round(float(2.0 ** -(lengths * np.log2(lengths)).sum())))


def _sorted_by_key(
    key: IntArray, bits: int, attrs: dict[str, Column], edges: IntArray | None = None
) -> tuple[IntArray, dict[str, Column]]:
    """Edges ``(key >> bits, key & mask)`` sorted by key (consumed), attributes along.

    ``edges``, when given, are the same edges unpacked: returned as they are when the keys are
    sorted already.
    """
    runs = effective_runs(key)
    if runs == 1 and edges is not None:
        return edges, attrs
    order: IntArray | None = None
    if runs > 1:
        key, order = sort_keys(key, bool(attrs), runs)
    out = np.empty((len(key), 2), dtype=np.int64)
    np.right_shift(key, bits, out=out[:, 0])
    np.bitwise_and(key, (1 << bits) - 1, out=out[:, 1])
    if order is None:
        return out, attrs
    return out, {k: take_column(c, order) for k, c in attrs.items()}


def _sorted_edges(
    edges: IntArray, attrs: dict[str, Column], n_vertices: int
) -> tuple[IntArray, dict[str, Column]]:
    """Edges sorted by ``(source, target)`` (indices below ``n_vertices``), attributes along."""
    if len(edges) == 0:
        return edges, attrs
    bits = max(n_vertices - 1, 1).bit_length()
    key = edges[:, 0] << bits
    key |= edges[:, 1]
    return _sorted_by_key(key, bits, attrs, edges)


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
class GraphType(GeometryType):
    """Plug-in for ``graph`` stores."""

    spec = type_spec(GeometryTypeName.GRAPH)

    @classmethod
    def read(cls, reader: LevelReader, query: Query) -> Graph:
        """Return the vertices and edges selected by ``query`` (all edge attributes)."""
        edge_names = visible(reader.names(L.LINK_ATTRIBUTES))
        return graph_result(reader, gather_graph(reader, query, edge_names), _is_directed(reader))

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
        parts = _graph_parts(
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


def object_query(
    reader: LevelReader,
    allowed: tuple[str, ...],
    bbox: BBoxLike | None,
    object_ids: npt.ArrayLike | None,
    group: str | int | None,
    attributes: bool | str | Sequence[str],
) -> Query:
    """Validate read arguments for a graph-like store and build the query."""
    if type_spec(reader.meta.geometry_type).family_name not in allowed:
        names = ", ".join(repr(str(a)) for a in allowed)
        raise InvalidInputError(
            f"store holds {str(reader.meta.geometry_type)!r}; this reader needs {names}"
        )
    ids = None
    if object_ids is not None:
        ids = resolve_user_ids(reader, object_ids)
    if group is not None:
        table = reader.groups
        if table is None:
            raise InvalidInputError("this store has no groups")
        members = table.members_of(group)
        ids = sorted_unique(members) if ids is None else ids[np.isin(ids, members)]
    return Query(
        bbox=None if bbox is None else parse_bbox(bbox, reader.layout.ndim),
        object_ids=ids,
        attributes=attribute_selection(visible(reader.names(L.ATTRIBUTES)), attributes),
    )


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
        rows = gather_graph(reader, query, edge_names, include_boundary_edges)
        g = graph_result(reader, rows, _is_directed(reader))
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
