"""The living-store benchmark runs at tiny sizes and takes the paths it reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks import bench_edit


@pytest.mark.slow
def test_bench_edit_smoke(tmp_path: Path) -> None:
    out = tmp_path / "edit.json"
    args = ["--points", "20000", "--streamlines", "300", "--new-streamlines", "5"]
    rc = bench_edit.main(
        [*args, "--repeat", "1", "--workdir", str(tmp_path / "w"), "--json", str(out)]
    )
    assert rc == 0
    rows = json.loads(out.read_text())
    assert [r["name"].split(" ")[0] for r in rows] == ["(b)", "(b)", "(a)", "(a)", "(c)"]
    assert [r["path"] for r in rows] == ["chunks"] * 4 + ["rewrite"]
    for r in rows:
        assert r["edit"]["cpu_s"] > 0
        assert r["fresh"]["cpu_s"] > 0
        assert r["wall_ratio"] == r["edit"]["wall_s"] / r["fresh"]["wall_s"]
    assert not (tmp_path / "w").exists()
