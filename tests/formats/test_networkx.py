"""networkx <-> Graph <-> store: nodes, edges and attributes survive both directions."""

from __future__ import annotations

import networkx as nx  # type: ignore[import-untyped, unused-ignore]
import numpy as np
import pytest
from zarr.storage import MemoryStore

from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.formats.networkx import (
    from_networkx,
    networkx_to_store,
    store_to_networkx,
    to_networkx,
)
from zarr_vectors.types.graphs import Graph, read_graph, write_graph


def sample_graph(directed: bool = False) -> nx.Graph:
    G = nx.DiGraph() if directed else nx.Graph()
    rng = np.random.default_rng(0)
    for i in range(12):
        G.add_node(i, pos=tuple(rng.uniform(0, 8, 3).tolist()), mass=float(i), tag=f"t{i % 3}")
    for u, v in [(0, 1), (1, 2), (2, 0), (3, 4), (5, 6), (6, 7), (9, 8)]:
        G.add_edge(u, v, weight=u + v / 10, vec=(u, v))
    return G


def assert_same(a: nx.Graph, b: nx.Graph) -> None:
    assert a.is_directed() == b.is_directed()
    assert dict(a.nodes(data=True)).keys() == dict(b.nodes(data=True)).keys()
    for n, d in a.nodes(data=True):
        for k, v in d.items():
            assert b.nodes[n][k] == pytest.approx(v) if k == "pos" else b.nodes[n][k] == v, k
    assert {(u, v) for u, v in a.edges} == {(u, v) for u, v in b.edges} or not a.is_directed()
    assert nx.utils.edges_equal(a.edges(data=True), b.edges(data=True))


@pytest.mark.parametrize("directed", [False, True])
def test_round_trip_through_store(directed: bool) -> None:
    G = sample_graph(directed)
    store = MemoryStore()
    summary = networkx_to_store(G, store, chunk_shape=(2, 2, 2))
    assert summary.object_count == 6  # {0,1,2} {3,4} {5,6,7} {8,9} {10} {11}
    H = store_to_networkx(store)
    assert isinstance(H, nx.DiGraph) == directed
    for n, d in G.nodes(data=True):
        assert H.nodes[n]["pos"] == d["pos"]
        assert H.nodes[n]["mass"] == d["mass"]
        assert H.nodes[n]["tag"] == d["tag"]
    assert (
        sorted(H.edges) == sorted(G.edges)
        if directed
        else {frozenset(e) for e in H.edges} == {frozenset(e) for e in G.edges}
    )
    for u, v, d in G.edges(data=True):
        assert H.edges[u, v]["weight"] == d["weight"]
        assert H.edges[u, v]["vec"] == d["vec"]
    assert H.nodes[11]["object_id"] == 5


def test_graph_result_conversion() -> None:
    g = Graph(
        np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]),
        np.array([[0, 1]]),
        np.array([4, 4, 9]),
        attributes={"node_id": np.array(["a", "b", "c"]), "w": np.array([[1, 2], [3, 4], [5, 6]])},
        edge_attributes={"len": np.array([1.5])},
    )
    G = to_networkx(g, position_attr="xy")
    assert list(G.nodes) == ["a", "b", "c"]
    assert G.nodes["b"] == {"w": (3, 4), "object_id": 4, "xy": (1.0, 1.0)}
    assert G.edges["a", "b"] == {"len": 1.5}
    back = from_networkx(G, position_attr="xy", object_attr="object_id")
    np.testing.assert_array_equal(back.positions, g.positions)
    assert back.vertex_object_ids.tolist() == [4, 4, 9]
    assert back.attributes["node_id"].tolist() == ["a", "b", "c"]
    P = nx.path_graph(2)
    nx.set_node_attributes(P, (0.0, 1.0), "pos")
    assert from_networkx(P).attributes["node_id"].tolist() == [0, 1]
    np.testing.assert_array_equal(back.attributes["w"], g.attributes["w"])


def test_string_nodes_user_objects_and_store() -> None:
    G = nx.Graph()
    G.add_node("soma", pos=(0.0, 0.0), cell=3)
    G.add_node("tip", pos=(5.0, 0.0), cell=3)
    G.add_node("other", pos=(9.0, 9.0), cell=8)
    G.add_edge("tip", "soma", w=1.0)
    store = MemoryStore()
    networkx_to_store(G, store, object_attr="cell", chunk_shape=(2, 2))
    g = read_graph(store, object_ids=[8])
    assert g.attributes["node_id"].tolist() == ["other"]
    assert g.vertex_object_ids.tolist() == [8]
    H = store_to_networkx(store)
    assert set(H.nodes) == {"soma", "tip", "other"}
    assert H.edges["soma", "tip"]["w"] == 1.0
    assert H.nodes["tip"]["object_id"] == 3


def test_bbox_subgraph_to_networkx() -> None:
    G = sample_graph()
    store = MemoryStore()
    networkx_to_store(G, store, chunk_shape=(2, 2, 2))
    H = store_to_networkx(store, bbox=([0, 0, 0], [4, 8, 8]), include_boundary_edges=True)
    inside = {n for n, p in G.nodes(data="pos") if p[0] < 4}
    assert set(H.nodes) >= inside
    assert all(u in inside or v in inside for u, v in H.edges)


def test_errors() -> None:
    M = nx.MultiGraph([(0, 1), (0, 1)])
    with pytest.raises(InvalidInputError, match="multigraph"):
        from_networkx(M)
    G = nx.Graph([(0, 1)])
    G.nodes[0]["pos"] = (0.0, 0.0)
    with pytest.raises(InvalidInputError, match="node 1 has no 'pos'"):
        from_networkx(G)
    G.nodes[1]["pos"] = (1.0, 1.0)
    G.nodes[1]["extra"] = 3
    with pytest.raises(InvalidInputError, match="node 0 has no 'extra'"):
        from_networkx(G)
    del G.nodes[1]["extra"]
    G.add_edge(0, 0)
    g = from_networkx(G)
    with pytest.raises(GeometryError, match="self-loop"):
        write_graph(MemoryStore(), g.positions, g.edges, chunk_shape=(1, 1))
    mixed = nx.Graph()
    mixed.add_node(1, pos=(0.0,))
    mixed.add_node("a", pos=(1.0,))
    with pytest.raises(InvalidInputError, match="all integers or all strings"):
        from_networkx(mixed)


def test_empty_graph() -> None:
    g = from_networkx(nx.Graph())
    assert g.n_vertices == 0
    assert g.n_edges == 0
    assert to_networkx(g).number_of_nodes() == 0
