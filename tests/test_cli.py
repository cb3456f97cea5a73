"""The ``zarr-vectors`` command line: ``info`` and ``validate``, in-process and as a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import zarr
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app

N_POINTS = 120


@dataclass(frozen=True)
class Written:
    """A store on disk and what ``write_points`` reported."""

    path: Path
    summary: zv.WriteSummary


def _write(path: Path, zarr_format: int = 3) -> Written:
    rng = np.random.default_rng(0)
    summary = zv.write_points(
        str(path),
        rng.uniform(0, 50, (N_POINTS, 3)),
        chunk_shape=(25, 25, 25),
        bin_shape=(5, 5, 5),
        attributes={"intensity": rng.random(N_POINTS).astype("f4")},
        vertex_object_ids=rng.integers(0, 7, N_POINTS),
        axis_units="micrometer",
        zarr_format=zarr_format,  # type: ignore[arg-type]
    )
    return Written(path, summary)


@pytest.fixture(params=[3, 2], ids=["v3", "v2"])
def written(request: pytest.FixtureRequest, tmp_path: Path) -> Written:
    return _write(tmp_path / "pts.zarrvectors", request.param)


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    w = _write(tmp_path / "bad.zarrvectors")
    zarr.open_group(str(w.path), mode="r+").attrs["geometry_type"] = "polygon"
    return w.path


def _zip(directory: Path) -> Path:
    dest = directory.with_suffix(".zip")
    with zipfile.ZipFile(dest, "w") as zf:
        for f in sorted(directory.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(directory).as_posix())
    return dest


runner = CliRunner()


# ---- in-process (CliRunner) ---------------------------------------------------------------


def test_info_table(written: Written) -> None:
    result = runner.invoke(app, ["info", str(written.path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in (
        "point_cloud",
        "ZVF 1.0",
        "micrometer",
        "intensity",
        "<f4",
        str(N_POINTS),
        str(written.summary.chunk_count),
        "size on disk",
        "origin [0, 0, 0]",
    ):
        assert text in out, (text, out)


def test_info_json(written: Written) -> None:
    result = runner.invoke(app, ["info", str(written.path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    level = doc["levels"][0]
    assert doc["geometry_type"] == "point_cloud"
    assert doc["spatial_dims"] == 3
    assert doc["chunk_shape"] == [25.0, 25.0, 25.0]
    assert doc["chunk_grid"] == {"origin": [0, 0, 0], "shape": [2, 2, 2]}
    assert level["vertex_count"] == N_POINTS
    assert level["object_count"] == written.summary.object_count == 7
    assert level["chunk_count"] == written.summary.chunk_count
    assert level["attributes"][0] == {"array": "attributes/intensity", "dtype": "<f4", "width": 1}
    assert doc["size_bytes"] > 0


def test_info_zip(tmp_path: Path) -> None:
    path = _zip(_write(tmp_path / "z.zarrvectors").path)
    result = runner.invoke(app, ["info", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["size_bytes"] == path.stat().st_size


def test_info_missing_store(tmp_path: Path) -> None:
    result = runner.invoke(app, ["info", str(tmp_path / "nope.zarrvectors")])
    assert result.exit_code == 2
    # rich wraps the message at the terminal width, inside the path when it is long
    assert "nope.zarrvectors" in result.stderr.replace("\n", "")


def test_info_invalid_store_points_to_validate(damaged: Path) -> None:
    result = runner.invoke(app, ["info", str(damaged)])
    assert result.exit_code == 1
    assert "polygon" in result.stderr
    assert "zarr-vectors validate" in result.stderr


def test_info_unknown_version_warns(tmp_path: Path) -> None:
    w = _write(tmp_path / "v.zarrvectors")
    zarr.open_group(str(w.path), mode="r+").attrs["zarr_vectors_version"] = "9.9"
    result = runner.invoke(app, ["info", str(w.path)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr
    assert "9.9" in result.stderr


def test_validate_ok(written: Written) -> None:
    result = runner.invoke(app, ["validate", str(written.path)])
    assert result.exit_code == 0, result.output
    assert "OK" in result.stdout


def test_validate_errors_exit_1(damaged: Path) -> None:
    result = runner.invoke(app, ["validate", str(damaged)])
    assert result.exit_code == 1
    assert "L2.seed.1" in result.stdout
    assert "FAILED" in result.stdout


def test_validate_warning_only_exits_0(tmp_path: Path) -> None:
    w = _write(tmp_path / "v.zarrvectors")
    zarr.open_group(str(w.path), mode="r+").attrs["zarr_vectors_version"] = "9.9"
    result = runner.invoke(app, ["validate", str(w.path)])
    assert result.exit_code == 0, result.output
    assert "L2.root.version" in result.stdout


def test_validate_json(damaged: Path) -> None:
    result = runner.invoke(app, ["validate", str(damaged), "--json", "--level", "3"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    assert doc["level"] == 3
    checks = {f["check"]: f["severity"] for f in doc["findings"]}
    assert checks["L2.seed.1"] == "error"
    assert "validate.not_implemented" not in checks  # L3 runs


@pytest.mark.parametrize("args", [["--level", "0"], ["--level", "6"], ["--bogus"], []])
def test_validate_usage_errors_exit_2(written: Written, args: list[str]) -> None:
    store = [] if args == [] else [str(written.path)]
    result = runner.invoke(app, ["validate", *store, *args])
    assert result.exit_code == 2


def test_validate_missing_store_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.zarrvectors")])
    assert result.exit_code == 2
    assert "no store found" in result.stderr
    json_result = runner.invoke(app, ["validate", str(tmp_path / "nope.zip"), "--json"])
    assert json_result.exit_code == 2
    assert json.loads(json_result.stdout)["findings"][0]["check"] == "L1.store.missing"


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "info" in result.stdout
    assert "validate" in result.stdout


# ---- subprocess ----------------------------------------------------------------------------


def _cli() -> list[str]:
    script = shutil.which("zarr-vectors")
    return [script] if script else [sys.executable, "-m", "zarr_vectors.cli"]


def _run(*args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "zarr_vectors.cli"] if module else _cli()
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("module", [False, True], ids=["script", "python-m"])
def test_subprocess_exit_codes(tmp_path: Path, damaged: Path, module: bool) -> None:
    good = _write(tmp_path / "good.zarrvectors").path
    assert _run("validate", str(good), module=module).returncode == 0
    assert _run("validate", str(damaged), module=module).returncode == 1
    missing = _run("validate", str(tmp_path / "nope"), module=module)
    assert missing.returncode == 2
    assert "no store found" in missing.stderr


@pytest.mark.slow
def test_subprocess_json_and_info(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.zarrvectors").path
    report = _run("validate", str(good), "--json")
    assert json.loads(report.stdout)["ok"] is True
    info = _run("info", str(good), "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["levels"][0]["vertex_count"] == N_POINTS
    table = _run("info", str(good))
    assert str(N_POINTS) in table.stdout
    assert _run("--help").returncode == 0
