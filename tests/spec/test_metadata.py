"""Metadata documents: symmetric JSON round trip, parse errors naming the field, seed rules."""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

from zarr_vectors.core.store import create_store, read_root_metadata
from zarr_vectors.errors import (
    MetadataValidationError,
    UnknownGeometryTypeError,
    ZVUserWarning,
)
from zarr_vectors.spec.conventions import GeometryTypeName, SparsityStrategy
from zarr_vectors.spec.metadata import (
    ZVF_CONVENTION,
    Axis,
    BoundingBox,
    ChunkGrid,
    DatasetMetadata,
    LevelMetadata,
    MultiscaleMetadata,
    RootMetadata,
    check_divides,
)
from zarr_vectors.spec.typespec import BUILTIN_TYPE_SPECS, type_spec

SEED_EXAMPLE = Path(__file__).with_name("seed_root_example.json")
"""The seed's complete example (shared/seeds/004, *Root metadata*), copied verbatim."""

ROOT_KEYS = {
    "zarr_vectors_version", "geometry_type", "spatial_dims", "base_bin_shape", "chunk_shape",
    "multiscales", "coordinate_system", "axis_units", "bounding_box", "creation_timestamp",
    "chunk_grid", "source_description", "notes", "custom_metadata", "draco_compressed",
}  # fmt: skip
LEVEL_KEYS = {
    "level", "bin_ratio", "bin_shape", "object_sparsity", "sparsity_strategy", "vertex_count",
    "object_count", "chunk_count", "coarsening",
}  # fmt: skip
ALL_TYPE_KEYS = {k for spec in BUILTIN_TYPE_SPECS for k in spec.root_keys}


def seed_doc() -> dict[str, Any]:
    return json.loads(SEED_EXAMPLE.read_text())


def json_round_trip(doc: Any) -> Any:
    return json.loads(json.dumps(doc))


# --------------------------------------------------------------------------------------------
# strategies for valid metadata

finite = st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False, allow_subnormal=False)
positive = st.floats(1e-3, 1e6, allow_nan=False, allow_infinity=False)
text = st.text(max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)


def extra_keys(reserved: set[str]) -> st.SearchStrategy[dict[str, Any]]:
    key = st.text(min_size=1, max_size=10).filter(lambda k: k not in reserved)
    return st.dictionaries(key, json_values, max_size=3)


@st.composite
def bounding_boxes(draw: st.DrawFn, ndim: int | None = None) -> BoundingBox:
    d = draw(st.integers(1, 4)) if ndim is None else ndim
    pairs = [sorted((draw(finite), draw(finite))) for _ in range(d)]
    return BoundingBox(min=tuple(p[0] for p in pairs), max=tuple(p[1] for p in pairs))


@st.composite
def chunk_grids(draw: st.DrawFn, ndim: int | None = None) -> ChunkGrid:
    d = draw(st.integers(1, 4)) if ndim is None else ndim
    origin = tuple(draw(st.integers(-(2**40), 2**40)) for _ in range(d))
    shape = tuple(draw(st.integers(1, 2**31)) for _ in range(d))
    return ChunkGrid(origin=origin, shape=shape)


@st.composite
def datasets(draw: st.DrawFn, ndim: int | None = None, level: int | None = None) -> DatasetMetadata:
    d = draw(st.integers(1, 4)) if ndim is None else ndim
    ratio = tuple(draw(st.integers(1, 64)) for _ in range(d))
    return DatasetMetadata(
        level=draw(st.integers(0, 20)) if level is None else level,
        bin_ratio=ratio,
        bin_shape=tuple(draw(positive) for _ in range(d)),
        object_sparsity=draw(st.floats(0.0, 1.0)),
    )


@st.composite
def level_metadata(draw: st.DrawFn) -> LevelMetadata:
    d = draw(st.integers(1, 4))
    strategy = draw(st.none() | st.sampled_from(SparsityStrategy))
    return LevelMetadata(
        level=draw(st.integers(0, 20)),
        bin_ratio=tuple(draw(st.integers(1, 64)) for _ in range(d)),
        bin_shape=tuple(draw(positive) for _ in range(d)),
        vertex_count=draw(st.integers(0, 2**53)),
        object_count=draw(st.integers(0, 2**40)),
        chunk_count=draw(st.integers(0, 2**40)),
        object_sparsity=draw(st.floats(0.0, 1.0)),
        sparsity_strategy=strategy,
        coarsening=draw(st.none() | st.dictionaries(text, json_values, max_size=3)),
        extra=draw(extra_keys(LEVEL_KEYS)),
    )


def _type_value(key: str) -> st.SearchStrategy[object]:
    """Values a type-specific key may hold (step_size positive, flags booleans)."""
    if key == "step_size":
        return st.floats(1e-6, 1e6) | st.integers(1, 10**6)
    if key in ("is_directed", "swc_compatible", "closed_surface"):
        return st.booleans()
    return json_values


@st.composite
def root_metadata(draw: st.DrawFn) -> RootMetadata:
    d = draw(st.integers(1, 4))
    gtype = draw(st.sampled_from(GeometryTypeName))
    bins = tuple(draw(positive) for _ in range(d))
    # bins per chunk a power of two, so every level's ratio (a power of two, non-decreasing
    # per axis: seed rule 7) keeps its bin shape dividing the chunk shape (FORMAT.md §2)
    log_per_chunk = [draw(st.integers(0, 3)) for _ in range(d)]
    chunk = tuple(b * 2**k for b, k in zip(bins, log_per_chunk, strict=True))
    names = draw(st.lists(text, min_size=d, max_size=d, unique=True))  # axis names are unique
    axes = tuple(
        Axis(name=name, type=draw(st.sampled_from(("space", "time"))),
             unit=draw(st.none() | text))
        for name in names
    )  # fmt: skip
    n_levels = draw(st.integers(1, 4))
    exps = [[0] * d]
    for _ in range(n_levels - 1):
        exps.append([min(k + draw(st.integers(0, 1)), top)
                     for k, top in zip(exps[-1], log_per_chunk, strict=True)])  # fmt: skip
    ratios = [tuple(2**k for k in e) for e in exps]
    levels = sorted(draw(st.sets(st.integers(1, 30), min_size=n_levels - 1, max_size=n_levels - 1)))
    ds = tuple(
        DatasetMetadata(
            level=lvl,
            bin_ratio=r,
            bin_shape=tuple(b * x for b, x in zip(bins, r, strict=True)),
            object_sparsity=1.0 if lvl == 0 else draw(st.floats(0.0, 1.0)),
        )
        for lvl, r in zip([0, *levels], ratios, strict=True)
    )
    type_keys = type_spec(gtype).root_keys
    type_metadata = (
        {k: draw(_type_value(k)) for k in draw(st.sets(st.sampled_from(type_keys)))}
        if type_keys
        else {}
    )
    units = draw(st.none() | text | st.tuples(*[text] * d))
    return RootMetadata(
        geometry_type=gtype,
        spatial_dims=d,
        base_bin_shape=bins,
        chunk_shape=chunk,
        multiscales=MultiscaleMetadata(
            axes=axes, datasets=ds, name=draw(st.none() | text), version=draw(st.just("0.5") | text)
        ),
        zarr_vectors_version="1.0",
        coordinate_system=draw(st.sampled_from(("unknown", "RAS", "LPS", "voxel")) | text),
        axis_units=units,
        bounding_box=draw(st.none() | bounding_boxes(d)),
        creation_timestamp=draw(st.none() | st.just("2024-11-15T14:32:00Z")),
        chunk_grid=draw(st.none() | chunk_grids(d)),
        source_description=draw(st.none() | text),
        notes=draw(st.none() | text),
        custom_metadata=draw(st.none() | st.dictionaries(text, json_values, max_size=3)),
        draco_compressed=draw(st.none() | st.booleans()),
        type_metadata=type_metadata,
        extra=draw(extra_keys(ROOT_KEYS | ALL_TYPE_KEYS)),
    )


# --------------------------------------------------------------------------------------------
# round trips

ROUND_TRIP = settings(max_examples=60)


@ROUND_TRIP
@given(bounding_boxes())
def test_bounding_box_round_trip(box: BoundingBox) -> None:
    assert BoundingBox.from_dict(box.to_dict()) == box
    assert BoundingBox.from_dict(json_round_trip(box.to_dict())) == box


@ROUND_TRIP
@given(chunk_grids())
def test_chunk_grid_round_trip(grid: ChunkGrid) -> None:
    assert ChunkGrid.from_dict(grid.to_dict()) == grid
    assert ChunkGrid.from_dict(json_round_trip(grid.to_dict())) == grid


@ROUND_TRIP
@given(datasets())
def test_dataset_round_trip(ds: DatasetMetadata) -> None:
    doc = ds.to_dict()
    assert DatasetMetadata.from_dict(doc) == ds
    assert DatasetMetadata.from_dict(json_round_trip(doc)) == ds
    # the transforms describe the level's bin grid exactly as the seed does
    scale, translation = doc["coordinateTransformations"]
    assert scale == {"type": "scale", "scale": [float(r) for r in ds.bin_ratio]}
    assert translation == {"type": "translation", "translation": [b / 2 for b in ds.bin_shape]}
    assert doc["path"] == str(ds.level)


@pytest.mark.slow
@ROUND_TRIP
@given(level_metadata())
def test_level_metadata_round_trip(level: LevelMetadata) -> None:
    assert LevelMetadata.from_dict(level.to_dict()) == level
    assert LevelMetadata.from_dict(json_round_trip(level.to_dict())) == level


@pytest.mark.slow
@ROUND_TRIP
@given(root_metadata())
def test_root_metadata_round_trip(meta: RootMetadata) -> None:
    doc = meta.to_dict()
    assert RootMetadata.from_dict(doc) == meta
    assert RootMetadata.from_dict(json_round_trip(doc)) == meta
    # flat layout (FORMAT.md §3): every ZVF key sits at the top level, unknown keys kept
    assert set(meta.extra) <= set(doc)
    assert doc["multiscales"][0]["type"] == "zarr_vectors_multiscale"


@settings(max_examples=15)
@given(meta=root_metadata(), zarr_format=st.sampled_from([2, 3]))
def test_root_metadata_round_trip_through_a_store(meta: RootMetadata, zarr_format: int) -> None:
    # create_store makes per-chunk arrays over the grid (derived from bounding_box when absent):
    # keep it one chunk large
    origin = (0,) * meta.spatial_dims if meta.chunk_grid is None else meta.chunk_grid.origin
    meta = meta.with_updates(chunk_grid=ChunkGrid(origin=origin, shape=(1,) * meta.spatial_dims))
    root = create_store(MemoryStore(), meta, zarr_format=zarr_format)  # type: ignore[arg-type]
    assert read_root_metadata(root) == meta


@pytest.mark.parametrize(
    "changes",
    [{"type_metadata": {"step_size": 1.0}}, {"extra": {"spatial_dims": 5}}],
    ids=["type_key_of_other_type", "extra_shadows_known_key"],
)
def test_root_metadata_construction_keeps_round_trip(changes: dict[str, Any]) -> None:
    base = RootMetadata.create(geometry_type="point_cloud", chunk_shape=(10.0, 10.0))
    try:
        meta = base.with_updates(**changes)
    except MetadataValidationError:
        return  # rejecting at construction also keeps the contract
    assert RootMetadata.from_dict(meta.to_dict()) == meta


# --------------------------------------------------------------------------------------------
# the seed's complete example


def test_seed_example_parses() -> None:
    meta = RootMetadata.from_dict(seed_doc())
    assert meta.geometry_type is GeometryTypeName.STREAMLINE
    assert meta.spatial_dims == 3
    assert meta.chunk_shape == (200.0, 200.0, 200.0)
    assert meta.base_bin_shape == (50.0, 50.0, 50.0)
    assert meta.coordinate_system == "RAS"
    assert meta.axis_units == "micrometer"
    assert meta.bounding_box == BoundingBox(min=(0.0, 0.0, 0.0), max=(8000.0, 6000.0, 4000.0))
    assert [a.name for a in meta.multiscales.axes] == ["z", "y", "x"]
    assert [(d.level, d.bin_ratio, d.object_sparsity) for d in meta.multiscales.datasets] == [
        (0, (1, 1, 1), 1.0),
        (1, (2, 2, 2), 0.5),
    ]
    assert meta.bin_shape_for((2, 2, 2)) == (100.0, 100.0, 100.0)


def test_seed_example_reserialises_the_same_multiscales_block() -> None:
    doc = seed_doc()
    out = RootMetadata.from_dict(doc).to_dict()
    # byte-identical JSON, so ints stay ints and floats stay floats
    assert json.dumps(out["multiscales"], sort_keys=True) == json.dumps(
        doc["multiscales"], sort_keys=True
    )


def test_seed_example_reserialises_every_key() -> None:
    doc = seed_doc()
    out = RootMetadata.from_dict(doc).to_dict()
    declared = out.pop("zarr_conventions")  # the writer adds the format declaration (issue 26)
    assert declared == [ZVF_CONVENTION]
    assert json.dumps(out, sort_keys=True) == json.dumps(doc, sort_keys=True)


# --------------------------------------------------------------------------------------------
# parse errors name the field


@dataclass(frozen=True)
class ExpectFail:
    """A root document edit that must be rejected with a message naming ``field``."""

    edit: dict[str, Any]
    """Top-level keys to replace (value ``DELETE`` removes the key)."""
    field: str
    """Text the error message must contain."""
    exception: type[Exception] = MetadataValidationError


DELETE = object()


def ms_edit(**changes: Any) -> dict[str, Any]:
    """Edit the seed's multiscales[0] object."""
    block = copy.deepcopy(seed_doc()["multiscales"][0])
    for key, value in changes.items():
        if value is DELETE:
            del block[key]
        else:
            block[key] = value
    return {"multiscales": [block]}


def dataset_edit(index: int, **changes: Any) -> dict[str, Any]:
    block = copy.deepcopy(seed_doc()["multiscales"][0])
    block["datasets"][index].update(changes)
    return {"multiscales": [block]}


SEED_AXES = seed_doc()["multiscales"][0]["axes"]

ROOT_FAILURES = {
    "missing_version": ExpectFail({"zarr_vectors_version": DELETE}, "zarr_vectors_version"),
    "version_not_string": ExpectFail({"zarr_vectors_version": 1.0}, "zarr_vectors_version"),
    "missing_geometry_type": ExpectFail({"geometry_type": DELETE}, "geometry_type"),
    "unknown_geometry_type": ExpectFail(
        {"geometry_type": "polygon"}, "geometry_type", UnknownGeometryTypeError
    ),
    "missing_spatial_dims": ExpectFail({"spatial_dims": DELETE}, "spatial_dims"),
    "spatial_dims_string": ExpectFail({"spatial_dims": "3"}, "spatial_dims"),
    "spatial_dims_bool": ExpectFail({"spatial_dims": True}, "spatial_dims"),
    "spatial_dims_mismatch": ExpectFail({"spatial_dims": 2}, "chunk_shape"),
    "missing_chunk_shape": ExpectFail({"chunk_shape": DELETE}, "chunk_shape"),
    "chunk_shape_negative": ExpectFail({"chunk_shape": [200.0, -200.0, 200.0]}, "chunk_shape"),
    "chunk_shape_zero": ExpectFail({"chunk_shape": [200.0, 0.0, 200.0]}, "chunk_shape"),
    "chunk_shape_text": ExpectFail({"chunk_shape": [200.0, "a", 200.0]}, "chunk_shape"),
    "chunk_shape_scalar": ExpectFail({"chunk_shape": 200.0}, "chunk_shape"),
    "missing_base_bin_shape": ExpectFail({"base_bin_shape": DELETE}, "base_bin_shape"),
    "bin_not_dividing": ExpectFail({"base_bin_shape": [30.0, 50.0, 50.0]}, "base_bin_shape"),
    "bin_zero": ExpectFail({"base_bin_shape": [0.0, 50.0, 50.0]}, "base_bin_shape"),
    "bin_too_short": ExpectFail({"base_bin_shape": [50.0, 50.0]}, "base_bin_shape"),
    "missing_multiscales": ExpectFail({"multiscales": DELETE}, "multiscales"),
    "multiscales_empty": ExpectFail({"multiscales": []}, "multiscales"),
    "multiscales_object": ExpectFail({"multiscales": {}}, "multiscales"),
    "axes_missing": ExpectFail(ms_edit(axes=DELETE), "axes"),
    "axes_wrong_count": ExpectFail(ms_edit(axes=SEED_AXES[:2]), "multiscales"),
    "axis_type": ExpectFail(ms_edit(axes=[{"name": "x", "type": "spatial"}] * 3), "axes.type"),
    "axis_name_missing": ExpectFail(ms_edit(axes=[{"type": "space"}] * 3), "name"),
    "datasets_empty": ExpectFail(ms_edit(datasets=[]), "multiscales.datasets"),
    "datasets_without_level_0": ExpectFail(
        ms_edit(datasets=seed_doc()["multiscales"][0]["datasets"][1:]), "multiscales.datasets"
    ),
    "datasets_not_ascending": ExpectFail(
        ms_edit(datasets=seed_doc()["multiscales"][0]["datasets"][::-1]), "multiscales.datasets"
    ),
    "level_0_ratio_not_one": ExpectFail(
        dataset_edit(0, bin_ratio=[2, 2, 2]), "multiscales.datasets"
    ),
    "dataset_path_mismatch": ExpectFail(dataset_edit(1, path="7"), "path"),
    "dataset_ratio_zero": ExpectFail(dataset_edit(1, bin_ratio=[0, 2, 2]), "bin_ratio"),
    "dataset_ratio_fraction": ExpectFail(dataset_edit(1, bin_ratio=[1.5, 2, 2]), "bin_ratio"),
    "dataset_sparsity": ExpectFail(dataset_edit(1, object_sparsity=1.5), "object_sparsity"),
    "dataset_level_missing": ExpectFail(dataset_edit(1, level=DELETE), "level"),
    "multiscale_name": ExpectFail(ms_edit(name=5), "multiscales.name"),
    "bbox_inverted": ExpectFail(
        {"bounding_box": {"min": [1.0, 0.0, 0.0], "max": [0.0, 1.0, 1.0]}}, "bounding_box"
    ),
    "bbox_missing_max": ExpectFail({"bounding_box": {"min": [0.0, 0.0, 0.0]}}, "bounding_box"),
    "bbox_wrong_dims": ExpectFail(
        {"bounding_box": {"min": [0.0, 0.0], "max": [1.0, 1.0]}}, "bounding_box"
    ),
    "bbox_nan": ExpectFail(
        {"bounding_box": {"min": [float("nan"), 0.0, 0.0], "max": [1.0, 1.0, 1.0]}},
        "bounding_box.min",
    ),
    "grid_shape_zero": ExpectFail(
        {"chunk_grid": {"origin": [0, 0, 0], "shape": [0, 1, 1]}}, "chunk_grid.shape"
    ),
    "grid_origin_fraction": ExpectFail(
        {"chunk_grid": {"origin": [0.5, 0, 0], "shape": [1, 1, 1]}}, "chunk_grid.origin"
    ),
    "grid_wrong_dims": ExpectFail({"chunk_grid": {"origin": [0], "shape": [1]}}, "chunk_grid"),
    "axis_units_count": ExpectFail({"axis_units": ["um"]}, "axis_units"),
    "axis_units_number": ExpectFail({"axis_units": 5}, "axis_units"),
    "coordinate_system": ExpectFail({"coordinate_system": 5}, "coordinate_system"),
    "creation_timestamp": ExpectFail({"creation_timestamp": 5}, "creation_timestamp"),
    "source_description": ExpectFail({"source_description": ["x"]}, "source_description"),
    "notes": ExpectFail({"notes": 3}, "notes"),
    "custom_metadata": ExpectFail({"custom_metadata": []}, "custom_metadata"),
    "draco_compressed": ExpectFail({"draco_compressed": "yes"}, "draco_compressed"),
    "grid_origin_bool": ExpectFail(
        {"chunk_grid": {"origin": [True, 0, 0], "shape": [1, 1, 1]}}, "chunk_grid"
    ),
    "non_monotone_ratios": ExpectFail(  # seed rule 7
        ms_edit(
            datasets=[
                *seed_doc()["multiscales"][0]["datasets"],
                {
                    "path": "2",
                    "level": 2,
                    "bin_ratio": [1, 1, 1],
                    "bin_shape": [50.0, 50.0, 50.0],
                    "object_sparsity": 0.5,
                },
            ]
        ),
        "bin_ratio",
    ),
    "level_bin_not_dividing_chunk": ExpectFail(  # FORMAT.md §2: 50 x 3 = 150 into 200
        dataset_edit(1, bin_ratio=[3, 3, 3], bin_shape=[150.0] * 3), "bin_shape"
    ),
}


def apply_edit(doc: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for key, value in edit.items():
        if value is DELETE:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def check_failure(case: ExpectFail) -> None:
    doc = apply_edit(seed_doc(), case.edit)
    with pytest.raises(case.exception) as info:
        RootMetadata.from_dict(doc)
    assert case.field in str(info.value)


@pytest.mark.parametrize("case", ROOT_FAILURES.values(), ids=ROOT_FAILURES.keys())
def test_root_parse_error_names_the_field(case: ExpectFail) -> None:
    check_failure(case)


def test_parse_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="chunk_shape"):
        RootMetadata.from_dict(apply_edit(seed_doc(), {"chunk_shape": [1.0, -1.0, 1.0]}))


LEVEL_BASE = {"level": 1, "bin_ratio": [2, 2], "bin_shape": [2.0, 2.0]}

LEVEL_FAILURES = {
    "missing_level": ({"level": DELETE}, "level"),
    "negative_level": ({"level": -1}, "level"),
    "level_string": ({"level": "1"}, "level"),
    "missing_bin_ratio": ({"bin_ratio": DELETE}, "bin_ratio"),
    "ratio_zero": ({"bin_ratio": [0, 2]}, "bin_ratio"),
    "missing_bin_shape": ({"bin_shape": DELETE}, "bin_shape"),
    "bin_shape_negative": ({"bin_shape": [-2.0, 2.0]}, "bin_shape"),
    "bin_shape_length": ({"bin_shape": [2.0]}, "bin_shape"),
    "vertex_count_negative": ({"vertex_count": -1}, "vertex_count"),
    "object_count_fraction": ({"object_count": 1.5}, "object_count"),
    "chunk_count_string": ({"chunk_count": "3"}, "chunk_count"),
    "sparsity_above_one": ({"object_sparsity": 2.0}, "object_sparsity"),
    "sparsity_string": ({"object_sparsity": "all"}, "object_sparsity"),
    "strategy_not_string": ({"sparsity_strategy": 5}, "sparsity_strategy"),
    "coarsening_string": ({"coarsening": "mean"}, "coarsening"),
}


@pytest.mark.parametrize(("edit", "field"), LEVEL_FAILURES.values(), ids=LEVEL_FAILURES.keys())
def test_level_parse_error_names_the_field(edit: dict[str, Any], field: str) -> None:
    with pytest.raises(MetadataValidationError) as info:
        LevelMetadata.from_dict(apply_edit(LEVEL_BASE, edit))
    assert field in str(info.value)


def test_level_unknown_sparsity_strategy_is_a_metadata_error() -> None:
    with pytest.raises(MetadataValidationError, match="sparsity_strategy"):
        LevelMetadata.from_dict({**LEVEL_BASE, "sparsity_strategy": "biggest"})


def test_unknown_sparsity_strategy_lists_valid_values() -> None:
    with pytest.raises(ValueError, match="spatial_coverage") as info:
        LevelMetadata.from_dict({**LEVEL_BASE, "sparsity_strategy": "biggest"})
    assert "sparsity_strategy" in str(info.value)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: BoundingBox(min=(0.0,), max=(1.0, 2.0)), "bounding_box.max"),
        (lambda: BoundingBox(min=(), max=()), "bounding_box.min"),
        (lambda: ChunkGrid(origin=(0, 1), shape=(1,)), "chunk_grid.shape"),
        (lambda: DatasetMetadata(level=True, bin_ratio=(1,), bin_shape=(1.0,)), "level"),
        (lambda: DatasetMetadata(level=0, bin_ratio=(1,), bin_shape=(1.0, 1.0)), "bin_shape"),
        (lambda: Axis(name="x", type="depth"), "axes.type"),
        (lambda: Axis.from_dict({"name": "x", "unit": 5}), "axes.unit"),
        (lambda: MultiscaleMetadata(axes=(Axis(name="x"),), datasets=()), "datasets"),
    ],
    ids=["bbox_dims", "bbox_empty", "grid_dims", "level_bool", "bin_shape_dims", "axis_type",
         "axis_unit", "no_datasets"],
)  # fmt: skip
def test_constructor_errors_name_the_field(build: Any, field: str) -> None:
    with pytest.raises(MetadataValidationError) as info:
        build()
    assert field in str(info.value)


# --------------------------------------------------------------------------------------------
# seed rule 3: bin shape divides chunk shape within 1e-6 x chunk_shape


@dataclass(frozen=True)
class Divides:
    chunk: float
    bins: float
    ok: bool


DIVISIBILITY = {
    "exact": Divides(200.0, 50.0, True),
    "equal": Divides(200.0, 200.0, True),
    "decimal_rounding": Divides(0.3, 0.1, True),  # 0.3 / 0.1 == 2.9999999999999996
    "decimal_rounding_2": Divides(0.7, 0.1, True),
    "within_tolerance": Divides(200.0, 50.00004, True),  # |200 - 4b| = 1.6e-4 <= 2e-4
    "just_outside_tolerance": Divides(200.0, 50.00006, False),  # 2.4e-4 > 2e-4
    "bin_larger_within_tolerance": Divides(200.0, 200.0001, True),
    "third": Divides(200.0, 200.0 / 3.0, True),
    "not_a_divisor": Divides(200.0, 30.0, False),
    "close_but_no": Divides(200.0, 66.6, False),
    "bin_larger": Divides(200.0, 300.0, False),
    "tiny": Divides(1e-3, 1e-3 / 7, True),
}


@pytest.mark.parametrize("case", DIVISIBILITY.values(), ids=DIVISIBILITY.keys())
def test_bin_divides_chunk_with_tolerance(case: Divides) -> None:
    if case.ok:
        check_divides([case.chunk], [case.bins], "base_bin_shape")
        meta = RootMetadata.create(
            geometry_type="point_cloud", chunk_shape=[case.chunk], base_bin_shape=[case.bins]
        )
        assert RootMetadata.from_dict(meta.to_dict()) == meta
    else:
        with pytest.raises(MetadataValidationError, match=r"base_bin_shape.*axis 0"):
            check_divides([case.chunk], [case.bins], "base_bin_shape")
        with pytest.raises(MetadataValidationError, match="base_bin_shape"):
            RootMetadata.create(
                geometry_type="point_cloud", chunk_shape=[case.chunk], base_bin_shape=[case.bins]
            )


def test_divisibility_error_names_the_axis() -> None:
    with pytest.raises(MetadataValidationError, match="axis 2"):
        check_divides([10.0, 10.0, 10.0], [5.0, 2.0, 3.0], "bin_shape")


# --------------------------------------------------------------------------------------------
# unknown versions warn; unknown keys are preserved


@pytest.mark.parametrize("version", ["2.0", "1.1", "0.9", ""])
def test_unknown_version_warns_and_is_kept(version: str) -> None:
    doc = {**seed_doc(), "zarr_vectors_version": version}
    with pytest.warns(ZVUserWarning, match="zarr_vectors_version"):
        meta = RootMetadata.from_dict(doc)
    assert meta.zarr_vectors_version == version
    assert meta.to_dict()["zarr_vectors_version"] == version


def test_known_version_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RootMetadata.from_dict(seed_doc())


def test_unknown_root_keys_are_preserved() -> None:
    future = {"x_future_key": {"nested": [1, 2.5, "three", None]}, "zz": True}
    doc = {**seed_doc(), **future, "step_size": 0.5}
    meta = RootMetadata.from_dict(doc)
    assert dict(meta.extra) == future
    assert dict(meta.type_metadata) == {"step_size": 0.5}  # a streamline key, recognised
    out = meta.to_dict()
    assert {k: out[k] for k in future} == future
    assert out["step_size"] == 0.5


def test_type_keys_of_other_types_are_kept_as_extra() -> None:
    doc = {**seed_doc(), "winding_order": "ccw"}  # a mesh key in a streamline store
    meta = RootMetadata.from_dict(doc)
    assert meta.extra == {"winding_order": "ccw"}
    assert meta.to_dict()["winding_order"] == "ccw"


def test_unknown_level_keys_are_preserved() -> None:
    doc = {**LEVEL_BASE, "x_future": [1, 2], "sparsity_strategy": "length"}
    level = LevelMetadata.from_dict(doc)
    assert level.extra == {"x_future": [1, 2]}
    assert level.sparsity_strategy is SparsityStrategy.LENGTH
    assert level.to_dict()["x_future"] == [1, 2]


def test_create_builds_default_axes_and_level_0() -> None:
    meta = RootMetadata.create(
        geometry_type="skeleton", chunk_shape=(4, 4, 4, 2), base_bin_shape=(2, 2, 2, 1),
        axis_units=("um", "um", "um", "s"),
    )  # fmt: skip
    axes = meta.multiscales.axes
    assert [(a.name, a.type, a.unit) for a in axes] == [
        ("x", "space", "um"), ("y", "space", "um"), ("z", "space", "um"), ("t", "time", "s"),
    ]  # fmt: skip
    (ds,) = meta.multiscales.datasets
    assert (ds.level, ds.bin_ratio, ds.bin_shape) == (0, (1, 1, 1, 1), (2.0, 2.0, 2.0, 1.0))
    assert meta.to_dict()["axis_units"] == ["um", "um", "um", "s"]
