"""The per-object mean example of docs/guides/dask.md on the 2-process LocalCluster: equal to NumPy.

The example's intensities are 12-bit values (multiples of 1/4096), so float64 sums are exact in
any order and the Dask result must equal NumPy's bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import zarr_vectors as zv
from distributed import Client


def spots(
    path: str, n: int, cells: int, seed: int = 1
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Write the example's store: ``n`` spots, each assigned to one of ``cells`` cells."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    cell = rng.integers(0, cells, n)
    intensity = (rng.integers(0, 4096, n) / 4096).astype(np.float32)
    zv.write_points(
        path,
        pos,
        chunk_shape=(100, 100, 100),
        attributes={"intensity": intensity},
        vertex_object_ids=cell,
    )
    return cell, intensity


def per_object_mean(path: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The example's Dask computation (on the current client): cell ids and mean intensities."""
    df = zv.to_dask(path, attributes=["intensity"])
    df = df.assign(intensity=df["intensity"].astype("float64"))
    means = df.groupby("object_id")["intensity"].mean(split_out=1).compute().sort_index()
    return means.index.to_numpy(), means.to_numpy()


def numpy_mean(
    cell: npt.NDArray[np.int64], intensity: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    ids, inverse = np.unique(cell, return_inverse=True)
    total = np.bincount(inverse, weights=intensity.astype(np.float64))
    return ids, total / np.bincount(inverse)


@pytest.mark.slow
def test_per_object_mean_equals_numpy(tmp_path: Path, client: Client) -> None:
    path = str(tmp_path / "spots.zarrvectors")
    cell, intensity = spots(path, 200_000, 5_000)
    got_ids, got = per_object_mean(path)
    want_ids, want = numpy_mean(cell, intensity)
    np.testing.assert_array_equal(got_ids, want_ids)
    np.testing.assert_array_equal(got, want)


def test_per_object_mean_small_store(tmp_path: Path, client: Client) -> None:
    # a store of several partitions (64 chunks a partition), some cells in many chunks
    path = str(tmp_path / "small.zarrvectors")
    cell, intensity = spots(path, 5_000, 40, seed=2)
    got_ids, got = per_object_mean(path)
    want_ids, want = numpy_mean(cell, intensity)
    np.testing.assert_array_equal(got_ids, want_ids)
    np.testing.assert_array_equal(got, want)
