"""export(convert(f)) == f on real files shipped by laspy, meshio, pyvista and nibabel.

Each file is compared under its peer library (laspy, trimesh, nibabel, trx-python), element
order included, and byte for byte where the format allows it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import laspy
import nibabel as nib
import numpy as np
import pytest
import trimesh
from trx import trx_file_memmap as tmm

RoundTrip = Callable[..., tuple[Path, Any]]
RealFiles = Any  # tests/formats/conftest.py::RealFiles (conftest modules are not importable)

LAS_FILES = (
    "1_4_w_evlr.las",
    "1_4_w_evlr.laz",
    "append-bug.laz",
    "autzen.las",
    "autzen_geo_proj.las",
    "autzen_trim.laz",
    "extra.laz",
    "extrabytes.las",
    "file_with_both_wkt_and_geotiff_vlrs.las",
    "plane.laz",
    "simple.copc.laz",
    "simple.las",
    "simple.laz",
    "simple1_1.las",
    "simple1_3.las",
    "simple1_4.las",
    "simple_with_page.copc.laz",
    "test1_4.las",
    "unregistered_extra_bytes.las",
    "vegetation_1_3.las",
)
LAS_IDENTICAL = {
    "1_4_w_evlr.las",
    "1_4_w_evlr.laz",
    "append-bug.laz",
    "autzen.las",
    "autzen_geo_proj.las",
    "extrabytes.las",
    "file_with_both_wkt_and_geotiff_vlrs.las",
    "simple.las",
    "simple1_1.las",
    "simple1_4.las",
    "test1_4.las",
    "unregistered_extra_bytes.las",
    "vegetation_1_3.las",
}
"""Files whose every byte comes back.  The others differ where laspy writes its own bytes:
LASzip chunking and its VLR (autzen_trim, extra, plane, simple.laz), the COPC records left
out (reported), and simple1_3.las's internal waveform data after the points (reported)."""


def _records(records: Any) -> list[tuple[str, int, str, bytes]]:
    return [
        (v.user_id, v.record_id, v.description, bytes(v.record_data_bytes()))
        for v in records or ()
        if v.user_id != "copc"  # COPC records are left out on purpose (reported on convert)
    ]


HEADER_FIELDS = (
    "version",
    "point_count",
    "scales",
    "offsets",
    "system_identifier",
    "generating_software",
    "creation_date",
    "file_source_id",
    "uuid",
    "number_of_points_by_return",
)


@pytest.mark.parametrize("name", LAS_FILES)
def test_las(name: str, real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path("laspy", name)
    out, report = round_trip(src)
    a, b = laspy.read(src), laspy.read(out)
    for key in HEADER_FIELDS:
        assert np.array_equal(
            np.asarray(getattr(a.header, key)), np.asarray(getattr(b.header, key))
        ), key
    assert a.header.point_format.id == b.header.point_format.id
    assert a.header.global_encoding.value == b.header.global_encoding.value
    assert _records(a.header.vlrs) == _records(b.header.vlrs)
    assert _records(a.header.evlrs) == _records(b.header.evlrs)
    assert a.points.array.dtype == b.points.array.dtype
    assert a.points.array.tobytes() == b.points.array.tobytes()  # same points, same order
    if name in LAS_IDENTICAL:
        assert out.read_bytes() == src.read_bytes()
    copc = "copc" in name
    assert any("COPC" in line for line in report.dropped) == copc
    assert any("waveform" in line for line in report.dropped) == (name == "simple1_3.las")


def test_las_without_order_is_the_same_set(real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path("laspy", "1_4_w_evlr.laz")
    out, _ = round_trip(src, keep_order=False)
    a, b = laspy.read(src).points.array, laspy.read(out).points.array
    assert len(a) == len(b)
    assert np.array_equal(np.sort(a), np.sort(b))


def test_las_streaming_keeps_order(real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path("laspy", "simple.copc.laz")
    out, _ = round_trip(src, streaming=True, batch_size=200)
    assert laspy.read(out).points.array.tobytes() == laspy.read(src).points.array.tobytes()


PLY_FILES = (
    ("meshio", "ply/tet.ply"),
    ("meshio", "ply/bun_zipper_res4.ply"),
    ("pyvista", "airplane.ply"),
    ("pyvista", "ant.ply"),
    ("pyvista", "nut.ply"),
    ("pyvista", "sphere.ply"),
)


@pytest.mark.parametrize(("kind", "name"), PLY_FILES)
def test_ply_mesh(kind: str, name: str, real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path(kind, name)
    out, report = round_trip(src)
    assert report.summary.geometry_type.value == "mesh"
    a, b = trimesh.load(src, process=False), trimesh.load(out, process=False)
    assert np.array_equal(a.vertices, b.vertices)
    assert np.array_equal(a.faces, b.faces)
    assert out.read_bytes() == src.read_bytes()


def test_ply_points_from_mesh_vertices(
    real_files: RealFiles, round_trip: RoundTrip, tmp_path: Path
) -> None:
    """A real ASCII float32 vertex table without faces (airplane.ply's) is a point cloud."""
    text = real_files.path("pyvista", "airplane.ply").read_bytes()
    head, body = text.split(b"end_header\r\n")
    rows = body.split(b"\r\n")[:1335]
    head = head.replace(b"element face 2452\r\nproperty list uint8 int32 vertex_indices\r\n", b"")
    src = tmp_path / "points.ply"
    src.write_bytes(head + b"end_header\r\n" + b"\r\n".join(rows) + b"\r\n")
    out, report = round_trip(src)
    assert report.summary.geometry_type.value == "point_cloud"
    assert out.read_bytes() == src.read_bytes()


OBJ_STL = (("meshio", "obj/elephav.obj"),)


@pytest.mark.parametrize(("kind", "name"), OBJ_STL)
def test_obj(kind: str, name: str, real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path(kind, name)
    out, report = round_trip(src)
    a, b = trimesh.load(src, process=False), trimesh.load(out, process=False)
    assert np.array_equal(a.vertices, b.vertices)
    assert np.array_equal(a.faces, b.faces)  # face order kept
    assert report.dropped == ("622 vertex normals (vn)", "3 smoothing groups (s)")


@pytest.mark.parametrize("suffix", [".obj", ".stl"])
@pytest.mark.parametrize("name", ["ant.ply", "sphere.ply"])
def test_trimesh_written_obj_stl(
    name: str, suffix: str, real_files: RealFiles, round_trip: RoundTrip, tmp_path: Path
) -> None:
    """OBJ and STL files written by trimesh from real meshes come back byte for byte."""
    src = tmp_path / f"mesh{suffix}"
    trimesh.load(real_files.path("pyvista", name), process=False).export(src)
    out, _ = round_trip(src)
    a, b = trimesh.load(src, process=False), trimesh.load(out, process=False)
    assert np.array_equal(a.triangles, b.triangles)  # face order and rotation
    assert out.read_bytes() == src.read_bytes()


TRACT_FILES = (
    "complex.trk",
    "complex_big_endian.trk",
    "empty.trk",
    "simple.trk",
    "standard.LPS.trk",
    "standard.trk",
    "empty.tck",
    "simple.tck",
    "simple_big_endian.tck",
    "standard.tck",
)


def _same_tractogram(a: Any, b: Any) -> None:
    assert len(a.streamlines) == len(b.streamlines)
    for x, y in zip(a.streamlines, b.streamlines, strict=True):
        assert np.array_equal(x, y)
    for key, values in a.tractogram.data_per_point.items():
        for x, y in zip(values, b.tractogram.data_per_point[key], strict=True):
            assert np.array_equal(x, y)
    for key, values in a.tractogram.data_per_streamline.items():
        assert np.array_equal(values, b.tractogram.data_per_streamline[key])


@pytest.mark.parametrize("name", TRACT_FILES)
def test_trk_tck(name: str, real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path("nibabel", name)
    out, _ = round_trip(src)
    a, b = nib.streamlines.load(src), nib.streamlines.load(out)
    _same_tractogram(a, b)
    for key, value in a.header.items():
        assert np.array_equal(np.asarray(value), np.asarray(b.header[key])), key
    assert out.read_bytes() == src.read_bytes()


@pytest.mark.parametrize("name", ["multiline_header_field.tck", "matlab_nan.tck"])
def test_tck_with_odd_headers(name: str, real_files: RealFiles, round_trip: RoundTrip) -> None:
    """Streamlines come back; a multi-line field comes back joined (as nibabel writes it) and
    a wrong ``count`` comes back corrected."""
    src = real_files.path("nibabel", name)
    out, _ = round_trip(src)
    a, b = nib.streamlines.load(src), nib.streamlines.load(out)
    _same_tractogram(a, b)
    assert int(b.header["count"]) == len(a.streamlines)


def test_trx_from_real_trk(real_files: RealFiles, round_trip: RoundTrip, tmp_path: Path) -> None:
    trk = nib.streamlines.load(real_files.path("nibabel", "complex.trk"))
    src = tmp_path / "complex.trx"
    with warnings.catch_warnings():  # trx-python's own stray warning (see store_to_trx)
        warnings.filterwarnings("ignore", "Implicitly cleaning up", ResourceWarning)
        made = tmm.TrxFile.from_tractogram(trk.tractogram, reference=trk.header)
    tmm.save(made, str(src))
    made.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, _ = round_trip(src)
    assert not [w for w in caught if "Implicitly cleaning up" in str(w.message)]
    a, b = tmm.load(str(src)), tmm.load(str(out))
    try:
        assert np.array_equal(a.streamlines._data, b.streamlines._data)
        assert np.array_equal(a.streamlines._offsets, b.streamlines._offsets)
        for key in ("VOXEL_TO_RASMM", "DIMENSIONS", "NB_VERTICES", "NB_STREAMLINES"):
            assert np.array_equal(np.asarray(a.header[key]), np.asarray(b.header[key])), key
        for key in a.data_per_vertex:
            assert np.array_equal(a.data_per_vertex[key]._data, b.data_per_vertex[key]._data)
        for key in a.data_per_streamline:
            assert np.array_equal(a.data_per_streamline[key], b.data_per_streamline[key])
    finally:
        a.close()
        b.close()
