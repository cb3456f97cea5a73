"""Lazy Dask collections over a store: a dataframe of vertices, a bag of whole objects.

Needs the ``dask`` extra (``dask[dataframe]``, which brings pandas).  Partitions read the store
themselves (each opens it by path/URL, so a store given as a path or ``s3://`` URL works on a
multi-process cluster; an in-memory store works with threads only).

* :func:`to_dask`: one row per vertex that satisfies ``bbox`` ∧ ``sphere`` ∧ ``where`` (vertex
  and object conditions), columns = axis names, attributes (``name_i`` per column of a
  multi-column attribute; categories as strings) and ``object_id`` (user ids) when the store
  has objects.  One partition per block of ``chunks_per_partition`` chunks, in flat chunk
  order; the index is the chunk's flat index, so divisions are known.  For point clouds the
  computed frame equals :func:`~zarr_vectors.read_points` row for row.
* :func:`to_dask_objects`: a ``dask.bag`` of :class:`ObjectRecord`, one per object the
  type's ``read_*`` with the same arguments returns, in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask.bag as db
import dask.dataframe as dd
import numpy as np
import numpy.typing as npt
import pandas as pd
from dask.delayed import delayed

from zarr_vectors.api import Reader
from zarr_vectors.core.reader import BBoxLike, LevelReader, parse_bbox
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, matching_objects, selection
from zarr_vectors.query.planning import plan_chunks
from zarr_vectors.query.predicates import Scope
from zarr_vectors.query.shapes import in_box
from zarr_vectors.query.table import vertex_owners
from zarr_vectors.spec import layout as L
from zarr_vectors.types._base import attribute_selection, build_query, user_ids

__all__ = ["ObjectRecord", "to_dask", "to_dask_objects"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Spec:
    """What a partition needs to reopen the store and run its part (picklable)."""

    store: Any
    storage_options: Mapping[str, Any] | None
    level: int
    bbox: BBoxLike | None
    sphere: SphereLike | None
    where: WhereLike | None
    attributes: bool | str | Sequence[str]

    def reader(self) -> LevelReader:
        root = open_store(self.store, mode="r", storage_options=self.storage_options)
        return LevelReader(root, self.level)


def _columns(reader: LevelReader, names: Sequence[str], flats: IntArray) -> dict[str, Any]:
    cols: dict[str, Any] = {}
    for name in names:
        values = reader.column(f"{L.ATTRIBUTES}/{name}", flats).decoded()
        if values.ndim == 1:
            cols[name] = values
        else:
            flat = values.reshape(len(values), -1)
            for i in range(flat.shape[1]):
                cols[f"{name}_{i}"] = flat[:, i]
    return cols


def _vertex_frame(spec: _Spec, flats: IntArray) -> pd.DataFrame:
    """Rows of the chunks ``flats`` that satisfy the query."""
    reader = spec.reader()
    sel = selection(reader, spec.where, spec.sphere, None)
    box = None if spec.bbox is None else parse_bbox(spec.bbox, reader.layout.ndim)
    names = attribute_selection(reader.names(L.ATTRIBUTES), spec.attributes)
    pos = reader.rows(L.VERTICES, flats).values
    keep = np.ones(len(pos), dtype=bool) if box is None else in_box(pos, box)
    if sel.sphere is not None:
        keep &= sel.sphere.contains(pos)
    for clause in sel.predicate.of(Scope.VERTEX):
        keep &= clause.mask(reader.column(f"{L.ATTRIBUTES}/{clause.name}", flats).decoded())
    obj = reader.vertex_object_ids(flats) if reader.has(L.OBJECT_OFFSETS) else None
    if obj is not None and sel.predicate.of(Scope.OBJECT):
        ids, inverse = np.unique(obj, return_inverse=True)
        ok = np.ones(len(ids), dtype=bool)
        cols = reader.object_attributes(ids.astype(np.int64))
        for clause in sel.predicate.of(Scope.OBJECT):
            ok &= clause.mask(cols[clause.name].decoded())
        keep &= ok[inverse.ravel()]
    rows = np.flatnonzero(keep)
    chunk = np.repeat(flats, reader.vertex_counts[flats])[rows]
    axes = reader.meta.multiscales.axes
    data: dict[str, Any] = {a.name: pos[rows, d] for d, a in enumerate(axes)}
    data.update({k: v[rows] for k, v in _columns(reader, names, flats).items()})
    if obj is not None:
        stored = user_ids(reader)
        data["object_id"] = (obj if stored is None else stored[obj])[rows]
    return pd.DataFrame(data, index=pd.Index(chunk, name="chunk"))


def to_dask(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    sphere: SphereLike | None = None,
    where: WhereLike | None = None,
    attributes: bool | str | Sequence[str] = True,
    chunks_per_partition: int = 64,
    storage_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """Return a lazy dataframe of the vertices matching the query (see module docs).

    Planning (which chunks, statistics pruning) happens here, eagerly, from dense arrays only;
    payloads are read when partitions compute.
    """
    spec = _Spec(store, storage_options, level, bbox, sphere, where, attributes)
    reader = spec.reader()
    sel = selection(reader, where, sphere, None)
    box = None if bbox is None else parse_bbox(bbox, reader.layout.ndim)
    flats = plan_chunks(reader, box, sel.sphere, sel.predicate).candidates
    step = max(1, int(chunks_per_partition))
    blocks = [flats[i : i + step] for i in range(0, len(flats), step)]
    meta = _vertex_frame(spec, np.zeros(0, dtype=np.int64))
    if not blocks:
        empty: dd.DataFrame = dd.from_pandas(meta, npartitions=1)
        return empty
    divisions = [int(b[0]) for b in blocks] + [int(blocks[-1][-1])]
    frame: dd.DataFrame = dd.from_map(
        _vertex_frame, [spec] * len(blocks), blocks, meta=meta, divisions=divisions
    )
    return frame


@dataclass(frozen=True)
class ObjectRecord:
    """One whole object of :func:`to_dask_objects`."""

    object_id: Any
    """User id of the object (dense id when the store keeps none)."""
    positions: npt.NDArray[np.floating]
    """(n, D) vertices in traversal order (those the read returns)."""
    attributes: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-vertex attributes aligned with ``positions``."""
    object_attributes: dict[str, Any] = field(default_factory=dict)
    """This object's attribute values."""
    links: IntArray | None = None
    """The object's stored links as indices into ``positions``: edges ``(E, 2)`` of a graph,
    faces ``(F, 3)`` of a mesh, ``[child, parent]`` edges ``(E, 2)`` of a skeleton; None for
    points, lines and paths (their connectivity is the vertex order).  The links a read of this
    object alone returns, in its order: a graph edge joining two user-defined objects is in
    neither record."""


def _object_records(spec: _Spec, dense: IntArray) -> list[ObjectRecord]:
    reader = spec.reader()
    uids = _user(reader, dense)
    with Reader(spec.store, storage_options=spec.storage_options) as r:
        result = r.read(level=spec.level, object_ids=uids, attributes=spec.attributes)
    obj_cols = {k: c.decoded() for k, c in reader.object_attributes(dense).items() if k != "id"}
    return _records(result, uids, obj_cols)


def _records(
    result: Any, uids: npt.NDArray[Any], obj_cols: Mapping[str, npt.NDArray[Any]]
) -> list[ObjectRecord]:
    """One record per id of ``uids`` from a read of those objects, in one pass over its rows."""
    pos, owner, attrs = vertex_owners(result)
    if owner is None:  # to_dask_objects refuses stores without objects
        return []
    slot = _slots(owner, uids)
    order, bounds = _groups(slot, len(uids))
    # one gather per column; every record is then a slice of it
    pos_g = pos[order]
    attrs_g = {k: v[order] for k, v in attrs.items()}
    links, link_bounds = _object_links(_global_links(result), slot, order, bounds)
    at, link_at = bounds.tolist(), link_bounds.tolist()  # Python ints: cheap slicing per object
    out = []
    for i, uid in enumerate(uids):
        a, b = at[i], at[i + 1]
        out.append(
            ObjectRecord(
                uid.item() if isinstance(uid, np.generic) else uid,
                pos_g[a:b],
                {k: v[a:b] for k, v in attrs_g.items()},
                {k: v[i] for k, v in obj_cols.items()},
                None if links is None else links[link_at[i] : link_at[i + 1]],
            )
        )
    return out


def _slots(owner: npt.NDArray[Any], uids: npt.NDArray[Any]) -> IntArray:
    """Position in ``uids`` of each row's owner (``len(uids)`` for an owner not among them)."""
    m = len(uids)
    if m == 0 or len(owner) == 0:
        return np.full(len(owner), m, dtype=np.int64)
    sorter = np.argsort(uids, kind="stable")
    at = np.minimum(np.searchsorted(uids, owner, sorter=sorter), m - 1)
    found = sorter[at]
    return np.where(uids[found] == owner, found, m).astype(np.int64)


def _groups(slot: IntArray, m: int) -> tuple[IntArray, IntArray]:
    """Rows grouped by slot, ascending inside each group, and the ``m + 1`` group bounds.

    Rows of slot ``m`` (no object of the partition) sort last, past ``bounds[m]``.
    """
    if len(slot) == 0 or bool(np.all(slot[1:] >= slot[:-1])):
        order = np.arange(len(slot), dtype=np.int64)  # reads usually return objects grouped
    else:
        order = np.argsort(slot, kind="stable").astype(np.int64)
    counts = np.bincount(slot, minlength=m + 1)[:m]
    bounds = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    return order, bounds


def _object_links(
    links: IntArray | None, slot: IntArray, order: IntArray, bounds: IntArray
) -> tuple[IntArray | None, IntArray]:
    """Each object's links as indices into its own rows, grouped by object, and group bounds.

    A link belongs to an object when all its ends are that object's rows (what a read of the
    object alone returns); it is renumbered by each end's rank among the object's rows.
    """
    m = len(bounds) - 1
    if links is None:
        return None, np.zeros(m + 1, dtype=np.int64)
    rank = np.empty(len(slot), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64) - bounds[np.minimum(slot[order], m)]
    ends = slot[links]
    own = ends[:, 0]
    mine = (own < m) & np.all(ends == own[:, None], axis=1)
    kept, own = links[mine], own[mine]
    lorder, lbounds = _groups(own, m)
    return rank[kept[lorder]], lbounds


def _global_links(result: Any) -> IntArray | None:
    """Links of a read result as rows of indices into its vertices (None: implicit)."""
    if hasattr(result, "parents"):  # skeletons: [child, parent] for every non-root node
        child = np.flatnonzero(result.parents >= 0)
        return np.column_stack([child, result.parents[child]]).astype(np.int64)
    for name in ("edges", "faces"):
        if hasattr(result, name):
            return np.asarray(getattr(result, name), dtype=np.int64)
    return None


def _user(reader: LevelReader, dense: IntArray) -> npt.NDArray[Any]:
    stored = user_ids(reader)
    return dense if stored is None else stored[dense]


def to_dask_objects(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    sphere: SphereLike | None = None,
    where: WhereLike | None = None,
    attributes: bool | str | Sequence[str] = True,
    objects_per_partition: int = 256,
    storage_options: Mapping[str, Any] | None = None,
) -> db.Bag:
    """Return a lazy bag of :class:`ObjectRecord`: the objects a read would select, whole.

    Objects with a vertex matching shape and vertex conditions, and matching object
    conditions, in id order; each record holds all the object's vertices (also for graphs
    and meshes, whose reads keep only matching vertices).  The object selection is computed here (it reads the chunks statistics leave); the
    objects' payloads are read when partitions compute.
    """
    spec = _Spec(store, storage_options, level, bbox, sphere, where, attributes)
    reader = spec.reader()
    if not reader.has(L.OBJECT_OFFSETS):
        raise InvalidInputError("this store has no objects; use to_dask for its vertices")
    query = build_query(reader, bbox=bbox)
    dense = matching_objects(reader, query, selection(reader, where, sphere, None))
    step = max(1, int(objects_per_partition))
    blocks = [dense[i : i + step] for i in range(0, len(dense), step)]
    bag: db.Bag = (
        db.from_delayed([delayed(_object_records)(spec, b) for b in blocks])
        if blocks
        else db.from_sequence([], npartitions=1)
    )
    return bag
