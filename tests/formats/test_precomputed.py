"""Neuroglancer precomputed skeletons and legacy meshes: our own export read back."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")  # the exporter lives in zarr_vectors.viz
trimesh = pytest.importorskip("trimesh")

from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.formats.registry import convert, export, format_for


def _same_tree(a: Path, b: Path) -> None:
    cmp = filecmp.dircmp(a, b)
    assert not cmp.left_only
    assert not cmp.right_only
    files = [p.relative_to(a) for p in a.rglob("*") if p.is_file()]
    assert files
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


@pytest.fixture
def skeletons(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    trees = []
    for k in range(3):
        n = 40 + 7 * k
        parents = np.arange(-1, n - 1)
        parents[12] = 4  # a branch
        trees.append((np.cumsum(rng.normal(0, 1, (n, 3)), axis=0) + 15 * k, parents))
    store = tmp_path / "sk.zarrvectors"
    zv.write_skeletons(
        str(store),
        trees,
        object_ids=[5, 9, 100],
        radius=[rng.random(len(p)).astype("f4") for p, _ in trees],
        attributes={"compartment": [rng.integers(0, 4, len(p)).astype("u1") for p, _ in trees]},
        object_attributes={"kind": np.array(["a", "b", "a"]), "score": np.array([1.5, 2.5, 3.5])},
        chunk_shape=(30, 30, 30),
        axis_units="micrometer",
    )
    return store


def test_skeletons_round_trip(skeletons: Path, tmp_path: Path) -> None:
    first = tmp_path / "a.precomputed"
    export(str(skeletons), first)
    assert format_for(first).name == "precomputed"
    back = str(tmp_path / "back.zarrvectors")
    report = convert(first, back)
    assert report.summary.geometry_type.value == "skeleton"
    a, b = zv.read_skeletons(str(skeletons)), zv.read_skeletons(back)
    np.testing.assert_array_equal(b.object_ids, a.object_ids)
    np.testing.assert_array_equal(b.positions, a.positions.astype(np.float32))
    np.testing.assert_array_equal(b.parents, a.parents)
    np.testing.assert_array_equal(b.offsets, a.offsets)
    np.testing.assert_array_equal(b.radius, a.radius)
    np.testing.assert_array_equal(b.attributes["compartment"], a.attributes["compartment"])
    assert b.attributes["compartment"].dtype == np.uint8
    np.testing.assert_array_equal(b.object_attributes["kind"], a.object_attributes["kind"])
    np.testing.assert_array_equal(b.object_attributes["score"], a.object_attributes["score"])
    assert zv.open(back).metadata.axis_units in ("micrometer", ["micrometer"] * 3)
    second = tmp_path / "b.precomputed"
    export(back, second)
    _same_tree(first, second)


def test_meshes_round_trip(tmp_path: Path) -> None:
    ball = trimesh.creation.icosphere(subdivisions=2)
    box = trimesh.creation.box(extents=(3, 3, 3))
    store = str(tmp_path / "m.zarrvectors")
    zv.write_meshes(
        store,
        [(ball.vertices * 100, ball.faces), (box.vertices * 100 + 1000, box.faces)],
        object_ids=[3, 8],
        chunk_shape=(500, 500, 500),
        axis_units="nanometer",
    )
    first = tmp_path / "m.precomputed"
    export(store, first)
    back = str(tmp_path / "back.zarrvectors")
    convert(first, back)
    a, b = zv.read_meshes(store), zv.read_meshes(back)
    np.testing.assert_array_equal(b.object_ids, a.object_ids)
    np.testing.assert_array_equal(b.vertices, a.vertices.astype(np.float32))
    np.testing.assert_array_equal(b.faces, a.faces)
    second = tmp_path / "again.precomputed"
    export(back, second)
    _same_tree(first, second)


def _write_source(root: Path, info: dict, files: dict[str, bytes]) -> Path:
    root.mkdir()
    (root / "info").write_text(json.dumps(info))
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def _skeleton_bytes(pos: np.ndarray, edges: np.ndarray) -> bytes:
    head = np.array([len(pos), len(edges)], "<u4").tobytes()
    return head + pos.astype("<f4").tobytes() + edges.astype("<u4").tobytes()


def test_cyclic_skeleton_becomes_a_graph(tmp_path: Path) -> None:
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], float)
    ring = np.array([[0, 1], [1, 2], [2, 0]])
    src = _write_source(
        tmp_path / "ring", {"@type": "neuroglancer_skeletons"}, {"7": _skeleton_bytes(pos, ring)}
    )
    store = str(tmp_path / "g.zarrvectors")
    assert convert(src, store).summary.geometry_type.value == "graph"
    g = zv.read_graph(store)
    assert len(g.positions) == 3
    assert sorted(map(sorted, g.edges.tolist())) == [[0, 1], [0, 2], [1, 2]]
    np.testing.assert_array_equal(np.unique(g.vertex_object_ids), [7])


def test_bad_sources_are_refused(tmp_path: Path) -> None:
    pos = np.zeros((2, 3))
    short = _skeleton_bytes(pos, np.array([[0, 1]]))[:-4]
    src = _write_source(tmp_path / "short", {"@type": "neuroglancer_skeletons"}, {"1": short})
    with pytest.raises(CorruptPayloadError, match="segment 1"):
        convert(src, str(tmp_path / "s.zarrvectors"))
    src = _write_source(tmp_path / "draco", {"@type": "neuroglancer_multilod_draco"}, {})
    with pytest.raises(InvalidInputError, match="not supported"):
        convert(src, str(tmp_path / "d.zarrvectors"))
    sharded = {
        "@type": "neuroglancer_skeletons",
        "sharding": {"@type": "neuroglancer_uint64_sharded_v1"},
    }
    src = _write_source(tmp_path / "sharded", sharded, {})
    with pytest.raises(InvalidInputError, match="sharded"):
        convert(src, str(tmp_path / "x.zarrvectors"))
    assert not (tmp_path / "s.zarrvectors").exists()


def test_export_refuses_to_replace_other_data(skeletons: Path, tmp_path: Path) -> None:
    other = tmp_path / "mine.precomputed"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(InvalidInputError, match="not a precomputed"):
        export(str(skeletons), other)
    assert (other / "notes.txt").read_text() == "keep me"


def test_cli(skeletons: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.precomputed"
    run = CliRunner().invoke(app, ["export", str(skeletons), str(out)])
    assert run.exit_code == 0, run.output
    run = CliRunner().invoke(app, ["convert", str(out), str(tmp_path / "c.zarrvectors")])
    assert run.exit_code == 0, run.output
    assert len(zv.read_skeletons(str(tmp_path / "c.zarrvectors")).object_ids) == 3
