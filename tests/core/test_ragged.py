"""Vectorised ragged helpers agree with their naive Python definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.core.ragged import (
    RangeOrder,
    as_index,
    change_mask,
    concat_ranges,
    offsets_from_counts,
    run_starts,
    sort_order,
)

counts_lists = st.lists(st.integers(0, 6), max_size=12)


@settings(max_examples=100)
@given(counts_lists)
def test_offsets_from_counts(counts: list[int]) -> None:
    out = offsets_from_counts(counts)
    assert out.dtype == np.int64
    assert out.tolist() == [0, *np.cumsum(counts, dtype=np.int64).tolist()]


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 5)), max_size=10))
def test_concat_ranges(ranges: list[tuple[int, int]]) -> None:
    starts = [s for s, _ in ranges]
    counts = [n for _, n in ranges]
    expected = [v for s, n in ranges for v in range(s, s + n)]
    out = concat_ranges(starts, counts)
    assert out.dtype == np.int64
    assert out.tolist() == expected


@pytest.mark.parametrize(
    ("starts", "counts", "expected"),
    [
        ([], [], []),
        ([5], [0], []),
        ([5, 7], [0, 2], [7, 8]),
        ([3, 0, 9], [2, 0, 1], [3, 4, 9]),
        ([10, 10], [2, 2], [10, 11, 10, 11]),
    ],
)
def test_concat_ranges_edges(starts: list[int], counts: list[int], expected: list[int]) -> None:
    assert concat_ranges(starts, counts).tolist() == expected


@pytest.mark.parametrize("into", [False, True])
def test_concat_ranges_spanning_blocks(into: bool) -> None:
    # ranges long and short, zero-length ones too, crossing the blocks the expansion works in
    rng = np.random.default_rng(7)
    counts = np.concatenate([rng.integers(0, 300, 900), [70_000, 0, 1], rng.integers(0, 3, 500)])
    starts = rng.integers(-(10**6), 10**9, len(counts))
    expected = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, counts, strict=True)])
    assert len(expected) > 3 * (1 << 16)
    out = np.full(len(expected), -5, dtype=np.int64) if into else None
    got = concat_ranges(starts, counts, out)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    if out is not None:
        assert got is out


@settings(max_examples=150)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), max_size=10),
    st.integers(-3, 40),
    st.integers(-3, 40),
)
def test_range_order_slices_equal_the_expanded_order(
    ranges: list[tuple[int, int]], a: int, b: int
) -> None:
    starts = np.array([s for s, _ in ranges], dtype=np.int64)
    counts = np.array([n for _, n in ranges], dtype=np.int64)
    expected = [v for s, n in ranges for v in range(s, s + n)]
    order = RangeOrder(starts, counts)
    assert len(order) == len(expected)
    assert as_index(order).tolist() == expected
    got = order[a:b]
    assert got.dtype == np.int64
    assert got.tolist() == expected[a:b]


def test_range_order_refuses_a_step() -> None:
    with pytest.raises(ValueError, match="step"):
        RangeOrder(np.array([0]), np.array([4]))[::2]


def naive_run_starts(*keys: list[int]) -> list[int]:
    n = len(keys[0])
    return [i for i in range(n) if i == 0 or any(k[i] != k[i - 1] for k in keys)]


@settings(max_examples=100)
@given(st.integers(0, 15).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 2), min_size=n, max_size=n),
                        st.lists(st.integers(0, 2), min_size=n, max_size=n),
                        st.lists(st.booleans(), min_size=n, max_size=n))
))  # fmt: skip
def test_run_starts(keys: tuple[list[int], list[int], list[bool]]) -> None:
    a, b, extra = keys
    assert run_starts(np.array(a, np.int64)).tolist() == naive_run_starts(a)
    assert run_starts(np.array(a, np.int64), np.array(b, np.int64)).tolist() == (
        naive_run_starts(a, b)
    )
    with_extra = run_starts(np.array(a, np.int64), extra=np.array(extra, bool)).tolist()
    assert with_extra == sorted(set(naive_run_starts(a)) | {i for i, e in enumerate(extra) if e})
    mask = change_mask(np.array(a, np.int64), np.array(b, np.int64), extra=np.array(extra, bool))
    expected = set(naive_run_starts(a, b)) | {i for i, e in enumerate(extra) if e}
    assert mask.dtype == bool
    assert np.flatnonzero(mask).tolist() == sorted(expected)


@st.composite
def sort_keys(draw: st.DrawFn) -> tuple[list[np.ndarray], list[int]]:
    n = draw(st.integers(0, 30))
    sizes = draw(st.lists(
        st.sampled_from([1, 2, 3, 7, 256, 2**20, 2**31]), min_size=1, max_size=4
    ))  # fmt: skip
    keys = [np.array(draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)), np.int64)
            for s in sizes]  # fmt: skip
    return keys, sizes


@settings(max_examples=150)
@given(sort_keys())
def test_sort_order_is_a_stable_lexicographic_sort(
    case: tuple[list[np.ndarray], list[int]],
) -> None:
    keys, sizes = case
    order = sort_order(keys, sizes)
    n = len(keys[0])
    rows = list(zip(*[k.tolist() for k in keys], range(n), strict=True))
    assert order.tolist() == [r[-1] for r in sorted(rows)]  # ties broken by input index


def test_sort_order_packed_and_lexsort_paths_agree() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 200)
    b = rng.integers(0, 5, 200)
    small = sort_order([a, b], [3, 5])  # 16-bit radix path
    large = sort_order([a, b], [2**40, 2**40])  # lexsort path (product >= 2**62)
    middle = sort_order([a, b], [2**20, 2**20])  # packed int64 path
    assert small.tolist() == large.tolist() == middle.tolist()
