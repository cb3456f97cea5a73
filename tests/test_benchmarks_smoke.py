"""Smoke test of the benchmark scripts at tiny sizes, without upstream.

Each script's ``main`` runs in-process on small data (20k points, 500 streamlines, 20 skeletons
of 200 nodes and a 5k-node graph, 3 meshes of ~13k vertices in all) with one repeat; the test
checks that it produced a result per store and peer, that every correctness check of *our*
results passed, that the targets were evaluated, and that the markdown tables were printed.
Timings at this size mean nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the benchmarks package lives beside src/, not inside it
    sys.path.insert(0, str(REPO))

for _mod in ("pyarrow", "laspy", "lazrs", "trx", "nibabel", "zstandard"):
    pytest.importorskip(_mod)

from benchmarks import bench_meshes, bench_points, bench_pyramid, bench_skeletons, bench_streamlines

# trx-python leaves the TemporaryDirectory of a loaded .trx to the finaliser (ResourceWarning).
pytestmark = [
    pytest.mark.slow,
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
    assert extra["rewrite_s"] > 0
    assert all(r["correct"] for r in doc["results"])
    assert any("write ≤ 1.5× Parquet" in t["name"] for t in doc["targets"])
    assert any("just-deleted path ≤ 1.5× Parquet" in t["name"] for t in doc["targets"])
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


def test_bench_skeletons_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--n", "20", "--nodes", "200", "--graph-nodes", "5000", "--ids", "5"]
    rc, doc = _run(bench_skeletons.main, [*args, "--configs", "250"], tmp_path)
    assert rc == 0
    res = {(r["task"], r["fmt"]): r for r in doc["results"]}
    assert {("skeletons", "zv c250"), ("skeletons", "swc (file per skeleton)")} <= set(res)
    assert ("graph", "zv c250") in res
    for key in (("skeletons", "zv c250"), ("graph", "zv c250")):
        _assert_ours_correct(res[key])
    skel = res["skeletons", "zv c250"]
    assert skel["object_read_s"] > 0
    extra = dict(skel["extra"])
    assert extra["n_object_queries"] == 5
    assert extra["object_reads_only_own_chunks"] == 1.0  # a one-skeleton read stays in its chunks
    assert extra["object_chunks_read_open_mean"] >= 1
    assert res["skeletons", "swc (file per skeleton)"]["correct"]
    assert res["graph", "zv c250"]["bbox_read_s"] > 0
    names = [t["name"] for t in doc["targets"]]
    assert any("one skeleton by id < 5 ms" in n for n in names)
    out = capsys.readouterr().out
    assert "| one skeleton by id (open Reader, median) |" in out
    assert "| bbox central 1 % (functional) |" in out


def test_bench_skeletons_without_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--n", "10", "--nodes", "100", "--graph-nodes", "0", "--ids", "3", "--no-swc"]
    rc, doc = _run(bench_skeletons.main, [*args, "--configs", "250"], tmp_path)
    assert rc == 0
    assert {r["task"] for r in doc["results"]} == {"skeletons"}
    _assert_ours_correct(doc["results"][0])
    assert doc["extra"]["graph_box"] is None
    assert "no graph" in capsys.readouterr().out


def test_bench_meshes_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trimesh")
    args = ["--n", "10000", "--ids", "3", "--configs", "100"]
    rc, doc = _run(bench_meshes.main, args, tmp_path)
    assert rc == 0
    res = _by_fmt(doc)
    assert {"zv c100", "ply-binary", "ply-per-mesh"} <= set(res)
    ours = res["zv c100"]
    _assert_ours_correct(ours)
    assert ours["object_read_s"] > 0
    extra = dict(ours["extra"])
    assert extra["object_reads_only_own_chunks"] == 1.0
    assert extra["object_chunks_read_open_mean"] == pytest.approx(
        extra["object_chunks_occupied_mean"]
    )
    assert all(r["correct"] for r in doc["results"])
    names = [t["name"] for t in doc["targets"]]
    assert any("touches only its chunks" in n for n in names)
    assert "| one mesh by id (open Reader, median) |" in capsys.readouterr().out


def test_read_cpu_times_full_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np
    from benchmarks import read_cpu

    import zarr_vectors as zv

    store = tmp_path / "s.zv"
    zv.write_skeletons(store, np.zeros((3, 3)), np.array([-1, 0, 1]), chunk_shape=(1, 1, 1))
    assert read_cpu.main(["skeleton", str(store), "--repeat", "2"]) == 0
    kind, _, cpu, _, _, wall, _ = capsys.readouterr().out.split()
    assert kind == "skeleton"
    assert float(cpu) >= 0
    assert float(wall) > 0


def test_paired_reads_alternate_and_summarise() -> None:
    from benchmarks.ours import paired_reads

    calls: list[str] = []

    def ours() -> None:
        calls.append("ours")

    def theirs() -> float:
        calls.append("theirs")
        return 0.25

    paired = paired_reads(ours, theirs, 5)
    # each round both, the first of a round alternating: neither always reads first
    assert calls == ["ours", "theirs", "theirs", "ours"] * 2 + ["ours", "theirs"]
    assert len(paired.ours) == len(paired.theirs) == 5
    assert all(t > 0 for t in paired.ours)
    np.testing.assert_allclose(paired.speedups, 0.25 / np.asarray(paired.ours))
    extra = paired.extra()
    assert extra["paired_rounds"] == 5
    assert extra["paired_upstream_read_s"] == 0.25
    assert extra["paired_speedup_min"] <= extra["paired_speedup"] <= extra["paired_speedup_max"]


def test_full_read_target_judges_paired_rounds() -> None:
    from benchmarks.peers import BenchResult

    def result(fmt: str, read_s: float, extra: dict[str, float]) -> BenchResult:
        return BenchResult(
            "zarr-vectors", "x", fmt, "skeletons", 10, 1, None, read_s, None, None, 1, 1, True,
            "ok", extra=tuple(extra.items()),
        )  # fmt: skip

    up = result("zv-upstream", 0.16, {})
    lone = result("zv c250", 0.02, {})  # 8x in separate runs, no paired rounds
    paired_extra = {
        "paired_read_s": 0.015,
        "paired_upstream_read_s": 0.18,
        "paired_speedup": 12.0,
        "paired_speedup_min": 9.0,
        "paired_speedup_max": 14.0,
        "paired_rounds": 9.0,
    }
    paired = result("zv c250", 0.02, paired_extra)
    (alone,) = bench_skeletons.evaluate([up, lone])
    assert not alone.passed
    (verdict,) = bench_skeletons.evaluate([up, paired])
    assert verdict.passed
    assert "9 alternating rounds" in verdict.detail
    assert "median 12.0×" in verdict.detail
    assert "8.0× faster" in verdict.detail  # the separate runs are still reported
    # a configuration stored with another chunk shape than upstream's run is not held against it
    assert bench_skeletons.evaluate([up, paired], compared={"zv c125"}) == []
