"""Careless or hostile input gets a ``zarr_vectors.errors`` exception, never a foreign one, and
never a silent change (issue 25, items 6-9).  Each case names the input of the issue it
reproduces; the store it was aimed at stays empty (checks run before the store is touched)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
from typer.testing import CliRunner
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import (
    CorruptPayloadError,
    InvalidInputError,
    MetadataValidationError,
    ZarrVectorsError,
)

C = (25.0, 25.0, 25.0)
P = np.random.default_rng(0).uniform(0, 100, (300, 3)).astype(np.float32)
LINES = [P[:10], P[10:30]]


@dataclass(frozen=True)
class Hostile:
    name: str
    call: Callable[[Any], object]
    error: type[ZarrVectorsError]


def _points(**kw: Any) -> Callable[[Any], object]:
    return lambda store: zv.write_points(store, kw.pop("positions", P), **{"chunk_shape": C, **kw})


CASES = [
    # item 8: foreign exceptions
    Hostile("chunk_shape='abc'", _points(chunk_shape="abc"), MetadataValidationError),
    Hostile("chunk_shape=None", _points(chunk_shape=None), MetadataValidationError),
    Hostile("chunk_shape=5 (scalar)", _points(chunk_shape=5), MetadataValidationError),
    Hostile("bin_shape='x'", _points(bin_shape="x"), MetadataValidationError),
    Hostile("shards=(0,1,1)", _points(shards=(0, 1, 1)), MetadataValidationError),
    Hostile("shards='a'", _points(shards="a"), MetadataValidationError),
    Hostile(
        "attribute name of 300 characters",
        _points(attributes={"a" * 300: np.zeros(300)}),
        InvalidInputError,
    ),
    Hostile(
        "offsets= list not covering the vertices",
        lambda s: zv.write_polylines(s, P, offsets=[0, 10, 30], chunk_shape=C),
        InvalidInputError,
    ),
    Hostile(
        "axis_units of the wrong length", _points(axis_units=["m", "m"]), MetadataValidationError
    ),
    Hostile("axis_units=5", _points(axis_units=5), MetadataValidationError),
    Hostile("ragged nested-list positions", _points(positions=[[1, 2], [3]]), InvalidInputError),
    Hostile("positions of 2 columns, chunk of 3", _points(positions=P[:, :2]), ZarrVectorsError),
    Hostile(
        "custom_metadata holding an ndarray",
        _points(custom_metadata={"x": np.arange(3)}),
        MetadataValidationError,
    ),
    Hostile(
        "custom_metadata holding a set",
        _points(custom_metadata={"x": {1, 2}}),
        MetadataValidationError,
    ),
    Hostile(
        "custom_metadata with a non-string key",
        _points(custom_metadata={1: 2}),
        MetadataValidationError,
    ),
    Hostile("bounds='x'", _points(bounds="x"), InvalidInputError),
    # items 6 and 9: silently accepted or changed
    Hostile(
        "custom_metadata={'x': inf}",
        _points(custom_metadata={"x": math.inf}),
        MetadataValidationError,
    ),
    Hostile(
        "custom_metadata={'x': nan}",
        _points(custom_metadata={"x": math.nan}),
        MetadataValidationError,
    ),
    Hostile(
        "custom_metadata nested 100 deep",
        _points(custom_metadata={"x": json.loads("[" * 100 + "]" * 100)}),
        MetadataValidationError,
    ),
    Hostile(
        "step_size=nan",
        lambda s: zv.write_streamlines(s, LINES, chunk_shape=C, step_size=math.nan),
        MetadataValidationError,
    ),
    Hostile(
        "step_size=-1",
        lambda s: zv.write_streamlines(s, LINES, chunk_shape=C, step_size=-1.0),
        MetadataValidationError,
    ),
    Hostile(
        "memory_limit=-1",
        lambda s: zv.open_writer(s, "point_cloud", chunk_shape=C, memory_limit=-1),
        MetadataValidationError,
    ),
    Hostile(
        "partition_chunks=0",
        lambda s: zv.open_writer(s, "point_cloud", chunk_shape=C, partition_chunks=0),
        MetadataValidationError,
    ),
    Hostile("duplicate axis_names", _points(axis_names=["x", "x", "y"]), MetadataValidationError),
    Hostile(
        "int64 coordinates above 2**53 (would be rounded)",
        _points(positions=np.array([[2**53 + 1, 0, 0]], dtype=np.int64), chunk_shape=(1e18,) * 3),
        InvalidInputError,
    ),
    Hostile(
        "bytes attribute (would come back as str)",
        _points(positions=P[:2], attributes={"b": np.array([b"ab", b"cd"])}),
        InvalidInputError,
    ),
    Hostile(
        "chunk_shape of strings", _points(chunk_shape=("1", "2", "3")), MetadataValidationError
    ),
    Hostile("compressor='bogus'", _points(compressor="bogus"), InvalidInputError),
    Hostile("compressor=123 (not a codec)", _points(compressor=123), InvalidInputError),
    Hostile(
        "a per-array compressor naming no preset",
        _points(compressor={"*": "lz4", "vertices": "bogus"}),
        InvalidInputError,
    ),
    Hostile(
        "a v2 codec for a v3 store",
        _points(compressor=numcodecs.Zstd(level=1)),
        InvalidInputError,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_write_input_is_refused(case: Hostile) -> None:
    store = MemoryStore()
    with pytest.raises(case.error) as info:
        case.call(store)
    assert isinstance(info.value, ZarrVectorsError)
    assert dict(store._store_dict) == {}  # nothing written


def test_numpy_scalars_in_custom_metadata_are_converted() -> None:
    store = MemoryStore()
    meta = {"f": np.float32(1.5), "i": np.int64(3), "b": np.bool_(True), "t": (1, 2)}
    zv.write_points(store, P, chunk_shape=C, custom_metadata=meta)
    assert zv.open_store(store).attrs["custom_metadata"] == {
        "f": 1.5,
        "i": 3,
        "b": True,
        "t": [1, 2],
    }
    raw = store._store_dict["zarr.json"].to_bytes()
    json.loads(raw, parse_constant=lambda c: pytest.fail(f"non-standard {c}"))


@pytest.fixture
def written() -> MemoryStore:
    store = MemoryStore()
    zv.write_points(store, P, chunk_shape=C, bin_shape=(5.0, 5.0, 5.0))
    return store


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: zv.read_points(s, bbox="x"), InvalidInputError),
        (lambda s: zv.read_points(s, level="0"), InvalidInputError),
        (lambda s: zv.read_points(s, level=-1), InvalidInputError),
        (lambda s: zv.build_pyramid(s, "ab"), MetadataValidationError),
        (lambda s: zv.rechunk(s, MemoryStore(), chunk_shape="abc"), MetadataValidationError),
        (lambda s: zv.rechunk(s, MemoryStore(), chunk_shape=(0, 1, 1)), MetadataValidationError),
        (lambda s: zv.validate(s, level=9), InvalidInputError),
    ],
    ids=[
        "bbox",
        "level-str",
        "level-negative",
        "ratios-str",
        "rechunk-abc",
        "rechunk-zero",
        "validate-level",
    ],
)
def test_hostile_read_and_tool_input_is_refused(
    written: MemoryStore, call: Callable[[Any], object], error: type[ZarrVectorsError]
) -> None:
    before = dict(written._store_dict)
    with pytest.raises(error):
        call(written)
    assert dict(written._store_dict) == before


def _put(store: MemoryStore, key: str, data: bytes) -> None:
    sync(store.set(key, default_buffer_prototype().buffer.from_bytes(data)))


def _edit_root(store: MemoryStore, edit: Callable[[dict[str, Any]], object]) -> None:
    doc = json.loads(store._store_dict["zarr.json"].to_bytes())
    edit(doc["attributes"])
    _put(store, "zarr.json", json.dumps(doc).encode())


def _shrink(store: MemoryStore, key: str) -> None:
    doc = json.loads(store._store_dict[key].to_bytes())
    doc["shape"][0] -= 1
    _put(store, key, json.dumps(doc).encode())


BAD_STORES: list[tuple[str, Callable[[MemoryStore], None], str, type[ZarrVectorsError]]] = [
    (
        "zarr.json of 100,000 '['",
        lambda s: _put(s, "zarr.json", b"[" * 100_000),
        "L1.json.malformed",
        MetadataValidationError,
    ),
    (
        "level zarr.json of 100,000 '['",
        lambda s: _put(s, "0/zarr.json", b"[" * 100_000),
        "L1.json.malformed",
        MetadataValidationError,
    ),
    (
        "chunk_grid.shape of 1e12",
        lambda s: _edit_root(
            s, lambda a: a.__setitem__("chunk_grid", {"origin": [0, 0, 0], "shape": [1e12, 1, 1]})
        ),
        "L1.array.shape",
        CorruptPayloadError,
    ),
    (
        "spatial_dims 3.0",
        lambda s: _edit_root(s, lambda a: a.__setitem__("spatial_dims", 3.0)),
        "L1.root.key_type",
        MetadataValidationError,
    ),
    (
        "chunk sizes as strings",
        lambda s: _edit_root(s, lambda a: a.__setitem__("chunk_shape", ["25"] * 3)),
        "L1.root.key_type",
        MetadataValidationError,
    ),
    (
        "dataset without object_sparsity",
        lambda s: _edit_root(
            s, lambda a: a["multiscales"][0]["datasets"][0].pop("object_sparsity")
        ),
        "L2.multiscales.dataset",
        MetadataValidationError,
    ),
    (
        "float bin_ratio",
        lambda s: _edit_root(
            s, lambda a: a["multiscales"][0]["datasets"][0].__setitem__("bin_ratio", [1.0] * 3)
        ),
        "L2.multiscales.dataset",
        MetadataValidationError,
    ),
    (
        "NaN in custom_metadata",
        lambda s: _edit_root(s, lambda a: a.__setitem__("custom_metadata", {"x": math.nan})),
        "L1.json.malformed",
        MetadataValidationError,
    ),
    (
        "vertices shape reduced by one",
        lambda s: _shrink(s, "0/vertices/zarr.json"),
        "L1.array.shape",
        CorruptPayloadError,
    ),
    (
        "vertex_counts chunk deleted",
        lambda s: s._store_dict.pop("0/vertex_counts/c/0/0/0"),
        "L2.dense.missing_chunk",
        CorruptPayloadError,
    ),
]


@pytest.mark.parametrize(
    ("damage", "check", "error"), [c[1:] for c in BAD_STORES], ids=[c[0] for c in BAD_STORES]
)
@pytest.mark.parametrize("level", [2, 5])
def test_bad_store_is_reported_by_validate_and_refused_by_read(
    written: MemoryStore,
    damage: Callable[[MemoryStore], None],
    check: str,
    error: type[ZarrVectorsError],
    level: int,
) -> None:
    damage(written)
    report = zv.validate(written, level=level)  # never raises
    assert not report.ok
    assert check in report.checks()
    with pytest.raises(error):
        zv.read_points(written)


def test_stray_dense_chunk_is_an_error_by_default(written: MemoryStore) -> None:
    _put(
        written,
        "0/vertex_counts/c/5/0/0",
        written._store_dict["0/vertex_counts/c/0/0/0"].to_bytes(),
    )
    assert "L2.dense.extra_chunk" in zv.validate(written).checks()


def test_cli_validate_prints_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    zv.write_points(path, P, chunk_shape=C)
    (path / "zarr.json").write_bytes(b"[" * 100_000)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "L1.json.malformed" in result.output
