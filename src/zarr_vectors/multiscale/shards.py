"""Chunks per shard of the coarse levels of a pyramid (docs/spec.md §11 "Storage").

A coarse level keeps level 0's chunk grid (FORMAT.md §3), so without sharding it writes about
as many files as level 0 for a fraction of the vertices: a level of ``bin_ratio`` r has at most
``1 / prod(r)`` as many bins per chunk.  In a Zarr v3 store whose level 0 is not sharded, each
coarse level therefore groups ``r`` chunks per axis into one shard: a shard covers as many
of the level's bins as a level-0 chunk holds level-0 bins.  Shard boundaries must fall on
multiples of the shard shape in chunk coordinates (distributed builds split the work by such
blocks, see :func:`~zarr_vectors.core.chunking.grid_for_bounds`), so each axis keeps only the
part of ``r`` that divides the grid origin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["coarse_level_shards"]


def coarse_level_shards(
    ratios: Sequence[Sequence[int]],
    origin: Sequence[int],
    grid_shape: Sequence[int],
    *,
    level0_shards: tuple[int, ...] | None,
    zarr_format: int,
) -> tuple[tuple[int, ...] | None, ...]:
    """Return the chunks per shard of each coarse level's payload arrays (None: unsharded).

    Parameters
    ----------
    ratios
        Bin ratio of each coarse level, relative to level 0.
    origin, grid_shape
        The store's chunk grid (``chunk_grid.origin`` and ``.shape``), in chunks.
    level0_shards
        Level 0's chunks per shard when its grid is aligned to them, else None.
    zarr_format
        2 or 3; Zarr v2 has no sharding.

    Returns
    -------
    tuple
        One entry per level: ``level0_shards`` when level 0 is sharded (every level alike);
        else per axis the largest divisor of ``ratio`` that divides ``origin`` (halved while it
        still spans two grids), or None when that is 1 on every axis or the store is v2.

    Examples
    --------
    >>> coarse_level_shards([(2, 2), (4, 4)], (0, -2), (10, 10), level0_shards=None, zarr_format=3)
    ((2, 2), (4, 2))
    """
    if level0_shards is not None:
        return tuple(level0_shards for _ in ratios)
    if zarr_format != 3:
        return tuple(None for _ in ratios)
    out: list[tuple[int, ...] | None] = []
    for ratio in ratios:
        shards = []
        for r, o, n in zip(ratio, origin, grid_shape, strict=True):
            s = math.gcd(int(r), int(o))  # gcd(r, 0) = r
            while s % 2 == 0 and s // 2 >= n:  # a shard wider than twice the grid
                s //= 2
            shards.append(s)
        out.append(None if all(s == 1 for s in shards) else tuple(shards))
    return tuple(out)
