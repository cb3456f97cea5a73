"""Which objects a coarse level keeps (FORMAT.md §10 ``object_sparsity``).

Objects are ranked once, at level 0, by the chosen strategy; a level with sparsity ``s`` keeps
the first ``ceil(s · n_objects)`` of the ranking, so coarser levels keep nested subsets and the
result is deterministic for a given seed.

The length and spatial-coverage rankings need every vertex; they are split into per-object
:class:`ObjectScores` (computable on any contiguous range of objects, as distributed builds
do) and :func:`rank_scores`, which orders all objects at once.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.columns import Column
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import run_starts
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import SparsityStrategy

__all__ = [
    "ObjectScores",
    "check_attribute",
    "keep_count",
    "needs_vertices",
    "object_scores",
    "rank_objects",
    "rank_scores",
    "rank_without_vertices",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def keep_count(sparsity: float, n_objects: int) -> int:
    """Return how many objects a level with ``sparsity`` keeps (at least one when any exist)."""
    if n_objects == 0:
        return 0
    return max(1, min(n_objects, math.ceil(sparsity * n_objects - 1e-9)))


def needs_vertices(strategy: SparsityStrategy) -> bool:
    """Whether ``strategy`` ranks objects by their vertices (length, spatial coverage)."""
    return strategy in (SparsityStrategy.LENGTH, SparsityStrategy.SPATIAL_COVERAGE)


@dataclass(frozen=True)
class ObjectScores:
    """Per-object inputs of the length and spatial-coverage rankings."""

    length: FloatArray
    """Path length of each object, physical units (vertex count for non-paths)."""
    cell: IntArray | None
    """Flat grid index of the chunk holding each object's centroid (spatial coverage only)."""

    @classmethod
    def concat(cls, scores: Sequence[ObjectScores]) -> ObjectScores:
        """Join the scores of consecutive object ranges, in order."""
        cells = [s.cell for s in scores if s.cell is not None]
        return cls(
            np.concatenate([s.length for s in scores]) if scores else np.zeros(0),
            np.concatenate(cells) if cells and len(cells) == len(scores) else None,
        )


def _object_length(parts: GeometryParts) -> FloatArray:
    obj = parts.vertex_objects
    assert obj is not None
    n = parts.n_objects
    if not parts.sequential or len(obj) < 2:
        return np.asarray(np.bincount(obj, minlength=n), dtype=np.float64)
    step = np.linalg.norm(np.diff(parts.positions.astype(np.float64), axis=0), axis=1)
    same = obj[1:] == obj[:-1]
    weighted = np.bincount(obj[1:][same], weights=step[same], minlength=n)
    return np.asarray(weighted, dtype=np.float64)


def _centroid_cell(parts: GeometryParts, layout: ChunkLayout) -> IntArray:
    obj = parts.vertex_objects
    assert obj is not None
    n = parts.n_objects
    counts = np.bincount(obj, minlength=n)
    sums = np.stack(
        [np.bincount(obj, weights=parts.positions[:, d], minlength=n) for d in range(layout.ndim)],
        axis=1,
    )
    centroid = sums / np.maximum(counts, 1)[:, None]
    return layout.flat_index(layout.chunk_coords(centroid))


def object_scores(
    parts: GeometryParts, strategy: SparsityStrategy, layout: ChunkLayout
) -> ObjectScores:
    """Score every object of ``parts`` for ``strategy`` (``"length"`` or ``"spatial_coverage"``).

    Each object's score depends only on its own vertices, so the scores of a range of whole
    objects equal the corresponding rows of the scores of all objects.
    """
    cell = _centroid_cell(parts, layout) if strategy is SparsityStrategy.SPATIAL_COVERAGE else None
    return ObjectScores(_object_length(parts), cell)


def rank_scores(scores: ObjectScores) -> IntArray:
    """Return object ids from most to least worth keeping: longest first, or spatial coverage.

    With centroid cells: round robin over chunks, the longest object of every chunk first,
    then the next...
    """
    length = scores.length
    if scores.cell is None:
        return np.argsort(-length, kind="stable").astype(np.int64)
    cell = scores.cell
    n = len(length)
    order = np.lexsort((np.arange(n), -length, cell))  # by cell, longest first
    starts = run_starts(cell[order])
    rank_in_cell = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    within = np.empty(n, dtype=np.int64)
    within[order] = rank_in_cell
    return np.lexsort((np.arange(n), -length, within)).astype(np.int64)


def rank_without_vertices(
    strategy: SparsityStrategy,
    n_objects: int,
    object_attributes: Mapping[str, Column],
    *,
    attribute: str | None = None,
    seed: int = 0,
) -> IntArray:
    """Rank objects for ``"random"`` or ``"attribute"`` (no vertex needed).

    Raises
    ------
    InvalidInputError
        ``"attribute"`` without a ``attribute`` naming an object attribute.
    """
    if strategy is SparsityStrategy.RANDOM:
        return np.random.default_rng(seed).permutation(n_objects).astype(np.int64)
    if strategy is not SparsityStrategy.ATTRIBUTE:
        raise InvalidInputError(f"sparsity_strategy={strategy.value!r} ranks objects by vertices")
    check_attribute(attribute, object_attributes)
    assert attribute is not None
    score = object_attributes[attribute].rows.astype(np.float64).mean(axis=1)
    return np.argsort(-score, kind="stable").astype(np.int64)


def check_attribute(attribute: str | None, names: Collection[str]) -> None:
    """Refuse a ``sparsity_attribute`` that is not one of the object attribute ``names``."""
    if attribute is None or attribute not in names:
        raise InvalidInputError(
            f"sparsity_strategy='attribute' needs sparsity_attribute naming an object "
            f"attribute; available: {sorted(names)}"
        )


def rank_objects(
    parts: GeometryParts,
    strategy: SparsityStrategy,
    layout: ChunkLayout,
    *,
    attribute: str | None = None,
    seed: int = 0,
) -> IntArray:
    """Return object ids from most to least worth keeping."""
    if needs_vertices(strategy):
        return rank_scores(object_scores(parts, strategy, layout))
    return rank_without_vertices(
        strategy, parts.n_objects, parts.object_attributes, attribute=attribute, seed=seed
    )
