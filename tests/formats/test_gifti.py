"""GIFTI surfaces and per-vertex data: convert then export gives the files back (nibabel)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
trimesh = pytest.importorskip("trimesh")

from nibabel.gifti import GiftiDataArray, GiftiImage
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats._surface import read_surface
from zarr_vectors.formats.registry import convert, export

DATA = Path(nib.__file__).parent / "gifti" / "tests" / "data"


def _same_arrays(a: GiftiImage, b: GiftiImage, *, encoding: bool = True) -> None:
    assert dict(a.meta) == dict(b.meta)
    assert len(a.darrays) == len(b.darrays)
    for x, y in zip(a.darrays, b.darrays, strict=True):
        assert x.intent == y.intent
        assert x.datatype == y.datatype
        assert x.data.dtype == y.data.dtype
        np.testing.assert_array_equal(x.data, y.data)
        assert dict(x.meta) == dict(y.meta)
        assert x.endian == y.endian
        assert x.ind_ord == y.ind_ord
        assert x.coordsys.dataspace == y.coordsys.dataspace
        assert x.coordsys.xformspace == y.coordsys.xformspace
        np.testing.assert_array_equal(x.coordsys.xform, y.coordsys.xform)
        if encoding:
            assert x.encoding == y.encoding


@pytest.mark.parametrize(("name", "inline"), [("ascii.gii", True), ("external.gii", False)])
def test_nibabel_surfaces_round_trip(name: str, inline: bool, tmp_path: Path) -> None:
    src = DATA / name
    store = str(tmp_path / "s.zarrvectors")
    convert(src, store)
    export(store, tmp_path / "out.gii")
    # an external-file array is written back inline (base64 + gzip)
    _same_arrays(nib.load(src), nib.load(tmp_path / "out.gii"), encoding=inline)


def test_invalid_nibabel_surface_is_refused(tmp_path: Path) -> None:
    # base64bin.gii's triangles index vertices far beyond its 10: not a surface
    with pytest.raises(InvalidInputError, match="outside"):
        convert(DATA / "base64bin.gii", str(tmp_path / "s.zarrvectors"))
    assert not (tmp_path / "s.zarrvectors").exists()


def test_data_file_alone_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="vertex_data"):
        convert(DATA / "task.func.gii", str(tmp_path / "s.zarrvectors"))


@pytest.fixture
def icosphere(tmp_path: Path) -> tuple[Path, trimesh.Trimesh]:
    """A 642-vertex surface (the vertex count of nibabel's task.func.gii), shuffled order."""
    s = trimesh.creation.icosphere(subdivisions=3)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(s.vertices))
    inv = np.argsort(perm)
    faces = inv[s.faces][rng.permutation(len(s.faces))].astype(np.int32)
    vertices = (s.vertices[perm] * 70).astype(np.float32)
    img = GiftiImage(
        darrays=[
            GiftiDataArray(vertices, intent="NIFTI_INTENT_POINTSET"),
            GiftiDataArray(faces, intent="NIFTI_INTENT_TRIANGLE"),
        ]
    )
    path = tmp_path / "ico.surf.gii"
    nib.save(img, path)
    return path, img


def test_func_file_round_trips_as_attributes(icosphere, tmp_path: Path) -> None:
    surf, _ = icosphere
    func = DATA / "task.func.gii"
    store = str(tmp_path / "s.zarrvectors")
    convert(surf, store, vertex_data=[func])
    mesh = zv.read_meshes(store)
    task = nib.load(func)
    names = [f"task_{i}" for i in range(len(task.darrays))]
    assert set(names) <= set(mesh.attributes)
    export(store, tmp_path / "o.surf.gii", vertex_data=tmp_path / "o.func.gii")
    _same_arrays(nib.load(surf), nib.load(tmp_path / "o.surf.gii"))
    _same_arrays(task, nib.load(tmp_path / "o.func.gii"))
    # one file: surface then data arrays
    export(store, tmp_path / "one.gii")
    one = nib.load(tmp_path / "one.gii")
    assert len(one.darrays) == 2 + len(task.darrays)
    for x, y in zip(task.darrays, one.darrays[2:], strict=True):
        np.testing.assert_array_equal(x.data, y.data)
        assert x.intent == y.intent


def test_converted_surface_is_read_back_in_file_order(icosphere, tmp_path: Path) -> None:
    surf, img = icosphere
    store = str(tmp_path / "s.zarrvectors")
    convert(surf, store, vertex_data=[DATA / "task.func.gii"])
    again = tmp_path / "again.zarrvectors"
    export(store, tmp_path / "one.gii")
    convert(tmp_path / "one.gii", str(again))  # data arrays inside the surface file
    a, b = read_surface(store), read_surface(str(again))
    np.testing.assert_array_equal(a.vertices, img.darrays[0].data)
    np.testing.assert_array_equal(a.faces, img.darrays[1].data)
    np.testing.assert_array_equal(b.vertices, a.vertices)
    np.testing.assert_array_equal(b.faces, a.faces)
    # arrays without a Name are named after their file: task_i in the store, one_i again
    for i in range(10):
        np.testing.assert_array_equal(a.attributes[f"task_{i}"], b.attributes[f"one_{i}"])


def test_curvature_shape_file_on_a_matching_surface(tmp_path: Path) -> None:
    """rh.shape.curv.gii (133,764 values, (N, 1) array) on a surface of as many vertices."""
    curv = nib.load(DATA / "rh.shape.curv.gii")
    n = curv.darrays[0].data.shape[0]
    rng = np.random.default_rng(4)
    vertices = rng.normal(0, 50, (n, 3)).astype(np.float32)
    faces = np.c_[np.arange(n - 2), np.arange(1, n - 1), np.arange(2, n)].astype(np.int32)
    surf = tmp_path / "rh.surf.gii"
    nib.save(
        GiftiImage(
            darrays=[
                GiftiDataArray(vertices, intent="NIFTI_INTENT_POINTSET"),
                GiftiDataArray(faces, intent="NIFTI_INTENT_TRIANGLE"),
            ]
        ),
        surf,
    )
    store = str(tmp_path / "s.zarrvectors")
    convert(surf, store, vertex_data=[DATA / "rh.shape.curv.gii"])
    assert zv.read_meshes(store).attributes["rh_curv"].shape == (n,)
    export(store, tmp_path / "o.gii", vertex_data=tmp_path / "o.shape.gii")
    _same_arrays(curv, nib.load(tmp_path / "o.shape.gii"))


def test_wrong_length_data_is_refused(icosphere, tmp_path: Path) -> None:
    surf, _ = icosphere
    with pytest.raises(InvalidInputError, match="642 vertices"):
        convert(surf, str(tmp_path / "s.zarrvectors"), vertex_data=[DATA / "label.gii"])


def test_cli_vertex_data(icosphere, tmp_path: Path) -> None:
    surf, _ = icosphere
    store = tmp_path / "s.zarrvectors"
    run = CliRunner().invoke(
        app, ["convert", str(surf), str(store), "--vertex-data", str(DATA / "task.func.gii")]
    )
    assert run.exit_code == 0, run.output
    out = tmp_path / "o.gii"
    func = tmp_path / "o.func.gii"
    run = CliRunner().invoke(app, ["export", str(store), str(out), "--vertex-data", str(func)])
    assert run.exit_code == 0, run.output
    _same_arrays(nib.load(DATA / "task.func.gii"), nib.load(func))
    run = CliRunner().invoke(
        app,
        ["convert", str(DATA / "ascii.gii"), str(tmp_path / "x.zarrvectors"), "--columns", "a,b"],
    )
    assert run.exit_code == 2


def _chain_surface(path: Path, n: int) -> None:
    """A strip of n vertices (triangles i, i+1, i+2): any vertex count a data file needs."""
    rng = np.random.default_rng(n)
    vertices = rng.normal(0, 50, (n, 3)).astype(np.float32)
    faces = np.c_[np.arange(n - 2), np.arange(1, n - 1), np.arange(2, n)].astype(np.int32)
    nib.save(
        GiftiImage(
            darrays=[
                GiftiDataArray(vertices, intent="NIFTI_INTENT_POINTSET"),
                GiftiDataArray(faces, intent="NIFTI_INTENT_TRIANGLE"),
            ]
        ),
        path,
    )


def test_label_file_keeps_its_label_table(tmp_path: Path) -> None:
    labels = nib.load(DATA / "label.gii")
    surf = tmp_path / "s.surf.gii"
    _chain_surface(surf, labels.darrays[0].data.shape[0])
    store = str(tmp_path / "s.zarrvectors")
    convert(surf, store, vertex_data=[DATA / "label.gii"])
    assert zv.read_meshes(store).attributes["Activations"].dtype == np.int32
    export(store, tmp_path / "o.surf.gii", vertex_data=tmp_path / "o.label.gii")
    back = nib.load(tmp_path / "o.label.gii")
    _same_arrays(labels, back)
    want = [(lb.key, lb.label, lb.rgba) for lb in labels.labeltable.labels]
    assert [(lb.key, lb.label, lb.rgba) for lb in back.labeltable.labels] == want


def test_mesh_store_without_gifti_header_exports(tmp_path: Path) -> None:
    box = trimesh.creation.box(extents=(2, 2, 2))
    store = str(tmp_path / "box.zarrvectors")
    n = len(box.vertices)
    zv.write_meshes(
        store,
        box.vertices,
        box.faces,
        chunk_shape=(4, 4, 4),
        attributes={
            "height": box.vertices[:, 2].astype(np.float64),
            "part": np.arange(n, dtype=np.int16),
            "color": np.full((n, 4), 200, dtype=np.uint8),
        },
    )
    export(store, tmp_path / "box.gii")
    img = nib.load(tmp_path / "box.gii")
    mesh = zv.read_meshes(store)
    assert [d.intent for d in img.darrays[:2]] == [1008, 1009]  # POINTSET, TRIANGLE
    np.testing.assert_array_equal(img.darrays[0].data, mesh.vertices.astype(np.float32))
    got = {d.meta["Name"]: d.data for d in img.darrays[2:]}
    assert got["height"].dtype == np.float32
    assert got["part"].dtype == np.int32
    assert got["color"].dtype == np.uint8
    assert got["color"].shape == (n, 4)
    # vertices come back in the store's order: compare attributes through it
    np.testing.assert_array_equal(got["height"], mesh.attributes["height"].astype(np.float32))
    np.testing.assert_array_equal(got["part"], mesh.attributes["part"])
