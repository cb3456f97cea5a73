"""``zarr-vectors query``: count, explain and --out against brute force."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.query.predicates import parse_where_text

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(5)
    data = {
        "pos": (rng.random((3000, 3)) * 100).astype(np.float32),
        "intensity": rng.random(3000),
        "label": rng.integers(0, 9, 3000),
    }
    path = str(tmp_path_factory.mktemp("q") / "s.zarrvectors")
    zv.write_points(
        path,
        data["pos"],
        chunk_shape=(25, 25, 25),
        attributes={"intensity": data["intensity"], "label": data["label"]},
    )
    return path, data


def _mask(data: dict[str, np.ndarray]) -> np.ndarray:
    p = data["pos"]
    m = np.all((p >= 0) & (p < 50), axis=1)
    return m & (data["intensity"] >= 0.5) & np.isin(data["label"], [3, 7])


ARGS = ["--bbox", "0,0,0,50,50,50", "--where", "intensity>=0.5", "--where", "label in 3,7"]


def test_count(store: tuple[str, dict[str, np.ndarray]]) -> None:
    path, data = store
    res = RUNNER.invoke(app, ["query", path, *ARGS, "--count"])
    assert res.exit_code == 0, res.output
    assert int(res.stdout.strip()) == int(_mask(data).sum())


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_out(store: tuple[str, dict[str, np.ndarray]], tmp_path: Path, suffix: str) -> None:
    path, data = store
    out = tmp_path / f"hits{suffix}"
    res = RUNNER.invoke(app, ["query", path, *ARGS, "--out", str(out)])
    assert res.exit_code == 0, res.output
    if suffix == ".csv":
        table = np.genfromtxt(out, delimiter=",", names=True)
        xyz = np.column_stack([table["x"], table["y"], table["z"]]).astype(np.float32)
        intensity = table["intensity"]
    else:
        with np.load(out) as z:
            xyz = np.column_stack([z["x"], z["y"], z["z"]])
            intensity = z["intensity"]
    m = _mask(data)
    assert sorted(map(tuple, xyz.tolist())) == sorted(map(tuple, data["pos"][m].tolist()))
    assert sorted(intensity.tolist()) == sorted(data["intensity"][m].tolist())


def test_explain_and_errors(store: tuple[str, dict[str, np.ndarray]]) -> None:
    path, _ = store
    res = RUNNER.invoke(app, ["query", path, "--where", "label==3", "--explain"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["chunks_read"] <= plan["chunks_total"]
    bad = RUNNER.invoke(app, ["query", path, "--where", "nope>1", "--count"])
    assert bad.exit_code == 2
    assert "no attribute 'nope'" in bad.stderr


def test_where_text_parsing() -> None:
    got = parse_where_text(["a>=0.5", "a<2", "b in 1,2", "c==x", "d>1", "e<=3"])
    assert got["a"] == (0.5, 2.0)
    assert got["b"] == {1, 2}
    assert got["c"] == "x"
    assert got["d"][0] == np.nextafter(1.0, 2.0)
    assert got["e"] == (None, np.nextafter(3.0, 4.0))
    with pytest.raises(zv.InvalidInputError, match="cannot parse"):
        parse_where_text(["a ~ 3"])


def _printed_vertices(output: str) -> int:
    return int(output.strip().split()[0])  # "<n> vertices selected"


def test_count_is_what_the_read_returns_with_budget_and_limit(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    pos = rng.random((2000, 2)) * 32
    path = str(tmp_path / "p.zarrvectors")
    zv.write_points(path, pos, chunk_shape=(8, 8), bin_shape=(1, 1))
    zv.build_pyramid(path, [(8, 8)])  # level 1: one point per non-empty chunk (16)
    for extra in (["--max-vertices", "100"], ["--limit", "7"], ["--limit", "5000"]):
        counted = RUNNER.invoke(app, ["query", path, *extra, "--count"])
        read = RUNNER.invoke(app, ["query", path, *extra])
        assert counted.exit_code == 0, counted.output
        assert read.exit_code == 0, read.output
        assert int(counted.stdout) == _printed_vertices(read.stdout)
    assert int(RUNNER.invoke(app, ["query", path, "--max-vertices", "100", "--count"]).stdout) == 16
    assert zv.count(path, max_vertices=100) == 16 == zv.count(path, level=1)


def test_count_with_limit_on_a_graph_counts_the_limited_vertices(tmp_path: Path) -> None:
    # graphs: --limit counts objects (components), --count vertices
    pos = np.array([[0.5, 0.5], [1.5, 0.5], [2.5, 0.5], [5.5, 5.5], [6.5, 5.5]])
    path = str(tmp_path / "g.zarrvectors")
    zv.write_graph(path, pos, [[0, 1], [1, 2], [3, 4]], chunk_shape=(4, 4))
    counted = RUNNER.invoke(app, ["query", path, "--limit", "1", "--count"])
    assert counted.exit_code == 0, counted.output
    assert int(counted.stdout) == len(zv.read_graph(path, limit=1).positions) == 3
