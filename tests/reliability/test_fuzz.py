"""Fuzzing: random bytes and random JSON into every decoder and parser, random input into the
writers.  The only acceptable outcomes are success, one of our errors (``ZarrVectorsError``
subclasses) or, for the validator, findings.  Writers either round-trip exactly or raise
``InvalidInputError`` without touching the store."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Literal

import google_crc32c
import numcodecs
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from zarr.codecs import BloscCodec, GzipCodec
from zarr.storage import MemoryStore

import zarr_vectors as zv
from reliability._damage import Damage, write_kind
from zarr_vectors.core.checksums import append_crc32c
from zarr_vectors.core.payload.codec import ElementCodec
from zarr_vectors.core.shards import ShardFormat
from zarr_vectors.errors import (
    CorruptPayloadError,
    InvalidInputError,
    MetadataValidationError,
    ZarrVectorsError,
    ZVUserWarning,
)
from zarr_vectors.spec.metadata import LevelMetadata, RootMetadata
from zarr_vectors.validate import validate

FUZZ = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
FEW = settings(max_examples=12, suppress_health_check=[HealthCheck.too_slow], deadline=None)

# ---------------------------------------------------------------------------------------------
# bytes into the payload decode path


@FUZZ
@given(data=st.binary(max_size=300), compressed=st.booleans())
def test_element_decode_never_crashes(data: bytes, compressed: bool) -> None:
    codec = ElementCodec(numcodecs.Zstd() if compressed else None)
    outcome: bytes | str
    try:
        outcome = bytes(codec.decode(data, "fuzz chunk 0"))
    except CorruptPayloadError as exc:
        outcome = str(exc)
    assert isinstance(outcome, bytes) or "fuzz chunk 0" in outcome


@FUZZ
@given(inner=st.binary(max_size=200))
def test_element_decode_of_valid_zstd_frames(inner: bytes) -> None:
    """Frames that decompress fine but hold a garbled vlen header are still only our error."""
    frame = numcodecs.Zstd().encode(inner)
    with contextlib.suppress(CorruptPayloadError):
        ElementCodec(numcodecs.Zstd()).decode(bytes(frame), "x")


@FUZZ
@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    at_end=st.booleans(),
    checksum=st.booleans(),
    data=st.binary(max_size=400),
)
def test_shard_split_never_crashes(
    shape: list[int], at_end: bool, checksum: bool, data: bytes
) -> None:
    fmt = ShardFormat(tuple(shape), index_at_end=at_end, checksum=checksum)
    try:
        inner = fmt.split(data, "fuzz shard")
    except CorruptPayloadError:
        return
    assert all(isinstance(v, bytes) for v in inner.values())


@FUZZ
@given(
    entries=st.lists(
        st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)), min_size=1, max_size=8
    ),
    body=st.binary(max_size=100),
)
def test_shard_split_with_a_valid_checksum(entries: list[tuple[int, int]], body: bytes) -> None:
    """Random offsets behind a correct crc32c index still give only our error."""
    fmt = ShardFormat((len(entries),), index_at_end=True, checksum=True)
    index = np.array(entries, dtype="<u8").tobytes()
    crc = np.uint32(google_crc32c.value(index)).astype("<u4").tobytes()
    try:
        inner = fmt.split(body + index + crc, "fuzz")
    except CorruptPayloadError:
        return
    assert all(isinstance(v, bytes) for v in inner.values())


@pytest.fixture(scope="module")
def payload_templates() -> dict[str, dict[str, Any]]:
    """Point stores using each fast decode path: v3 zstd, v3 raw, v2 zstd, v3 sharded."""
    out: dict[str, dict[str, Any]] = {}
    variants: dict[str, dict[str, Any]] = {
        "v3": {},
        "v3-raw": {"compressor": None},
        "v2": {"zarr_format": 2},
        "sharded": {"shards": (2, 2, 2)},
    }
    for name, kw in variants.items():
        store = MemoryStore()
        write_kind("points_plain", store, **kw)
        out[name] = dict(store._store_dict)
    return out


@FEW
@given(which=st.sampled_from(["v3", "v3-raw", "v2", "sharded"]), junk=st.binary(max_size=120))
def test_random_chunk_bytes_give_our_errors(
    payload_templates: dict[str, dict[str, Any]], which: str, junk: bytes
) -> None:
    d = Damage(MemoryStore(dict(payload_templates[which])))
    flat = d.occupied()[0]
    key = d.chunk_key("0/vertices", flat) if which != "sharded" else "0/vertices/c/0/0/0"
    d.put(key, junk)
    message = "0/vertices"
    try:
        d.payload("0/vertices").read(np.array([flat]))
    except CorruptPayloadError as exc:
        message = str(exc)
    assert "0/vertices" in message
    with contextlib.suppress(ZarrVectorsError):
        zv.read_points(d.store)
    report = validate(d.store, level=5)
    assert report.level == 5


@pytest.mark.parametrize(
    ("compressor", "fmt"),
    [
        pytest.param(BloscCodec(), 3, id="blosc-v3"),
        pytest.param(GzipCodec(), 3, id="gzip-v3"),
        pytest.param(numcodecs.Zlib(), 2, id="zlib-v2"),
        pytest.param(numcodecs.LZMA(), 2, id="lzma-v2"),
    ],
)
def test_other_codec_chains_wrap_errors(compressor: Any, fmt: Literal[2, 3]) -> None:
    store = MemoryStore()
    zv.write_points(
        store, np.zeros((3, 3)), chunk_shape=(10.0,) * 3, compressor=compressor, zarr_format=fmt
    )
    d = Damage(store)
    d.put(d.chunk_key("0/vertices", 0), b"definitely not compressed")
    with pytest.raises(CorruptPayloadError, match="vertices"):
        zv.read_points(store)


def test_corrupt_vlen_header_is_checked_before_allocating() -> None:
    """A header claiming 2**31 elements is refused, not handed to an allocating decoder."""
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 3)), chunk_shape=(10.0,) * 3, compressor=BloscCodec())
    d = Damage(store)
    header = np.array([2**31, 1], dtype="<u4").tobytes()
    damaged = bytes(numcodecs.Blosc().encode(header + b"x"))
    d.put(d.chunk_key("0/vertices", 0), append_crc32c(damaged))  # a checksum that matches
    with pytest.raises(
        CorruptPayloadError, match=r"0/vertices .*(vlen-bytes element|vertex_counts)"
    ):
        zv.read_points(store)


def test_validator_reports_generic_codec_errors() -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 3)), chunk_shape=(10.0,) * 3, compressor=BloscCodec())
    d = Damage(store)
    d.put(d.chunk_key("0/vertices", 0), b"definitely not blosc")
    report = validate(store, level=5)
    assert "L3.payload.decode" in report.checks()


# ---------------------------------------------------------------------------------------------
# JSON into the metadata parsers and the validator

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)


JSON_VALUES = st.recursive(JSON_SCALARS, _containers, max_leaves=8)


def _valid_root() -> dict[str, Any]:
    store = MemoryStore()
    zv.write_polylines(
        store, [np.arange(12.0).reshape(4, 3)], chunk_shape=(5.0,) * 3, bin_shape=(2.5,) * 3
    )
    return dict(zv.open_store(store).attrs.asdict())


VALID_ROOT = _valid_root()
ROOT_KEYS = sorted(VALID_ROOT)


@st.composite
def mutated_roots(draw: st.DrawFn) -> dict[str, Any]:
    """A valid root document with a few keys replaced, deleted or nested values garbled."""
    doc = json.loads(json.dumps(VALID_ROOT))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from([*ROOT_KEYS, "extra_key"]))
        action = draw(st.sampled_from(["replace", "delete", "multiscales"]))
        if action == "delete":
            doc.pop(key, None)
        elif action == "replace":
            doc[key] = draw(JSON_VALUES)
        elif isinstance(doc.get("multiscales"), list) and doc["multiscales"]:
            block = doc["multiscales"][0]
            if isinstance(block, dict):
                field = draw(st.sampled_from(["axes", "datasets", "version", "type", "name"]))
                block[field] = draw(JSON_VALUES)
    out: dict[str, Any] = doc
    return out


ANY_ROOT = mutated_roots() | st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6)


@pytest.mark.slow
@FUZZ
@given(doc=ANY_ROOT)
def test_root_metadata_from_random_json(doc: dict[str, Any]) -> None:
    with warnings.catch_warnings():  # a warned-about field (e.g. an odd version) warns twice
        warnings.simplefilter("ignore", ZVUserWarning)
        try:
            meta = RootMetadata.from_dict(doc)
        except ZarrVectorsError:
            return
        assert RootMetadata.from_dict(meta.to_dict()) == meta


@FUZZ
@given(
    doc=st.dictionaries(
        st.sampled_from(
            [
                "level",
                "bin_ratio",
                "bin_shape",
                "object_sparsity",
                "vertex_count",
                "object_count",
                "chunk_count",
                "sparsity_strategy",
                "coarsening",
                "x",
            ]
        ),
        JSON_VALUES,
    )
)
def test_level_metadata_from_random_json(doc: dict[str, Any]) -> None:
    try:
        meta = LevelMetadata.from_dict(doc)
    except ZarrVectorsError:
        return
    assert LevelMetadata.from_dict(meta.to_dict()) == meta


def _root_with(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(VALID_ROOT))
    doc.update(changes)
    return doc


def _datasets_with(**changes: Any) -> dict[str, Any]:
    doc = _root_with()
    doc["multiscales"][0]["datasets"][0].update(changes)
    return doc


def _axes_with_a_number() -> dict[str, Any]:
    doc = _root_with()
    doc["multiscales"][0]["axes"][0] = 1
    return doc


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(_root_with(spatial_dims=float("nan")), id="nan-spatial_dims"),
        pytest.param(_root_with(spatial_dims=float("inf")), id="inf-spatial_dims"),
        pytest.param(_root_with(bounding_box=0), id="number-bounding_box"),
        pytest.param(_root_with(chunk_grid=True), id="bool-chunk_grid"),
        pytest.param(_axes_with_a_number(), id="number-axis"),
        pytest.param(_root_with(chunk_shape=[10**400] * 3), id="huge-int-chunk_shape"),
        pytest.param(_root_with(spatial_dims=10**30), id="huge-int-spatial_dims"),
        pytest.param(
            _root_with(chunk_shape=[1e308] * 3, base_bin_shape=[1e-308] * 3), id="tiny-bins"
        ),
        pytest.param(_datasets_with(level=float("inf")), id="inf-level"),
        pytest.param(_datasets_with(object_sparsity=10**400), id="huge-int-sparsity"),
        pytest.param(_datasets_with(bin_ratio=[2**60] * 3), id="huge-int-bin_ratio"),
        pytest.param(_root_with(multiscales=[{"axes": [], "datasets": [7]}]), id="number-dataset"),
        pytest.param(
            _root_with(chunk_grid={"origin": [0] * 3, "shape": [1e300] * 3}), id="huge-grid"
        ),
    ],
)
def test_malformed_root_json_gives_metadata_errors(doc: dict[str, Any]) -> None:
    with pytest.raises(MetadataValidationError):
        RootMetadata.from_dict(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"level": float("nan"), "bin_ratio": [1], "bin_shape": [1.0]},
        {"level": 0, "bin_ratio": [1], "bin_shape": [1.0], "vertex_count": float("inf")},
        {"level": 0, "bin_ratio": [1], "bin_shape": [1.0], "chunk_count": 2**64},
        {"level": 0, "bin_ratio": [1], "bin_shape": [1.0], "object_sparsity": -(10**400)},
        [0, [1], [1.0]],
    ],
    ids=["nan-level", "inf-count", "huge-int-count", "huge-int-sparsity", "not-an-object"],
)
def test_malformed_level_json_gives_metadata_errors(doc: Any) -> None:
    with pytest.raises(MetadataValidationError):
        LevelMetadata.from_dict(doc)


@pytest.fixture(scope="module")
def polyline_template() -> dict[str, Any]:
    store = MemoryStore()
    write_kind("polylines", store)
    return dict(store._store_dict)


@FEW
@given(doc=ANY_ROOT)
def test_validate_random_root_attributes(polyline_template: dict[str, Any], doc: Any) -> None:
    d = Damage(MemoryStore(dict(polyline_template)))
    root = d.doc("zarr.json")
    root["attributes"] = doc
    d.put("zarr.json", json.dumps(root, allow_nan=True).encode())
    report = validate(d.store, level=5)
    assert report.level == 5
    if doc != VALID_ROOT:
        assert report.findings or doc.keys() >= VALID_ROOT.keys()


@FEW
@given(doc=JSON_VALUES)
def test_validate_random_level_attributes(polyline_template: dict[str, Any], doc: Any) -> None:
    d = Damage(MemoryStore(dict(polyline_template)))
    level = d.doc("0/zarr.json")
    level["attributes"] = doc
    d.put("0/zarr.json", json.dumps(level, allow_nan=True).encode())
    validate(d.store, level=5)


# ---------------------------------------------------------------------------------------------
# writer inputs

DTYPES = ["<f2", "<f4", ">f4", "<f8", ">f8", "i1", "<i4", ">i8", "<u2", "<u8", "?", "<c8", "U3"]


@st.composite
def position_arrays(draw: st.DrawFn) -> npt.NDArray[Any]:
    """Arrays of any dtype and rank, sometimes with NaN/inf, sometimes non-contiguous."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    ndim = draw(st.sampled_from([2, 2, 2, 1, 3]))
    shape = tuple(draw(st.integers(0, 6)) for _ in range(ndim))
    if dtype.kind in "iu":
        elems: st.SearchStrategy[Any] = st.integers(0, 90)
    elif dtype.kind == "f":
        width: Literal[16, 32, 64] = (
            16 if dtype.itemsize == 2 else 32 if dtype.itemsize == 4 else 64
        )
        elems = st.floats(-90, 90, width=width) | st.sampled_from([np.nan, np.inf, -np.inf])
    elif dtype.kind == "c":
        elems = st.complex_numbers(max_magnitude=50, width=64)
    elif dtype.kind == "b":
        elems = st.booleans()
    else:  # numpy strings cannot hold a trailing NUL: keep it out of the alphabet
        elems = st.text(st.characters(exclude_characters="\x00"), max_size=3)
    arr = draw(hnp.arrays(dtype, shape, elements=elems))
    layout = draw(st.sampled_from(["c", "fortran", "strided"]))
    if layout == "fortran":
        arr = np.asfortranarray(arr)
    elif layout == "strided" and arr.ndim >= 1:
        arr = np.repeat(arr, 2, axis=0)[::2]
    return arr


def _acceptable(arr: npt.NDArray[Any]) -> bool:
    """What the writers must accept: finite numeric (N, D >= 1) arrays."""
    if arr.ndim != 2 or arr.shape[1] < 1 or arr.dtype.kind not in "iuf":
        return False
    return bool(np.isfinite(arr.astype(np.float64)).all())


def _stored(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return arr.astype("<f4" if arr.dtype.kind == "f" and arr.dtype.itemsize == 4 else "<f8")


def _sorted_rows(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return arr[np.lexsort(arr.T[::-1])] if arr.size else arr


@FUZZ
@given(arr=position_arrays())
def test_write_points_round_trips_or_rejects(arr: npt.NDArray[Any]) -> None:
    store = MemoryStore()
    d = arr.shape[1] if arr.ndim == 2 and arr.shape[1] >= 1 else 3
    try:
        zv.write_points(store, arr, chunk_shape=(25.0,) * d)
    except InvalidInputError:
        assert store._store_dict == {}, "nothing may be written when the input is rejected"
        return
    assert _acceptable(arr), f"accepted bad input {arr.dtype} {arr.shape}"
    got = zv.read_points(store).positions
    expected = _stored(arr)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(_sorted_rows(got), _sorted_rows(expected))


@FEW
@given(
    paths=st.lists(position_arrays(), min_size=1, max_size=4),
)
def test_write_polylines_round_trips_or_rejects(paths: list[npt.NDArray[Any]]) -> None:
    store = MemoryStore()
    ok = all(_acceptable(p) for p in paths) and len({p.shape[1] for p in paths}) == 1
    d = paths[0].shape[1] if paths[0].ndim == 2 and paths[0].shape[1] >= 1 else 3
    try:
        zv.write_polylines(store, paths, chunk_shape=(25.0,) * d)
    except InvalidInputError:
        assert store._store_dict == {}
        return
    assert ok, f"accepted bad input {[(p.dtype, p.shape) for p in paths]}"
    result = zv.read_polylines(store)
    flat = np.concatenate([np.asarray(p) for p in paths])
    expected = _stored(flat)
    assert result.positions.dtype == expected.dtype
    np.testing.assert_array_equal(result.positions, expected)
    np.testing.assert_array_equal(np.diff(result.offsets), [len(p) for p in paths])


def test_polylines_of_mixed_width_are_rejected() -> None:
    store = MemoryStore()
    paths = [np.zeros((2, 3)), np.zeros((4, 3)), np.zeros((2, 2))]
    with pytest.raises(InvalidInputError, match="object 2 has 2 columns, object 0 has 3"):
        zv.write_polylines(store, paths, chunk_shape=(1.0,) * 3)
    assert store._store_dict == {}


def test_big_endian_float32_stays_float32() -> None:
    store = MemoryStore()
    positions = np.array([[1.1, 2.2, 3.3], [9.7, 0.1, 5.5]], dtype=">f4")
    zv.write_points(store, positions, chunk_shape=(10.0,) * 3)
    got = zv.read_points(store).positions
    assert got.dtype == np.dtype("<f4")
    np.testing.assert_array_equal(got, positions)  # bit-exact: a byte swap, no rounding
    assert zv.open_store(store)["0/vertices"].attrs["dtype"] == "<f4"


@settings(max_examples=6, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arr=position_arrays())
def test_rejected_overwrite_leaves_the_old_store(arr: npt.NDArray[Any]) -> None:
    assume(not _acceptable(arr))
    root = Path(tempfile.mkdtemp())
    try:
        path = root / "old.zarrvectors"
        zv.write_points(path, np.ones((4, 3)), chunk_shape=(25.0,) * 3)
        before = {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
        with pytest.raises(InvalidInputError):
            zv.write_points(path, arr, chunk_shape=(25.0,) * 3, overwrite=True)
        after = {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
        assert after == before
        assert sorted(x.name for x in root.iterdir()) == ["old.zarrvectors"]
    finally:
        shutil.rmtree(root)


def test_an_empty_path_of_a_non_numeric_dtype_is_rejected() -> None:
    """Concatenating [bool (0, 3), float (2, 3)] gives floats: each path is checked itself."""
    store = MemoryStore()
    paths = [np.zeros((2, 3), np.float32), np.zeros((0, 3), bool)]
    with pytest.raises(InvalidInputError, match="object 1 has dtype bool"):
        zv.write_polylines(store, paths, chunk_shape=(25.0,) * 3)
    assert store._store_dict == {}
