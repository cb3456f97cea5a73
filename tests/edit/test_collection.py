"""Collections: children of several geometry types, each a complete ZVF store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv


def test_scene_of_three_types(tmp_path: Path) -> None:
    path = tmp_path / "scene.zarrvectors"
    coll = zv.open_collection(path, "a")
    pts = np.random.default_rng(0).uniform(0, 20, (30, 3))
    zv.write_points(coll.child("cells"), pts, chunk_shape=(8, 8, 8))
    verts = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    zv.write_meshes(str(path / "boundaries"), verts, [[0, 1, 2]], chunk_shape=(8, 8, 8))
    zv.write_skeletons(coll.child("axons"), verts, np.array([-1, 0, 1]), chunk_shape=(8, 8, 8))
    assert coll.refresh() == {"axons": "skeleton", "boundaries": "mesh", "cells": "point_cloud"}
    again = zv.open_collection(path)
    assert again.children() == coll.children()
    got = zv.read_points(again.child("cells")).positions  # storage order (no objects)
    assert sorted(got.tolist()) == sorted(pts.tolist())
    assert zv.read_meshes(again.child("boundaries")).faces.tolist() == [[0, 1, 2]]
    assert all(r.ok for r in again.validate().values())
    zv.append_points(again.child("cells"), np.ones((1, 3)))
    assert len(zv.read_points(again.child("cells"))) == 31


def test_open_modes(tmp_path: Path) -> None:
    with pytest.raises(zv.StoreNotFoundError):
        zv.open_collection(tmp_path / "none")
    store = tmp_path / "s.zarr"
    zv.write_points(str(store), np.zeros((1, 2)), chunk_shape=(4, 4))
    with pytest.raises(zv.StoreExistsError, match="not a collection"):
        zv.open_collection(store, "a")
    zv.open_collection(tmp_path / "c", "w-")
    with pytest.raises(zv.StoreExistsError):
        zv.open_collection(tmp_path / "c", "w-")
    with pytest.raises(zv.InvalidInputError):
        zv.open_collection(tmp_path / "c").child("../x")
