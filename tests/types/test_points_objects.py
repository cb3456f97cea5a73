"""``read_points`` returns the object attributes, groups and group attributes it was given."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv


def _write(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 100, (n, 3))
    ids = rng.choice(np.array([7, 12, 40, 41, 900, 2**40], dtype=np.int64), n)
    distinct = np.unique(ids)
    obj_attrs = {
        "volume": rng.random(len(distinct)).astype("f4"),
        "cell_type": np.array(["glia", "neuron", "neuron", "glia", "t", "neuron"])[: len(distinct)],
    }
    groups = {"left": distinct[:3], "right": distinct[3:], "odd": distinct[::2]}
    group_attrs = {"weight": np.array([1.5, 2.5, 3.5])}
    store = MemoryStore()
    zv.write_points(
        store,
        pos,
        chunk_shape=(50, 50, 50),
        vertex_object_ids=ids,
        object_attributes=obj_attrs,
        groups=groups,
        group_attributes=group_attrs,
    )
    return store, pos, ids, distinct, obj_attrs, groups, group_attrs


def _check(got: zv.Points, distinct, obj_attrs, groups, group_attrs) -> None:
    """Every returned object's attributes and groups equal the input (brute force)."""
    assert got.vertex_object_ids is not None
    assert got.object_ids is not None
    want_objects = np.unique(got.vertex_object_ids)
    np.testing.assert_array_equal(got.object_ids, want_objects)
    rows = np.searchsorted(distinct, got.object_ids)
    assert set(got.object_attributes) == set(obj_attrs)
    for name, values in obj_attrs.items():
        np.testing.assert_array_equal(got.object_attributes[name], values[rows])
        if values.dtype.kind != "U":  # categories come back as Python strings
            assert got.object_attributes[name].dtype == values.dtype
    assert list(got.groups) == list(groups)
    for name, members in groups.items():
        np.testing.assert_array_equal(got.groups[name], members[np.isin(members, got.object_ids)])
    for name, values in group_attrs.items():
        np.testing.assert_array_equal(got.group_attributes[name], values)


def test_whole_read_returns_object_and_group_data() -> None:
    store, pos, _ids, distinct, obj_attrs, groups, group_attrs = _write()
    got = zv.read_points(store)
    assert len(got) == len(pos)
    np.testing.assert_array_equal(got.object_ids, distinct)
    _check(got, distinct, obj_attrs, groups, group_attrs)


@settings(max_examples=20, deadline=None)
@given(lo=st.lists(st.floats(0, 90), min_size=3, max_size=3), size=st.floats(1, 100))
def test_box_read_returns_the_objects_it_touches(lo, size) -> None:
    store, pos, ids, distinct, obj_attrs, groups, group_attrs = _write(seed=1)
    box = (lo, [v + size for v in lo])
    got = zv.read_points(store, bbox=box)
    inside = np.all((pos >= box[0]) & (pos < box[1]), axis=1)
    np.testing.assert_array_equal(np.sort(got.vertex_object_ids), np.sort(ids[inside]))
    _check(got, distinct, obj_attrs, groups, group_attrs)


def test_object_and_group_selection() -> None:
    store, _pos, _ids, distinct, obj_attrs, groups, group_attrs = _write(seed=2)
    got = zv.read_points(store, object_ids=[distinct[1], distinct[4]])
    np.testing.assert_array_equal(got.object_ids, distinct[[1, 4]])
    _check(got, distinct, obj_attrs, groups, group_attrs)
    got = zv.read_points(store, group="right")
    np.testing.assert_array_equal(got.object_ids, groups["right"])
    _check(got, distinct, obj_attrs, groups, group_attrs)


def test_store_without_objects_returns_none() -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 2)), chunk_shape=(1, 1))
    got = zv.read_points(store)
    assert got.object_ids is None
    assert got.vertex_object_ids is None
    assert not got.object_attributes
    assert not got.groups


@pytest.mark.parametrize("dense", [True, False])
def test_dense_ids_without_attributes(dense: bool) -> None:
    ids = np.array([0, 1, 1, 2]) if dense else np.array([5, 9, 9, 11])
    store = MemoryStore()
    zv.write_points(
        store, np.arange(12.0).reshape(4, 3), chunk_shape=(100, 100, 100), vertex_object_ids=ids
    )
    got = zv.read_points(store)
    np.testing.assert_array_equal(got.object_ids, np.unique(ids))
    assert dict(got.object_attributes) == {}
