"""Killed edits and concurrent writers: the store is always the old or the new state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.edit.lock import lock_path, store_lock

CHILD = """
import sys, numpy as np, zarr_vectors as zv
op = sys.argv[1]
if op == "append":
    zv.append_points(sys.argv[2], np.load(sys.argv[3]), timeout=float(sys.argv[4]))
elif op == "delete":
    zv.delete_objects(sys.argv[2], np.load(sys.argv[3]))
elif op == "compact":
    zv.compact(sys.argv[2])
elif op == "add_attribute":
    zv.add_attribute(sys.argv[2], "extra", np.ones(60_000, np.float32))
print("done", flush=True)
"""

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path("src").absolute()), "."])}


def _child(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen[bytes], timeout: float = 240) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.decode()


def _state(store: str) -> list[list[float]]:
    assert zv.validate(store).ok
    return sorted(zv.read_points(store).positions.tolist())


def _leftovers(store: Path) -> list[str]:
    return sorted(p.name for p in store.parent.iterdir() if p.name != store.name)


@pytest.fixture
def big(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    store = tmp_path / "s.zarr"
    zv.write_points(str(store), rng.uniform(-50, 50, (60_000, 3)), chunk_shape=(10, 10, 10))
    extra = tmp_path / "b.npy"
    np.save(extra, rng.uniform(-80, 80, (5_000, 3)))  # grows the grid on both sides
    return store, extra


@pytest.mark.parametrize(
    "inside",
    [
        pytest.param(False, id="grid-grows"),
        # the same kill-and-check loop on the copy-on-write chunk path: slow, and grid-grows
        # keeps the behaviour in the default run
        pytest.param(True, id="chunks-only", marks=pytest.mark.slow),
    ],
)
def test_sigkill_during_append_leaves_old_or_new(big: tuple[Path, Path], inside: bool) -> None:
    store, extra = big
    if inside:  # lands in existing chunks: the copy-on-write chunk path
        np.save(extra, np.random.default_rng(5).uniform(-49, 49, (5_000, 3)))
    b = np.load(extra).tolist()
    t0 = time.monotonic()
    done = _child("append", str(store), str(extra), "60")
    rc, err = _finish(done)
    assert rc == 0, err
    full = time.monotonic() - t0
    states = 2  # how many appends the store may hold so far
    seen_kill_mid = 0
    for frac in (0.35, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        old = _state(str(store))
        proc = _child("append", str(store), str(extra), "60")
        time.sleep(full * frac)
        proc.send_signal(signal.SIGKILL)
        _finish(proc)
        now = _state(str(store))
        new = sorted(old + b)
        assert now in (old, new), frac
        if now == old:
            seen_kill_mid += 1
        else:
            states += 1
    assert len(_state(str(store))) == 60_000 + 5_000 * (states - 1)
    zv.compact(str(store))  # the next editor cleans up whatever a kill left
    assert _leftovers(store) == ["b.npy"]
    assert seen_kill_mid >= 1  # at least one kill landed before the commit


def test_sigkill_during_edit_delete_and_compact(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    store = tmp_path / "p.zarr"
    paths = [rng.uniform(0, 100, (20, 3)) for _ in range(3000)]
    zv.write_polylines(str(store), paths, chunk_shape=(10, 10, 10))
    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(0, 3000, 3))
    keep = sorted(set(range(3000)) - set(range(0, 3000, 3)))
    for op in ("add_attribute", "delete", "compact"):
        for delay in (0.8, 1.5, 2.5):
            proc = _child(op, str(store), str(ids))
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            _finish(proc)
            assert zv.validate(str(store)).ok
            got = zv.read_polylines(str(store))
            assert got.object_ids.tolist() in (list(range(3000)), keep), (op, delay)
            extra = got.attributes.get("extra")
            assert extra is None or extra.tolist() == [1.0] * len(extra), (op, delay)


def test_two_appenders_both_land(big: tuple[Path, Path], tmp_path: Path) -> None:
    store, extra = big
    other = tmp_path / "c.npy"
    np.save(other, np.full((7, 3), 3.5))
    procs = [
        _child("append", str(store), str(extra), "120"),
        _child("append", str(store), str(other), "120"),
    ]
    for p in procs:
        rc, err = _finish(p)
        assert rc == 0, err
    assert len(_state(str(store))) == 60_000 + 5_000 + 7
    assert not lock_path(store).exists()


def test_second_writer_refused_while_locked(big: tuple[Path, Path]) -> None:
    store, extra = big
    before = _state(str(store))
    with store_lock(store.absolute(), None):
        proc = _child("append", str(store), str(extra), "0.5")
        rc, err = _finish(proc)
        assert rc == 1
    assert "StoreLockedError" in err
    assert "being edited by another writer" in err
    assert _state(str(store)) == before


def test_stale_lock_of_dead_process_is_broken(big: tuple[Path, Path]) -> None:
    store, extra = big
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock_path(store.absolute()).write_text(
        f'{{"host": "{os.uname().nodename}", "pid": {dead.pid}, "since": 0}}'
    )
    zv.append_points(str(store), np.load(extra), timeout=5)
    assert len(_state(str(store))) == 65_000


def test_recovers_from_a_swap_cut_in_half(big: tuple[Path, Path]) -> None:
    """The two-rename fallback killed between its renames: the old store comes back."""
    store, extra = big
    before = _state(str(store))
    old = store.with_name(f".{store.name}.zv-old-deadbeef")
    os.rename(store, old)
    staged = store.with_name(f".{store.name}.zv-staging-deadbeef")
    staged.mkdir()
    (staged / "zarr.json").write_text("{}")
    zv.append_points(str(store), np.load(extra)[:3])
    assert _state(str(store)) == sorted(before + np.load(extra)[:3].tolist())
    assert _leftovers(store) == ["b.npy"]
