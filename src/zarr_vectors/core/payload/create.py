"""Creating and opening payload and dense arrays."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.buffer import default_buffer_prototype
from zarr.codecs import BytesCodec, VLenBytesCodec
from zarr.dtype import VariableLengthBytes, parse_dtype

from zarr_vectors.core.payload.compression import (
    DENSE_FRAME_BYTES,
    Compressor,
    payload_typesize,
    resolve_compressor,
    with_checksum,
)
from zarr_vectors.core.payload.dense import write_dense
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.payload.store_io import local_dir, write_file
from zarr_vectors.core.zarr_adapter import ArrayV3Metadata, array_at, group_document, quiet_vlen
from zarr_vectors.errors import StoreNotFoundError

__all__ = [
    "create_dense_array",
    "create_payload_array",
    "declare_dense_array",
    "open_payload_array",
]


def create_payload_array(
    group: zarr.Group,
    path: str,
    grid_shape: Sequence[int],
    *,
    attributes: Mapping[str, Any],
    compressor: Compressor | str = "default",
    shards: Sequence[int] | None = None,
    frame_bytes: int | None = None,
    checksum: bool = True,
) -> PayloadArray:
    """Create a per-chunk payload array of shape ``grid_shape`` with element chunks (1,)*D.

    ``frame_bytes``: decoded bytes per Blosc block of the ``"lz4"`` preset, so that readers
    decode only the blocks holding some rows; other compressors store each element as one
    stream (zstd: one frame) that every decoder reads whole.  ``checksum``: end every chunk
    with a checksum (:mod:`~zarr_vectors.core.checksums`); False only to reproduce stores of
    earlier versions.
    """
    zarr_format = group.metadata.zarr_format
    if frame_bytes is not None and frame_bytes < 64:
        raise ValueError(f"frame_bytes must be at least 64, got {frame_bytes}")
    codecs = resolve_compressor(
        compressor, zarr_format, typesize=payload_typesize(attributes), blocksize=frame_bytes
    )
    # No seekable multi-frame zstd any more (attribute ``zstd_frame_bytes``): decoders that
    # size their buffer from the first frame (numcodecs < 0.16) or stop after it fail on it.
    attrs = dict(attributes)
    compressors, filters = with_checksum(codecs, zarr_format, vlen=True, checksum=checksum)
    with quiet_vlen():
        array = _new_array(
            group,
            path,
            shape=tuple(grid_shape),
            chunks=(1,) * len(grid_shape),
            shards=None if shards is None else tuple(shards),
            dtype=VariableLengthBytes(),
            fill_value=b"",
            compressors=compressors,
            filters=filters,
            attributes=attrs,
        )
    return PayloadArray(array)


def _new_array(
    group: zarr.Group,
    path: str,
    *,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: Any,
    fill_value: Any,
    compressors: Any,
    attributes: dict[str, Any],
    shards: tuple[int, ...] | None = None,
    filters: Any = None,
) -> zarr.Array[Any]:
    """Create the array ``path`` of ``group``, replacing any node there (``overwrite=True``).

    A new unsharded Zarr v3 array in a local directory gets its ``zarr.json`` written here:
    the document zarr-python builds (same metadata class, same codecs), without its
    event-loop round trips and existence checks per array.  Anything else goes through
    ``group.create_array``.
    """
    root = local_dir(group.store_path.store)
    full = f"{group.store_path.path}/{path}" if group.store_path.path else path
    if (
        root is None
        or shards is not None
        or group.metadata.zarr_format != 3
        or os.path.lexists(os.path.join(str(root), full))
    ):
        return group.create_array(
            path,
            shape=shape,
            chunks=chunks,
            shards=shards,
            dtype=dtype,
            fill_value=fill_value,
            compressors=compressors,
            filters=filters,
            attributes=attributes,
            overwrite=True,
        )
    return _create_local_v3(
        group, path, str(root), full, shape, chunks, dtype, fill_value, compressors, attributes
    )


def _create_local_v3(
    group: zarr.Group,
    path: str,
    root: str,
    full: str,
    shape: tuple[int, ...],
    chunks: tuple[int, ...],
    dtype: Any,
    fill_value: Any,
    compressors: Any,
    attributes: dict[str, Any],
) -> zarr.Array[Any]:
    """:func:`_new_array` of an unsharded v3 array in a local directory (``zarr.json`` here)."""
    zdtype = parse_dtype(dtype, zarr_format=3)
    serializer = VLenBytesCodec() if isinstance(zdtype, VariableLengthBytes) else BytesCodec()
    if compressors is None:
        extra: tuple[Any, ...] = ()
    elif isinstance(compressors, tuple | list):
        extra = tuple(compressors)
    else:
        extra = (compressors,)
    meta = ArrayV3Metadata(
        shape=shape,
        data_type=zdtype,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        chunk_key_encoding={"name": "default", "configuration": {"separator": "/"}},
        fill_value=fill_value,
        codecs=(serializer, *extra),
        attributes=attributes,
        dimension_names=None,
    )
    parts = path.split("/")
    for depth in range(1, len(parts)):  # implicit parent groups get a group document
        parent = os.path.join(root, group.store_path.path, *parts[:depth])
        if not os.path.exists(os.path.join(parent, "zarr.json")):
            os.makedirs(parent, exist_ok=True)
            write_file((os.path.join(parent, "zarr.json"), group_document()))
    target = os.path.join(root, full)
    os.makedirs(target, exist_ok=True)
    proto = default_buffer_prototype()
    write_file(
        (os.path.join(target, "zarr.json"), meta.to_buffer_dict(proto)["zarr.json"].to_bytes())
    )
    return array_at(group.store_path.store, full, meta)


def open_payload_array(group: zarr.Group, path: str) -> PayloadArray:
    """Open an existing payload array, raising ``StoreNotFoundError`` if it is absent."""
    with quiet_vlen():
        try:
            node = group[path]
        except KeyError:
            raise StoreNotFoundError(f"array {group.path}/{path} does not exist") from None
    if not isinstance(node, zarr.Array):
        raise StoreNotFoundError(f"{group.path}/{path} is a group, expected an array")
    return PayloadArray(node)


def create_dense_array(
    group: zarr.Group,
    path: str,
    data: npt.NDArray[Any],
    *,
    attributes: Mapping[str, Any],
    chunks: Sequence[int],
    compressor: Compressor | str = "default",
) -> zarr.Array[Any]:
    """Create a dense numeric array holding ``data`` with Zarr chunk shape ``chunks``."""
    array, values = declare_dense_array(
        group, path, data, attributes=attributes, chunks=chunks, compressor=compressor
    )
    write_dense(array, values)
    return array


def declare_dense_array(
    group: zarr.Group,
    path: str,
    data: npt.NDArray[Any],
    *,
    attributes: Mapping[str, Any],
    chunks: Sequence[int],
    compressor: Compressor | str = "default",
    checksum: bool = True,
) -> tuple[zarr.Array[Any], npt.NDArray[Any]]:
    """Create the dense array that will hold ``data`` (fill value 0), storing no chunk yet.

    Returns the array and ``data`` as C-contiguous little-endian values for
    :func:`write_dense`, which may run later on another thread.  ``checksum`` as for
    :func:`create_payload_array`.
    """
    data = np.ascontiguousarray(data)
    if data.dtype.byteorder == ">":
        data = data.astype(data.dtype.newbyteorder("<"))
    zarr_format = group.metadata.zarr_format
    index = path.startswith("object_index/")
    codecs = resolve_compressor(
        compressor,
        zarr_format,
        typesize=data.dtype.itemsize if index else None,
        blocksize=DENSE_FRAME_BYTES,
    )
    # Every dense chunk is one standard compressed stream (one zstd frame, or one Blosc
    # buffer whose blocks any Blosc decoder reads): multi-frame zstd chunks break readers
    # that size their buffer from the first frame (numcodecs < 0.16, tensorstore).  Stores
    # written with seekable ``object_index`` chunks (``zstd_frame_bytes``) are still read.
    attrs = dict(attributes)
    compressors, filters = with_checksum(codecs, zarr_format, vlen=False, checksum=checksum)
    array = _new_array(
        group,
        path,
        shape=data.shape,
        chunks=tuple(max(1, min(int(c), n)) for c, n in zip(chunks, data.shape, strict=True)),
        dtype=data.dtype,
        fill_value=0,
        compressors=compressors,
        filters=filters,
        attributes=attrs,
    )
    return array, data
