"""Point clouds: write -> read returns the input exactly, queries equal brute-force filters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import (
    InvalidInputError,
    LevelNotFoundError,
    MetadataValidationError,
    StoreNotFoundError,
)
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.testing import POINT_CLOUD_EXAMPLES, PointCloudExample, assert_points_equal
from zarr_vectors.testing.stores import StoreFactory
from zarr_vectors.testing.strategies import PointCloudCase, bboxes, point_clouds

PROPERTY = settings(
    max_examples=7,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""Few examples per store kind and format: 10 combinations run each property."""


def expected_points(case: PointCloudCase) -> zv.Points:
    return zv.Points(case.positions, dict(case.attributes), case.vertex_object_ids)


def n_chunks(pos: np.ndarray, chunk: tuple[float, ...]) -> int:
    coords = np.floor(pos.astype(np.float64) / np.asarray(chunk))
    return len(np.unique(coords, axis=0)) if len(pos) else 0


# --------------------------------------------------------------------------------------------
# properties: round trip, bounding boxes, objects


@PROPERTY
@given(case=point_clouds(attributes=True, exact=False))
def test_write_read_round_trip(store_factory: StoreFactory, zarr_format: int,
                               case: PointCloudCase) -> None:  # fmt: skip
    store = store_factory()
    before = case.positions.copy()
    summary = zv.write_points(store, zarr_format=zarr_format, **case.write_kwargs())
    np.testing.assert_array_equal(case.positions, before)  # input left alone
    assert summary.vertex_count == len(case.positions)
    assert summary.chunk_count == n_chunks(case.positions, case.chunk_shape)
    got = zv.read_points(store_factory.for_reading(store))
    assert got.positions.dtype == case.positions.dtype
    assert got.vertex_object_ids is None
    assert_points_equal(got, expected_points(case))


def filtered(case: PointCloudCase, box: tuple[tuple[float, ...], ...]) -> zv.Points:
    lo, hi = np.asarray(box[0], dtype=np.float64), np.asarray(box[1], dtype=np.float64)
    keep = np.all((case.positions >= lo) & (case.positions < hi), axis=1)
    return zv.Points(
        case.positions[keep],
        {k: v[keep] for k, v in case.attributes.items()},
        None if case.vertex_object_ids is None else case.vertex_object_ids[keep],
    )


@st.composite
def clouds_and_boxes(draw: st.DrawFn) -> tuple[PointCloudCase, list[Any]]:
    case = draw(point_clouds(attributes=True, objects=draw(st.booleans()), max_points=40))
    return case, draw(st.lists(bboxes(case.chunk_shape), min_size=1, max_size=5))


@PROPERTY
@given(data=clouds_and_boxes())
def test_bbox_read_equals_numpy_filter(store_factory: StoreFactory, zarr_format: int,
                                       data: tuple[PointCloudCase, list[Any]]) -> None:  # fmt: skip
    case, boxes = data
    store = store_factory()
    zv.write_points(store, zarr_format=zarr_format, **case.write_kwargs())
    reader = store_factory.for_reading(store)
    for box in boxes:
        got = zv.read_points(reader, bbox=box)
        assert_points_equal(got, filtered(case, box))


@PROPERTY
@given(case=point_clouds(objects=True, min_points=1, max_points=25), data=st.data())
def test_object_and_group_reads(store_factory: StoreFactory, zarr_format: int,
                                case: PointCloudCase, data: st.DataObject) -> None:  # fmt: skip
    assert case.vertex_object_ids is not None
    distinct = np.unique(case.vertex_object_ids)
    groups = {
        f"g{i}": np.array(data.draw(st.lists(st.sampled_from(distinct.tolist()), unique=True)),
                          dtype=distinct.dtype)
        for i in range(data.draw(st.integers(0, 3)))
    }  # fmt: skip
    store = store_factory()
    zv.write_points(store, zarr_format=zarr_format, groups=groups, **case.write_kwargs())
    reader = store_factory.for_reading(store)
    full = zv.read_points(reader)
    assert_points_equal(full, expected_points(case))
    wanted = np.array(data.draw(st.lists(st.sampled_from(distinct.tolist()), unique=True)),
                      dtype=distinct.dtype)  # fmt: skip
    keep = np.isin(case.vertex_object_ids, wanted)
    got = zv.read_points(reader, object_ids=wanted)
    assert_points_equal(got, zv.Points(case.positions[keep], {}, case.vertex_object_ids[keep]))
    for name, members in groups.items():
        keep = np.isin(case.vertex_object_ids, members)
        got = zv.read_points(reader, group=name)
        assert_points_equal(got, zv.Points(case.positions[keep], {}, case.vertex_object_ids[keep]))


# --------------------------------------------------------------------------------------------
# the canonical catalogue


@pytest.mark.parametrize(
    "example", POINT_CLOUD_EXAMPLES, ids=[e.name for e in POINT_CLOUD_EXAMPLES]
)
@pytest.mark.parametrize("kind", ["memory", "local_path"])
def test_canonical_examples_round_trip(tmp_path: Path, kind: str, zarr_format: int,
                                       example: PointCloudExample) -> None:  # fmt: skip
    # every store kind runs the property tests above; the catalogue runs on two of them
    store = StoreFactory(kind, tmp_path)()
    zv.write_points(store, zarr_format=zarr_format, **example.write_kwargs())
    assert_points_equal(zv.read_points(store), example.expected())


# --------------------------------------------------------------------------------------------
# dtypes and attributes


def round_trip(positions: Any, **kwargs: Any) -> zv.Points:
    store = MemoryStore()
    kwargs.setdefault("chunk_shape", (10.0,) * np.asarray(positions).shape[1])
    zv.write_points(store, positions, **kwargs)
    return zv.read_points(store)


def test_float32_stays_float32_bit_identical() -> None:
    pos = np.array([[-0.0, 1e-40, 3.4e6], [0.1, -0.1, 10.0], [np.float32(9.999999), 0, 20]],
                   dtype=np.float32)  # fmt: skip
    got = round_trip(pos, chunk_shape=(10.0, 10.0, 1e6))
    assert got.positions.dtype == np.float32
    assert_points_equal(got, zv.Points(pos))
    assert np.signbit(got.positions[got.positions[:, 2] == np.float32(3.4e6)][0, 0])  # -0.0


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float16])
def test_other_numeric_positions_become_float64(dtype: type[np.generic]) -> None:
    pos = np.array([[1, 2], [3, 4]], dtype=dtype)
    got = round_trip(pos)
    assert got.positions.dtype == np.float64
    assert_points_equal(got, zv.Points(pos.astype(np.float64)))


def test_big_endian_positions_are_stored_little_endian() -> None:
    pos = np.array([[1.5, -2.5], [30.0, 4.0]], dtype=">f8")
    got = round_trip(pos)
    assert got.positions.dtype == np.dtype("<f8")
    assert_points_equal(got, zv.Points(pos.astype("<f8")))


ATTRIBUTES: dict[str, np.ndarray] = {
    "rgb": np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [1, 2, 3]], dtype=np.uint8),
    "normal": np.arange(12, dtype=np.float32).reshape(4, 3) / 7,
    "single_channel": np.array([[1.0], [2.0], [np.nan], [-np.inf]]),
    "count": np.array([-(2**31), 0, 2**31 - 1, 7], dtype=np.int32),
    "big": np.array([0, 2**63, 2**64 - 1, 1], dtype=np.uint64),
    "flag": np.array([True, False, False, True]),
    "tiny": np.array([-128, 127, 0, -1], dtype=np.int8),
    "half": np.array([0.5, -0.0, np.inf, 65504], dtype=np.float16),
    "label": np.array(["soma", "", "axon", "soma"]),
}
POS4 = np.array([[0.0, 0.0, 0.0], [12.0, 0.0, 0.0], [0.0, -3.0, 25.0], [12.0, 0.0, 0.0]])


def test_attributes_round_trip_with_dtype_and_shape() -> None:
    got = round_trip(POS4, attributes=ATTRIBUTES)
    for name, values in ATTRIBUTES.items():
        if values.dtype.kind != "U":
            assert got.attributes[name].dtype == values.dtype, name
        assert got.attributes[name].shape == values.shape, name
    assert all(isinstance(v, str) for v in got.attributes["label"].tolist())
    assert_points_equal(got, zv.Points(POS4, ATTRIBUTES))


def test_string_attributes_are_stored_as_categories() -> None:
    store = MemoryStore()
    zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0), attributes=ATTRIBUTES)
    arr = zarr.open_group(store, mode="r")["0/attributes/label"]
    assert arr.attrs["categories"] == ["", "axon", "soma"]
    assert arr.attrs["dtype"] in ("<i4", "<i8", "|i1", "<i2", "|u1", "<u2", "<u4")


def test_attribute_selection() -> None:
    store = MemoryStore()
    zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0), attributes=ATTRIBUTES)
    assert set(zv.read_points(store, attributes=False).attributes) == set()
    assert set(zv.read_points(store, attributes="flag").attributes) == {"flag"}
    assert set(zv.read_points(store, attributes=["rgb", "label"]).attributes) == {"rgb", "label"}
    with pytest.raises(InvalidInputError, match="unknown attribute"):
        zv.read_points(store, attributes=["nope"])


# --------------------------------------------------------------------------------------------
# objects, groups and their attributes


IDS = np.array([2**64 - 1, 7, 7, 2**63, 2**64 - 1, 123], dtype=np.uint64)
POS6 = np.arange(18, dtype=np.float64).reshape(6, 3) * 3.0 - 20.0


def objects_store(zarr_format: int = 3) -> MemoryStore:
    store = MemoryStore()
    zv.write_points(
        store, POS6, chunk_shape=(10.0, 10.0, 10.0), zarr_format=zarr_format, vertex_object_ids=IDS,
        object_attributes={"volume": [1.5, 2.5, 3.5, 4.5],
                           "kind": ["a", "b", "a", "c"],
                           "xyz": np.arange(12.0).reshape(4, 3)},
        groups={"big": [2**63, 2**64 - 1], "small": np.array([7], np.uint64), "none": []},
        group_attributes={"score": [0.5, 1.0, 0.0], "tag": ["x", "y", "x"]},
    )  # fmt: skip
    return store


def points_of(ids: list[int]) -> zv.Points:
    keep = np.isin(IDS, np.array(ids, dtype=np.uint64))
    return zv.Points(POS6[keep], {}, IDS[keep])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_non_dense_uint64_object_ids(zarr_format: int) -> None:
    store = objects_store(zarr_format)
    full = zv.read_points(store)
    assert full.vertex_object_ids is not None
    assert full.vertex_object_ids.dtype == np.uint64
    assert_points_equal(full, zv.Points(POS6, {}, IDS))
    assert_points_equal(zv.read_points(store, object_ids=[7]), points_of([7]))
    assert_points_equal(zv.read_points(store, object_ids=np.array([2**64 - 1, 123], np.uint64)),
                        points_of([2**64 - 1, 123]))  # fmt: skip
    assert_points_equal(zv.read_points(store, object_ids=[]), points_of([]))
    assert_points_equal(zv.read_points(store, group="big"), points_of([2**63, 2**64 - 1]))
    assert_points_equal(zv.read_points(store, group=1), points_of([7]))
    assert_points_equal(zv.read_points(store, group="none"), points_of([]))
    both = zv.read_points(store, group="big", object_ids=[7, 2**63])
    assert_points_equal(both, points_of([2**63]))
    lo, hi = np.array([-20.0, -20.0, -20.0]), np.array([0.0, 0.0, 0.0])
    boxed = zv.read_points(store, bbox=(lo, hi), object_ids=[2**64 - 1, 7])
    keep = np.isin(IDS, [2**64 - 1, 7]) & np.all((lo <= POS6) & (hi > POS6), axis=1)
    assert_points_equal(boxed, zv.Points(POS6[keep], {}, IDS[keep]))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_object_and_group_attributes_are_written(zarr_format: int) -> None:
    level = zarr.open_group(objects_store(zarr_format), mode="r")["0"]
    assert isinstance(level, zarr.Group)

    def values(path: str) -> list[Any]:
        arr = level[path]
        assert isinstance(arr, zarr.Array)
        return np.asarray(arr[...]).tolist()  # type: ignore[no-any-return]

    # one row per distinct user id, ascending: 7, 123, 2**63, 2**64-1
    assert values("object_attributes/id") == [7, 123, 2**63, 2**64 - 1]
    assert level["object_attributes/id"].dtype == np.uint64
    assert values("object_attributes/volume") == [1.5, 2.5, 3.5, 4.5]
    assert values("object_attributes/xyz") == np.arange(12.0).reshape(4, 3).tolist()
    kind = level["object_attributes/kind"]
    assert [kind.attrs["categories"][c] for c in values("object_attributes/kind")] == [
        "a", "b", "a", "c",
    ]  # fmt: skip
    assert level["groupings"].attrs["names"] == ["big", "small", "none"]
    assert values("groupings/offsets") == [0, 2, 3, 3]
    assert values("groupings/members") == [2, 3, 0]  # dense ids of 2**63, 2**64-1, 7
    assert values("groupings_attributes/score") == [0.5, 1.0, 0.0]
    tag = level["groupings_attributes/tag"]
    assert [tag.attrs["categories"][c] for c in values("groupings_attributes/tag")] == [
        "x", "y", "x",
    ]  # fmt: skip
    assert level.attrs["object_count"] == 4


def test_dense_object_ids_store_no_id_attribute() -> None:
    store = MemoryStore()
    ids = np.array([1, 0, 2, 1], dtype=np.int32)
    zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0), vertex_object_ids=ids)
    assert "object_attributes/id" not in zarr.open_group(store, mode="r")["0"]  # type: ignore[operator]
    got = zv.read_points(store, object_ids=[1])
    assert_points_equal(got, zv.Points(POS4[ids == 1], {}, ids[ids == 1]))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"object_ids": [8]}, InvalidInputError, "8"),
        ({"group": "missing"}, InvalidInputError, "unknown group 'missing'"),
        ({"group": 7}, InvalidInputError, "group id 7 out of range"),
    ],
)
def test_object_query_errors(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        zv.read_points(objects_store(), **kwargs)


def test_object_queries_need_objects() -> None:
    store = MemoryStore()
    zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0))
    with pytest.raises(InvalidInputError, match="no objects"):
        zv.read_points(store, object_ids=[0])
    with pytest.raises(InvalidInputError, match="no objects"):
        zv.read_points(store, group="g")


# --------------------------------------------------------------------------------------------
# metadata written with the points


def test_root_metadata_describes_the_data() -> None:
    store = MemoryStore()
    summary = zv.write_points(
        store, POS6, chunk_shape=(10.0, 10.0, 10.0), bin_shape=(5.0, 5.0, 2.5),
        coordinate_system="RAS", axis_units="micrometer", axis_names=("z", "y", "x"),
        source_description="test", notes="n", custom_metadata={"k": [1, 2]},
    )  # fmt: skip
    attrs = zv.open_store(store).attrs.asdict()
    meta = RootMetadata.from_dict(attrs)
    assert meta.geometry_type.value == "point_cloud"
    assert meta.bounding_box is not None
    assert meta.bounding_box.min == tuple(POS6.min(axis=0).tolist())
    assert meta.bounding_box.max == tuple(POS6.max(axis=0).tolist())
    assert meta.chunk_grid == summary.chunk_grid
    assert meta.chunk_grid.origin == (-2, -2, -2)  # type: ignore[union-attr]
    assert (meta.coordinate_system, meta.axis_units) == ("RAS", "micrometer")
    assert [a.name for a in meta.multiscales.axes] == ["z", "y", "x"]
    assert meta.custom_metadata == {"k": [1, 2]}
    assert attrs["creation_timestamp"].endswith("Z")
    level = zarr.open_group(store, mode="r")["0"].attrs.asdict()
    assert level["vertex_count"] == 6
    assert level["chunk_count"] == summary.chunk_count == n_chunks(POS6, (10.0, 10.0, 10.0))
    assert level["bin_shape"] == [5.0, 5.0, 2.5]
    counts = np.asarray(zarr.open_group(store, mode="r")["0/vertex_counts"][...])  # type: ignore[index]
    assert counts.shape == summary.chunk_grid.shape
    assert counts.sum() == 6


def test_bounds_grow_the_grid() -> None:
    store = MemoryStore()
    summary = zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0),
                              bounds=([-50.0, -50.0, -50.0], [49.0, 49.0, 49.0]))  # fmt: skip
    assert summary.chunk_grid.origin == (-5, -5, -5)
    assert summary.chunk_grid.shape == (10, 10, 10)
    assert_points_equal(zv.read_points(store), zv.Points(POS4))


def test_empty_point_set() -> None:
    for dtype in (np.float32, np.float64):
        got = round_trip(np.zeros((0, 3), dtype=dtype), attributes={"a": np.zeros(0)})
        assert got.positions.shape == (0, 3)
        assert got.positions.dtype == dtype
        assert got.attributes["a"].shape == (0,)


def test_read_errors() -> None:
    store = MemoryStore()
    zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0))
    with pytest.raises(LevelNotFoundError, match="level 1"):
        zv.read_points(store, level=1)
    with pytest.raises(StoreNotFoundError):
        zv.read_points(MemoryStore())
    other = MemoryStore()
    zv.create_store(other, RootMetadata.create(geometry_type="mesh", chunk_shape=(1.0, 1.0)))
    with pytest.raises(InvalidInputError, match="not 'point_cloud'"):
        zv.read_points(other)


# --------------------------------------------------------------------------------------------
# input errors


@dataclass(frozen=True)
class ExpectFail:
    """Arguments to ``write_points`` / ``read_points`` that must fail with ``match``."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    error: type[Exception] = InvalidInputError
    match: str = ""
    positions: Any = field(default_factory=POS4.copy)


WRITE_FAILURES = {
    "nan_names_the_row": ExpectFail(
        positions=np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [2.0, np.nan, 2.0]]),
        match=r"non-finite coordinate nan at row 2, column 1",
    ),
    "inf_names_the_row": ExpectFail(
        positions=np.array([[0.0, 0.0, -np.inf]], dtype=np.float32), match="row 0, column 2"
    ),
    "attribute_too_short": ExpectFail({"attributes": {"a": np.arange(3)}}, match="'a' has 3 rows, expected 4"),
    "attribute_too_long": ExpectFail({"attributes": {"a": np.arange(5)}}, match="'a' has 5 rows"),
    "attribute_scalar": ExpectFail({"attributes": {"a": 1.0}}, match="'a' has a scalar"),
    "attribute_3d": ExpectFail({"attributes": {"a": np.zeros((4, 2, 2))}}, match="1-D or 2-D"),
    "attribute_name": ExpectFail({"attributes": {"not ok": np.arange(4)}}, match="identifier"),
    "attribute_complex": ExpectFail({"attributes": {"c": np.ones(4, complex)}}, match="dtype"),
    "attribute_objects": ExpectFail({"attributes": {"o": np.array([1, "a", 2, 3], dtype=object)}},
                                    match="only strings"),
    "bin_not_dividing": ExpectFail({"bin_shape": (3.0, 10.0, 10.0)}, MetadataValidationError,
                                   "does not divide chunk_shape 10.0 on axis 0"),
    "bin_larger": ExpectFail({"bin_shape": (20.0, 10.0, 10.0)}, MetadataValidationError,
                             "does not divide"),
    "bounds_dims": ExpectFail({"bounds": ([0.0, 0.0], [1.0, 1.0])}, match="3 values each"),
    "object_ids_length": ExpectFail({"vertex_object_ids": [1, 2]}, match="one entry per point"),
    "object_ids_float": ExpectFail({"vertex_object_ids": np.zeros(4)}, match="integers"),
    "object_attributes_without_ids": ExpectFail({"object_attributes": {"a": [1]}}, match="need vertex_object_ids"),
    "object_attribute_rows": ExpectFail({"vertex_object_ids": [0, 0, 5, 5], "object_attributes": {"a": [1]}},
                                        match="'a' has 1 rows, expected 2"),
    "reserved_id_attribute": ExpectFail({"vertex_object_ids": [0, 0, 5, 5], "object_attributes": {"id": [1, 2]}},
                                        match="reserved"),
    "group_member_unknown": ExpectFail({"vertex_object_ids": [0, 0, 1, 1], "groups": {"g": [9]}}, match="9"),
    "positions_1d": ExpectFail(positions=np.arange(3.0), match=r"shape \(N, D\)"),
    "positions_complex": ExpectFail(positions=np.ones((2, 2), complex), match="numeric"),
}  # fmt: skip


@pytest.mark.parametrize("case", WRITE_FAILURES.values(), ids=WRITE_FAILURES.keys())
def test_write_errors(case: ExpectFail) -> None:
    store = MemoryStore()
    kwargs = {"chunk_shape": (10.0, 10.0, 10.0), **case.kwargs}
    with pytest.raises(case.error, match=case.match):
        zv.write_points(store, case.positions, **kwargs)
    with pytest.raises(StoreNotFoundError):  # nothing was written
        zv.open_store(store)


@pytest.mark.parametrize(
    ("chunk_shape", "match"),
    [((10.0, 10.0), "chunk_shape: expected 3 values"), ((10.0, -1.0, 10.0), "chunk_shape")],
    ids=["wrong_length", "negative"],
)
def test_bad_chunk_shape_is_named(chunk_shape: tuple[float, ...], match: str) -> None:
    with pytest.raises(MetadataValidationError, match=match):
        zv.write_points(MemoryStore(), POS4, chunk_shape=chunk_shape)


@pytest.mark.parametrize("pos", [[[1e20, 0.0]], [[0.0, 0.0], [1e20, 0.0]], [[-3.4e38, 0.0]]])
def test_coordinates_beyond_the_chunk_index_range(pos: list[list[float]]) -> None:
    with pytest.raises(InvalidInputError, match="row"):
        zv.write_points(MemoryStore(), np.array(pos), chunk_shape=(10.0, 10.0))


@pytest.mark.parametrize(
    ("bbox", "match"),
    [
        (([0.0, 0.0], [1.0, 1.0]), "3 values each"),
        (([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]), "3 values each"),
        (zv.BoundingBox(min=(0.0,), max=(1.0,)), "bbox has 1 dimensions, the store has 3"),
        (([5.0, 0.0, 0.0], [1.0, 1.0, 1.0]), "min 5.0 > max 1.0 on axis 0"),
        (([np.nan, 0.0, 0.0], [1.0, 1.0, 1.0]), "not finite"),
    ],
    ids=["too_few_dims", "too_many_dims", "bbox_object_dims", "inverted", "nan"],
)
def test_bbox_errors(bbox: Any, match: str) -> None:
    store = MemoryStore()
    zv.write_points(store, POS4, chunk_shape=(10.0, 10.0, 10.0))
    with pytest.raises(ValueError, match=match):
        zv.read_points(store, bbox=bbox)


# --------------------------------------------------------------------------------------------
# regressions of fixed bugs


def test_single_point_with_several_bins_per_chunk() -> None:
    """Chunk location once worked in place on a view of a one-row float64 input."""
    pos = np.array([[3.0, 7.0, 1.0]])
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(10.0, 10.0, 10.0), bin_shape=(5.0, 5.0, 5.0))
    np.testing.assert_array_equal(pos, [[3.0, 7.0, 1.0]])
    assert_points_equal(zv.read_points(store), zv.Points(np.array([[3.0, 7.0, 1.0]])))


@pytest.mark.parametrize(
    ("pos", "chunk", "box"),
    [
        ([[1.7, 0.05], [1.65, 0.05]], (0.1, 0.1), ([0.0, 0.0], [17 * 0.1, 1.0])),
        ([[-5e-324, 1.0], [-1.0, 1.0]], (10.0, 10.0), ([-10.0, 0.0], [0.0, 10.0])),
    ],
    ids=["decimal_chunk", "negative_subnormal"],
)
def test_bbox_finds_points_rounded_into_the_next_chunk(
    pos: list[list[float]], chunk: tuple[float, ...], box: Any
) -> None:
    """Box planning once skipped the chunk floor(p / C) == max / C of points just below max."""
    points = np.array(pos)
    store = MemoryStore()
    zv.write_points(store, points, chunk_shape=chunk)
    lo, hi = np.array(box[0]), np.array(box[1])
    keep = np.all((points >= lo) & (points < hi), axis=1)
    assert keep.all()
    assert_points_equal(zv.read_points(store, bbox=box), zv.Points(points[keep]))
