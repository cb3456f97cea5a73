"""Paths: ``polyline`` and ``streamline`` stores, and ``line`` segments (FORMAT.md §7).

A path is an object whose vertices are connected in order.  Vertices are placed in the chunk
they fall in; each run of a path inside one chunk is a manifest ref, consecutive refs are joined,
and where they sit in different chunks a ``cross_chunk_links`` record names the real rows.
Streamlines are polylines with tractography metadata; lines are two-vertex paths.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.columns import normalize_columns
from zarr_vectors.core.deprecation import rename_keywords, renamed_keywords
from zarr_vectors.core.engine import Gathered, PathRows, gather_paths, rows_as
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.select import in_box
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, write_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.query.shapes import inside_runs
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.typespec import parse_geometry_type, type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    Query,
    batch_ids,
    build_query,
    decode_columns,
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

__all__ = [
    "Polylines",
    "path_parts",
    "read_polylines",
    "read_streamlines",
    "write_polylines",
    "write_streamlines",
]

PathType = Literal["polyline", "streamline"]
_PATH_TYPES = (GeometryTypeName.POLYLINE, GeometryTypeName.STREAMLINE, GeometryTypeName.LINE)


@dataclass(frozen=True)
class Polylines:
    """Result of :func:`read_polylines`: ragged paths as flat positions plus offsets.

    Indexing and iteration give each path as an (Ni, D) array.

    Examples
    --------
    >>> pl = Polylines(np.arange(6.0).reshape(3, 2), np.array([0, 1, 3]), np.array([7, 9]))
    >>> len(pl), pl[1].tolist()
    (2, [[2.0, 3.0], [4.0, 5.0]])
    """

    positions: npt.NDArray[np.floating]
    """(N, D) vertices of all paths, concatenated in traversal order."""
    offsets: npt.NDArray[np.int64]
    """(n + 1,) path i is ``positions[offsets[i]:offsets[i+1]]``."""
    object_ids: npt.NDArray[Any]
    """(n,) id of each path (user ids when given at write time, else input index)."""
    attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-vertex attributes, aligned with ``positions``."""
    object_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-path attributes, aligned with ``object_ids``."""
    groups: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Group name -> ids of the returned paths that belong to it."""
    group_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-group attributes, in group order."""

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> npt.NDArray[np.floating]:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"path {i} out of range ({n} paths)")
        i %= n
        return self.positions[self.offsets[i] : self.offsets[i + 1]]

    def __iter__(self) -> Iterator[npt.NDArray[np.floating]]:
        for i in range(len(self)):
            yield self[i]

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Vertices per path."""
        return np.diff(self.offsets)

    def vertex_attribute(self, name: str, i: int) -> npt.NDArray[Any]:
        """Per-vertex attribute ``name`` of path ``i``."""
        return self.attributes[name][self.offsets[i] : self.offsets[i + 1]]


def path_parts(
    paths: Any,
    offsets: Any,
    attributes: Mapping[str, Any] | None,
    object_attributes: Mapping[str, Any] | None,
    object_ids: Any,
    groups: Mapping[str, Any] | None,
    group_attributes: Mapping[str, Any] | None,
    *,
    finite: bool = True,
) -> GeometryParts:
    """Paths as write-pipeline parts (``finite=False``: :func:`write_store` checks NaN/inf)."""
    pos, off = flatten_ragged(paths, offsets, "polylines", finite=finite)
    n_obj = len(off) - 1
    idmap = UserIdMap.from_user(object_ids, n_obj)
    obj_attrs = normalize_columns(object_attributes, n_obj, "object attribute")
    if "id" in obj_attrs:
        raise InvalidInputError("object attribute 'id' is reserved; pass user ids as object_ids=")
    obj_attrs.update(idmap.columns())
    return GeometryParts(
        positions=pos,
        object_offsets=off,
        n_objects=n_obj,
        ordered=True,
        sequential=True,
        vertex_attributes=ragged_columns(attributes, off, "attribute"),
        object_attributes=obj_attrs,
        groups=groups_table(groups, group_attributes, idmap, n_obj),
    )


@renamed_keywords(ids="object_ids")
def write_polylines(
    store: StoreLike,
    polylines: Sequence[npt.ArrayLike] | npt.ArrayLike,
    *,
    offsets: npt.ArrayLike | None = None,
    geometry_type: PathType | GeometryTypeName = "polyline",
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    object_ids: npt.ArrayLike | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    type_metadata: Mapping[str, Any] | None = None,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Write polylines (or streamlines) to a new ZVF store.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL or zarr store.
    polylines
        A list of (Ni, D) arrays, or — with ``offsets`` — one flat (N, D) array (fast path).
    offsets
        (n + 1,) CSR offsets into the flat positions.
    geometry_type
        ``"polyline"`` or ``"streamline"``.
    attributes
        Per-vertex values: flat (N, ...) arrays or one array per path.
    object_attributes
        Per-path values, (n, ...) arrays.
    object_ids
        Per-path user ids (unique integers, e.g. uint64); default: the input index.
        ``ids=`` is its deprecated name.
    groups, group_attributes
        Named groups of paths ``{name: object ids}`` and per-group values.
    type_metadata
        Extra type-specific root keys (used by :func:`write_streamlines`).

    Other Parameters
    ----------------
    **store_kwargs
        Store keywords (``chunk_shape`` required, ``bin_shape``, ``compressor``,
        ``overwrite``, ...) or ``options=``: see :class:`~zarr_vectors.StoreKwargs`.

    Returns
    -------
    WriteSummary
        Counts and chunk grid of what was written.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> paths = [np.array([[0.0, 0.0], [15.0, 5.0], [25.0, 5.0]]), np.array([[1.0, 1.0]])]
    >>> zv.write_polylines(store, paths, chunk_shape=(10, 10)).object_count
    2
    >>> zv.read_polylines(store, bbox=([20, 0], [30, 10]))[0].tolist()
    [[0.0, 0.0], [15.0, 5.0], [25.0, 5.0]]
    >>> len(zv.read_polylines(store, bbox=([90, 90], [99, 99])))
    0
    """
    gtype = parse_geometry_type(geometry_type)
    if type_spec(gtype).family_name not in (GeometryTypeName.POLYLINE, GeometryTypeName.STREAMLINE):
        raise InvalidInputError(f"geometry_type must be 'polyline' or 'streamline', got {gtype}")
    parts = path_parts(
        polylines,
        offsets,
        attributes,
        object_attributes,
        object_ids,
        groups,
        group_attributes,
        finite=False,
    )
    return write_path_parts(store, gtype, parts, store_kwargs, type_metadata)


def write_path_parts(
    store: StoreLike,
    geometry_type: str,
    parts: GeometryParts,
    store_kwargs: StoreKwargs,
    type_metadata: Mapping[str, Any] | None = None,
    *,
    extent: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None,
) -> WriteSummary:
    """Write :func:`path_parts` as a new ``geometry_type`` store (see :func:`write_polylines`).

    Internal (the converters' entry): not part of the public API.

    ``extent`` is the positions' per-axis ``(min, max)`` as
    :func:`~zarr_vectors.core.chunking.axis_bounds` gives it, when the caller measured it
    already (a converter choosing the chunk shape); the write then does not scan again.
    """
    opts = write_options(geometry_type, parts, store_kwargs, type_metadata)
    return write_store(store, geometry_type, parts, opts, extent=extent)


@renamed_keywords(ids="object_ids")
def write_streamlines(
    store: StoreLike,
    streamlines: Sequence[npt.ArrayLike] | npt.ArrayLike,
    *,
    step_size: float | None = None,
    step_size_unit: str | None = None,
    seeding_strategy: str | None = None,
    propagation_algorithm: str | None = None,
    reference_image: str | None = None,
    tractography_software: str | None = None,
    **kwargs: Any,
) -> WriteSummary:
    """Write streamlines (tractography) to a new store; see :func:`write_polylines`.

    The tractography keywords become the optional root keys of FORMAT.md §3; every other
    keyword is passed to :func:`write_polylines`.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> sl = [np.cumsum(np.ones((5, 3)), axis=0)]
    >>> _ = zv.write_streamlines(store, sl, chunk_shape=(2, 2, 2), step_size=1.0)
    >>> zv.open_store(store).attrs["step_size"]
    1.0
    """
    if step_size is not None and (
        isinstance(step_size, bool) or not isinstance(step_size, int | float | np.floating)
    ):
        raise InvalidInputError(f"step_size must be a number (physical units), got {step_size!r}")
    meta = {
        "step_size": None if step_size is None else float(step_size),
        "step_size_unit": step_size_unit,
        "seeding_strategy": seeding_strategy,
        "propagation_algorithm": propagation_algorithm,
        "reference_image": reference_image,
        "tractography_software": tractography_software,
    }
    return write_polylines(
        store, streamlines, geometry_type="streamline", type_metadata=meta, **kwargs
    )


@register_geometry_type
class PolylineType(GeometryType[Polylines]):
    """Plug-in for ``polyline`` stores."""

    spec = type_spec(GeometryTypeName.POLYLINE)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> Polylines:
        """Build the :class:`Polylines` of gathered whole paths (cut to the box with ``clip``)."""
        return paths_result(reader, query, rows_as(rows, PathRows, cls.spec))

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        rename_keywords(kw, "Writer.append", {"ids": "object_ids"}, stacklevel=6)
        offsets, attrs, obj_attrs, ids, groups, group_attrs = take_batch_args(
            kw,
            "offsets",
            "attributes",
            "object_attributes",
            "object_ids",
            "groups",
            "group_attributes",
        )
        parts = path_parts(data, offsets, attrs, obj_attrs, None, groups, group_attrs)
        return Batch(parts, object_ids=batch_ids(ids))


@register_geometry_type
class StreamlineType(PolylineType):
    """Plug-in for ``streamline`` stores."""

    spec = type_spec(GeometryTypeName.STREAMLINE)


def read_paths(reader: LevelReader, query: Query) -> Polylines:
    """Run a query on a path store (shared by polylines, streamlines and lines)."""
    return paths_result(reader, query, gather_paths(reader, query))


def paths_result(reader: LevelReader, query: Query, rows: PathRows) -> Polylines:
    """Build the :class:`Polylines` of gathered whole paths (cut to the box with ``clip``)."""
    dense, got = rows.objects, rows.vertices
    obj_attrs = decode_columns(reader.object_attributes(dense))
    obj_attrs.pop("id", None)
    groups, group_attrs = group_members_out(reader, dense)
    out_ids = output_ids(reader, dense)
    attrs = decode_columns(got.attributes)
    if query.clip and query.bbox is not None:
        return _clip(
            got.positions, got.offsets, out_ids, attrs, obj_attrs, groups, group_attrs, query
        )
    return Polylines(got.positions, got.offsets, out_ids, attrs, obj_attrs, groups, group_attrs)


def _clip(
    pos: npt.NDArray[np.floating],
    offsets: npt.NDArray[np.int64],
    ids: npt.NDArray[Any],
    attrs: dict[str, npt.NDArray[Any]],
    obj_attrs: dict[str, npt.NDArray[Any]],
    groups: dict[str, npt.NDArray[Any]],
    group_attrs: dict[str, npt.NDArray[Any]],
    query: Query,
) -> Polylines:
    """Keep only the runs of vertices inside the box; each run becomes its own path."""
    assert query.bbox is not None
    rows, new_off, piece_owner = inside_runs(offsets, in_box(pos, query.bbox))
    return Polylines(
        pos[rows],
        new_off,
        ids[piece_owner],
        {k: v[rows] for k, v in attrs.items()},
        {k: v[piece_owner] for k, v in obj_attrs.items()},
        groups,
        group_attrs,
    )


def path_query(
    reader: LevelReader,
    allowed: tuple[str, ...],
    bbox: BBoxLike | None,
    object_ids: Any,
    group: str | int | None,
    attributes: Any,
    clip: bool = False,
) -> Query:
    """Validate read arguments against a path store and build the query."""
    if type_spec(reader.meta.geometry_type).family_name not in allowed:
        names = ", ".join(repr(str(a)) for a in allowed)
        raise InvalidInputError(
            f"store holds {str(reader.meta.geometry_type)!r}; this reader needs {names}"
        )
    return build_query(
        reader, bbox=bbox, object_ids=object_ids, group=group, attributes=attributes, clip=clip
    )


def read_polylines(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    attributes: bool | str | Sequence[str] = True,
    clip: bool = False,
    where: WhereLike | None = None,
    sphere: SphereLike | None = None,
    limit: int | None = None,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Polylines:
    """Read paths from a ``polyline`` or ``streamline`` store.

    Parameters
    ----------
    store
        Path, URL or zarr store.
    level
        Resolution level.
    bbox
        ``(min, max)``: paths with at least one vertex in ``min <= p < max`` come back whole
        (or, with ``clip=True``, only their pieces inside the box, split where they leave it).
    object_ids
        Paths to read, by id (user ids when the store has them), in the order given.
    group
        Read the paths of one group (name or index).
    attributes
        True for all per-vertex attributes, False for none, or names.
    clip
        Cut paths to the box and the sphere (runs of consecutive vertices inside both).
    where, sphere, limit, max_vertices
        Attribute conditions (``{"intensity": (0.5, None), "label": {3, 7}}``), a ball
        ``(center, radius)``, the first N items, a vertex budget choosing the finest level
        that fits; see :mod:`zarr_vectors.query.execute` and :mod:`zarr_vectors.query.lod`.
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    Polylines
        The selected paths, in id order (or in ``object_ids`` order).
    """
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, budget_level(root, level, bbox, sphere, max_vertices))
    query = path_query(reader, _PATH_TYPES, bbox, object_ids, group, attributes, clip)
    return run(reader, PolylineType, query, selection(reader, where, sphere, limit))


def read_streamlines(store: StoreLike, **kwargs: Any) -> Polylines:
    """Read streamlines; same arguments as :func:`read_polylines`."""
    return read_polylines(store, **kwargs)
