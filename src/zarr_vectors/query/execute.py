"""Reads with ``where=``, ``sphere=`` and ``limit=``: prune, run the type's read, post-filter.

What each geometry type returns (every rule is "the plain read, filtered"):

* ``point_cloud``: the points with ``bbox`` ∧ ``sphere`` ∧ vertex conditions ∧ object
  conditions (on the point's object), in storage order (the order of a plain read).
* ``line``, ``polyline``, ``streamline``, ``skeleton``: whole objects that have at least one
  vertex satisfying ``bbox`` ∧ ``sphere`` ∧ every vertex condition (the same vertex), and
  whose object attributes satisfy the object conditions; the "touching" rule of boxes extended
  to the other conditions.  Objects come in ascending id order (``object_ids`` order when
  given); ``clip=True`` still cuts to ``bbox`` only.
* ``graph``, ``mesh``: the vertices satisfying ``bbox`` ∧ ``sphere`` ∧ vertex conditions of
  objects satisfying the object conditions, and the edges/faces whose vertices are all
  returned and which satisfy the link conditions; objects in ascending id order, vertices in
  traversal order (the order of a whole-object read).

``limit=N`` keeps the first N items of that order: points of a point cloud, objects of every
other type.  Chunks that cannot hold a match (shape tests, statistics) are never read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import unique_sorted
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.planning import ChunkPlan, plan_chunks
from zarr_vectors.query.predicates import Predicate, Scope, WhereLike, parse_where, resolve
from zarr_vectors.query.shapes import Sphere, in_box, parse_sphere
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Topology
from zarr_vectors.spec.metadata import BoundingBox
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import Query, resolve_user_ids

__all__ = [
    "Selection",
    "SphereLike",
    "WhereLike",
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


def matching_objects(
    reader: LevelReader, query: Query, sel: Selection, plan: ChunkPlan | None = None
) -> IntArray:
    """Dense ids of objects with a vertex satisfying shape and vertex conditions."""
    spatial = query.bbox is not None or sel.sphere is not None or sel.predicate.of(Scope.VERTEX)
    if spatial:
        plan = plan or plan_chunks(reader, query.bbox, sel.sphere, sel.predicate)
        flats = plan.candidates
        if query.object_ids is not None and len(flats):
            flats = np.intersect1d(flats, reader.gather_objects(query.object_ids).chunks)
        pos = reader.rows(L.VERTICES, flats).values
        names = {c.name for c in sel.predicate.of(Scope.VERTEX)}
        attrs = {n: reader.column(f"{L.ATTRIBUTES}/{n}", flats).decoded() for n in names}
        obj = reader.vertex_object_ids(flats)
        ids = unique_sorted(obj[_vertex_mask(pos, attrs, query.bbox, sel)])
    else:
        ids = np.arange(reader.n_objects, dtype=np.int64)
        if reader.level_meta.level > 0:  # coarse levels hold only the objects they kept
            ids = ids[np.diff(reader.object_offsets) > 0]
    if query.object_ids is not None:
        ids = query.object_ids[np.isin(query.object_ids, ids)]
    ids = ids[_object_mask(reader, ids, sel.predicate)]
    return ids if sel.limit is None else ids[: sel.limit]


def _points(reader: LevelReader, cls: ReadsLevel[R_co], query: Query, sel: Selection) -> R_co:
    pruned: LevelReader = reader
    if query.object_ids is None:
        plan = plan_chunks(reader, query.bbox, sel.sphere, sel.predicate)
        pruned = _PrunedReader(reader, plan.allowed(reader.layout.n_chunks))
    wanted = query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))
    extra = tuple(c.name for c in sel.predicate.of(Scope.VERTEX) if c.name not in wanted)
    got: Any = cls.read(pruned, replace(query, attributes=wanted + tuple(dict.fromkeys(extra))))
    keep = _vertex_mask(got.positions, got.attributes, None, sel)
    if sel.predicate.of(Scope.OBJECT) and got.vertex_object_ids is not None and keep.any():
        users, inverse = np.unique(got.vertex_object_ids, return_inverse=True)
        dense = resolve_user_ids(reader, users)
        keep &= _object_mask(reader, dense, sel.predicate)[inverse.ravel()]
    rows = np.flatnonzero(keep)
    if sel.limit is not None:
        rows = rows[: sel.limit]
    return cast(
        R_co,
        replace(
            got,
            positions=got.positions[rows],
            attributes={k: got.attributes[k][rows] for k in wanted},
            vertex_object_ids=(
                None if got.vertex_object_ids is None else got.vertex_object_ids[rows]
            ),
        ),
    )


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
