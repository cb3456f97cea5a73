"""Default level-0 bin shapes (formats/bins.py) and the sparse-level warning."""

from __future__ import annotations

import warnings
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.errors import ZVUserWarning
from zarr_vectors.formats import registry
from zarr_vectors.formats.bins import (
    CURVE_STEPS_PER_BIN,
    MAX_BINS_PER_AXIS,
    TARGET_VERTICES_PER_BIN,
    bin_candidates,
    curve_bin_shape,
    extent_bin_shape,
    measured_bin_shape,
    warn_sparse_levels,
)
from zarr_vectors.formats.registry import convert
from zarr_vectors.formats.swc import SwcData, write_swc
from zarr_vectors.multiscale import PyramidLevel


def _occupied_brute(points: np.ndarray, bins: tuple[float, ...]) -> int:
    return len({tuple(int(np.floor(v / b)) for v, b in zip(p, bins, strict=True)) for p in points})


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 400),
    spread=st.floats(0.5, 500.0),
    seed=st.integers(0, 2**16),
    ratio=st.sampled_from([(), ((2, 2, 2),), ((2, 2, 2), (3, 3, 3))]),
)
def test_measured_bin_is_the_coarsest_candidate_meeting_the_target(n, spread, seed, ratio):
    pts = np.random.default_rng(seed).uniform(0, spread, (n, 3))
    chunk = (120.0, 120.0, 120.0)
    got = measured_bin_shape(pts, chunk, ratio)
    candidates = bin_candidates(chunk, ratio)
    assert got in candidates
    for r in ratio:  # every ratio divides the chunk at the chosen bin
        assert all(
            abs(c / (b * k) - round(c / (b * k))) < 1e-9
            for c, b, k in zip(chunk, got, r, strict=True)
        )
    # brute force: the first candidate whose mean occupancy meets the target
    want = next(
        (c for c in candidates if n / _occupied_brute(pts, c) <= TARGET_VERTICES_PER_BIN),
        candidates[-1],
    )
    assert got == want


def test_candidates_stop_at_the_finest_bin() -> None:
    cands = bin_candidates((100.0, 50.0))
    assert cands[0] == (25.0, 12.5)
    assert all(100.0 / c[0] <= MAX_BINS_PER_AXIS for c in cands)
    assert 100.0 / cands[-1][0] * 2 > MAX_BINS_PER_AXIS


def test_extent_rule_assumes_a_surface() -> None:
    # 1,000 x 1,000 area, 100,000 vertices: spacing ~3.2, bin at most twice that
    got = extent_bin_shape((0, 0, 0), (1000, 1000, 5), 100_000, (500.0, 500.0, 500.0))
    assert got == (3.90625,) * 3
    assert extent_bin_shape((0, 0), (0, 0), 10, (8.0, 8.0)) == (2.0, 2.0)  # no area: coarsest


@pytest.mark.parametrize("step", [0.01, 0.3, 1.0, 2.9, 50.0])
def test_curve_rule_is_the_coarsest_candidate_within_eight_steps(step: float) -> None:
    chunk = (25.0, 25.0, 40.0)
    candidates = bin_candidates(chunk, [(2, 2, 2)])
    got = curve_bin_shape(step, chunk, [(2, 2, 2)])
    within = [c for c in candidates if max(c) <= CURVE_STEPS_PER_BIN * step]
    assert got == (within[0] if within else candidates[-1])
    assert curve_bin_shape(0.0, chunk) == curve_bin_shape(float("nan"), chunk) == (6.25, 6.25, 10)


def _tractogram(path: Path, n: int, m: int, step: float) -> np.ndarray:
    """``n`` random-walk streamlines of ``m`` vertices ``step`` apart, saved as TRK."""
    rng = np.random.default_rng(5)
    d = rng.normal(size=(n, m, 3))
    d *= step / np.linalg.norm(d, axis=2, keepdims=True)
    pos = (rng.uniform(20, 80, (n, 1, 3)) + np.cumsum(d, axis=1)).astype(np.float32)
    tg = nib.streamlines.Tractogram(list(pos), affine_to_rasmm=np.eye(4))
    header = {"dimensions": np.array([100, 100, 100]), "voxel_sizes": np.ones(3)}
    nib.streamlines.TrkFile(tg, header=header).save(str(path))
    return pos.reshape(-1, 3)


def test_large_tractogram_bins_follow_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pos = _tractogram(tmp_path / "t.trk", 400, 50, 0.5)
    monkeypatch.setattr(registry, "MEASURE_LIMIT", 1000)  # "large": not measured
    report = convert(tmp_path / "t.trk", str(tmp_path / "s.zarrvectors"), chunk_shape=(20.0,) * 3)
    assert report.bin_shape == (2.5, 2.5, 2.5)  # the coarsest within 8 steps of 0.5
    # the surface rule gives finer bins, holding about one vertex of a streamline each
    surface = extent_bin_shape(pos.min(axis=0), pos.max(axis=0), len(pos), (20.0,) * 3)
    assert max(surface) < 2.5
    loaded = nib.streamlines.load(str(tmp_path / "t.trk")).streamlines.get_data()
    assert np.array_equal(zv.open(str(tmp_path / "s.zarrvectors")).read().positions, loaded)


def test_sparse_levels_warn() -> None:
    levels = [
        PyramidLevel(
            level=1, bin_ratio=(2, 2, 2), vertex_count=500, object_count=0, object_sparsity=1.0
        ),
        PyramidLevel(
            level=2, bin_ratio=(8, 8, 8), vertex_count=9, object_count=0, object_sparsity=1.0
        ),
    ]
    with pytest.warns(ZVUserWarning, match=r"level 2 .* keeps 9 of 1,000"):
        assert warn_sparse_levels(1000, levels) == [2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_sparse_levels(1000, levels[:1]) == []


def _lidar_like(n: int = 30_000) -> np.ndarray:
    """A gently rolling surface 1,000 x 800 with 100 units of relief (an airborne scan)."""
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, [1000, 800], (n, 2))
    z = 50 + 50 * np.sin(xy[:, 0] / 150) * np.cos(xy[:, 1] / 120) + rng.normal(0, 0.5, n)
    return np.c_[xy, z]


def test_convert_default_bins_keep_a_useful_share(tmp_path: Path) -> None:
    pts = _lidar_like()
    csv = tmp_path / "scan.csv"
    np.savetxt(csv, pts, delimiter=",", header="x,y,z", comments="", fmt="%.4f")
    report = convert(csv, str(tmp_path / "s.zarrvectors"), pyramid=[(2, 2, 2), (4, 4, 4)])
    shares = [lvl.vertex_count / len(pts) for lvl in report.pyramid]
    assert shares[0] > 0.05, shares
    assert shares[1] > 0.01, shares
    # the old default (bin = chunk / 4) kept a handful of points per chunk
    with pytest.warns(ZVUserWarning, match="keeps"):
        old = convert(
            csv,
            str(tmp_path / "old.zarrvectors"),
            bin_shape=tuple(c / 4 for c in report.chunk_shape),
            pyramid=[(2, 2, 2)],
        )
    assert old.pyramid[0].vertex_count < 0.01 * len(pts)


def test_convert_swc_keeps_nodes(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 3000
    parent = np.arange(-1, n - 1)
    pos = np.cumsum(rng.normal(0, 1.0, (n, 3)), axis=0)
    swc = tmp_path / "n.swc"
    write_swc(swc, SwcData.from_parent_index(pos, parent))
    report = convert(swc, str(tmp_path / "n.zarrvectors"), pyramid=[(2, 2, 2), (4, 4, 4)])
    assert report.pyramid[0].vertex_count > 0.25 * n
    assert report.pyramid[1].vertex_count > 0.1 * n


def test_convert_warns_on_a_sparse_level(tmp_path: Path) -> None:
    pts = _lidar_like(5000)
    csv = tmp_path / "scan.csv"
    np.savetxt(csv, pts, delimiter=",", header="x,y,z", comments="", fmt="%.4f")
    with pytest.warns(ZVUserWarning, match="pyramid level 1"):
        convert(
            csv,
            str(tmp_path / "s.zarrvectors"),
            bin_shape=(250, 200, 100),
            chunk_shape=(1000, 800, 400),
            pyramid=[(4, 4, 4)],
        )
    assert zv.open(str(tmp_path / "s.zarrvectors")) is not None
