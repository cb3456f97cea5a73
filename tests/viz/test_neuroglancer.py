"""Neuroglancer export, read back by the independent decoder in ``ngdecode`` (format docs)."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from ngdecode import (
    decode_multiple as ng_multiple,
)
from ngdecode import (
    decode_single as ng_single,
)
from ngdecode import (
    open_annotations,
    read_legacy_meshes,
    read_segment_properties,
    read_skeletons,
    spatial_cells,
)
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.types.meshes import write_meshes
from zarr_vectors.viz import (
    ExportKind,
    export_neuroglancer,
    neuroglancer_url,
    serve,
    viewer_state,
)

UM_TO_NM = 1000.0


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).astype(float)


def _by_id(root: Path, src) -> dict:
    return {int(p.name): ng_single(src, p.read_bytes()) for p in (root / "by_id").iterdir()}


def _segment_hits_cell(geometry: tuple[float, ...], lo: np.ndarray, hi: np.ndarray) -> bool:
    d = len(lo)
    a, b = np.asarray(geometry[:d]), np.asarray(geometry[d:])
    t = np.linspace(0.0, 1.0, 2001)[:, None]
    samples = a + t * (b - a)
    tol = 1e-3 * float(np.max(hi - lo))
    return bool(np.any(np.all((samples >= lo - tol) & (samples <= hi + tol), axis=1)))


# -- points -------------------------------------------------------------------------------------


def test_points_round_trip(stores: dict[str, str], tmp_path: Path):
    store = stores["point_cloud"]
    pts = zv.read_points(store)
    out = export_neuroglancer(store, tmp_path, limit=40)
    assert out.kind is ExportKind.ANNOTATIONS
    assert out.count == len(pts)
    root = out.source_path
    src = open_annotations(root)
    info = src.info
    assert info["annotation_type"] == "POINT"
    assert info["dimensions"] == {"x": [1e-6, "m"], "y": [1e-6, "m"], "z": [1e-6, "m"]}
    types = {p["id"]: p["type"] for p in info["properties"]}
    assert types == {"intensity": "float32", "label": "uint8", "count": "int32"}
    labels = next(p for p in info["properties"] if p["id"] == "label")["enum_labels"]

    by_id = _by_id(root, src)
    assert sorted(by_id) == list(range(len(pts)))
    for i, ann in by_id.items():
        np.testing.assert_array_equal(ann.geometry, _f32(pts.positions[i]))
        assert ann.properties["intensity"] == pytest.approx(pts.attributes["intensity"][i], 1e-6)
        assert labels[ann.properties["label"]] == pts.attributes["label"][i]
        assert ann.properties["count"] == pts.attributes["count"][i]
        assert ann.related == [[int(pts.vertex_object_ids[i])]]

    # spatial index: every point exactly once, inside its cell; more than one level
    cells = spatial_cells(root, src)
    assert len(info["spatial"]) > 1
    seen = Counter(i for c in cells for i in c.annotations)
    assert set(seen) == set(range(len(pts)))
    assert set(seen.values()) == {1}
    for c in cells:
        for i, ann in c.annotations.items():
            assert np.all(np.asarray(ann.geometry) >= c.lower - 1e-9)
            assert np.all(np.asarray(ann.geometry) <= c.upper + 1e-9)
            assert ann.properties == by_id[i].properties
    for level in info["spatial"]:
        extent = np.asarray(level["grid_shape"]) * np.asarray(level["chunk_size"])
        np.testing.assert_allclose(
            extent, np.subtract(info["upper_bound"], info["lower_bound"]), rtol=1e-12
        )
        assert level["limit"] == 40

    # related-object index
    assert info["relationships"] == [{"id": "object", "key": "by_object"}]
    for path in (root / "by_object").iterdir():
        members = ng_multiple(src, path.read_bytes())
        expected = np.flatnonzero(pts.vertex_object_ids == int(path.name))
        assert sorted(members) == expected.tolist()


def test_points_without_objects_have_no_relationship(make_store, tmp_path: Path):
    store = make_store(zv.write_points, np.array([[0.5, 0.5], [3.0, 1.0]]), chunk_shape=(2, 2))
    out = export_neuroglancer(store, tmp_path)
    src = open_annotations(out.source_path)
    assert src.info["relationships"] == []
    assert src.info["dimensions"]["x"] == [1.0, ""]
    assert not (out.source_path / "by_object").exists()
    (cell,) = spatial_cells(out.source_path, src)
    assert sorted(cell.annotations) == [0, 1]


# -- line segments ------------------------------------------------------------------------------


def _segments(positions: np.ndarray, offsets: np.ndarray) -> list[tuple[float, ...]]:
    return [
        tuple(_f32(np.concatenate([positions[k], positions[k + 1]])))
        for a, b in itertools.pairwise(offsets)
        for k in range(a, b - 1)
    ]


@pytest.mark.parametrize("geometry", ["polyline", "streamline"])
def test_polyline_segments_round_trip(stores: dict[str, str], tmp_path: Path, geometry: str):
    store = stores[geometry]
    pl = zv.open(store).read()
    out = export_neuroglancer(store, tmp_path, limit=25)
    root = out.source_path
    src = open_annotations(root)
    assert src.info["annotation_type"] == "LINE"
    by_id = _by_id(root, src)
    expected = _segments(pl.positions, pl.offsets)
    assert out.count == len(expected) == len(by_id)
    assert Counter(a.geometry for a in by_id.values()) == Counter(expected)
    # the owning object of each segment, via the relationship
    owners = {}
    for obj, a, b in zip(pl.object_ids, pl.offsets[:-1], pl.offsets[1:], strict=True):
        for k in range(a, b - 1):
            owners[tuple(_f32(np.concatenate([pl.positions[k], pl.positions[k + 1]])))] = obj
    for ann in by_id.values():
        assert ann.related == [[int(owners[ann.geometry])]]
    cells = spatial_cells(root, src)
    assert {i for c in cells for i in c.annotations} == set(by_id)
    for c in cells:
        for ann in c.annotations.values():
            assert _segment_hits_cell(ann.geometry, c.lower, c.upper)


def test_polyline_properties(stores: dict[str, str], tmp_path: Path):
    pl = zv.read_polylines(stores["polyline"])
    out = export_neuroglancer(stores["polyline"], tmp_path)
    src = open_annotations(out.source_path)
    assert {p["id"] for p in src.info["properties"]} == {"speed", "weight"}
    by_geometry = {a.geometry: a for a in _by_id(out.source_path, src).values()}
    for i in range(len(pl)):
        a, b = pl.offsets[i], pl.offsets[i + 1]
        speed = pl.attributes["speed"]
        for k in range(a, b - 1):
            key = tuple(_f32(np.concatenate([pl.positions[k], pl.positions[k + 1]])))
            ann = by_geometry[key]
            assert ann.properties["weight"] == pl.object_attributes["weight"][i]
            assert ann.properties["speed"] == pytest.approx((speed[k] + speed[k + 1]) / 2, 1e-6)


def test_lines_round_trip(stores: dict[str, str], tmp_path: Path):
    lines = zv.read_lines(stores["line"])
    out = export_neuroglancer(stores["line"], tmp_path, limit=5)
    src = open_annotations(out.source_path)
    by_id = _by_id(out.source_path, src)
    expected = [tuple(_f32(e.reshape(-1))) for e in lines.endpoints]
    assert Counter(a.geometry for a in by_id.values()) == Counter(expected)
    cells = spatial_cells(out.source_path, src)
    assert len(src.info["spatial"]) > 1
    assert {i for c in cells for i in c.annotations} == set(by_id)


# -- skeletons ----------------------------------------------------------------------------------


def _edge_set(positions: np.ndarray, edges: np.ndarray) -> Counter:
    positions = np.round(positions, 2)  # nanometres: compare float32 values up to rounding
    return Counter(
        tuple(sorted((tuple(positions[a]), tuple(positions[b])))) for a, b in edges.tolist()
    )


def test_skeletons_round_trip(stores: dict[str, str], tmp_path: Path):
    sk = zv.open(stores["skeleton"]).read()
    out = export_neuroglancer(stores["skeleton"], tmp_path)
    assert out.kind is ExportKind.SKELETONS
    assert out.segment_ids == tuple(int(i) + 1 for i in sk.object_ids) == (11, 21)
    info, decoded = read_skeletons(out.source_path)
    assert info["vertex_attributes"] == [
        {"id": "radius", "data_type": "float32", "num_components": 1}
    ]
    assert sorted(decoded) == [11, 21]
    for i in range(len(sk)):
        one = sk[i]
        got = decoded[int(one.object_id) + 1]
        expected = _f32(one.positions) * UM_TO_NM
        np.testing.assert_allclose(got.positions, expected, rtol=1e-6)
        assert _edge_set(got.positions, got.edges) == _edge_set(expected, one.edges)
        np.testing.assert_allclose(got.attributes["radius"][:, 0], one.attributes["radius"])
    props = read_segment_properties(out.source_path / info["segment_properties"])
    assert props["ids"] == ["11", "21"]
    assert props["properties"][0] == {"id": "label", "type": "label", "values": ["10", "20"]}


def test_graph_exports_one_skeleton_per_object(stores: dict[str, str], tmp_path: Path):
    g = zv.open(stores["graph"]).read()
    out = export_neuroglancer(stores["graph"], tmp_path)
    info, decoded = read_skeletons(out.source_path)
    assert {a["id"]: a["data_type"] for a in info["vertex_attributes"]} == {"degree": "int32"}
    assert len(decoded) == len(np.unique(g.vertex_object_ids)) == 2
    all_pos = np.concatenate([d.positions for d in decoded.values()])
    np.testing.assert_allclose(
        np.sort(all_pos, axis=0), np.sort(_f32(g.positions) * UM_TO_NM, axis=0), rtol=1e-6
    )
    got_edges = sum((_edge_set(d.positions, d.edges) for d in decoded.values()), Counter())
    assert got_edges == _edge_set(_f32(g.positions) * UM_TO_NM, g.edges)


# -- meshes -------------------------------------------------------------------------------------


def _face_set(vertices: np.ndarray, faces: np.ndarray) -> Counter:
    out: Counter = Counter()
    vertices = np.round(vertices, 2)
    for f in faces.tolist():
        tri = [tuple(vertices[k]) for k in f]
        r = tri.index(min(tri))  # rotate, keeping the winding
        out[tuple(tri[r:] + tri[:r])] += 1
    return out


def test_meshes_round_trip(stores: dict[str, str], tmp_path: Path):
    m = zv.open(stores["mesh"]).read()
    out = export_neuroglancer(stores["mesh"], tmp_path)
    assert out.kind is ExportKind.MESHES
    assert out.segment_ids == (4, 9)
    decoded = read_legacy_meshes(out.source_path)
    assert sorted(decoded) == [4, 9]
    for i in range(len(m)):
        one = m[i]
        verts, faces = decoded[int(one.object_id) + 1]
        expected = _f32(one.vertices * UM_TO_NM)
        np.testing.assert_allclose(verts, expected, rtol=1e-6)
        assert _face_set(verts, faces) == _face_set(expected, one.faces)
    props = read_segment_properties(out.source_path / "segment_properties")
    assert props["ids"] == ["4", "9"]


def test_2d_mesh_and_4d_annotations(make_store, tmp_path: Path):
    store = make_store(
        write_meshes, np.array([[0.0, 0], [1, 0], [0, 1]]), [[0, 1, 2]], chunk_shape=(2, 2)
    )
    out = export_neuroglancer(store, tmp_path / "a")
    ((verts, _),) = read_legacy_meshes(out.source_path).values()
    np.testing.assert_array_equal(verts[:, 2], 0)
    path4 = np.array([[0.0, 0, 0, 0], [1.5, 0.5, 0.5, 0.5]])
    store4 = make_store(zv.write_polylines, [path4], chunk_shape=(1,) * 4)
    out4 = export_neuroglancer(store4, tmp_path / "b")  # annotations support any rank
    assert len(open_annotations(out4.source_path).info["dimensions"]) == 4


def test_bbox_and_level(stores: dict[str, str], tmp_path: Path):
    box = ([0, 0, 0], [10, 10, 10])
    out = export_neuroglancer(stores["point_cloud"], tmp_path / "a", bbox=box)
    assert out.count == len(zv.read_points(stores["point_cloud"], bbox=box))
    with pytest.raises(InvalidInputError, match="level 3"):
        export_neuroglancer(stores["point_cloud"], tmp_path / "b", level=3)


# -- state, URL, server, command ----------------------------------------------------------------


def test_viewer_state_points_at_served_source(stores: dict[str, str], tmp_path: Path):
    out = export_neuroglancer(stores["skeleton"], tmp_path)
    state = viewer_state(out, "http://127.0.0.1:8123/")
    (layer,) = state["layers"]
    assert layer["source"] == "precomputed://http://127.0.0.1:8123/skeletons"
    assert layer["type"] == "segmentation"
    assert layer["segments"] == ["11", "21"]
    assert state["dimensions"]["x"] == [1e-6, "m"]
    url = neuroglancer_url(state, "https://example.invalid/")
    assert url.startswith("https://example.invalid/#!")
    assert json.loads(urllib.parse.unquote(url.split("#!", 1)[1])) == state


def test_server_sends_cors(stores: dict[str, str], tmp_path: Path):
    out = export_neuroglancer(stores["point_cloud"], tmp_path)
    with serve(tmp_path) as server:
        assert server.host == "127.0.0.1"
        with urllib.request.urlopen(f"{server.url}/{out.source}/info") as r:
            assert r.headers["Access-Control-Allow-Origin"] == "*"
            assert json.load(r)["@type"] == "neuroglancer_annotations_v1"
        request = urllib.request.Request(f"{server.url}/{out.source}/info", method="OPTIONS")
        with urllib.request.urlopen(request) as r:
            assert r.status == 204
            assert r.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.slow
def test_view_command_serves_and_prints_url(stores: dict[str, str]):
    cmd = [sys.executable, "-m", "zarr_vectors.cli", "view", stores["mesh"], "--duration", "60"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = proc.stdout.readline().strip()
        assert first.startswith("serving 2 meshes at http://127.0.0.1:"), first
        assert url.startswith("https://neuroglancer-demo.appspot.com/#!")
        state = json.loads(urllib.parse.unquote(url.split("#!", 1)[1]))
        source = state["layers"][0]["source"]
        match = re.fullmatch(r"precomputed://(http://127\.0\.0\.1:\d+/meshes)", source)
        assert match, source
        with urllib.request.urlopen(match.group(1) + "/info") as r:
            assert json.load(r)["@type"] == "neuroglancer_legacy_mesh"
    finally:
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def test_view_command_bad_store(tmp_path: Path):
    start = time.monotonic()
    result = CliRunner().invoke(app, ["view", str(tmp_path / "missing"), "--duration", "0"])
    assert result.exit_code == 2
    assert time.monotonic() - start < 30
