"""Graph stores against brute force: round trips, global order, box/object/group reads, errors.

Expectations are recomputed from the input with plain Python/numpy: components by a simple
union-find, the global order (objects by smallest vertex, input order within), half-open boxes
(FORMAT.md §2) and "edges whose ends are returned" (§7).  Every write carries a ``vid`` vertex
attribute (the input index) and an ``eid`` edge attribute, so results map back to the input.
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
from zarr.storage import LocalStore, MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.links.read import row_index
from zarr_vectors.core.ragged import sort_keys as _sort_keys
from zarr_vectors.core.reader import LevelReader, ObjectRanges, RowRanges
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.testing.strategies import bboxes, graphs, object_id_arrays
from zarr_vectors.types._base import Query, get_geometry_type
from zarr_vectors.types.graphs import (
    Graph,
    connected_components,
    first_appearance,
    read_graph,
    write_graph,
)

AnyArray = npt.NDArray[Any]
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CHUNKS = ((1.0, 1.0), (0.5, 2.0), (1.0, 1.0, 1.0))


# -- oracles ---------------------------------------------------------------------------------


def components(n: int, edges: AnyArray) -> AnyArray:
    """Component labels numbered by smallest vertex (plain Python union-find)."""
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges.tolist():
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    roots = [find(i) for i in range(n)]
    number = {r: i for i, r in enumerate(sorted(set(roots)))}
    return np.array([number[r] for r in roots], dtype=np.int64)


def edge_set(edges: AnyArray, directed: bool) -> set[tuple[int, int]]:
    pairs = [tuple(e) for e in np.asarray(edges).reshape(-1, 2).tolist()]
    return {(a, b) if directed else (min(a, b), max(a, b)) for a, b in pairs}


def result_edges(g: Graph) -> set[tuple[int, int]]:
    """Edges of a result in input vertex indices (via ``vid``)."""
    return edge_set(g.attributes["vid"][g.edges], g.directed)


def assert_edges_sorted(g: Graph) -> None:
    """Edges come back sorted by ``(source, target)``."""
    e = np.asarray(g.edges).reshape(-1, 2)
    assert (np.lexsort(e.T[::-1]) == np.arange(len(e))).all()


def assert_edge_attributes_aligned(g: Graph, edges: AnyArray) -> None:
    """Edge i of the result carries the ``eid`` of the input edge it came from."""
    got = g.attributes["vid"][g.edges].reshape(-1, 2)
    src = np.asarray(edges).reshape(-1, 2)[g.edge_attributes["eid"]]
    if not g.directed:
        got, src = np.sort(got, axis=1), np.sort(src, axis=1)
    np.testing.assert_array_equal(got, src)
    assert g.edges.dtype == np.int64


def inside(pos: AnyArray, lo: Any, hi: Any) -> AnyArray:
    p = np.asarray(pos, dtype=np.float64)
    return np.asarray(np.all((p >= np.asarray(lo)) & (p < np.asarray(hi)), axis=1))


def write(store: Any, pos: AnyArray, edges: AnyArray, **kw: Any) -> zv.WriteSummary:
    kw.setdefault("chunk_shape", (1.0,) * pos.shape[1])
    return write_graph(
        store,
        pos,
        edges,
        attributes={"vid": np.arange(len(pos)), **kw.pop("attributes", {})},
        edge_attributes={"eid": np.arange(len(edges)), **kw.pop("edge_attributes", {})},
        **kw,
    )


# -- fixed examples --------------------------------------------------------------------------

POS = np.array([[0.5, 0.5], [1.5, 0.5], [2.5, 2.5], [3.5, 0.5], [0.2, 3.7], [3.9, 3.9], [9.0, 9.0]])
EDGES = np.array([[1, 0], [1, 2], [2, 3], [5, 4]])  # components {0,1,2,3}, {4,5}, {6}


def test_round_trip_every_store(store_factory: Any, zarr_format: Literal[2, 3]) -> None:
    store = store_factory()
    vattrs: dict[str, AnyArray] = {
        "w": np.linspace(0, 1, 7, dtype=np.float32),
        "rgb": np.arange(21, dtype=np.uint8).reshape(7, 3),
        "kind": np.array(["a", "b", "a", "c", "b", "b", "a"]),
    }
    eattrs = {"len": np.array([1.0, 2.0, 3.0, 4.0]), "pair": np.arange(8).reshape(4, 2)}
    summary = write_graph(
        store,
        POS,
        EDGES,
        chunk_shape=(1, 1),
        attributes=vattrs,
        edge_attributes=eattrs,
        object_attributes={"mass": np.array([1.5, 2.5, 3.5])},
        zarr_format=zarr_format,
    )
    assert (summary.vertex_count, summary.object_count) == (7, 3)
    g = read_graph(store_factory.for_reading(store))
    assert not g.directed
    np.testing.assert_array_equal(g.positions, POS)
    assert g.positions.dtype == np.float64
    assert g.edges.tolist() == [[0, 1], [1, 2], [2, 3], [4, 5]]  # canonical, sorted
    assert g.vertex_object_ids.tolist() == [0, 0, 0, 0, 1, 1, 2]
    for k, v in vattrs.items():
        np.testing.assert_array_equal(g.attributes[k], v)
        assert g.attributes[k].dtype == v.dtype or k == "kind"
    np.testing.assert_array_equal(g.edge_attributes["len"], eattrs["len"])
    np.testing.assert_array_equal(g.edge_attributes["pair"], eattrs["pair"])
    assert g.object_attributes["mass"].tolist() == [1.5, 2.5, 3.5]
    assert g.object_ids.tolist() == [0, 1, 2]
    assert zv.open_store(store_factory.for_reading(store)).attrs["is_directed"] is False


def test_local_store_and_float32(tmp_path: Any) -> None:
    store = LocalStore(tmp_path / "g.zarrvectors")
    pos = POS.astype(np.float32)
    write(store, pos, EDGES, directed=True, zarr_format=2)
    g = read_graph(store)
    assert g.positions.dtype == np.float32
    assert g.directed
    assert result_edges(g) == edge_set(EDGES, True)
    assert_edge_attributes_aligned(g, EDGES)


def test_directed_keeps_orientation_and_both_directions() -> None:
    store = MemoryStore()
    edges = np.array([[1, 0], [0, 1], [3, 2]])
    write(store, POS, edges, directed=True)
    g = read_graph(store)
    assert g.directed
    assert g.edges.tolist() == [[0, 1], [1, 0], [3, 2]]
    assert g.edge_attributes["eid"].tolist() == [1, 0, 2]
    assert zv.open_store(store).attrs["is_directed"] is True


def test_global_order_interleaved_components() -> None:
    # components {0, 2, 4} and {1, 3}: objects by smallest vertex, input order within
    pos = np.array([[0.1, 0.1], [5.1, 5.1], [1.1, 0.1], [6.1, 5.1], [2.1, 0.1]])
    store = MemoryStore()
    write(store, pos, np.array([[4, 0], [2, 0], [3, 1]]))
    g = read_graph(store)
    assert g.attributes["vid"].tolist() == [0, 2, 4, 1, 3]
    np.testing.assert_array_equal(g.positions, pos[[0, 2, 4, 1, 3]])
    assert g.edges.tolist() == [[0, 1], [0, 2], [3, 4]]
    assert g.vertex_object_ids.tolist() == [0, 0, 0, 1, 1]


def test_many_edges_in_few_runs_sort_with_attributes() -> None:
    # a path alternating between two chunks: its edges are cross-chunk links stored chunk by
    # chunk, so they come back as two ascending runs (merged by the stable sort); eid follows
    n = 5000
    pos = np.stack([np.arange(n) % 2 + 0.5, np.full(n, 0.5)], axis=1)
    edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    store = MemoryStore()
    write(store, pos, edges, directed=True)
    g = read_graph(store)
    assert g.edges.tolist() == edges.tolist()
    assert g.edge_attributes["eid"].tolist() == list(range(n - 1))
    undirected = MemoryStore()
    write(undirected, pos, edges[::-1, ::-1])
    g = read_graph(undirected)
    assert g.edges.tolist() == edges.tolist()
    assert g.edge_attributes["eid"].tolist() == list(range(n - 2, -1, -1))


def sorted_unique_edges(e: AnyArray) -> AnyArray:
    """Simple undirected edges from random pairs: no self-loops, no duplicates."""
    e = np.sort(e[e[:, 0] != e[:, 1]], axis=1)
    return np.unique(e, axis=0)


def test_many_local_and_cross_links_full_and_object_reads() -> None:
    rng = np.random.default_rng(9)
    pos = rng.uniform(0, 3, (600, 2))  # 9 chunks
    edges = sorted_unique_edges(rng.integers(0, 600, (1500, 2)))
    edges = edges[rng.permutation(len(edges))]
    store = MemoryStore()
    write(store, pos, edges)
    labels = components(len(pos), edges)
    full = read_graph(store)
    assert result_edges(full) == edge_set(edges, False)
    assert_edge_attributes_aligned(full, edges)
    assert_edges_sorted(full)
    for obj in np.unique(labels)[:3].tolist():
        one = read_graph(store, object_ids=[obj])
        assert result_edges(one) == {e for e in edge_set(edges, False) if labels[e[0]] == obj}
        assert_edge_attributes_aligned(one, edges)
        assert_edges_sorted(one)


@pytest.mark.parametrize("high", [1000, 2**40, 2**62])
@pytest.mark.parametrize("runs", [1, 4, 3000])
def test_sort_keys_values_and_permutation(high: int, runs: int) -> None:
    rng = np.random.default_rng(runs)
    key = np.concatenate([np.sort(p) for p in np.array_split(rng.integers(0, high, 6000), runs)])
    n_runs = int(np.count_nonzero(key[1:] < key[:-1])) + 1
    got, order = _sort_keys(key.copy(), False, n_runs)
    assert order is None
    np.testing.assert_array_equal(got, np.sort(key))
    got, order = _sort_keys(key.copy(), True, n_runs)
    assert order is not None
    np.testing.assert_array_equal(got, np.sort(key))
    np.testing.assert_array_equal(key[order], got)
    assert sorted(order.tolist()) == list(range(len(key)))


@pytest.mark.parametrize("runs", [None, 4])
@pytest.mark.parametrize("high", [5000, 2**40, 2**62])
def test_sort_keys_big_inputs_sort_stably_in_two_threads(high: int, runs: int | None) -> None:
    """From 2**20 keys (in many runs, or in a few long ones: merged) the halves sort side by
    side; equal keys keep order."""
    rng = np.random.default_rng(high % 97)
    key = rng.integers(0, high, 2**20 + 7)
    if runs is not None:
        key = np.concatenate([np.sort(p) for p in np.array_split(key, runs)])
    n_runs = len(key) if runs is None else runs
    stable = np.argsort(key, kind="stable")
    got, order = _sort_keys(key.copy(), True, n_runs)
    assert order is not None
    np.testing.assert_array_equal(order, stable)
    np.testing.assert_array_equal(got, key[stable])
    got, _ = _sort_keys(key.copy(), False, n_runs)
    np.testing.assert_array_equal(got, key[stable])


@pytest.mark.slow
def test_big_graph_whole_read_dense_chunks_and_threads() -> None:
    """A whole read of >= 65,536 vertices fetches links on a second thread; chunks holding
    >= 256 links each map their ends chunk by chunk; both must give the brute-force edges."""
    rng = np.random.default_rng(4)
    n = 70_000
    pos = rng.uniform(0, 2, (n, 3))  # 8 chunks: ~44k links in each, plus cross links
    edges = sorted_unique_edges(rng.integers(0, n, (150_000, 2)))
    edges = edges[rng.permutation(len(edges))]
    store = MemoryStore()
    write(store, pos, edges)
    full = read_graph(store)
    assert result_edges(full) == edge_set(edges, False)
    assert_edge_attributes_aligned(full, edges)
    assert_edges_sorted(full)
    directed = MemoryStore()
    write(directed, pos, edges, directed=True)
    g = read_graph(directed)
    assert result_edges(g) == edge_set(edges, True)
    assert_edge_attributes_aligned(g, edges)


def test_first_appearance_sorted_unsorted_empty() -> None:
    assert first_appearance(np.array([1, 1, 2, 5, 5])).tolist() == [1, 2, 5]
    assert first_appearance(np.array([5, 1, 5, 2])).tolist() == [5, 1, 2]
    assert first_appearance(np.zeros(0, np.int64)).tolist() == []


def test_isolated_and_empty() -> None:
    store = MemoryStore()
    write(store, POS[:3], np.zeros((0, 2), np.int64))
    g = read_graph(store)
    assert g.n_edges == 0
    assert g.vertex_object_ids.tolist() == [0, 1, 2]
    empty = MemoryStore()
    assert write_graph(empty, np.zeros((0, 2)), [], chunk_shape=(1, 1)).vertex_count == 0
    e = read_graph(empty)
    assert e.positions.shape == (0, 2)
    assert e.edges.shape == (0, 2)
    assert read_graph(empty, bbox=([0, 0], [1, 1]), include_boundary_edges=True).n_vertices == 0


def test_user_object_ids_order_attributes_groups() -> None:
    pos = np.array([[0.5, 0.5], [1.5, 0.5], [2.5, 0.5], [3.5, 0.5], [4.5, 0.5]])
    ids = np.array([70, 70, 30, 30, 70], dtype=np.uint64)
    edges = np.array([[0, 1], [1, 2], [2, 3], [4, 0]])  # 1-2 joins the two objects
    store = MemoryStore()
    write(
        store,
        pos,
        edges,
        vertex_object_ids=ids,
        object_attributes={"mass": [3.0, 7.0]},  # ascending ids: 30, 70
        groups={"odd": [70]},
        group_attributes={"size": [1]},
    )
    g = read_graph(store)
    assert g.attributes["vid"].tolist() == [0, 1, 4, 2, 3]  # 70 first (first appearance)
    assert g.vertex_object_ids.dtype == np.uint64
    assert g.object_ids.tolist() == [70, 30]
    assert g.object_attributes["mass"].tolist() == [7.0, 3.0]
    assert result_edges(g) == edge_set(edges, False)
    one = read_graph(store, object_ids=[30])
    assert one.attributes["vid"].tolist() == [2, 3]
    assert result_edges(one) == {(2, 3)}
    assert one.object_attributes["mass"].tolist() == [3.0]
    assert one.groups["odd"].size == 0
    grp = read_graph(store, group="odd")
    assert grp.attributes["vid"].tolist() == [0, 1, 4]
    assert result_edges(grp) == {(0, 1), (0, 4)}
    assert grp.group_attributes["size"].tolist() == [1]
    with pytest.raises(InvalidInputError, match="99"):
        read_graph(store, object_ids=[99])


def test_object_reads_in_shared_chunks_match_full_read() -> None:
    # 12 paths of 5 vertices share 2x2 chunks and cross between them: each one-object read sees
    # few of the fetched rows (sparse lookup), the full read all of them (dense lookup)
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 4, (60, 2))
    edges = np.array([[i, i + 1] for i in range(60) if i % 5 != 4])
    store = MemoryStore()
    write(store, pos, edges, chunk_shape=(2.0, 2.0))
    full = read_graph(store)
    assert result_edges(full) == edge_set(edges, False)
    assert_edge_attributes_aligned(full, edges)
    for obj in range(12):
        one = read_graph(store, object_ids=[obj])
        assert one.attributes["vid"].tolist() == list(range(5 * obj, 5 * obj + 5))
        assert result_edges(one) == {(i, i + 1) for i in range(5 * obj, 5 * obj + 4)}
        assert_edge_attributes_aligned(one, edges)


def test_user_objects_boundary_edge_owned_outside_box() -> None:
    # the edge (0, 1) joins object 5 (outside the box) to object 6 (inside); undirected edges
    # are stored [min, max] in global order, so the chunk outside the box owns it
    pos = np.array([[0.5, 0.5], [3.5, 3.5]])
    store = MemoryStore()
    write(store, pos, np.array([[1, 0]]), vertex_object_ids=[5, 6])
    box = ([3, 3], [4, 4])
    assert read_graph(store, bbox=box).n_edges == 0
    g = read_graph(store, bbox=box, include_boundary_edges=True)
    assert g.attributes["vid"].tolist() == [0, 1]
    assert result_edges(g) == {(0, 1)}


def test_bbox_with_objects_and_attribute_selection() -> None:
    store = MemoryStore()
    write(store, POS, EDGES, attributes={"w": np.arange(7.0)}, edge_attributes={"x": np.ones(4)})
    g = read_graph(
        store, bbox=([0, 0], [2, 2]), object_ids=[0, 0], attributes=["w"], edge_attributes=False
    )
    assert sorted(g.attributes) == ["w"]
    assert g.edge_attributes == {}
    assert g.attributes["w"].tolist() == [0.0, 1.0]
    assert g.edges.tolist() == [[0, 1]]
    b = read_graph(store, bbox=([0, 0], [2, 2]), object_ids=[0], include_boundary_edges=True)
    assert b.attributes["vid"].tolist() == [0, 1, 2]
    assert result_edges(b) == {(0, 1), (1, 2)}
    with pytest.raises(InvalidInputError, match="unknown attribute"):
        read_graph(store, edge_attributes=["nope"])


def test_registry_and_api_reader() -> None:
    store = MemoryStore()
    write(store, POS, EDGES)
    reader = LevelReader(zv.open_store(store))
    g = get_geometry_type("graph").read(reader, Query())
    assert isinstance(g, Graph)
    assert g.n_edges == 4
    assert zv.open(store).read(bbox=([0, 0], [2, 2])).n_vertices == 2


def test_wrong_store_type() -> None:
    store = MemoryStore()
    zv.write_points(store, POS, chunk_shape=(1, 1))
    with pytest.raises(InvalidInputError, match="point_cloud"):
        read_graph(store)


# -- input errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edges", "kw", "error", "match"),
    [
        ([[0, 1], [2, 2]], {}, GeometryError, "row 1 is a self-loop on vertex 2"),
        ([[0, 1], [1, 2], [0, 1]], {}, GeometryError, "rows 0 and 2 are the same undirected"),
        ([[0, 1], [1, 0]], {}, GeometryError, r"rows 0 and 1 .* \(0, 1\)"),
        ([[0, 1], [0, 1]], {"directed": True}, GeometryError, "rows 0 and 1 are the same edge"),
        ([[0, 1], [1, 7]], {}, GeometryError, "row 1: vertex index 7 is out of range"),
        ([[0, -1]], {}, GeometryError, "row 0: vertex index -1"),
        ([[0, 1, 2]], {}, InvalidInputError, r"shape \(E, 2\)"),
        ([[0.0, 1.0]], {}, InvalidInputError, "integers"),
        ([[0, 1]], {"vertex_object_ids": [1, 2]}, InvalidInputError, "one per vertex"),
        ([[0, 1]], {"object_attributes": {"id": [1, 2, 3, 4, 5, 6]}}, InvalidInputError, "id"),
        ([[0, 1]], {"edge_attributes": {"w": [1, 2]}}, InvalidInputError, "edge attribute"),
    ],
)
def test_rejects(edges: Any, kw: dict[str, Any], error: type[Exception], match: str) -> None:
    store = MemoryStore()
    with pytest.raises(error, match=match):
        write_graph(store, POS, np.asarray(edges), chunk_shape=(1, 1), **kw)
    assert not list(zarr.open_group(store, mode="a").keys())  # nothing written


def test_rejects_nan_position_naming_row() -> None:
    pos = POS.copy()
    pos[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match="row 3"):
        write_graph(MemoryStore(), pos, EDGES, chunk_shape=(1, 1))


def test_connected_components_matches_union_find() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    edges = rng.integers(0, n, (1500, 2))
    labels, count = connected_components(n, edges)
    expect = components(n, edges)
    np.testing.assert_array_equal(labels, expect)
    assert count == expect.max() + 1
    path = np.stack([np.arange(1, n), np.arange(n - 1)], axis=1)[rng.permutation(n - 1)]
    assert connected_components(n, path)[1] == 1


# -- chunk access ----------------------------------------------------------------------------


class CountingStore(MemoryStore):
    """A MemoryStore that records every key read."""

    def __init__(self, store_dict: Any = None, *, read_only: bool = False) -> None:
        super().__init__(store_dict, read_only=read_only)
        self.reads: list[str] = []

    def with_read_only(self, read_only: bool = False) -> CountingStore:
        view = CountingStore(self._store_dict, read_only=read_only)
        view.reads = self.reads  # read-only views (zarr opens one per read) share the log
        return view

    async def get(
        self,
        key: str,
        prototype: BufferPrototype | None = None,
        byte_range: ByteRequest | None = None,
    ) -> Buffer | None:
        self.reads.append(key)
        return await super().get(key, prototype, byte_range)


def payload_chunks(keys: list[str], array: str) -> set[tuple[int, ...]]:
    """Chunk indices of the payload keys of ``array`` (v3 ``c/i/j`` or v2 ``i.j``)."""
    head = f"0/{array}/"
    out = set()
    for k in keys:
        rest = k[len(head) :] if k.startswith(head) else None
        if rest is None or rest.endswith("zarr.json") or rest.rsplit("/", 1)[-1][:1] == ".":
            continue
        parts = rest[2:].split("/") if rest.startswith("c/") else rest.split(".")
        out.add(tuple(int(p) for p in parts))
    return out


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_object_read_touches_only_its_chunks(zarr_format: int) -> None:
    rng = np.random.default_rng(1)
    # 12 clusters, each a path of 20 vertices inside a 2x2 block of chunks
    centers = np.stack(np.meshgrid(np.arange(4) * 5.0, np.arange(3) * 5.0), -1).reshape(-1, 2)
    pos = np.concatenate([c + rng.uniform(0, 2, (20, 2)) for c in centers])
    edges = np.concatenate(
        [np.stack([np.arange(19), np.arange(1, 20)], 1) + 20 * i for i in range(12)]
    )
    store = CountingStore()
    write(store, pos, edges, zarr_format=zarr_format)
    for obj in (0, 7, 11):
        store.reads.clear()
        g = read_graph(store, object_ids=[obj])
        assert g.attributes["vid"].tolist() == list(range(20 * obj, 20 * obj + 20))
        mine = {tuple(c) for c in np.floor(pos[20 * obj : 20 * obj + 20]).astype(int).tolist()}
        for array in ("vertices", "links", "cross_chunk_links", "attributes/vid"):
            assert payload_chunks(store.reads, array) <= mine, array
        assert payload_chunks(store.reads, "vertices") == mine
    store.reads.clear()
    read_graph(store, bbox=([5, 5], [6, 6]))
    assert payload_chunks(store.reads, "vertices") <= {(5, 5)}


# -- properties ------------------------------------------------------------------------------


@st.composite
def graph_cases(draw: st.DrawFn) -> tuple[tuple[float, ...], AnyArray, AnyArray, bool]:
    chunk = draw(st.sampled_from(CHUNKS))
    case = draw(graphs(chunk, max_nodes=25, max_edges=40))
    edges = case.edges
    directed = draw(st.booleans())
    if len(edges):
        edges = edges[np.array(draw(st.permutations(range(len(edges)))))]
        flip = np.array(draw(st.lists(st.booleans(), min_size=len(edges), max_size=len(edges))))
        edges = np.where(flip[:, None], edges[:, ::-1], edges)
    return chunk, case.positions, edges, directed


@pytest.mark.slow
@SETTINGS
@given(case=graph_cases(), data=st.data())
def test_property_round_trip_and_queries(case: Any, data: st.DataObject) -> None:
    chunk, pos, edges, directed = case
    store = MemoryStore()
    write(store, pos, edges, directed=directed, chunk_shape=chunk)
    labels = components(len(pos), edges)
    order = np.argsort(labels, kind="stable")
    full = read_graph(store)
    assert full.attributes["vid"].tolist() == order.tolist()
    np.testing.assert_array_equal(full.positions, pos[order])
    assert full.vertex_object_ids.tolist() == labels[order].tolist()
    assert result_edges(full) == edge_set(edges, directed)
    assert len(full.edges) == len(edges)
    assert_edge_attributes_aligned(full, edges)
    if not directed:
        assert (full.edges[:, 0] < full.edges[:, 1]).all()

    lo, hi = data.draw(bboxes(chunk))
    ins = inside(pos, lo, hi)
    box = read_graph(store, bbox=(lo, hi))
    assert sorted(box.attributes["vid"].tolist()) == np.flatnonzero(ins).tolist()
    assert result_edges(box) == {e for e in edge_set(edges, directed) if ins[list(e)].all()}
    bound = read_graph(store, bbox=(lo, hi), include_boundary_edges=True)
    touching = {e for e in edge_set(edges, directed) if ins[list(e)].any()}
    verts = set(np.flatnonzero(ins).tolist()) | {v for e in touching for v in e}
    assert sorted(bound.attributes["vid"].tolist()) == sorted(verts)
    assert result_edges(bound) == touching
    for g in (full, box, bound):
        assert_edges_sorted(g)
    for g in (box, bound):
        assert_edge_attributes_aligned(g, edges)
        np.testing.assert_array_equal(g.positions, pos[g.attributes["vid"]])
        np.testing.assert_array_equal(g.vertex_object_ids, labels[g.attributes["vid"]])

    obj = data.draw(st.integers(0, labels.max()))
    one = read_graph(store, object_ids=[obj])
    assert one.attributes["vid"].tolist() == np.flatnonzero(labels == obj).tolist()
    assert result_edges(one) == {e for e in edge_set(edges, directed) if labels[e[0]] == obj}
    assert_edge_attributes_aligned(one, edges)


@SETTINGS
@given(case=graph_cases(), data=st.data())
def test_property_self_loops_and_duplicates_rejected(case: Any, data: st.DataObject) -> None:
    chunk, pos, edges, directed = case
    n = len(pos)
    kind = data.draw(st.sampled_from(["loop", "duplicate", "reversed"]))
    if kind == "loop":
        v = data.draw(st.integers(0, n - 1))
        bad = np.vstack([edges.reshape(-1, 2), [[v, v]]])
    elif len(edges) == 0:
        return
    else:
        e = edges[data.draw(st.integers(0, len(edges) - 1))]
        bad = np.vstack([edges, [e if kind == "duplicate" else e[::-1]]])
    if kind == "reversed" and directed:
        write(MemoryStore(), pos, bad, directed=True, chunk_shape=chunk)  # both directions ok
        return
    with pytest.raises(GeometryError, match="self-loop" if kind == "loop" else "same"):
        write(MemoryStore(), pos, bad, directed=directed, chunk_shape=chunk)


@pytest.mark.slow
@SETTINGS
@given(case=graph_cases(), data=st.data())
def test_property_user_objects(case: Any, data: st.DataObject) -> None:
    chunk, pos, edges, directed = case
    ids = data.draw(object_id_arrays(len(pos)))
    store = MemoryStore()
    write(store, pos, edges, directed=directed, chunk_shape=chunk, vertex_object_ids=ids)
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    dense = np.argsort(np.argsort(first))[inverse]  # objects numbered by first appearance
    full = read_graph(store)
    assert full.attributes["vid"].tolist() == np.argsort(dense, kind="stable").tolist()
    np.testing.assert_array_equal(full.vertex_object_ids, ids[full.attributes["vid"]])
    assert result_edges(full) == edge_set(edges, directed)
    assert_edge_attributes_aligned(full, edges)
    lo, hi = data.draw(bboxes(chunk))
    ins = inside(pos, lo, hi)
    bound = read_graph(store, bbox=(lo, hi), include_boundary_edges=True)
    touching = {e for e in edge_set(edges, directed) if ins[list(e)].any()}
    verts = set(np.flatnonzero(ins).tolist()) | {v for e in touching for v in e}
    assert sorted(bound.attributes["vid"].tolist()) == sorted(verts)
    assert result_edges(bound) == touching
    one = data.draw(st.sampled_from(sorted(set(ids.tolist()))))
    got = read_graph(store, object_ids=[one])
    assert got.attributes["vid"].tolist() == np.flatnonzero(ids == one).tolist()
    assert result_edges(got) == {
        e for e in edge_set(edges, directed) if (ids[list(e)] == one).all()
    }


def test_pyramid_level_reads() -> None:
    rng = np.random.default_rng(2)
    pos = rng.uniform(0, 8, (200, 2))
    edges = np.unique(np.sort(rng.integers(0, 200, (300, 2)), axis=1), axis=0)
    edges = edges[edges[:, 0] != edges[:, 1]]
    store = MemoryStore()
    write_graph(store, pos, edges, chunk_shape=(4, 4), bin_shape=(1, 1))
    zv.build_pyramid(store, [(2, 2)])
    g = read_graph(store, level=1)
    assert 0 < g.n_vertices < 200
    assert (g.edges[:, 0] != g.edges[:, 1]).all()
    assert g.edges.max() < g.n_vertices


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 90), min_size=1, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    keep=st.floats(0.2, 1.0),
)
def test_row_index_equals_a_scatter(lengths: list[int], seed: int, keep: float) -> None:
    """Both ways of building the row map (sort the refs / scatter the rows) agree."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    size = int(counts.sum())
    order = rng.permutation(len(counts))
    if keep < 0.9:  # a partial read: some refs are not returned
        order = order[: max(1, int(keep * len(order)))]
    starts, counts = starts[order], counts[order]
    where = ObjectRanges(
        np.zeros(1, dtype=np.int64),
        np.array([0, counts.sum()], dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        RowRanges(starts, counts),
    )
    expected = np.full(size, -1, dtype=np.int64)
    rows = np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts, strict=True)])
    expected[rows] = np.arange(len(rows))
    np.testing.assert_array_equal(row_index(where, size), expected)
    np.testing.assert_array_equal(row_index(where.expand(), size), expected)


# -- input order (docs/spec.md §8.8) --------------------------------------------------------


def _interleaved_graph(seed: int, n: int = 300) -> tuple[AnyArray, AnyArray]:
    """Random positions and a simple edge list whose components interleave in the input."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 40, (n, 3))
    pairs = rng.integers(0, n, (3 * n, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    _, first = np.unique(np.sort(pairs, axis=1), axis=0, return_index=True)
    return pos, pairs[np.sort(first)][: n // 2]


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_graph_in_input_order(directed: bool, seed: int) -> None:
    pos, edges = _interleaved_graph(seed)
    weight = np.arange(len(edges), dtype=np.float32) * 0.5
    store = MemoryStore()
    write_graph(
        store,
        pos,
        edges,
        directed=directed,
        attributes={"vid": np.arange(len(pos))},
        edge_attributes={"w": weight},
        chunk_shape=(10, 10, 10),
        keep_order=True,
    )
    stored = read_graph(store)
    assert not np.array_equal(stored.positions, pos)  # storage order differs here
    assert set(stored.attributes) == {"vid"}
    assert set(stored.edge_attributes) == {"w"}
    back = read_graph(store, order="input")
    assert np.array_equal(back.positions, pos)
    assert np.array_equal(back.attributes["vid"], np.arange(len(pos)))
    assert np.array_equal(back.edges, edges if directed else np.sort(edges, axis=1))
    assert np.array_equal(back.edge_attributes["w"], weight)
    assert set(back.attributes) == {"vid"}
    assert set(back.edge_attributes) == {"w"}
    # box read: the selected vertices in input order, edges between them in input order
    lo, hi = np.array([0, 0, 0]), np.array([20, 40, 40])
    inside = np.flatnonzero(np.all((pos >= lo) & (pos < hi), axis=1))
    boxed = read_graph(store, bbox=(lo, hi), order="input")
    assert np.array_equal(boxed.positions, pos[inside])
    rank = np.full(len(pos), -1)
    rank[inside] = np.arange(len(inside))
    kept = edges[(rank[edges] >= 0).all(axis=1)]
    expect = rank[kept] if directed else np.sort(rank[kept], axis=1)
    assert np.array_equal(boxed.edges, expect)


def test_graph_input_order_keeps_object_attributes_aligned() -> None:
    pos = np.array([[0.0, 0], [50, 50], [1, 1], [51, 51], [2, 2]])
    ids = np.array([9, 4, 9, 4, 9])
    store = MemoryStore()
    write_graph(
        store,
        pos,
        [[4, 0], [1, 3], [2, 0]],
        vertex_object_ids=ids,
        object_attributes={"label": np.array([40, 90])},  # ascending id order: 4, 9
        chunk_shape=(10, 10),
        keep_order=True,
    )
    g = read_graph(store, order="input")
    assert np.array_equal(g.vertex_object_ids, ids)
    assert g.object_ids.tolist() == [9, 4]
    assert g.object_attributes["label"].tolist() == [90, 40]
    assert g.edges.tolist() == [[0, 4], [1, 3], [0, 2]]
    one = read_graph(store, object_ids=[9], order="input")  # rows 0, 2, 4 of the input
    assert np.array_equal(one.positions, pos[[0, 2, 4]])
    assert one.edges.tolist() == [[0, 2], [0, 1]]
    assert one.object_attributes["label"].tolist() == [90]


def test_graph_input_order_needs_the_index_and_reserves_the_name() -> None:
    pos, edges = _interleaved_graph(3, 20)
    store = MemoryStore()
    write_graph(store, pos, edges, chunk_shape=(10, 10, 10))
    level = zarr.open_group(store, mode="r")["0"]
    assert "attributes" not in level
    assert "link_attributes" not in level
    with pytest.raises(InvalidInputError, match="no input order"):
        read_graph(store, order="input")
    with pytest.raises(InvalidInputError, match="order must be one of"):
        read_graph(store, order="file")
    for kw in (
        {"attributes": {"_input_index": np.arange(20)}},
        {"edge_attributes": {"_input_index": np.arange(len(edges))}},
    ):
        with pytest.raises(InvalidInputError, match="reserved"):
            write_graph(MemoryStore(), pos, edges, chunk_shape=(10, 10, 10), keep_order=True, **kw)
