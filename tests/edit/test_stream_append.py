"""``open_writer(store, ..., mode="a")``: streamed batches appended at one commit point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.edit.cases import plain

import zarr_vectors as zv


def _paths(rng: np.random.Generator, n: int, shift: float) -> list[np.ndarray]:
    return [rng.uniform(-10, 10, (int(rng.integers(1, 5)), 3)) + shift for _ in range(n)]


def test_streamed_batches_equal_fresh_write(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    a, b1, b2 = _paths(rng, 6, 0), _paths(rng, 4, 25), _paths(rng, 3, -25)
    store, fresh = str(tmp_path / "s.zarr"), str(tmp_path / "f.zarr")
    zv.write_streamlines(store, a, chunk_shape=(8, 8, 8))
    with zv.open_writer(store, "streamline", mode="a") as w:
        w.append(b1)
        w.append(b2)
    zv.write_streamlines(fresh, a + b1 + b2, chunk_shape=(8, 8, 8))
    assert plain(zv.read_streamlines(store)) == plain(zv.read_streamlines(fresh))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.zarr", "s.zarr"]


def test_aborted_stream_leaves_store(tmp_path: Path) -> None:
    store = str(tmp_path / "s.zarr")
    zv.write_points(store, np.zeros((3, 2)), chunk_shape=(4, 4))
    before = plain(zv.read_points(store))

    def stream_then_fail() -> None:
        with zv.open_writer(store, "point_cloud", mode="a") as w:
            w.append(np.ones((2, 2)))
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        stream_then_fail()
    assert plain(zv.read_points(store)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]


def test_stream_append_of_another_type_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "s.zarr")
    zv.write_points(store, np.zeros((3, 2)), chunk_shape=(4, 4))
    with pytest.raises(zv.InvalidInputError, match="point_cloud"):
        zv.open_writer(store, "polyline", mode="a")
