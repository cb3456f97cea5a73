"""Line-segment stores against brute force (FORMAT.md §7: each object is one 2-vertex segment).

A segment whose endpoints fall in different chunks is one row in each chunk plus one
``cross_chunk_links`` record; a box read returns every segment with an endpoint in the box.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.testing.stores import StoreFactory

AnyArray = npt.NDArray[Any]

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

LABELS = ("", "soma", "ünï", "spine neck")


@dataclass(frozen=True)
class SegmentCase:
    """One ``write_lines`` call."""

    endpoints: AnyArray
    """(M, 2, D) segment endpoints."""
    chunk_shape: tuple[float, ...]
    """Chunk extent per axis."""
    attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-endpoint attributes, (M, 2, ...)."""
    object_attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-segment attributes, (M, ...)."""
    ids: AnyArray | None = None
    """User ids or None."""
    groups: dict[str, list[int]] = field(default_factory=dict)
    """Group name -> member indices into the segments."""
    group_attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-group attributes."""

    @property
    def paths(self) -> list[AnyArray]:
        return list(self.endpoints)

    @property
    def out_ids(self) -> AnyArray:
        m = len(self.endpoints)
        return np.arange(m, dtype=np.int64) if self.ids is None else self.ids

    def write(self, store: Any, **kw: Any) -> zv.WriteSummary:
        return zv.write_lines(
            store,
            self.endpoints,
            chunk_shape=self.chunk_shape,
            attributes=self.attributes,
            object_attributes=self.object_attributes,
            object_ids=self.ids,
            groups={g: self.out_ids[m] for g, m in self.groups.items()},
            group_attributes=self.group_attributes,
            **kw,
        )


def _coordinate(c: float) -> st.SearchStrategy[float]:
    return st.one_of(
        st.integers(-12, 12).map(lambda k: k * c / 4),
        st.floats(-3 * c, 3 * c, allow_nan=False, allow_subnormal=False, width=32),
    )


@st.composite
def segment_cases(draw: st.DrawFn, *, min_segments: int = 1, max_segments: int = 6) -> SegmentCase:
    """Segments inside one chunk, across chunks, on boundaries, and degenerate (a == b)."""
    d = draw(st.sampled_from((2, 3, 4)))
    chunk = tuple(draw(st.sampled_from((0.5, 1.0, 2.0))) for _ in range(d))
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    vertex = st.tuples(*[_coordinate(c) for c in chunk])
    m = draw(st.integers(min_segments, max_segments))
    rows = []
    for _ in range(m):
        a = draw(vertex)
        rows.append((a, a if draw(st.integers(0, 5)) == 0 else draw(vertex)))
    ends = np.array(rows, dtype=np.float64).reshape(m, 2, d).astype(dtype)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kinds = draw(st.sets(st.sampled_from(("t", "rgb", "end", "label"))))
    makers = {
        "t": lambda: rng.random((m, 2)).astype(np.float32),
        "rgb": lambda: rng.integers(0, 256, (m, 2, 3)).astype(np.uint8),
        "end": lambda: rng.random((m, 2)) > 0.5,
        "label": lambda: np.array(LABELS)[rng.integers(0, len(LABELS), (m, 2))],
    }
    okinds = draw(st.sets(st.sampled_from(("kind", "length", "v"))))
    omakers = {
        "kind": lambda: np.array(LABELS)[rng.integers(0, len(LABELS), m)],
        "length": lambda: rng.normal(size=m),
        "v": lambda: rng.integers(-9, 9, (m, 2)).astype(np.int32),
    }
    ids = None
    if draw(st.booleans()):
        ids = np.array(
            draw(st.lists(st.integers(0, 2**64 - 1), min_size=m, max_size=m, unique=True)),
            dtype=np.uint64,
        )
    names = draw(st.lists(st.sampled_from(("a", "b", "ünï")), max_size=2, unique=True))
    groups = {g: draw(st.lists(st.integers(0, m - 1), unique=True)) for g in names}
    return SegmentCase(
        ends,
        chunk,
        {k: makers[k]() for k in sorted(kinds)},
        {k: omakers[k]() for k in sorted(okinds)},
        ids,
        groups,
        {"w": rng.random(len(names))} if names else {},
    )


def assert_segments(oracle: Any, r: zv.Lines, case: SegmentCase, sel: Sequence[int]) -> None:
    """``r`` holds exactly segments ``sel``, in that order, with their attributes."""
    sel = list(sel)
    assert r.object_ids.tolist() == case.out_ids[sel].tolist()
    oracle.assert_identical(r.endpoints, case.endpoints[sel], "endpoints")
    oracle.assert_columns(
        r.attributes, {k: v[sel] for k, v in case.attributes.items()}, "endpoint attribute"
    )
    oracle.assert_columns(
        r.object_attributes,
        {k: v[sel] for k, v in case.object_attributes.items()},
        "segment attribute",
    )
    chosen = set(sel)
    assert sorted(r.groups) == sorted(case.groups)
    for g, members in case.groups.items():
        kept = [i for i in members if i in chosen]
        assert r.groups[g].tolist() == case.out_ids[kept].tolist(), g


# --------------------------------------------------------------------------------------------
# round trips and queries


@pytest.mark.slow
@SETTINGS
@given(data=st.data(), case=segment_cases(), fmt=st.sampled_from((2, 3)))
def test_segment_reads_equal_brute_force(
    path_oracle: Any, data: st.DataObject, case: SegmentCase, fmt: int
) -> None:
    store = MemoryStore()
    summary = case.write(store, zarr_format=fmt)
    m = len(case.endpoints)
    assert summary.vertex_count == 2 * m
    assert_segments(path_oracle, zv.read_lines(store), case, range(m))

    d = case.endpoints.shape[2]
    corner = st.integers(-12, 12)
    lo = [data.draw(corner) * c / 4 for c in case.chunk_shape]
    hi = [
        a + data.draw(st.integers(1, 12)) * c / 4 for a, c in zip(lo, case.chunk_shape, strict=True)
    ]
    sel = path_oracle.touching(case.paths, lo, hi)
    if sel:  # an empty result crashes; see test_box_that_selects_nothing
        assert_segments(path_oracle, zv.read_lines(store, bbox=(lo, hi)), case, sel)
    everything = ([-1e9] * d, [1e9] * d)
    assert_segments(path_oracle, zv.read_lines(store, bbox=everything), case, range(m))

    order = data.draw(st.lists(st.integers(0, m - 1), min_size=1, unique=True))
    assert_segments(path_oracle, zv.read_lines(store, object_ids=case.out_ids[order]), case, order)
    both = [i for i in order if i in set(sel)]
    if both:
        r = zv.read_lines(store, object_ids=case.out_ids[order], bbox=(lo, hi))
        assert_segments(path_oracle, r, case, both)
    for index, (name, members) in enumerate(case.groups.items()):
        if members:
            by_name = zv.read_lines(store, group=name)
            assert sorted(by_name.object_ids.tolist()) == sorted(case.out_ids[members].tolist())
            assert zv.read_lines(store, group=index).object_ids.tolist() == (
                by_name.object_ids.tolist()
            )

    path_oracle.check_rows_and_links(store, case.paths, case.chunk_shape)
    i = order[0]
    path_oracle.check_single_object_reads(
        store,
        case.endpoints[i],
        case.chunk_shape,
        list(case.attributes),
        lambda: zv.read_lines(store, object_ids=case.out_ids[i : i + 1]),
    )


def _fixed_case(ndim: int = 3) -> SegmentCase:
    rng = np.random.default_rng(11)
    ends = rng.uniform(-2.0, 2.0, (8, 2, ndim)).astype(np.float32)
    ends[0] = 0.5  # both endpoints on the same chunk corner (degenerate segment)
    ends[1, 1] = ends[1, 0]
    return SegmentCase(
        ends,
        (0.5,) * ndim,
        {
            "t": rng.random((8, 2)).astype(np.float32),
            "rgb": rng.integers(0, 256, (8, 2, 3)).astype(np.uint8),
            "end": rng.random((8, 2)) > 0.5,
            "label": np.array(LABELS)[rng.integers(0, len(LABELS), (8, 2))],
        },
        {"kind": np.array(LABELS * 2), "length": rng.normal(size=8)},
        np.array([2**64 - 1 - k for k in range(8)], dtype=np.uint64),
        {"first": [0, 1], "rest": [7, 2, 3]},
        {"w": np.array([1.0, 2.0])},
    )


def test_round_trip_every_store(
    path_oracle: Any, store: Any, zarr_format: int, store_factory: StoreFactory
) -> None:
    case = _fixed_case()
    case.write(store, zarr_format=zarr_format)
    path_store = store_factory.for_reading(store)
    assert zv.open_store(path_store).attrs["geometry_type"] == "line"
    assert_segments(path_oracle, zv.read_lines(path_store), case, range(8))
    path_oracle.check_rows_and_links(path_store, case.paths, case.chunk_shape)
    for i in (0, 5):  # a degenerate segment and a crossing one
        path_oracle.check_single_object_reads(
            path_store,
            case.endpoints[i],
            case.chunk_shape,
            list(case.attributes),
            lambda i=i: zv.read_lines(path_store, object_ids=case.out_ids[i : i + 1]),
        )


@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_round_trip_each_dimension(path_oracle: Any, ndim: int) -> None:
    case = _fixed_case(ndim)
    store = MemoryStore()
    case.write(store)
    assert_segments(path_oracle, zv.read_lines(store), case, range(8))


def test_read_polylines_sees_segments_as_two_vertex_paths(path_oracle: Any) -> None:
    case = _fixed_case()
    store = MemoryStore()
    case.write(store)
    r = zv.read_polylines(store)
    path_oracle.assert_identical(r.positions, case.endpoints.reshape(16, 3), "positions")
    assert r.lengths.tolist() == [2] * 8
    path_oracle.assert_identical(r.attributes["rgb"], case.attributes["rgb"].reshape(16, 3), "rgb")


def test_group_attributes_round_trip(path_oracle: Any) -> None:
    case = _fixed_case()
    store = MemoryStore()
    case.write(store)
    r = zv.read_lines(store)
    path_oracle.assert_columns(r.group_attributes, case.group_attributes, "group attribute")  # type: ignore[attr-defined]


def test_box_that_selects_nothing() -> None:
    store = MemoryStore()
    _fixed_case().write(store)
    r = zv.read_lines(store, bbox=([50, 50, 50], [60, 60, 60]))
    assert r.endpoints.shape == (0, 2, 3)
    assert r.object_ids.tolist() == []


def test_zero_segments() -> None:
    store = MemoryStore()
    assert zv.write_lines(store, np.zeros((0, 2, 3)), chunk_shape=(1, 1, 1)).vertex_count == 0
    assert zv.read_lines(store).endpoints.shape == (0, 2, 3)


# --------------------------------------------------------------------------------------------
# errors


def test_read_lines_rejects_other_geometry_types() -> None:
    paths, points = MemoryStore(), MemoryStore()
    zv.write_polylines(paths, [np.zeros((2, 2))], chunk_shape=(1, 1))
    zv.write_points(points, np.zeros((2, 2)), chunk_shape=(1, 1))
    with pytest.raises(InvalidInputError, match="polyline"):
        zv.read_lines(paths)
    with pytest.raises(InvalidInputError, match="point_cloud"):
        zv.read_lines(points)


@pytest.mark.parametrize(
    ("endpoints", "kwargs", "message"),
    [
        (np.zeros((3, 3, 2)), {}, "shape"),
        (np.zeros((3, 2)), {}, "shape"),
        (np.zeros((3, 2, 2)), {"attributes": {"t": np.zeros(3)}}, "'t' must have shape"),
        (np.zeros((3, 2, 2)), {"attributes": {"t": np.zeros((4, 2))}}, "'t' must have shape"),
        (np.zeros((3, 2, 2)), {"object_attributes": {"s": np.zeros(2)}}, "'s' has 2 rows"),
        (np.zeros((3, 2, 2)), {"object_ids": [1, 2, 1]}, "duplicate id"),
        (np.zeros((3, 2, 2)), {"groups": {"g": [5]}}, "out of range"),
    ],
)
def test_bad_input_is_rejected(endpoints: AnyArray, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        zv.write_lines(MemoryStore(), endpoints, chunk_shape=(1, 1), **kwargs)


def test_non_finite_endpoint_names_the_row() -> None:
    ends = np.zeros((3, 2, 2))
    ends[1, 1, 0] = np.nan  # flat row 2 * 1 + 1
    with pytest.raises(InvalidInputError, match=r"row 3\b"):
        zv.write_lines(MemoryStore(), ends, chunk_shape=(1, 1))


def test_unknown_segment_id_on_read() -> None:
    store = MemoryStore()
    zv.write_lines(store, np.zeros((2, 2, 2)), chunk_shape=(1, 1), object_ids=[10, 20])
    with pytest.raises(InvalidInputError, match="15"):
        zv.read_lines(store, object_ids=[10, 15])


def test_one_vertex_object_at_level_0_is_refused(tmp_path: Any) -> None:
    """Only a coarse level may hold a merged (one-vertex) segment; level 0 may not."""
    path = tmp_path / "p.zv"
    one, two = np.ones((1, 3), np.float32), np.full((2, 3), 2, np.float32)
    zv.write_polylines(path, [one, two], chunk_shape=(10.0,) * 3)
    group = zarr.open_group(path, mode="r+")
    attrs = group.attrs.asdict()
    attrs["geometry_type"] = "line"
    group.attrs.put(attrs)
    with pytest.raises(InvalidInputError, match="not two vertices"):
        zv.read_lines(path)
