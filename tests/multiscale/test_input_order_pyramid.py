"""Coarse levels of a store that keeps input order (docs/spec.md §8.8, §11).

``_input_index`` is aggregated with ``min``: a metavertex (or coarse link) holds the earliest
input position of what it merges.  Expectations are recomputed by brute force from the input:
the coarse bin of every point (and, for graphs, its object) names its metavertex.
"""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.types.graphs import read_graph, write_graph

INDEX = "_input_index"


def _min_per_group(keys: np.ndarray) -> dict[tuple[int, ...], int]:
    """Smallest row of each distinct key row (brute force, plain Python)."""
    out: dict[tuple[int, ...], int] = {}
    for i, k in enumerate(map(tuple, keys.tolist())):
        out.setdefault(k, i)  # rows ascend: the first seen is the smallest
    return out


def _stored_index(store: MemoryStore, level: int, group: str = "attributes") -> np.ndarray:
    reader = LevelReader(zarr.open_group(store, mode="r"), level)
    return reader.column(f"{group}/{INDEX}", reader.chunks()).values


@pytest.mark.parametrize("seed", [0, 1])
def test_point_cloud_level_index_is_the_min_per_metavertex(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 64, (4000, 3))
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(32, 32, 32), bin_shape=(4, 4, 4), keep_order=True)
    zv.build_pyramid(store, [(2, 2, 2), (4, 4, 4)])
    assert zv.validate(store, level=5).ok
    for level, edge in ((1, 8.0), (2, 16.0)):
        expect = _min_per_group(np.floor(pos / edge).astype(np.int64))
        coarse = zv.read_points(store, level=level)  # storage order, index hidden
        assert INDEX not in coarse.attributes
        got = _stored_index(store, level)
        bins = np.floor(coarse.positions / edge).astype(np.int64)  # a mean stays in its bin
        assert sorted(got.tolist()) == sorted(expect.values())
        assert [expect[tuple(b)] for b in bins.tolist()] == got.tolist()
        assert got.dtype == np.uint16  # the level-0 dtype
        meta = zarr.open_group(store, mode="r")[str(level)].attrs["coarsening"]
        assert meta["aggregation"][INDEX] == "min"
        # input order at a coarse level: metavertices by their earliest input point
        ordered = zv.read_points(store, level=level, order="input")
        assert np.array_equal(ordered.positions, coarse.positions[np.argsort(got)])


def test_graph_levels_take_the_min_over_vertices_and_merged_edges() -> None:
    rng = np.random.default_rng(5)
    n = 600
    pos = rng.uniform(0, 64, (n, 2))
    pairs = rng.integers(0, n, (4 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    _, first = np.unique(pairs, axis=0, return_index=True)
    edges = pairs[np.sort(first)]
    ids = rng.integers(0, 3, n) * 10  # user objects: metavertices never mix objects
    store = MemoryStore()
    write_graph(
        store,
        pos,
        edges,
        directed=True,
        vertex_object_ids=ids,
        chunk_shape=(32, 32),
        bin_shape=(4, 4),
        keep_order=True,
    )
    zv.build_pyramid(store, [(4, 4)])
    assert zv.validate(store, level=5).ok
    cell = np.floor(pos / 16.0).astype(np.int64)
    vkey = np.column_stack([ids, cell])
    vmin = _min_per_group(vkey)
    meta_of = np.array([vmin[tuple(k)] for k in vkey.tolist()])  # metavertex = its min row
    g = read_graph(store, level=1, order="input")
    assert np.array_equal(g.vertex_object_ids, ids[sorted(vmin.values())])
    # edges between metavertices, self-loops dropped, duplicates merged: min edge row each
    ends = meta_of[edges]
    live = ends[:, 0] != ends[:, 1]
    emin = _min_per_group(np.where(live[:, None], ends, -1))
    emin.pop((-1, -1), None)
    expect_rows = sorted(emin.values())
    rank = {v: i for i, v in enumerate(sorted(vmin.values()))}
    expect = [[rank[a], rank[b]] for a, b in ends[expect_rows].tolist()]
    assert g.edges.tolist() == expect
    link_index = np.concatenate(
        [_stored_index(store, 1, p) for p in ("link_attributes", "cross_chunk_link_attributes")]
    )
    assert sorted(link_index.tolist()) == expect_rows


def test_reserved_aggregation_cannot_be_overridden() -> None:
    store = MemoryStore()
    pos = np.random.default_rng(0).uniform(0, 8, (50, 2))
    zv.write_points(store, pos, chunk_shape=(4, 4), bin_shape=(1, 1), keep_order=True)
    with pytest.raises(InvalidInputError, match="reserved"):
        zv.build_pyramid(store, [(2, 2)], aggregation={INDEX: "mean"})
    assert zarr.open_group(store, mode="r").get("1") is None  # store untouched
