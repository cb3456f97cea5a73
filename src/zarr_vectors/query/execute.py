"""Reads with ``where=``, ``sphere=`` and ``limit=``: prune, run the type's read, post-filter.

What each geometry type returns (every rule is "the plain read, filtered"):

* ``point_cloud``: the points with ``bbox`` ∧ ``sphere`` ∧ vertex conditions ∧ object
  conditions (on the point's object), in storage order (the order of a plain read).
* ``line``, ``polyline``, ``streamline``, ``skeleton``: whole objects that have at least one
  vertex satisfying ``bbox`` ∧ ``sphere`` ∧ every vertex condition (the same vertex), and
  whose object attributes satisfy the object conditions; the "touching" rule of boxes extended
  to the other conditions.  Objects come in ascending id order (``object_ids`` order when
  given).  ``clip=True`` cuts each path to its maximal runs of consecutive vertices inside
  ``bbox`` ∧ ``sphere`` (no vertex is interpolated on the surface; vertex conditions select,
  they do not cut), each run a path with its parent's id and object attributes.
* ``graph``, ``mesh``: the vertices satisfying ``bbox`` ∧ ``sphere`` ∧ vertex conditions of
  objects satisfying the object conditions, and the edges/faces whose vertices are all
  returned and which satisfy the link conditions; objects in ascending id order, vertices in
  traversal order (the order of a whole-object read).

``limit=N`` keeps the first N items of that order: points of a point cloud, objects of every
other type (before ``clip`` cuts them into pieces).  Chunks that cannot hold a match (shape
tests, statistics) are never read, and a limited read stops reading once N items match:
points are read chunk block by chunk block in ascending flat chunk order (the storage order),
objects block by block in output order, each block's chunks read once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.engine import PointRows
from zarr_vectors.core.ragged import unique_sorted
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.matching import VertexMask, column_rows, position_rows, vertex_mask
from zarr_vectors.query.planning import ChunkPlan, plan_chunks
from zarr_vectors.query.predicates import (
    Predicate,
    Scope,
    WhereLike,
    parse_where,
    resolve,
)
from zarr_vectors.query.shapes import Sphere, in_box, inside_runs, parse_sphere
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Topology
from zarr_vectors.spec.metadata import BoundingBox
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import Query, decode_columns, resolve_user_ids
from zarr_vectors.types._objects import group_members_out, output_ids

__all__ = [
    "KeptRows",
    "Selection",
    "SphereLike",
    "WhereLike",
    "kept_rows",
    "matching_objects",
    "no_boundary",
    "run",
    "selection",
]

R_co = TypeVar("R_co", covariant=True)


class ReadsLevel(Protocol[R_co]):
    """A geometry type class: its spec name and its read of one level."""

    @property
    def name(self) -> str:
        """Spec name of the type."""

    def read(self, reader: LevelReader, query: Query) -> R_co:
        """Run a plain query on one level."""

    def assemble(self, reader: LevelReader, query: Query, rows: Any) -> R_co:
        """Build the type's result from gathered rows."""


SphereLike = Sphere | tuple[Any, float]
"""``sphere=``: a :class:`~zarr_vectors.query.shapes.Sphere` or ``(center, radius)``."""

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

VERTEX_FILTERED = frozenset({Topology.GRAPH, Topology.SURFACE})
"""Topologies whose reads return vertices (and the links among them), not whole objects."""


@dataclass(frozen=True, kw_only=True)
class Selection:
    """The query parts beyond the plain read: predicate, sphere, limit."""

    predicate: Predicate = field(default_factory=Predicate)
    sphere: Sphere | None = None
    limit: int | None = None

    def __bool__(self) -> bool:
        return bool(self.predicate) or self.sphere is not None or self.limit is not None


def selection(
    reader: LevelReader,
    where: WhereLike | Predicate | None = None,
    sphere: Any = None,
    limit: int | None = None,
) -> Selection:
    """Validate ``where``, ``sphere`` and ``limit`` against a level."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | np.integer)):
        raise InvalidInputError(f"limit must be an integer >= 0, got {limit!r}")
    if limit is not None and limit < 0:
        raise InvalidInputError(f"limit must be >= 0, got {limit}")
    return Selection(
        predicate=resolve(parse_where(where), reader),
        sphere=None if sphere is None else parse_sphere(sphere, reader.layout.ndim),
        limit=None if limit is None else int(limit),
    )


class _PrunedReader(LevelReader):
    """A level reader whose chunk lookups skip chunks a plan ruled out."""

    def __init__(self, base: LevelReader, allowed: BoolArray) -> None:
        # share the open level, its caches and handles: only chunks() changes
        self.__dict__.update(base.__dict__)
        self._allowed = allowed

    def chunks(self, bbox: BoundingBox | None = None) -> IntArray:
        """Flat indices of non-empty chunks the plan allows (touching ``bbox``)."""
        flats = super().chunks(bbox)
        return flats[self._allowed[flats]]


def _vertex_mask(
    pos: npt.NDArray[np.floating],
    attrs: Mapping[str, npt.NDArray[Any]],
    box: BoundingBox | None,
    sel: Selection,
) -> BoolArray:
    keep = np.ones(len(pos), dtype=bool) if box is None else in_box(pos, box)
    if sel.sphere is not None:
        keep &= sel.sphere.contains(pos)
    for clause in sel.predicate.of(Scope.VERTEX):
        keep &= clause.mask(attrs[clause.name])
    return keep


def _object_mask(reader: LevelReader, dense: IntArray, pred: Predicate) -> BoolArray:
    keep = np.ones(len(dense), dtype=bool)
    clauses = pred.of(Scope.OBJECT)
    if not clauses or len(dense) == 0:
        return keep
    cols = reader.object_attributes(dense)
    for clause in clauses:
        keep &= clause.mask(cols[clause.name].decoded())
    return keep


def _hits(
    reader: LevelReader, flats: IntArray, box: BoundingBox | None, sel: Selection
) -> IntArray:
    """Return the dense ids (sorted) of objects with a matching vertex in chunks ``flats``.

    A matching vertex satisfies the box, the sphere and every vertex condition.
    """
    vertex_only = replace(sel, predicate=Predicate(sel.predicate.of(Scope.VERTEX)))
    kept = kept_rows(reader, flats, box, vertex_only, objects=True)
    if kept.objects is None or len(kept.rows) == 0:
        return np.zeros(0, dtype=np.int64)
    return unique_sorted(kept.objects[kept.rows])


def _present(reader: LevelReader) -> IntArray:
    """Dense ids of the level's objects in id order (coarse levels keep only some)."""
    ids = np.arange(reader.n_objects, dtype=np.int64)
    if reader.level_meta.level > 0:
        ids = ids[np.diff(reader.object_offsets) > 0]
    return ids


def _first_matching(reader: LevelReader, query: Query, sel: Selection, plan: ChunkPlan) -> IntArray:
    """Return the first ``sel.limit`` matching objects in output order, reading few chunks.

    Objects are taken in blocks (``limit`` objects, then doubling) in output order; a block's
    candidate chunks not read yet are read, and its objects with a hit so far match (every
    chunk that could hold a hit of theirs has then been read).  Reading stops once ``limit``
    objects match.
    """
    limit = cast(int, sel.limit)
    order = _present(reader) if query.object_ids is None else query.object_ids
    allowed = plan.allowed(reader.layout.n_chunks)
    done = np.zeros(reader.layout.n_chunks, dtype=bool)
    hits = np.zeros(0, dtype=np.int64)
    found: list[IntArray] = [np.zeros(0, dtype=np.int64)]
    n_found, at, step = 0, 0, max(limit, 1)
    while n_found < limit and at < len(order):
        block = order[at : at + step]
        at, step = at + step, 2 * step
        block = block[_object_mask(reader, block, sel.predicate)]
        chunks = np.unique(reader.locate_objects(block).chunks) if len(block) else block
        new = chunks[allowed[chunks] & ~done[chunks]]
        if len(new):
            done[new] = True
            hits = np.union1d(hits, _hits(reader, new, query.bbox, sel))
        matched = block[np.isin(block, hits)]
        found.append(matched)
        n_found += len(matched)
    return np.concatenate(found)[:limit]


def matching_objects(
    reader: LevelReader, query: Query, sel: Selection, plan: ChunkPlan | None = None
) -> IntArray:
    """Dense ids of objects with a vertex satisfying shape and vertex conditions.

    With ``sel.limit`` the first ``limit`` of them in output order, found by reading chunks
    only until that many match (see :func:`_first_matching`).
    """
    spatial = query.bbox is not None or sel.sphere is not None or sel.predicate.of(Scope.VERTEX)
    if spatial:
        plan = plan or plan_chunks(reader, query.bbox, sel.sphere, sel.predicate)
        if sel.limit is not None:
            return _first_matching(reader, query, sel, plan)
        flats = plan.candidates
        if query.object_ids is not None and len(flats):
            flats = np.intersect1d(flats, reader.gather_objects(query.object_ids).chunks)
        ids = _hits(reader, flats, query.bbox, sel)
    else:
        ids = _present(reader)
    if query.object_ids is not None:
        ids = query.object_ids[np.isin(query.object_ids, ids)]
    ids = ids[_object_mask(reader, ids, sel.predicate)]
    return ids if sel.limit is None else ids[: sel.limit]


def _chunk_blocks(
    reader: LevelReader, candidates: IntArray, limit: int | None
) -> Iterator[IntArray]:
    """Consecutive blocks of ``candidates`` (ascending) to read until ``limit`` points match.

    The first block is the shortest prefix holding ``limit`` vertices (enough when every
    vertex matches); each further block doubles the chunks read so far.
    """
    if limit is None:
        yield candidates
        return
    cum = np.cumsum(reader.vertex_counts[candidates])
    end = 0 if limit == 0 else int(np.searchsorted(cum, limit)) + 1
    start = 0
    while True:
        end = min(end, len(candidates))
        yield candidates[start:end]
        if end >= len(candidates):
            return
        start, end = end, 2 * end


def _point_rows(reader: LevelReader, got: Any, sel: Selection) -> IntArray:
    """Rows of a point read satisfying the vertex and object conditions (and sphere)."""
    keep = _vertex_mask(got.positions, got.attributes, None, sel)
    if sel.predicate.of(Scope.OBJECT) and got.vertex_object_ids is not None and keep.any():
        users, inverse = np.unique(got.vertex_object_ids, return_inverse=True)
        dense = resolve_user_ids(reader, users)
        keep &= _object_mask(reader, dense, sel.predicate)[inverse.ravel()]
    return np.flatnonzero(keep)


@dataclass(frozen=True)
class KeptRows:
    """The rows of some chunks a point query keeps."""

    rows: IntArray
    """Kept rows (ascending) of the chunks' concatenated rows."""
    positions: npt.NDArray[np.floating] | None
    """Their positions, when the shape test decoded them."""
    objects: IntArray | None
    """Dense object of every row of the chunks (not only the kept ones), when asked for."""
    mask: VertexMask | None = None
    """The vertex conditions' mask and the values it captured, when there were any."""


def kept_rows(
    reader: LevelReader,
    flats: IntArray,
    box: BoundingBox | None,
    sel: Selection,
    objects: bool = False,
    capture: frozenset[str] = frozenset(),
) -> KeptRows:
    """Rows of chunks ``flats`` satisfying vertex and object conditions, box and sphere.

    Conditions first, on the stored columns chunk by chunk (:func:`vertex_mask`, keeping the
    values of the attributes in ``capture``), then the positions of the rows they keep only;
    ``objects``: also return every row's object.
    """
    n = int(reader.vertex_counts[flats].sum())
    vertex = sel.predicate.of(Scope.VERTEX)
    mask = vertex_mask(reader, flats, vertex, capture) if vertex and n else None
    keep = None if mask is None else mask.keep
    obj_clauses = sel.predicate.of(Scope.OBJECT)
    obj = reader.vertex_object_ids(flats) if (objects or obj_clauses) and n else None
    if obj is not None and obj_clauses:
        keep = np.ones(n, dtype=bool) if keep is None else keep
        ids, inverse = np.unique(obj[keep], return_inverse=True)
        keep[keep] = _object_mask(reader, ids.astype(np.int64), sel.predicate)[inverse.ravel()]
    rows = np.arange(n, dtype=np.int64) if keep is None else np.flatnonzero(keep)
    pos = None
    if (box is not None or sel.sphere is not None) and len(rows):
        pos = position_rows(reader, flats, rows)
        inside = np.ones(len(rows), dtype=bool) if box is None else in_box(pos, box)
        if sel.sphere is not None:
            inside &= sel.sphere.contains(pos)
        rows, pos = rows[inside], pos[inside]
    if objects and obj is None:
        obj = np.zeros(0, dtype=np.int64)
    return KeptRows(rows, pos, obj, mask)


def _point_block(
    reader: LevelReader,
    cls: ReadsLevel[Any],
    query: Query,
    sel: Selection,
    block: IntArray,
    wanted: Sequence[str],
) -> Any:
    """Read chunks ``block``; return the read restricted to the rows satisfying the query.

    Conditions are evaluated on the stored columns first; positions and the returned
    attributes are decoded for the kept rows only (categories resolved to strings).
    """
    has_objects = reader.has(L.OBJECT_OFFSETS)
    kept = kept_rows(reader, block, query.bbox, sel, has_objects, frozenset(wanted))
    rows = kept.rows
    if len(rows) == 0:  # nothing kept: the empty read of no chunk (dtypes, categories)
        none = _PrunedReader(reader, np.zeros(reader.layout.n_chunks, dtype=bool))
        return cls.read(none, replace(query, bbox=None, object_ids=None, attributes=tuple(wanted)))
    pos = kept.positions if kept.positions is not None else position_rows(reader, block, rows)
    attrs = {name: column_rows(reader, name, block, rows, kept.mask) for name in wanted}
    obj = None if kept.objects is None else kept.objects[rows]
    return cls.assemble(
        reader, replace(query, attributes=tuple(wanted)), PointRows(pos, obj, attrs)
    )


def _kept(got: Any, rows: IntArray, attributes: Mapping[str, npt.NDArray[Any]]) -> Any:
    """Return a point read restricted to ``rows`` (``attributes`` are restricted already)."""
    ids = None if got.vertex_object_ids is None else got.vertex_object_ids[rows]
    return replace(got, positions=got.positions[rows], attributes=attributes, vertex_object_ids=ids)


def _points(reader: LevelReader, cls: ReadsLevel[R_co], query: Query, sel: Selection) -> R_co:
    wanted = query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))
    parts: list[Any] = []
    if query.object_ids is not None:
        extra = tuple(c.name for c in sel.predicate.of(Scope.VERTEX) if c.name not in wanted)
        got: Any = cls.read(reader, replace(query, attributes=wanted + tuple(dict.fromkeys(extra))))
        rows = _point_rows(reader, got, sel)
        parts.append(_kept(got, rows, {k: got.attributes[k][rows] for k in wanted}))
    else:
        plan = plan_chunks(reader, query.bbox, sel.sphere, sel.predicate)
        total = 0
        for block in _chunk_blocks(reader, plan.candidates, sel.limit):
            parts.append(_point_block(reader, cls, query, sel, block, wanted))
            total += len(parts[-1].positions)
            if sel.limit is not None and total >= sel.limit:
                break
    return cast(R_co, _merge_points(reader, parts, wanted, sel.limit))


def _merge_points(
    reader: LevelReader, parts: Sequence[Any], wanted: Sequence[str], limit: int | None
) -> Any:
    """Return one point result from block reads restricted to their kept rows.

    Blocks in order, ``limit`` applied; per-object fields describe the kept points' objects.
    """
    first = parts[0]
    pos = np.concatenate([g.positions for g in parts])
    n = len(pos) if limit is None else min(limit, len(pos))
    changes: dict[str, Any] = {
        "positions": pos[:n],
        "attributes": {k: np.concatenate([g.attributes[k] for g in parts])[:n] for k in wanted},
    }
    if first.vertex_object_ids is not None:
        users = np.concatenate([g.vertex_object_ids for g in parts])[:n]
        dense = np.unique(resolve_user_ids(reader, np.unique(users))) if n else users[:0]
        obj_attrs = decode_columns(reader.object_attributes(dense.astype(np.int64)))
        obj_attrs.pop("id", None)  # the user ids: returned as ``object_ids``
        groups, group_attrs = group_members_out(reader, dense.astype(np.int64))
        changes.update(
            vertex_object_ids=users,
            object_ids=output_ids(reader, dense.astype(np.int64)),
            object_attributes=obj_attrs,
            groups=groups,
            group_attributes=group_attrs,
        )
    return replace(first, **changes)


def run(
    reader: LevelReader,
    cls: ReadsLevel[R_co],
    query: Query,
    sel: Selection,
    link_attributes: Sequence[str] | None = None,
) -> R_co:
    """Run ``query`` with ``sel`` on one level through ``cls``'s read (see module docs).

    ``link_attributes``: edge/face attributes to return (graphs, meshes; None = all).
    """
    if not sel:
        return cls.read(reader, query)
    topology = type_spec(cls.name).topology  # read_graph on a skeleton store filters as a graph
    if topology is Topology.NONE:
        return _points(reader, cls, query, sel)
    if reader.n_objects == 0 and not reader.has(L.OBJECT_OFFSETS):
        raise InvalidInputError("this store has no object index; where= cannot select objects")
    with reader.caching():
        ids = matching_objects(reader, query, sel)
        if topology not in VERTEX_FILTERED:
            if query.clip and sel.sphere is not None:
                whole = cls.read(reader, replace(query, object_ids=ids, bbox=None, clip=False))
                return cast(R_co, _clip_paths(whole, query.bbox, sel.sphere))
            return cls.read(
                reader, replace(query, object_ids=ids, bbox=query.bbox if query.clip else None)
            )
        wanted = (
            query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))
        )
        extra = tuple(c.name for c in sel.predicate.of(Scope.VERTEX) if c.name not in wanted)
        full = replace(query, object_ids=ids, bbox=None, attributes=wanted + extra)
        got = cls.read(reader, full)
    links = (
        tuple(reader.names(L.LINK_ATTRIBUTES))
        if link_attributes is None
        else tuple(link_attributes)
    )
    return cast(R_co, _filter_linked(reader, got, query.bbox, sel, wanted, links))


def _clip_paths(got: Any, box: BoundingBox | None, sphere: Sphere) -> Any:
    """Cut whole paths to their runs of vertices in ``sphere`` (and ``box``), as box clips do."""
    inside = sphere.contains(got.positions)
    if box is not None:
        inside &= in_box(got.positions, box)
    rows, offsets, owner = inside_runs(got.offsets, inside)
    return replace(
        got,
        positions=got.positions[rows],
        offsets=offsets,
        object_ids=got.object_ids[owner],
        attributes={k: v[rows] for k, v in got.attributes.items()},
        object_attributes={k: v[owner] for k, v in got.object_attributes.items()},
    )


def no_boundary(query: Query, include_boundary: bool) -> Query:
    """Return ``query``; refuse ``include_boundary_*`` with where/sphere/limit (box reads only)."""
    if include_boundary:
        raise InvalidInputError(
            "include_boundary_edges/faces applies to plain box reads, not with where=, "
            "sphere= or limit="
        )
    return query


def _link_view(got: Any) -> tuple[str, str, str]:
    """Field names (positions, links, link attributes) of a graph or mesh result."""
    if hasattr(got, "edges"):
        return "positions", "edges", "edge_attributes"
    return "vertices", "faces", "face_attributes"


def _filter_linked(
    reader: LevelReader,
    got: Any,
    box: BoundingBox | None,
    sel: Selection,
    wanted: Sequence[str],
    links: Sequence[str],
) -> Any:
    pos_f, link_f, lattr_f = _link_view(got)
    pos = getattr(got, pos_f)
    keep = _vertex_mask(pos, got.attributes, box, sel)
    new_index = np.cumsum(keep) - 1
    link_rows = getattr(got, link_f)
    lattrs = getattr(got, lattr_f)
    keep_l = keep[link_rows].all(axis=1) if len(link_rows) else np.zeros(0, dtype=bool)
    for clause in sel.predicate.of(Scope.LINK):
        keep_l &= clause.mask(lattrs[clause.name])
    rows = np.flatnonzero(keep)
    lrows = np.flatnonzero(keep_l)
    changes: dict[str, Any] = {
        pos_f: pos[rows],
        link_f: new_index[link_rows[lrows]].astype(link_rows.dtype).reshape(-1, link_rows.shape[1]),
        lattr_f: {k: lattrs[k][lrows] for k in links},
        "vertex_object_ids": got.vertex_object_ids[rows],
        "attributes": {k: got.attributes[k][rows] for k in wanted},
    }
    changes.update(_objects_after(got, rows, lrows, keep_l, link_f))
    return replace(got, **changes)


def _objects_after(
    got: Any, rows: IntArray, lrows: IntArray, keep_l: BoolArray, link_f: str
) -> dict[str, Any]:
    """Per-object fields of a graph or mesh result restricted to objects still present."""
    graph = hasattr(got, "edges")
    before = _first_appearance(got.vertex_object_ids) if graph else np.asarray(got.object_ids)
    after_ids = got.vertex_object_ids[rows]
    present = np.isin(before, after_ids)
    out: dict[str, Any] = {
        "object_attributes": {k: v[present] for k, v in got.object_attributes.items()},
        "groups": {k: v[np.isin(v, after_ids)] for k, v in got.groups.items()},
    }
    if not hasattr(got, "edges"):  # Meshes: per-object offsets of vertices and faces
        owner = np.repeat(np.arange(len(before)), np.diff(got.offsets))[rows]
        face_owner = np.repeat(np.arange(len(before)), np.diff(got.face_offsets))[lrows]
        kept = np.flatnonzero(present)
        out["object_ids"] = before[present]
        out["offsets"] = _offsets(np.searchsorted(kept, owner), len(kept))
        out["face_offsets"] = _offsets(np.searchsorted(kept, face_owner), len(kept))
    return out


def _offsets(owner: IntArray, n: int) -> IntArray:
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=off[1:])
    return off


def _first_appearance(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    if len(values) == 0:
        return values[:0]
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]
