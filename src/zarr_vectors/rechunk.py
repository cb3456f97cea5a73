"""Rewrite a store with another chunk and bin shape (every geometry type).

Level 0 is read back into flat parts (:func:`~zarr_vectors.core.parts.read_parts`) and written
with the ordinary write pipeline; root metadata (coordinate system, units, axes, type keys,
custom metadata) is carried over.  Coarser levels are not copied: their bins depend on the
chunk shape, so rebuild them with :func:`~zarr_vectors.build_pyramid` on the new store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from zarr_vectors.core.parts import read_parts
from zarr_vectors.core.payload.compression import CompressorSpec
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike, open_store, refuse_overlap
from zarr_vectors.core.writer import StoreOptions, WriteSummary, write_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.metadata import parse_float_tuple
from zarr_vectors.spec.typespec import type_spec

__all__ = ["rechunk"]


def rechunk(
    store: StoreLike,
    out: StoreLike,
    *,
    chunk_shape: Sequence[float],
    bin_shape: Sequence[float] | None = None,
    zarr_format: Literal[2, 3] | None = None,
    overwrite: bool = False,
    compressor: CompressorSpec = "source",
    shards: Sequence[int] | None = None,
    frame_bytes: int | Literal["auto"] | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
    out_storage_options: Mapping[str, Any] | None = None,
) -> WriteSummary:
    """Copy level 0 of ``store`` into a new store ``out`` with a new chunk/bin shape.

    Parameters
    ----------
    store
        The source store.
    out
        The destination (must not hold data unless ``overwrite``; must differ from ``store``).
    chunk_shape, bin_shape
        New chunk and level-0 bin extent, physical units.
    zarr_format
        Zarr format of the copy (default: the source's).
    overwrite, shards
        As in the ``write_*`` functions.
    compressor
        As in the ``write_*`` functions; by default (``"source"``) each array is compressed
        as the source's array of the same path (into another Zarr format: the presets kept,
        other codecs replaced by the default).
    frame_bytes
        As in the ``write_*`` functions (default ``"auto"``: the geometry type's seekable
        frame size, so one-object reads of the copy decode frames, not whole chunks).
    storage_options, out_storage_options
        fsspec options of the source and the destination URLs.

    Returns
    -------
    WriteSummary
        What the new store holds; reading it gives the same objects, vertices and attributes.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> src, dst = MemoryStore(), MemoryStore()
    >>> _ = zv.write_points(src, np.arange(12.0).reshape(6, 2), chunk_shape=(4, 4))
    >>> zv.rechunk(src, dst, chunk_shape=(2, 2)).chunk_count
    6
    """
    if out is store:
        raise InvalidInputError("rechunk writes a new store: out must differ from store")
    refuse_overlap(store, out, "rechunk")
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, 0)
    meta = reader.meta
    chunk_shape = parse_float_tuple(chunk_shape, "chunk_shape", positive=True)
    if len(chunk_shape) != meta.spatial_dims:
        raise InvalidInputError(
            f"chunk_shape has {len(chunk_shape)} values, the store has {meta.spatial_dims} axes"
        )
    parts = read_parts(reader, sequential=type_spec(meta.geometry_type).sequential)
    out_format = zarr_format or root.metadata.zarr_format
    checked = StoreOptions.from_kwargs(  # the new store's keywords, checked as a writer's
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        zarr_format=out_format,
        overwrite=overwrite,
        compressor=reader.compressor_for(compressor, out_format),
        shards=shards,
        frame_bytes=frame_bytes,
        storage_options=out_storage_options,
    )
    opts = replace(  # root metadata carried over from the source
        checked,
        coordinate_system=meta.coordinate_system,
        axis_units=meta.axis_units,
        axes=meta.multiscales.axes,
        source_description=meta.source_description,
        notes=meta.notes,
        custom_metadata=meta.custom_metadata,
        type_metadata=meta.type_metadata,
    ).resolve(meta.spatial_dims, meta.geometry_type)
    return write_store(out, meta.geometry_type, parts, opts)
