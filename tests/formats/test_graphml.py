"""GraphML files written by networkx survive import -> graph store -> export."""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped, unused-ignore]
import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats.graphml import graphml_graph, open_graphml
from zarr_vectors.formats.registry import convert, export
from zarr_vectors.types.graphs import read_graph


def sample(directed: bool = True, mode: str = "axes") -> nx.Graph:
    rng = np.random.default_rng(0)
    G = nx.DiGraph() if directed else nx.Graph()
    for i in range(30):
        x, y, z = (float(v) for v in rng.uniform(0, 40, 3))
        data = {"x": x, "y": y, "z": z} if mode == "axes" else {"pos": f"{x!r} {y!r} {z!r}"}
        G.add_node(f"n{i}", label=f"type{i % 3}", order=i, **data)
    for i in range(29):
        if i % 10 != 9:
            G.add_edge(f"n{i}", f"n{i + 1}", weight=i / 7, kind="axon" if i % 2 else "dendrite")
    G.graph["name"] = "demo"
    return G


def assert_same(a: nx.Graph, b: nx.Graph) -> None:
    assert a.is_directed() == b.is_directed()
    assert set(a.nodes) == set(b.nodes)
    assert set(a.edges) == set(b.edges)
    for n, d in a.nodes(data=True):
        assert b.nodes[n] == d, n
    for u, v, d in a.edges(data=True):
        assert b.edges[u, v] == d, (u, v)


@pytest.mark.parametrize("directed", [True, False])
def test_round_trip(tmp_path: Path, directed: bool) -> None:
    src, out = tmp_path / "g.graphml", tmp_path / "back.graphml"
    nx.write_graphml(sample(directed), src)
    store = str(tmp_path / "g.zarrvectors")
    summary = convert(src, store, chunk_shape=(10, 10, 10)).summary
    assert summary.vertex_count == 30
    assert summary.object_count == 3  # connected components
    g = read_graph(store)
    assert g.directed is directed
    assert set(g.edge_attributes) == {"kind", "weight"}
    export(store, out)
    a, b = nx.read_graphml(src), nx.read_graphml(out)
    assert_same(a, b)
    assert b.graph["name"] == "demo"


def test_pos_attribute_round_trip(tmp_path: Path) -> None:
    src, out = tmp_path / "g.graphml", tmp_path / "back.graphml"
    nx.write_graphml(sample(mode="pos"), src)
    store = str(tmp_path / "g.zarrvectors")
    convert(src, store, chunk_shape=(10, 10, 10))
    assert zv.open_store(store).attrs["custom_metadata"]["graphml"]["positions"] == "pos"
    export(store, out)
    assert_same(nx.read_graphml(src), nx.read_graphml(out))


def test_missing_attributes_are_filled(tmp_path: Path) -> None:
    G = nx.Graph()
    G.add_node("a", x=0.0, y=0.0, mass=2.0, tag="s")
    G.add_node("b", x=1.0, y=1.0)
    G.add_edge("a", "b")
    nx.write_graphml(G, tmp_path / "m.graphml")
    with pytest.warns(UserWarning, match="'mass' on 1 nodes with nan; 'tag' on 1 nodes with ''"):
        graph, settings = graphml_graph(tmp_path / "m.graphml")
    assert settings["axes"] == ["x", "y"]
    assert graph.positions.shape == (2, 2)
    mass = graph.attributes["mass"]
    assert mass[0] == 2.0
    assert math.isnan(mass[1])
    assert graph.attributes["tag"].tolist() == ["s", ""]


def test_nodes_without_positions_are_rejected(tmp_path: Path) -> None:
    nx.write_graphml(nx.path_graph(3), tmp_path / "p.graphml")
    with pytest.raises(InvalidInputError, match="x and y"):
        open_graphml(tmp_path / "p.graphml")


@pytest.mark.parametrize("keep_order", [True, False])
def test_node_and_edge_order_round_trip(tmp_path: Path, keep_order: bool) -> None:
    """Interleaved components come back in file order (keep_order), else in global order."""
    rng = np.random.default_rng(4)
    G = nx.DiGraph()
    for i in rng.permutation(40).tolist():  # components (i % 4) interleave in the file
        x, y = (float(v) for v in rng.uniform(0, 40, 2))
        G.add_node(f"n{i}", x=x, y=y)
    pairs = [(a, b) for a in range(40) for b in range(40) if a != b and a % 4 == b % 4]
    for k in rng.choice(len(pairs), 60, replace=False).tolist():
        a, b = pairs[k]
        G.add_edge(f"n{a}", f"n{b}", w=float(k))
    src, out = tmp_path / "g.graphml", tmp_path / "back.graphml"
    nx.write_graphml(G, src)
    store = str(tmp_path / "g.zarrvectors")
    convert(src, store, chunk_shape=(10, 10), keep_order=keep_order)
    export(store, out)
    a, b = nx.read_graphml(src), nx.read_graphml(out)
    assert_same(a, b)
    if keep_order:
        assert list(b.nodes) == list(a.nodes)
        assert list(b.edges) == list(a.edges)
        assert out.read_bytes() == src.read_bytes()
    else:
        assert list(b.nodes) != list(a.nodes)  # objects one after the other
