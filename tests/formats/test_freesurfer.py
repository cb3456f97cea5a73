"""FreeSurfer surfaces and morphometry: convert then export gives the same bytes.

nibabel's wheel ships no FreeSurfer surface, so the surfaces are written with nibabel's own
writer from a real GIFTI surface shipped by nibabel (external.gii) and from an icosphere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

nib = pytest.importorskip("nibabel")
trimesh = pytest.importorskip("trimesh")

import zarr
from nibabel.freesurfer import io as fsio
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats._surface import read_surface
from zarr_vectors.formats.registry import convert, export, format_for

GIFTI = Path(nib.__file__).parent / "gifti" / "tests" / "data"
VOLUME_INFO = {
    "head": np.array([2, 0, 20]),
    "valid": "1  # volume info valid",
    "filename": "/subjects/bert/mri/filled-pretess255.mgz",
    "volume": np.array([256, 256, 256]),
    "voxelsize": np.array([1.0, 1.0, 1.0]),
    "xras": np.array([-1.0, 0.0, 0.0]),
    "yras": np.array([0.0, 0.0, -1.0]),
    "zras": np.array([0.0, 1.0, 0.0]),
    "cras": np.array([5.25, 18.5, 0.375]),
}


def _subject(tmp_path: Path) -> Path:
    """lh.white (shuffled icosphere, volume info), lh.thickness and lh.curv."""
    s = trimesh.creation.icosphere(subdivisions=3)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(s.vertices))
    faces = np.argsort(perm)[s.faces][rng.permutation(len(s.faces))]
    d = tmp_path / "surf"
    d.mkdir()
    fsio.write_geometry(
        str(d / "lh.white"),
        (s.vertices[perm] * 80).astype(np.float32),
        faces,
        create_stamp="created by bert on Thu Nov 28 09:00:00 2026",
        volume_info=VOLUME_INFO,
    )
    n = len(s.vertices)
    fsio.write_morph_data(str(d / "lh.thickness"), (rng.random(n) * 4).astype(np.float32))
    fsio.write_morph_data(str(d / "lh.curv"), rng.normal(0, 0.2, n).astype(np.float32))
    return d


def test_extensions() -> None:
    assert format_for("lh.white").name == "freesurfer"
    assert format_for("rh.sphere.reg").name == "freesurfer"


def test_surface_and_morphometry_round_trip_byte_for_byte(tmp_path: Path) -> None:
    d = _subject(tmp_path)
    store = str(tmp_path / "s.zarrvectors")
    convert(d / "lh.white", store, vertex_data=[d / "lh.thickness", d / "lh.curv"])
    mesh = zv.read_meshes(store)
    assert mesh.attributes["thickness"].dtype == np.float32
    out = tmp_path / "out"
    out.mkdir()
    export(store, out / "lh.white")
    for name in ("lh.white", "lh.thickness", "lh.curv"):
        assert (out / name).read_bytes() == (d / name).read_bytes(), name
    _, _, info, stamp = fsio.read_geometry(
        str(out / "lh.white"), read_metadata=True, read_stamp=True
    )
    assert stamp == "created by bert on Thu Nov 28 09:00:00 2026"
    np.testing.assert_array_equal(info["cras"], VOLUME_INFO["cras"])


def test_other_hemisphere_name_and_real_gifti_geometry(tmp_path: Path) -> None:
    # external.gii: a real 8-vertex, 12-face surface; as a FreeSurfer file without volume info
    g = nib.load(GIFTI / "external.gii")
    src = tmp_path / "rh.pial"
    fsio.write_geometry(str(src), g.darrays[0].data, g.darrays[1].data, create_stamp="x")
    store = str(tmp_path / "s.zarrvectors")
    convert(src, store)
    export(store, tmp_path / "rh.pial.out.pial")
    assert (tmp_path / "rh.pial.out.pial").read_bytes() == src.read_bytes()


def test_wrong_length_morphometry_is_refused(tmp_path: Path) -> None:
    d = _subject(tmp_path)
    fsio.write_morph_data(str(d / "lh.sulc"), np.zeros(5, np.float32))
    with pytest.raises(InvalidInputError, match="5 values"):
        convert(d / "lh.white", str(tmp_path / "s.zarrvectors"), vertex_data=[d / "lh.sulc"])
    assert not (tmp_path / "s.zarrvectors").exists()


def test_not_a_surface_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "lh.white"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(InvalidInputError, match="FreeSurfer"):
        convert(bad, str(tmp_path / "s.zarrvectors"))


def test_cli(tmp_path: Path) -> None:
    d = _subject(tmp_path)
    store = tmp_path / "s.zarrvectors"
    run = CliRunner().invoke(
        app, ["convert", str(d / "lh.white"), str(store), "--vertex-data", str(d / "lh.curv")]
    )
    assert run.exit_code == 0, run.output
    out = tmp_path / "o"
    out.mkdir()
    run = CliRunner().invoke(app, ["export", str(store), str(out / "lh.white")])
    assert run.exit_code == 0, run.output
    assert (out / "lh.curv").read_bytes() == (d / "lh.curv").read_bytes()


def test_annotation_round_trips_byte_for_byte(tmp_path: Path) -> None:
    d = _subject(tmp_path)
    n = len(fsio.read_geometry(str(d / "lh.white"))[0])
    rng = np.random.default_rng(5)
    names = [b"unknown_region", b"precentral", b"postcentral", b"insula"]
    ctab = np.array(
        [[25, 5, 25, 0, 0], [60, 20, 220, 0, 0], [220, 20, 20, 0, 0], [255, 192, 32, 0, 0]]
    )
    labels = rng.integers(-1, 4, n)  # -1: vertices outside every label
    fsio.write_annot(str(d / "lh.aparc.annot"), labels, ctab, names, fill_ctab=True)
    store = str(tmp_path / "s.zarrvectors")
    convert(d / "lh.white", store, vertex_data=[d / "lh.aparc.annot", d / "lh.curv"])
    from_store = read_surface(store).attributes["aparc"]
    want = np.array([names[i].decode() if i >= 0 else "unknown" for i in labels], dtype=object)
    np.testing.assert_array_equal(from_store, want)
    out = tmp_path / "out"
    out.mkdir()
    export(store, out / "lh.white")
    assert (out / "lh.aparc.annot").read_bytes() == (d / "lh.aparc.annot").read_bytes()


def test_no_keep_order_stores_no_index_and_exports_storage_order(tmp_path: Path) -> None:
    d = _subject(tmp_path)
    store = str(tmp_path / "s.zarrvectors")
    convert(d / "lh.white", store, vertex_data=[d / "lh.thickness"], keep_order=False)
    level = zarr.open_group(store, mode="r")["0"]
    assert "_input_index" not in level["attributes"]
    assert "link_attributes" not in level
    out = tmp_path / "out"
    out.mkdir()
    export(store, out / "lh.white")
    coords, faces = fsio.read_geometry(str(out / "lh.white"))
    mesh = zv.read_meshes(store)  # storage order, faces as a set
    np.testing.assert_array_equal(coords, mesh.vertices)
    np.testing.assert_array_equal(faces, mesh.faces)
    np.testing.assert_array_equal(
        fsio.read_morph_data(str(out / "lh.thickness")), mesh.attributes["thickness"]
    )
    # one connected surface keeps its vertex order; faces come back as a sorted set
    original = fsio.read_geometry(str(d / "lh.white"))[1]
    assert not np.array_equal(faces, original)
    assert sorted(map(tuple, faces)) == sorted(map(tuple, original))
