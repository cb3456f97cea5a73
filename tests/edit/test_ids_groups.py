"""Appends with user ids, groups and string attributes equal the fresh write of everything."""

from __future__ import annotations

import numpy as np
import pytest
from tests.edit.cases import plain
from zarr.storage import MemoryStore

import zarr_vectors as zv

CHUNK = (8.0, 8.0)


def _paths(n: int, shift: float) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.uniform(-9, 9, (3, 2)) + shift for _ in range(n)]


def test_user_ids_groups_and_labels() -> None:
    a, b = _paths(3, 0.0), _paths(2, 12.0)
    store, fresh = MemoryStore(), MemoryStore()
    zv.write_polylines(
        store,
        a,
        object_ids=[10, 20, 30],
        object_attributes={"kind": np.array(["x", "y", "x"])},
        groups={"g1": [10, 30]},
        group_attributes={"size": np.array([2], np.int32)},
        chunk_shape=CHUNK,
    )
    zv.append_polylines(
        store,
        b,
        object_ids=[5, 99],
        object_attributes={"kind": np.array(["z", "x"])},
        groups={"g2": [99, 5]},
        group_attributes={"size": np.array([2], np.int32)},
    )
    zv.write_polylines(
        fresh,
        a + b,
        object_ids=[10, 20, 30, 5, 99],
        object_attributes={"kind": np.array(["x", "y", "x", "z", "x"])},
        groups={"g1": [10, 30], "g2": [99, 5]},
        group_attributes={"size": np.array([2, 2], np.int32)},
        chunk_shape=CHUNK,
    )
    assert plain(zv.read_polylines(store)) == plain(zv.read_polylines(fresh))
    for group in ("g1", "g2"):
        got = zv.read_polylines(store, group=group)
        assert plain(got) == plain(zv.read_polylines(fresh, group=group))


def test_new_ids_follow_the_largest_stored_id() -> None:
    store = MemoryStore()
    zv.write_polylines(store, _paths(2, 0.0), object_ids=[7, 3], chunk_shape=CHUNK)
    zv.append_polylines(store, _paths(2, 0.0))
    assert zv.read_polylines(store).object_ids.tolist() == [7, 3, 8, 9]


def test_group_name_taken_is_refused() -> None:
    store = MemoryStore()
    zv.write_polylines(store, _paths(2, 0.0), groups={"g": [0]}, chunk_shape=CHUNK)
    with pytest.raises(zv.InvalidInputError, match="group 'g'"):
        zv.append_polylines(store, _paths(1, 0.0), groups={"g": [0]})


def test_update_string_object_attribute() -> None:
    store = MemoryStore()
    zv.write_polylines(
        store, _paths(3, 0.0), object_attributes={"kind": ["a", "b", "a"]}, chunk_shape=CHUNK
    )
    zv.update_object_attributes(store, [2, 0], {"kind": ["c", "b"]})
    kinds = zv.read_polylines(store).object_attributes["kind"]
    assert list(kinds) == ["b", "b", "c"]


def test_delete_keeps_groups_of_survivors() -> None:
    store, fresh = MemoryStore(), MemoryStore()
    paths = _paths(4, 0.0)
    zv.write_polylines(store, paths, groups={"g": [0, 2, 3], "h": [1]}, chunk_shape=CHUNK)
    zv.delete_objects(store, [2, 1])
    zv.write_polylines(
        fresh,
        [paths[0], paths[3]],
        object_ids=[0, 3],
        groups={"g": [0, 3], "h": []},
        chunk_shape=CHUNK,
    )
    assert plain(zv.read_polylines(store)) == plain(zv.read_polylines(fresh))
