"""The recycling pool of result arrays: memory is reused only once nothing refers to it."""

from __future__ import annotations

import gc
import threading
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.core import recycle
from zarr_vectors.core.recycle import RecyclingPool

MIB = 1 << 20


def address(a: np.ndarray) -> int:
    value: int = a.__array_interface__["data"][0]
    return value


def test_a_block_is_reused_only_once_every_view_is_gone() -> None:
    pool = RecyclingPool(limit=64 * MIB)
    a = pool.empty((MIB // 4, 2), np.float32)
    where = address(a)
    part = a[10:20]  # a view of the result keeps the block
    held = memoryview(a[::2])  # so does an exported buffer
    del a
    assert address(pool.empty((MIB // 4, 2), np.float32)) != where
    del part
    assert address(pool.empty((MIB // 4, 2), np.float32)) != where
    del held
    again = pool.empty((MIB // 4, 2), np.float32)
    assert address(again) == where
    assert again.shape == (MIB // 4, 2)
    assert again.dtype == np.float32
    assert again.flags.c_contiguous


def test_live_results_never_share_memory() -> None:
    pool = RecyclingPool(limit=64 * MIB)
    arrays = [pool.empty(MIB, np.uint8) for _ in range(5)]
    for i, a in enumerate(arrays):
        a.fill(i)
    assert [int(a[0]) for a in arrays] == [0, 1, 2, 3, 4]
    assert len({address(a) for a in arrays}) == 5


def test_fits_other_shapes_and_types_within_twice_the_size() -> None:
    pool = RecyclingPool(limit=64 * MIB)
    where = address(pool.empty(3 * MIB, np.uint8))  # dropped at once
    assert address(pool.empty((MIB // 4, 3), np.int32)) == where  # 3 MiB again
    assert address(pool.empty(2 * MIB, np.uint8)) == where  # smaller, under twice
    assert address(pool.empty(MIB, np.uint8)) != where  # would waste more than half


def test_small_huge_and_object_arrays_are_left_to_numpy() -> None:
    pool = RecyclingPool(limit=4 * MIB)
    assert pool.empty(100, np.float64).flags.owndata
    assert pool.empty(8 * MIB, np.uint8).flags.owndata
    assert not pool.empty(2 * MIB, np.uint8).flags.owndata
    objects = pool.empty(MIB, object)  # references start as None, never as recycled bytes
    assert objects.flags.owndata
    assert objects[0] is None


def test_idle_blocks_stay_under_the_limit() -> None:
    pool = RecyclingPool(limit=5 * MIB)
    live = [pool.empty(2 * MIB, np.uint8) for _ in range(4)]
    assert pool.idle_bytes == 0
    del live
    assert pool.idle_bytes == 8 * MIB  # dropped since the last new block
    keep = pool.empty(7 * MIB // 2 + 1, np.uint8)  # fits none: a new block, idle trimmed
    assert pool.idle_bytes <= 5 * MIB
    del keep
    pool.clear()
    assert pool.idle_bytes == 0


def test_blocks_tracked_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recycle, "_MAX_BLOCKS", 3)
    pool = RecyclingPool(limit=64 * MIB)
    live = [pool.empty(MIB, np.uint8) for _ in range(6)]
    assert len(pool._blocks) == 3
    for i, a in enumerate(live):  # forgotten blocks stay with their results
        a.fill(i)
    assert [int(a[-1]) for a in live] == list(range(6))


def test_threads_get_distinct_blocks() -> None:
    pool = RecyclingPool(limit=256 * MIB)
    out: list[Any] = []
    lock = threading.Lock()

    def work(k: int) -> None:
        mine = []
        for _ in range(20):
            a = pool.empty(MIB, np.uint8)
            a.fill(k)
            mine.append(a)
        with lock:
            out.extend(mine[-2:])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({address(a) for a in out}) == len(out) == 8
    assert sorted(int(a[0]) for a in out) == sorted(int(a[-1]) for a in out)


def test_reads_do_not_hand_out_memory_still_in_use(tmp_path: Any) -> None:
    """A result kept by the caller is never overwritten by a later read."""
    gc.collect()  # results of earlier tests in this process go back to the pool first
    recycle.RESULTS.clear()  # so the reuse checked below cannot pick their idle blocks
    rng = np.random.default_rng(0)
    n = 1 << 17  # 1.5 MiB of float32 positions, 1 MiB of parents: pooled
    pos = np.cumsum(rng.normal(0, 1, (n, 3)), axis=0).astype(np.float32)
    parents = np.arange(-1, n - 1)
    parents[:: 1 << 12] = -1
    path = str(tmp_path / "s.zarr")
    zv.write_skeletons(path, pos, parents, offsets=np.array([0, n]), chunk_shape=(50.0,) * 3)
    first = zv.read_skeletons(path)
    expected_pos, expected_parents = first.positions.copy(), first.parents.copy()
    assert not first.positions.flags.owndata  # from the pool
    first.positions[:] = -7.0
    first.parents[:] = 5
    second = zv.read_skeletons(path)
    assert np.array_equal(second.positions, expected_pos)
    assert np.array_equal(second.parents, expected_parents)
    assert np.all(first.positions == -7.0)
    assert np.all(first.parents == 5)
    dropped = {address(first.positions), address(second.positions)}
    del first, second
    third = zv.read_skeletons(path)  # memory of the dropped results comes back
    assert address(third.positions) in dropped
    assert np.array_equal(third.positions, expected_pos)
    assert np.array_equal(third.parents, expected_parents)
