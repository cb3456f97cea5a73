"""Killed writes leave nothing behind for long (issue 25, item 10).

Each case kills a real writer process with SIGKILL at a known point (the child announces it on
stdout and waits), then checks: the previous data is intact, ``validate`` names the leftover,
and the next run on the same store (or spill directory) removes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.core.placement import abandoned, leftovers

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL and pid checks are POSIX")

CHUNK = (25.0, 25.0, 25.0)
BINS = (12.5, 12.5, 12.5)
PTS = np.random.default_rng(0).uniform(0, 100, (2_000, 3)).astype(np.float32)

_PRELUDE = """
import sys, time
import numpy as np
import zarr_vectors as zv
pts = np.random.default_rng(1).uniform(0, 100, (2_000, 3)).astype(np.float32)
def hang(*args, **kwargs):
    print("ready", flush=True)
    time.sleep(600)
"""


def _kill_at_ready(script: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = textwrap.dedent(_PRELUDE) + textwrap.dedent(script)
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != b"ready":
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"child did not reach the kill point: {line!r} {err.decode()}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()


def test_killed_overwrite_keeps_the_store_and_is_cleaned_next_run(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    zv.write_points(path, PTS, chunk_shape=CHUNK)
    _kill_at_ready(
        f"""
        import zarr_vectors.core.writer as w
        w.LevelWriter.finish = hang
        zv.write_points({str(path)!r}, pts, chunk_shape=(25.0, 25.0, 25.0), overwrite=True)
        """
    )
    left = leftovers(path)
    assert len(left) == 1
    assert ".zv-staging-" in left[0].name
    assert abandoned(left[0])
    np.testing.assert_array_equal(zv.read_points(path).positions.shape, PTS.shape)
    report = zv.validate(path)
    assert report.ok
    assert "L1.leftover.staging" in {f.check for f in report.warnings}
    zv.write_points(path, PTS, chunk_shape=CHUNK, overwrite=True)  # the next run
    assert leftovers(path) == []
    assert "L1.leftover.staging" not in zv.validate(path).checks()


def test_killed_new_write_leaves_no_store_and_is_cleaned_next_run(tmp_path: Path) -> None:
    path = tmp_path / "new.zarrvectors"
    _kill_at_ready(
        f"""
        import zarr_vectors.core.writer as w
        w.LevelWriter.finish = hang
        zv.write_points({str(path)!r}, pts, chunk_shape=(25.0, 25.0, 25.0))
        """
    )
    assert not path.exists()  # built aside: nothing half-written at the path
    assert len(leftovers(path)) == 1
    zv.write_points(path, PTS, chunk_shape=CHUNK)
    assert leftovers(path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.zarrvectors"]


def test_killed_pyramid_rebuild_keeps_old_levels(tmp_path: Path) -> None:
    path = tmp_path / "p.zarrvectors"
    zv.write_points(path, PTS, chunk_shape=CHUNK, bin_shape=BINS)
    zv.build_pyramid(path, [(2, 2, 2)])
    before = zv.read_points(path, level=1).positions
    _kill_at_ready(
        f"""
        import zarr_vectors.multiscale.pyramid as p
        p.swap_levels = hang
        zv.build_pyramid({str(path)!r}, [(2, 2, 2)], overwrite=True)
        """
    )
    np.testing.assert_array_equal(zv.read_points(path, level=1).positions, before)
    hidden = [p.name for p in path.iterdir() if p.name.startswith(".zv-")]
    assert len(hidden) == 1
    report = zv.validate(path, level=5)
    assert report.ok, report
    assert "L1.leftover.staging" in {f.check for f in report.warnings}
    zv.build_pyramid(path, [(2, 2, 2)], overwrite=True)
    assert [p.name for p in path.iterdir() if p.name.startswith(".zv-")] == []
    assert zv.validate(path, level=5).checks() == set()


def test_killed_streaming_writer_spill_is_removed_next_run(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    out = tmp_path / "w.zarrvectors"
    _kill_at_ready(
        f"""
        w = zv.open_writer({str(out)!r}, "point_cloud", chunk_shape=(25.0, 25.0, 25.0),
                           spill_dir={str(spill)!r})
        w.append(pts)
        hang()
        """
    )
    stale = [p for p in spill.iterdir() if p.name.startswith("zv-spill-")]
    assert len(stale) == 1
    assert any(stale[0].rglob("*.npy"))
    with zv.open_writer(out, "point_cloud", chunk_shape=CHUNK, spill_dir=spill) as w:
        assert not stale[0].exists()  # removed when the next writer starts
        w.append(PTS)
    assert list(spill.iterdir()) == []
    assert len(zv.read_points(out).positions) == len(PTS)
