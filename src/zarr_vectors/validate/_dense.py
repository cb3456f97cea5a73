"""L2 checks that the chunks of the dense arrays are all there and nothing else is (cheap).

Dense arrays are small (one listing each, and ``vertex_counts`` is decoded once), so the
default :func:`~zarr_vectors.validate.validate` catches a deleted or stray chunk without
decoding any payload.

* ``L2.dense.extra_chunk`` — a key under a dense array that is no chunk of its grid.
* ``L2.dense.missing_chunk`` — a chunk that cannot be absent: ``vertex_counts`` summing to less
  than the level's ``vertex_count`` (an all-zero chunk is legitimately not stored, so the sum
  decides), a missing ``object_index/manifest`` chunk (refs are never all zero), or a missing
  last ``object_index/offsets`` chunk while the manifest holds refs.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import zarr
from zarr.errors import BaseZarrError

from zarr_vectors.core.payload.dense import read_dense_whole
from zarr_vectors.core.zarr_adapter import sync
from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.spec.conventions import ArrayKind
from zarr_vectors.validate._context import ArrayInfo, ValidationContext
from zarr_vectors.validate._scan import DOC_NAMES, join

__all__ = ["check_dense_chunks"]

MAX_LISTED_CHUNKS = 1 << 20
"""Dense arrays with more chunks than this are left to level 3 (a listing would be large)."""

_READ_ERRORS = (ZarrVectorsError, BaseZarrError, ValueError, TypeError, KeyError, OSError)


def check_dense_chunks(ctx: ValidationContext) -> None:
    """Compare the stored chunk keys of every dense array with its chunk grid."""
    for info in list(ctx.arrays.values()):
        arr = info.array
        if info.spec.per_chunk or arr is None:
            continue
        grid = tuple(int(n) for n in arr.cdata_shape)
        if math.prod(grid) > MAX_LISTED_CHUNKS:
            continue
        expected = {
            arr.metadata.encode_chunk_key(c) for c in itertools.product(*(range(n) for n in grid))
        }
        try:
            stored = _stored_keys(ctx, info)
        except _READ_ERRORS:
            continue  # a store that cannot list: L1.store.no_listing says so
        for key in sorted(stored - expected)[:5]:
            ctx.error(
                "L2.dense.extra_chunk",
                info.path,
                f"key {key!r} is not a chunk of this {list(arr.shape)} array (chunks "
                f"{list(arr.chunks)}): a stray or misplaced file",
            )
        _check_missing(ctx, info, arr, expected - stored)


def _stored_keys(ctx: ValidationContext, info: ArrayInfo) -> set[str]:
    store = ctx.store_path.store
    prefix = join(ctx.store_path.path, info.path) + "/"

    async def listing() -> set[str]:
        return {k[len(prefix) :] async for k in store.list_prefix(prefix)}

    return {k for k in sync(listing()) if k.rsplit("/", 1)[-1] not in DOC_NAMES}


def _check_missing(
    ctx: ValidationContext, info: ArrayInfo, arr: zarr.Array[Any], missing: set[str]
) -> None:
    if not missing:
        return
    kind = info.spec.kind
    if kind is ArrayKind.VERTEX_COUNTS:
        _check_vertex_counts(ctx, info, arr, missing)
    elif kind is ArrayKind.OBJECT_MANIFEST:
        _missing(ctx, info, missing, "manifest rows are never all zero, so every chunk is stored")
    elif kind is ArrayKind.OBJECT_OFFSETS and arr.shape and arr.shape[0] > 1:
        last = arr.metadata.encode_chunk_key((int(arr.cdata_shape[0]) - 1,))
        if last in missing and _manifest_rows(ctx, info) > 0:
            _missing(ctx, info, {last}, "the last offset is the manifest's row count, not 0")


def _check_vertex_counts(
    ctx: ValidationContext, info: ArrayInfo, arr: zarr.Array[Any], missing: set[str]
) -> None:
    level = info.path.split("/", 1)[0]
    node = ctx.node(level)
    attrs = node.attrs(ctx.zarr_format) if node is not None else None
    declared = attrs.get("vertex_count") if attrs else None
    if not isinstance(declared, int) or isinstance(declared, bool):
        return  # reported by the level-attribute checks
    try:
        total = int(np.asarray(read_dense_whole(arr), dtype=np.int64).sum())
    except _READ_ERRORS:
        return  # undecodable: level 3 reports it
    if total != declared:
        _missing(
            ctx,
            info,
            missing,
            f"vertex_counts sums to {total}, the level says vertex_count {declared}",
        )


def _manifest_rows(ctx: ValidationContext, info: ArrayInfo) -> int:
    manifest = ctx.arrays.get(info.path.rsplit("/", 1)[0] + "/manifest")
    if manifest is None or manifest.array is None or not manifest.array.shape:
        return 0
    return int(manifest.array.shape[0])


def _missing(ctx: ValidationContext, info: ArrayInfo, keys: set[str], why: str) -> None:
    shown = ", ".join(repr(k) for k in sorted(keys)[:5])
    ctx.error(
        "L2.dense.missing_chunk",
        info.path,
        f"chunk(s) {shown} missing ({why}); the array reads as zeros there",
    )
