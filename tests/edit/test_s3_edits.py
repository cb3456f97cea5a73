"""Edits of stores on S3 (moto server on 127.0.0.1): results, the lease lock, the commit point."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import s3fs
from zarr.storage import FsspecStore, MemoryStore

import zarr_vectors as zv
from _s3_server import moto_s3
from zarr_vectors.edit import lock as locking
from zarr_vectors.edit import s3 as s3commit
from zarr_vectors.testing import assert_geometry_equal

pytestmark = pytest.mark.s3

BUCKET = "zv-edits"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    with moto_s3(BUCKET) as options:
        yield options


def _fs(options: dict[str, Any]) -> s3fs.S3FileSystem:
    return s3fs.S3FileSystem(
        endpoint_url=options["endpoint_url"],
        key="test",
        secret="test",
        use_listings_cache=False,
        skip_instance_cache=True,
    )


def _paths(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(0, 2, (15, 3)), axis=0) + 40 for _ in range(n)]


def _pair(s3: dict[str, Any], name: str) -> tuple[str, FsspecStore, MemoryStore]:
    """The same streamline store on S3 and in memory; return URL, S3 store object, memory store."""
    url = f"s3://{BUCKET}/{name}/tracts.zarrvectors"
    memory = MemoryStore()
    for store, so in ((url, s3), (memory, None)):
        zv.write_streamlines(
            store,
            _paths(0, 12),
            chunk_shape=(10, 10, 10),
            bin_shape=(5, 5, 5),
            object_attributes={"q": np.arange(12, dtype=np.int32)},
            storage_options=so,
        )
    return url, FsspecStore.from_url(url, storage_options=s3, read_only=False), memory


def test_append_and_delete_on_s3_equal_memory(s3: dict[str, Any]) -> None:
    url, store, memory = _pair(s3, "quick")
    for s in (store, memory):
        zv.append_streamlines(s, _paths(1, 2), object_attributes={"q": np.array([7, 8], np.int32)})
        zv.delete_objects(s, [3, 12])
    assert_geometry_equal(zv.read_polylines(url, storage_options=s3), zv.read_polylines(memory))
    assert zv.read_polylines(url, storage_options=s3).object_ids.tolist() == [
        *range(3),
        *range(4, 12),
        13,
    ]
    assert _fs(s3).ls(f"{BUCKET}/quick") == [f"{BUCKET}/quick/tracts.zarrvectors"]


@pytest.mark.slow
def test_append_attribute_delete_compact_on_s3_equal_memory(s3: dict[str, Any]) -> None:
    url, store, memory = _pair(s3, "edits")
    zv.build_pyramid(url, [(2, 2, 2)], storage_options=s3)
    zv.build_pyramid(memory, [(2, 2, 2)])
    steps: list[Any] = [
        lambda s: zv.append_streamlines(
            s, _paths(1, 4), object_attributes={"q": np.arange(4, dtype=np.int32)}
        ),
        lambda s: zv.add_attribute(s, "score", np.linspace(0, 1, 16), kind="object"),
        lambda s: zv.delete_objects(s, [0, 7, 13]),
        lambda s: zv.update_object_attributes(s, [1], {"q": np.array([99], dtype=np.int32)}),
        lambda s: zv.drop_attribute(s, "score"),
        zv.compact,
    ]
    for step in steps:
        got, expected = step(store), step(memory)
        assert got.object_count == expected.object_count
        for level in (0, 1):
            assert_geometry_equal(
                zv.read_polylines(url, level=level, storage_options=s3),
                zv.read_polylines(memory, level=level),
            )
    back = zv.read_polylines(url, storage_options=s3)
    assert back.object_ids.tolist() == [1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 14, 15]
    assert back.object_attributes["q"][0] == 99
    assert zv.validate(url, level=2, storage_options=s3).ok
    # the lock, journal and staging objects are all gone: only the store is left
    assert _fs(s3).ls(f"{BUCKET}/edits") == [f"{BUCKET}/edits/tracts.zarrvectors"]


@pytest.mark.slow
def test_edit_by_url_and_refusals(s3: dict[str, Any]) -> None:
    url, store, _ = _pair(s3, "refusals")
    # an s3:// URL takes its credentials and endpoint from the environment
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(zv.__file__).parents[1]),
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_ENDPOINT_URL": s3["endpoint_url"],
    }
    code = (
        "import sys, numpy as np, zarr_vectors as zv; "
        "zv.append_streamlines(sys.argv[1], [np.zeros((3, 3))], "
        "object_attributes={'q': np.array([5], np.int32)})"
    )
    subprocess.run([sys.executable, "-c", code, url], env=env, check=True)
    assert len(zv.read_polylines(url, storage_options=s3)) == 13
    before = sorted(_fs(s3).find(f"{BUCKET}/refusals"))
    with pytest.raises(zv.InvalidInputError, match="already"):
        zv.append_streamlines(
            store, _paths(3, 1), object_ids=[0], object_attributes={"q": np.array([1], np.int32)}
        )
    with pytest.raises(zv.InvalidInputError):
        zv.append_points(store, np.zeros((1, 3)))
    with pytest.raises(zv.ReadOnlyStoreError):
        zv.compact(FsspecStore.from_url(url, storage_options=s3, read_only=True))
    with pytest.raises(zv.UnsupportedEditError, match="root of a bucket"):
        zv.compact(FsspecStore.from_url(f"s3://{BUCKET}", storage_options=s3, read_only=False))
    assert sorted(_fs(s3).find(f"{BUCKET}/refusals")) == before


def test_second_writer_waits_then_fails(s3: dict[str, Any]) -> None:
    url, store, _ = _pair(s3, "locked")
    lock = s3commit.lock_object(s3commit.live_path(store))
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with locking.remote_lock(store.fs, lock):
            holding.set()
            release.wait(10)

    owner = threading.Thread(target=hold)
    owner.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        with pytest.raises(zv.StoreLockedError, match="another writer"):
            zv.append_streamlines(
                store, _paths(4, 1), object_attributes={"q": np.array([1], np.int32)}, timeout=0.6
            )
        assert time.monotonic() - started >= 0.6
    finally:
        release.set()
        owner.join()
    assert len(zv.read_polylines(url, storage_options=s3)) == 12
    zv.append_streamlines(
        store, _paths(4, 1), object_attributes={"q": np.array([1], np.int32)}, timeout=5
    )
    assert len(zv.read_polylines(url, storage_options=s3)) == 13


def _plant_lock(s3: dict[str, Any], key: str, host: str, pid: int, expires: float) -> None:
    body = {"host": host, "pid": pid, "since": time.time() - 1, "expires": expires}
    _fs(s3).pipe_file(key, json.dumps(body).encode())


@pytest.mark.slow
def test_stale_leases_are_taken_over_live_ones_are_not(s3: dict[str, Any]) -> None:
    url, store, _ = _pair(s3, "stale")
    key = s3commit.lock_object(s3commit.live_path(store))
    _plant_lock(s3, key, "elsewhere", 1, time.time() + 60)  # another machine, lease running
    with pytest.raises(zv.StoreLockedError):
        zv.compact(store, timeout=0.3)
    _plant_lock(s3, key, "elsewhere", 1, time.time() - 1)  # lease ran out
    zv.compact(store, timeout=5)
    _plant_lock(s3, key, socket.gethostname(), _dead_pid(), time.time() + 60)  # owner died
    zv.compact(store, timeout=5)
    assert not _fs(s3).exists(key)
    assert zv.validate(url, storage_options=s3).ok


def _dead_pid() -> int:
    pid = 2**22 - 3
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


@pytest.mark.slow
def test_lost_lease_is_not_renewed(s3: dict[str, Any]) -> None:
    _, store, _ = _pair(s3, "lost")
    key = s3commit.lock_object(s3commit.live_path(store))
    with locking.remote_lock(store.fs, key) as held:
        etag = held.etag
        locking.renew(held)
        assert held.etag != etag
        _plant_lock(s3, key, "elsewhere", 1, time.time() + 60)  # taken over meanwhile
        with pytest.raises(zv.StoreLockedError, match="taken over"):
            locking.renew(held)
    # releasing a lock that is not ours any more leaves it in place
    assert json.loads(_fs(s3).cat_file(key))["host"] == "elsewhere"
    _fs(s3).rm_file(key)


def _state(result: Any) -> tuple[tuple[int, ...], bytes]:
    """What a whole read shows: object ids in order and every vertex, in order."""
    return tuple(result.object_ids.tolist()), np.concatenate(list(result)).tobytes()


@pytest.mark.slow
def test_readers_see_old_new_or_a_clear_refusal(
    s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh reads during two appends show a committed state or StoreNotFoundError, no mix.

    The grace period is set longer than one read of this (slow, shared) test server takes:
    the guarantee covers reads shorter than the grace period.
    """
    monkeypatch.setattr(s3commit, "READER_GRACE_S", 3.0)
    url, store, memory = _pair(s3, "readers")
    batches = [_paths(5, 3), _paths(6, 2)]
    states = {_state(zv.read_polylines(memory))}
    for batch in batches:
        zv.append_streamlines(memory, batch, object_attributes={"q": np.zeros(len(batch), "i4")})
        states.add(_state(zv.read_polylines(memory)))
    done = threading.Event()
    failures: list[BaseException] = []

    def edit() -> None:
        try:
            for batch in batches:
                q = {"q": np.zeros(len(batch), "i4")}
                zv.append_streamlines(store, batch, object_attributes=q)
        except Exception as exc:  # noqa: BLE001  # reported by the main thread
            failures.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=edit)
    writer.start()
    seen: dict[str, int] = {"state": 0, "refused": 0}
    shown = set()
    while not done.is_set():
        try:
            got = _state(zv.read_polylines(url, storage_options=s3))
        except zv.StoreNotFoundError:
            seen["refused"] += 1
            continue
        assert got in states, "a read saw a state that was never committed"
        shown.add(got)
        seen["state"] += 1
    writer.join()
    assert not failures, failures
    assert _state(zv.read_polylines(url, storage_options=s3)) in states
    assert seen["state"] >= 2, seen


_KILLED_APPEND = """
import sys, numpy as np, zarr_vectors as zv
from zarr.storage import FsspecStore
from zarr_vectors.edit import s3
s3.READER_GRACE_S = 30.0  # the parent kills this process inside the publish
store = FsspecStore.from_url(sys.argv[1], storage_options={
    "endpoint_url": sys.argv[2], "key": "test", "secret": "test", "use_listings_cache": False})
rng = np.random.default_rng(9)
paths = [np.cumsum(rng.normal(0, 2, (15, 3)), axis=0) + 40 for _ in range(4)]
zv.append_streamlines(store, paths, object_attributes={"q": np.zeros(4, "i4")})
"""


def _kill_when(s3: dict[str, Any], url: str, ready: Callable[[], bool]) -> None:
    """Run an append in a child process and SIGKILL it once ``ready()`` holds."""
    env = {**os.environ, "PYTHONPATH": str(Path(zv.__file__).parents[1])}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_APPEND, url, s3["endpoint_url"]],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert child.poll() is None, "the child ended before the point it is killed at"
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


@pytest.mark.slow
@pytest.mark.parametrize("point", ["staged", "committed"])
def test_killed_edit_is_rolled_back_or_forward(s3: dict[str, Any], point: str) -> None:
    """SIGKILL while staging keeps the old state; after the journal, the next edit finishes it."""
    url, store, memory = _pair(s3, f"killed-{point}")
    old = _state(zv.read_polylines(memory))
    rng = np.random.default_rng(9)
    added = [np.cumsum(rng.normal(0, 2, (15, 3)), axis=0) + 40 for _ in range(4)]
    zv.append_streamlines(memory, added, object_attributes={"q": np.zeros(4, "i4")})
    new = _state(zv.read_polylines(memory))
    live = s3commit.live_path(store)
    parent, name = live.rsplit("/", 1)
    fs = _fs(s3)

    def staged() -> bool:
        return bool(fs.glob(f"{parent}/.{name}.zv-staging-*"))

    def published_half() -> bool:  # journal written and the old state hidden
        if not fs.exists(f"{parent}/.{name}{s3commit.JOURNAL}"):
            return False
        return (
            "zarr_vectors_version" not in json.loads(fs.cat_file(f"{live}/zarr.json"))["attributes"]
        )

    _kill_when(s3, url, staged if point == "staged" else published_half)
    if point == "staged":
        assert _state(zv.read_polylines(url, storage_options=s3)) == old
    else:
        with pytest.raises(zv.StoreNotFoundError, match="did not finish"):
            zv.read_polylines(url, storage_options=s3)
    # the next editor breaks the dead writer's lock, then rolls back or forward
    zv.compact(store, timeout=10)
    assert _state(zv.read_polylines(url, storage_options=s3)) == (old if point == "staged" else new)
    assert zv.validate(url, storage_options=s3).ok
    assert _fs(s3).ls(parent) == [live]


_APPENDER = """
import sys, numpy as np, zarr_vectors as zv
from zarr.storage import FsspecStore
store = FsspecStore.from_url(sys.argv[1], storage_options={
    "endpoint_url": sys.argv[2], "key": "test", "secret": "test", "use_listings_cache": False},
    read_only=False)
n = int(sys.argv[3])
paths = [np.full((3, 3), 10.0 + n + i) for i in range(n)]
zv.append_streamlines(store, paths, object_attributes={"q": np.full(n, n, "i4")}, timeout=300)
"""


@pytest.mark.slow
def test_two_processes_append_at_once_both_land(s3: dict[str, Any]) -> None:
    url, _, _ = _pair(s3, "two-writers")
    env = {**os.environ, "PYTHONPATH": str(Path(zv.__file__).parents[1])}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _APPENDER, url, s3["endpoint_url"], str(n)],
            env=env,
            stderr=subprocess.PIPE,
        )
        for n in (2, 3)
    ]
    for w in writers:
        _, err = w.communicate(timeout=600)
        assert w.returncode == 0, err.decode()
    back = zv.read_polylines(url, storage_options=s3)
    assert len(back) == 12 + 2 + 3
    assert sorted(back.object_attributes["q"][12:].tolist()) == [2, 2, 3, 3, 3]
    assert zv.validate(url, level=3, storage_options=s3).ok
    assert _fs(s3).ls(f"{BUCKET}/two-writers") == [f"{BUCKET}/two-writers/tracts.zarrvectors"]
