"""export(convert(f)) == f on navis's example neurons (SWC, OBJ) and dipy's TRK files.

SWC files are compared line by line and under an independent parser (``numpy.loadtxt``), OBJ
meshes under trimesh (face order included), TRK files under nibabel and byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np
import pytest
import trimesh
from typer.testing import CliRunner

from zarr_vectors.cli import app
from zarr_vectors.formats.swc import read_swc

RoundTrip = Callable[..., tuple[Path, Any]]
RealFiles = Any  # tests/formats/conftest.py::RealFiles (conftest modules are not importable)

SWC_FILES = (
    "swc/722817260.swc",
    "swc/754534424.swc",
    "swc/754538881.swc",
    "swc/1734350788.swc",
    "swc/1734350908.swc",
)
SWC_IDENTICAL = {"swc/722817260.swc"}
"""Files whose every byte comes back.  Each of the others has one soma radius written ``375``
(no decimals, unlike every other float in the file): it comes back as ``375.0``, the same
number."""


def _table(path: Path) -> np.ndarray:
    return np.loadtxt(path, comments="#", ndmin=2, dtype=np.float64)


def _assert_same_swc(src: Path, out: Path, name: str) -> None:
    assert np.array_equal(_table(src), _table(out))  # rows in file order
    a, b = read_swc(src), read_swc(out)
    assert a.header == b.header
    for field in ("ids", "types", "positions", "radii", "parents"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    if name in SWC_IDENTICAL:
        assert out.read_bytes() == src.read_bytes()
        return
    pairs = zip(src.read_text().splitlines(), out.read_text().splitlines(), strict=True)
    changed = [
        (i, x, y)
        for line_a, line_b in pairs
        for i, (x, y) in enumerate(zip(line_a.split(), line_b.split(), strict=True))
        if x != y
    ]
    assert changed == [(5, "375", "375.0")]


@pytest.mark.parametrize("name", SWC_FILES)
def test_navis_swc_library(name: str, real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path("navis", name)
    out, report = round_trip(src)
    assert report.summary.geometry_type.value == "skeleton"
    assert report.dropped == ()
    _assert_same_swc(src, out, name)


@pytest.mark.parametrize("name", ["swc/722817260.swc", "swc/754534424.swc"])
def test_navis_swc_cli(name: str, real_files: RealFiles, tmp_path: Path) -> None:
    src = real_files.path("navis", name)
    store, out = tmp_path / "s.zarrvectors", tmp_path / "out.swc"
    runner = CliRunner()
    done = runner.invoke(app, ["convert", str(src), str(store)])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["export", str(store), str(out)])
    assert done.exit_code == 0, done.output
    _assert_same_swc(src, out, name)


OBJ_FILES = (
    ("obj/722817260.obj", ()),
    ("obj/754534424.obj", ()),
    ("obj/754538881.obj", ()),
    ("obj/1734350788.obj", ()),
    ("obj/1734350908.obj", ()),
    ("volumes/lh.obj", ("1 object names (o)",)),
    ("volumes/neuropil.obj", ("1 object names (o)",)),
)


@pytest.mark.parametrize(("name", "dropped"), OBJ_FILES)
def test_navis_obj(
    name: str, dropped: tuple[str, ...], real_files: RealFiles, round_trip: RoundTrip
) -> None:
    """Equal under trimesh, face order and rotation included.  The bytes differ only where
    trimesh 5.2 writes its own: the ``o None`` line (reported) and a blank line at the end
    (navis's files, written by an older trimesh, end without a newline)."""
    src = real_files.path("navis", name)
    out, report = round_trip(src)
    assert report.dropped == dropped
    a = trimesh.load(src, process=False, force="mesh")
    b = trimesh.load(out, process=False, force="mesh")
    assert np.array_equal(a.vertices, b.vertices)
    assert np.array_equal(a.faces, b.faces)
    body = src.read_bytes().replace(b"\n\no None\n", b"\n")
    assert out.read_bytes() == body + b"\n\n"


def _trk_words(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_bytes()[1000:], "<i4")


def test_dipy_tracks300(real_files: RealFiles, round_trip: RoundTrip) -> None:
    src = real_files.path("dipy", "tracks300.trk")
    out, _ = round_trip(src)
    a, b = nib.streamlines.load(src), nib.streamlines.load(out)
    assert len(a.streamlines) == len(b.streamlines) == 300
    for x, y in zip(a.streamlines, b.streamlines, strict=True):
        assert np.array_equal(x, y)
    assert out.read_bytes() == src.read_bytes()


def test_dipy_eudx_small(real_files: RealFiles, round_trip: RoundTrip, tmp_path: Path) -> None:
    """Equal under nibabel, and byte for byte what nibabel's own load and save writes.

    Four voxmm x values in [-64, -63.5) do not come back bit for bit: nibabel maps voxmm to
    RAS+ mm by subtracting half a voxel (0.5 mm here), which moves them into [-64.5, -64),
    where float32 values are twice as far apart, so each odd last bit is rounded away.
    """
    src = real_files.path("dipy", "EuDX_small_25.trk")
    out, _ = round_trip(src)
    a, b = nib.streamlines.load(src), nib.streamlines.load(out)
    assert len(a.streamlines) == len(b.streamlines) == 60
    for x, y in zip(a.streamlines, b.streamlines, strict=True):
        assert np.array_equal(x, y)
    by_nibabel = tmp_path / "nibabel.trk"
    nib.streamlines.save(a, by_nibabel)
    assert out.read_bytes() == by_nibabel.read_bytes()
    assert out.read_bytes()[:1000] == src.read_bytes()[:1000]
    old, new = _trk_words(src), _trk_words(out)
    moved = np.flatnonzero(old != new)
    assert moved.tolist() == [675, 682, 692, 702]
    assert (new[moved] - old[moved]).tolist() == [1, 1, 1, 1]  # one float32 step
    values = old.view("<f4")[moved]
    assert ((values >= -64) & (values < -63.5)).all()
