"""Smoke test of the benchmark scripts at tiny sizes, without upstream.

Each script's ``main`` runs in-process on small data (20k points, 500 streamlines) with one
repeat; the test checks that it produced a result per store and peer, that every correctness
check of *our* results passed, that the targets were evaluated, and that the markdown tables
were printed.  Timings at this size mean nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the benchmarks package lives beside src/, not inside it
    sys.path.insert(0, str(REPO))

for _mod in ("pyarrow", "laspy", "lazrs", "trx", "nibabel", "zstandard"):
    pytest.importorskip(_mod)

from benchmarks import bench_points, bench_pyramid, bench_streamlines

# trx-python leaves the TemporaryDirectory of a loaded .trx to the finaliser (ResourceWarning).
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def _run(main: Any, args: list[str], tmp_path: Path) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "result.json"
    common = ["--repeat", "1", "--no-upstream", "--workdir", str(tmp_path / "w")]
    rc = main([*args, *common, "--json", str(out)])
    return rc, json.loads(out.read_text())


def _by_fmt(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["fmt"]: r for r in doc["results"]}


def _assert_ours_correct(res: dict[str, Any]) -> None:
    assert res["library"] == "zarr-vectors"
    assert res["correct"], res["note"]
    assert res["checks"]
    assert all(ok for _name, ok in res["checks"])
    assert res["size_bytes"] > 0
    assert res["write_s"] > 0
    assert res["read_s"] > 0


def test_bench_points_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _run(
        bench_points.main, ["--n", "20000", "--boxes", "5", "--configs", "250/50"], tmp_path
    )
    assert rc == 0
    res = _by_fmt(doc)
    assert {"zv c250/b50", "parquet-zstd", "parquet-zstd-zsorted", "npy", "laz-lazrs"} <= set(res)
    ours = res["zv c250/b50"]
    _assert_ours_correct(ours)
    extra = dict(ours["extra"])
    assert extra["n_boxes"] == 5
    assert 0.005 < extra["bbox_random_frac_mean"] < 0.02  # boxes hold ~1 % of the points
    assert extra["bbox_random_open_s"] > 0
    assert all(r["correct"] for r in doc["results"])
    assert any("write ≤ 1.5× Parquet" in t["name"] for t in doc["targets"])
    out = capsys.readouterr().out
    assert "| write |" in out
    assert "ours/parquet-zstd" in out


def test_bench_streamlines_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--n", "500", "--boxes", "5", "--ids", "5", "--configs", "40/20"]
    rc, doc = _run(bench_streamlines.main, args, tmp_path)
    assert rc == 0
    res = _by_fmt(doc)
    assert {"zv c40/b20", "trx-deflate", "trx-stored", "tck", "trx-stored+zstd-3"} <= set(res)
    ours = res["zv c40/b20"]
    _assert_ours_correct(ours)
    assert ours["object_read_s"] > 0
    extra = dict(ours["extra"])
    assert extra["n_object_queries"] == 5
    assert extra["bbox_random_hits_mean"] == pytest.approx(5, abs=1)  # 1 % of 500
    names = [t["name"] for t in doc["targets"]]
    assert any("one streamline by id" in n for n in names)
    assert any("zstd TRX" in n for n in names)
    assert "| one streamline by id (open Reader, median) |" in capsys.readouterr().out


def test_bench_pyramid_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, doc = _run(bench_pyramid.main, ["--n", "20000", "--configs", "200/50"], tmp_path)
    assert rc == 0
    (res,) = doc["results"]
    _assert_ours_correct(res)
    extra = dict(res["extra"])
    assert 0 < extra["level2_vertices"] < extra["level1_vertices"] < 20000
    assert extra["build_s"] > 0
    assert len(doc["targets"]) == 1
    assert "build / write" in capsys.readouterr().out
