"""``zarr-vectors convert / export / pyramid`` end to end on a small file of every format.

``convert``, ``info``, ``pyramid``, ``validate`` and ``export`` run on each format in-process
(CliRunner); as real subprocesses, every format goes through ``convert`` and one format through
the whole chain (see :data:`FULL_IN_SUBPROCESS`).  Exit codes and messages of the usage errors
are checked in-process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import laspy  # type: ignore[import-untyped, unused-ignore]
import networkx as nx  # type: ignore[import-untyped, unused-ignore]
import nibabel as nib
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.csv as pa_csv  # type: ignore[import-untyped, unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
import pytest
import trimesh
import trx.trx_file_memmap as tmm  # type: ignore[import-untyped, unused-ignore]
from nibabel.streamlines import ArraySequence, TckFile, Tractogram, TrkFile
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

RNG = np.random.default_rng(0)
N_POINTS = 600


def _points() -> np.ndarray:
    return RNG.uniform(0, 40, (N_POINTS, 3))


def _paths() -> list[np.ndarray]:
    return [
        (
            RNG.uniform(5, 35, 3) + np.cumsum(RNG.normal(0, 1, (int(RNG.integers(2, 30)), 3)), 0)
        ).astype(np.float32)
        for _ in range(40)
    ]


def make_las(path: Path) -> None:
    las = laspy.create(point_format=3, file_version="1.2")
    pos = _points()
    las.x, las.y, las.z = pos[:, 0], pos[:, 1], pos[:, 2]
    las.intensity = RNG.integers(0, 1000, N_POINTS)
    las.classification = RNG.integers(0, 9, N_POINTS)
    las.gps_time = RNG.uniform(0, 100, N_POINTS)
    las.write(path)


def make_ply(path: Path) -> None:
    colors = RNG.integers(0, 255, (N_POINTS, 4), dtype=np.uint8)
    trimesh.PointCloud(_points(), colors=colors).export(path)


def _table() -> pa.Table:
    pos = _points()
    return pa.table({"x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2], "w": RNG.random(N_POINTS)})


def make_csv(path: Path) -> None:
    pa_csv.write_csv(_table(), path)


def make_parquet(path: Path) -> None:
    pq.write_table(_table(), path)


def make_trk(path: Path) -> None:
    sl = _paths()
    tg = Tractogram(
        sl,
        data_per_point={"fa": [np.ones((len(s), 1), np.float32) for s in sl]},
        affine_to_rasmm=np.eye(4),
    )
    TrkFile(tg, header={"dimensions": np.array([40, 40, 40]), "voxel_sizes": np.ones(3)}).save(
        str(path)
    )


def make_tck(path: Path) -> None:
    TckFile(Tractogram(_paths(), affine_to_rasmm=np.eye(4))).save(str(path))


def make_trx(path: Path) -> None:
    sl = _paths()
    tg = Tractogram(ArraySequence(sl), affine_to_rasmm=np.eye(4))
    nv = sum(len(s) for s in sl)
    ref = {
        "NB_VERTICES": nv,
        "NB_STREAMLINES": len(sl),
        "VOXEL_TO_RASMM": np.eye(4, dtype=np.float32),
        "DIMENSIONS": np.array([40, 40, 40], np.uint16),
    }
    trx = tmm.TrxFile.from_tractogram(tg, reference=ref)
    trx.groups["g"] = np.array([0, 1], np.uint32)
    tmm.save(trx, str(path))
    trx.close()


def make_graphml(path: Path) -> None:
    G = nx.random_geometric_graph(60, 0.2, seed=1)
    for n, d in G.nodes(data=True):
        x, y = d.pop("pos")
        d.update(x=40 * x, y=40 * y, z=float(n % 5))
    nx.write_graphml(G, path)


SWC_TEXT = """# a neuron written by hand from the SWC specification
# ORIGINAL_SOURCE hand
# SCALE 1.0 1.0 1.0
1 1 20.0 20.0 20.0 5.0 -1
2 3 24.5 21.0 20.0 1.25 1
3 3 29.0 23.5 21.0 1.0 2
4 3 33.0 27.0 22.5 0.75 3
5 3 31.0 33.0 22.0 0.5 3
6 2 15.0 18.0 19.0 1.5 1
7 2 9.5 14.0 18.5 1.0 6
10 2 4.0 9.0 18.0 0.75 7
"""


def make_swc(path: Path) -> None:
    path.write_text(SWC_TEXT)


def _icosphere() -> trimesh.Trimesh:
    mesh = trimesh.creation.icosphere(subdivisions=2, radius=15.0)
    mesh.apply_translation([20.0, 20.0, 20.0])
    return mesh


def make_obj(path: Path) -> None:
    _icosphere().export(str(path))


def make_stl(path: Path) -> None:
    _icosphere().export(str(path))


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], None]
    geometry: str
    vertices: Callable[[Path], int]


def _n_points(path: Path) -> int:
    return N_POINTS


def _n_streamline_points(path: Path) -> int:
    return sum(len(s) for s in nib.streamlines.load(str(path)).streamlines)


def _n_trx(path: Path) -> int:
    trx = tmm.load(str(path))
    try:
        return int(trx.header["NB_VERTICES"])
    finally:
        trx.close()


CASES = (
    Case("las", make_las, "point_cloud", _n_points),
    Case("ply", make_ply, "point_cloud", _n_points),
    Case("csv", make_csv, "point_cloud", _n_points),
    Case("parquet", make_parquet, "point_cloud", _n_points),
    Case("trk", make_trk, "streamline", _n_streamline_points),
    Case("tck", make_tck, "streamline", _n_streamline_points),
    Case("trx", make_trx, "streamline", _n_trx),
    Case("graphml", make_graphml, "graph", lambda p: 60),
    Case("swc", make_swc, "skeleton", lambda p: 8),
    Case("obj", make_obj, "mesh", lambda p: len(_icosphere().vertices)),
    Case("stl", make_stl, "mesh", lambda p: len(_icosphere().vertices)),
)


def _cli() -> list[str]:
    script = shutil.which("zarr-vectors")
    return [script] if script else [sys.executable, "-m", "zarr_vectors.cli"]


def _paths_of(case: Case, folder: Path) -> tuple[Path, Path, Path]:
    store = folder / ("s.zip" if case.name == "csv" else "s.zarrvectors")
    return folder / f"in.{case.name}", store, folder / f"out.{case.name}"


def _commands(case: Case, folder: Path, full: bool) -> list[list[str]]:
    src, store, out = (str(p) for p in _paths_of(case, folder))
    convert = ["convert", src, store, "--chunk-shape", "10,10,10", "--bin-shape", "2.5,2.5,2.5"]
    rest = [
        ["info", store, "--json"],
        ["pyramid", store, "--ratio", "2,2,2", "--ratio", "4,4,4"],
        ["validate", store, "--level", "5"],
        ["export", store, out],
    ]
    return [convert, *(rest if full else [])]


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def _run_subprocess(args: list[str]) -> Outcome:
    proc = subprocess.run(
        [*_cli(), *args], capture_output=True, text=True, timeout=300, check=False
    )
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def _run_in_process(args: list[str]) -> Outcome:
    result = CliRunner().invoke(app, args)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def _chain(run: Callable[[list[str]], Outcome], commands: list[list[str]]) -> list[Outcome]:
    """Run commands in order, stopping at the first failure."""
    done = []
    for args in commands:
        done.append(run(args))
        if done[-1].code != 0:
            break
    return done


def _check(case: Case, folder: Path, commands: list[list[str]], outcomes: list[Outcome]) -> None:
    failed = [(c, o.stderr) for c, o in zip(commands, outcomes, strict=False) if o.code != 0]
    assert not failed, (case.name, failed)
    assert len(outcomes) == len(commands), case.name
    by_name = {c[0]: o for c, o in zip(commands, outcomes, strict=True)}
    assert "chunk shape" in by_name["convert"].stdout
    if "info" in by_name:
        doc = json.loads(by_name["info"].stdout)
        assert doc["geometry_type"] == case.geometry, case.name
        n = case.vertices(folder / f"in.{case.name}")
        assert doc["levels"][0]["vertex_count"] == n, case.name
        assert "pyramid levels" in by_name["pyramid"].stdout
        assert "OK" in by_name["validate"].stdout
    if "export" in by_name:
        assert "wrote" in by_name["export"].stdout
        assert _paths_of(case, folder)[2].stat().st_size > 0, case.name


def _folders(tmp_path: Path) -> dict[str, Path]:
    folders = {}
    for case in CASES:
        folders[case.name] = tmp_path / case.name
        folders[case.name].mkdir()
        case.make(folders[case.name] / f"in.{case.name}")
    return folders


@pytest.mark.slow
def test_every_format_every_command_in_process(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    for case in CASES:
        commands = _commands(case, folders[case.name], full=True)
        _check(case, folders[case.name], commands, _chain(_run_in_process, commands))


FULL_IN_SUBPROCESS = "las"
"""The format whose whole chain runs as subprocesses; the others run ``convert`` (which imports
their library by name in a fresh interpreter).

A fresh interpreter costs ~1.5 s of CPU in imports, so eight full chains (40 processes) would
take most of a minute on two cores; every command runs in-process on every format above.
"""


@pytest.mark.slow
def test_every_format_in_subprocesses(tmp_path: Path) -> None:
    folders = _folders(tmp_path)
    plans = {c: _commands(c, folders[c.name], full=c.name == FULL_IN_SUBPROCESS) for c in CASES}
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {c: pool.submit(_chain, _run_subprocess, cmds) for c, cmds in plans.items()}
        outcomes = {c: f.result() for c, f in futures.items()}
    for case in CASES:
        _check(case, folders[case.name], plans[case], outcomes[case])


# -- in-process: options, messages and exit codes ----------------------------------------------

runner = CliRunner()


@pytest.fixture
def las_file(tmp_path: Path) -> Path:
    path = tmp_path / "scan.las"
    make_las(path)
    return path


def test_convert_chooses_and_prints_chunk_shape(las_file: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.zarrvectors"
    result = runner.invoke(app, ["convert", str(las_file), str(store), "--pyramid", "2,2,2"])
    assert result.exit_code == 0, result.output
    assert "chunk shape" in result.stderr
    assert "from the data extent" in result.stderr
    meta = zv.open_store(str(store)).attrs
    assert meta["chunk_shape"][0] == meta["chunk_shape"][1]
    assert zv.list_resolution_levels(zv.open_store(str(store))) == [0, 1]
    again = runner.invoke(app, ["convert", str(las_file), str(store)])
    assert again.exit_code == 2
    assert "--overwrite" in again.stderr
    assert runner.invoke(app, ["convert", str(las_file), str(store), "--overwrite"]).exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["IN", "x.txt"], "OUT must end in"),
        (["IN", "s.zarrvectors", "--chunk-shape", "10,a"], "--chunk-shape"),
        (["IN", "s.zarrvectors", "--chunk-shape", "10,-1,1"], "> 0"),
        (["IN", "s.zarrvectors", "--pyramid", "2,0,2"], ">= 1"),
        (["IN", "s.zarrvectors", "--columns", "a,b"], "--columns applies to CSV"),
        (["missing.las", "s.zarrvectors"], "no such file"),
        (["data.xyz", "s.zarrvectors"], "unknown file extension"),
        (["s0.zarrvectors", "s.zarrvectors"], "use 'zarr-vectors export"),
    ],
)
def test_convert_usage_errors(
    las_file: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "data.xyz").write_text("1 2 3\n")
    argv = [str(las_file) if a == "IN" else str(tmp_path / a) for a in args[:2]] + args[2:]
    result = runner.invoke(app, ["convert", *argv])
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_convert_failure_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trk"
    bad.write_bytes(b"TRACK" + b"\x00" * 100)
    result = runner.invoke(app, ["convert", str(bad), str(tmp_path / "s.zarrvectors")])
    assert result.exit_code == 1
    assert "cannot convert" in result.stderr


@pytest.mark.slow
def test_export_and_pyramid_exit_codes(las_file: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.zarrvectors"
    ok = runner.invoke(app, ["convert", str(las_file), str(store), "--chunk-shape", "20,20,20"])
    assert ok.exit_code == 0, ok.output
    wrong_kind = runner.invoke(app, ["export", str(store), str(tmp_path / "x.trk")])
    assert wrong_kind.exit_code == 2
    assert "point_cloud" in wrong_kind.stderr
    assert runner.invoke(app, ["export", str(store), str(tmp_path / "x.obj")]).exit_code == 2
    missing = runner.invoke(
        app, ["export", str(tmp_path / "no.zarrvectors"), str(tmp_path / "a.las")]
    )
    assert missing.exit_code == 2
    assert "no store found" in missing.stderr
    out = tmp_path / "x.laz"
    assert runner.invoke(app, ["export", str(store), str(out)]).exit_code == 0
    assert runner.invoke(app, ["export", str(store), str(out)]).exit_code == 2
    assert len(laspy.read(out).points) == N_POINTS
    # default bins are chunk / 4: ratio 8 does not divide
    bad_ratio = runner.invoke(app, ["pyramid", str(store), "--ratio", "8,8,8"])
    assert bad_ratio.exit_code == 2
    assert "divide" in bad_ratio.stderr
    assert runner.invoke(app, ["pyramid", str(store), "--ratio", "2,x"]).exit_code == 2
    assert (
        runner.invoke(app, ["pyramid", str(tmp_path / "no.zarrvectors"), "-r", "2,2,2"]).exit_code
        == 2
    )
    built = runner.invoke(app, ["pyramid", str(store), "-r", "2,2,2", "-r", "4,4,4"])
    assert built.exit_code == 0, built.output
    assert runner.invoke(app, ["pyramid", str(store), "-r", "2,2,2"]).exit_code == 2
    assert runner.invoke(app, ["pyramid", str(store), "-r", "2,2,2", "--overwrite"]).exit_code == 0


def test_help_texts() -> None:
    for command in ("convert", "export", "pyramid"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
        assert "Example: zarr-vectors" in result.stdout
    assert ".laz" in runner.invoke(app, ["convert", "--help"]).stdout


def test_missing_library_names_the_extra(
    las_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "laspy", None)  # ``import laspy`` now fails
    monkeypatch.delitem(sys.modules, "zarr_vectors.formats.las", raising=False)
    result = runner.invoke(app, ["convert", str(las_file), str(tmp_path / "s.zarrvectors")])
    assert result.exit_code == 1
    assert "zarr-vectors[formats]" in result.stderr
    assert "'laspy'" in result.stderr


@pytest.mark.parametrize("make", ["las", "trk"])
def test_convert_with_lz4_compressor(tmp_path: Path, make: str) -> None:
    source = tmp_path / f"in.{make}"
    {"las": make_las, "trk": make_trk}[make](source)
    plain, fast = tmp_path / "plain.zarrvectors", tmp_path / "fast.zarrvectors"
    assert runner.invoke(app, ["convert", str(source), str(plain)]).exit_code == 0
    result = runner.invoke(app, ["convert", str(source), str(fast), "--compressor", "LZ4"])
    assert result.exit_code == 0, result.output
    doc = json.loads((fast / "0" / "vertices" / "zarr.json").read_text())
    assert doc["codecs"][1]["name"] == "blosc"
    assert doc["codecs"][1]["configuration"]["cname"] == "lz4"
    a, b = zv.open(str(plain)).read(), zv.open(str(fast)).read()
    np.testing.assert_array_equal(a.positions, b.positions)
    for name, col in a.attributes.items():
        np.testing.assert_array_equal(col, b.attributes[name])
    bad = runner.invoke(
        app, ["convert", str(source), str(tmp_path / "x.zarrvectors"), "--compressor", "lzma"]
    )
    assert bad.exit_code == 2
    raw = tmp_path / "raw.zarrvectors"
    result = runner.invoke(app, ["convert", str(source), str(raw), "--compressor", "none"])
    assert result.exit_code == 0, result.output
    doc = json.loads((raw / "0" / "vertices" / "zarr.json").read_text())
    assert [c["name"] for c in doc["codecs"]] == ["vlen-bytes", "crc32c"]
    c = zv.open(str(raw)).read()
    np.testing.assert_array_equal(a.positions, c.positions)
    for name, col in a.attributes.items():
        np.testing.assert_array_equal(col, c.attributes[name])


def test_a_dot_zarr_directory_is_a_store_too(tmp_path: Path) -> None:
    """``.zarr``, the usual name of a Zarr hierarchy, works wherever ``.zarrvectors`` does."""
    source = tmp_path / "in.trk"
    make_trk(source)
    store, back = tmp_path / "tracts.zarr", tmp_path / "back.trk"
    for args in (
        ["convert", str(source), str(store)],
        ["info", str(store)],
        ["validate", str(store)],
        ["export", str(store), str(back)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    first, second = nib.streamlines.load(str(source)), nib.streamlines.load(str(back))
    np.testing.assert_array_equal(first.streamlines.get_data(), second.streamlines.get_data())
    refused = runner.invoke(app, ["convert", str(source), str(tmp_path / "x.txt")])
    assert refused.exit_code == 2
    assert ".zarrvectors, .zarr, .zip" in refused.stderr


# -- fidelity of the files written back -------------------------------------------------------


def _convert_and_export(src: Path, out: Path) -> None:
    store = src.with_suffix(".zarrvectors")
    for args in (["convert", str(src), str(store)], ["export", str(store), str(out)]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.stderr


def test_swc_comes_back_node_for_node_with_its_header(tmp_path: Path) -> None:
    src, out = tmp_path / "n.swc", tmp_path / "back.swc"
    make_swc(src)
    _convert_and_export(src, out)
    lines = [ln for ln in out.read_text().splitlines() if ln.strip()]
    want = [ln for ln in SWC_TEXT.splitlines() if ln.strip()]
    assert [ln for ln in lines if ln.startswith("#")] == [w for w in want if w.startswith("#")]
    got = np.array([ln.split() for ln in lines if not ln.startswith("#")], dtype=float)
    expected = np.array([w.split() for w in want if not w.startswith("#")], dtype=float)
    np.testing.assert_array_equal(got, expected)


def _faces(mesh: trimesh.Trimesh) -> set[tuple[int, ...]]:
    """Faces as vertex triples up to rotation (winding kept)."""
    out = set()
    for f in mesh.faces.tolist():
        k = f.index(min(f))
        out.add(tuple(f[k:] + f[:k]))
    return out


def test_obj_comes_back_vertex_for_vertex(tmp_path: Path) -> None:
    src, out = tmp_path / "m.obj", tmp_path / "back.obj"
    make_obj(src)
    _convert_and_export(src, out)
    a = trimesh.load(str(src), force="mesh", process=False)
    b = trimesh.load(str(out), force="mesh", process=False)
    np.testing.assert_allclose(b.vertices, a.vertices, rtol=0, atol=1e-6)
    assert _faces(b) == _faces(a)


def test_stl_comes_back_as_the_same_surface(tmp_path: Path) -> None:
    src, out = tmp_path / "m.stl", tmp_path / "back.stl"
    make_stl(src)
    _convert_and_export(src, out)
    a = trimesh.load(str(src), force="mesh", process=True)
    b = trimesh.load(str(out), force="mesh", process=True)
    assert len(b.faces) == len(a.faces)
    np.testing.assert_allclose(np.sort(b.vertices, axis=0), np.sort(a.vertices, axis=0), atol=1e-5)
    assert b.volume == pytest.approx(a.volume, rel=1e-6)
    assert b.is_watertight


def test_export_one_skeleton_of_several_to_swc(tmp_path: Path) -> None:
    store = tmp_path / "two.zarrvectors"
    trees = [
        (np.array([[0.0, 0, 0], [1, 1, 1], [2, 1, 1]]), [-1, 0, 1]),
        (np.array([[5.0, 5, 5], [6, 5, 5]]), [-1, 0]),
    ]
    zv.write_skeletons(store, trees, object_ids=[7, 900], chunk_shape=(4.0, 4.0, 4.0))
    out = tmp_path / "one.swc"
    refused = runner.invoke(app, ["export", str(store), str(out)])
    assert refused.exit_code == 1
    assert "--object-id" in refused.stderr
    assert "[7, 900]" in refused.stderr
    done = runner.invoke(app, ["export", str(store), str(out), "--object-id", "900"])
    assert done.exit_code == 0, done.stderr
    rows = np.loadtxt(out, comments="#", ndmin=2)
    np.testing.assert_array_equal(rows[:, 2:5], trees[1][0])
    assert rows[:, 6].tolist() == [-1, rows[0, 0]]
    wrong = runner.invoke(
        app, ["export", str(store), str(tmp_path / "x.graphml"), "--object-id", "7"]
    )
    assert wrong.exit_code == 2
    assert "--object-id applies to SWC files" in wrong.stderr


def test_mesh_file_without_triangles_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "line.obj"
    src.write_text("v 0 0 0\nv 1 0 0\nl 1 2\n")
    store = tmp_path / "line.zarrvectors"
    result = runner.invoke(app, ["convert", str(src), str(store)])
    assert result.exit_code == 1
    assert "holds no triangle faces" in " ".join(result.stderr.split())
    assert not store.exists()
