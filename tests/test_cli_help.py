"""The command line's own surface: --version, help pages, install hints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app

SRC = Path(zv.__file__).resolve().parent.parent
COMMANDS = ["info", "validate", "convert", "export", "pyramid", "render", "view"]


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"zarr-vectors {zv.__version__}"


def test_summary_line_names_every_job() -> None:
    out = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    for word in ("Convert", "export", "inspect", "check", "pyramids", "render", "view"):
        assert word in out
    assert "Inspect and check" not in out


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_shows_no_type_on_flags(command: str) -> None:
    args = [command, "--help"] if command else ["--help"]
    out = CliRunner().invoke(app, args, env={"COLUMNS": "200"}).output
    assert "--help" in out
    assert "<bool>" not in out
    if command == "validate":  # options that take a value keep their type
        assert "<int range>" in out


def _without(tmp_path: Path, package: str) -> dict[str, str]:
    """An environment in which ``package`` is not installed (its import fails)."""
    fake = tmp_path / "blocked" / package
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{package}'\", name='{package}')\n"
    )
    path = os.pathsep.join([str(fake.parent), str(SRC)])
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200", "NO_COLOR": "1"}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "zarr_vectors.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_viz_install_hint_keeps_its_extra(tmp_path: Path) -> None:
    store = tmp_path / "p.zarrvectors"
    zv.write_points(str(store), np.zeros((2, 3)), chunk_shape=(1, 1, 1))
    done = _run(_without(tmp_path, "matplotlib"), "render", str(store))
    assert done.returncode == 2
    assert "pip install 'zarr-vectors[viz]'" in done.stderr


def test_formats_install_hint_keeps_its_extra(tmp_path: Path) -> None:
    source = tmp_path / "scan.las"
    source.write_bytes(b"LASF")
    done = _run(
        _without(tmp_path, "laspy"), "convert", str(source), str(tmp_path / "o.zarrvectors")
    )
    assert done.returncode != 0
    assert "zarr-vectors[formats]" in " ".join(done.stderr.split())
