"""``where=``/``sphere=``/``limit=`` on object types against brute force over the input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from query._oracles import AnyArray, box_mask, boxes, range_mask, ranges, rows_multiset, sphere_mask

VALUES = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, np.nan])


@st.composite
def path_sets(
    draw: st.DrawFn, min_len: int = 1, max_len: int = 5
) -> tuple[list[AnyArray], list[AnyArray]]:
    """Paths on the half-unit grid and one float value (NaN allowed) per vertex."""
    n = draw(st.integers(1, 8))
    paths, values = [], []
    for _ in range(n):
        k = draw(st.integers(min_len, max_len))
        cells = draw(
            st.lists(st.tuples(st.integers(0, 31), st.integers(0, 31)), min_size=k, max_size=k)
        )
        paths.append(np.asarray(cells, dtype=np.float64) / 2.0)
        values.append(np.asarray(draw(st.lists(VALUES, min_size=k, max_size=k))))
    return paths, values


def _expected_objects(
    paths: list[AnyArray], values: list[AnyArray], box: Any, rng: Any, score: AnyArray, srng: Any
) -> list[int]:
    out = []
    for i, (p, v) in enumerate(zip(paths, values, strict=True)):
        hit = (box_mask(p, box) & range_mask(v, rng)).any()
        if hit and range_mask(score[i : i + 1], srng)[0]:
            out.append(i)
    return out


@settings(max_examples=30)
@given(
    data=path_sets(),
    box=boxes(),
    rng=ranges(),
    srng=ranges(),
    limit=st.one_of(st.none(), st.integers(0, 4)),
)
def test_polylines(data: Any, box: Any, rng: Any, srng: Any, limit: int | None) -> None:
    paths, values = data
    score = np.linspace(0.0, 1.0, len(paths))
    store = MemoryStore()
    zv.write_polylines(
        store,
        paths,
        chunk_shape=(4, 4),
        attributes={"value": values},
        object_attributes={"score": score},
    )
    got = zv.read_polylines(store, bbox=box, where={"value": rng, "score": srng}, limit=limit)
    want = _expected_objects(paths, values, box, rng, score, srng)
    if limit is not None:
        want = want[:limit]
    assert got.object_ids.tolist() == want
    expected_pos = np.concatenate([paths[i] for i in want]) if want else np.zeros((0, 2))
    np.testing.assert_array_equal(got.positions, expected_pos)
    if limit is None:
        assert zv.count(store, bbox=box, where={"value": rng, "score": srng}) == len(want)


@settings(max_examples=20)
@given(
    data=path_sets(),
    center=st.tuples(st.integers(0, 32), st.integers(0, 32)),
    radius=st.integers(0, 12),
)
def test_streamlines_sphere(data: Any, center: Any, radius: int) -> None:
    paths, _ = data
    store = MemoryStore()
    zv.write_streamlines(store, paths, chunk_shape=(4, 4))
    c = np.asarray(center, dtype=np.float64) / 2
    got = zv.read_streamlines(store, sphere=(c, radius / 2))
    want = [i for i, p in enumerate(paths) if sphere_mask(p, c, radius / 2).any()]
    assert got.object_ids.tolist() == want


@settings(max_examples=20)
@given(data=path_sets(min_len=2, max_len=2), rng=ranges(), box=boxes())
def test_lines(data: Any, rng: Any, box: Any) -> None:
    paths, values = data
    store = MemoryStore()
    zv.write_lines(
        store, np.stack(paths), chunk_shape=(4, 4), attributes={"value": np.stack(values)}
    )
    got = zv.read_lines(store, bbox=box, where={"value": rng})
    want = _expected_objects(paths, values, box, rng, np.zeros(len(paths)), (None, None))
    assert got.object_ids.tolist() == want


@settings(max_examples=20)
@given(data=path_sets(), rng=ranges())
def test_skeletons(data: Any, rng: Any) -> None:
    paths, values = data
    trees = [(p, np.arange(len(p)) - 1) for p in paths]  # a chain: node i's parent is i-1
    store = MemoryStore()
    zv.write_skeletons(store, trees, chunk_shape=(4, 4), attributes={"value": values})
    got = zv.read_skeletons(store, where={"value": rng})
    want = _expected_objects(paths, values, None, rng, np.zeros(len(paths)), (None, None))
    assert got.object_ids.tolist() == want
    assert zv.count(store, where={"value": rng}) == len(want)


@st.composite
def linked(draw: st.DrawFn, arity: int) -> tuple[AnyArray, AnyArray, AnyArray, AnyArray]:
    """Distinct grid vertices, values, links (edges or faces) and one value per link."""
    n = draw(st.integers(arity, 14))
    cells = draw(
        st.lists(
            st.tuples(st.integers(0, 31), st.integers(0, 31)), min_size=n, max_size=n, unique=True
        )
    )
    pos = np.asarray(cells, dtype=np.float64) / 2.0
    vals = np.asarray(draw(st.lists(VALUES, min_size=n, max_size=n)))
    m = draw(st.integers(0, 10))
    links = [
        draw(st.lists(st.integers(0, n - 1), min_size=arity, max_size=arity, unique=True))
        for _ in range(m)
    ]
    lk = np.asarray(links, dtype=np.int64).reshape(-1, arity)
    if arity == 2:
        lk = np.unique(np.sort(lk, axis=1), axis=0)
    else:
        lk = lk[np.unique(np.sort(lk, axis=1), axis=0, return_index=True)[1]] if len(lk) else lk
    lvals = np.linspace(0.0, 1.0, len(lk))
    return pos, vals, lk, lvals


def _linked_expectation(
    pos: AnyArray, vals: AnyArray, lk: AnyArray, lvals: AnyArray, box: Any, rng: Any, lrng: Any
) -> tuple[list[Any], list[Any]]:
    keep = box_mask(pos, box) & range_mask(vals, rng)
    lkeep = keep[lk].all(axis=1) & range_mask(lvals, lrng) if len(lk) else np.zeros(0, bool)
    verts = rows_multiset(pos[keep], vals[keep])
    links = sorted(tuple(sorted(tuple(pos[i].tolist()) for i in row)) for row in lk[lkeep])
    return verts, links


def _links_of(pos: AnyArray, lk: AnyArray) -> list[Any]:
    return sorted(tuple(sorted(tuple(pos[i].tolist()) for i in row)) for row in lk)


@settings(max_examples=30)
@given(g=linked(2), box=boxes(), rng=ranges(), lrng=ranges())
def test_graphs(g: Any, box: Any, rng: Any, lrng: Any) -> None:
    pos, vals, edges, w = g
    store = MemoryStore()
    zv.write_graph(
        store, pos, edges, chunk_shape=(4, 4), attributes={"value": vals}, edge_attributes={"w": w}
    )
    got = zv.read_graph(store, bbox=box, where={"value": rng, "w": lrng})
    verts, links = _linked_expectation(pos, vals, edges, w, box, rng, lrng)
    assert rows_multiset(got.positions, got.attributes["value"]) == verts
    assert _links_of(got.positions, got.edges) == links
    assert zv.count(store, bbox=box, where={"value": rng}) == len(verts)
    # the result is a valid graph: object attributes align with its objects
    assert len(got.object_ids) == len(np.unique(got.vertex_object_ids))


@settings(max_examples=30)
@given(m=linked(3), box=boxes(), rng=ranges(), lrng=ranges())
def test_meshes(m: Any, box: Any, rng: Any, lrng: Any) -> None:
    pos, vals, faces, fv = m
    store = MemoryStore()
    zv.write_meshes(
        store,
        pos,
        faces,
        chunk_shape=(4, 4),
        attributes={"value": vals},
        face_attributes={"fv": fv},
    )
    got = zv.read_meshes(store, bbox=box, where={"value": rng, "fv": lrng})
    verts, links = _linked_expectation(pos, vals, faces, fv, box, rng, lrng)
    assert rows_multiset(got.vertices, got.attributes["value"]) == verts
    assert _links_of(got.vertices, got.faces) == links
    # per-object offsets tile the result and agree with object_ids
    assert got.offsets[-1] == len(got.vertices)
    assert got.face_offsets[-1] == len(got.faces)
    for i in range(len(got)):
        owned = got.vertex_object_ids[got.offsets[i] : got.offsets[i + 1]]
        assert set(owned.tolist()) == {got.object_ids[i]}


def test_link_predicate_on_paths_is_refused() -> None:
    store = MemoryStore()
    zv.write_polylines(store, [np.zeros((2, 2))], chunk_shape=(4, 4))
    with pytest.raises(zv.InvalidInputError, match="no attribute"):
        zv.read_polylines(store, where={"link_attributes/w": (0, 1)})


def test_boundary_flag_with_where_is_refused() -> None:
    store = MemoryStore()
    zv.write_graph(store, np.array([[0.0, 0.0], [5.0, 5.0]]), [[0, 1]], chunk_shape=(4, 4))
    with pytest.raises(zv.InvalidInputError, match="include_boundary"):
        zv.read_graph(store, bbox=([0, 0], [4, 4]), include_boundary_edges=True, limit=3)


@settings(max_examples=15)
@given(data=path_sets(min_len=2, max_len=6), box=boxes(), rng=ranges())
def test_paths_combined_with_levels(data: Any, box: Any, rng: Any) -> None:
    paths, values = data
    store = MemoryStore()
    zv.write_polylines(
        store, paths, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": values}
    )
    zv.build_pyramid(store, [(2, 2)])
    got = zv.read_polylines(store, level=1, bbox=box, where={"value": rng})
    plain = zv.read_polylines(store, level=1)  # whole level 1, filtered here
    want = []
    for i, oid in enumerate(plain.object_ids.tolist()):
        a, b = plain.offsets[i], plain.offsets[i + 1]
        hit = box_mask(plain.positions[a:b], box) & range_mask(plain.attributes["value"][a:b], rng)
        if hit.any():
            want.append(oid)
    assert got.object_ids.tolist() == want
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == len(want)
