"""Polyline stores against brute force: round trips, box/id/group queries, chunk reads, links.

Every expectation is recomputed from the input paths with plain numpy (``path_oracle`` in
``conftest.py``), following FORMAT.md §2 (half-open boxes, ``floor(p / C)`` chunks), §6 (row
order, ``cross_chunk_links``), §7 (whole objects) and §8 (object ids).

Chunk sizes in the property tests are binary fractions and coordinates are float32-exact, so
chunk and box arithmetic has no rounding; rounding at decimal chunk sizes has its own tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.core.sync import sync
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

CHUNK_SIZES = (0.5, 1.0, 2.0)
LABELS = ("", "axon", "dendrite", "ünïcode", "a longer label")
GROUP_NAMES = ("left", "right tract", "ünï", "g_3")


# --------------------------------------------------------------------------------------------
# cases and strategies


@dataclass(frozen=True)
class PathCase:
    """One polyline write: input paths and everything attached to them."""

    paths: tuple[AnyArray, ...]
    """Input paths, each (Ni, D), all of one float dtype."""
    ndim: int
    """Spatial dimensions D."""
    dtype: np.dtype[Any]
    """Vertex dtype (float32 or float64)."""
    chunk_shape: tuple[float, ...]
    """Chunk extent per axis."""
    bin_shape: tuple[float, ...]
    """Level-0 bin extent per axis."""
    attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-vertex attributes, flat (N, ...)."""
    object_attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-path attributes, (n, ...)."""
    ids: AnyArray | None = None
    """User ids (uint64) or None."""
    groups: dict[str, list[int]] = field(default_factory=dict)
    """Group name -> member indices into ``paths`` (input order of the group)."""
    group_attributes: dict[str, AnyArray] = field(default_factory=dict)
    """Per-group attributes."""

    @property
    def positions(self) -> AnyArray:
        if not self.paths:
            return np.zeros((0, self.ndim), dtype=self.dtype)
        return np.concatenate(self.paths)

    @property
    def offsets(self) -> AnyArray:
        return offsets_of(self.paths)

    @property
    def out_ids(self) -> AnyArray:
        """Ids a read reports for each input path."""
        n = len(self.paths)
        return np.arange(n, dtype=np.int64) if self.ids is None else self.ids

    def rows_of(self, sel: Sequence[int]) -> AnyArray:
        """Flat vertex rows of the selected paths, concatenated."""
        off = self.offsets
        parts = [np.arange(off[i], off[i + 1]) for i in sel]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    def write(
        self, store: Any, *, form: str = "flat", ragged_attributes: bool = False, **kw: Any
    ) -> zv.WriteSummary:
        """Write with ``write_polylines`` in the given input form."""
        attrs: dict[str, Any] = dict(self.attributes)
        if ragged_attributes and self.paths:
            off = self.offsets
            attrs = {
                k: [v[off[i] : off[i + 1]] for i in range(len(self.paths))]
                for k, v in attrs.items()
            }
        extra: dict[str, Any] = {
            "chunk_shape": self.chunk_shape,
            "bin_shape": self.bin_shape,
            "attributes": attrs,
            "object_attributes": self.object_attributes,
            "object_ids": self.ids,
            "groups": {g: self.out_ids[m] for g, m in self.groups.items()},
            "group_attributes": self.group_attributes,
        }
        extra.update(kw)
        if form == "list":
            return zv.write_polylines(store, list(self.paths), **extra)
        return zv.write_polylines(store, self.positions, offsets=self.offsets, **extra)


def offsets_of(paths: Sequence[AnyArray]) -> AnyArray:
    off = np.zeros(len(paths) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in paths], out=off[1:])
    return off


def _coordinate(c: float, span: int) -> st.SearchStrategy[float]:
    """Chunk and quarter-chunk boundaries, or any float32-exact value within ``span`` chunks."""
    return st.one_of(
        st.integers(-4 * span, 4 * span).map(lambda k: k * c / 4),
        st.floats(-span * c, span * c, allow_nan=False, allow_subnormal=False, width=32),
    )


@st.composite
def _path(
    draw: st.DrawFn, vertex: st.SearchStrategy[tuple[float, ...]], n: int, dtype: Any
) -> AnyArray:
    """A path of ``n`` vertices; some revisit an earlier vertex (leave a chunk, re-enter it)."""
    rows: list[tuple[float, ...]] = []
    for _ in range(n):
        if rows and draw(st.integers(0, 3)) == 0:
            rows.append(rows[draw(st.integers(0, len(rows) - 1))])
        else:
            rows.append(draw(vertex))
    return np.array(rows, dtype=np.float64).reshape(n, -1).astype(dtype)


def _random_bits(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> AnyArray:
    """Arbitrary bit patterns (NaN payloads, infinities, -0.0 included)."""
    dt = np.dtype(dtype)
    raw = rng.integers(0, 256, size=(*shape, dt.itemsize), dtype=np.uint8)
    return raw.view(dt).reshape(shape)


def _vertex_attributes(kinds: set[str], n: int, rng: np.random.Generator) -> dict[str, AnyArray]:
    makers: dict[str, Callable[[], AnyArray]] = {
        "weight": lambda: _random_bits(rng, (n,), np.float32),
        "normal": lambda: _random_bits(rng, (n, 3), np.float64),
        "rgb": lambda: rng.integers(0, 256, (n, 3)).astype(np.uint8),
        "flag": lambda: rng.integers(0, 2, n).astype(bool),
        "label": lambda: np.array([LABELS[i] for i in rng.integers(0, len(LABELS), n)]),
        "segment": lambda: rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2),
        "tensor": lambda: rng.integers(-(2**15), 2**15, (n, 2)).astype(np.int16),
    }
    return {k: makers[k]() for k in sorted(kinds)}


def _object_attributes(kinds: set[str], n: int, rng: np.random.Generator) -> dict[str, AnyArray]:
    makers: dict[str, Callable[[], AnyArray]] = {
        "score": lambda: _random_bits(rng, (n,), np.float64),
        "name": lambda: np.array([LABELS[i] for i in rng.integers(0, len(LABELS), n)]),
        "vec": lambda: rng.integers(-5, 5, (n, 2)).astype(np.int32),
        "kept": lambda: rng.integers(0, 2, n).astype(bool),
    }
    return {k: makers[k]() for k in sorted(kinds)}


@st.composite
def path_cases(
    draw: st.DrawFn,
    *,
    ndim: int | None = None,
    min_paths: int = 0,
    max_paths: int = 5,
    min_vertices: int = 1,
    max_vertices: int = 7,
    extras: bool = True,
) -> PathCase:
    """Draw paths that cross many tiny chunks, with attributes, user ids and groups."""
    d = draw(st.sampled_from((2, 3, 4))) if ndim is None else ndim
    chunk = tuple(draw(st.sampled_from(CHUNK_SIZES)) for _ in range(d))
    bins = tuple(c / draw(st.sampled_from((1, 2))) for c in chunk)
    span = 2 if d == 4 else 3
    dtype = np.dtype(draw(st.sampled_from((np.float32, np.float64))))
    vertex = st.tuples(*[_coordinate(c, span) for c in chunk])
    counts = draw(
        st.lists(st.integers(min_vertices, max_vertices), min_size=min_paths, max_size=max_paths)
    )
    paths = tuple(draw(_path(vertex, n, dtype)) for n in counts)
    case = PathCase(paths, d, dtype, chunk, bins)
    if not extras:
        return case
    n = len(paths)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vkinds = draw(
        st.sets(st.sampled_from(("weight", "normal", "rgb", "flag", "label", "segment", "tensor")))
    )
    okinds = draw(st.sets(st.sampled_from(("score", "name", "vec", "kept"))))
    ids = None
    if draw(st.booleans()):
        ids = np.array(
            draw(st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n, unique=True)),
            dtype=np.uint64,
        )
    groups: dict[str, list[int]] = {}
    names = draw(st.lists(st.sampled_from(GROUP_NAMES), max_size=3, unique=True))
    for g in names:
        groups[g] = draw(st.lists(st.integers(0, n - 1), unique=True)) if n else []
    gattrs: dict[str, AnyArray] = {}
    if names and draw(st.booleans()):
        gattrs = {
            "weight": _random_bits(rng, (len(names),), np.float32),
            "tag": np.array([LABELS[i % len(LABELS)] for i in range(len(names))]),
        }
    return PathCase(
        paths, d, dtype, chunk, bins,
        _vertex_attributes(vkinds, int(sum(counts)), rng),
        _object_attributes(okinds, n, rng),
        ids, groups, gattrs,
    )  # fmt: skip


@st.composite
def boxes(draw: st.DrawFn, case: PathCase) -> tuple[list[float], list[float]]:
    """A half-open query box: boundary-aligned, random, empty, or covering everything."""
    if draw(st.integers(0, 9)) == 0:
        return [-1e9] * case.ndim, [1e9] * case.ndim
    lo: list[float] = []
    hi: list[float] = []
    for c in case.chunk_shape:
        a, b = sorted((draw(_coordinate(c, 4)), draw(_coordinate(c, 4))))
        lo.append(a)
        hi.append(b)
    return lo, hi


# --------------------------------------------------------------------------------------------
# result checks


def assert_paths(oracle: Any, r: zv.Polylines, case: PathCase, sel: Sequence[int]) -> None:
    """``r`` holds exactly the input paths ``sel``, whole, in that order, with attributes."""
    oracle.assert_selection(
        r,
        case.paths,
        sel,
        ids=case.out_ids,
        attributes=case.attributes,
        object_attributes=case.object_attributes,
        groups=case.groups,
        group_attributes=case.group_attributes,
    )


def assert_clipped(oracle: Any, r: zv.Polylines, case: PathCase, lo: Any, hi: Any) -> None:
    """``r`` holds the maximal in-box runs of every path, path by path, run by run."""
    oracle.assert_clipped(
        r,
        case.paths,
        lo,
        hi,
        ids=case.out_ids,
        attributes=case.attributes,
        object_attributes=case.object_attributes,
    )


# --------------------------------------------------------------------------------------------
# round trips


@SETTINGS
@given(
    case=path_cases(),
    fmt=st.sampled_from((2, 3)),
    form=st.sampled_from(("flat", "list")),
    ragged=st.booleans(),
)
def test_round_trip_is_exact(
    path_oracle: Any, case: PathCase, fmt: int, form: str, ragged: bool
) -> None:
    store = MemoryStore()
    if form == "list" and not case.paths:
        form = "flat"  # a list needs at least one path; zero paths go through offsets=[0]
    before = [p.copy() for p in case.paths]
    summary = case.write(store, form=form, ragged_attributes=ragged, zarr_format=fmt)
    assert summary.vertex_count == len(case.positions)
    for p, q in zip(case.paths, before, strict=True):
        path_oracle.assert_identical(p, q, "input path after the write")
    r = zv.read_polylines(store)
    assert_paths(path_oracle, r, case, range(len(case.paths)))
    assert zv.open_store(store).attrs["geometry_type"] == "polyline"


@settings(SETTINGS, max_examples=6)
@given(case=path_cases(min_paths=1), fmt=st.sampled_from((2, 3)), ragged=st.booleans())
def test_list_and_flat_inputs_write_identical_stores(
    path_oracle: Any, case: PathCase, fmt: int, ragged: bool
) -> None:
    a, b = MemoryStore(), MemoryStore()
    case.write(a, form="list", ragged_attributes=ragged, zarr_format=fmt)
    case.write(b, form="flat", zarr_format=fmt)
    assert path_oracle.store_contents(a) == path_oracle.store_contents(b)


def _rich_case(ndim: int = 3) -> PathCase:
    """Hand-made paths crossing many chunks, with every kind of attribute."""
    rng = np.random.default_rng(7)
    long_path = np.cumsum(rng.uniform(-0.9, 0.9, (40, ndim)), axis=0).astype(np.float32)
    boundary = np.array([[k * 0.5] * ndim for k in range(-3, 4)], dtype=np.float32)
    reenter = np.array([[0.1] * ndim, [1.1] * ndim, [0.2] * ndim], dtype=np.float32)
    single = np.full((1, ndim), -2.0, dtype=np.float32)
    paths = (long_path, boundary, single, reenter)
    n_vertices = sum(len(p) for p in paths)
    return PathCase(
        paths,
        ndim,
        np.dtype(np.float32),
        (0.5,) * ndim,
        (0.25,) * ndim,
        _vertex_attributes({"weight", "normal", "rgb", "flag", "label", "segment"}, n_vertices,
                           rng),
        _object_attributes({"score", "name", "vec", "kept"}, len(paths), rng),
        np.array([2**64 - 1, 12, 2**40, 3], dtype=np.uint64),
        {"tracts": [3, 0], "lonely": [2], "none": []},
        {"weight": np.array([0.5, 1.5, -0.0], np.float32), "tag": np.array(["a", "b", "c"])},
    )  # fmt: skip


def test_round_trip_every_store(
    path_oracle: Any, store: Any, zarr_format: int, store_factory: StoreFactory
) -> None:
    case = _rich_case()
    case.write(store, form="list", ragged_attributes=True, zarr_format=zarr_format)
    path_store = store_factory.for_reading(store)
    assert_paths(path_oracle, zv.read_polylines(path_store), case, range(4))
    ids = [3, 2**64 - 1]
    assert_paths(path_oracle, zv.read_polylines(path_store, object_ids=ids), case, [3, 0])


@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_round_trip_each_dimension(path_oracle: Any, ndim: int) -> None:
    case = _rich_case(ndim)
    store = MemoryStore()
    case.write(store)
    assert_paths(path_oracle, zv.read_polylines(store), case, range(4))
    root = zv.open_store(store)
    assert root.attrs["spatial_dims"] == ndim


# --------------------------------------------------------------------------------------------
# special paths


def test_single_vertex_and_boundary_paths(path_oracle: Any) -> None:
    paths = (
        np.array([[1.0, -1.0]], np.float32),  # exactly on a corner of four chunks
        np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [-1.0, -1.0]], np.float32),
        np.array([[-0.0, 0.5]], np.float32),
    )
    case = PathCase(paths, 2, np.dtype(np.float32), (1.0, 1.0), (0.5, 0.5))
    store = MemoryStore()
    case.write(store, form="list")
    assert_paths(path_oracle, zv.read_polylines(store), case, [0, 1, 2])
    # the vertex at x == 1.0 belongs to chunk 1, so the half-open box [0, 1) does not see it
    r = zv.read_polylines(store, bbox=([0.5, -1.0], [1.0, 0.0]))
    assert r.object_ids.tolist() == []
    r = zv.read_polylines(store, bbox=([1.0, -1.0], [1.5, -0.5]))
    assert r.object_ids.tolist() == [0]
    vertices, _ = path_oracle.payloads(store, "0/vertices")
    assert sorted(vertices) == [(-1, -1), (0, 0), (1, -1), (1, 0), (2, 0)]


def test_path_that_leaves_and_reenters_a_chunk(path_oracle: Any) -> None:
    path = np.array([[0.25, 0.25], [1.5, 0.5], [0.75, 0.75], [0.5, 1.5]], np.float64)
    case = PathCase((path,), 2, np.dtype(np.float64), (1.0, 1.0), (1.0, 1.0),
                    {"k": np.arange(4, dtype=np.int32)})  # fmt: skip
    store = MemoryStore()
    case.write(store)
    root = zarr.open_group(store, mode="r")
    manifest = np.asarray(root["0/object_index/manifest"][...])
    assert manifest.tolist() == [[0, 0, 0, 1], [1, 0, 0, 1], [0, 0, 1, 1], [0, 1, 0, 1]]
    r = zv.read_polylines(store, bbox=([1.0, 0.0], [2.0, 1.0]))
    assert_paths(path_oracle, r, case, [0])
    r = zv.read_polylines(store, bbox=([0.0, 0.0], [1.0, 1.0]), clip=True)
    assert_clipped(path_oracle, r, case, [0.0, 0.0], [1.0, 1.0])
    assert r.lengths.tolist() == [1, 1]


def _zero_vertex_case(where: str) -> PathCase:
    a = np.array([[0.5, 0.5], [2.5, 0.5]])
    b = np.array([[1.5, 1.5]])
    empty = np.zeros((0, 2))
    order = {"first": (empty, a, b), "middle": (a, empty, b), "last": (a, b, empty)}[where]
    n_vertices = sum(len(p) for p in order)
    return PathCase(order, 2, np.dtype(np.float64), (1.0, 1.0), (1.0, 1.0),
                    {"w": np.arange(n_vertices, dtype=np.float32)},
                    {"s": np.array([1, 2, 3], np.int8)},
                    np.array([30, 10, 20], np.uint64))  # fmt: skip


@pytest.mark.parametrize(
    "where",
    [
        "first",
        "middle",
        "last",
    ],
)
def test_zero_vertex_paths(path_oracle: Any, where: str) -> None:
    """0-vertex paths are accepted (both input forms) and come back as empty paths."""
    case = _zero_vertex_case(where)
    store = MemoryStore()
    case.write(store, form="list")
    assert_paths(path_oracle, zv.read_polylines(store), case, [0, 1, 2])
    empty = next(i for i, p in enumerate(case.paths) if len(p) == 0)
    r = zv.read_polylines(store, object_ids=[int(case.out_ids[empty])])
    assert_paths(path_oracle, r, case, [empty])
    # a path without vertices touches no box
    everything = ([-10.0, -10.0], [10.0, 10.0])
    full = [i for i in range(3) if i != empty]
    assert_paths(path_oracle, zv.read_polylines(store, bbox=everything), case, full)


def test_zero_paths(path_oracle: Any) -> None:
    case = PathCase((), 3, np.dtype(np.float32), (1.0, 1.0, 1.0), (1.0, 1.0, 1.0))
    store = MemoryStore()
    case.write(store)
    assert_paths(path_oracle, zv.read_polylines(store), case, [])
    assert len(zv.read_polylines(store, bbox=([0, 0, 0], [1, 1, 1]))) == 0


# --------------------------------------------------------------------------------------------
# queries


@SETTINGS
@given(data=st.data(), case=path_cases(), fmt=st.sampled_from((2, 3)))
def test_bbox_query_equals_brute_force(
    path_oracle: Any, data: st.DataObject, case: PathCase, fmt: int
) -> None:
    store = MemoryStore()
    case.write(store, zarr_format=fmt)
    for _ in range(2):
        lo, hi = data.draw(boxes(case))
        r = zv.read_polylines(store, bbox=(lo, hi))
        assert_paths(path_oracle, r, case, path_oracle.touching(case.paths, lo, hi))
        clipped = zv.read_polylines(store, bbox=(lo, hi), clip=True)
        assert_clipped(path_oracle, clipped, case, lo, hi)


@pytest.mark.slow
@SETTINGS
@given(data=st.data(), case=path_cases(min_paths=1), fmt=st.sampled_from((2, 3)))
def test_object_ids_group_and_bbox_selection(
    path_oracle: Any, data: st.DataObject, case: PathCase, fmt: int
) -> None:
    store = MemoryStore()
    case.write(store, zarr_format=fmt)
    n = len(case.paths)
    order = data.draw(st.lists(st.integers(0, n - 1), unique=True))
    r = zv.read_polylines(store, object_ids=case.out_ids[order])
    assert_paths(path_oracle, r, case, order)

    lo, hi = data.draw(boxes(case))
    touching = set(path_oracle.touching(case.paths, lo, hi))
    r = zv.read_polylines(store, object_ids=case.out_ids[order], bbox=(lo, hi))
    assert_paths(path_oracle, r, case, [i for i in order if i in touching])

    for index, (name, members) in enumerate(case.groups.items()):
        by_name = zv.read_polylines(store, group=name)
        by_index = zv.read_polylines(store, group=index)
        # the order of a group read is not specified; compare as sets of ids
        assert sorted(by_name.object_ids.tolist()) == sorted(case.out_ids[members].tolist())
        assert by_index.object_ids.tolist() == by_name.object_ids.tolist()
        got = [int(np.flatnonzero(case.out_ids == i)[0]) for i in by_name.object_ids]
        assert_paths(path_oracle, by_name, case, got)
        both = zv.read_polylines(store, group=name, object_ids=case.out_ids[order])
        assert both.object_ids.tolist() == case.out_ids[[i for i in order if i in members]].tolist()


def test_attribute_selection() -> None:
    case = _rich_case()
    store = MemoryStore()
    case.write(store)
    assert sorted(zv.read_polylines(store, attributes="flag").attributes) == ["flag"]
    picked = zv.read_polylines(store, attributes=["rgb", "label"]).attributes
    assert sorted(picked) == ["label", "rgb"]
    assert zv.read_polylines(store, attributes=False).attributes == {}
    with pytest.raises(InvalidInputError, match="nope"):
        zv.read_polylines(store, attributes=["nope"])


# --------------------------------------------------------------------------------------------
# what a read touches


def _check_single_object_reads(oracle: Any, store: Any, case: PathCase, i: int) -> None:
    uid = case.out_ids[i : i + 1]
    oracle.check_single_object_reads(
        store,
        case.paths[i],
        case.chunk_shape,
        list(case.attributes),
        lambda: zv.read_polylines(store, object_ids=uid),
    )


@settings(SETTINGS, max_examples=8)
@given(data=st.data(), case=path_cases(min_paths=1), fmt=st.sampled_from((2, 3)))
def test_single_object_read_touches_only_its_chunks(
    path_oracle: Any, data: st.DataObject, case: PathCase, fmt: int
) -> None:
    store = MemoryStore()
    case.write(store, zarr_format=fmt)
    i = data.draw(st.integers(0, len(case.paths) - 1))
    _check_single_object_reads(path_oracle, store, case, i)


def test_single_object_read_touches_only_its_chunks_every_store(
    path_oracle: Any, store: Any, zarr_format: int, store_factory: StoreFactory
) -> None:
    case = _rich_case()
    case.write(store, zarr_format=zarr_format)
    path_store = store_factory.for_reading(store)
    for i in range(len(case.paths)):
        _check_single_object_reads(path_oracle, path_store, case, i)


# --------------------------------------------------------------------------------------------
# on-disk arrays, read with plain zarr


@settings(SETTINGS, max_examples=15)
@given(case=path_cases(extras=False), fmt=st.sampled_from((2, 3)))
def test_cross_chunk_links_name_the_real_rows(path_oracle: Any, case: PathCase, fmt: int) -> None:
    store = MemoryStore()
    case.write(store, zarr_format=fmt)
    path_oracle.check_rows_and_links(store, case.paths, case.chunk_shape)


def test_no_cross_chunk_links_when_nothing_crosses(path_oracle: Any) -> None:
    paths = [np.array([[0.1, 0.1], [0.9, 0.9]]), np.array([[5.5, 5.5], [5.0, 5.25]])]
    store = MemoryStore()
    zv.write_polylines(store, paths, chunk_shape=(1.0, 1.0))
    path_oracle.check_rows_and_links(store, paths, (1.0, 1.0))


# --------------------------------------------------------------------------------------------
# store kinds and type checks


def test_read_polylines_rejects_a_point_cloud() -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 2)), chunk_shape=(1.0, 1.0))
    with pytest.raises(InvalidInputError, match="point_cloud"):
        zv.read_polylines(store)


def test_read_polylines_reads_a_line_store(path_oracle: Any) -> None:
    ends = np.array([[[0.0, 0.0], [2.5, 0.5]], [[1.0, 1.0], [1.5, 1.5]]], np.float32)
    store = MemoryStore()
    zv.write_lines(store, ends, chunk_shape=(1.0, 1.0))
    r = zv.read_polylines(store)
    path_oracle.assert_identical(r.positions, ends.reshape(4, 2), "positions")
    assert r.lengths.tolist() == [2, 2]


def test_write_polylines_rejects_other_geometry_types() -> None:
    with pytest.raises(InvalidInputError, match="geometry_type"):
        zv.write_polylines(MemoryStore(), [np.zeros((2, 2))], chunk_shape=(1, 1),
                           geometry_type="line")  # type: ignore[arg-type]  # fmt: skip


# --------------------------------------------------------------------------------------------
# errors


def _write(paths: Any = None, **kw: Any) -> Any:
    kw.setdefault("chunk_shape", (1.0, 1.0))
    if paths is None:
        paths = [np.zeros((3, 2)), np.ones((2, 2))]
    return zv.write_polylines(MemoryStore(), paths, **kw)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_vertex_is_rejected_naming_the_row(bad: float) -> None:
    paths = [np.zeros((2, 3)), np.array([[0.0, 0.0, 0.0], [1.0, 2.0, bad]])]
    with pytest.raises(InvalidInputError, match=r"row 3\b"):
        zv.write_polylines(MemoryStore(), paths, chunk_shape=(1, 1, 1))
    flat = np.concatenate(paths)
    with pytest.raises(InvalidInputError, match=r"row 3\b"):
        zv.write_polylines(MemoryStore(), flat, offsets=[0, 2, 4], chunk_shape=(1, 1, 1))


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([1, 3, 5], "start at 0"),
        ([0, 3, 4], "end at 5"),
        ([0, 3, 6], "end at 5"),
        ([0, 4, 2, 5], "decrease"),
        ([0.0, 5.0], "integer"),
        ([[0, 5]], "1-D"),
        ([], "n\\+1"),
    ],
)
def test_bad_offsets_are_rejected(offsets: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        zv.write_polylines(MemoryStore(), np.zeros((5, 2)), offsets=offsets, chunk_shape=(1, 1))


def test_flat_positions_need_offsets() -> None:
    with pytest.raises(InvalidInputError, match="offsets"):
        _write(np.zeros((5, 2)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"attributes": {"w": np.zeros(4)}}, "'w' has 4 rows, expected 5"),
        ({"attributes": {"w": [np.zeros(3), np.zeros(3)]}}, "object 1 has 3 values"),
        ({"object_attributes": {"s": np.zeros(3)}}, "'s' has 3 rows, expected 2"),
        ({"object_ids": [4, 4]}, "duplicate id"),
        ({"object_ids": [4]}, "ids must be 2"),
        ({"object_ids": [0.5, 1.5]}, "integers"),
        ({"groups": {"g": [0]}, "group_attributes": {"w": [1, 2]}}, "'w' has 2 rows"),
        ({"group_attributes": {"w": [1]}}, "need groups"),
        ({"groups": {"g": [7]}}, "out of range"),
        ({"object_ids": [10, 20], "groups": {"g": [15]}}, "unknown object id"),
        ({"object_attributes": {"id": [1, 2]}}, "reserved"),
        ({"attributes": {"not an identifier": np.zeros(5)}}, "identifier"),
    ],
)
def test_bad_attributes_ids_and_groups_are_rejected(kwargs: dict[str, Any], message: str) -> None:
    store = MemoryStore()
    with pytest.raises(InvalidInputError, match=message):
        zv.write_polylines(store, [np.zeros((3, 2)), np.ones((2, 2))], chunk_shape=(1, 1),
                           **kwargs)  # fmt: skip
    assert path_keys(store) == [], "a failed write must not touch the store"


def path_keys(store: MemoryStore) -> list[str]:
    async def collect() -> list[str]:
        return [k async for k in store.list()]

    return sync(collect())


def test_unknown_ids_groups_and_boxes_on_read_are_rejected() -> None:
    dense, users = MemoryStore(), MemoryStore()
    paths = [np.zeros((3, 2)), np.ones((2, 2))]
    zv.write_polylines(dense, paths, chunk_shape=(1, 1))
    zv.write_polylines(users, paths, chunk_shape=(1, 1), object_ids=np.array([2**63, 5], np.uint64),
                       groups={"g": [5]})  # fmt: skip
    with pytest.raises(InvalidInputError, match="2"):
        zv.read_polylines(dense, object_ids=[0, 2])
    with pytest.raises(InvalidInputError, match="-1"):
        zv.read_polylines(dense, object_ids=[-1])
    with pytest.raises(InvalidInputError, match="6"):
        zv.read_polylines(users, object_ids=[5, 6])
    with pytest.raises(InvalidInputError, match="no groups"):
        zv.read_polylines(dense, group="g")
    with pytest.raises(InvalidInputError, match="nope"):
        zv.read_polylines(users, group="nope")
    with pytest.raises(InvalidInputError, match="out of range"):
        zv.read_polylines(users, group=3)
    with pytest.raises(InvalidInputError, match="bbox"):
        zv.read_polylines(users, bbox=([0, 0, 0], [1, 1, 1]))


# --------------------------------------------------------------------------------------------
# float rounding at chunk and box boundaries (FORMAT.md §2: c = floor(p / C), min <= p < max)


def test_float32_vertex_lands_in_its_float64_chunk() -> None:
    """floor(4.5 / 0.3) is 15 in exact arithmetic but 14 when divided in float32."""
    store = MemoryStore()
    zv.write_polylines(store, [np.array([[4.5, 0.5]], np.float32)], chunk_shape=(0.3, 1.0))
    assert len(zv.read_polylines(store, bbox=([4.5, 0.0], [5.0, 1.0]))) == 1


def test_float32_vertex_just_below_box_max_is_found() -> None:
    p = np.float32(0.1)
    store = MemoryStore()
    zv.write_polylines(store, [np.array([[p, 0.5]], np.float32)], chunk_shape=(1.0, 1.0))
    top = float(np.nextafter(float(p), 1.0))  # p < top in exact arithmetic
    assert len(zv.read_polylines(store, bbox=([0.0, 0.0], [top, 1.0]))) == 1


def test_vertex_just_below_box_max_at_decimal_chunk_size() -> None:
    store = MemoryStore()
    zv.write_polylines(store, [np.array([[0.9, 0.5]])], chunk_shape=(0.1, 1.0))
    top = float(np.nextafter(0.9, 1.0))  # 0.9000000000000001; 0.9 / 0.1 and top / 0.1 are 9.0
    assert len(zv.read_polylines(store, bbox=([0.0, 0.0], [top, 1.0]))) == 1


def test_finer_bins_keep_vertices_and_leave_the_input_alone() -> None:
    """Regression: binning a lone vertex once divided the caller's column in place."""
    pos = np.array([[0.125, 0.0, 0.0]])
    store = MemoryStore()
    zv.write_polylines(
        store, pos, offsets=[0, 1], chunk_shape=(0.5, 0.5, 0.5), bin_shape=(0.25, 0.5, 0.5)
    )
    assert zv.read_polylines(store).positions.tolist() == [[0.125, 0.0, 0.0]]
    assert pos.tolist() == [[0.125, 0.0, 0.0]]
