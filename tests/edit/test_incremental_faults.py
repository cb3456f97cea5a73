"""Chunk-incremental streamline appends killed at random points, and two appenders at once.

A killed append leaves the old or the new state (never a mix) and a store that validates; the
next editor removes what the kill left.  Two appenders both land (one waits for the other's
lock) or, with a short lock timeout, one is refused with ``StoreLockedError``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.edit import incremental
from zarr_vectors.edit.incremental import AppendPath

CHILD = """
import sys, time, numpy as np, zarr_vectors as zv
from zarr_vectors.edit import incremental
data = np.load(sys.argv[2])
print("ready", flush=True)
t0 = time.perf_counter()
zv.append_streamlines(
    sys.argv[1], data["pos"], offsets=data["off"], attributes={"w": data["w"]},
    timeout=float(sys.argv[3]),
)
print(incremental.LAST_PATH[-1].value, time.perf_counter() - t0, flush=True)
"""

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path("src").absolute()), "."])}


def _child(store: Path, data: Path, timeout: float = 120) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store), str(data), str(timeout)],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out.decode(), err.decode()


def _paths(rng: np.random.Generator, n: int, lo: float, hi: float) -> dict[str, np.ndarray]:
    lens = rng.integers(5, 30, n)
    off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    start = rng.uniform(lo, hi, (n, 1, 3))
    steps = rng.normal(0, 1.5, (int(off[-1]), 3))
    pos = np.concatenate(
        [start[i, 0] + np.cumsum(steps[off[i] : off[i + 1]], axis=0) for i in range(n)]
    )
    return {"pos": pos, "off": off, "w": rng.normal(size=len(pos)).astype(np.float32)}


def _state(store: Path) -> str:
    """Digest of everything a whole read returns; the store must validate clean."""
    assert zv.validate(str(store)).ok
    got = zv.read_streamlines(str(store))
    h = hashlib.sha256()
    for part in (got.object_ids, got.offsets, got.positions, got.attributes["w"]):
        h.update(np.ascontiguousarray(part).tobytes())
    return h.hexdigest()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, str, str]:
    """A streamline store, an append (that grows the grid) and both states' digests."""
    rng = np.random.default_rng(0)
    a = _paths(rng, 6_000, 0, 100)
    b = _paths(rng, 1_500, -40, 140)
    store = tmp_path / "s.zarr"
    zv.write_streamlines(
        str(store), a["pos"], offsets=a["off"], attributes={"w": a["w"]}, chunk_shape=(10,) * 3
    )
    data = tmp_path / "b.npz"
    np.savez(data, **b)
    old = _state(store)
    probe = tmp_path / "probe.zarr"
    shutil.copytree(store, probe)
    zv.append_streamlines(str(probe), b["pos"], offsets=b["off"], attributes={"w": b["w"]})
    assert incremental.LAST_PATH[-1] is AppendPath.CHUNKS
    new = _state(probe)
    shutil.rmtree(probe)
    return store, data, old, new


def _leftovers(store: Path) -> list[str]:
    return sorted(p.name for p in store.parent.iterdir() if p.name != store.name)


@pytest.mark.slow
def test_sigkill_at_random_points_of_an_incremental_append(
    setup: tuple[Path, Path, str, str],
) -> None:
    store, data, old, new = setup
    pristine = store.with_name("pristine.zarr")
    shutil.copytree(store, pristine)
    rc, out, err = _finish(_child(store, data))
    assert rc == 0, err
    path, took = out.split()[-2:]
    assert path == AppendPath.CHUNKS.value
    assert _state(store) == new
    rng = np.random.default_rng(7)
    seen = {"old": 0, "new": 0}
    for frac in rng.uniform(0.0, 1.2, 5):
        shutil.rmtree(store)
        shutil.copytree(pristine, store)
        proc = _child(store, data)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"  # imports done: the append starts
        time.sleep(float(took) * float(frac))
        proc.send_signal(signal.SIGKILL)
        _finish(proc)
        now = _state(store)
        assert now in (old, new), frac
        seen["old" if now == old else "new"] += 1
        rc, _, err = _finish(_child(store, data))  # the next editor cleans up and appends
        assert rc == 0, err
        assert _leftovers(store) == ["b.npz", "pristine.zarr"]
    assert seen["old"] >= 1  # some kill landed before the commit


@pytest.mark.slow
def test_two_incremental_appenders_both_land(setup: tuple[Path, Path, str, str]) -> None:
    store, data, _old, _new = setup
    procs = [_child(store, data), _child(store, data)]
    for p in procs:
        rc, out, err = _finish(p)
        assert rc == 0, err
        assert out.split()[-2] == AppendPath.CHUNKS.value
    got = zv.read_streamlines(str(store))
    assert zv.validate(str(store)).ok
    assert got.object_ids.tolist() == list(range(6_000 + 2 * 1_500))
    b = np.load(data)
    n_b = len(b["pos"])
    start = int(got.offsets[6_000])
    for k in range(2):
        part = got.positions[start + k * n_b : start + (k + 1) * n_b]
        assert np.array_equal(part, b["pos"].astype(got.positions.dtype))
    assert _leftovers(store) == ["b.npz"]


def test_second_incremental_appender_refused_or_lands(setup: tuple[Path, Path, str, str]) -> None:
    store, data, old, new = setup
    procs = [_child(store, data, 120), _child(store, data, 0.01)]
    results = [_finish(p) for p in procs]
    assert results[0][0] == 0, results[0][2]
    rc, _out, err = results[1]
    n = len(zv.read_streamlines(str(store)).object_ids)
    if rc == 0:  # the short-timeout appender got the lock first or after the other
        assert n == 6_000 + 2 * 1_500
    else:
        assert "StoreLockedError" in err
        assert n == 6_000 + 1_500
        assert _state(store) == new
    assert old != new
