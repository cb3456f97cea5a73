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

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from typing_extensions import Unpack

from zarr_vectors.core.closing import ClosesOnExit
from zarr_vectors.core.store import StoreLike, open_store, read_root_metadata
from zarr_vectors.core.stream import ProgressCallback, StreamWriter
from zarr_vectors.core.writer import (
    StoreKwargs,
    WriteSummary,
    chunk_ndim,
    resolve_store_options,
)
from zarr_vectors.edit.rewrite import check_type
from zarr_vectors.edit.stream import AppendingWriter, scratch_for
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.typespec import parse_geometry_type, type_spec
from zarr_vectors.types._base import Batch, get_geometry_type

__all__ = ["Batch", "Writer", "batch_parts", "open_writer", "type_keys"]


def batch_parts(
    geometry_type: str,
    data: Any,
    *,
    type_metadata: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Batch:
    """Convert one batch, given as the matching ``write_*`` arguments, to spillable parts.

    Point clouds: ``(positions, attributes=None, vertex_object_ids=None)``.
    Polylines/streamlines: ``(polylines, offsets=None, attributes=None, object_attributes=None,
    object_ids=None, groups=None, group_attributes=None)``.
    Lines: ``(endpoints, attributes=None, object_attributes=None, object_ids=None)``.
    Graphs: ``(positions, edges=..., vertex_object_ids=None, attributes=None,
    edge_attributes=None, object_attributes=None)``.  Skeletons: ``(positions, parents=...,
    offsets=None, object_ids=None, radius=None, swc_type=None, attributes=None,
    object_attributes=None)``.  Meshes: ``(vertices, faces=None, object_ids=None,
    attributes=None, face_attributes=None, object_attributes=None)``.  ``object_ids`` holds one
    id per object, ``vertex_object_ids`` one per vertex; the old names ``ids=`` (per object)
    and ``object_ids=`` (per vertex: points, graphs) still work with a
    :class:`~zarr_vectors.errors.ZVDeprecationWarning`.  A batch holds whole objects
    (point-cloud objects excepted) and its link indices refer to its own vertices.
    """
    return get_geometry_type(geometry_type).batch(data, dict(type_metadata or {}), dict(kwargs))


class Writer(ClosesOnExit):
    """A streaming writer for one geometry type (see :func:`open_writer`)."""

    def __init__(self, stream: StreamWriter, geometry_type: str) -> None:
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


def type_keys(gtype: str, directed: bool, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """Root keys a store of ``gtype`` gets: the ``write_*`` defaults plus the caller's."""
    return {
        **type_spec(gtype).defaults,
        **({"is_directed": True} if directed else {}),
        **{k: v for k, v in (extra or {}).items() if v is not None},
    }


def open_writer(
    store: StoreLike,
    geometry_type: str,
    *,
    spill_dir: str | Path | None = None,
    partition_chunks: int = 1,
    memory_limit: int = 256 << 20,
    progress: ProgressCallback | None = None,
    directed: bool = False,
    type_metadata: Mapping[str, Any] | None = None,
    mode: Literal["w", "a"] = "w",
    **store_kwargs: Unpack[StoreKwargs],
) -> Writer | AppendingWriter:
    """Open a streaming writer; the store appears when the writer closes.

    Parameters
    ----------
    store
        Where the new store goes (path, URL or zarr store).
    geometry_type
        Any registered type name (``"point_cloud"``, ``"polyline"``, ``"mesh"``, a plug-in's...).
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
    type_metadata
        Type-specific root keys (e.g. streamline ``step_size``).
    mode
        ``"w"``: write a new store (``chunk_shape`` required).  ``"a"``: append the batches
        to the existing store ``store`` when the writer closes, at one commit point (chunk
        and bin shape, root metadata and codecs are the store's, so no store keyword is
        accepted; see :mod:`zarr_vectors.edit.stream`).

    Other Parameters
    ----------------
    **store_kwargs
        Store keywords of a new store (``chunk_shape`` required, ``bin_shape``,
        ``compressor``, ...) or ``options=``: see :class:`~zarr_vectors.StoreKwargs`.

    Returns
    -------
    Writer or AppendingWriter
        Call ``append`` per batch and ``close`` (or use ``with``).

    Raises
    ------
    InvalidInputError
        An unknown or mistyped store keyword, no ``chunk_shape`` for a new store, or store
        keywords with ``mode="a"``.
    """
    if mode == "a":
        if store_kwargs:
            raise InvalidInputError(
                f"open_writer(mode='a') appends with the store's own options; "
                f"got store keywords {sorted(store_kwargs)}"
            )
        return _appending(store, geometry_type, spill_dir, partition_chunks, memory_limit)
    gtype = parse_geometry_type(geometry_type)
    opts = resolve_store_options(
        store_kwargs,
        ndim=chunk_ndim(store_kwargs),
        geometry_type=gtype,
        type_metadata=type_keys(gtype, directed, type_metadata),
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


def _appending(
    store: StoreLike,
    geometry_type: str,
    spill_dir: str | Path | None,
    partition_chunks: int,
    memory_limit: int,
) -> AppendingWriter:
    """Return a writer streaming batches beside ``store`` that appends them at close."""
    meta = read_root_metadata(open_store(store))
    check_type(meta, parse_geometry_type(geometry_type))
    scratch = scratch_for(store)
    inner = open_writer(
        str(scratch),
        meta.geometry_type,
        chunk_shape=meta.chunk_shape,
        bin_shape=meta.base_bin_shape,
        directed=bool(meta.type_metadata.get("is_directed", False)),
        spill_dir=spill_dir,
        partition_chunks=partition_chunks,
        memory_limit=memory_limit,
    )
    assert isinstance(inner, Writer)
    return AppendingWriter(inner, store, scratch, meta.geometry_type)
