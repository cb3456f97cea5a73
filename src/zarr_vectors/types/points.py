"""Point clouds (``point_cloud``): vertices with attributes, optionally grouped into objects.

Rows of a chunk are sorted by bin (and by object first when points have objects), so a read
returns points in storage order: chunk by chunk (C order), bin by bin, input order within a bin.
With ``keep_order=True`` the writer also stores each point's input position (the reserved
``_input_index`` attribute), and ``read_points(order="input")`` returns points in input order.
Objects are optional: ``vertex_object_ids`` assigns each point to an object (e.g. spots to cells); dense
ids are the ranks of the sorted distinct user ids, and ``object_attributes`` rows follow that
order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.columns import Column, GroupTable, normalize_columns
from zarr_vectors.core.deprecation import rename_keywords, renamed_keywords, warn_renamed
from zarr_vectors.core.engine import Gathered, PointRows, rows_as
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, check_positions, write_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    Query,
    build_query,
    decode_columns,
    dense_object_ids,
    register_geometry_type,
    take_batch_args,
    write_options,
)
from zarr_vectors.types._objects import group_members_out, output_ids
from zarr_vectors.types._order import (
    INPUT_INDEX,
    ElementOrder,
    input_permutation,
    missing_order,
    with_input_index,
)

__all__ = ["Points", "points_parts", "read_points", "write_points"]


@dataclass(frozen=True)
class Points:
    """Result of :func:`read_points`.

    Examples
    --------
    >>> p = Points(np.zeros((2, 3), np.float32))
    >>> len(p), p.ndim
    (2, 3)
    """

    positions: npt.NDArray[np.floating]
    """(N, D) coordinates, physical units."""
    attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-point attributes by name; categorical attributes come back as strings."""
    vertex_object_ids: npt.NDArray[Any] | None = None
    """(N,) user object id of each point, or None when the store has no objects."""
    object_ids: npt.NDArray[Any] | None = None
    """(M,) user ids of the objects with points in the result, ascending (the stored object
    order), or None when the store has no objects; :attr:`object_attributes` rows follow it."""
    object_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-object attributes, one row per entry of :attr:`object_ids`."""
    groups: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Group name -> user ids of the returned objects that belong to it."""
    group_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-group attributes, in group order."""

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def ndim(self) -> int:
        """Spatial dimensions D."""
        return int(self.positions.shape[1])

    @property
    def objects(self) -> npt.NDArray[Any] | None:
        """Deprecated name of :attr:`object_ids` (one id per object)."""
        warn_renamed("Points.objects", "Points.object_ids")
        return self.object_ids


def points_parts(
    positions: Any,
    attributes: Mapping[str, Any] | None,
    vertex_object_ids: Any,
    object_attributes: Mapping[str, Any] | None,
    groups: Mapping[str, Any] | None,
    group_attributes: Mapping[str, Any] | None,
) -> GeometryParts:
    """Check ``write_points`` arguments and return them as write-pipeline parts."""
    pos = check_positions(positions)
    n = len(pos)
    attrs = normalize_columns(attributes, n, "attribute")
    if vertex_object_ids is None:
        if object_attributes or groups:
            raise InvalidInputError("object_attributes and groups need vertex_object_ids")
        return GeometryParts(positions=pos, vertex_attributes=attrs, ordered=False)
    ids = np.asarray(vertex_object_ids)
    if ids.shape != (n,):
        raise InvalidInputError(
            f"vertex_object_ids must have one entry per point ({n}), got shape {ids.shape}"
        )
    dense, distinct, identity = dense_object_ids(ids, "vertex_object_ids")
    obj_attrs = normalize_columns(object_attributes, len(distinct), "object attribute")
    if not identity:
        if "id" in obj_attrs:
            raise InvalidInputError("object attribute 'id' is reserved for user object ids")
        obj_attrs["id"] = Column(distinct)

    def to_dense(user: npt.NDArray[Any], what: str) -> npt.NDArray[np.int64]:
        pos_ = np.searchsorted(distinct, user)
        ok = (pos_ < len(distinct)) & (distinct[np.minimum(pos_, len(distinct) - 1)] == user)
        if not ok.all():
            raise InvalidInputError(f"{what}: object id {user[np.argmax(~ok)]!r} has no points")
        return pos_.astype(np.int64)

    table = None
    if groups:
        table = GroupTable.from_mapping(groups, to_dense, len(distinct), group_attributes)
    return GeometryParts(
        positions=pos,
        vertex_object=dense,
        n_objects=len(distinct),
        ordered=True,  # each object's points keep input order (FORMAT.md §6 object rows)
        vertex_attributes=attrs,
        object_attributes=obj_attrs,
        groups=table,
    )


@renamed_keywords(object_ids="vertex_object_ids")
def write_points(
    store: StoreLike,
    positions: npt.ArrayLike,
    *,
    attributes: Mapping[str, npt.ArrayLike] | None = None,
    vertex_object_ids: npt.ArrayLike | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    keep_order: bool = False,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Write a point cloud to a new ZVF store.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL (``s3://...`` with ``storage_options``) or zarr store.
    positions
        (N, D) coordinates, physical units; D = 2, 3 or 4 (any D >= 1 works).
    attributes
        Per-point values by name: (N,) or (N, K) numeric/bool arrays, or strings (stored as
        categories).
    vertex_object_ids
        (N,) integer object of each point (e.g. the cell a spot belongs to); any integers,
        including uint64 ids.  ``object_ids=`` is its deprecated name.
    object_attributes
        Per-object values, one row per distinct object id in ascending id order.
    groups
        Named groups of objects: ``{name: object ids}``.
    group_attributes
        Per-group values, one row per group in ``groups`` order.
    keep_order
        Also store each point's input position (attribute ``_input_index``, the smallest
        unsigned dtype that holds it) so that ``read_points(order="input")`` gives the input
        order back.

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
        Bad shapes, NaN/inf coordinates (naming the row), bad attribute lengths,
        ``keep_order`` with an attribute named ``_input_index``.
    StoreExistsError
        ``store`` already holds data and ``overwrite`` is False.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> pts = np.array([[1.0, 2.0, 3.0], [15.0, 2.0, 3.0]])
    >>> zv.write_points(store, pts, chunk_shape=(10, 10, 10)).chunk_count
    2
    >>> zv.read_points(store, bbox=([0, 0, 0], [10, 10, 10])).positions.tolist()
    [[1.0, 2.0, 3.0]]
    >>> len(zv.read_points(store, bbox=([50, 50, 50], [60, 60, 60])))
    0
    """
    parts = points_parts(
        positions, attributes, vertex_object_ids, object_attributes, groups, group_attributes
    )
    if keep_order:
        parts = with_input_index(parts)
    opts = write_options(GeometryTypeName.POINT_CLOUD, parts, store_kwargs)
    return write_store(store, GeometryTypeName.POINT_CLOUD, parts, opts)


@register_geometry_type
class PointCloudType(GeometryType[Points]):
    """Plug-in for ``point_cloud`` stores."""

    spec = type_spec(GeometryTypeName.POINT_CLOUD)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> Points:
        """Build the :class:`Points` of gathered rows."""
        got = rows_as(rows, PointRows, cls.spec)
        pos, obj, attrs = got.positions, got.vertex_object, got.attributes
        if obj is None:
            return Points(pos, decode_columns(attrs))
        dense = np.unique(obj)
        obj_attrs = decode_columns(reader.object_attributes(dense))
        obj_attrs.pop("id", None)  # the user ids: returned as ``object_ids``
        groups, group_attrs = group_members_out(reader, dense)
        return Points(
            pos,
            decode_columns(attrs),
            output_ids(reader, obj),
            output_ids(reader, dense),
            obj_attrs,
            groups,
            group_attrs,
        )

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        rename_keywords(kw, "Writer.append", {"object_ids": "vertex_object_ids"}, stacklevel=6)
        attributes, vertex_ids = take_batch_args(kw, "attributes", "vertex_object_ids")
        parts = points_parts(data, attributes, None, None, None, None)
        if vertex_ids is None:
            return Batch(parts)
        ids = np.asarray(vertex_ids)
        if ids.shape != (len(parts.positions),) or ids.dtype.kind not in "iu":
            raise InvalidInputError("vertex_object_ids must hold one integer per point")
        staged = GeometryParts(
            positions=parts.positions,
            vertex_object=np.zeros(len(ids), np.int64),
            n_objects=0,
            ordered=True,
            vertex_attributes=parts.vertex_attributes,
        )
        return Batch(staged, user_ids=ids)


def read_points(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    attributes: bool | str | Sequence[str] = True,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    order: str | ElementOrder = ElementOrder.STORAGE,
    where: WhereLike | None = None,
    sphere: SphereLike | None = None,
    limit: int | None = None,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Points:
    """Read points from a ``point_cloud`` store.

    Parameters
    ----------
    store
        Path, URL or zarr store of an existing store.
    level
        Resolution level (0 = full resolution).
    bbox
        ``(min, max)`` box; only points with ``min <= p < max`` on every axis are returned.
    attributes
        True for all per-point attributes, False for none, or names.
    object_ids
        Return only points of these (user) object ids.
    group
        Return only points of objects in this group (name or index).
    order
        ``"storage"`` (default: chunk by chunk) or ``"input"``: the writer's input order
        (needs a store written with ``keep_order=True``; at coarser levels, the order of the
        aggregated input positions).  ``limit`` counts in storage order.
    where, sphere, limit, max_vertices
        Attribute conditions (``{"intensity": (0.5, None), "label": {3, 7}}``), a ball
        ``(center, radius)``, the first N items, a vertex budget choosing the finest level
        that fits; see :mod:`zarr_vectors.query.execute` and :mod:`zarr_vectors.query.lod`.
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    Points
        Positions, attributes and object ids of the selected points, in ``order``; the
        attributes of their objects and the groups (restricted to those objects).

    Raises
    ------
    InvalidInputError
        Not a point cloud, unknown attribute, object or group, or ``order="input"`` on a
        store written without input order.
    """
    how = ElementOrder.parse(order)
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, budget_level(root, level, bbox, sphere, max_vertices))
    query = _query(reader, bbox, attributes, object_ids, group)
    sel = selection(reader, where, sphere, limit)
    if how is ElementOrder.STORAGE:
        return run(reader, PointCloudType, query, sel)
    if INPUT_INDEX not in reader.names(L.ATTRIBUTES):
        raise missing_order("this point cloud")
    names = (*(query.attributes or ()), INPUT_INDEX)
    points = run(reader, PointCloudType, replace(query, attributes=names), sel)
    attrs = dict(points.attributes)
    perm = input_permutation(attrs.pop(INPUT_INDEX), "point_cloud")
    return replace(
        points,
        positions=points.positions[perm],
        attributes={k: v[perm] for k, v in attrs.items()},
        vertex_object_ids=(
            None if points.vertex_object_ids is None else points.vertex_object_ids[perm]
        ),
    )


def _query(
    reader: LevelReader,
    bbox: BBoxLike | None,
    attributes: Any,
    object_ids: Any,
    group: str | int | None,
) -> Query:
    if reader.meta.geometry_type is not GeometryTypeName.POINT_CLOUD:
        raise InvalidInputError(
            f"store holds {str(reader.meta.geometry_type)!r}, not 'point_cloud'"
        )
    return build_query(reader, bbox=bbox, object_ids=object_ids, group=group, attributes=attributes)
