"""Collections in ``info`` and ``validate``: the tree of children, findings named by child."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app

runner = CliRunner()
CHUNKS = {"chunk_shape": (8, 8, 8)}


@pytest.fixture
def scene(tmp_path: Path) -> Path:
    """A collection of points (30), meshes (2 objects) and skeletons (1 tree, 2 levels)."""
    path = tmp_path / "scene.zarrvectors"
    coll = zv.open_collection(path, "a")
    pts = np.random.default_rng(0).uniform(0, 20, (30, 3))
    zv.write_points(coll.child("cells"), pts, **CHUNKS)
    verts = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5], [6, 5, 5], [5, 6, 5]])
    zv.write_meshes(coll.child("boundaries"), verts, [[0, 1, 2], [3, 4, 5]], **CHUNKS)
    zv.write_skeletons(
        coll.child("axons"), verts[:3], np.array([-1, 0, 1]), bin_shape=(4, 4, 4), **CHUNKS
    )
    zv.build_pyramid(coll.child("axons"), [(2, 2, 2)])
    coll.refresh()
    return path


def test_info_shows_the_tree_of_children(scene: Path) -> None:
    out = runner.invoke(app, ["info", str(scene)])
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # the console wraps long lines
    assert "(collection, 3 children)" in text
    assert "axons (skeleton): 3 vertices, 1 objects, 2 levels" in text
    assert "boundaries (mesh): 6 vertices, 2 objects, 1 level" in text
    assert "cells (point_cloud): 30 vertices, 0 objects, 1 level" in text
    doc = json.loads(runner.invoke(app, ["info", str(scene), "--json"]).output)
    assert doc["collection"] is True
    assert [(c["name"], c["geometry_type"], c["vertex_count"]) for c in doc["children"]] == [
        ("axons", "skeleton", 3),
        ("boundaries", "mesh", 6),
        ("cells", "point_cloud", 30),
    ]
    # a child store still gets the ordinary summary
    child = runner.invoke(app, ["info", str(scene / "cells")])
    assert child.exit_code == 0
    assert "point_cloud" in child.output


def test_validate_checks_every_child(scene: Path) -> None:
    report = zv.validate(str(scene), level=3)
    assert report.ok, report
    out = runner.invoke(app, ["validate", str(scene)])
    assert out.exit_code == 0, out.output
    # break one child: its findings name it, the others stay clean
    shutil.rmtree(scene / "boundaries" / "0" / "vertices")
    bad = zv.validate(str(scene), level=3)
    assert not bad.ok
    assert all(f.path.startswith("/boundaries") for f in bad.errors), bad
    assert all(f.message.startswith("child 'boundaries': ") for f in bad.errors)
    out = runner.invoke(app, ["validate", str(scene), "--json"])
    assert out.exit_code == 1
    assert {f["path"].split("/")[1] for f in json.loads(out.output)["findings"]} == {"boundaries"}


def test_listing_problems_are_findings(scene: Path) -> None:
    group = zarr.open_group(str(scene), mode="r+")
    listing = group.attrs["zarr_vectors_collection"]
    listing["children"]["cells"] = {"geometry_type": "mesh"}  # wrong type
    listing["children"]["ghost"] = {"geometry_type": "graph"}  # no such child
    del listing["children"]["axons"]  # present but unlisted
    group.attrs["zarr_vectors_collection"] = listing
    report = zv.validate(str(scene))
    got = {(f.check, f.path, f.severity.value) for f in report.findings}
    assert ("L2.collection.geometry_type", "/cells", "error") in got
    assert ("L1.store.missing", "/ghost", "error") in got
    assert ("L1.collection.unlisted", "/axons", "warning") in got
    group.attrs["zarr_vectors_collection"] = {"children": []}
    assert [f.check for f in zv.validate(str(scene)).errors] == ["L2.collection.listing"]
