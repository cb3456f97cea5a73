"""Two processes write one new store at the same moment (issue 25, item 2).

Exactly one reports success, the other gets ``StoreExistsError``, and the store holds the
winner's data and validates clean: never a success report with a broken store.  Overwrites
racing each other both succeed and leave one whole store.
"""

from __future__ import annotations

import multiprocessing as mp
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from moto.server import ThreadedMotoServer

import zarr_vectors as zv
from _s3_server import atomic_conditional_writes
from reliability._race import payload, race_worker
from zarr_vectors.validate import validate

TRIALS = 20


class Pool:
    """Two spawned writer processes that start each job together (a barrier per job)."""

    def __init__(self, storage_options: dict[str, Any] | None) -> None:
        ctx = mp.get_context("spawn")
        self.jobs = [ctx.Queue(), ctx.Queue()]
        self.results = ctx.Queue()
        self.barrier = barrier = ctx.Barrier(2)  # kept: the children unpickle it later
        self.procs = [
            ctx.Process(
                target=race_worker,
                args=(w, self.jobs[w], self.results, barrier, storage_options),
                daemon=True,
            )
            for w in range(2)
        ]
        for p in self.procs:
            p.start()

    def race(self, path: str, *, overwrite: bool = False) -> dict[int, str]:
        for q in self.jobs:
            q.put((path, overwrite))
        out = {}
        for _ in range(2):
            got_path, worker, outcome = self.results.get(timeout=60)
            assert got_path == path
            out[worker] = outcome
        return out

    def close(self) -> None:
        for q in self.jobs:
            q.put(None)
        for p in self.procs:
            p.join(timeout=30)


def _check_new_store_race(pool: Pool, path: str, opts: dict[str, Any] | None) -> None:
    outcomes = pool.race(path)
    assert sorted(outcomes.values()) == ["StoreExistsError", "ok"], outcomes
    winner = next(w for w, o in outcomes.items() if o == "ok")
    got = zv.read_points(path, storage_options=opts)
    np.testing.assert_array_equal(np.sort(got.positions, axis=0), np.sort(payload(winner), axis=0))
    report = validate(path, storage_options=opts)
    assert report.ok, report


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    p = Pool(None)
    yield p
    p.close()


def test_two_local_writers_on_one_new_path(pool: Pool, tmp_path: Path) -> None:
    for trial in range(TRIALS):
        _check_new_store_race(pool, str(tmp_path / f"t{trial}.zarrvectors"), None)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"t{t}.zarrvectors" for t in range(TRIALS))  # no leftovers


def test_two_local_writers_on_one_empty_directory(pool: Pool, tmp_path: Path) -> None:
    for trial in range(TRIALS // 2):
        target = tmp_path / f"e{trial}"
        target.mkdir()
        _check_new_store_race(pool, str(target), None)


def test_two_local_overwrites_leave_one_whole_store(pool: Pool, tmp_path: Path) -> None:
    path = tmp_path / "over.zarrvectors"
    zv.write_points(path, payload(7), chunk_shape=(25.0, 25.0, 25.0))
    for _ in range(TRIALS // 2):
        outcomes = pool.race(str(path), overwrite=True)
        assert set(outcomes.values()) == {"ok"}, outcomes
        got = np.sort(zv.read_points(path).positions, axis=0)
        assert any(np.array_equal(got, np.sort(payload(w), axis=0)) for w in (0, 1))
        assert validate(path).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["over.zarrvectors"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.s3
@pytest.mark.slow
def test_two_s3_writers_on_one_new_path() -> None:
    atomic_conditional_writes()
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    opts: dict[str, Any] = {
        "endpoint_url": endpoint,
        "key": "test",
        "secret": "test",
        "client_kwargs": {"region_name": "us-east-1"},
        "use_listings_cache": False,
    }
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    ).create_bucket(Bucket="zv-race")
    s3_pool = Pool(opts)
    try:
        for trial in range(TRIALS):
            _check_new_store_race(s3_pool, f"s3://zv-race/t{trial}.zarrvectors", opts)
    finally:
        s3_pool.close()
        server.stop()
