"""Regression tests for bugs found after release-candidate review."""

from __future__ import annotations

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv


def test_single_float64_point_is_not_modified_and_round_trips() -> None:
    # a one-row column is a view: chunk arithmetic once rewrote the caller's array in place
    pos = np.array([[12.5, -3.25, 7.0]])
    before = pos.copy()
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(10, 10, 10), bin_shape=(5, 5, 5))
    assert np.array_equal(pos, before)
    assert np.array_equal(zv.read_points(store).positions, before)
