"""Checks of the query statistics (docs/spec.md "Statistics").

* ``L3.statistics.attribute`` — ``statistics/<name>`` or ``value_sets/<name>`` has no
  single-column vertex attribute ``attributes/<name>`` of the same dtype.
* ``L3.statistics.shape`` — not shaped ``(n_grid_chunks, 2)`` (``(n_grid_chunks,)`` for a
  value set), or a value set's ``values`` attribute is not an ascending list of at most 64.
* ``L3.statistics.counts`` — ``counts_crc32`` missing or not an integer.
* ``L3.statistics.stale`` (warning) — ``counts_crc32`` differs from the level's
  ``vertex_counts``: readers ignore these statistics (no pruning), rewrite them.
* ``L3.statistics.values`` / ``L3.value_sets.values`` — a chunk's stored ``[min, max]`` or value
  bits differ from its decoded attribute values (readers would skip matching chunks).
"""

from __future__ import annotations

import itertools
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._levelview import LevelView, chunk_where, level_view

__all__ = ["check_statistics"]

_MAX_VALUES = 64


def _crc(counts: npt.NDArray[Any]) -> int:
    # the same digest readers compare (zarr_vectors.query.statistics.counts_crc32)
    return zlib.crc32(np.ascontiguousarray(counts, dtype="<i8").tobytes())


def check_statistics(ctx: ValidationContext) -> None:
    """Check every level's statistics and value sets against the attributes they describe."""
    for level in ctx.level_paths:
        view = level_view(ctx, level)
        if view is None:
            continue
        for rel in sorted(view.dense):
            head, _, name = rel.partition("/")
            if head in (L.STATISTICS, L.VALUE_SETS):
                _check_one(ctx, view, rel, name, head == L.VALUE_SETS)


def _check_one(ctx: ValidationContext, view: LevelView, rel: str, name: str, is_set: bool) -> None:
    arr = view.dense[rel]
    path = view.node(rel)
    source = view.payloads.get(f"{L.ATTRIBUTES}/{name}")
    if source is None or source.width != 1 or source.dtype is None:
        ctx.error(
            "L3.statistics.attribute",
            path,
            f"describes {L.ATTRIBUTES}/{name}, which is not a single-column vertex attribute here",
        )
        return
    n = int(np.prod(view.grid.shape))
    want_shape = (n,) if is_set else (n, 2)
    if tuple(arr.shape) != want_shape or (not is_set and np.dtype(arr.dtype) != source.dtype):
        ctx.error(
            "L3.statistics.shape",
            path,
            f"must be {want_shape} of {'uint64' if is_set else source.dtype}, got "
            f"{tuple(arr.shape)} of {arr.dtype}",
        )
        return
    attrs = ctx.attrs(path) or {}
    values = attrs.get("values") if is_set else None
    if is_set and not _valid_values(values, source.dtype):
        ctx.error("L3.statistics.shape", path, "'values' must be an ascending list of <= 64 values")
        return
    crc = attrs.get("counts_crc32")
    if not isinstance(crc, int) or isinstance(crc, bool):
        ctx.error("L3.statistics.counts", path, "counts_crc32 must be an integer")
        return
    if view.counts is None or crc != _crc(view.counts):
        ctx.warning(
            "L3.statistics.stale",
            path,
            "counts_crc32 does not match vertex_counts: readers ignore these statistics",
        )
        return
    stored = view.read_dense(ctx, rel)
    if stored is not None:
        _compare(ctx, view, rel, name, stored, values)


def _valid_values(values: object, dtype: np.dtype[Any]) -> bool:
    if not isinstance(values, list) or len(values) > _MAX_VALUES or dtype.kind not in "biu":
        return False
    if not all(isinstance(v, int) for v in values):  # JSON integers (bool is an int)
        return False
    info = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    in_range = all(info[0] <= v <= info[1] for v in values)
    return in_range and all(a < b for a, b in itertools.pairwise(values))


def _value_bits(vals: npt.NDArray[Any], values: list[Any]) -> np.uint64 | None:
    """Bits of the values present in ``vals`` (None when one is not in ``values``)."""
    table = np.asarray(values, dtype=vals.dtype)
    present = np.unique(vals)
    idx = np.searchsorted(table, present)
    if np.any(idx >= len(table)) or np.any(table[np.minimum(idx, len(table) - 1)] != present):
        return None
    bits = np.uint64(0)
    for k in idx:
        bits |= np.uint64(1) << np.uint64(k)
    return bits


def _chunk_ok(stored: npt.NDArray[Any], flat: int, vals: npt.NDArray[Any], values: object) -> bool:
    if isinstance(values, list):
        bits = _value_bits(vals, values)
        return bits is not None and np.uint64(stored[flat]) == bits
    lo, hi = np.fmin.reduce(vals), np.fmax.reduce(vals)
    return _same(stored[flat, 0], lo) and _same(stored[flat, 1], hi)


def _compare(
    ctx: ValidationContext,
    view: LevelView,
    rel: str,
    name: str,
    stored: npt.NDArray[Any],
    values: object,
) -> None:
    check = "L3.value_sets.values" if values is not None else "L3.statistics.values"
    occupied = view.occupied()
    for flats in view.batches(occupied):
        rows = view.read(ctx, f"{L.ATTRIBUTES}/{name}", flats, report=False)
        if rows is None:
            return
        for i, flat in enumerate(flats):
            if not rows.ok[i] or rows.counts[i] == 0:
                continue
            vals = rows.values[rows.offsets[i] : rows.offsets[i + 1], 0]
            if not _chunk_ok(stored, int(flat), vals, values):
                coords = view.chunks.coords_of_flat(np.array([flat], dtype=np.int64))[0].tolist()
                ctx.capped(
                    check,
                    Severity.ERROR,
                    view.node(rel),
                    f"chunk {coords}: stored statistics differ from the decoded values "
                    "(queries would skip matching rows); rewrite the level",
                    where=chunk_where(coords),
                )


def _same(a: Any, b: Any) -> bool:
    if np.asarray(a).dtype.kind == "f" and np.isnan(a):
        return bool(np.isnan(b))
    return bool(a == b)
