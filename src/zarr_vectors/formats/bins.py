"""Default level-0 bin shapes that give useful pyramids, and the sparse-level warning.

A coarse level keeps one vertex per occupied bin of ``base_bin_shape × ratio`` (per object for
object geometries), so the level-0 bin fixes how much each ``--pyramid`` level keeps.  A bin
as large as the chunk keeps a handful of vertices per chunk (110,000 LAS points became 12 at
ratio 2).  The rule used when no bin shape is given:

* candidates are ``chunk_shape / (m · 2**k)`` for ``k = 0, 1, ...``, where ``m`` is
  ``lcm(4, ratios...)`` per axis, so every requested ratio divides the chunk, and at most
  :data:`MAX_BINS_PER_AXIS` bins per chunk axis;
* the coarsest candidate whose occupied bins hold on average at most
  :data:`TARGET_VERTICES_PER_BIN` vertices is chosen (measured on the vertices), so the
  ratio-2 level keeps roughly an eighth (volumes) to a half (curves) of the vertices;
* without the vertices (large or streamed inputs), curves (streamlines) whose mean step is
  known get the coarsest candidate no larger than :data:`CURVE_STEPS_PER_BIN` (8) steps, so
  a curve holds a few vertices per bin; other vertices are assumed to cover the two widest
  axes of the bounding box like a surface (airborne LiDAR, slices), and the bin side is about
  twice their mean spacing.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> pts = rng.uniform(0, 100, (20_000, 3))
>>> measured_bin_shape(pts, (100.0, 100.0, 100.0), [(2, 2, 2), (4, 4, 4)])
(3.125, 3.125, 3.125)
>>> extent_bin_shape((0.0, 0.0, 0.0), (1000.0, 1000.0, 10.0), 100_000, (500.0,) * 3)
(3.90625, 3.90625, 3.90625)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.errors import ZVUserWarning
from zarr_vectors.multiscale import PyramidLevel

__all__ = [
    "CURVE_STEPS_PER_BIN",
    "MAX_BINS_PER_AXIS",
    "MIN_LEVEL_SHARE",
    "TARGET_VERTICES_PER_BIN",
    "bin_candidates",
    "curve_bin_shape",
    "extent_bin_shape",
    "level0_vertices",
    "measured_bin_shape",
    "warn_sparse_levels",
]

TARGET_VERTICES_PER_BIN = 4.0
"""Mean vertices per occupied level-0 bin the default bin shape aims at (at most)."""
CURVE_STEPS_PER_BIN = 8.0
"""Largest default bin side for curves, in mean steps.  A curve cut at every bin change makes
one fragment (a 32-byte ``vertex_fragments`` row) per bin it crosses: at 4 steps a fragment
held about 2.4 vertices of a tractogram (more fragment than coordinate bytes per vertex), at
8 steps about 4.3, while a box read decodes about as much (docs/guides/pyramids.md)."""
MAX_BINS_PER_AXIS = 1024
"""Finest default bin: this many bins along a chunk axis."""
MIN_LEVEL_SHARE = 0.01
"""A pyramid level keeping a smaller share of the level-0 vertices draws a warning."""
BASE_DIVISOR = 4
"""Coarsest default bin: a quarter of the chunk per axis."""


def bin_candidates(
    chunk_shape: Sequence[float], ratios: Sequence[Sequence[int]] = ()
) -> list[tuple[float, ...]]:
    """Return the allowed default bin shapes, coarsest first.

    Each is ``chunk_shape / (m · 2**k)`` with ``m = lcm(4, ratios...)`` per axis, while every
    axis has at most :data:`MAX_BINS_PER_AXIS` bins per chunk (at least one candidate).

    Examples
    --------
    >>> bin_candidates((8.0, 8.0))[:3]
    [(2.0, 2.0), (1.0, 1.0), (0.5, 0.5)]
    """
    div = []
    for axis in range(len(chunk_shape)):
        m = BASE_DIVISOR
        for r in ratios:
            m = math.lcm(m, int(r[axis]))
        div.append(m)
    out = [tuple(float(c) / m for c, m in zip(chunk_shape, div, strict=True))]
    scale = 2
    while max(div) * scale <= MAX_BINS_PER_AXIS:
        out.append(tuple(float(c) / (m * scale) for c, m in zip(chunk_shape, div, strict=True)))
        scale *= 2
    return out


def _occupied(positions: npt.NDArray[np.floating], bins: Sequence[float]) -> int:
    """Return the number of distinct bins holding a vertex."""
    cells = np.floor(np.asarray(positions, dtype=np.float64) / np.asarray(bins)).astype(np.int64)
    cells -= cells.min(axis=0)
    spans = cells.max(axis=0) + 1
    if float(np.prod(spans.astype(np.float64))) >= 2.0**62:
        return len(np.unique(cells, axis=0))  # rows do not fit one int64 key
    # one int64 key per row: sorting 1-D keys is much faster than unique rows
    key = np.zeros(len(cells), dtype=np.int64)
    for d in range(cells.shape[1]):
        key *= spans[d]
        key += cells[:, d]
    key.sort()
    return int(np.count_nonzero(np.diff(key))) + 1 if len(key) else 0


def measured_bin_shape(
    positions: npt.NDArray[np.floating],
    chunk_shape: Sequence[float],
    ratios: Sequence[Sequence[int]] = (),
) -> tuple[float, ...]:
    """Return the coarsest candidate bin whose occupied bins average at most 4 vertices.

    Parameters
    ----------
    positions
        (N, D) vertex coordinates, physical units.
    chunk_shape
        Chunk extent per axis, physical units.
    ratios
        Bin ratios of the pyramid levels to be built (each must divide ``chunk / bin``).

    Returns
    -------
    tuple of float
        Level-0 bin extent per axis, physical units (the finest candidate when even that one
        holds more vertices per bin: duplicates).
    """
    candidates = bin_candidates(chunk_shape, ratios)
    n = len(positions)
    if n == 0:
        return candidates[0]
    for bins in candidates:
        if n / _occupied(positions, bins) <= TARGET_VERTICES_PER_BIN:
            return bins
    return candidates[-1]


def extent_bin_shape(
    lower: Sequence[float],
    upper: Sequence[float],
    n_vertices: int,
    chunk_shape: Sequence[float],
    ratios: Sequence[Sequence[int]] = (),
) -> tuple[float, ...]:
    """Return a default bin from the bounding box alone (for inputs not held in memory).

    The vertices are taken to spread over the two widest axes; the coarsest candidate whose
    side is at most twice their mean spacing ``sqrt(area / n)`` is chosen.
    """
    candidates = bin_candidates(chunk_shape, ratios)
    spans = sorted((float(u - lo) for lo, u in zip(lower, upper, strict=True)), reverse=True)
    area = math.prod(s for s in spans[:2] if s > 0) if any(s > 0 for s in spans) else 0.0
    if n_vertices <= 0 or area <= 0:
        return candidates[0]
    limit = 2.0 * math.sqrt(area / n_vertices)
    for bins in candidates:
        if max(bins) <= limit:
            return bins
    return candidates[-1]


def curve_bin_shape(
    step: float,
    chunk_shape: Sequence[float],
    ratios: Sequence[Sequence[int]] = (),
) -> tuple[float, ...]:
    """Return a default bin for curves from their mean step (for inputs not held in memory).

    A curve crossing a bin of side ``b`` holds about ``b / step`` of its vertices there, and a
    coarse level keeps one vertex per occupied bin per object: the coarsest candidate whose
    sides are all at most :data:`CURVE_STEPS_PER_BIN` steps is chosen.  A volume filled
    with curves is no surface: :func:`extent_bin_shape` would give bins holding one vertex
    each, so coarse levels would keep nearly every vertex.

    Parameters
    ----------
    step
        Mean distance between consecutive vertices of a curve, physical units.
    chunk_shape
        Chunk extent per axis, physical units.
    ratios
        Bin ratios of the pyramid levels to be built.

    Examples
    --------
    >>> curve_bin_shape(1.0, (50.0, 50.0, 50.0))
    (6.25, 6.25, 6.25)
    """
    candidates = bin_candidates(chunk_shape, ratios)
    if not (math.isfinite(step) and step > 0):
        return candidates[0]
    limit = CURVE_STEPS_PER_BIN * step
    for bins in candidates:
        if max(bins) <= limit:
            return bins
    return candidates[-1]


def warn_sparse_levels(level0_vertices: int, levels: Sequence[PyramidLevel]) -> list[int]:
    """Warn (:class:`~zarr_vectors.errors.ZVUserWarning`) about levels keeping under 1%.

    Returns
    -------
    list of int
        The level numbers warned about.
    """
    sparse = []
    for lvl in levels:
        if level0_vertices and lvl.vertex_count < MIN_LEVEL_SHARE * level0_vertices:
            sparse.append(lvl.level)
            share = 100.0 * lvl.vertex_count / level0_vertices
            warnings.warn(
                f"pyramid level {lvl.level} (bin ratio {list(lvl.bin_ratio)}) keeps "
                f"{lvl.vertex_count:,} of {level0_vertices:,} level-0 vertices ({share:.2g}%): "
                "use a smaller ratio or a finer level-0 bin shape",
                ZVUserWarning,
                stacklevel=2,
            )
    return sparse


def level0_vertices(store: StoreLike) -> int:
    """Return the number of vertices of level 0 of a store."""
    return int(LevelReader(open_store(store, mode="r"), 0).vertex_counts.sum())
