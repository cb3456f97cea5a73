"""Chunk and bin arithmetic (FORMAT.md §2): floor division anchored at 0, half-open boxes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zarr_vectors.core import chunking
from zarr_vectors.core.chunking import ChunkLayout, axis_bounds, grid_for_bounds
from zarr_vectors.errors import InvalidInputError, MetadataValidationError, OutOfBoundsError
from zarr_vectors.spec.metadata import BoundingBox, ChunkGrid
from zarr_vectors.testing.strategies import bboxes, chunk_and_bin_shapes, point_arrays

TINY = float(np.nextafter(0.0, -1.0))
"""The negative subnormal closest to zero, -5e-324."""


def layout(chunk: tuple[float, ...], bins: tuple[float, ...] | None = None,
           origin: tuple[int, ...] | None = None,
           shape: tuple[int, ...] | None = None) -> ChunkLayout:  # fmt: skip
    d = len(chunk)
    grid = ChunkGrid(origin=origin or (-1000,) * d, shape=shape or (2000,) * d)
    return ChunkLayout(chunk, bins or chunk, grid)


# --------------------------------------------------------------------------------------------
# chunk coordinates


@dataclass(frozen=True)
class Expect:
    """Input coordinate and the chunk (and bin) it must land in."""

    p: float
    chunk: int
    bin: int = 0


CHUNK_CASES = {
    # chunk 10, bins of 2.5 (4 per chunk)
    "origin": Expect(0.0, 0, 0),
    "negative_zero": Expect(-0.0, 0, 0),
    "inside": Expect(3.0, 0, 1),
    "on_bin_boundary": Expect(5.0, 0, 2),
    "last_bin": Expect(9.99, 0, 3),
    "on_chunk_boundary": Expect(10.0, 1, 0),
    "on_negative_boundary": Expect(-10.0, -1, 0),
    "just_below_zero": Expect(-0.5, -1, 3),
    "negative_inside": Expect(-7.5, -1, 1),
    "just_below_negative_boundary": Expect(-10.000001, -2, 3),
    "far": Expect(1e6 + 5.0, 100_000, 2),
    "far_negative": Expect(-1e6 - 5.0, -100_001, 2),
}


@pytest.mark.parametrize("case", CHUNK_CASES.values(), ids=CHUNK_CASES.keys())
def test_chunk_and_bin_of_a_coordinate(case: Expect) -> None:
    lay = layout((10.0,), (2.5,), origin=(-200_000,), shape=(400_000,))
    pos = np.array([[case.p]])
    coords = lay.chunk_coords(pos)
    assert coords.tolist() == [[case.chunk]]
    assert lay.bin_flat(pos, coords).tolist() == [case.bin]


def test_chunk_coords_are_floor_division_per_axis() -> None:
    lay = layout((10.0, 2.0, 0.5))
    pos = np.array([[-0.1, 3.9, 0.5], [10.0, -2.0, -0.25], [25.0, 0.0, 1e-9]])
    assert lay.chunk_coords(pos).tolist() == [[-1, 1, 1], [1, -1, -1], [2, 0, 0]]


def test_float32_positions_use_the_same_rule() -> None:
    lay = layout((0.1,))
    pos32 = np.array([[0.3]], dtype=np.float32)  # 0.30000001192..., just above 3 * 0.1
    assert lay.chunk_coords(pos32).tolist() == [[int(np.floor(np.float64(pos32[0, 0]) / 0.1))]]


def check_locate(chunk: tuple[float, ...], bins: tuple[float, ...], pos: np.ndarray) -> None:
    """``chunk_coords``, ``flat_index`` and ``bin_flat`` agree with the fused ``locate`` (which
    the writer uses) and with ``floor(p / C)`` computed in float64."""
    lay = layout(chunk, bins)
    coords = lay.chunk_coords(pos)
    expected = np.floor(pos.astype(np.float64) / np.asarray(chunk)).astype(np.int64)
    np.testing.assert_array_equal(coords, expected)
    flat, flat_bins = lay.locate(pos.copy())  # a copy: see test_locate_leaves_input_alone
    np.testing.assert_array_equal(flat, lay.flat_index(coords))
    np.testing.assert_array_equal(flat_bins, lay.bin_flat(pos, coords))
    assert np.all((flat_bins >= 0) & (flat_bins < int(np.prod(lay.bins_per_chunk))))


PosCase = tuple[tuple[float, ...], tuple[float, ...], np.ndarray]


@st.composite
def positions_cases(draw: st.DrawFn, dtype: type[np.floating]) -> PosCase:
    d = draw(st.integers(1, 4))
    chunk, bins = draw(chunk_and_bin_shapes(d, exact=False))
    pos = draw(point_arrays(chunk, bins, dtype=dtype, min_points=1, allow_subnormal=True))
    return chunk, bins, pos


@pytest.mark.parametrize("shape", [(1, 3), (4, 1)], ids=["one_point", "one_axis"])
# regression: locate() once worked in place on a view of a float64 column with one row or one
# axis, so write_points stored (p - c*C) / bin_shape and overwrote the caller's array
def test_locate_leaves_input_alone(shape: tuple[int, int]) -> None:
    lay = layout((10.0,) * shape[1], (5.0,) * shape[1])
    pos = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 3.0
    before = pos.copy()
    lay.locate(pos)
    np.testing.assert_array_equal(pos, before)


@settings(max_examples=80)
@given(positions_cases(np.float64))
def test_chunk_arithmetic_is_consistent(case: PosCase) -> None:
    check_locate(*case)


@settings(max_examples=80)
@given(positions_cases(np.float32))
# float32(-49.7) / 0.1 is -497.0 in float32 but -498.00000763 in float64
@example(((0.1,), (0.1,), np.array([[-49.7]], dtype=np.float32)))
def test_chunk_arithmetic_is_consistent_for_float32(case: PosCase) -> None:
    check_locate(*case)


# --------------------------------------------------------------------------------------------
# bins


def test_bins_per_chunk() -> None:
    assert layout((10.0, 0.3, 4.0), (2.5, 0.1, 4.0)).bins_per_chunk == (4, 3, 1)


def test_bin_flat_is_c_order_ravel() -> None:
    lay = layout((10.0, 10.0), (5.0, 2.5))  # 2 x 4 bins
    pos = np.array([[0.0, 0.0], [0.0, 9.0], [6.0, 0.0], [6.0, 9.0], [-1.0, -1.0]])
    coords = lay.chunk_coords(pos)
    assert lay.bin_flat(pos, coords).tolist() == [0, 3, 4, 7, 7]


@pytest.mark.parametrize(
    ("p", "chunk", "bins", "expected_chunk", "expected_bin"),
    [
        # (-5e-324 + 1.0) rounds to 1.0: the raw bin is 2 of 2 and must clamp to 1
        (TINY, 1.0, 0.5, -1, 1),
        (TINY, 1.0, 0.1, -1, 9),
        # -63.6 / 0.3 rounds to -212.0, so the vertex is "in" chunk -212 but 1e-14 below its
        # lower edge: the raw bin is -1 and must clamp to 0
        (-63.6, 0.3, 0.1, -212, 0),
    ],
    ids=["upper_clamp_dyadic", "upper_clamp_decimal", "lower_clamp"],
)
def test_bins_are_clamped_against_rounding(
    p: float, chunk: float, bins: float, expected_chunk: int, expected_bin: int
) -> None:
    lay = layout((chunk,), (bins,), origin=(-1000,), shape=(2000,))
    pos = np.array([[p]])
    coords = lay.chunk_coords(pos)
    assert coords.tolist() == [[expected_chunk]]
    assert lay.bin_flat(pos, coords).tolist() == [expected_bin]


def test_bin_shape_must_divide_chunk_shape() -> None:
    with pytest.raises(MetadataValidationError, match="bin_shape"):
        layout((10.0,), (3.0,))


# --------------------------------------------------------------------------------------------
# grids and storage indices


@pytest.mark.parametrize(
    ("lo", "hi", "chunk", "origin", "shape"),
    [
        ([0.0], [0.0], [10.0], (0,), (1,)),
        ([0.0], [10.0], [10.0], (0,), (2,)),  # max on a boundary needs the next chunk
        ([-5.0, 0.0], [10.0, 99.9], [10.0, 50.0], (-1, 0), (3, 2)),
        ([-10.0], [-0.5], [10.0], (-1,), (1,)),
        ([-10.000001], [-10.0], [10.0], (-2,), (2,)),
    ],
)
def test_grid_for_bounds(lo: list[float], hi: list[float], chunk: list[float],
                         origin: tuple[int, ...], shape: tuple[int, ...]) -> None:  # fmt: skip
    assert grid_for_bounds(lo, hi, chunk) == ChunkGrid(origin=origin, shape=shape)


def test_storage_and_flat_index_round_trip() -> None:
    lay = layout((1.0, 1.0, 1.0), origin=(-2, 0, 5), shape=(4, 3, 2))
    coords = np.array([[-2, 0, 5], [1, 2, 6], [0, 1, 5]])
    assert lay.storage_index(coords).tolist() == [[0, 0, 0], [3, 2, 1], [2, 1, 0]]
    flat = lay.flat_index(coords)
    assert flat.tolist() == [0, 3 * 6 + 2 * 2 + 1, 2 * 6 + 1 * 2]
    np.testing.assert_array_equal(lay.coords_of_flat(flat), coords)
    assert lay.n_chunks == 24


@pytest.mark.parametrize("coords", [[[-3, 0]], [[0, 2]], [[2, -2]], [[0, 0], [2, 0]]])
def test_chunks_outside_the_grid_raise(coords: list[list[int]]) -> None:
    lay = layout((1.0, 1.0), origin=(-2, -1), shape=(4, 3))
    with pytest.raises(OutOfBoundsError, match="outside the store's chunk grid"):
        lay.storage_index(np.array(coords))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_locate_over_many_blocks(
    monkeypatch: pytest.MonkeyPatch, dtype: type, threads: int
) -> None:
    """Rows are located in blocks (on two threads for many rows); block edges change nothing."""
    monkeypatch.setattr(chunking, "_LOCATE_BLOCK", 7)
    monkeypatch.setattr(chunking, "_LOCATE_PARALLEL_ROWS", 50 if threads == 2 else 10**9)
    rng = np.random.default_rng(3)
    pos = rng.uniform(-30, 30, (100, 3)).astype(dtype)
    pos[::5] = np.round(pos[::5])  # on chunk and bin boundaries
    lay = layout((2.0, 3.0, 0.5), (1.0, 1.0, 0.25), origin=(-16, -11, -61), shape=(32, 22, 122))
    flat, bins = lay.locate(pos)
    coords = lay.chunk_coords(pos)
    np.testing.assert_array_equal(flat, lay.flat_index(coords))
    np.testing.assert_array_equal(bins, lay.bin_flat(pos, coords))


@pytest.mark.parametrize(
    ("n_chunks", "dtype"),
    [(256, np.uint8), (257, np.uint16), (65_536, np.uint16), (65_537, np.int64)],
)
def test_locate_gives_flat_indices_in_the_narrowest_type(n_chunks: int, dtype: type) -> None:
    lay = layout((1.0, 2.0), (0.5, 1.0), origin=(0, -1), shape=(n_chunks, 1))
    pos = np.array([[0.2, -1.5], [n_chunks - 0.5, -0.5], [n_chunks / 2, -0.1]])
    flat, _ = lay.locate(pos)
    assert lay.flat_dtype is dtype
    assert flat.dtype == dtype
    assert flat.tolist() == [0, n_chunks - 1, n_chunks // 2]


@pytest.mark.parametrize("threads", [1, 2])
def test_locate_names_the_first_row_outside_the_grid(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    monkeypatch.setattr(chunking, "_LOCATE_BLOCK", 4)
    monkeypatch.setattr(chunking, "_LOCATE_PARALLEL_ROWS", 8 if threads == 2 else 10**9)
    lay = layout((1.0, 1.0), origin=(0, 0), shape=(3, 3))
    pos = np.full((12, 2), 0.5)
    pos[9] = [5.5, 0.5]  # axis 0, a later block
    pos[6] = [0.5, -1.5]  # axis 1, an earlier block: axis 0 is reported first
    with pytest.raises(OutOfBoundsError, match=r"position row 9 falls in chunk \[5, 0\]"):
        lay.locate(pos)
    pos[2] = [np.nan, 0.5]
    with pytest.raises(OutOfBoundsError, match=r"position row 2 is not finite \(\[nan, 0.5\]\)"):
        lay.locate(pos)


def test_coords_of_flat_round_trip() -> None:
    lay = layout((1.0, 1.0, 1.0), origin=(-3, 2, 5), shape=(4, 5, 6))
    flat = np.arange(lay.n_chunks)
    coords = lay.coords_of_flat(flat)
    assert coords.dtype == np.int64
    assert coords.shape == (120, 3)
    np.testing.assert_array_equal(lay.flat_index(coords), flat)
    assert lay.coords_of_flat(np.zeros(0, dtype=np.int64)).shape == (0, 3)
    with pytest.raises(ValueError, match="out of bounds"):
        lay.coords_of_flat(np.array([120]))


def test_empty_index_arrays() -> None:
    lay = layout((1.0, 1.0))
    empty = np.zeros((0, 2), dtype=np.int64)
    assert lay.flat_index(empty).shape == (0,)
    assert lay.chunk_coords(np.zeros((0, 2))).shape == (0, 2)


# --------------------------------------------------------------------------------------------
# query boxes


def touching(lay: ChunkLayout, lo: list[float], hi: list[float]) -> set[tuple[int, ...]]:
    flat = lay.chunks_touching(BoundingBox(min=tuple(lo), max=tuple(hi)))
    return {tuple(c) for c in lay.coords_of_flat(np.sort(flat)).tolist()}


def closed_box_chunks(lay: ChunkLayout, lo: list[float], hi: list[float]) -> set[tuple[int, ...]]:
    """Grid chunks meeting the closed box [lo, hi]: the most a query may fetch."""
    first = np.floor(np.asarray(lo) / np.asarray(lay.chunk_shape)).astype(int)
    last = np.floor(np.asarray(hi) / np.asarray(lay.chunk_shape)).astype(int)
    origin, shape = np.asarray(lay.grid.origin), np.asarray(lay.grid.shape)
    first, last = np.maximum(first, origin), np.minimum(last, origin + shape - 1)
    ranges = [range(a, b + 1) for a, b in zip(first.tolist(), last.tolist(), strict=True)]
    return set(itertools.product(*ranges))


@pytest.mark.parametrize(
    ("lo", "hi", "needed"),
    [
        ([0.0], [10.0], {(0,)}),  # half-open: chunk 1 may be fetched but holds nothing inside
        ([0.0], [10.000001], {(0,), (1,)}),
        ([10.0], [20.0], {(1,)}),
        ([-10.0], [0.0], {(-1,)}),
        ([-0.5], [0.5], {(-1,), (0,)}),
        ([5.0], [5.0], set()),  # empty boxes need nothing
        ([10.0], [10.0], set()),
        ([1000.0], [2000.0], set()),  # outside the grid
        ([-1e9], [1e9], {(c,) for c in range(-3, 3)}),  # everything, clipped to the grid
    ],
)
def test_chunks_touching_1d(lo: list[float], hi: list[float], needed: set[tuple[int]]) -> None:
    lay = layout((10.0,), origin=(-3,), shape=(6,))
    got = touching(lay, lo, hi)
    assert needed <= got <= closed_box_chunks(lay, lo, hi)


def test_chunks_touching_2d() -> None:
    lay = layout((10.0, 5.0), origin=(0, 0), shape=(3, 3))
    for lo, hi, needed in [
        ([5.0, 0.0], [15.0, 5.0], {(0, 0), (1, 0)}),
        ([0.0, 0.0], [10.0, 15.0], {(0, 0), (0, 1), (0, 2)}),
        ([0.0, 20.0], [30.0, 30.0], set()),
    ]:
        got = touching(lay, lo, hi)
        assert needed <= got <= closed_box_chunks(lay, lo, hi)


def test_chunks_touching_checks_dimensions() -> None:
    lay = layout((10.0, 10.0))
    with pytest.raises(InvalidInputError, match="bbox has 3 dimensions, the store has 2"):
        lay.chunks_touching(BoundingBox(min=(0.0, 0.0, 0.0), max=(1.0, 1.0, 1.0)))


def check_touching_covers_points(chunk: tuple[float, ...], bins: tuple[float, ...],
                                 pos: np.ndarray, box: tuple[tuple[float, ...], ...],
                                 grid: int = 20) -> None:  # fmt: skip
    d = len(chunk)
    lay = layout(chunk, bins, origin=(-grid,) * d, shape=(2 * grid,) * d)
    lo, hi = np.asarray(box[0]), np.asarray(box[1])
    inside = np.all((pos >= lo) & (pos < hi), axis=1)
    flat = set(lay.flat_index(lay.chunk_coords(pos[inside])).tolist())
    got = set(lay.chunks_touching(BoundingBox(min=box[0], max=box[1])).tolist())
    assert flat <= got, f"chunks {sorted(flat - got)} hold points inside the box but were missed"


Case = tuple[tuple[float, ...], tuple[float, ...], np.ndarray, tuple[tuple[float, ...], ...]]


@st.composite
def touching_cases(draw: st.DrawFn, *, exact: bool, allow_subnormal: bool = False) -> Case:
    d = draw(st.integers(1, 3))
    chunk, bins = draw(chunk_and_bin_shapes(d, exact=exact))
    pos = draw(point_arrays(chunk, bins, min_points=1, allow_subnormal=allow_subnormal))
    return chunk, bins, pos, draw(bboxes(chunk))


@pytest.mark.slow
@settings(max_examples=80)
@given(touching_cases(exact=True))
def test_chunks_touching_covers_every_point_in_the_box(case: Case) -> None:
    check_touching_covers_points(*case)


@settings(max_examples=120)
@given(touching_cases(exact=False, allow_subnormal=True))
@example(((0.1,), (0.1,), np.array([[1.7]]), ((0.0,), (17 * 0.1,))))
# regression: chunks_touching used ceil(max / C) as the exclusive upper chunk, but p < max can
# have floor(p / C) == max / C after rounding (p=1.7, C=0.1, max=17*0.1; p=-5e-324, C=10, max=0)
@pytest.mark.slow
def test_chunks_touching_covers_points_with_decimal_chunks_and_subnormals(case: Case) -> None:
    check_touching_covers_points(*case)


@pytest.mark.parametrize(
    ("chunk", "p", "hi"),
    [(0.1, 1.7, 17 * 0.1), (10.0, TINY, 0.0), (0.1, 3.4, 34 * 0.1)],
    ids=["decimal_chunk", "subnormal_below_zero", "decimal_chunk_2"],
)
def test_chunks_touching_misses_rounded_points(chunk: float, p: float, hi: float) -> None:
    assert p < hi
    check_touching_covers_points((chunk,), (chunk,), np.array([[p]]), ((-1.0,), (hi,)), 100)


@pytest.mark.parametrize("rows", [25, 3000])
def test_axis_bounds_matches_numpy(rows: int) -> None:
    rng = np.random.default_rng(0)
    pos = rng.normal(0, 10, (rows, 4)).astype(np.float32)
    pos[:, 1] = np.abs(pos[:, 1])
    pos[[3, 11], 1] = [0.0, -0.0]  # a zero minimum: its sign is numpy's answer
    pos[7, 2] = np.nan
    lo, hi = axis_bounds(pos)
    expected_lo = [pos[:, i].min() for i in range(4)]
    expected_hi = [pos[:, i].max() for i in range(4)]
    assert lo.dtype == hi.dtype == np.float64
    assert np.array_equal(lo, expected_lo, equal_nan=True)
    assert np.array_equal(hi, expected_hi, equal_nan=True)
    assert np.signbit(lo[1]) == np.signbit(expected_lo[1])


def test_locate_checks_the_grid_from_given_bounds() -> None:
    """Bounds given by the caller decide the grid check; rows inside are located as usual."""
    lay = layout((10.0,), (5.0,), origin=(0,), shape=(2,))
    pos = np.array([[1.0], [12.0], [19.9]])
    flat, bins = lay.locate(pos, (np.array([1.0]), np.array([19.9])))
    assert flat.tolist() == [0, 1, 1]
    assert bins.tolist() == [0, 0, 1]
    with pytest.raises(OutOfBoundsError, match="row 2"):
        lay.locate(np.array([[1.0], [12.0], [20.0]]))
    with pytest.raises(OutOfBoundsError, match="row 1"):
        lay.locate(np.array([[1.0], [np.nan]]))
