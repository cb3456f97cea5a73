"""Query shapes: exact vertex membership and conservative chunk tests.

* Box: ``min <= p < max`` per axis (half-open, FORMAT.md §2).
* Sphere ``(center, radius)``: ``sum((p - center)**2) <= radius**2`` in float64 (closed).

Chunk tests work on chunk boxes ``[c·C, (c+1)·C)``.  ``may_hold`` never misses a chunk holding
a member; ``inside`` claims a chunk only when every vertex it can hold is a member, with a
float64 rounding margin (a vertex's chunk is ``floor(p / C)`` computed in float64), so a
chunk on an edge is always decoded rather than counted whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.metadata import BoundingBox

__all__ = [
    "Sphere",
    "box_axes_inside",
    "box_chunks_inside",
    "box_sides_inside",
    "chunk_boxes",
    "in_box",
    "in_box_chunks",
    "inside_runs",
    "parse_sphere",
    "stored_bound",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_MARGIN = 8 * np.finfo(np.float64).eps


@dataclass(frozen=True)
class Sphere:
    """A closed ball: ``|p - center| <= radius``."""

    center: tuple[float, ...]
    radius: float

    @property
    def ndim(self) -> int:
        """Spatial dimensions."""
        return len(self.center)

    def contains(self, pos: npt.NDArray[np.floating]) -> npt.NDArray[np.bool_]:
        """Return which rows of (N, D) ``pos`` lie in the ball."""
        d2 = np.zeros(len(pos), dtype=np.float64)
        for d, c in enumerate(self.center):
            diff = np.asarray(pos[:, d], dtype=np.float64) - c
            d2 += diff * diff
        return d2 <= self.radius * self.radius

    def bbox(self) -> BoundingBox:
        """Return a half-open box holding the ball (for locating candidate chunks)."""
        c = np.asarray(self.center, dtype=np.float64)
        hi = np.nextafter(c + self.radius, np.inf)
        return BoundingBox(min=tuple((c - self.radius).tolist()), max=tuple(hi.tolist()))

    def may_hold(self, lo: FloatArray, hi: FloatArray) -> npt.NDArray[np.bool_]:
        """Which chunk boxes (N, D) may hold a member (nearest point within the radius)."""
        c = np.asarray(self.center, dtype=np.float64)
        pad = _MARGIN * np.maximum(np.abs(lo), np.abs(hi))
        near = np.clip(c, lo - pad, hi + pad)
        d2 = ((near - c) ** 2).sum(axis=1)
        out: npt.NDArray[np.bool_] = d2 <= self.radius * self.radius * (1 + _MARGIN) + _MARGIN
        return out

    def inside(self, lo: FloatArray, hi: FloatArray) -> npt.NDArray[np.bool_]:
        """Which chunk boxes (N, D) lie entirely in the ball (farthest corner within)."""
        c = np.asarray(self.center, dtype=np.float64)
        pad = _MARGIN * np.maximum(np.abs(lo), np.abs(hi)) + _MARGIN
        far = np.maximum(np.abs(lo - pad - c), np.abs(hi + pad - c))
        d2 = (far**2).sum(axis=1)
        out: npt.NDArray[np.bool_] = d2 * (1 + _MARGIN) < self.radius * self.radius
        return out


def parse_sphere(sphere: Any, ndim: int) -> Sphere:
    """Validate ``sphere=(center, radius)`` against ``ndim`` dimensions."""
    if isinstance(sphere, Sphere):
        center, radius = sphere.center, sphere.radius
    else:
        try:
            center, radius = sphere
        except (TypeError, ValueError):
            raise InvalidInputError("sphere must be (center, radius)") from None
    c = np.asarray(center, dtype=np.float64).ravel()
    if c.shape != (ndim,):
        raise InvalidInputError(f"sphere center has {c.size} coordinates, the store has {ndim}")
    try:
        r = float(radius)
    except (TypeError, ValueError):
        raise InvalidInputError(f"sphere radius {radius!r} is not a number") from None
    if not (np.isfinite(c).all() and np.isfinite(r) and r >= 0):
        raise InvalidInputError("sphere center must be finite and radius finite and >= 0")
    return Sphere(tuple(c.tolist()), r)


def in_box(pos: npt.NDArray[np.floating], box: BoundingBox) -> npt.NDArray[np.bool_]:
    """Return which rows satisfy ``min <= p < max`` on every axis."""
    keep = np.ones(len(pos), dtype=bool)
    for d in range(pos.shape[1]):
        col = pos[:, d]
        keep &= (col >= np.float64(box.min[d])) & (col < np.float64(box.max[d]))
    return keep


def inside_runs(
    offsets: npt.NDArray[np.int64], inside: npt.NDArray[np.bool_]
) -> tuple[IntArray, IntArray, IntArray]:
    """Cut paths to their maximal runs of consecutive vertices where ``inside`` holds.

    ``offsets`` (n + 1,) delimit the paths' rows.  Returns the rows kept, the offsets of the
    runs over those rows, and the path each run comes from (runs in row order).
    """
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    rows = np.flatnonzero(inside)
    start = np.ones(len(rows), dtype=bool)
    start[1:] = (rows[1:] != rows[:-1] + 1) | (owner[rows[1:]] != owner[rows[:-1]])
    piece_start = np.flatnonzero(start)
    new_off = np.append(piece_start, len(rows)).astype(np.int64)
    return rows.astype(np.int64), new_off, owner[rows[piece_start]].astype(np.int64)


def chunk_boxes(layout: ChunkLayout, flats: IntArray) -> tuple[FloatArray, FloatArray]:
    """Lower and upper corners (N, D) of grid chunks ``flats``."""
    lo, hi = layout.chunk_box(layout.coords_of_flat(flats))
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def box_chunks_inside(
    box: BoundingBox, layout: ChunkLayout, flats: IntArray, dtype: np.dtype[Any]
) -> npt.NDArray[np.bool_]:
    """Which chunks can hold only vertices inside the half-open ``box``.

    Exact under the writer's rule ``c = floor(p / C)`` in float64 (division is monotonic):
    no ``p < min`` falls in chunk ``c`` when ``prev(min) / C < c``, and no ``p >= max`` when
    ``floor(max / C) >= c + 1``; ``prev`` is the largest value of the vertices' ``dtype``
    below ``min``.
    """
    out: npt.NDArray[np.bool_] = np.all(box_axes_inside(box, layout, flats, dtype), axis=1)
    return out


def box_axes_inside(
    box: BoundingBox, layout: ChunkLayout, flats: IntArray, dtype: np.dtype[Any]
) -> npt.NDArray[np.bool_]:
    """(N, D): on axis d, every vertex chunk ``flats[i]`` can hold satisfies the box's bounds.

    Where it holds, a membership test need not look at that axis (see
    :func:`box_chunks_inside`, which is the all-axes case).
    """
    lower, upper = box_sides_inside(box, layout, flats, dtype)
    out: npt.NDArray[np.bool_] = lower & upper
    return out


def box_sides_inside(
    box: BoundingBox, layout: ChunkLayout, flats: IntArray, dtype: np.dtype[Any]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(N, D) each: every vertex chunk ``flats[i]`` can hold is ``>= min`` / ``< max`` on d.

    The two sides of :func:`box_axes_inside`: a count tests only the sides left open.
    """
    coords = layout.coords_of_flat(flats).astype(np.float64)
    c = np.asarray(layout.chunk_shape, dtype=np.float64)
    below = _largest_below(np.asarray(box.min, dtype=np.float64), dtype) / c
    above = np.floor(np.asarray(box.max, dtype=np.float64) / c)
    return below < coords, above >= coords + 1


def stored_bound(value: float, dtype: np.dtype[Any]) -> Any:
    """Smallest value of the float ``dtype`` that is ``>= value`` (as a ``dtype`` scalar).

    For ``x`` of that dtype, ``x >= value`` equals ``x >= b`` and ``x < value`` equals
    ``x < b`` (``value`` compared exactly, in float64), so tests of stored float32 values
    need no conversion to float64.  Values beyond the dtype's range give ``±inf`` or the
    largest finite value, with the same equivalences.
    """
    with np.errstate(over="ignore"):
        cast = np.asarray(value, dtype=np.float64).astype(dtype)
    if float(cast) < value:
        cast = np.nextafter(cast, dtype.type(np.inf))
    return dtype.type(cast)


def in_box_chunks(
    pos: npt.NDArray[np.floating],
    counts: IntArray,
    axes_inside: npt.NDArray[np.bool_],
    box: BoundingBox,
) -> npt.NDArray[np.bool_]:
    """Return :func:`in_box` of rows grouped by chunk (``counts`` rows each).

    Only the axes ``axes_inside`` (from :func:`box_axes_inside`) leaves open are tested.
    """
    keep = np.ones(len(pos), dtype=bool)
    ends = np.cumsum(counts)
    for i, end in enumerate(ends.tolist()):
        start = end - int(counts[i])
        for d in np.flatnonzero(~axes_inside[i]).tolist():
            col = pos[start:end, d]
            keep[start:end] &= (col >= np.float64(box.min[d])) & (col < np.float64(box.max[d]))
    return keep


def _largest_below(values: FloatArray, dtype: np.dtype[Any]) -> FloatArray:
    """Largest value of ``dtype`` strictly below each of ``values``, as float64."""
    cast = values.astype(dtype)
    cast = np.where(
        cast.astype(np.float64) >= values, np.nextafter(cast, dtype.type(-np.inf)), cast
    )
    return np.asarray(cast, dtype=np.float64)
