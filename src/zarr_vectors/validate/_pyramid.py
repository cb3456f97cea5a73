"""L5 pyramid checks: the levels of a store agree with each other (FORMAT.md §5, §8, §10).

Levels are compared in ascending order; each check compares a level with the previous one
present.  Consistency of each level's attributes with its ``multiscales`` entry is L2
(``L2.level.bin_ratio``, ``L2.level.bin_shape``, ``L2.level.object_sparsity``,
``L2.multiscales.unlisted_level``, ``L2.seed.5``); L5 adds:

* ``L5.pyramid.vertex_count`` — a level holds more vertices than the previous one.
* ``L5.pyramid.bin_ratio`` — a level's ``bin_ratio`` is smaller than the previous one on some
  axis (skipped when ``L2.seed.7`` already reported the ``multiscales`` entries).
* ``L5.pyramid.object_sparsity`` — ``object_sparsity`` disagrees with the objects the level
  holds: ``ceil(s × n_objects)`` of level 0's objects (at least one), within one object of
  rounding (1.0 when the store has no objects).
* ``L5.pyramid.sparsity_order`` — ``object_sparsity`` increases from one level to the next.
* ``L5.pyramid.object_ids`` — levels have different numbers of object ids (ids are the same at
  every level; dropped objects keep theirs with an empty manifest).
* ``L5.pyramid.object_subset`` — a level holds an object the previous level dropped.
* ``L5.level.coarsening`` (warning) — a level > 0 lacks ``coarsening`` naming a lower
  ``source_level``, or (stores with objects) ``sparsity_strategy``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate._context import ValidationContext, integers
from zarr_vectors.validate._levelview import level_ints, level_view
from zarr_vectors.validate._objectindex import load_refs
from zarr_vectors.validate._scan import JSON

__all__ = ["check_pyramid"]

BoolArray = npt.NDArray[np.bool_]


@dataclass
class _Level:
    """What L5 compares about one level."""

    path: str
    number: int
    attrs: Mapping[str, JSON]
    vertices: int | None
    ratio: tuple[int, ...] | None
    sparsity: float | None
    present: BoolArray | None
    """Per object id, whether the level holds vertices of it (None: no usable object index)."""
    has_index: bool | None
    """Whether the level has an object index (None: the level could not be read at all, e.g.
    unusable root metadata, which L1/L2 report)."""


def _level(ctx: ValidationContext, path: str) -> _Level:
    attrs = ctx.attrs(path) or {}
    lv = level_view(ctx, path)
    vertices = None
    if lv is not None and lv.counts is not None:
        vertices = int(np.maximum(lv.counts, 0).sum())
    elif "vertex_count" in level_ints(ctx, path):
        vertices = level_ints(ctx, path)["vertex_count"]
    refs = None if lv is None else load_refs(ctx, lv)
    raw = attrs.get("object_sparsity", 1.0)
    sparsity = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    return _Level(
        path,
        int(path),
        attrs,
        vertices,
        integers(attrs.get("bin_ratio")),
        sparsity,
        None if refs is None else refs.present(),
        None if lv is None else L.OBJECT_OFFSETS in lv.dense,
    )


def check_pyramid(ctx: ValidationContext) -> None:
    """Compare every level with the previous one and with level 0."""
    levels = [_level(ctx, p) for p in ctx.level_paths]
    if len(levels) < 2 or levels[0].number != 0:
        return
    seed7 = any(f.check == "L2.seed.7" for f in ctx.findings)
    for prev, cur in itertools.pairwise(levels):
        _compare(ctx, prev, cur, seed7)
        _check_sparsity(ctx, levels[0], cur)
        _check_coarsening(ctx, cur, {lv.number for lv in levels}, bool(levels[0].has_index))


def _compare(ctx: ValidationContext, prev: _Level, cur: _Level, seed7: bool) -> None:
    if prev.vertices is not None and cur.vertices is not None and cur.vertices > prev.vertices:
        ctx.error(
            "L5.pyramid.vertex_count",
            cur.path,
            f"level {cur.number} holds {cur.vertices} vertices, more than level {prev.number} "
            f"({prev.vertices}); coarser levels never add vertices",
        )
    if (
        not seed7
        and prev.ratio is not None
        and cur.ratio is not None
        and len(prev.ratio) == len(cur.ratio)
        and any(c < p for p, c in zip(prev.ratio, cur.ratio, strict=True))
    ):
        ctx.error(
            "L5.pyramid.bin_ratio",
            cur.path,
            f"bin_ratio {list(cur.ratio)} is smaller than level {prev.number}'s "
            f"{list(prev.ratio)} on some axis; ratios never decrease with level",
        )
    if prev.sparsity is not None and cur.sparsity is not None and cur.sparsity > prev.sparsity:
        ctx.error(
            "L5.pyramid.sparsity_order",
            cur.path,
            f"object_sparsity {cur.sparsity} is larger than level {prev.number}'s "
            f"{prev.sparsity}; coarser levels keep nested subsets of objects",
        )
    _check_objects(ctx, prev, cur)


def _check_objects(ctx: ValidationContext, prev: _Level, cur: _Level) -> None:
    if prev.present is None or cur.present is None:
        return
    if len(prev.present) != len(cur.present):
        ctx.error(
            "L5.pyramid.object_ids",
            cur.path,
            f"level {cur.number} has {len(cur.present)} object ids, level {prev.number} has "
            f"{len(prev.present)}; object ids are the same at every level",
        )
        return
    extra = np.flatnonzero(cur.present & ~prev.present)
    if len(extra):
        ctx.error(
            "L5.pyramid.object_subset",
            cur.path,
            f"{len(extra)} object(s) have vertices at level {cur.number} but not at level "
            f"{prev.number} (first ids: {extra[:5].tolist()}); each level keeps a subset of the "
            "previous level's objects",
        )


def keep_count(sparsity: float, n_objects: int) -> int:
    """Return how many objects a level with ``sparsity`` keeps (FORMAT.md §10).

    Examples
    --------
    >>> keep_count(0.5, 5), keep_count(0.01, 5), keep_count(1.0, 0)
    (3, 1, 0)
    """
    if n_objects == 0:
        return 0
    return max(1, min(n_objects, math.ceil(sparsity * n_objects - 1e-9)))


def _check_sparsity(ctx: ValidationContext, zero: _Level, cur: _Level) -> None:
    s = cur.sparsity
    if s is None or zero.has_index is None or cur.has_index is None:
        return  # an unreadable level proves nothing about its objects (no knock-on error)
    if not zero.has_index and not cur.has_index:
        if s != 1.0:
            ctx.error(
                "L5.pyramid.object_sparsity",
                cur.path,
                f"object_sparsity is {s}; a store without objects keeps 1.0 at every level",
            )
        return
    if zero.present is None or cur.present is None or len(zero.present) != len(cur.present):
        return
    n_ids, held0, held = len(zero.present), int(zero.present.sum()), int(cur.present.sum())
    k = keep_count(s, n_ids)
    empty0 = n_ids - held0  # kept objects without vertices do not show
    if k - empty0 <= held <= k or abs(held - s * held0) <= 1:
        return
    ctx.error(
        "L5.pyramid.object_sparsity",
        cur.path,
        f"object_sparsity {s} keeps ceil({s} × {n_ids}) = {k} of level 0's objects, but the "
        f"level holds {held} objects (level 0: {held0}); rewrite the attribute or the level",
    )


def _check_coarsening(
    ctx: ValidationContext, cur: _Level, numbers: set[int], has_objects: bool
) -> None:
    problems = []
    coarsening = cur.attrs.get("coarsening")
    source = coarsening.get("source_level") if isinstance(coarsening, Mapping) else None
    if not isinstance(coarsening, Mapping):
        problems.append("no 'coarsening' attribute describing how the level was built")
    elif not (isinstance(source, int) and source in numbers and source < cur.number):
        problems.append(f"coarsening.source_level {source!r} is not a lower level of the store")
    if has_objects and not isinstance(cur.attrs.get("sparsity_strategy"), str):
        problems.append("no 'sparsity_strategy' (written for coarse levels of stores with objects)")
    for problem in problems:
        ctx.add("L5.level.coarsening", Severity.WARNING, cur.path, problem)
