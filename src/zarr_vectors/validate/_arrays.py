"""Checks of the arrays inside level groups, against the layout table (FORMAT.md §6).

L1 (structure):

* ``L1.level.unknown_node`` (warning) — a node the layout does not define.
* ``L1.array.not_array`` — a layout path holds a group instead of an array.
* ``L1.array.not_allowed`` — an array the geometry type may not hold (e.g. ``links`` in a point
  cloud).
* ``L1.array.missing`` — an array required for the geometry type is absent.
* ``L1.array.unreadable`` — zarr-python cannot open the array.
* ``L1.array.vlen_dtype`` / ``L1.array.chunks`` / ``L1.array.shape`` — per-chunk arrays are
  variable-length bytes, chunked ``(1,)*D``, shaped like ``chunk_grid.shape``.
* ``L1.array.numeric`` — dense arrays hold numbers or booleans.
* ``L1.array.attr_missing`` / ``L1.array.attr_type`` — ``zv_array``, ``dtype``, ``width`` and
  ``encoding`` attributes exist with JSON types string, string, integer, string.

L2 (attribute values): ``L2.array.kind``, ``L2.array.dtype``, ``L2.array.width``,
``L2.array.encoding``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import zarr
from zarr.dtype import VariableLengthBytes
from zarr.errors import BaseZarrError

from zarr_vectors.core.segments import SEGMENTS
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind, Encoding
from zarr_vectors.spec.layout import ARRAY_SPECS, ArraySpec
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.validate._context import ArrayInfo, ValidationContext
from zarr_vectors.validate._scan import join
from zarr_vectors.validate._segments import segment_node

__all__ = [
    "check_array_attr_values",
    "check_array_properties",
    "check_level_nodes",
    "match_spec",
]

_CONTAINERS = frozenset(
    {
        L.ATTRIBUTES,
        L.LINK_ATTRIBUTES,
        L.CROSS_CHUNK_LINK_ATTRIBUTES,
        L.OBJECT_INDEX,
        L.OBJECT_ATTRIBUTES,
        L.GROUPINGS,
        L.GROUPINGS_ATTRIBUTES,
        L.STATISTICS,
        L.VALUE_SETS,
    }
)
_NAMED = "/{name}"
_ATTR_TYPES = {"zv_array": str, "dtype": str, "width": int, "encoding": str}


def match_spec(rel: str) -> ArraySpec | None:
    """Return the layout row for path ``rel`` inside a level group, or None.

    Examples
    --------
    >>> match_spec("attributes/intensity").kind
    <ArrayKind.ATTRIBUTE: 'attribute'>
    >>> match_spec("attributes") is None
    True
    """
    for spec in ARRAY_SPECS:
        if spec.path.endswith(_NAMED):
            head, _, tail = rel.rpartition("/")
            if head == spec.path.removesuffix(_NAMED) and tail:
                return spec
        elif spec.path == rel:
            return spec
    return None


def check_level_nodes(ctx: ValidationContext) -> None:
    """Match every node of every level group to the layout table; report missing arrays."""
    fmt, gtype = ctx.zarr_format, ctx.geometry_type
    for level in ctx.level_paths:
        found: set[ArrayKind] = set()
        for node in ctx.descendants(level):
            rel = node.path.removeprefix(level + "/")
            kind = node.kind(fmt)
            spec = match_spec(rel)
            if rel == SEGMENTS or rel.startswith(SEGMENTS + "/"):
                _segment_node(ctx, level, rel, node, str(kind))
                continue
            if spec is None:
                if not (kind == "group" and rel in _CONTAINERS):
                    ctx.warning(
                        "L1.level.unknown_node",
                        node.path,
                        f"{kind} {rel!r} is not part of the ZVF layout (FORMAT.md §6); "
                        "readers ignore it",
                    )
                continue
            found.add(spec.kind)
            if kind != "array":
                ctx.error(
                    "L1.array.not_array", node.path, f"{rel!r} must be an array, found a group"
                )
                continue
            if gtype is not None and not spec.allows(gtype):
                ctx.error(
                    "L1.array.not_allowed",
                    node.path,
                    f"{str(gtype)!r} stores may not hold {spec.kind.value!r} arrays",
                )
            ctx.arrays[node.path] = ArrayInfo(node.path, spec, node.attrs(fmt) or {})
        if gtype is None:
            continue
        for spec in ARRAY_SPECS:
            if spec.requires(gtype) and spec.kind not in found:
                ctx.error(
                    "L1.array.missing",
                    join(level, spec.path),
                    f"required array {spec.path!r} is missing from level {level} "
                    f"({str(gtype)!r} stores need it at every level)",
                )


def _segment_node(ctx: ValidationContext, level: str, rel: str, node: Any, kind: str) -> None:
    """Register an array of an append segment, or report a node segments do not define."""
    fmt = ctx.zarr_format
    inner = match_spec(rel.split("/", 2)[2]) if rel.count("/") >= 2 else None
    got = segment_node(ctx, level, rel, kind, inner)
    if isinstance(got, ArraySpec) and kind == "array":
        ctx.arrays[node.path] = ArrayInfo(node.path, got, node.attrs(fmt) or {})
    elif got is False and rel.count("/") >= 2:
        ctx.warning(
            "L1.level.unknown_node",
            node.path,
            f"{kind} {rel!r} is not part of an append segment's layout; readers ignore it",
        )


def check_array_properties(ctx: ValidationContext) -> None:
    """Open each layout array with zarr-python and check its data type, chunks and shape."""
    for info in ctx.arrays.values():
        _check_attr_presence(ctx, info)
        try:
            with quiet_vlen():
                info.array = zarr.open_array(
                    ctx.store_path / info.path, mode="r", zarr_format=ctx.zarr_format
                )
        except (BaseZarrError, ValueError, TypeError, KeyError, OSError) as exc:
            ctx.error("L1.array.unreadable", info.path, f"zarr-python cannot open the array: {exc}")
            continue
        if info.spec.per_chunk:
            _check_per_chunk(ctx, info, info.array)
        else:
            _check_dense(ctx, info, info.array)


def _check_attr_presence(ctx: ValidationContext, info: ArrayInfo) -> None:
    missing = [k for k in _ATTR_TYPES if k not in info.attrs]
    if missing:
        ctx.error(
            "L1.array.attr_missing",
            info.path,
            f"array attribute(s) {', '.join(map(repr, missing))} missing "
            f"(every ZVF array carries zv_array, dtype, width and encoding)",
        )
    for key, typ in _ATTR_TYPES.items():
        value = info.attrs.get(key)
        if key in info.attrs and (not isinstance(value, typ) or isinstance(value, bool)):
            ctx.error(
                "L1.array.attr_type",
                info.path,
                f"array attribute {key!r} must be a JSON {'integer' if typ is int else 'string'}"
                f", got {value!r}",
            )


def _check_per_chunk(ctx: ValidationContext, info: ArrayInfo, arr: zarr.Array[Any]) -> None:
    if not isinstance(arr.metadata.dtype, VariableLengthBytes):
        ctx.error(
            "L1.array.vlen_dtype",
            info.path,
            f"per-chunk array must have the variable-length-bytes data type (v3 "
            f"'variable_length_bytes', v2 object dtype with the vlen-bytes filter), got "
            f"{arr.metadata.dtype}",
        )
    if arr.chunks != (1,) * arr.ndim:
        ctx.error(
            "L1.array.chunks",
            info.path,
            f"per-chunk array must have chunks {(1,) * arr.ndim}, got {arr.chunks}",
        )
    _check_grid_shape(ctx, info, arr)


def _check_grid_shape(ctx: ValidationContext, info: ArrayInfo, arr: zarr.Array[Any]) -> None:
    grid, d = ctx.chunk_grid, ctx.spatial_dims
    if grid is not None and arr.shape != grid.shape:
        ctx.error(
            "L1.array.shape",
            info.path,
            f"shape {arr.shape} must equal the root chunk_grid.shape {grid.shape}",
        )
    elif grid is None and d is not None and arr.ndim != d:
        ctx.error(
            "L1.array.shape",
            info.path,
            f"array has {arr.ndim} dimensions, must have spatial_dims={d}",
        )


def _check_dense(ctx: ValidationContext, info: ArrayInfo, arr: zarr.Array[Any]) -> None:
    if np.dtype(arr.dtype).kind not in "biuf":
        ctx.error(
            "L1.array.numeric",
            info.path,
            f"dense array must hold numbers or booleans, got dtype {arr.dtype}",
        )
    if info.spec.kind is ArrayKind.VERTEX_COUNTS:
        _check_grid_shape(ctx, info, arr)


# ---------------------------------------------------------------------------------------------
# L2: attribute values


def check_array_attr_values(ctx: ValidationContext) -> None:
    """Check ``zv_array``, ``dtype``, ``width`` and ``encoding`` values against the layout."""
    for info in ctx.arrays.values():
        zv = info.attrs.get("zv_array")
        if isinstance(zv, str) and zv != info.spec.kind.value:
            ctx.error(
                "L2.array.kind",
                info.path,
                f"zv_array is {zv!r}, the array at this path is {info.spec.kind.value!r}",
            )
        _check_dtype_attr(ctx, info)
        _check_width_attr(ctx, info)
        enc = info.attrs.get("encoding")
        if isinstance(enc, str):
            valid = [e.value for e in Encoding]
            if enc not in valid:
                ctx.error("L2.array.encoding", info.path, f"encoding {enc!r} is not one of {valid}")
            elif enc == Encoding.DRACO and info.spec.kind is not ArrayKind.VERTICES:
                ctx.error(
                    "L2.array.encoding", info.path, "only 'vertices' payloads may be Draco-encoded"
                )


def _check_dtype_attr(ctx: ValidationContext, info: ArrayInfo) -> None:
    text = info.attrs.get("dtype")
    if not isinstance(text, str):
        return
    try:
        dtype = np.dtype(text)
    except TypeError:
        ctx.error("L2.array.dtype", info.path, f"dtype {text!r} is not a numpy dtype string")
        return
    spec = info.spec
    problem = None
    if dtype.byteorder == ">":
        problem = "must be little-endian"
    elif spec.kind is ArrayKind.VERTICES and dtype not in (np.dtype("<f4"), np.dtype("<f8")):
        problem = "vertices must be '<f4' or '<f8'"
    elif spec.dtype is not None and dtype != np.dtype(spec.dtype):
        problem = f"{spec.path!r} must be {spec.dtype!r}"
    elif dtype.kind not in "biuf":
        problem = "must be a numeric or boolean dtype"
    elif not spec.per_chunk and info.array is not None and np.dtype(info.array.dtype) != dtype:
        problem = f"the Zarr array stores {info.array.dtype}"
    if problem:
        ctx.error("L2.array.dtype", info.path, f"dtype attribute {text!r}: {problem}")


def _check_width_attr(ctx: ValidationContext, info: ArrayInfo) -> None:
    width = info.attrs.get("width")
    if not info.spec.per_chunk or not isinstance(width, int) or isinstance(width, bool):
        return
    d, kind = ctx.spatial_dims, info.spec.kind
    expected: int | None = None
    if kind is ArrayKind.VERTICES:
        expected = d
    elif kind is ArrayKind.VERTEX_FRAGMENTS:
        expected = L.FRAGMENT_WIDTH
    elif kind is ArrayKind.LINKS and ctx.geometry_type is not None:
        expected = type_spec(ctx.geometry_type).link_arity or None
    if width < 1:
        ctx.error("L2.array.width", info.path, f"width must be >= 1, got {width}")
    elif expected is not None and width != expected:
        ctx.error("L2.array.width", info.path, f"width must be {expected}, got {width}")
    elif kind is ArrayKind.CROSS_CHUNK_LINKS and d is not None and width % (d + 1):
        ctx.error(
            "L2.array.width",
            info.path,
            f"cross_chunk_links width must be a multiple of D+1={d + 1} "
            f"([chunk coords..., row] per endpoint), got {width}",
        )
