"""Edge-list CSV files with node tables <-> graph stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pa_csv = pytest.importorskip("pyarrow.csv")

import zarr
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats.registry import convert, export, format_for

EDGES = """source,target,weight,kind,count,ok
n3,n1,0.5,axon,3,true
n0,n2,1.25,dendrite,,false
n5,n4,2.0,axon,7,true
n2,n3,0.125,soma,1,true
"""
NODES = """id,x,y,z,label,score
n0,0.5,1.0,2.0,a,1
n1,10.0,1.5,2.5,b,2
n2,3.25,8.0,1.0,a,3
n3,7.0,7.0,7.0,c,4
n4,1.0,9.5,3.0,b,5
n5,4.0,4.0,9.0,a,6
n6,2.0,2.0,2.0,lonely,7
"""
ENDPOINTS = """source,target,source_x,source_y,target_x,target_y,w
10,20,0.0,0.0,1.0,0.0,0.5
20,30,1.0,0.0,1.0,1.0,1.5
30,10,1.0,1.0,0.0,0.0,2.5
"""


def _files(d: Path, **texts: str) -> None:
    for name, text in texts.items():
        (d / name.replace("_", ".")).write_text(text)


def test_edge_list_with_node_table_round_trips_byte_for_byte(tmp_path: Path) -> None:
    _files(tmp_path, g_csv=EDGES, g_nodes_csv=NODES)
    assert format_for(tmp_path / "g.csv").name == "edgelist"
    store = str(tmp_path / "g.zarrvectors")
    report = convert(tmp_path / "g.csv", store)  # g.nodes.csv is found beside it
    assert report.summary.vertex_count == 7
    g = zv.read_graph(store)
    assert g.directed
    assert len(g.edges) == 4
    out = tmp_path / "out"
    out.mkdir()
    export(store, out / "g.csv")
    for name in ("g.csv", "g.nodes.csv"):
        assert (out / name).read_text() == (tmp_path / name).read_text(), name
        a, b = pa_csv.read_csv(tmp_path / name), pa_csv.read_csv(out / name)
        assert a.equals(b)


def test_edge_list_with_endpoint_coordinates(tmp_path: Path) -> None:
    _files(tmp_path, e_csv=ENDPOINTS)
    store = str(tmp_path / "e.zarrvectors")
    convert(tmp_path / "e.csv", store)
    g = zv.read_graph(store)
    assert len(g.positions) == 3
    export(store, tmp_path / "back.csv")
    assert (tmp_path / "back.csv").read_text() == ENDPOINTS
    assert not (tmp_path / "back.nodes.csv").exists()


def test_brute_force_structure(tmp_path: Path) -> None:
    """Every edge joins the nodes its ids name, at the node table's coordinates."""
    _files(tmp_path, g_csv=EDGES, other_csv=NODES)
    store = str(tmp_path / "g.zarrvectors")
    convert(tmp_path / "g.csv", store, nodes=tmp_path / "other.csv")
    nodes = pa_csv.read_csv(tmp_path / "other.csv").to_pydict()
    where = {
        i: (x, y, z)
        for i, x, y, z in zip(nodes["id"], nodes["x"], nodes["y"], nodes["z"], strict=True)
    }
    edges = pa_csv.read_csv(tmp_path / "g.csv").to_pydict()
    g = zv.read_graph(store)
    ids = g.attributes["node_id"]
    got = sorted(
        (str(ids[a]), str(ids[b]), float(w))
        for (a, b), w in zip(g.edges, g.edge_attributes["weight"], strict=True)
    )
    assert got == sorted(zip(edges["source"], edges["target"], edges["weight"], strict=True))
    for i, name in enumerate(ids):
        assert tuple(g.positions[i]) == where[str(name)]


def test_graph_store_without_header_exports(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    pos = rng.uniform(0, 10, (8, 3))
    edges = np.array([[0, 1], [1, 2], [5, 6], [6, 7], [7, 5]])
    store = str(tmp_path / "plain.zarrvectors")
    zv.write_graph(store, pos, edges, chunk_shape=(5, 5, 5), edge_attributes={"w": np.arange(5.0)})
    export(store, tmp_path / "p.csv")
    again = str(tmp_path / "again.zarrvectors")
    convert(tmp_path / "p.csv", again)
    a, b = zv.read_graph(store), zv.read_graph(again)
    np.testing.assert_array_equal(np.sort(b.positions, axis=0), np.sort(a.positions, axis=0))
    assert len(b.edges) == len(a.edges)
    np.testing.assert_array_equal(np.sort(b.edge_attributes["w"]), np.arange(5.0))


def test_point_csv_is_still_a_point_table(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text("x,y,z,source\n1,2,3,a\n4,5,6,b\n")
    assert format_for(tmp_path / "p.csv").name == "csv"
    pts = str(tmp_path / "p.zarrvectors")
    zv.write_points(pts, np.zeros((2, 3)), chunk_shape=(1, 1, 1))
    export(pts, tmp_path / "q.csv")  # point stores still go to point tables
    assert pa_csv.read_csv(tmp_path / "q.csv").num_rows == 2


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ("id,x,y\nn0,0,0\nn0,1,1\n", "not unique"),
        ("id,x,y\nn0,0,0\nn1,1,1\n", "'n3' is not in the node table"),
        ("id,x\nn0,0\n", "x and y"),
        ("name,x,y\nn0,0,0\n", "no 'id' column"),
    ],
)
def test_bad_node_tables_are_refused(tmp_path: Path, nodes: str, message: str) -> None:
    _files(tmp_path, g_csv=EDGES, g_nodes_csv=nodes)
    with pytest.raises(InvalidInputError, match=message):
        convert(tmp_path / "g.csv", str(tmp_path / "g.zarrvectors"))
    assert not (tmp_path / "g.zarrvectors").exists()


def test_no_coordinates_is_refused(tmp_path: Path) -> None:
    (tmp_path / "g.csv").write_text("source,target\n1,2\n")
    with pytest.raises(InvalidInputError, match="node table"):
        convert(tmp_path / "g.csv", str(tmp_path / "g.zarrvectors"))


def test_cli_nodes_options(tmp_path: Path) -> None:
    _files(tmp_path, g_csv=EDGES, n_csv=NODES)
    store = tmp_path / "g.zarrvectors"
    run = CliRunner().invoke(
        app, ["convert", str(tmp_path / "g.csv"), str(store), "--nodes", str(tmp_path / "n.csv")]
    )
    assert run.exit_code == 0, run.output
    out = tmp_path / "o.csv"
    nodes = tmp_path / "o_nodes.csv"
    run = CliRunner().invoke(app, ["export", str(store), str(out), "--nodes", str(nodes)])
    assert run.exit_code == 0, run.output
    assert nodes.read_text() == NODES
    assert out.read_text() == EDGES
    run = CliRunner().invoke(
        app, ["convert", str(tmp_path / "n.csv"), str(tmp_path / "x.zarrvectors"), "--nodes", "n"]
    )
    assert run.exit_code == 2


def test_self_loop_is_refused_by_name(tmp_path: Path) -> None:
    _files(tmp_path, g_csv=EDGES + "n0,n0,0.0,loop,2,false\n", g_nodes_csv=NODES)
    with pytest.raises(InvalidInputError, match="self-loop"):
        convert(tmp_path / "g.csv", str(tmp_path / "g.zarrvectors"))


def test_no_keep_order_exports_edges_in_storage_order(tmp_path: Path) -> None:
    _files(tmp_path, g_csv=EDGES, g_nodes_csv=NODES)
    store = str(tmp_path / "g.zarrvectors")
    convert(tmp_path / "g.csv", store, keep_order=False)
    assert "_input_index" not in zarr.open_group(store, mode="r")["0/attributes"]
    out = tmp_path / "out"
    out.mkdir()
    export(store, out / "g.csv")
    lines = EDGES.splitlines()
    header, rows = lines[0], lines[1:]
    # storage order: edges sorted by (source, target) node position
    expect = [rows[1], rows[3], rows[0], rows[2]]
    assert (out / "g.csv").read_text().splitlines() == [header, *expect]
    # the nodes' components are contiguous in the file: storage order is file order there
    assert (out / "g.nodes.csv").read_text() == NODES
