"""``zarr-vectors append FILE`` and ``zarr-vectors compact`` on real CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app


def _csv(path: Path, rows: np.ndarray) -> Path:
    lines = ["x,y,z,intensity"] + [f"{x},{y},{z},{int(i)}" for x, y, z, i in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_append_file_equals_converting_both(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    a = np.column_stack([np.round(rng.uniform(-9, 9, (40, 3)), 3), rng.integers(0, 99, 40)])
    b = np.column_stack([np.round(rng.uniform(-30, 9, (25, 3)), 3), rng.integers(0, 99, 25)])
    runner = CliRunner()
    store, fresh = tmp_path / "s.zarrvectors", tmp_path / "f.zarrvectors"
    both = _csv(tmp_path / "both.csv", np.concatenate([a, b]))
    res = runner.invoke(
        app, ["convert", str(_csv(tmp_path / "a.csv", a)), str(store), "--chunk-shape", "5,5,5"]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["append", str(store), str(_csv(tmp_path / "b.csv", b))])
    assert res.exit_code == 0, res.output
    assert "65 vertices" in res.output
    res = runner.invoke(app, ["convert", str(both), str(fresh), "--chunk-shape", "5,5,5"])
    assert res.exit_code == 0, res.output
    got, want = zv.read_points(str(store)), zv.read_points(str(fresh))
    assert sorted(map(tuple, got.positions.tolist())) == sorted(map(tuple, want.positions.tolist()))
    assert sorted(got.attributes["intensity"].tolist()) == sorted(
        want.attributes["intensity"].tolist()
    )
    res = runner.invoke(app, ["compact", str(store)])
    assert res.exit_code == 0, res.output
    assert zv.validate(str(store)).ok


def test_append_refusal_is_a_clean_error(tmp_path: Path) -> None:
    store = tmp_path / "p.zarrvectors"
    zv.write_polylines(str(store), [np.zeros((2, 3))], chunk_shape=(5, 5, 5))
    pts = _csv(tmp_path / "a.csv", np.zeros((2, 4)))
    res = CliRunner().invoke(app, ["append", str(store), str(pts)])
    assert res.exit_code == 1
    assert "polyline" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
