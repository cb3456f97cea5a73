"""Level-of-detail budgets (``max_vertices``), ``iter_levels`` and ``explain`` of levels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv


def _pyramid() -> tuple[MemoryStore, np.ndarray]:
    rng = np.random.default_rng(3)
    pos = (rng.random((2000, 2)) * 32).astype(np.float32)
    store = MemoryStore()
    zv.write_points(
        store, pos, chunk_shape=(8, 8), bin_shape=(1, 1), attributes={"v": rng.random(2000)}
    )
    zv.build_pyramid(store, [(2, 2), (8, 8)])
    return store, pos


STORE, POS = _pyramid()
BOX = ([0.0, 0.0], [16.0, 16.0])


def _sizes(bbox: object) -> dict[int, int]:
    return {n: len(zv.read_points(STORE, level=n, bbox=bbox)) for n in (0, 1, 2)}


@settings(max_examples=20)
@given(budget=st.integers(0, 2500), boxed=st.booleans())
def test_max_vertices_picks_the_finest_level_that_fits(budget: int, boxed: bool) -> None:
    bbox = BOX if boxed else None
    sizes = _sizes(bbox)
    got = zv.read_points(STORE, bbox=bbox, max_vertices=budget)
    counts = {c.level: c.vertices for c in zv.explain(STORE, bbox=bbox).levels}
    fits = [n for n in (0, 1, 2) if counts[n] <= budget]
    level = fits[0] if fits else 2
    assert len(got) == sizes[level]
    if fits:
        assert len(got) <= budget  # the chunk counts bound point results
    np.testing.assert_array_equal(
        got.positions, zv.read_points(STORE, level=level, bbox=bbox).positions
    )


def test_counts_per_level_come_from_vertex_counts() -> None:
    plan = zv.explain(STORE)
    assert [c.vertices for c in plan.levels] == [
        len(zv.read_points(STORE, level=n)) for n in (0, 1, 2)
    ]
    assert plan.level == 0
    assert zv.explain(STORE, max_vertices=100).level == 2


def test_iter_levels_coarse_to_fine() -> None:
    steps = list(zv.iter_levels(STORE, BOX, where={"v": (0.5, None)}))
    assert [s.level for s in steps] == [2, 1, 0]
    for s in steps:
        want = zv.read_points(STORE, level=s.level, bbox=BOX, where={"v": (0.5, None)})
        np.testing.assert_array_equal(s.result.positions, want.positions)
    budget = zv.explain(STORE, bbox=BOX).levels[1].vertices
    assert [s.level for s in zv.iter_levels(STORE, BOX, max_vertices=budget)] == [2, 1]


def test_budget_on_object_types_and_errors() -> None:
    store = MemoryStore()
    paths = [np.array([[0.5, 0.5], [3.5, 3.5], [7.5, 1.5]]) + i for i in range(10)]
    zv.write_polylines(store, paths, chunk_shape=(4, 4), bin_shape=(1, 1))
    zv.build_pyramid(store, [(4, 4)])
    assert len(zv.read_polylines(store, max_vertices=10**6)) == 10
    coarse = zv.read_polylines(store, max_vertices=1)
    assert np.array_equal(coarse.positions, zv.read_polylines(store, level=1).positions)
    with pytest.raises(zv.InvalidInputError, match="max_vertices"):
        zv.read_polylines(store, max_vertices=-1)


def test_budget_on_lines_reads_merged_segments_as_zero_length() -> None:
    store = MemoryStore()
    ends = np.array(
        [[[0.5, 0.5], [0.75, 0.75]], [[0.5, 0.5], [6.5, 6.5]], [[1.5, 5.5], [1.5, 5.75]]]
    )
    zv.write_lines(
        store, ends, chunk_shape=(8, 8), bin_shape=(1, 1), attributes={"v": ends[..., 0]}
    )
    zv.build_pyramid(store, [(4, 4)])
    coarse = zv.read_polylines(store, level=1)
    assert np.diff(coarse.offsets).tolist() == [1, 2, 1]  # two segments merged to one vertex
    got = zv.read_lines(store, max_vertices=4)  # level 0 holds 6 vertices, level 1 four
    assert got.object_ids.tolist() == [0, 1, 2]
    starts = coarse.offsets[:-1]
    for i, a in enumerate(starts):
        b = coarse.offsets[i + 1] - 1  # a merged segment: start and end are its one vertex
        np.testing.assert_array_equal(got.endpoints[i], coarse.positions[[a, b]])
        np.testing.assert_array_equal(got.attributes["v"][i], coarse.attributes["v"][[a, b]])
    assert [s.level for s in zv.iter_levels(store)] == [1, 0]
    assert len(next(iter(zv.iter_levels(store))).result) == 3
