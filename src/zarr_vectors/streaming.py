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

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import numpy as np

from zarr_vectors.core.io import CompressorSpec
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike, parse_bbox
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.stream import StreamWriter
from zarr_vectors.core.writer import StoreOptions, WriteSummary
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.graphs import _graph_parts
from zarr_vectors.types.points import _axes, _points_parts
from zarr_vectors.types.polylines import _path_parts
from zarr_vectors.types.skeletons import _skeleton_parts

__all__ = ["Writer", "open_writer"]

_PATHS = (GeometryTypeName.POLYLINE, GeometryTypeName.STREAMLINE)
_TYPE_DEFAULTS: Mapping[GeometryTypeName, Mapping[str, Any]] = {
    GeometryTypeName.GRAPH: {"is_directed": False},
    GeometryTypeName.SKELETON: {"swc_compatible": True, "is_directed": True},
}
"""Root keys the matching ``write_*`` function always writes."""


class Writer:
    """A streaming writer for one geometry type (see :func:`open_writer`)."""

    def __init__(self, stream: StreamWriter, geometry_type: GeometryTypeName) -> None:
        self._stream = stream
        self.geometry_type = geometry_type
        self.type_metadata = stream.opts.type_metadata
        self.summary: WriteSummary | None = None

    def append(self, data: Any, **kwargs: Any) -> None:
        """Add a batch; arguments are those of the matching ``write_*`` function.

        Point clouds: ``append(positions, attributes=None, object_ids=None)``.
        Polylines/streamlines: ``append(polylines, offsets=None, attributes=None,
        object_attributes=None, ids=None, groups=None, group_attributes=None)``.
        Lines: ``append(endpoints, attributes=None, object_attributes=None, ids=None)``.
        Graphs: ``append(positions, edges=..., object_ids=None, attributes=None,
        edge_attributes=None, object_attributes=None)`` — a batch holds whole objects, and
        edge indices refer to the batch's own vertices.
        Skeletons: ``append(positions, parents=..., offsets=None, ids=None, radius=None,
        swc_type=None, attributes=None, object_attributes=None)``.
        """
        gtype = self.geometry_type
        if gtype is GeometryTypeName.POINT_CLOUD:
            self._append_points(data, **kwargs)
        elif gtype in _PATHS:
            ids = kwargs.pop("ids", None)
            parts = _path_parts(
                data,
                kwargs.pop("offsets", None),
                kwargs.pop("attributes", None),
                kwargs.pop("object_attributes", None),
                None,
                kwargs.pop("groups", None),
                kwargs.pop("group_attributes", None),
            )
            _no_more(kwargs)
            self._stream.append_parts(parts, object_ids=None if ids is None else np.asarray(ids))
        elif gtype is GeometryTypeName.LINE:
            self._append_lines(data, **kwargs)
        elif gtype is GeometryTypeName.GRAPH:
            self._stream.append_parts(
                _graph_parts(
                    data,
                    kwargs.pop("edges"),
                    bool(self.type_metadata.get("is_directed", False)),
                    kwargs.pop("object_ids", None),
                    kwargs.pop("attributes", None),
                    kwargs.pop("edge_attributes", None),
                    kwargs.pop("object_attributes", None),
                    kwargs.pop("groups", None),
                    kwargs.pop("group_attributes", None),
                )
            )
            _no_more(kwargs)
        elif gtype is GeometryTypeName.SKELETON:
            ids = kwargs.pop("ids", None)
            parts = _skeleton_parts(
                data,
                kwargs.pop("parents", None),
                kwargs.pop("offsets", None),
                None,
                kwargs.pop("radius", None),
                kwargs.pop("swc_type", None),
                kwargs.pop("attributes", None),
                kwargs.pop("object_attributes", None),
                kwargs.pop("groups", None),
                kwargs.pop("group_attributes", None),
            )
            _no_more(kwargs)
            self._stream.append_parts(parts, object_ids=None if ids is None else np.asarray(ids))
        else:
            raise InvalidInputError(
                f"streaming {gtype.value!r} stores is not available yet; use write_* instead"
            )

    def _append_points(
        self, positions: Any, *, attributes: Mapping[str, Any] | None = None, object_ids: Any = None
    ) -> None:
        parts = _points_parts(positions, attributes, None, None, None, None)
        if object_ids is None:
            self._stream.append_parts(parts)
            return
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
        self._stream.append_parts(staged, user_ids=ids)

    def _append_lines(
        self,
        endpoints: Any,
        *,
        attributes: Mapping[str, Any] | None = None,
        object_attributes: Mapping[str, Any] | None = None,
        ids: Any = None,
    ) -> None:
        ends = np.asarray(endpoints)
        if ends.ndim != 3 or ends.shape[1] != 2:
            raise InvalidInputError(f"endpoints must have shape (M, 2, D), got {ends.shape}")
        m, _, d = ends.shape
        flat = {
            k: np.asarray(v).reshape(2 * m, *np.asarray(v).shape[2:])
            for k, v in (attributes or {}).items()
        }
        parts = _path_parts(
            ends.reshape(2 * m, d),
            np.arange(0, 2 * m + 1, 2),
            flat,
            object_attributes,
            None,
            None,
            None,
        )
        self._stream.append_parts(parts, object_ids=None if ids is None else np.asarray(ids))

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


def _no_more(kwargs: Mapping[str, Any]) -> None:
    if kwargs:
        raise InvalidInputError(f"unexpected arguments {sorted(kwargs)}")


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
    storage_options: Mapping[str, Any] | None = None,
    spill_dir: str | Path | None = None,
    partition_chunks: int = 8,
    memory_limit: int = 256 << 20,
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
        Chunks per axis in one partition (default 8, i.e. up to 512 chunks in 3-D); a
        partition is loaded whole at close.
    memory_limit
        Spilled bytes processed at once when the store is written (default 256 MiB).
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
    opts = StoreOptions(
        chunk_shape=tuple(float(c) for c in chunk_shape),
        bin_shape=None if bin_shape is None else tuple(float(b) for b in bin_shape),
        bounds=None if bounds is None else parse_bbox(bounds, d),
        zarr_format=zarr_format,
        overwrite=overwrite,
        compressor=compressor,
        shards=None if shards is None else tuple(shards),
        storage_options=storage_options,
        coordinate_system=coordinate_system,
        axis_units=axis_units
        if axis_units is None or isinstance(axis_units, str)
        else tuple(axis_units),
        axes=_axes(axis_names, axis_units, d),
        source_description=source_description,
        notes=notes,
        custom_metadata=custom_metadata,
        type_metadata={
            **_TYPE_DEFAULTS.get(gtype, {}),
            **({"is_directed": True} if directed else {}),
            **{k: v for k, v in (type_metadata or {}).items() if v is not None},
        },
    )
    stream = StreamWriter(
        store,
        gtype,
        opts,
        spill_dir=spill_dir,
        partition_chunks=partition_chunks,
        memory_limit=memory_limit,
    )
    return Writer(stream, gtype)
