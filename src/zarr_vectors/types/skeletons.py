"""Skeletons (``skeleton``): rooted trees such as neuron reconstructions (FORMAT.md §7).

Contract
--------
* A skeleton is a graph whose edges are stored directed as ``[child, parent]`` (root keys
  ``swc_compatible: true`` and ``is_directed: true``).  Per-node ``radius`` (float32) and
  ``swc_type`` (int32) are ordinary vertex attributes with those conventional names.
* **Objects**: with ``offsets`` (or a list of ``(positions, parents)`` pairs) each segment is one
  skeleton object — normally one tree; a neuron traced in several pieces (an SWC file with several
  roots) stays one object.  Without ``offsets`` every tree is one object, numbered by its smallest
  node index.  Per-skeleton user ids (e.g. uint64 segment ids) go in ``object_ids``.
* The input must be a forest: a parent index out of range, a cycle, a node given two parents, or
  (with ``offsets``) a parent in another skeleton raises :class:`GeometryError` naming a node.
* **Order**: node order within a skeleton round-trips, and parents are reconstructed exactly.
  A full read returns skeletons in id order; reads by bbox return whole skeletons touching it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.columns import Column, normalize_columns
from zarr_vectors.core.deprecation import deprecated_function, rename_keywords, renamed_keywords
from zarr_vectors.core.engine import Gathered, rows_as
from zarr_vectors.core.links.parents import TreeRows
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.select import Query
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, check_positions, write_store
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    batch_ids,
    decode_columns,
    object_query,
    register_geometry_type,
    take_batch_args,
    write_options,
)
from zarr_vectors.types._objects import (
    UserIdMap,
    flatten_ragged,
    group_members_out,
    groups_table,
    output_ids,
    ragged_columns,
)
from zarr_vectors.types.graphs import check_edges

__all__ = ["Skeleton", "Skeletons", "read_skeletons", "skeleton_parts", "write_skeletons"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]
_CONVENTIONS = {"radius": np.dtype("<f4"), "swc_type": np.dtype("<i4")}


@dataclass(frozen=True)
class Skeleton:
    """One skeleton: nodes, local parent indices and attributes.

    Examples
    --------
    >>> sk = Skeleton(np.zeros((3, 3)), np.array([-1, 0, 1]), 7)
    >>> sk.edges.tolist(), sk.roots.tolist()
    ([[1, 0], [2, 1]], [0])
    """

    positions: FloatArray
    """(n, D) node positions, physical units."""
    parents: IntArray
    """(n,) parent of each node as an index into ``positions``; -1 for a root."""
    object_id: Any
    """Id of the skeleton (user id when given at write time)."""
    attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-node attributes (``radius``, ``swc_type``, ...)."""
    object_attributes: Mapping[str, Any] = field(default_factory=dict)
    """Per-skeleton values."""

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def edges(self) -> IntArray:
        """(n - roots, 2) ``[child, parent]`` pairs."""
        child = np.flatnonzero(self.parents >= 0)
        return np.stack([child, self.parents[child]], axis=1).astype(np.int64)

    @property
    def roots(self) -> IntArray:
        """Indices of the root nodes."""
        return np.flatnonzero(self.parents < 0).astype(np.int64)


@dataclass(frozen=True)
class Skeletons:
    """Result of :func:`read_skeletons`: many skeletons as flat nodes plus offsets.

    ``len`` counts skeletons and indexing gives one :class:`Skeleton` (local parents).

    Examples
    --------
    >>> sks = Skeletons(np.zeros((3, 2)), np.array([-1, 0, -1]), np.array([0, 2, 3]),
    ...                 np.array([10, 20]))
    >>> len(sks), sks[0].parents.tolist(), sks[1].object_id
    (2, [-1, 0], 20)
    """

    positions: FloatArray
    """(N, D) nodes of all skeletons, concatenated; each skeleton's nodes in input order."""
    parents: IntArray
    """(N,) parent of each node as an index into ``positions``; -1 for a root."""
    offsets: IntArray
    """(n + 1,) skeleton i is ``positions[offsets[i]:offsets[i+1]]``."""
    object_ids: npt.NDArray[Any]
    """(n,) id of each skeleton."""
    attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-node attributes, aligned with ``positions``."""
    object_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-skeleton attributes, aligned with ``object_ids``."""
    groups: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Group name -> ids of the returned skeletons that belong to it."""
    group_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-group attributes, in group order."""

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> Skeleton:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"skeleton {i} out of range ({n} skeletons)")
        i %= n
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        par = self.parents[a:b]
        return Skeleton(
            self.positions[a:b],
            np.where(par >= 0, par - a, -1),
            self.object_ids[i].item(),
            {k: v[a:b] for k, v in self.attributes.items()},
            {k: v[i] for k, v in self.object_attributes.items()},
        )

    def __iter__(self) -> Iterator[Skeleton]:
        for i in range(len(self)):
            yield self[i]

    @property
    def edges(self) -> IntArray:
        """(E, 2) ``[child, parent]`` pairs as indices into ``positions``."""
        child = np.flatnonzero(self.parents >= 0)
        return np.stack([child, self.parents[child]], axis=1).astype(np.int64)

    @property
    def radius(self) -> npt.NDArray[Any] | None:
        """Per-node ``radius`` attribute, or None."""
        return self.attributes.get("radius")

    @property
    def swc_type(self) -> npt.NDArray[Any] | None:
        """Per-node ``swc_type`` attribute, or None."""
        return self.attributes.get("swc_type")


# -- input checks ---------------------------------------------------------------------------


def parents_array(parents: npt.ArrayLike, n: int) -> IntArray:
    """Validate parents given as (n,) indices (-1 = root) or as (E, 2) ``[child, parent]`` edges.

    Raises
    ------
    GeometryError
        A parent index out of range, or a node with two parents.

    Examples
    --------
    >>> parents_array([[1, 0], [2, 0]], 3).tolist()
    [-1, 0, 0]
    """
    arr = np.asarray(parents)
    if arr.ndim == 2:
        edges = check_edges(arr, n, "parent edges")
        count = np.bincount(edges[:, 0], minlength=n)
        if len(edges) and count.max() > 1:
            c = int(np.argmax(count > 1))
            other, dup = np.flatnonzero(edges[:, 0] == c)[:2].tolist()
            raise GeometryError(
                f"node {c} has two parents (parent edges rows {other} and {dup}); "
                "a skeleton must be a forest"
            )
        out = np.full(n, -1, dtype=np.int64)
        out[edges[:, 0]] = edges[:, 1]
        return out
    if arr.shape != (n,) or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidInputError(
            f"parents must be {n} integers (one per node, -1 for a root) "
            f"or (E, 2) [child, parent] edges, got shape {arr.shape}"
        )
    arr = arr.astype(np.int64)
    bad = np.flatnonzero((arr < -1) | (arr >= n))
    if bad.size:
        i = int(bad[0])
        raise GeometryError(
            f"parents[{i}] = {arr[i]} is out of range for {n} nodes (-1 marks a root)"
        )
    return arr


def tree_roots(parents: IntArray) -> IntArray:
    """Return the root of every node, raising :class:`GeometryError` on a cycle.

    Examples
    --------
    >>> tree_roots(np.array([-1, 0, 1, -1])).tolist()
    [0, 0, 0, 3]
    """
    n = len(parents)
    root = np.where(parents < 0, np.arange(n, dtype=np.int64), parents)
    for _ in range(int(np.ceil(np.log2(n + 1))) + 1):  # 2^k >= n steps reach a root or a cycle
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    bad = parents[root] >= 0
    if bad.any():
        v = int(root[int(np.argmax(bad))])  # after >= n steps every walk sits on its cycle
        raise GeometryError(
            f"node {v} is on a cycle (it is its own ancestor); a skeleton must be a forest"
        )
    return root


def _from_pairs(pairs: Any) -> tuple[FloatArray, IntArray, IntArray]:
    """Flatten ``[(positions_i, parents_i), ...]`` (local parents) to global arrays."""
    items = list(pairs)
    if not items or not all(isinstance(p, tuple | list) and len(p) == 2 for p in items):
        raise InvalidInputError(
            "give positions and parents, or a non-empty list of (positions, parents) pairs"
        )
    pos, off = flatten_ragged([p[0] for p in items], None, "skeletons")
    counts = np.diff(off)
    local = [np.asarray(p[1]).reshape(-1) for p in items]
    for i, par in enumerate(local):
        if len(par) != counts[i] or (par.size and par.dtype.kind not in "iu"):
            raise InvalidInputError(f"skeleton {i}: parents must be {counts[i]} integers")
    flat = np.concatenate(local).astype(np.int64) if local else np.zeros(0, np.int64)
    seg = np.repeat(np.arange(len(items)), counts)
    bad = np.flatnonzero((flat < -1) | (flat >= counts[seg]))
    if bad.size:
        j = int(bad[0])
        raise GeometryError(
            f"skeleton {seg[j]} node {j - off[seg[j]]}: parent {flat[j]} is out "
            f"of range for {counts[seg[j]]} nodes"
        )
    return pos, np.where(flat >= 0, flat + off[seg], -1), off


def _objects(parents: IntArray, offsets: IntArray | None) -> tuple[IntArray, int]:
    """Object of every node: its segment (``offsets``) or its tree (by smallest node index)."""
    root = tree_roots(parents)
    if offsets is None:
        n = len(root)
        first = np.full(n, n, dtype=np.int64)  # smallest node of each tree, indexed by its root
        np.minimum.at(first, root, np.arange(n, dtype=np.int64))
        roots = np.flatnonzero(root == np.arange(n))
        rank = np.empty(n, dtype=np.int64)
        rank[roots[np.argsort(first[roots], kind="stable")]] = np.arange(len(roots))
        return rank[root], len(roots)
    seg = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    child = np.flatnonzero(parents >= 0)
    cross = child[seg[child] != seg[parents[child]]]
    if cross.size:
        c = int(cross[0])
        raise GeometryError(
            f"node {c} (skeleton {seg[c]}) has parent {parents[c]} in skeleton "
            f"{seg[parents[c]]}; with offsets each skeleton holds its parents"
        )
    return seg, len(offsets) - 1


def _node_attributes(
    attributes: Mapping[str, Any] | None,
    radius: Any,
    swc_type: Any,
    offsets: IntArray | None,
    n: int,
) -> dict[str, Column]:
    merged = dict(attributes or {})
    for name, values in (("radius", radius), ("swc_type", swc_type)):
        if values is not None:
            if name in merged:
                raise InvalidInputError(f"{name!r} given both as a keyword and in attributes")
            merged[name] = values
    cols = (
        normalize_columns(merged, n, "attribute")
        if offsets is None
        else ragged_columns(merged, offsets, "attribute")
    )
    for name, dtype in _CONVENTIONS.items():
        if name in cols:
            cols[name] = Column(np.ascontiguousarray(cols[name].values.astype(dtype)))
    return cols


def skeleton_parts(
    positions: Any,
    parents: Any,
    offsets: Any,
    object_ids: Any,
    radius: Any,
    swc_type: Any,
    attributes: Mapping[str, Any] | None,
    object_attributes: Mapping[str, Any] | None,
    groups: Mapping[str, Any] | None,
    group_attributes: Mapping[str, Any] | None,
) -> GeometryParts:
    """Check ``write_skeleton`` arguments and return them as write-pipeline parts."""
    if parents is None:
        pos, par, off = _from_pairs(positions)
        seg_off: IntArray | None = off
    else:
        pos = check_positions(positions)
        seg_off = None if offsets is None else flatten_ragged(pos, offsets, "skeletons")[1]
        par = parents_array(parents, len(pos))
    obj, n_obj = _objects(par, seg_off)
    idmap = UserIdMap.from_user(object_ids, n_obj)
    obj_attrs = normalize_columns(object_attributes, n_obj, "object attribute")
    if "id" in obj_attrs:
        raise InvalidInputError("object attribute 'id' is reserved; pass user ids as object_ids=")
    obj_attrs.update(idmap.columns())
    child = np.flatnonzero(par >= 0)
    return GeometryParts(
        positions=pos,
        vertex_object=obj,
        n_objects=n_obj,
        ordered=True,
        vertex_attributes=_node_attributes(attributes, radius, swc_type, seg_off, len(pos)),
        links=np.stack([child, par[child]], axis=1).astype(np.int64),
        object_attributes=obj_attrs,
        groups=groups_table(groups, group_attributes, idmap, n_obj),
    )


@renamed_keywords(ids="object_ids")
def write_skeletons(
    store: StoreLike,
    positions: npt.ArrayLike | Sequence[tuple[npt.ArrayLike, npt.ArrayLike]],
    parents: npt.ArrayLike | None = None,
    *,
    offsets: npt.ArrayLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    radius: npt.ArrayLike | Sequence[npt.ArrayLike] | None = None,
    swc_type: npt.ArrayLike | Sequence[npt.ArrayLike] | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Write skeletons (trees) to a new ZVF store.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL or zarr store.
    positions
        (N, D) node positions, physical units — or, with ``parents`` omitted, a list of
        ``(positions_i, parents_i)`` pairs, one per skeleton, with local parent indices.
    parents
        (N,) parent of each node as an index into ``positions`` (-1 for a root), or (E, 2)
        ``[child, parent]`` edges.
    offsets
        (n + 1,) CSR offsets: skeleton i is nodes ``offsets[i]:offsets[i+1]`` and holds its own
        parents.  Default: every tree is one skeleton, numbered by its smallest node index.
    object_ids
        Per-skeleton user ids (unique integers, e.g. uint64 segment ids).  ``ids=`` is its
        deprecated name.
    radius, swc_type
        Per-node radius (stored float32) and SWC structure type (stored int32); flat (N,) or
        one array per skeleton.
    attributes
        Other per-node values by name.
    object_attributes
        Per-skeleton values, (n, ...) arrays.
    groups, group_attributes
        Named groups of skeletons ``{name: object ids}`` and per-group values.

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
        Bad shapes or dtypes, NaN/inf positions, bad attribute lengths.
    GeometryError
        Not a forest: a parent out of range, a cycle, a node with two parents, or a parent in
        another skeleton (the message names the node).

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> pos = np.array([[1.0, 1, 1], [12, 1, 1], [12, 12, 1], [50, 50, 50]])
    >>> write_skeletons(store, pos, [-1, 0, 1, -1], object_ids=np.array([2**40, 7], np.uint64),
    ...                radius=[1.0, 0.5, 0.5, 2.0], chunk_shape=(10, 10, 10)).object_count
    2
    >>> sks = read_skeletons(store, object_ids=[2**40])
    >>> sks[0].parents.tolist(), sks.radius.tolist()
    ([-1, 0, 1], [1.0, 0.5, 0.5])
    >>> len(read_skeletons(store, bbox=([90, 90, 90], [99, 99, 99])))
    0
    """
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
    meta = {"swc_compatible": True, "is_directed": True}
    opts = write_options(GeometryTypeName.SKELETON, parts, store_kwargs, meta)
    return write_store(store, GeometryTypeName.SKELETON, parts, opts)


# -- reading --------------------------------------------------------------------------------


@register_geometry_type
class SkeletonType(GeometryType[Skeletons]):
    """Plug-in for ``skeleton`` stores."""

    spec = type_spec(GeometryTypeName.SKELETON)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> Skeletons:
        """Build the :class:`Skeletons` of gathered whole trees."""
        tree = rows_as(rows, TreeRows, cls.spec)
        dense, got = tree.objects, tree.vertices
        obj_attrs = decode_columns(reader.object_attributes(dense))
        obj_attrs.pop("id", None)
        groups, group_attrs = group_members_out(reader, dense)
        return Skeletons(
            got.positions,
            tree.parents,
            got.offsets,
            output_ids(reader, dense),
            decode_columns(got.attributes),
            obj_attrs,
            groups,
            group_attrs,
        )

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        rename_keywords(kw, "Writer.append", {"ids": "object_ids"}, stacklevel=6)
        parents, offsets, ids, radius, swc_type, attrs, o_attrs, groups, g_attrs = take_batch_args(
            kw,
            "parents",
            "offsets",
            "object_ids",
            "radius",
            "swc_type",
            "attributes",
            "object_attributes",
            "groups",
            "group_attributes",
        )
        parts = skeleton_parts(
            data, parents, offsets, None, radius, swc_type, attrs, o_attrs, groups, g_attrs
        )
        return Batch(parts, object_ids=batch_ids(ids))


def read_skeletons(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    attributes: bool | str | Sequence[str] = True,
    where: WhereLike | None = None,
    sphere: SphereLike | None = None,
    limit: int | None = None,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Skeletons:
    """Read whole skeletons from a ``skeleton`` store.

    Parameters
    ----------
    store
        Path, URL or zarr store.
    level
        Resolution level.
    bbox
        ``(min, max)``: skeletons with at least one node in ``min <= p < max``, whole.
    object_ids
        Skeletons to read, by id (user ids when the store has them), in the order given; only
        their chunks are fetched.
    group
        Read the skeletons of one group (name or index).
    attributes
        True for all per-node attributes, False for none, or names.
    where, sphere, limit, max_vertices
        Attribute conditions (``{"intensity": (0.5, None), "label": {3, 7}}``), a ball
        ``(center, radius)``, the first N items, a vertex budget choosing the finest level
        that fits; see :mod:`zarr_vectors.query.execute` and :mod:`zarr_vectors.query.lod`.
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    Skeletons
        The selected skeletons in id order (or ``object_ids`` order), nodes in input order.

    Raises
    ------
    InvalidInputError
        The store is not a skeleton store, or an unknown id, group or attribute.

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> trees = [(np.array([[0.0, 0], [3, 4]]), np.array([-1, 0])), (np.zeros((1, 2)), [-1])]
    >>> _ = write_skeletons(store, trees, chunk_shape=(2, 2))
    >>> sks = read_skeletons(store)
    >>> len(sks), sks.parents.tolist(), sks.offsets.tolist()
    (2, [-1, 0, -1], [0, 2, 3])
    """
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, budget_level(root, level, bbox, sphere, max_vertices))
    query = object_query(reader, (GeometryTypeName.SKELETON,), bbox, object_ids, group, attributes)
    return run(reader, SkeletonType, query, selection(reader, where, sphere, limit))


# Deprecated singular names (removed in the next release): function nouns are plural.
write_skeleton = deprecated_function(write_skeletons, "write_skeleton")
read_skeleton = deprecated_function(read_skeletons, "read_skeleton")
