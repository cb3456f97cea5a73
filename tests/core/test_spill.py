"""Spill helpers of the streaming writer (core.spill), against numpy references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.core import spill


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 300), st.sampled_from([1, 5, 70_000, 2**20]))
def test_dense_unique_equals_numpy_unique(seed: int, n: int, size: int) -> None:
    """Both paths (a count over the key range, numpy's unique for wide ranges)."""
    key = np.random.default_rng(seed).integers(0, size, n).astype(np.int64)
    keys, inverse = spill._dense_unique(key, size)
    want_keys, want_inverse = np.unique(key, return_inverse=True)
    np.testing.assert_array_equal(keys, want_keys)
    np.testing.assert_array_equal(inverse, want_inverse.ravel())
    assert inverse.dtype == np.int64


def test_members_lists_each_groups_rows_ascending() -> None:
    group = np.array([2, 0, 2, 1, 0, 2], dtype=np.int64)
    got = [m.tolist() for m in spill._members(group, 4)]
    assert got == [[1, 4], [3], [0, 2, 5], []]
