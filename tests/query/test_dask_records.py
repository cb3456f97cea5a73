"""``to_dask_objects`` records against brute force, for every object type.

Objects cross chunks and (points, graphs, meshes) interleave their vertices in the input; the
oracle builds each record from the eager read alone: the object's rows by comparing owners, its
links as those whose ends are all its rows, renumbered by position among them, and it also
checks every record against a read of that object alone.  Synchronous scheduler, memory stores.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from query._oracles import AnyArray
from zarr_vectors.query.dask import _groups, _object_links, _slots
from zarr_vectors.query.table import vertex_owners

CHUNKS = {"chunk_shape": (4, 4)}


def _grid(rng: np.random.Generator, n: int) -> AnyArray:
    # distinct half-unit points over 4 x 4 chunks: objects cross chunk boundaries
    cells = rng.choice(32 * 32, n, replace=False)
    return np.column_stack([cells // 32, cells % 32]) / 2.0


def _owners(rng: np.random.Generator, sizes: list[int]) -> AnyArray:
    # user ids out of order, each object's vertices interleaved with the others'
    ids = rng.permutation(100 + 7 * np.arange(len(sizes)))
    return rng.permutation(np.repeat(ids, sizes))


def _links_within(rng: np.random.Generator, owner: AnyArray, width: int) -> AnyArray:
    rows = []
    for uid in np.unique(owner):
        mine = np.flatnonzero(owner == uid)
        rows += [rng.permutation(mine)[:width] for _ in range(len(mine)) if len(mine) >= width]
    return np.array(rows, dtype=np.int64).reshape(-1, width)


def _points(store: Any, rng: np.random.Generator, sizes: list[int]) -> None:
    owner = _owners(rng, sizes)
    zv.write_points(
        store,
        _grid(rng, len(owner)),
        vertex_object_ids=owner,
        attributes={"v": rng.random(len(owner))},
        **CHUNKS,
    )


def _lines(store: Any, rng: np.random.Generator, sizes: list[int]) -> None:
    m = len(sizes)
    zv.write_lines(
        store, _grid(rng, 2 * m).reshape(m, 2, 2), attributes={"v": rng.random((m, 2))}, **CHUNKS
    )


def _polylines(store: Any, rng: np.random.Generator, sizes: list[int]) -> None:
    pos = _grid(rng, sum(sizes) + len(sizes))
    cuts = np.cumsum([s + 1 for s in sizes])[:-1]
    paths = np.split(pos, cuts)  # at least 2 vertices each
    zv.write_polylines(
        store, paths, attributes={"v": [rng.random(len(p)) for p in paths]}, **CHUNKS
    )


def _skeletons(store: Any, rng: np.random.Generator, sizes: list[int]) -> None:
    pos = _grid(rng, sum(sizes))
    trees = []
    for p in np.split(pos, np.cumsum(sizes)[:-1]):
        parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, len(p))])
        trees.append((p, parents))
    zv.write_skeletons(store, trees, **CHUNKS)


def _graphs(store: Any, rng: np.random.Generator, sizes: list[int]) -> None:
    owner = _owners(rng, sizes)
    n = len(owner)
    edges = np.concatenate([_links_within(rng, owner, 2), rng.integers(0, n, (n // 2 + 1, 2))])
    edges = edges[edges[:, 0] != edges[:, 1]]  # the extra edges may join two objects
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    zv.write_graph(
        store,
        _grid(rng, n),
        edges,
        vertex_object_ids=owner,
        attributes={"v": rng.random(n)},
        **CHUNKS,
    )


def _meshes(store: Any, rng: np.random.Generator, sizes: list[int]) -> None:
    owner = _owners(rng, [s + 2 for s in sizes])  # a face needs 3 vertices of one object
    faces = _links_within(rng, owner, 3)
    zv.write_meshes(store, _grid(rng, len(owner)), faces, vertex_object_ids=owner, **CHUNKS)


WRITERS: dict[str, tuple[Callable[..., None], Callable[..., Any]]] = {
    "points": (_points, zv.read_points),
    "lines": (_lines, zv.read_lines),
    "polylines": (_polylines, zv.read_polylines),
    "skeletons": (_skeletons, zv.read_skeletons),
    "graphs": (_graphs, zv.read_graph),
    "meshes": (_meshes, zv.read_meshes),
}


def _links(result: Any) -> AnyArray | None:
    if hasattr(result, "parents"):
        child = np.flatnonzero(result.parents >= 0)
        return np.column_stack([child, result.parents[child]])
    for name in ("edges", "faces"):
        if hasattr(result, name):
            return np.asarray(getattr(result, name))
    return None


def _brute(result: Any, uid: Any) -> tuple[AnyArray, dict[str, AnyArray], AnyArray | None]:
    """One object's record from a read of several objects, the slow obvious way."""
    pos, owner, attrs = vertex_owners(result)
    rows = [i for i in range(len(owner)) if owner[i] == uid]
    links = _links(result)
    local = None
    if links is not None:
        local = np.array(
            [
                [rows.index(int(e)) for e in link]
                for link in links
                if all(int(e) in rows for e in link)
            ],
            dtype=np.int64,
        ).reshape(-1, links.shape[1])
    return pos[rows], {k: v[rows] for k, v in attrs.items()}, local


@pytest.mark.parametrize("kind", sorted(WRITERS))
@settings(max_examples=10, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=8),
    per_partition=st.integers(1, 4),
    box=st.sampled_from([None, ([0, 0], [8, 8]), ([4, 2], [16, 11])]),
)
def test_records_equal_brute_force(
    kind: str, seed: int, sizes: list[int], per_partition: int, box: Any
) -> None:
    write, read = WRITERS[kind]
    store = MemoryStore()
    write(store, np.random.default_rng(seed), sizes)
    bag = zv.to_dask_objects(store, bbox=box, objects_per_partition=per_partition)
    records = bag.compute(scheduler="sync")
    ids = [r.object_id for r in records]
    assert len(set(ids)) == len(ids)
    if not ids:
        return
    whole = read(store, object_ids=ids)
    for r in records:
        pos, attrs, links = _brute(whole, r.object_id)
        np.testing.assert_array_equal(r.positions, pos)
        assert r.attributes.keys() == attrs.keys()
        for k, v in attrs.items():
            np.testing.assert_array_equal(r.attributes[k], v)
        if links is None:
            assert r.links is None
        else:
            assert r.links is not None
            np.testing.assert_array_equal(r.links, links)
        alone = read(store, object_ids=[r.object_id])  # the record is the object read alone
        np.testing.assert_array_equal(r.positions, vertex_owners(alone)[0])
        if links is not None:
            np.testing.assert_array_equal(r.links, _links(alone))


def test_a_graph_edge_between_two_objects_is_in_neither_record() -> None:
    # user objects need not be components; such an edge has no place in one object's rows
    store = MemoryStore()
    pos = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    zv.write_graph(store, pos, [[0, 1], [1, 2], [2, 3]], vertex_object_ids=[5, 5, 9, 9], **CHUNKS)
    records = zv.to_dask_objects(store).compute(scheduler="sync")
    assert [r.object_id for r in records] == [5, 9]
    for r, rows in zip(records, (pos[:2], pos[2:]), strict=True):
        np.testing.assert_array_equal(r.positions, rows)
        assert r.links is not None
        assert r.links.tolist() == [[0, 1]]


@settings(max_examples=60, deadline=None)
@given(
    owner=st.lists(st.integers(0, 9), max_size=40),
    uids=st.lists(st.integers(0, 12), min_size=1, max_size=8, unique=True),
    width=st.integers(2, 3),
    seed=st.integers(0, 2**16),
)
def test_grouping_equals_brute_force(
    owner: list[int], uids: list[int], width: int, seed: int
) -> None:
    # rows in any order, owners missing from ``uids``, links across objects: the general path
    own, ids = np.array(owner, dtype=np.int64), np.array(uids, dtype=np.int64)
    rng = np.random.default_rng(seed)
    links = rng.integers(0, max(len(own), 1), (len(own), width)) if len(own) else None
    slot = _slots(own, ids)
    order, bounds = _groups(slot, len(ids))
    local, link_bounds = _object_links(links, slot, order, bounds)
    for i, uid in enumerate(uids):
        rows = [r for r in range(len(own)) if own[r] == uid]
        assert order[bounds[i] : bounds[i + 1]].tolist() == rows
        if links is None:
            continue
        want = [[rows.index(e) for e in link] for link in links.tolist() if set(link) <= set(rows)]
        assert local is not None
        assert local[link_bounds[i] : link_bounds[i + 1]].tolist() == want
