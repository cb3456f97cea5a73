"""Which objects a coarse level keeps (FORMAT.md §10 ``object_sparsity``).

Objects are ranked once, at level 0, by the chosen strategy; a level with sparsity ``s`` keeps
the first ``ceil(s · n_objects)`` of the ranking, so coarser levels keep nested subsets and the
result is deterministic for a given seed.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import run_starts
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import SparsityStrategy

__all__ = ["keep_count", "rank_objects"]

IntArray = npt.NDArray[np.int64]


def keep_count(sparsity: float, n_objects: int) -> int:
    """Return how many objects a level with ``sparsity`` keeps (at least one when any exist)."""
    if n_objects == 0:
        return 0
    return max(1, min(n_objects, math.ceil(sparsity * n_objects - 1e-9)))


def _object_length(parts: GeometryParts) -> npt.NDArray[np.float64]:
    obj = parts.vertex_object
    assert obj is not None
    n = parts.n_objects
    if not parts.sequential or len(obj) < 2:
        return np.asarray(np.bincount(obj, minlength=n), dtype=np.float64)
    step = np.linalg.norm(np.diff(parts.positions.astype(np.float64), axis=0), axis=1)
    same = obj[1:] == obj[:-1]
    weighted = np.bincount(obj[1:][same], weights=step[same], minlength=n)
    return np.asarray(weighted, dtype=np.float64)


def rank_objects(
    parts: GeometryParts,
    strategy: SparsityStrategy,
    layout: ChunkLayout,
    *,
    attribute: str | None = None,
    seed: int = 0,
) -> IntArray:
    """Return object ids from most to least worth keeping."""
    n = parts.n_objects
    if strategy is SparsityStrategy.RANDOM:
        return np.random.default_rng(seed).permutation(n).astype(np.int64)
    if strategy is SparsityStrategy.ATTRIBUTE:
        if attribute is None or attribute not in parts.object_attributes:
            raise InvalidInputError(
                f"sparsity_strategy='attribute' needs sparsity_attribute naming an object "
                f"attribute; available: {sorted(parts.object_attributes)}"
            )
        score = parts.object_attributes[attribute].rows.astype(np.float64).mean(axis=1)
        return np.argsort(-score, kind="stable").astype(np.int64)
    length = _object_length(parts)
    if strategy is SparsityStrategy.LENGTH:
        return np.argsort(-length, kind="stable").astype(np.int64)
    return _spatial_coverage(parts, layout, length)


def _spatial_coverage(
    parts: GeometryParts, layout: ChunkLayout, length: npt.NDArray[np.float64]
) -> IntArray:
    """Round-robin over chunks: the longest object of every chunk first, then the next..."""
    obj = parts.vertex_object
    assert obj is not None
    n = parts.n_objects
    counts = np.bincount(obj, minlength=n)
    sums = np.stack(
        [np.bincount(obj, weights=parts.positions[:, d], minlength=n) for d in range(layout.ndim)],
        axis=1,
    )
    centroid = sums / np.maximum(counts, 1)[:, None]
    cell = layout.flat_index(layout.chunk_coords(centroid))
    order = np.lexsort((np.arange(n), -length, cell))  # by cell, longest first
    starts = run_starts(cell[order])
    rank_in_cell = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    within = np.empty(n, dtype=np.int64)
    within[order] = rank_in_cell
    return np.lexsort((np.arange(n), -length, within)).astype(np.int64)
