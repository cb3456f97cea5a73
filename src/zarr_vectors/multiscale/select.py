"""Pick a resolution level for a purpose: a vertex budget for a box, or a target resolution."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from zarr_vectors.core.reader import BBoxLike, LevelReader, parse_bbox
from zarr_vectors.core.store import StoreLike, list_resolution_levels, open_store
from zarr_vectors.errors import InvalidInputError

__all__ = ["choose_level", "estimate_vertices"]


def estimate_vertices(reader: LevelReader, bbox: BBoxLike | None = None) -> float:
    """Estimate the vertices of a level inside ``bbox`` from per-chunk counts only.

    Chunks wholly inside count fully; partly covered chunks count by overlapped volume
    fraction (assumes vertices spread evenly inside a chunk).  No payload is read.
    """
    if bbox is None:
        return float(reader.vertex_counts.sum())
    box = parse_bbox(bbox, reader.layout.ndim)
    flats = reader.chunks(box)
    if flats.size == 0:
        return 0.0
    lo, hi = reader.layout.chunk_box(reader.layout.coords_of_flat(flats))
    overlap = np.clip(np.minimum(hi, box.max) - np.maximum(lo, box.min), 0, None)
    frac = np.prod(overlap / np.asarray(reader.layout.chunk_shape), axis=1)
    return float(np.sum(reader.vertex_counts[flats] * frac))


def choose_level(
    store: StoreLike,
    *,
    bbox: BBoxLike | None = None,
    max_vertices: int | None = None,
    resolution: float | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Return the finest level that satisfies every given target.

    Parameters
    ----------
    store
        An existing store.
    bbox
        Region of interest for ``max_vertices`` (default: the whole store).
    max_vertices
        The level's estimated vertex count in ``bbox`` must not exceed this.
    resolution
        The level's largest bin edge must not exceed this (physical units), i.e. its detail
        is at least this fine; the coarsest such level is returned when only this is given.
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    int
        A level number; the coarsest level when no level meets ``max_vertices``.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> pts = np.random.default_rng(0).uniform(0, 100, (5000, 3))
    >>> _ = zv.write_points(store, pts, chunk_shape=(50, 50, 50), bin_shape=(5, 5, 5))
    >>> _ = zv.build_pyramid(store, [(2, 2, 2), (10, 10, 10)])
    >>> zv.choose_level(store, max_vertices=100)
    2
    >>> zv.choose_level(store, resolution=10.0)
    1
    """
    if max_vertices is None and resolution is None:
        raise InvalidInputError("give max_vertices and/or resolution")
    root = open_store(store, mode="r", storage_options=storage_options)
    levels = list_resolution_levels(root)
    readers = [LevelReader(root, n) for n in levels]
    ok = []
    for n, r in zip(levels, readers, strict=True):
        fine_enough = resolution is None or max(r.level_meta.bin_shape) <= resolution
        small_enough = max_vertices is None or estimate_vertices(r, bbox) <= max_vertices
        ok.append((n, fine_enough, small_enough))
    if max_vertices is None:
        candidates = [n for n, fine, _ in ok if fine]
        return max(candidates) if candidates else levels[0]
    candidates = [n for n, fine, small in ok if fine and small]
    return min(candidates) if candidates else levels[-1]
