"""``limit=`` stops reading chunks once it has N items, and equals brute force ``[:N]``.

Chunk reads are counted with zarr's own ``LoggingStore`` around a real ``MemoryStore``: every
``get`` of a key under ``0/vertices/c/`` is one chunk payload read.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import LoggingStore, MemoryStore

import zarr_vectors as zv
from query._oracles import Cloud, box_mask, boxes, clouds, range_mask, ranges


class _Keys(logging.Handler):
    """Collects the keys of the payload chunks a store is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith(" Calling") and ".get(" in msg and "/vertices/c/" in msg:
            self.keys.append(msg.split(".get(", 1)[1].rstrip(")"))


def _counting(store: MemoryStore) -> tuple[LoggingStore[MemoryStore], _Keys]:
    keys = _Keys()
    logged = LoggingStore(store, log_level="INFO", log_handler=keys)
    if keys not in logged.logger.handlers:  # it adds ours only when no ancestor has one
        logged.logger.addHandler(keys)
    return logged, keys


def _grid_points(n_chunks_side: int = 8, per_chunk: int = 10) -> np.ndarray:
    rng = np.random.default_rng(1)
    cells = np.stack(
        np.meshgrid(np.arange(n_chunks_side), np.arange(n_chunks_side), indexing="ij"), -1
    ).reshape(-1, 2)
    pos = np.repeat(cells * 4.0, per_chunk, axis=0) + rng.uniform(0, 4, (len(cells) * per_chunk, 2))
    return pos[rng.permutation(len(pos))]


def test_points_limit_reads_few_chunks() -> None:
    pos = _grid_points()
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(4, 4), attributes={"v": np.arange(len(pos)) % 7})
    full = zv.read_points(store)
    counted, keys = _counting(store)
    got = zv.read_points(counted, limit=15)
    np.testing.assert_array_equal(got.positions, full.positions[:15])
    assert len(set(keys.keys)) == 2  # 10 points per chunk: two chunks hold the first 15
    keys.keys.clear()
    got = zv.read_points(counted, where={"v": {3}}, limit=3)
    want = full.positions[full.attributes["v"] == 3][:3]
    np.testing.assert_array_equal(got.positions, want)
    assert 0 < len(set(keys.keys)) < 64 // 4
    keys.keys.clear()
    assert len(zv.read_points(counted, limit=0)) == 0
    assert keys.keys == []


def test_paths_limit_reads_few_chunks() -> None:
    rng = np.random.default_rng(2)
    starts = rng.uniform(0, 30, (60, 2))
    paths = [np.stack([s, s + rng.uniform(-1, 1, 2)]) for s in starts]
    paths = [np.clip(p, 0, 31.9) for p in paths]
    store = MemoryStore()
    zv.write_polylines(store, paths, chunk_shape=(4, 4))
    box = ([0.0, 0.0], [32.0, 32.0])
    counted, keys = _counting(store)
    got = zv.read_polylines(counted, bbox=box, limit=3)
    assert got.object_ids.tolist() == [0, 1, 2]
    touched = {tuple(np.floor(p / 4).astype(int).ravel()) for p in paths[:3]}
    assert 0 < len(set(keys.keys)) <= 2 * len(touched) < 64
    everything = zv.read_polylines(store, bbox=box)
    assert len(everything) == 60


@settings(max_examples=40, deadline=None)
@given(
    cloud=clouds(),
    box=boxes(),
    rng=ranges(),
    limit=st.integers(0, 12),
)
def test_points_limit_equals_brute_force(cloud: Cloud, box: Any, rng: Any, limit: int) -> None:
    store = MemoryStore()
    zv.write_points(store, cloud.positions, chunk_shape=(4, 4), attributes={"value": cloud.value})
    plain = zv.read_points(store)  # the documented order: storage order of a plain read
    keep = box_mask(plain.positions, box) & range_mask(plain.attributes["value"], rng)
    got = zv.read_points(store, bbox=box, where={"value": rng}, limit=limit)
    np.testing.assert_array_equal(got.positions, plain.positions[keep][:limit])
    np.testing.assert_array_equal(got.attributes["value"], plain.attributes["value"][keep][:limit])


@settings(max_examples=30, deadline=None)
@given(cloud=clouds(with_objects=True), box=boxes(), limit=st.integers(0, 12))
def test_points_with_objects_limit(cloud: Cloud, box: Any, limit: int) -> None:
    store = MemoryStore()
    zv.write_points(
        store,
        cloud.positions,
        chunk_shape=(4, 4),
        vertex_object_ids=cloud.objects,
        attributes={"value": cloud.value},
    )
    plain = zv.read_points(store)
    keep = box_mask(plain.positions, box) & range_mask(plain.attributes["value"], (None, 0.6))
    got = zv.read_points(store, bbox=box, where={"value": (None, 0.6)}, limit=limit)
    assert got.vertex_object_ids is not None
    assert plain.vertex_object_ids is not None
    np.testing.assert_array_equal(got.vertex_object_ids, plain.vertex_object_ids[keep][:limit])
    assert got.object_ids is not None
    assert got.object_ids.tolist() == sorted(set(got.vertex_object_ids.tolist()))


@pytest.mark.parametrize("limit", [0, 1, 4, 100])
def test_skeleton_limit_in_id_order(limit: int) -> None:
    rng = np.random.default_rng(3)
    trees = []
    for _ in range(20):
        pts = np.clip(rng.uniform(0, 30, 2) + rng.uniform(-3, 3, (4, 2)), 0, 31.9)
        trees.append((pts, np.arange(4) - 1))
    store = MemoryStore()
    zv.write_skeletons(store, trees, chunk_shape=(4, 4))
    box = ([8.0, 8.0], [24.0, 24.0])
    touching = [i for i, (p, _) in enumerate(trees) if box_mask(p, (box[0], box[1])).any()]
    got = zv.read_skeletons(store, bbox=box, limit=limit)
    assert got.object_ids.tolist() == touching[:limit]
