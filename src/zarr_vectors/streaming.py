"""Streaming writer for every geometry type: ``open_writer`` → ``append`` many times → close.

Memory stays bounded by one batch plus one partition of chunks; the store written at close is
byte-for-byte the store the matching ``write_*`` function writes from all batches at once.

Examples
--------
>>> import numpy as np, zarr_vectors as zv
>>> from zarr.storage import MemoryStore
>>> store = MemoryStore()
>>> with zv.open_writer(store, "point_cloud", chunk_shape=(10, 10)) as w:
...     for i in range(3):
...         w.append(np.full((2, 2), float(i)), attributes={"batch": np.full(2, i)})
>>> zv.read_points(store).attributes["batch"].tolist()
[0, 0, 1, 1, 2, 2]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.io import CompressorSpec
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.stream import ProgressCallback, StreamWriter
from zarr_vectors.core.writer import WriteSummary, store_options
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.graphs import _graph_parts
from zarr_vectors.types.meshes import _mesh_parts
from zarr_vectors.types.points import _points_parts
from zarr_vectors.types.polylines import _path_parts
from zarr_vectors.types.skeletons import _skeleton_parts

__all__ = ["TYPE_DEFAULTS", "Batch", "Writer", "batch_parts", "open_writer", "type_keys"]

TYPE_DEFAULTS: Mapping[GeometryTypeName, Mapping[str, Any]] = {
    GeometryTypeName.GRAPH: {"is_directed": False},
    GeometryTypeName.SKELETON: {"swc_compatible": True, "is_directed": True},
    GeometryTypeName.MESH: {"winding_order": "ccw"},
}
"""Root keys the matching ``write_*`` function always writes."""


@dataclass(frozen=True)
class Batch:
    """One batch converted for spilling."""

    parts: GeometryParts
    """Vertices, objects and links of the batch (batch-local numbering)."""
    user_ids: npt.NDArray[Any] | None = None
    """Per-vertex user object ids (point clouds)."""
    object_ids: npt.NDArray[Any] | None = None
    """Per-object user ids of the batch's objects."""


def batch_parts(
    geometry_type: GeometryTypeName,
    data: Any,
    *,
    type_metadata: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Batch:
    """Convert one batch, given as the matching ``write_*`` arguments, to spillable parts.

    Point clouds: ``(positions, attributes=None, object_ids=None)``.
    Polylines/streamlines: ``(polylines, offsets=None, attributes=None, object_attributes=None,
    ids=None, groups=None, group_attributes=None)``.
    Lines: ``(endpoints, attributes=None, object_attributes=None, ids=None)``.
    Graphs: ``(positions, edges=..., object_ids=None, attributes=None, edge_attributes=None,
    object_attributes=None)``.  Skeletons: ``(positions, parents=..., offsets=None, ids=None,
    radius=None, swc_type=None, attributes=None, object_attributes=None)``.  Meshes:
    ``(vertices, faces=None, ids=None, attributes=None, face_attributes=None,
    object_attributes=None)``.  A batch holds whole objects (point-cloud objects excepted)
    and its link indices refer to its own vertices.
    """
    handler = _HANDLERS.get(geometry_type)
    if handler is None:
        raise InvalidInputError(f"no streaming support for {geometry_type.value!r}")
    return handler(data, dict(type_metadata or {}), dict(kwargs))


def _take(kwargs: dict[str, Any], *names: str) -> list[Any]:
    values = [kwargs.pop(n, None) for n in names]
    if kwargs:
        raise InvalidInputError(f"unexpected arguments {sorted(kwargs)}")
    return values


def _ids(value: Any) -> npt.NDArray[Any] | None:
    return None if value is None else np.asarray(value)


def _points_batch(data: Any, meta: dict[str, Any], kw: dict[str, Any]) -> Batch:
    attributes, object_ids = _take(kw, "attributes", "object_ids")
    parts = _points_parts(data, attributes, None, None, None, None)
    if object_ids is None:
        return Batch(parts)
    ids = np.asarray(object_ids)
    if ids.shape != (len(parts.positions),) or ids.dtype.kind not in "iu":
        raise InvalidInputError("object_ids must hold one integer per point")
    staged = GeometryParts(
        positions=parts.positions,
        vertex_object=np.zeros(len(ids), np.int64),
        n_objects=0,
        ordered=True,
        vertex_attributes=parts.vertex_attributes,
    )
    return Batch(staged, user_ids=ids)


def _paths_batch(data: Any, meta: dict[str, Any], kw: dict[str, Any]) -> Batch:
    offsets, attrs, obj_attrs, ids, groups, group_attrs = _take(
        kw, "offsets", "attributes", "object_attributes", "ids", "groups", "group_attributes"
    )
    parts = _path_parts(data, offsets, attrs, obj_attrs, None, groups, group_attrs)
    return Batch(parts, object_ids=_ids(ids))


def _lines_batch(data: Any, meta: dict[str, Any], kw: dict[str, Any]) -> Batch:
    attributes, obj_attrs, ids = _take(kw, "attributes", "object_attributes", "ids")
    ends = np.asarray(data)
    if ends.ndim != 3 or ends.shape[1] != 2:
        raise InvalidInputError(f"endpoints must have shape (M, 2, D), got {ends.shape}")
    m, _, d = ends.shape
    flat = {
        k: np.asarray(v).reshape(2 * m, *np.asarray(v).shape[2:])
        for k, v in (attributes or {}).items()
    }
    parts = _path_parts(
        ends.reshape(2 * m, d), np.arange(0, 2 * m + 1, 2), flat, obj_attrs, None, None, None
    )
    return Batch(parts, object_ids=_ids(ids))


def _graph_batch(data: Any, meta: dict[str, Any], kw: dict[str, Any]) -> Batch:
    edges, object_ids, attrs, e_attrs, o_attrs, groups, g_attrs = _take(
        kw,
        "edges",
        "object_ids",
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
        object_ids,
        attrs,
        e_attrs,
        o_attrs,
        groups,
        g_attrs,
    )
    return Batch(parts)


def _skeleton_batch(data: Any, meta: dict[str, Any], kw: dict[str, Any]) -> Batch:
    parents, offsets, ids, radius, swc_type, attrs, o_attrs, groups, g_attrs = _take(
        kw,
        "parents",
        "offsets",
        "ids",
        "radius",
        "swc_type",
        "attributes",
        "object_attributes",
        "groups",
        "group_attributes",
    )
    parts = _skeleton_parts(
        data, parents, offsets, None, radius, swc_type, attrs, o_attrs, groups, g_attrs
    )
    return Batch(parts, object_ids=_ids(ids))


def _mesh_batch(data: Any, meta: dict[str, Any], kw: dict[str, Any]) -> Batch:
    faces, ids, attrs, f_attrs, o_attrs, groups, g_attrs = _take(
        kw,
        "faces",
        "ids",
        "attributes",
        "face_attributes",
        "object_attributes",
        "groups",
        "group_attributes",
    )
    parts = _mesh_parts(
        data,
        faces,
        object_ids=None,
        attributes=attrs,
        face_attributes=f_attrs,
        object_attributes=o_attrs,
        groups=groups,
        group_attributes=g_attrs,
    )
    return Batch(parts, object_ids=_ids(ids))


_HANDLERS: Mapping[GeometryTypeName, Callable[[Any, dict[str, Any], dict[str, Any]], Batch]] = {
    GeometryTypeName.POINT_CLOUD: _points_batch,
    GeometryTypeName.POLYLINE: _paths_batch,
    GeometryTypeName.STREAMLINE: _paths_batch,
    GeometryTypeName.LINE: _lines_batch,
    GeometryTypeName.GRAPH: _graph_batch,
    GeometryTypeName.SKELETON: _skeleton_batch,
    GeometryTypeName.MESH: _mesh_batch,
}


class Writer:
    """A streaming writer for one geometry type (see :func:`open_writer`)."""

    def __init__(self, stream: StreamWriter, geometry_type: GeometryTypeName) -> None:
        self._stream = stream
        self.geometry_type = geometry_type
        self.summary: WriteSummary | None = None

    def append(self, data: Any, **kwargs: Any) -> None:
        """Add a batch; arguments are those of the matching ``write_*`` function.

        See :func:`batch_parts` for the arguments of each geometry type.
        """
        batch = batch_parts(
            self.geometry_type, data, type_metadata=self._stream.opts.type_metadata, **kwargs
        )
        self._stream.append_parts(batch.parts, user_ids=batch.user_ids, object_ids=batch.object_ids)

    def close(self) -> WriteSummary:
        """Write the store; returns what was written."""
        self.summary = self._stream.close()
        return self.summary

    def abort(self) -> None:
        """Discard all batches."""
        self._stream.abort()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def type_keys(
    gtype: GeometryTypeName, directed: bool, extra: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Root keys a store of ``gtype`` gets: the ``write_*`` defaults plus the caller's."""
    return {
        **TYPE_DEFAULTS.get(gtype, {}),
        **({"is_directed": True} if directed else {}),
        **{k: v for k, v in (extra or {}).items() if v is not None},
    }


def open_writer(
    store: StoreLike,
    geometry_type: GeometryTypeName | str,
    *,
    chunk_shape: Sequence[float],
    bin_shape: Sequence[float] | None = None,
    bounds: BBoxLike | None = None,
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    compressor: CompressorSpec = "default",
    shards: Sequence[int] | None = None,
    frame_bytes: int | Literal["auto"] | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
    spill_dir: str | Path | None = None,
    partition_chunks: int = 1,
    memory_limit: int = 256 << 20,
    progress: ProgressCallback | None = None,
    directed: bool = False,
    coordinate_system: str = "unknown",
    axis_units: str | Sequence[str] | None = None,
    axis_names: Sequence[str] | None = None,
    source_description: str | None = None,
    notes: str | None = None,
    custom_metadata: Mapping[str, Any] | None = None,
    type_metadata: Mapping[str, Any] | None = None,
) -> Writer:
    """Open a streaming writer; the store appears when the writer closes.

    Parameters
    ----------
    store
        Where the new store goes (path, URL or zarr store).
    geometry_type
        ``"point_cloud"``, ``"line"``, ``"polyline"`` or ``"streamline"``.
    chunk_shape, bin_shape, bounds, zarr_format, overwrite, compressor, shards, storage_options
        As in :func:`~zarr_vectors.write_points`.
    spill_dir
        Directory for temporary batch files (default: the system temp directory).
    partition_chunks
        Chunks per axis in one spill partition (default 1: one chunk).  A partition is loaded
        whole at close, so memory is bounded by ``memory_limit`` plus one partition; larger
        partitions mean fewer spill files.
    memory_limit
        Spilled bytes processed at once when the store is written (default 256 MiB).
    progress
        Called as ``progress(stage, done, total)`` while the store is written at close.
    directed
        Graphs: whether edges are directed (``is_directed``).
    coordinate_system, axis_units, axis_names, source_description, notes, custom_metadata
        Root metadata.
    type_metadata
        Type-specific root keys (e.g. streamline ``step_size``).

    Returns
    -------
    Writer
        Call ``append`` per batch and ``close`` (or use ``with``).
    """
    gtype = GeometryTypeName.parse(geometry_type)
    d = len(chunk_shape)
    opts = store_options(
        len(chunk_shape), locals(), type_keys(gtype, directed, type_metadata), gtype
    )
    stream = StreamWriter(
        store,
        gtype,
        opts,
        spill_dir=spill_dir,
        partition_chunks=partition_chunks,
        memory_limit=memory_limit,
        progress=progress,
    )
    return Writer(stream, gtype)
