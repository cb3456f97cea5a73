"""add/drop/update attributes, delete objects and compact: each equals the fresh write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.edit.cases import CASE_IDS, CASES, Case, plain, reads
from zarr.storage import MemoryStore

import zarr_vectors as zv

OBJECT_CASES = [c for c in CASES if c.name != "point_cloud"]
OBJECT_IDS = [c.name for c in OBJECT_CASES]
SEEDS = st.tuples(st.integers(0, 2**31), st.integers(1, 7))


def _store(case: Case, seed: int, n: int) -> MemoryStore:
    store = MemoryStore()
    case.write_data(store, case.make(np.random.default_rng(seed), n, 0.0))
    return store


def _level0(store: Any) -> dict[str, Any]:
    return dict(zv.open_store(store)["0"].attrs)


def _vertex_field(case: Case) -> str:
    return (
        "vertices" if case.name == "mesh" else ("endpoints" if case.name == "line" else "positions")
    )


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds=SEEDS)
def test_add_then_drop_vertex_attribute(case: Case, seeds: tuple[int, int]) -> None:
    store = _store(case, *seeds)
    before = reads(case, store)
    n = int(_level0(store)["vertex_count"])
    values = np.arange(n, dtype=np.float32) * 0.5
    zv.add_attribute(store, "extra", values)
    whole = case.read(store)
    got = np.asarray(whole.attributes["extra"]).reshape(-1)
    assert got.tolist() == values.tolist()
    zv.drop_attribute(store, "extra")
    assert reads(case, store) == before


@pytest.mark.parametrize("case", OBJECT_CASES, ids=OBJECT_IDS)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds=SEEDS)
def test_object_attribute_add_update_drop(case: Case, seeds: tuple[int, int]) -> None:
    store = _store(case, *seeds)
    before = reads(case, store)
    n = int(_level0(store)["object_count"])
    values = np.arange(n, dtype=np.int64) + 10
    zv.add_attribute(store, "rank", values, kind="object")
    assert np.asarray(case.read(store).object_attributes["rank"]).tolist() == values.tolist()
    zv.update_object_attributes(store, [0], {"rank": np.array([99])})
    values[0] = 99
    assert np.asarray(case.read(store).object_attributes["rank"]).tolist() == values.tolist()
    zv.drop_attribute(store, "rank", kind="object")
    assert reads(case, store) == before


@pytest.mark.parametrize("case", OBJECT_CASES, ids=OBJECT_IDS)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds=SEEDS, pick=st.integers(0, 2**31))
def test_delete_then_compact_equals_survivors(
    case: Case, seeds: tuple[int, int], pick: int
) -> None:
    store = _store(case, *seeds)
    n = int(_level0(store)["object_count"])
    rng = np.random.default_rng(pick)
    gone = np.sort(rng.choice(n, size=int(rng.integers(0, n)), replace=False))
    keep = np.setdiff1d(np.arange(n), gone)
    want = plain(case.read(store, object_ids=keep))
    zv.delete_objects(store, gone)
    assert plain(case.read(store)) == want
    zv.compact(store)
    assert plain(case.read(store)) == want
    assert int(_level0(store)["object_count"]) == len(keep)
    assert zv.validate(store).ok


def test_deleted_objects_leave_every_level(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    paths = [rng.uniform(0, 30, (5, 2)) for _ in range(12)]
    store = str(tmp_path / "s.zarr")
    zv.write_polylines(store, paths, chunk_shape=(8, 8), bin_shape=(2, 2))
    zv.build_pyramid(store, [(2, 2), (4, 4)])
    zv.delete_objects(store, [1, 4, 7])
    for level in (0, 1, 2):
        ids = set(zv.read_polylines(store, level=level).object_ids.tolist())
        assert ids.isdisjoint({1, 4, 7}), level
    fresh = str(tmp_path / "f.zarr")
    keep = [i for i in range(12) if i not in (1, 4, 7)]
    zv.write_polylines(
        fresh, [paths[i] for i in keep], object_ids=keep, chunk_shape=(8, 8), bin_shape=(2, 2)
    )
    zv.build_pyramid(fresh, [(2, 2), (4, 4)])
    zv.compact(store)
    for level in (0, 1, 2):
        got = zv.read_polylines(store, level=level)
        want = zv.read_polylines(fresh, level=level)
        assert plain(got) == plain(want), level


@pytest.mark.parametrize("name", ["graph", "mesh"])
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_link_attribute_in_read_order(name: str, seed: int) -> None:
    case = next(c for c in CASES if c.name == name)
    store = _store(case, seed, 7)
    result = case.read(store)
    links = result.edges if name == "graph" else result.faces
    values = np.arange(len(links), dtype=np.int16)
    zv.add_attribute(store, "k", values, kind="link")
    result = case.read(store)
    got = result.edge_attributes if name == "graph" else result.face_attributes
    assert got["k"].tolist() == values.tolist()


def test_point_attribute_equals_fresh_write() -> None:
    rng = np.random.default_rng(0)
    pos = rng.uniform(-10, 10, (30, 2))
    a = MemoryStore()
    zv.write_points(a, pos, chunk_shape=(4, 4))
    read = zv.read_points(a)
    extra = np.arange(30.0)
    zv.add_attribute(a, "extra", extra)
    fresh = MemoryStore()
    zv.write_points(fresh, read.positions, attributes={"extra": extra}, chunk_shape=(4, 4))
    assert plain(zv.read_points(a)) == plain(zv.read_points(fresh))
