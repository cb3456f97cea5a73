"""The chunk-by-chunk paths of point ``count`` and ``where=`` against brute-force NumPy.

``count`` of a box counts whole chunks from ``vertex_counts`` and tests only the sides that
cut the others, in float32 with bounds that compare exactly like float64 ones; ``where=``
evaluates conditions chunk by chunk on the stored columns (codes for categories), then
decodes positions and attributes of the kept rows only.  Cases: float32 box ends between
representable values, edge and empty boxes, NaN values, Zarr v2 and v3, stores without
statistics, objects (kept rows spanning chunk ends), categorical sets.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.query.shapes import stored_bound

LABELS = np.array(["a", "b", "c", "d"])


def _cloud(seed: int, n: int = 3000) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 40, (n, 3)).astype(np.float32)
    pos[: n // 10] = np.round(pos[: n // 10])  # exact chunk and bin boundaries too
    value = rng.random(n).astype(np.float32)
    value[rng.random(n) < 0.05] = np.nan
    return {
        "pos": pos,
        "value": value,
        "codes": rng.integers(0, len(LABELS), n),
        "objects": rng.integers(0, 50, n),
    }


def _write(path: str, data: dict[str, Any], objects: bool = False, **kw: Any) -> None:
    zv.write_points(
        path,
        data["pos"],
        chunk_shape=(10.0, 10.0, 10.0),
        bin_shape=(2.5, 2.5, 2.5),
        attributes={"value": data["value"], "label": LABELS[data["codes"]]},
        vertex_object_ids=data["objects"] if objects else None,
        **kw,
    )


@pytest.fixture(scope="module", params=[2, 3])
def stores(request: Any, tmp_path_factory: Any) -> tuple[str, str, dict[str, Any]]:
    """A point store (Zarr v2 or v3) and a copy without statistics, with their input."""
    data = _cloud(request.param)
    root = tmp_path_factory.mktemp(f"fast{request.param}")
    path = str(root / "p.zarrvectors")
    _write(path, data, zarr_format=request.param)
    bare = root / "bare.zarrvectors"
    shutil.copytree(path, bare)
    shutil.rmtree(bare / "0" / "statistics")
    shutil.rmtree(bare / "0" / "value_sets")
    return path, str(bare), data


def _in_box(pos: Any, lo: Any, hi: Any) -> Any:
    p = pos.astype(np.float64)  # brute force: exact comparisons in float64
    return np.all((p >= np.asarray(lo, np.float64)) & (p < np.asarray(hi, np.float64)), axis=1)


def _in_range(values: Any, low: float | None, high: float | None) -> Any:
    v = values.astype(np.float64)
    keep = ~np.isnan(v)
    with np.errstate(invalid="ignore"):
        if low is not None:
            keep &= v >= low
        if high is not None:
            keep &= v < high
    return keep


coords = st.floats(-5.0, 45.0, allow_nan=False, width=64)


@settings(max_examples=40, deadline=None)
@given(lo=st.tuples(coords, coords, coords), size=st.tuples(coords, coords, coords))
def test_box_count_equals_brute_force(
    stores: tuple[str, str, dict[str, Any]], lo: Any, size: Any
) -> None:
    path, _, data = stores
    hi = [a + abs(s) for a, s in zip(lo, size, strict=True)]  # empty when a side is 0
    assert zv.count(path, bbox=(list(lo), hi)) == int(_in_box(data["pos"], lo, hi).sum())


def test_box_count_edges_and_empty(stores: tuple[str, str, dict[str, Any]]) -> None:
    path, _, data = stores
    pos = data["pos"]
    x = float(pos[0, 0])
    below = float(np.nextafter(np.float32(x), np.float32(-np.inf)))
    cases = [
        ([0, 0, 0], [40, 40, 40]),  # everything, whole chunks
        ([10, 10, 10], [20, 20, 20]),  # exactly one chunk: no position decoded
        ([x, 0, 0], [40, 40, 40]),  # a stored value as the lower end: kept
        ([0, 0, 0], [x, 40, 40]),  # ... as the upper end: not kept
        ([below + (x - below) / 2, 0, 0], [40, 40, 40]),  # between two float32 values
        ([5, 5, 5], [5, 30, 30]),  # empty box
        ([100, 100, 100], [200, 200, 200]),  # outside the grid
    ]
    for lo, hi in cases:
        assert zv.count(path, bbox=(lo, hi)) == int(_in_box(pos, lo, hi).sum()), (lo, hi)


@settings(max_examples=25, deadline=None)
@given(
    low=st.one_of(st.none(), st.floats(0, 1, width=64)),
    width=st.floats(0, 0.5, width=64),
    labels=st.sets(st.sampled_from(["a", "b", "c", "d", "zz"]), max_size=3),
    box=st.one_of(st.none(), st.tuples(coords, coords)),
)
def test_where_equals_brute_force(
    stores: tuple[str, str, dict[str, Any]],
    low: float | None,
    width: float,
    labels: set[str],
    box: Any,
) -> None:
    high = None if low is None else low + width
    data = stores[2]
    keep = _in_range(data["value"], low, high)
    where: dict[str, Any] = {"value": (low, high)}
    if labels:
        where["label"] = labels
        keep &= np.isin(LABELS[data["codes"]], list(labels))
    bbox = None
    if box is not None:
        bbox = ([box[0]] * 3, [box[0] + abs(box[1])] * 3)
        keep &= _in_box(data["pos"], *bbox)
    for path in stores[:2]:  # with statistics and without
        got = zv.read_points(path, where=where, bbox=bbox)
        plain = zv.read_points(path, bbox=bbox)
        mask = _in_range(plain.attributes["value"], low, high)
        if labels:
            mask &= np.isin(plain.attributes["label"], list(labels))
        # the plain read filtered: same rows, same order
        np.testing.assert_array_equal(got.positions, plain.positions[mask])
        np.testing.assert_array_equal(got.attributes["value"], plain.attributes["value"][mask])
        np.testing.assert_array_equal(got.attributes["label"], plain.attributes["label"][mask])
        assert len(got) == int(keep.sum())
        assert zv.count(path, where=where, bbox=bbox) == int(keep.sum())


def test_float32_range_ends_compare_exactly(stores: tuple[str, str, dict[str, Any]]) -> None:
    path, _, data = stores
    v = data["value"]
    finite = np.sort(v[~np.isnan(v)])
    edge = float(finite[len(finite) // 2])
    after = float(np.nextafter(np.float32(edge), np.float32(np.inf)))
    for low, high in [(edge, None), (None, edge), ((edge + after) / 2, None), (None, 0.51)]:
        want = int(_in_range(v, low, high).sum())
        assert len(zv.read_points(path, where={"value": (low, high)})) == want
        assert zv.count(path, where={"value": (low, high)}) == want
    # an open range drops NaN values only
    assert zv.count(path, where={"value": (None, None)}) == int((~np.isnan(v)).sum())


def test_stored_bound() -> None:
    f32 = np.dtype(np.float32)
    assert stored_bound(0.5, f32) == np.float32(0.5)
    b = stored_bound(0.51, f32)
    assert float(b) >= 0.51
    assert float(np.nextafter(b, np.float32(-np.inf))) < 0.51
    assert stored_bound(1e40, f32) == np.inf
    assert stored_bound(-1e40, f32) == -np.finfo(np.float32).max
    assert stored_bound(0.51, np.dtype(np.float64)) == 0.51


def test_where_with_objects_spans_chunk_ends(tmp_path: Path) -> None:
    data = _cloud(5, 4000)
    path = str(tmp_path / "o.zarrvectors")
    _write(path, data, objects=True)
    where = {"value": (0.2, 0.9), "label": {"a", "c"}}
    got = zv.read_points(path, where=where)
    plain = zv.read_points(path)
    mask = _in_range(plain.attributes["value"], 0.2, 0.9) & np.isin(
        plain.attributes["label"], ["a", "c"]
    )
    np.testing.assert_array_equal(got.positions, plain.positions[mask])
    np.testing.assert_array_equal(got.vertex_object_ids, plain.vertex_object_ids[mask])
    assert got.object_ids is not None
    np.testing.assert_array_equal(got.object_ids, np.unique(plain.vertex_object_ids[mask]))
    assert zv.count(path, where=where) == int(mask.sum())


def test_empty_results_keep_types(stores: tuple[str, str, dict[str, Any]]) -> None:
    path = stores[0]
    got = zv.read_points(path, where={"label": {"zz"}})
    assert len(got) == 0
    assert got.positions.shape == (0, 3)
    assert got.positions.dtype == np.float32
    assert got.attributes["value"].dtype == np.float32
    assert zv.count(path, where={"value": (2.0, None)}) == 0


def test_condition_on_a_multi_value_attribute_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "m.zarrvectors")
    pos = np.array([[1.0, 1.0], [5.0, 5.0]])
    zv.write_points(path, pos, chunk_shape=(4, 4), attributes={"rgb": np.ones((2, 3))})
    with pytest.raises(zv.InvalidInputError, match="values per row"):
        zv.read_points(path, where={"rgb": (0, 2)})
