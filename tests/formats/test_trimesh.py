"""trimesh interop: files written by trimesh (PLY/OBJ/STL) -> store -> trimesh, and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

from zarr_vectors.errors import InvalidInputError, MissingDependencyError, ZVUserWarning
from zarr_vectors.formats import trimesh_io
from zarr_vectors.formats.trimesh_io import from_trimesh, read_trimesh, to_trimesh, write_trimesh
from zarr_vectors.types.meshes import as_meshes, read_meshes, write_meshes

trimesh = pytest.importorskip("trimesh")

FORMATS = ("ply", "obj", "stl")


def scene() -> Any:
    """Two closed surfaces whose vertices interleave after concatenation is undone."""
    a = trimesh.creation.icosphere(subdivisions=2, radius=3.0)
    b = trimesh.creation.box(extents=(2.0, 3.0, 4.0))
    b.apply_translation((7.0, 0.5, -1.0))
    return trimesh.util.concatenate([a, b])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_files_written_by_trimesh_round_trip(fmt: str, zarr_format: int, tmp_path: Path) -> None:
    original = scene()
    path = tmp_path / f"scene.{fmt}"
    original.export(path)
    loaded = trimesh.load(path, force="mesh")  # default processing merges STL's split corners
    store = MemoryStore()
    summary = write_trimesh(store, loaded, chunk_shape=(1.5, 1.5, 1.5), zarr_format=zarr_format)
    assert summary.object_count == 2
    back = read_trimesh(store)
    assert len(back.vertices) == len(loaded.vertices)
    assert len(back.faces) == len(loaded.faces)
    assert sorted(map(tuple, np.round(back.vertices, 6).tolist())) == sorted(
        map(tuple, np.round(loaded.vertices, 6).tolist())
    )
    want = {tuple(sorted(map(tuple, t))) for t in np.round(loaded.triangles, 6).tolist()}
    got = {tuple(sorted(map(tuple, t))) for t in np.round(back.triangles, 6).tolist()}
    assert got == want
    assert back.is_watertight
    assert np.isclose(back.volume, original.volume)
    np.testing.assert_allclose(
        back.face_normals.sum(axis=0), loaded.face_normals.sum(axis=0), atol=1e-9
    )  # same winding: outward normals


def test_exact_round_trip_keeps_vertex_order_per_object() -> None:
    box = trimesh.creation.box()
    box.vertex_attributes["quality"] = np.arange(8, dtype=np.float32)
    box.face_attributes["label"] = np.arange(12, dtype=np.int32)
    box.visual.vertex_colors = np.tile([10, 20, 30, 255], (8, 1)).astype(np.uint8)
    store = MemoryStore()
    write_trimesh(store, [box, box.copy()], chunk_shape=(0.4, 0.4, 0.4))
    m = read_meshes(store)
    assert len(m) == 2
    for obj in m:
        np.testing.assert_array_equal(obj.vertices, box.vertices)
        order = np.lexsort(box.faces.T[::-1])
        np.testing.assert_array_equal(obj.faces, box.faces[order])
        np.testing.assert_array_equal(obj.face_attributes["label"], order)
        np.testing.assert_array_equal(obj.attributes["quality"], np.arange(8))
        assert obj.attributes["color"].tolist() == [[10, 20, 30, 255]] * 8
    one = to_trimesh(m[1])
    np.testing.assert_array_equal(one.vertices, box.vertices)
    assert one.visual.vertex_colors.tolist() == [[10, 20, 30, 255]] * 8
    np.testing.assert_array_equal(one.vertex_attributes["quality"], np.arange(8))


def test_from_trimesh_matches_as_meshes() -> None:
    tm = scene()
    a = from_trimesh(tm, attributes=False)
    b = as_meshes(tm)
    np.testing.assert_array_equal(a.vertices, b.vertices)
    np.testing.assert_array_equal(a.faces, b.faces)
    store = MemoryStore()
    write_meshes(store, tm, chunk_shape=(2.0, 2.0, 2.0))  # a Trimesh is mesh-like as it is
    np.testing.assert_array_equal(read_meshes(store).faces, b.faces)


def test_clockwise_stores_come_back_counter_clockwise() -> None:
    box = trimesh.creation.box()
    store = MemoryStore()
    write_meshes(store, box.vertices, box.faces[:, ::-1], chunk_shape=(1, 1, 1), winding_order="cw")
    tm = read_trimesh(store)
    assert tm.is_winding_consistent
    assert tm.volume > 0


def test_unusable_attributes_are_skipped_with_a_warning() -> None:
    box = trimesh.creation.box()
    box.vertex_attributes["not an identifier"] = np.zeros(8)
    box.face_attributes["names"] = np.array(["x"] * 12)
    with pytest.warns(ZVUserWarning, match="skipped"):
        m = from_trimesh(box)
    assert m.attributes == {}
    assert m.face_attributes == {}


def test_two_dimensional_results_are_refused() -> None:
    m = as_meshes(np.eye(3)[:, :2], [[0, 1, 2]])
    with pytest.raises(InvalidInputError, match="3-D"):
        to_trimesh(m)


def test_missing_trimesh_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trimesh_io, "HAVE_TRIMESH", False)
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[formats\]"):
        from_trimesh(trimesh.creation.box())
