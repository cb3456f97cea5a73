"""Skeleton stores: forests round-trip node for node, parents exactly; input errors name a node.

Expectations come from the input with plain numpy: trees by walking parents, the global order
(skeletons by smallest node index, input order within), half-open boxes (FORMAT.md §2) and
whole-object reads (§7).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.abc.store import ByteRequest
from zarr.core.buffer import Buffer, BufferPrototype
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.links import read as linkread
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.errors import CorruptPayloadError, GeometryError, InvalidInputError

IntArrayT = npt.NDArray[np.int64]
from zarr_vectors.testing.strategies import bboxes, trees
from zarr_vectors.types._base import Query, get_geometry_type
from zarr_vectors.types.graphs import read_graph
from zarr_vectors.types.skeletons import (
    Skeleton,
    Skeletons,
    parents_array,
    read_skeletons,
    tree_roots,
    write_skeletons,
)

AnyArray = npt.NDArray[Any]
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# two neurons: 0 is a Y (nodes 0-4), 1 is a path with a second root (nodes 5-8)
POS = np.array(
    [
        [0.5, 0.5, 0.5],
        [1.5, 0.5, 0.5],
        [2.5, 0.5, 0.5],
        [1.5, 1.5, 0.5],
        [1.5, 2.5, 0.5],
        [5.5, 5.5, 5.5],
        [5.5, 6.5, 5.5],
        [5.5, 7.5, 5.5],
        [9.5, 9.5, 9.5],
    ]
)
PARENTS = np.array([-1, 0, 1, 1, 3, -1, 5, 6, -1])
OFFSETS = np.array([0, 5, 9])
IDS = np.array([2**63 + 5, 17], dtype=np.uint64)


def roots_of(parents: AnyArray) -> AnyArray:
    """Root of every node by walking parents in Python."""
    out = []
    for i in range(len(parents)):
        while parents[i] >= 0:
            i = int(parents[i])
        out.append(i)
    return np.array(out, dtype=np.int64)


def trees_of(parents: AnyArray) -> AnyArray:
    """Tree of every node, numbered by the tree's smallest node index."""
    roots = roots_of(parents)
    first: dict[int, int] = {}
    for i, r in enumerate(roots.tolist()):
        first.setdefault(r, i)
    rank = {r: k for k, r in enumerate(sorted(first, key=first.__getitem__))}
    return np.array([rank[r] for r in roots.tolist()], dtype=np.int64)


def remap(parents: AnyArray, order: AnyArray) -> AnyArray:
    """Parents after reordering nodes by ``order`` (new node i is old node order[i])."""
    new = np.full(len(parents), -1, dtype=np.int64)
    new[order] = np.arange(len(order))
    old = parents[order]
    return np.where(old >= 0, new[np.maximum(old, 0)], -1)


def test_round_trip_every_store(store_factory: Any, zarr_format: Literal[2, 3]) -> None:
    store = store_factory()
    radius = np.linspace(0.5, 2.0, 9)
    swc_type = np.array([1, 3, 3, 3, 3, 2, 2, 2, 0])
    summary = write_skeletons(
        store,
        POS,
        PARENTS,
        offsets=OFFSETS,
        object_ids=IDS,
        radius=radius,
        swc_type=swc_type,
        attributes={"label": np.array(list("abcdefghi"))},
        object_attributes={"volume": [1.0, 2.0]},
        chunk_shape=(1, 1, 1),
        zarr_format=zarr_format,
    )
    assert (summary.vertex_count, summary.object_count) == (9, 2)
    sks = read_skeletons(store_factory.for_reading(store))
    np.testing.assert_array_equal(sks.positions, POS)
    np.testing.assert_array_equal(sks.parents, PARENTS)
    assert sks.offsets.tolist() == [0, 5, 9]
    assert sks.object_ids.dtype == np.uint64
    assert sks.object_ids.tolist() == IDS.tolist()
    assert sks.radius is not None
    assert sks.radius.dtype == np.float32
    np.testing.assert_array_equal(sks.radius, radius.astype(np.float32))
    assert sks.swc_type is not None
    assert sks.swc_type.dtype == np.int32
    assert sks.swc_type.tolist() == swc_type.tolist()
    assert sks.attributes["label"].tolist() == list("abcdefghi")
    assert sks.object_attributes["volume"].tolist() == [1.0, 2.0]
    attrs = zv.open_store(store_factory.for_reading(store)).attrs
    assert attrs["swc_compatible"] is True
    assert attrs["is_directed"] is True
    assert attrs["geometry_type"] == "skeleton"


def test_skeletons_access() -> None:
    store = MemoryStore()
    write_skeletons(
        store,
        POS,
        PARENTS,
        offsets=OFFSETS,
        object_ids=IDS,
        radius=np.ones(9),
        object_attributes={"volume": [1.0, 2.0]},
        chunk_shape=(1, 1, 1),
    )
    sks = read_skeletons(store)
    assert len(sks) == 2
    assert isinstance(sks, Skeletons)
    second = sks[-1]
    assert isinstance(second, Skeleton)
    assert len(second) == 4
    assert second.parents.tolist() == [-1, 0, 1, -1]
    assert second.object_id == 17
    assert second.object_attributes["volume"] == 2.0
    assert second.roots.tolist() == [0, 3]
    assert second.edges.tolist() == [[1, 0], [2, 1]]
    assert [len(s) for s in sks] == [5, 4]
    assert sks.edges.tolist() == [[1, 0], [2, 1], [3, 1], [4, 3], [6, 5], [7, 6]]
    with pytest.raises(IndexError):
        sks[2]


def test_forest_without_offsets_numbers_trees_by_smallest_node() -> None:
    # trees {0, 3, 4} and {1, 2}, interleaved, children before parents
    pos = np.array([[0.5, 0.5], [4.5, 4.5], [4.5, 5.5], [0.5, 1.5], [0.5, 2.5]])
    parents = np.array([3, -1, 1, 4, -1])
    store = MemoryStore()
    assert write_skeletons(store, pos, parents, chunk_shape=(1, 1)).object_count == 2
    sks = read_skeletons(store)
    order = np.array([0, 3, 4, 1, 2])
    np.testing.assert_array_equal(sks.positions, pos[order])
    np.testing.assert_array_equal(sks.parents, remap(parents, order))
    assert sks.offsets.tolist() == [0, 3, 5]
    assert sks.object_ids.tolist() == [0, 1]


def test_pairs_and_edge_forms() -> None:
    pairs = [(POS[:5], PARENTS[:5]), (POS[5:], np.array([-1, 0, 1, -1]))]
    a, b = MemoryStore(), MemoryStore()
    write_skeletons(a, pairs, chunk_shape=(1, 1, 1), radius=[np.ones(5), np.full(4, 2.0)])
    child = np.flatnonzero(PARENTS >= 0)
    edges = np.stack([child, PARENTS[child]], axis=1)[::-1]
    write_skeletons(b, POS, edges, offsets=OFFSETS, chunk_shape=(1, 1, 1))
    for store in (a, b):
        sks = read_skeletons(store)
        np.testing.assert_array_equal(sks.parents, PARENTS)
        assert sks.offsets.tolist() == [0, 5, 9]
    assert read_skeletons(a).radius.tolist() == [1.0] * 5 + [2.0] * 4  # type: ignore[union-attr]


def test_queries_by_id_box_group() -> None:
    store = MemoryStore()
    write_skeletons(
        store,
        POS,
        PARENTS,
        offsets=OFFSETS,
        object_ids=IDS,
        chunk_shape=(1, 1, 1),
        groups={"g": [17]},
    )
    one = read_skeletons(store, object_ids=[17])
    assert len(one) == 1
    assert one[0].parents.tolist() == [-1, 0, 1, -1]
    both = read_skeletons(store, object_ids=[17, IDS[0], 17])
    assert both.object_ids.tolist() == [17, IDS[0]]  # order given, repeats read once
    assert both.offsets.tolist() == [0, 4, 9]
    box = read_skeletons(store, bbox=([2, 0, 0], [3, 1, 1]))  # touches node 2 only
    assert box.object_ids.tolist() == [IDS[0]]
    assert len(box.positions) == 5
    assert len(read_skeletons(store, bbox=([20, 20, 20], [30, 30, 30]))) == 0
    assert read_skeletons(store, group="g").object_ids.tolist() == [17]
    with pytest.raises(InvalidInputError, match="not in the store"):
        read_skeletons(store, object_ids=[3])


def test_read_as_graph_and_registry() -> None:
    store = MemoryStore()
    write_skeletons(store, POS, PARENTS, offsets=OFFSETS, chunk_shape=(1, 1, 1))
    g = read_graph(store)
    assert g.directed
    assert g.edges.tolist() == [[1, 0], [2, 1], [3, 1], [4, 3], [6, 5], [7, 6]]
    reader = LevelReader(zv.open_store(store))
    sks = get_geometry_type("skeleton").read(reader, Query(object_ids=np.array([1])))
    assert isinstance(sks, Skeletons)
    assert len(sks) == 1
    assert len(zv.open(store).read()) == 2
    other = MemoryStore()
    zv.write_points(other, POS, chunk_shape=(1, 1, 1))
    with pytest.raises(InvalidInputError, match="skeleton"):
        read_skeletons(other)


def test_empty_skeleton_segment_round_trips() -> None:
    store = MemoryStore()
    write_skeletons(store, POS, PARENTS, offsets=[0, 5, 5, 9], chunk_shape=(1, 1, 1))
    sks = read_skeletons(store)
    assert sks.offsets.tolist() == [0, 5, 5, 9]
    assert len(sks[1]) == 0


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parents", "kw", "error", "match"),
    [
        ([-1, 0, 1, 1, 3, 7, 5, 6, -1], {}, GeometryError, r"node [567] is on a cycle"),
        ([-1, 1, 1, 1, 3, -1, 5, 6, -1], {}, GeometryError, "node 1 is on a cycle"),
        ([-1, 0, 1, 1, 3, -1, 5, 6, 9], {}, GeometryError, r"parents\[8\] = 9 is out of range"),
        ([-1, 0, 1, 1, 3, -1, 5, -2, -1], {}, GeometryError, r"parents\[7\] = -2"),
        ([[1, 0], [2, 1], [2, 0]], {}, GeometryError, r"node 2 has two parents \(.*rows 1 and 2"),
        ([[1, 0], [2, 12]], {}, GeometryError, "row 1: vertex index 12"),
        (
            [-1, 0, 1, 1, 3, 2, 5, 6, -1],
            {"offsets": OFFSETS},
            GeometryError,
            r"node 5 \(skeleton 1\) has parent 2 in skeleton 0",
        ),
        ([-1, 0], {}, InvalidInputError, "parents must be 9 integers"),
        (
            PARENTS,
            {"radius": np.ones(9), "attributes": {"radius": np.ones(9)}},
            InvalidInputError,
            "both",
        ),
        (PARENTS, {"object_ids": [1, 2]}, InvalidInputError, "ids must be 3 integers"),
        (PARENTS, {"offsets": [0, 4]}, InvalidInputError, "offsets"),
    ],
)
def test_rejects(parents: Any, kw: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        write_skeletons(MemoryStore(), POS, np.asarray(parents), chunk_shape=(1, 1, 1), **kw)


def test_rejects_pairs_with_bad_local_parent() -> None:
    with pytest.raises(GeometryError, match="skeleton 1 node 2: parent 5 is out of range"):
        write_skeletons(
            MemoryStore(), [(POS[:2], [-1, 0]), (POS[:3], [-1, 0, 5])], chunk_shape=(1, 1, 1)
        )
    with pytest.raises(InvalidInputError, match="pairs"):
        write_skeletons(MemoryStore(), [POS], chunk_shape=(1, 1, 1))


@pytest.mark.parametrize(
    ("seed", "n_sk", "n"),
    [
        (5, 6, 400),
        # >= 65,536 nodes: parents come from a second thread while the vertices decode
        (6, 70, 1000),
    ],
)
def test_many_local_and_cross_links_full_and_object_reads(seed: int, n_sk: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 4, (n_sk * n, 3))  # 8 chunks: local and cross-chunk links
    local = np.concatenate([[-1], rng.integers(0, np.arange(1, n))])
    parents = np.concatenate([np.where(local >= 0, local + n * i, -1) for i in range(n_sk)])
    store = MemoryStore()
    offsets = np.arange(0, n * n_sk + 1, n)
    write_skeletons(store, pos, parents, offsets=offsets, chunk_shape=(2, 2, 2))
    full = read_skeletons(store)
    assert full.parents.tolist() == parents.tolist()
    np.testing.assert_array_equal(full.positions, pos)
    for k in (0, 3, 5):
        one = read_skeletons(store, object_ids=[k])
        assert one[0].parents.tolist() == local.tolist()
        np.testing.assert_array_equal(one.positions, pos[n * k : n * (k + 1)])


def test_long_runs_full_and_object_reads() -> None:
    # two paths side by side through three chunks: a few long manifest refs per skeleton
    n = 600
    path = np.stack([np.linspace(0.05, 2.95, n), np.full(n, 0.5), np.full(n, 0.5)], axis=1)
    pos = np.concatenate([path, path[::-1] + np.array([0.0, 0.2, 0.0])])
    chain = np.arange(-1, n - 1)
    parents = np.concatenate([chain, np.where(chain >= 0, chain + n, -1)])
    store = MemoryStore()
    write_skeletons(store, pos, parents, offsets=[0, n, 2 * n], chunk_shape=(1, 1, 1))
    full = read_skeletons(store)
    assert full.parents.tolist() == parents.tolist()
    np.testing.assert_array_equal(full.positions, pos)
    for k in (0, 1):
        one = read_skeletons(store, object_ids=[k])
        assert one[0].parents.tolist() == chain.tolist()
        np.testing.assert_array_equal(one.positions, pos[n * k : n * (k + 1)])


def test_read_rejects_a_stored_node_with_two_parents() -> None:
    store = MemoryStore()
    pos = np.array([[0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.4, 0.4, 0.4]])
    write_skeletons(store, pos, [-1, 0, 1, 2], chunk_shape=(1, 1, 1))
    assert read_skeletons(store).parents.tolist() == [-1, 0, 1, 2]
    with quiet_vlen():
        links = PayloadArray(zarr.open_array(store, path="0/links", mode="r+"))
    flat = np.zeros(1, dtype=np.int64)  # the one chunk
    rows = np.frombuffer(links.read(flat)[0], dtype="<i4").reshape(-1, 2)
    links.write(flat, [np.vstack([rows, [[3, 0]]]).astype("<i4").tobytes()])
    with pytest.raises(CorruptPayloadError, match="two parents"):
        read_skeletons(store)
    with pytest.raises(CorruptPayloadError, match="two parents"):
        read_skeletons(store, object_ids=[0])


def _long_chunk_store(
    compressor: str | None, n: int = 800, crossing: bool = False
) -> tuple[MemoryStore, npt.NDArray[Any], IntArrayT]:
    """Two skeletons of ``n`` nodes in two chunks: long chunks, mapped chunk by chunk.

    ``crossing``: each is a path through both chunks (cross-chunk links); else each lies in
    a chunk of its own.
    """
    rng = np.random.default_rng(5)
    if crossing:
        t = np.linspace(0.05, 1.95, n)
        one = np.stack([t, np.full(n, 0.5), np.full(n, 0.5)], axis=1)
        pos = np.concatenate([one, one + np.array([0.0, 0.2, 0.0])])
    else:
        pos = np.concatenate([rng.random((n, 3)), rng.random((n, 3))]) * [0.9, 1, 1]
        pos[n:, 0] += 1.0
    parents = np.concatenate([np.arange(-1, n - 1), np.arange(n - 1, 2 * n - 1)])
    parents[n] = -1
    store = MemoryStore()
    write_skeletons(
        store, pos, parents, offsets=[0, n, 2 * n], chunk_shape=(1, 1, 1), compressor=compressor
    )
    return store, pos, parents


def _rewrite_links(store: MemoryStore, change: Any) -> None:
    with quiet_vlen():
        links = PayloadArray(zarr.open_array(store, path="0/links", mode="r+"))
    flat = np.zeros(1, dtype=np.int64)  # the first chunk
    rows = np.frombuffer(links.read(flat)[0], dtype="<i4").reshape(-1, 2)
    links.write(flat, [np.asarray(change(rows), dtype="<i4").tobytes()])


@pytest.mark.parametrize("decode_each", [True, False], ids=["decoded each", "read together"])
@pytest.mark.parametrize("compressor", ["lz4", "default", None])
def test_long_chunks_map_links_chunk_by_chunk(
    compressor: str | None, decode_each: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both ways of mapping long chunks' links: each decoded just before, or all read first."""
    monkeypatch.setattr(linkread, "DECODE_EACH_ROWS", 1 if decode_each else 1 << 40)
    store, pos, parents = _long_chunk_store(compressor)
    full = read_skeletons(store)
    assert full.parents.tolist() == parents.tolist()
    np.testing.assert_array_equal(full.positions, pos)
    one = read_skeletons(store, object_ids=[1])
    assert one.parents.tolist() == (parents[800:] - 800).clip(-1).tolist()
    _rewrite_links(store, lambda rows: np.vstack([rows, [[5, 0]]]))
    with pytest.raises(CorruptPayloadError, match="two parents"):
        read_skeletons(store)
    _rewrite_links(store, lambda rows: np.vstack([rows[:-1], [[5, 900]]]))
    with pytest.raises(CorruptPayloadError, match="outside its chunk"):
        read_skeletons(store)
    _rewrite_links(store, lambda rows: np.hstack([rows, rows[:, :1]]).ravel()[:-1])
    with pytest.raises(CorruptPayloadError, match="whole number"):
        read_skeletons(store)


def test_helpers() -> None:
    assert parents_array(np.zeros((0, 2), np.int64), 2).tolist() == [-1, -1]
    big = np.arange(-1, 99_999)  # one long path: log-depth pointer jumping
    assert (tree_roots(big) == 0).all()
    ring = np.roll(np.arange(1000), 1)
    with pytest.raises(GeometryError, match="cycle"):
        tree_roots(ring)


# -- chunk access ----------------------------------------------------------------------------


class CountingStore(MemoryStore):
    """A MemoryStore that records every key read (shared with its read-only views)."""

    def __init__(self, store_dict: Any = None, *, read_only: bool = False) -> None:
        super().__init__(store_dict, read_only=read_only)
        self.reads: list[str] = []

    def with_read_only(self, read_only: bool = False) -> CountingStore:
        view = CountingStore(self._store_dict, read_only=read_only)
        view.reads = self.reads
        return view

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        self.reads.append(key)
        return await super().get(key, prototype, byte_range)


def test_one_skeleton_reads_only_its_chunks() -> None:
    rng = np.random.default_rng(3)
    n_sk, n = 10, 30
    starts = rng.uniform(0, 40, (n_sk, 3))
    pos = np.concatenate([s + np.cumsum(rng.uniform(-0.3, 0.3, (n, 3)), axis=0) for s in starts])
    local = np.concatenate([[-1], rng.integers(0, np.arange(1, n))])  # random tree per skeleton
    parents = np.concatenate([np.where(local >= 0, local + n * i, -1) for i in range(n_sk)])
    store = CountingStore()
    write_skeletons(
        store,
        pos,
        parents,
        offsets=np.arange(0, n * n_sk + 1, n),
        chunk_shape=(2, 2, 2),
        bounds=([0, 0, 0], [48, 48, 48]),
    )
    grid: Any = zv.open_store(store).attrs["chunk_grid"]
    origin = np.array(grid["origin"])
    for k in (0, 4, 9):
        store.reads.clear()
        sks = read_skeletons(store, object_ids=[k])
        assert sks.parents.tolist() == local.tolist()
        mine = {
            tuple(c) for c in (np.floor(pos[n * k : n * k + n] / 2) - origin).astype(int).tolist()
        }
        touched = {
            tuple(int(x) for x in key.split("/c/")[1].split("/"))
            for key in store.reads
            if "/c/" in key and key.split("/")[1] in ("vertices", "links", "cross_chunk_links")
        }
        assert touched == mine


# -- properties ------------------------------------------------------------------------------


@st.composite
def forests(draw: st.DrawFn) -> tuple[tuple[float, ...], AnyArray, AnyArray]:
    chunk = draw(st.sampled_from(((1.0, 1.0), (0.5, 2.0), (1.0, 1.0, 1.0))))
    case = draw(trees(chunk, max_trees=4, max_nodes=20))
    perm = np.array(draw(st.permutations(range(len(case.parents)))))
    # shuffle node order so children may come before parents
    return chunk, case.positions[perm], remap(case.parents, perm)


@pytest.mark.slow
@SETTINGS
@given(case=forests(), data=st.data())
def test_property_forest_round_trip(case: Any, data: st.DataObject) -> None:
    chunk, pos, parents = case
    store = MemoryStore()
    write_skeletons(store, pos, parents, chunk_shape=chunk, radius=np.arange(len(pos)))
    tree = trees_of(parents)
    order = np.argsort(tree, kind="stable")
    sks = read_skeletons(store)
    np.testing.assert_array_equal(sks.positions, pos[order])
    np.testing.assert_array_equal(sks.parents, remap(parents, order))
    assert sks.radius.tolist() == order.tolist()  # type: ignore[union-attr]
    assert np.diff(sks.offsets).tolist() == np.bincount(tree).tolist()
    k = data.draw(st.integers(0, tree.max()))
    one = read_skeletons(store, object_ids=[k])[0]
    mine = np.flatnonzero(tree == k)
    np.testing.assert_array_equal(one.positions, pos[mine])
    np.testing.assert_array_equal(one.parents, remap(parents, mine))
    lo, hi = data.draw(bboxes(chunk))
    p = np.asarray(pos, dtype=np.float64)
    hit = np.all((p >= np.asarray(lo)) & (p < np.asarray(hi)), axis=1)
    assert read_skeletons(store, bbox=(lo, hi)).object_ids.tolist() == sorted(set(tree[hit]))


@pytest.mark.slow
@SETTINGS
@given(case=forests())
def test_property_one_object_forest_with_offsets(case: Any) -> None:
    chunk, pos, parents = case
    store = MemoryStore()
    write_skeletons(store, pos, parents, offsets=[0, len(pos)], object_ids=[7], chunk_shape=chunk)
    sks = read_skeletons(store)
    np.testing.assert_array_equal(sks.positions, pos)
    np.testing.assert_array_equal(sks.parents, parents)
    assert sks.object_ids.tolist() == [7]


@pytest.mark.parametrize("compressor", ["lz4", None])
def test_big_reads_share_the_link_tasks(
    compressor: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local and cross-chunk links go to whichever thread is free; errors still surface."""
    store, pos, parents = _long_chunk_store(compressor, 40_000, crossing=True)
    assert len(pos) >= linkread.OVERLAP_ROWS  # the two-thread path
    full = read_skeletons(store)
    assert full.parents.tolist() == parents.tolist()
    np.testing.assert_array_equal(full.positions, pos)
    # a node of chunk 1 whose parent is a cross-chunk link also gets a local one
    with quiet_vlen():
        links = PayloadArray(zarr.open_array(store, path="0/links", mode="r+"))
    flat = np.array([1], dtype=np.int64)
    rows = np.frombuffer(links.read(flat)[0], dtype="<i4").reshape(-1, 2)
    assert 0 not in rows[:, 0]  # its first node's parent is in chunk 0
    links.write(flat, [np.vstack([rows, [[0, 5]]]).astype("<i4").tobytes()])
    with pytest.raises(CorruptPayloadError, match="two parents"):
        read_skeletons(store)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("row map failed")

    monkeypatch.setattr(linkread, "row_index", boom)  # the worker fails before any link
    with pytest.raises(RuntimeError, match="row map failed"):
        read_skeletons(store)


def test_tasks_run_once_whoever_claims_them() -> None:
    import threading

    from zarr_vectors.core.links.read import Tasks

    done = [0] * 200
    lock = threading.Lock()

    def task(k: int) -> None:
        with lock:
            done[k] += 1

    tasks = Tasks(*(lambda k=k: task(k) for k in range(200)))
    threads = [threading.Thread(target=tasks.run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    tasks.run()  # nothing left
    assert done == [1] * 200
