"""``where=``, ``sphere=``, ``limit=`` and ``count`` on point clouds against brute force."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from query._oracles import (
    CHUNK,
    Cloud,
    box_mask,
    boxes,
    clouds,
    label_sets,
    range_mask,
    ranges,
    rows_multiset,
    sphere_mask,
)


def _write(cloud: Cloud, **kw: Any) -> MemoryStore:
    store = MemoryStore()
    zv.write_points(
        store,
        cloud.positions,
        chunk_shape=(CHUNK,) * cloud.positions.shape[1],
        attributes={"value": cloud.value, "label": cloud.label},
        vertex_object_ids=cloud.objects,
        **kw,
    )
    return store


@settings(max_examples=40)
@given(cloud=clouds(), rng=ranges(), labels=label_sets(), box=boxes())
def test_where_equals_brute_force(
    cloud: Cloud, rng: tuple[float | None, float | None], labels: set[int], box: Any
) -> None:
    store = _write(cloud)
    where = {"value": rng, "label": labels}
    got = zv.read_points(store, bbox=box, where=where)
    mask = range_mask(cloud.value, rng) & np.isin(cloud.label, list(labels))
    mask &= box_mask(cloud.positions, box)
    # the input, filtered (as a multiset: rows come in storage order)
    assert rows_multiset(got.positions, got.attributes["value"], got.attributes["label"]) == (
        rows_multiset(cloud.positions[mask], cloud.value[mask], cloud.label[mask])
    )
    # the plain read, filtered: same rows in the same order
    plain = zv.read_points(store, bbox=box)
    keep = range_mask(plain.attributes["value"], rng) & np.isin(
        plain.attributes["label"], list(labels)
    )
    np.testing.assert_array_equal(got.positions, plain.positions[keep])
    np.testing.assert_array_equal(got.attributes["label"], plain.attributes["label"][keep])
    assert zv.count(store, bbox=box, where=where) == int(mask.sum())


@settings(max_examples=30)
@given(
    cloud=clouds(ndim=3),
    center=st.tuples(*[st.integers(0, 32).map(lambda v: v / 2) for _ in range(3)]),
    radius=st.integers(0, 20).map(lambda v: v / 2),
    limit=st.one_of(st.none(), st.integers(0, 10)),
)
def test_sphere_and_limit(cloud: Cloud, center: Any, radius: float, limit: int | None) -> None:
    store = _write(cloud)
    got = zv.read_points(store, sphere=(center, radius), limit=limit)
    mask = sphere_mask(cloud.positions, np.asarray(center), radius)
    assert zv.count(store, sphere=(center, radius)) == int(mask.sum())
    plain = zv.read_points(store)
    keep = np.flatnonzero(sphere_mask(plain.positions, np.asarray(center), radius))
    if limit is not None:
        keep = keep[:limit]  # limit: the first N of the plain read's (storage) order
    np.testing.assert_array_equal(got.positions, plain.positions[keep])
    if limit is None:
        assert rows_multiset(got.positions) == rows_multiset(cloud.positions[mask])


@settings(max_examples=25)
@given(cloud=clouds(with_objects=True), rng=ranges())
def test_object_attribute_filters_points(cloud: Cloud, rng: Any) -> None:
    assert cloud.objects is not None
    ids = np.unique(cloud.objects)
    score = np.linspace(0.0, 1.0, len(ids))
    store = _write(cloud, object_attributes={"score": score})
    got = zv.read_points(store, where={"score": rng})
    ok_ids = ids[range_mask(score, rng)]
    mask = np.isin(cloud.objects, ok_ids)
    assert rows_multiset(got.positions, got.vertex_object_ids) == rows_multiset(
        cloud.positions[mask], cloud.objects[mask]
    )
    assert zv.count(store, where={"score": rng}) == int(mask.sum())


def _nan_cloud() -> Cloud:
    pos = np.array([[0.5, 0.5], [1.5, 0.5], [5.0, 5.0], [9.0, 9.0]])
    return Cloud(pos, np.array([np.nan, 0.7, np.nan, 0.2]), np.array([1, 2, 3, 1]), None)


def test_nan_never_matches() -> None:
    store = _write(_nan_cloud())
    assert zv.read_points(store, where={"value": (None, None)}).attributes["value"].tolist() == [
        0.7,
        0.2,
    ]
    assert len(zv.read_points(store, where={"value": (0.5, None)})) == 1
    assert zv.count(store, where={"value": (None, 1.0)}) == 2
    # the all-NaN chunk is pruned by its statistics (NaN min/max)
    assert zv.explain(store, where={"value": (None, None)}).chunks_read == 2


def test_absent_attribute_is_a_clear_error() -> None:
    store = _write(_nan_cloud())
    with pytest.raises(
        zv.InvalidInputError, match=r"no attribute 'nope'.*attributes: \['label', 'value'\]"
    ):
        zv.read_points(store, where={"nope": (0, 1)})
    with pytest.raises(zv.InvalidInputError, match="no attribute"):
        zv.count(store, where={"object_attributes/value": 1})
    with pytest.raises(zv.InvalidInputError, match="range"):
        zv.read_points(store, where={"value": (1, 2, 3)})
    with pytest.raises(zv.InvalidInputError, match="limit"):
        zv.read_points(store, limit=-1)


def test_categorical_and_scalar_conditions() -> None:
    store = MemoryStore()
    pos = np.array([[0.5, 0.5], [5.0, 5.0], [9.0, 1.0]])
    zv.write_points(store, pos, chunk_shape=(4, 4), attributes={"kind": np.array(["a", "b", "a"])})
    assert zv.read_points(store, where={"kind": "a"}).positions.tolist() == [[0.5, 0.5], [9.0, 1.0]]
    assert len(zv.read_points(store, where={"kind": {"zz"}})) == 0
    assert zv.explain(store, where={"kind": {"b"}}).chunks_read == 1
    with pytest.raises(zv.InvalidInputError, match="categorical"):
        zv.read_points(store, where={"kind": (0, 1)})


def test_reader_read_takes_the_same_keywords() -> None:
    store = _write(_nan_cloud())
    with zv.open(store) as r:
        got = r.read(where={"label": {1}}, sphere=([0.0, 0.0], 20.0), limit=1)
    assert got.positions.tolist() == [[0.5, 0.5]]


@settings(max_examples=15)
@given(cloud=clouds(), rng=ranges(), box=boxes())
def test_combined_with_levels(cloud: Cloud, rng: Any, box: Any) -> None:
    store = _write(cloud, bin_shape=(1.0, 1.0))
    zv.build_pyramid(store, [(2, 2), (4, 4)])
    got = zv.read_points(store, level=1, bbox=box, where={"value": rng})
    plain = zv.read_points(store, level=1, bbox=box)
    keep = range_mask(plain.attributes["value"], rng)
    np.testing.assert_array_equal(got.positions, plain.positions[keep])
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == int(keep.sum())
