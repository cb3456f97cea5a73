"""The scratch buffer pool, and that read results never share its memory."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.core.scratch import SCRATCH, ScratchPool

MB = 1 << 20


def test_lease_reuses_a_returned_buffer() -> None:
    pool = ScratchPool(limit=16 * MB)
    with pool.lease() as lease:
        first = lease.empty(3 * MB)
        first[:] = 1
    assert pool.idle_bytes == 3 * MB
    with pool.lease() as lease:
        again = lease.empty(2 * MB)  # fits the idle 3 MB buffer without wasting half of it
        assert np.shares_memory(again, first)
        assert pool.idle_bytes == 0
    assert pool.idle_bytes == 3 * MB


def test_buffers_leased_together_are_distinct() -> None:
    pool = ScratchPool(limit=64 * MB)
    with pool.lease() as lease:
        pool_bufs = [lease.empty(2 * MB) for _ in range(3)]
    with pool.lease() as lease:
        again = [lease.empty(2 * MB) for _ in range(3)]
        for i, a in enumerate(again):
            for b in again[i + 1 :]:
                assert not np.shares_memory(a, b)
        assert all(any(np.shares_memory(a, b) for b in pool_bufs) for a in again)


def test_small_large_and_wasteful_requests_are_not_pooled() -> None:
    pool = ScratchPool(limit=8 * MB)
    with pool.lease() as lease:
        lease.empty(1000)  # small: left to the allocator
        lease.empty(9 * MB)  # above the limit
    assert pool.idle_bytes == 0
    with pool.lease() as lease:
        big = lease.empty(6 * MB)
    with pool.lease() as lease:
        small = lease.empty(2 * MB)  # the idle 6 MB buffer would waste more than half
        assert not np.shares_memory(small, big)


def test_idle_bytes_stay_under_the_limit_oldest_dropped_first() -> None:
    pool = ScratchPool(limit=5 * MB)
    with pool.lease() as lease:
        old = lease.empty(2 * MB)
    with pool.lease() as lease:
        newer = lease.empty(3 * MB)  # the idle 2 MB buffer is too small
    assert pool.idle_bytes == 5 * MB
    with pool.lease() as lease:
        newest = lease.empty(4 * MB)  # too big for both: a new buffer
    assert pool.idle_bytes == 4 * MB  # 9 MB idle: the 2 MB, then the 3 MB buffer dropped
    with pool.lease() as lease:
        assert np.shares_memory(lease.empty(4 * MB), newest)
        assert not np.shares_memory(lease.empty(3 * MB), newer)
    pool.clear()
    assert pool.idle_bytes == 0
    del old


def test_typed_arrays_and_a_zero_limit() -> None:
    pool = ScratchPool(limit=0)
    with pool.lease() as lease:
        ints = lease.array(300_000, np.int64)
        assert ints.dtype == np.int64
        assert ints.shape == (300_000,)
    assert pool.idle_bytes == 0


def test_concurrent_leases_never_share_a_buffer() -> None:
    pool = ScratchPool(limit=64 * MB)
    errors: list[str] = []
    barrier = threading.Barrier(4)

    def work(tag: int) -> None:
        barrier.wait()
        for _ in range(50):
            with pool.lease() as lease:
                buf = lease.array(MB // 8 + tag, np.int64)
                buf[:] = tag
                if not (buf == tag).all():
                    errors.append(f"thread {tag} saw another thread's values")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _skeletons(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(500, 1500, n)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    steps = rng.normal(0, 2.0, (int(offsets[-1]), 3))
    positions = np.empty_like(steps)
    parents = np.empty(int(offsets[-1]), np.int64)
    for a, b in itertools.pairwise(offsets):
        positions[a:b] = rng.random(3) * 400 + np.cumsum(steps[a:b], axis=0)
        parents[a:b] = np.arange(a - 1, b - 1)
        parents[a] = -1
    return positions.astype(np.float32), parents, offsets


@pytest.mark.parametrize("compressor", ["lz4", "default"])
def test_results_do_not_share_pooled_memory(tmp_path: Path, compressor: str) -> None:
    """A second big read (reusing the pool) leaves the first read's arrays as they were."""
    stores = []
    for seed in (1, 2):
        positions, parents, offsets = _skeletons(seed, 120)
        path = tmp_path / f"s{seed}.zv"
        zv.write_skeletons(
            path,
            positions,
            parents,
            offsets=offsets,
            chunk_shape=(100.0,) * 3,
            compressor=compressor,
        )
        stores.append((path, positions, parents))
    first = zv.read_skeletons(stores[0][0])
    kept = first.positions.copy(), first.parents.copy()
    assert SCRATCH.idle_bytes > 0 or compressor != "lz4"  # the read did borrow
    second = zv.read_skeletons(stores[1][0])
    assert not np.shares_memory(first.positions, second.positions)
    np.testing.assert_array_equal(first.positions, kept[0])
    np.testing.assert_array_equal(first.parents, kept[1])
    np.testing.assert_array_equal(first.positions, stores[0][1])
    np.testing.assert_array_equal(second.positions, stores[1][1])
    np.testing.assert_array_equal(second.parents, stores[1][2])


def test_graph_results_do_not_share_pooled_memory(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    paths = []
    for seed in (0, 1):
        n = 90_000  # above the size from which links are read on a second thread
        positions = (rng.random((n, 3)) * 100).astype(np.float32)
        edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
        path = tmp_path / f"g{seed}.zv"
        zv.write_graph(path, positions, edges, chunk_shape=(25.0,) * 3, compressor="lz4")
        paths.append((path, positions))
    first = zv.read_graph(paths[0][0])
    kept = first.positions.copy(), first.edges.copy()
    zv.read_graph(paths[1][0])
    np.testing.assert_array_equal(first.positions, kept[0])
    np.testing.assert_array_equal(first.edges, kept[1])
    np.testing.assert_array_equal(np.sort(first.positions, axis=0), np.sort(paths[0][1], axis=0))
