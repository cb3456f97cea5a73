"""bbox + where + level on a pyramid level of every object type: the plain read, filtered.

Points and polylines are covered in test_where_points / test_where_objects; here lines,
skeletons, graphs and meshes.  The oracle is NumPy over the plain read of the same level.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from query._oracles import AnyArray, box_mask, boxes, range_mask, ranges, rows_multiset

SEEDS = st.integers(0, 2**16)


def _vertices(n: int, seed: int) -> tuple[AnyArray, AnyArray]:
    rng = np.random.default_rng(seed)
    pos = rng.integers(0, 32, (n, 2)) / 2.0  # the half-unit grid: chunk and box edges hit
    values = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, np.nan], n)
    return pos, values


def _kept_objects(plain: Any, box: Any, rng: Any) -> list[int]:
    ids = plain.object_ids.tolist()
    pos = plain.positions
    vals = plain.attributes["value"]
    return [
        oid
        for i, oid in enumerate(ids)
        if (
            box_mask(pos[plain.offsets[i] : plain.offsets[i + 1]], box)
            & range_mask(vals[plain.offsets[i] : plain.offsets[i + 1]], rng)
        ).any()
    ]


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, box=boxes(), rng=ranges())
def test_lines_level(seed: int, box: Any, rng: Any) -> None:
    pos, values = _vertices(40, seed)
    store = MemoryStore()
    zv.write_lines(
        store,
        pos.reshape(20, 2, 2),
        chunk_shape=(4, 4),
        bin_shape=(1, 1),
        attributes={"value": values.reshape(20, 2)},
    )
    zv.build_pyramid(store, [(2, 2)])
    plain = zv.read_polylines(store, level=1)  # the level as paths, filtered here
    got = zv.read_lines(store, level=1, bbox=box, where={"value": rng})
    assert got.object_ids.tolist() == _kept_objects(plain, box, rng)
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == len(got)


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, box=boxes(), rng=ranges())
def test_skeletons_level(seed: int, box: Any, rng: Any) -> None:
    pos, values = _vertices(36, seed)
    trees = [(pos[i : i + 6], np.array([-1, 0, 1, 1, 3, 4])) for i in range(0, 36, 6)]
    vals = [values[i : i + 6] for i in range(0, 36, 6)]
    store = MemoryStore()
    zv.write_skeletons(
        store, trees, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": vals}
    )
    zv.build_pyramid(store, [(2, 2)])
    plain = zv.read_skeletons(store, level=1)
    got = zv.read_skeletons(store, level=1, bbox=box, where={"value": rng})
    assert got.object_ids.tolist() == _kept_objects(plain, box, rng)
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == len(got.object_ids)


def _linked_case(
    plain_pos: AnyArray, plain_vals: AnyArray, links: AnyArray, box: Any, rng: Any
) -> tuple[list[Any], list[Any]]:
    keep = box_mask(plain_pos, box) & range_mask(plain_vals, rng)
    verts = rows_multiset(plain_pos[keep], plain_vals[keep])
    kept_links = links[keep[links].all(axis=1)] if len(links) else links
    shapes = sorted(tuple(sorted(tuple(plain_pos[i].tolist()) for i in row)) for row in kept_links)
    return verts, shapes


def _shapes(pos: AnyArray, links: AnyArray) -> list[Any]:
    return sorted(tuple(sorted(tuple(pos[i].tolist()) for i in row)) for row in links)


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, box=boxes(), rng=ranges())
def test_graphs_level(seed: int, box: Any, rng: Any) -> None:
    pos, values = _vertices(30, seed)
    edges = np.array([[i, i + 1] for i in range(29) if i % 5 != 4])
    store = MemoryStore()
    zv.write_graph(
        store, pos, edges, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": values}
    )
    zv.build_pyramid(store, [(2, 2)])
    plain = zv.read_graph(store, level=1)
    got = zv.read_graph(store, level=1, bbox=box, where={"value": rng})
    verts, shapes = _linked_case(plain.positions, plain.attributes["value"], plain.edges, box, rng)
    assert rows_multiset(got.positions, got.attributes["value"]) == verts
    assert _shapes(got.positions, got.edges) == shapes
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == len(verts)


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, box=boxes(), rng=ranges())
def test_meshes_level(seed: int, box: Any, rng: Any) -> None:
    pos, values = _vertices(30, seed)
    pos = pos + np.arange(30)[:, None] * 1e-3  # distinct vertices: faces map to unique rows
    faces = np.array([[i, i + 1, i + 2] for i in range(28) if i % 6 < 4])
    store = MemoryStore()
    zv.write_meshes(
        store, pos, faces, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": values}
    )
    zv.build_pyramid(store, [(2, 2)])
    plain = zv.read_meshes(store, level=1)
    got = zv.read_meshes(store, level=1, bbox=box, where={"value": rng})
    verts, shapes = _linked_case(plain.vertices, plain.attributes["value"], plain.faces, box, rng)
    assert rows_multiset(got.vertices, got.attributes["value"]) == verts
    assert _shapes(got.vertices, got.faces) == shapes
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == len(verts)
