"""Write A then append B reads exactly as writing A+B in one go, for every geometry type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.edit.cases import CASE_IDS, CASES, Case, reads
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors import edit

SIZES = st.tuples(st.integers(0, 2**31), st.integers(1, 6), st.integers(1, 6), st.floats(-30, 30))


def _check(case: Case, a_store: Any, fresh: Any, seed: int, na: int, nb: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    a = case.make(rng, na, 0.0)
    b = case.make(rng, nb, shift)  # shifted: the grid grows, also to negative chunks
    case.write_data(a_store, a)
    case.append(a_store, **b)
    case.write_data(fresh, case.concat(a, b))
    assert reads(case, a_store) == reads(case, fresh)
    assert zv.validate(a_store).ok


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=SIZES)
def test_append_equals_fresh_write_memory(case: Case, sizes: tuple[int, int, int, float]) -> None:
    _check(case, MemoryStore(), MemoryStore(), *sizes)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_append_equals_fresh_write_local(case: Case, tmp_path: Path) -> None:
    _check(case, str(tmp_path / "a.zarr"), str(tmp_path / "f.zarr"), 7, 5, 4, -25.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zarr", "f.zarr"]


@pytest.mark.parametrize("case", CASES[:2], ids=CASE_IDS[:2])
def test_append_to_zip_path(case: Case, tmp_path: Path) -> None:
    _check(case, str(tmp_path / "a.zip"), str(tmp_path / "f.zip"), 3, 4, 3, 20.0)


def test_appended_point_ids_keep_id_order() -> None:
    a, f = MemoryStore(), MemoryStore()
    pos = np.arange(12.0).reshape(6, 2)
    zv.write_points(a, pos[:3], chunk_shape=(4, 4), vertex_object_ids=[5, 9, 5])
    edit.append_points(a, pos[3:], vertex_object_ids=[7, 2, 7])
    zv.write_points(f, pos, chunk_shape=(4, 4), vertex_object_ids=[5, 9, 5, 7, 2, 7])
    ra, rf = zv.read_points(a), zv.read_points(f)
    assert ra.object_ids.tolist() == rf.object_ids.tolist()
    assert ra.positions.tolist() == rf.positions.tolist()


def test_pyramid_is_rebuilt(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a, f = str(tmp_path / "a.zarr"), str(tmp_path / "f.zarr")
    pa, pb = rng.uniform(0, 16, (40, 2)), rng.uniform(-16, 16, (30, 2))
    zv.write_points(a, pa, chunk_shape=(8, 8), bin_shape=(2, 2))
    zv.build_pyramid(a, [(2, 2), (4, 4)])
    edit.append_points(a, pb)
    zv.write_points(f, np.concatenate([pa, pb]), chunk_shape=(8, 8), bin_shape=(2, 2))
    zv.build_pyramid(f, [(2, 2), (4, 4)])
    for level in (1, 2):
        got = zv.read_points(a, level=level).positions
        want = zv.read_points(f, level=level).positions
        assert got.tolist() == want.tolist()
