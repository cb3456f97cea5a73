"""L3 checks of the object index and the other dense arrays of each level (FORMAT.md §6, §8).

* ``L3.dense.decode`` — a dense array cannot be read.
* ``L3.object_index.incomplete`` — one of ``object_index/offsets`` and ``/manifest`` is missing
  (stores whose type requires an object index report ``L1.array.missing`` as well).
* ``L3.object_index.offsets`` — offsets do not start at 0, decrease, or do not end at the
  number of manifest rows.
* ``L3.object_index.manifest`` — the manifest is not ``(n_refs, D + 2)``.
* ``L3.manifest.range`` — a ref's chunk is outside the grid, its count is < 1, or its rows
  run past the chunk's ``vertex_counts``.
* ``L3.object_attributes.align`` — an object attribute has not one row per object id.
* ``L3.groupings.index`` / ``L3.groupings_attributes.align`` — group CSR, member ids, names
  and group attributes agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._levelview import PAYLOAD_ERRORS, LevelView, RefTable, level_view

__all__ = ["check_object_index", "load_refs"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
E = Severity.ERROR


def check_object_index(ctx: ValidationContext) -> None:
    """Check offsets, manifest refs, object attributes and groupings of every level."""
    for lv in (v for v in (level_view(ctx, p) for p in ctx.level_paths) if v is not None):
        refs = load_refs(ctx, lv)
        n_objects = None if refs is None else refs.n_objects
        if n_objects is not None:
            _check_object_attributes(ctx, lv, n_objects)
        _check_groupings(ctx, lv, n_objects)


def load_refs(ctx: ValidationContext, lv: LevelView) -> RefTable | None:
    """Parse the level's object index into ``lv.refs`` (reporting problems once)."""
    if lv.refs is not None or f"refs:{lv.path}" in ctx.memo:
        return lv.refs
    ctx.memo[f"refs:{lv.path}"] = True
    has = [p for p in (L.OBJECT_OFFSETS, L.OBJECT_MANIFEST) if p in lv.dense]
    if len(has) == 1:
        other = L.OBJECT_MANIFEST if has[0] == L.OBJECT_OFFSETS else L.OBJECT_OFFSETS
        ctx.error(
            "L3.object_index.incomplete",
            lv.node(other),
            f"{has[0]!r} exists without {other!r}: the object index needs both",
        )
    arr = lv.dense.get(L.OBJECT_MANIFEST)
    offsets = lv.read_dense(ctx, L.OBJECT_OFFSETS)
    if arr is None or offsets is None:
        return None
    d, node = lv.ndim, lv.node(L.OBJECT_MANIFEST)
    if len(arr.shape) != 2 or arr.shape[1] != d + 2 or np.dtype(arr.dtype).kind not in "iu":
        ctx.error(
            "L3.object_index.manifest",
            node,
            f"manifest must be an integer (n_refs, D + 2 = {d + 2}) array "
            f"[chunk coords…, start, count], got shape {arr.shape} dtype {arr.dtype}",
        )
        return None
    n = arr.shape[0]
    if not _offsets_ok(ctx, lv.node(L.OBJECT_OFFSETS), offsets, n, "manifest refs"):
        return None
    off = offsets.astype(np.int64)
    obj = np.repeat(np.arange(len(off) - 1, dtype=np.int64), np.diff(off))
    empty = [np.empty(n, dtype=np.int64) for _ in range(3)]
    refs = RefTable(empty[0], empty[1], empty[2], obj, np.empty(n, dtype=bool), len(off) - 1)
    for lo in range(0, n, _MANIFEST_BLOCK):  # blockwise: temporaries stay small
        try:
            block = np.asarray(arr[lo : lo + _MANIFEST_BLOCK]).astype(np.int64)
        except PAYLOAD_ERRORS as exc:
            ctx.error("L3.dense.decode", node, f"the array cannot be read ({exc})")
            return None
        _parse_refs(ctx, lv, block, lo, refs)
    lv.refs = refs
    return refs


_MANIFEST_BLOCK = 1 << 18


def _parse_refs(
    ctx: ValidationContext, lv: LevelView, man: IntArray, lo: int, refs: RefTable
) -> None:
    d, hi = lv.ndim, lo + len(man)
    idx = man[:, :d] - np.asarray(lv.grid.origin, dtype=np.int64)
    in_grid = np.all((idx >= 0) & (idx < np.asarray(lv.grid.shape, dtype=np.int64)), axis=1)
    flat = np.full(len(man), -1, dtype=np.int64)
    if in_grid.any():
        flat[in_grid] = np.ravel_multi_index(tuple(idx[in_grid].T), lv.grid.shape)
    start, count = man[:, d], man[:, d + 1]
    valid = in_grid & (start >= 0) & (count >= 1)
    if lv.counts is not None:
        room = np.where(in_grid, lv.counts[np.maximum(flat, 0)], 0)
        valid &= start <= room - count
    refs.flat[lo:hi], refs.start[lo:hi], refs.count[lo:hi] = flat, start, count
    refs.valid[lo:hi] = valid
    _report_bad_refs(ctx, lv, man, lo, refs, in_grid)


def _offsets_ok(
    ctx: ValidationContext, node: str, offsets: npt.NDArray[Any], n_rows: int, what: str
) -> bool:
    problem = None
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or len(offsets) == 0:
        problem = f"must be a non-empty 1-D integer array, got shape {offsets.shape}"
    elif offsets[0] != 0:
        problem = f"must start at 0, starts at {offsets[0]}"
    elif np.any(np.diff(offsets.astype(np.int64)) < 0):
        i = int(np.argmax(np.diff(offsets.astype(np.int64)) < 0))
        problem = f"must not decrease: offsets[{i}] = {offsets[i]} > offsets[{i + 1}]"
    elif offsets[-1] != n_rows:
        problem = f"must end at the number of {what} ({n_rows}), ends at {offsets[-1]}"
    if problem is None:
        return True
    check = "L3.object_index.offsets" if "object_index" in node else "L3.groupings.index"
    ctx.error(check, node, f"CSR offsets {problem}")
    return False


def _report_bad_refs(
    ctx: ValidationContext,
    lv: LevelView,
    man: IntArray,
    lo: int,
    refs: RefTable,
    in_grid: BoolArray,
) -> None:
    d, node = lv.ndim, lv.node(L.OBJECT_MANIFEST)
    for j in np.flatnonzero(~refs.valid[lo : lo + len(man)]).tolist():
        i = lo + j
        coords, start, count = man[j, :d].tolist(), int(man[j, d]), int(man[j, d + 1])
        if not in_grid[j]:
            why = f"chunk {coords} is outside the chunk grid"
        elif count < 1:
            why = f"count {count} must be at least 1 (objects without vertices have no refs)"
        elif start < 0:
            why = f"start {start} is negative"
        else:
            n = int(lv.counts[refs.flat[i]]) if lv.counts is not None else 0
            why = f"rows {start}..{start + count - 1} run past the {n} rows of chunk {coords}"
        ctx.capped(
            "L3.manifest.range",
            E,
            node,
            f"ref {i} (object {int(refs.obj[i])}): {why}",
            where=f"[{i}]",
        )


def _check_object_attributes(ctx: ValidationContext, lv: LevelView, n_objects: int) -> None:
    for rel, arr in lv.dense.items():
        if rel.startswith(L.OBJECT_ATTRIBUTES + "/") and (
            not arr.shape or arr.shape[0] != n_objects
        ):
            ctx.error(
                "L3.object_attributes.align",
                lv.node(rel),
                f"has {arr.shape[0] if arr.shape else 0} rows, the level has {n_objects} "
                "object ids (one row per dense id)",
            )


def _check_groupings(ctx: ValidationContext, lv: LevelView, n_objects: int | None) -> None:
    offsets = lv.read_dense(ctx, L.GROUP_OFFSETS)
    members = lv.read_dense(ctx, L.GROUP_MEMBERS)
    if offsets is None or members is None:
        return
    node = lv.node(L.GROUP_OFFSETS)
    if not _offsets_ok(ctx, node, offsets, len(members), "group members"):
        return
    n_groups = len(offsets) - 1
    if n_objects is not None and members.size and (members.min() < 0 or members.max() >= n_objects):
        bad = members[(members < 0) | (members >= n_objects)][0]
        ctx.error(
            "L3.groupings.index",
            lv.node(L.GROUP_MEMBERS),
            f"member {int(bad)} is not an object id (the level has {n_objects})",
        )
    names = (ctx.attrs(lv.node(L.GROUPINGS)) or {}).get("names")
    if not isinstance(names, list) or len(names) != n_groups:
        ctx.error(
            "L3.groupings.index",
            lv.node(L.GROUPINGS),
            f"attribute 'names' must list the {n_groups} group names, got {names!r}",
        )
    for rel, arr in lv.dense.items():
        if rel.startswith(L.GROUPINGS_ATTRIBUTES + "/") and (
            not arr.shape or arr.shape[0] != n_groups
        ):
            ctx.error(
                "L3.groupings_attributes.align",
                lv.node(rel),
                f"has {arr.shape[0] if arr.shape else 0} rows, the level has {n_groups} groups",
            )
