"""Chunk and bin arithmetic (FORMAT.md §2).

The chunk grid is anchored at coordinate 0: chunk ``c = floor(p / chunk_shape)`` covers the
half-open box ``[c·C, (c+1)·C)``.  Bins subdivide chunks; a vertex's bin inside its chunk is
``floor((p - c·C) / bin_shape)`` clamped to the chunk against float rounding, raveled in C order.
Storage index of chunk ``c`` is ``c - grid.origin``.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import smallest_uint
from zarr_vectors.errors import InvalidInputError, OutOfBoundsError
from zarr_vectors.spec.metadata import BoundingBox, ChunkGrid, check_divides

__all__ = ["MAX_GRID_CHUNKS", "ChunkLayout", "axis_bounds", "grid_for_bounds"]

MAX_GRID_CHUNKS = 1 << 30
"""Largest chunk grid a store may have: ``vertex_counts`` holds 8 bytes per slot."""

_LOCATE_BLOCK = 1 << 17
"""Rows per block of :meth:`ChunkLayout.locate`: its two float64 temporaries (2 MiB) stay in
cache, and blocks are few enough that two threads rarely wait for each other's GIL (smaller
blocks make the threads contend for it more often)."""

_LOCATE_PARALLEL_ROWS = 1 << 19
"""From this many rows on, :meth:`ChunkLayout.locate` runs on two threads."""

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]

_BOUNDS_ROWS = 1024


def axis_bounds(pos: FloatArray) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per-axis minimum and maximum of (N, D) positions (N > 0), as float64.

    The values are those of ``pos[:, i].min()`` and ``.max()`` (NaN when a column holds
    one).  Reduces blocks of ``_BOUNDS_ROWS`` rows viewed as one wide row first: numpy's
    axis-0 reduction of a narrow (N, 3) array is much slower than one over wide rows.
    """
    d = pos.shape[1]
    n = len(pos) // _BOUNDS_ROWS * _BOUNDS_ROWS
    lo, hi = pos[n:].min(axis=0, initial=np.inf), pos[n:].max(axis=0, initial=-np.inf)
    if n:
        wide = np.ascontiguousarray(pos[:n]).reshape(-1, _BOUNDS_ROWS * d)
        lo = np.minimum(lo, wide.min(axis=0).reshape(-1, d).min(axis=0))
        hi = np.maximum(hi, wide.max(axis=0).reshape(-1, d).max(axis=0))
    # a zero extreme is 0.0 or -0.0 depending on the reduction order: ask numpy's own
    for i in np.flatnonzero((lo == 0) | (hi == 0)).tolist():
        lo[i], hi[i] = pos[:, i].min(), pos[:, i].max()
    return lo.astype(np.float64), hi.astype(np.float64)


def grid_for_bounds(
    lo: Sequence[float],
    hi: Sequence[float],
    chunk_shape: Sequence[float],
    align: Sequence[int] | None = None,
) -> ChunkGrid:
    """Return the smallest grid whose chunks cover every point in ``[lo, hi]``.

    With ``align`` (chunks per shard of a sharded store) the origin is rounded down to a
    multiple of it on each axis: every shard then covers the same chunk coordinates whatever
    the data's extent, so parallel writers that split the work by blocks of chunk
    coordinates (multiples of the shard shape) each own whole shards.

    Examples
    --------
    >>> grid_for_bounds([-5.0, 0.0], [10.0, 99.9], [10.0, 50.0])
    ChunkGrid(origin=(-1, 0), shape=(3, 2))
    >>> grid_for_bounds([-5.0, 0.0], [10.0, 99.9], [10.0, 50.0], align=(2, 2))
    ChunkGrid(origin=(-2, 0), shape=(4, 2))
    """
    c = np.asarray(chunk_shape, dtype=np.float64)
    lo_c = np.floor(np.asarray(lo, dtype=np.float64) / c)
    hi_c = np.floor(np.asarray(hi, dtype=np.float64) / c)
    if np.any(np.abs(lo_c) > 2.0**53) or np.any(np.abs(hi_c) > 2.0**53):
        raise InvalidInputError(
            f"coordinates {list(np.asarray(lo))} .. {list(np.asarray(hi))} are too large for "
            f"chunk_shape {c.tolist()}: chunk indices would exceed 2**53"
        )
    first, last = lo_c.astype(np.int64), hi_c.astype(np.int64)
    if align is not None:
        step = np.asarray(align, dtype=np.int64)
        first = np.floor_divide(first, step) * step
    shape = last - first + 1
    if float(np.prod(shape.astype(np.float64))) > MAX_GRID_CHUNKS:
        raise InvalidInputError(
            f"the data extent {list(np.asarray(lo))} .. {list(np.asarray(hi))} spans "
            f"{shape.tolist()} chunks of {c.tolist()}; use a larger chunk_shape (at most "
            f"{MAX_GRID_CHUNKS:,} chunk slots)"
        )
    return ChunkGrid(origin=tuple(first.tolist()), shape=tuple(shape.tolist()))


@dataclass(frozen=True)
class ChunkLayout:
    """Chunk grid plus bin subdivision of one resolution level.

    Examples
    --------
    >>> layout = ChunkLayout((10.0, 10.0), (5.0, 5.0), ChunkGrid(origin=(0, 0), shape=(2, 2)))
    >>> layout.bins_per_chunk
    (2, 2)
    >>> layout.chunk_coords(np.array([[12.0, 3.0]])).tolist()
    [[1, 0]]
    """

    chunk_shape: tuple[float, ...]
    """Chunk extent, physical units."""
    bin_shape: tuple[float, ...]
    """Bin extent at this level, physical units; divides ``chunk_shape``."""
    grid: ChunkGrid
    """Chunk coordinates covered by the store."""

    def __post_init__(self) -> None:
        check_divides(self.chunk_shape, self.bin_shape, "bin_shape")

    @property
    def ndim(self) -> int:
        """Spatial dimensions D."""
        return len(self.chunk_shape)

    @property
    def bins_per_chunk(self) -> tuple[int, ...]:
        """Bins along each axis of a chunk."""
        return tuple(round(c / b) for c, b in zip(self.chunk_shape, self.bin_shape, strict=True))

    @property
    def n_chunks(self) -> int:
        """Number of chunk slots in the grid."""
        return int(np.prod(self.grid.shape))

    def chunk_coords(self, positions: FloatArray) -> IntArray:
        """Return the chunk coordinate of each position, shape (N, D)."""
        out = np.empty(positions.shape, dtype=np.int64)
        for d in range(self.ndim):
            # floor(p / C) in float64 exactly as the spec says: float32 input divided by a
            # Python float would stay float32 (NEP 50) and round differently near boundaries
            col = np.asarray(positions[:, d], dtype=np.float64)
            out[:, d] = np.floor(col / self.chunk_shape[d])
        return out

    def bin_flat(self, positions: FloatArray, chunk_coords: IntArray) -> IntArray:
        """Return the flat (C-order) bin index of each position inside its chunk."""
        nb = self.bins_per_chunk
        flat = np.zeros(len(positions), dtype=np.int64)
        for d in range(self.ndim):
            if nb[d] == 1:
                continue
            local = np.asarray(positions[:, d], dtype=np.float64) - (
                chunk_coords[:, d] * self.chunk_shape[d]
            )
            local /= self.bin_shape[d]
            b = np.floor(local).astype(np.int64)
            np.clip(b, 0, nb[d] - 1, out=b)
            flat *= nb[d]
            flat += b
        return flat

    @property
    def bin_dtype(self) -> type[np.integer[Any]]:
        """Narrowest of uint8, uint16 and int64 holding every flat bin index of a chunk."""
        return smallest_uint(int(np.prod(self.bins_per_chunk)))

    @property
    def flat_dtype(self) -> type[np.integer[Any]]:
        """Narrowest of uint8, uint16 and int64 holding every flat chunk index of the grid."""
        return smallest_uint(self.n_chunks)

    def locate(
        self,
        positions: FloatArray,
        bounds: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    ) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]:
        """Return the flat grid index of each position's chunk and its flat bin in the chunk.

        Chunks come as :attr:`flat_dtype` and bins as :attr:`bin_dtype` (a grid rarely has
        more than 65,536 chunks nor a chunk more than 256 bins: an int64 per vertex would be
        4-8x the memory to fill and read).

        Same arithmetic as :meth:`chunk_coords`, :meth:`flat_index` and :meth:`bin_flat`, fused
        into one pass over blocks of rows that stay in cache: each axis's chunk and bin
        coordinate is computed in float64 exactly as the spec says, then combined in the
        narrow output types.

        Parameters
        ----------
        positions
            (N, D) coordinates, physical units.
        bounds
            Per-axis minimum and maximum of ``positions`` when the caller has them (the
            check that every row is on the grid needs only these: ``floor(p / C)`` is
            monotonic in ``p``); computed here when None.

        Raises
        ------
        OutOfBoundsError
            A position falls outside the grid (naming the first such row); NaN does too.
        """
        n = len(positions)
        flat = np.zeros(n, dtype=self.flat_dtype)
        bins = np.zeros(n, dtype=self.bin_dtype)
        if n == 0:
            return flat, bins
        lo, hi = axis_bounds(positions) if bounds is None else bounds
        first = np.floor(np.asarray(lo, dtype=np.float64) / np.asarray(self.chunk_shape))
        last = np.floor(np.asarray(hi, dtype=np.float64) / np.asarray(self.chunk_shape))
        origin, shape = np.asarray(self.grid.origin), np.asarray(self.grid.shape)
        if not (np.all(first >= origin) and np.all(last < origin + shape)):  # NaN fails too
            self._raise_out_of_grid(positions)
        if n < _LOCATE_PARALLEL_ROWS:
            self._locate_rows(positions, flat, bins)
        else:  # numpy releases the GIL in each block's arithmetic: halves run side by side
            half = n // 2
            with ThreadPoolExecutor(max_workers=2) as pool:
                upper = pool.submit(self._locate_rows, positions[half:], flat[half:], bins[half:])
                self._locate_rows(positions[:half], flat[:half], bins[:half])
                upper.result()
        return flat, bins

    def _locate_rows(
        self,
        positions: FloatArray,
        flat: npt.NDArray[np.integer[Any]],
        bins: npt.NDArray[np.integer[Any]],
    ) -> None:
        """Locate rows (all on the grid) block by block into ``flat`` and ``bins``."""
        n = len(positions)
        block = max(1, min(n, _LOCATE_BLOCK))
        bufs = np.empty((2, block), dtype=np.float64)
        flat_axis = np.empty(block, dtype=flat.dtype)
        bin_axis = np.empty(block, dtype=bins.dtype)
        for a in range(0, n, block):
            b = min(a + block, n)
            k = b - a
            self._locate_block(
                positions[a:b], bufs[:, :k], flat_axis[:k], bin_axis[:k], flat[a:b], bins[a:b]
            )

    def _locate_block(
        self,
        pos: FloatArray,
        bufs: npt.NDArray[np.float64],
        flat_axis: npt.NDArray[np.integer[Any]],
        bin_axis: npt.NDArray[np.integer[Any]],
        flat: npt.NDArray[np.integer[Any]],
        bins: npt.NDArray[np.integer[Any]],
    ) -> None:
        """Locate one block of rows into ``flat`` and ``bins`` (both zero on entry).

        Per axis: ``c = floor(p / C)`` and ``floor((p - c·C) / B)`` clamped to the chunk, in
        float64; ``c - origin`` and the clamped bin are whole and in range, so converting
        them to the narrow output types is exact (the bin's floor is the conversion's
        truncation, the value being clamped to >= 0 first), and the C-order ravel is done in
        those types.
        """
        c, local = bufs
        nb = self.bins_per_chunk
        origin, shape = self.grid.origin, self.grid.shape
        binned = placed = False  # an earlier axis has more than one bin / chunk
        for d in range(self.ndim):
            col = pos[:, d]
            size = self.chunk_shape[d]
            # floor(p / C) in float64 exactly as the spec says: float32 input divided by a
            # Python float would stay float32 (NEP 50) and round differently near boundaries
            np.divide(col, size, out=c, dtype=np.float64)
            np.floor(c, out=c)
            if nb[d] > 1:
                np.multiply(c, size, out=local)
                np.subtract(col, local, out=local, dtype=np.float64)
                local /= self.bin_shape[d]
                np.clip(local, 0, nb[d] - 1, out=local)
                np.copyto(bin_axis, local, casting="unsafe")
                if binned:  # nb[d] <= (bins of the chunk) / 2 fits the type
                    np.multiply(bins, bins.dtype.type(nb[d]), out=bins)
                bins += bin_axis
                binned = True
            if shape[d] > 1:
                np.subtract(c, origin[d], out=flat_axis, casting="unsafe")
                if placed:
                    np.multiply(flat, flat.dtype.type(shape[d]), out=flat)
                flat += flat_axis
                placed = True

    def _raise_out_of_grid(self, positions: FloatArray) -> None:
        """Raise for the first row (on the first axis that has one) outside the grid."""
        finite = np.isfinite(positions).all(axis=1)
        if not finite.all():
            row = int(np.argmin(finite))
            raise OutOfBoundsError(
                f"position row {row} is not finite ({positions[row].tolist()}): it is in no chunk"
            )
        coords = self.chunk_coords(positions)
        for d in range(self.ndim):
            idx = coords[:, d] - self.grid.origin[d]
            bad = (idx < 0) | (idx >= self.grid.shape[d])
            if bad.any():
                row = int(np.argmax(bad))
                raise OutOfBoundsError(
                    f"position row {row} falls in chunk {coords[row].tolist()}, outside the "
                    f"store's chunk grid (origin {list(self.grid.origin)}, shape "
                    f"{list(self.grid.shape)}); create the store with bounds that cover all data"
                )
        raise AssertionError("no position is outside the grid")  # pragma: no cover

    def storage_index(self, chunk_coords: IntArray) -> IntArray:
        """Return grid indices ``c - origin``; raise if a chunk falls outside the grid."""
        idx = chunk_coords - np.asarray(self.grid.origin, dtype=np.int64)
        if len(idx) == 0:
            return idx
        lo = np.array([idx[:, d].min() for d in range(self.ndim)])
        hi = np.array([idx[:, d].max() for d in range(self.ndim)])
        if np.any(lo < 0) or np.any(hi >= np.asarray(self.grid.shape)):
            shape = np.asarray(self.grid.shape, dtype=np.int64)
            row = int(np.argmax(np.any((idx < 0) | (idx >= shape), axis=1)))
            raise OutOfBoundsError(
                f"chunk {chunk_coords[row].tolist()} is outside the store's chunk grid "
                f"(origin {list(self.grid.origin)}, shape {list(self.grid.shape)}); create the "
                "store with bounds that cover all data"
            )
        return idx

    def flat_index(self, chunk_coords: IntArray) -> IntArray:
        """Return the C-order flat grid index of chunk coordinates (N, D)."""
        idx = self.storage_index(chunk_coords)
        flat = np.zeros(len(idx), dtype=np.int64)
        for d in range(self.ndim):
            flat *= self.grid.shape[d]
            flat += idx[:, d]
        return flat

    def coords_of_flat(self, flat: IntArray) -> IntArray:
        """Return chunk coordinates (N, D) of flat grid indices."""
        axes = np.unravel_index(flat, self.grid.shape)
        if np.ndim(flat) != 1:
            idx = np.stack(axes, axis=1).astype(np.int64)
            return idx + np.asarray(self.grid.origin, dtype=np.int64)
        out = np.empty((len(axes[0]), self.ndim), dtype=np.int64)
        for d, (c, o) in enumerate(zip(axes, self.grid.origin, strict=True)):
            np.add(c, o, out=out[:, d])
        return out

    def chunk_box(self, chunk_coords: IntArray) -> tuple[FloatArray, FloatArray]:
        """Return lower and upper corners (N, D) of chunks."""
        c = np.asarray(self.chunk_shape, dtype=np.float64)
        lo = chunk_coords * c
        return lo, lo + c

    def chunks_touching(self, bbox: BoundingBox) -> IntArray:
        """Return the flat indices of grid chunks that intersect ``min <= p < max``."""
        if bbox.ndim != self.ndim:
            raise InvalidInputError(f"bbox has {bbox.ndim} dimensions, the store has {self.ndim}")
        c = np.asarray(self.chunk_shape, dtype=np.float64)
        origin = np.asarray(self.grid.origin, dtype=np.int64)
        shape = np.asarray(self.grid.shape, dtype=np.int64)
        lo = np.floor(np.asarray(bbox.min) / c).astype(np.int64) - origin
        # last chunk a point p < max can fall in: floor(prev(max) / C), prev(max) being the
        # largest float below max (division is monotonic); exact on boundaries, and safe when
        # decimal chunk sizes round p / C up to the next integer
        below = np.nextafter(np.asarray(bbox.max, dtype=np.float64), -np.inf)
        hi = np.floor(below / c).astype(np.int64) + 1 - origin
        lo = np.clip(lo, 0, shape)
        hi = np.clip(hi, 0, shape)
        if np.any(hi <= lo):
            return np.zeros(0, dtype=np.int64)
        axes = np.meshgrid(*[np.arange(a, b) for a, b in zip(lo, hi, strict=True)], indexing="ij")
        return np.ravel_multi_index(tuple(a.ravel() for a in axes), tuple(shape)).astype(np.int64)
