"""Hypothesis strategies for ZVF geometry: chunk/bin shapes, point sets, boxes, ragged data.

The strategies aim at the edges of the format (FORMAT.md §2): coordinates exactly on chunk and
bin boundaries, negative coordinates and ``-0.0``, duplicated rows, boxes aligned with chunks,
empty boxes and boxes outside the grid.  Sizes stay small so property tests are fast.

Chunk and bin shapes come in two flavours: *exact* sizes are binary fractions (0.25, 1.5, 10,
...) whose multiples are exact in float32 and float64; *decimal* sizes (0.1, 0.3, ...) add
float rounding at every boundary, which is where chunk arithmetic goes wrong.

Requires the ``hypothesis`` test dependency.

Examples
--------
>>> from hypothesis import given
>>> @given(chunk_and_bin_shapes(3))
... def test_bins_divide(shapes):
...     chunk, bins = shapes
...     assert all(c >= b for c, b in zip(chunk, bins))
>>> test_bins_divide()
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

__all__ = [
    "DECIMAL_BIN_SIZES",
    "EXACT_BIN_SIZES",
    "GraphCase",
    "MeshCase",
    "PathsCase",
    "PointCloudCase",
    "TreesCase",
    "attribute_columns",
    "bboxes",
    "chunk_and_bin_shapes",
    "graphs",
    "meshes",
    "object_id_arrays",
    "point_arrays",
    "point_clouds",
    "ragged_paths",
    "spatial_dims",
    "trees",
]

AnyArray = npt.NDArray[Any]
Shape = tuple[float, ...]

EXACT_BIN_SIZES: tuple[float, ...] = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0)
"""Bin sizes whose small multiples are exactly representable in float32 and float64."""
DECIMAL_BIN_SIZES: tuple[float, ...] = (0.1, 0.3, 0.7, 1.1, 0.05)
"""Bin sizes with no exact binary representation (boundaries suffer float rounding)."""

_ATTRIBUTE_KINDS = ("float32", "float64x3", "int16", "uint64", "bool", "string", "int8x2")
_LABELS = ("", "a", "b", "cell", "ünïcode", "a longer label")


def spatial_dims(min_dims: int = 2, max_dims: int = 4) -> st.SearchStrategy[int]:
    """Return a strategy for the number of spatial dimensions D."""
    return st.integers(min_dims, max_dims)


@st.composite
def chunk_and_bin_shapes(
    draw: st.DrawFn, ndim: int, *, exact: bool = True, max_bins_per_chunk: int = 4
) -> tuple[Shape, Shape]:
    """Draw ``(chunk_shape, bin_shape)`` with an integer number of bins per chunk on each axis.

    Parameters
    ----------
    ndim
        Spatial dimensions D.
    exact
        Only binary-fraction sizes (:data:`EXACT_BIN_SIZES`); else decimal sizes too.
    max_bins_per_chunk
        Upper bound of ``chunk_shape[d] / bin_shape[d]``.
    """
    sizes = EXACT_BIN_SIZES if exact else EXACT_BIN_SIZES + DECIMAL_BIN_SIZES
    bins = tuple(draw(st.sampled_from(sizes)) for _ in range(ndim))
    per_chunk = [draw(st.integers(1, max_bins_per_chunk)) for _ in range(ndim)]
    chunk = tuple(b * n for b, n in zip(bins, per_chunk, strict=True))
    return chunk, bins


def _axis_values(
    chunk: float, bin_size: float, span: int, allow_subnormal: bool
) -> st.SearchStrategy[float]:
    """Coordinates along one axis: chunk and bin boundaries, -0.0, or anything in range."""
    per_chunk = max(1, round(chunk / bin_size))
    return st.one_of(
        st.integers(-span, span).map(lambda k: k * chunk),
        st.integers(-span * per_chunk, span * per_chunk).map(lambda k: k * bin_size),
        st.just(-0.0),
        st.floats(
            -span * chunk,
            span * chunk,
            allow_nan=False,
            allow_infinity=False,
            allow_subnormal=allow_subnormal,
        ),
    )


@st.composite
def point_arrays(
    draw: st.DrawFn,
    chunk_shape: Sequence[float],
    bin_shape: Sequence[float] | None = None,
    *,
    dtype: npt.DTypeLike | None = None,
    min_points: int = 0,
    max_points: int = 30,
    span: int = 3,
    allow_subnormal: bool = False,
) -> AnyArray:
    """Draw an (N, D) float32 or float64 array of positions around the origin.

    Coordinates lie within ``span`` chunks of 0 on each side, with many exactly on chunk or bin
    boundaries, some ``-0.0``, and some rows duplicated.

    Parameters
    ----------
    chunk_shape, bin_shape
        The store's chunk and bin extent (boundaries are multiples of these).
    dtype
        float32 or float64; drawn when None.
    min_points, max_points
        Bounds on N.
    span
        Half-width of the coordinate range, in chunks.
    allow_subnormal
        Allow subnormal floats such as ``-5e-324`` (they sit on the wrong side of 0 after
        division by a chunk size).
    """
    bins = tuple(chunk_shape) if bin_shape is None else tuple(bin_shape)
    dt: np.dtype[Any] = (
        np.dtype(dtype)
        if dtype is not None
        else draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.float64)]))
    )
    row = st.tuples(
        *[
            _axis_values(float(c), float(b), span, allow_subnormal)
            for c, b in zip(chunk_shape, bins, strict=True)
        ]
    )
    rows = draw(st.lists(row, min_size=min_points, max_size=max_points))
    arr: AnyArray = np.array(rows, dtype=np.float64).reshape(len(rows), len(chunk_shape))
    arr = arr.astype(dt)
    if len(arr) > 1:
        index = st.integers(0, len(arr) - 1)
        for src, dst in draw(st.lists(st.tuples(index, index), max_size=len(arr) // 2)):
            arr[dst] = arr[src]
    return arr


def _times(factor: float) -> Callable[[int], float]:
    return lambda k: k * factor


@st.composite
def bboxes(draw: st.DrawFn, chunk_shape: Sequence[float], *, span: int = 4) -> tuple[Shape, Shape]:
    """Draw a query box ``(min, max)`` (half-open ``min <= p < max``).

    Boxes are random, aligned with chunk boundaries on some axes, empty (``min == max`` on an
    axis), wholly outside a grid of ``span`` chunks around the origin, or covering everything.
    """
    kind = draw(st.sampled_from(("random", "random", "empty", "outside", "everything")))
    ndim = len(chunk_shape)
    if kind == "everything":
        big = tuple(1e9 * float(c) for c in chunk_shape)
        return tuple(-b for b in big), big
    lo: list[float] = []
    hi: list[float] = []
    for c in (float(x) for x in chunk_shape):
        value = st.one_of(
            st.integers(-span, span).map(_times(c)),
            st.floats(-span * float(c), span * float(c), allow_nan=False, allow_subnormal=False),
        )
        a, b = sorted((draw(value), draw(value)))
        lo.append(a)
        hi.append(b)
    if kind == "empty":
        axis = draw(st.integers(0, ndim - 1))
        hi[axis] = lo[axis]
    elif kind == "outside":
        axis = draw(st.integers(0, ndim - 1))
        shift = (2 * span + 2) * float(chunk_shape[axis]) * draw(st.sampled_from((-1, 1)))
        lo[axis] += shift
        hi[axis] += shift
    return tuple(lo), tuple(hi)


def _attribute_values(kind: str, n: int) -> st.SearchStrategy[AnyArray]:
    if kind == "string":
        return st.lists(st.sampled_from(_LABELS), min_size=n, max_size=n).map(
            lambda v: np.array(v, dtype=str).reshape(n)
        )
    dtype, _, k = kind.partition("x")
    shape: tuple[int, ...] = (n,) if not k else (n, int(k))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        elements = hnp.from_dtype(dt, allow_subnormal=False)
        return hnp.arrays(dt, shape, elements=elements)
    return hnp.arrays(dt, shape)


@st.composite
def attribute_columns(
    draw: st.DrawFn, n: int, *, max_columns: int = 3, kinds: Sequence[str] = _ATTRIBUTE_KINDS
) -> dict[str, AnyArray]:
    """Draw per-point attributes of mixed dtypes.

    Kinds: float32 (NaN and inf included), (N, 3) float64, (N, 2) int8, int16, full-range
    uint64, bool and strings (stored as categories).
    """
    chosen = draw(st.lists(st.sampled_from(tuple(kinds)), max_size=max_columns))
    return {
        f"{kind.replace('x', '_')}_{i}": draw(_attribute_values(kind, n))
        for i, kind in enumerate(chosen)
    }


@st.composite
def object_id_arrays(draw: st.DrawFn, n: int, *, max_objects: int = 5) -> AnyArray:
    """Draw (N,) object ids: dense ``0..k-1``, sparse full-range uint64, or signed int64."""
    style = draw(st.sampled_from(("dense", "uint64", "int64")))
    k = draw(st.integers(1, max_objects))
    if style == "dense":
        pool = np.arange(k, dtype=np.int64)
    else:
        dt = np.dtype(np.uint64) if style == "uint64" else np.dtype(np.int64)
        pool = draw(hnp.arrays(dt, k, unique=True))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
    return pool[np.asarray(picks, dtype=np.int64)] if n else pool[:0]


@dataclass(frozen=True)
class PointCloudCase:
    """Input of one ``write_points`` call drawn by :func:`point_clouds`."""

    positions: AnyArray
    """(N, D) float32 or float64 coordinates."""
    chunk_shape: Shape
    """Chunk extent per axis."""
    bin_shape: Shape
    """Bin extent per axis (divides ``chunk_shape``)."""
    attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-point attributes."""
    vertex_object_ids: AnyArray | None = None
    """(N,) object id per point, or None."""

    @property
    def ndim(self) -> int:
        """Spatial dimensions D."""
        return int(self.positions.shape[1])

    def write_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``write_points(store, **kwargs)``."""
        out: dict[str, Any] = {
            "positions": self.positions,
            "chunk_shape": self.chunk_shape,
            "bin_shape": self.bin_shape,
            "attributes": self.attributes,
        }
        if self.vertex_object_ids is not None:
            out["vertex_object_ids"] = self.vertex_object_ids
        return out


@st.composite
def point_clouds(
    draw: st.DrawFn,
    *,
    ndim: int | None = None,
    exact: bool = True,
    attributes: bool = False,
    objects: bool = False,
    min_points: int = 0,
    max_points: int = 30,
    dtype: npt.DTypeLike | None = None,
) -> PointCloudCase:
    """Draw a complete point-cloud write: shapes, positions, optional attributes and ids."""
    d = draw(spatial_dims()) if ndim is None else ndim
    chunk, bins = draw(chunk_and_bin_shapes(d, exact=exact))
    pos = draw(point_arrays(chunk, bins, dtype=dtype, min_points=min_points, max_points=max_points))
    attrs = draw(attribute_columns(len(pos))) if attributes else {}
    ids = draw(object_id_arrays(len(pos))) if objects else None
    return PointCloudCase(pos, chunk, bins, attrs, ids)


# --------------------------------------------------------------------------------------------
# ragged geometry for the object types (paths, trees, graphs, meshes)


@dataclass(frozen=True)
class PathsCase:
    """Ragged paths (polylines, streamlines): flat vertices plus CSR offsets."""

    positions: AnyArray
    """(N, D) vertices of all paths, path after path."""
    offsets: npt.NDArray[np.int64]
    """(M + 1,) path ``i`` is ``positions[offsets[i]:offsets[i + 1]]``."""


@dataclass(frozen=True)
class TreesCase:
    """A forest (skeletons): each node's parent precedes it; roots have parent -1."""

    positions: AnyArray
    """(N, D) node positions."""
    parents: npt.NDArray[np.int64]
    """(N,) parent index of each node, or -1."""


@dataclass(frozen=True)
class GraphCase:
    """An undirected simple graph: no self-loops, no repeated edges."""

    positions: AnyArray
    """(N, D) node positions."""
    edges: npt.NDArray[np.int64]
    """(E, 2) node indices."""


@dataclass(frozen=True)
class MeshCase:
    """A triangle mesh with valid, non-degenerate faces."""

    positions: AnyArray
    """(N, D) vertex positions."""
    faces: npt.NDArray[np.int64]
    """(F, 3) vertex indices, three distinct per face."""


def _walk(draw: st.DrawFn, chunk_shape: Sequence[float], n: int, dtype: np.dtype[Any]) -> AnyArray:
    """Draw a random walk of ``n`` vertices whose steps reach up to one chunk (so it crosses)."""
    ndim = len(chunk_shape)
    c = np.asarray(chunk_shape, dtype=np.float64)
    start = draw(point_arrays(chunk_shape, dtype=np.float64, min_points=1, max_points=1))[0]
    unit = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
    steps = np.array(
        draw(st.lists(st.tuples(*[unit] * ndim), min_size=n - 1, max_size=n - 1)), dtype=np.float64
    ).reshape(n - 1, ndim)
    walk = np.concatenate([start[None, :], start + np.cumsum(steps * c, axis=0)])
    return walk.astype(dtype)


@st.composite
def ragged_paths(
    draw: st.DrawFn,
    chunk_shape: Sequence[float],
    *,
    min_paths: int = 0,
    max_paths: int = 5,
    min_vertices: int = 1,
    max_vertices: int = 8,
    dtype: npt.DTypeLike = np.float64,
) -> PathsCase:
    """Draw paths as random walks that cross chunk boundaries; single-vertex paths included."""
    dt = np.dtype(dtype)
    counts = draw(
        st.lists(st.integers(min_vertices, max_vertices), min_size=min_paths, max_size=max_paths)
    )
    walks = [_walk(draw, chunk_shape, n, dt) for n in counts]
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    pos = np.concatenate(walks) if walks else np.zeros((0, len(chunk_shape)), dtype=dt)
    return PathsCase(pos, offsets)


@st.composite
def trees(
    draw: st.DrawFn, chunk_shape: Sequence[float], *, max_trees: int = 3, max_nodes: int = 12
) -> TreesCase:
    """Draw a forest whose edges join nodes up to a chunk apart."""
    n = draw(st.integers(1, max_nodes))
    pos = _walk(draw, chunk_shape, n, np.dtype(np.float64))
    n_roots = draw(st.integers(1, min(max_trees, n)))
    parents = np.full(n, -1, dtype=np.int64)
    for i in range(n_roots, n):
        parents[i] = draw(st.integers(0, i - 1))
    return TreesCase(pos, parents)


@st.composite
def graphs(
    draw: st.DrawFn, chunk_shape: Sequence[float], *, max_nodes: int = 10, max_edges: int = 20
) -> GraphCase:
    """Draw a simple undirected graph (isolated nodes allowed), edges stored as ``[min, max]``."""
    pos = draw(point_arrays(chunk_shape, dtype=np.float64, min_points=1, max_points=max_nodes))
    n = len(pos)
    pairs: set[tuple[int, int]] = set()
    if n > 1:
        index = st.integers(0, n - 1)
        for a, b in draw(st.lists(st.tuples(index, index), max_size=max_edges)):
            if a != b:
                pairs.add((min(a, b), max(a, b)))
    edges = np.array(sorted(pairs), dtype=np.int64).reshape(len(pairs), 2)
    return GraphCase(pos, edges)


@st.composite
def meshes(
    draw: st.DrawFn,
    chunk_shape: Sequence[float],
    *,
    max_vertices: int = 10,
    max_faces: int = 12,
) -> MeshCase:
    """Draw a triangle soup over shared vertices (faces have three distinct vertices)."""
    pos = draw(point_arrays(chunk_shape, dtype=np.float64, min_points=3, max_points=max_vertices))
    index = st.integers(0, len(pos) - 1)
    tri = st.tuples(index, index, index).filter(lambda t: len(set(t)) == 3)
    faces = draw(st.lists(tri, max_size=max_faces, unique=True))
    return MeshCase(pos, np.array(faces, dtype=np.int64).reshape(len(faces), 3))
