"""Stores written by past versions still read exactly (STYLE §13).

Each golden store under ``tests/golden/<format version>/`` is read with the current code (whole,
one box, one object by id) and compared, array by array and dtype by dtype, with what the
writing version read back (``expected.npz``); it must also validate without errors.  The
stores are written only by ``scripts/make_golden.py``, run on purpose; never by a test.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from golden_cases import (
    EXPECTED,
    GOLDEN_DIR,
    QUERIES,
    READERS,
    flatten,
    load_manifest,
    query_kwargs,
)

import zarr_vectors as zv
from zarr_vectors.testing import assert_arrays_identical

MANIFEST = load_manifest()
STORES = {entry["name"]: entry for entry in MANIFEST["stores"]}


@pytest.fixture(scope="module")
def expected() -> Any:
    with np.load(EXPECTED, allow_pickle=False) as npz:
        return {key: npz[key] for key in npz.files}


# Result fields added after the golden stores were recorded: new fields are allowed, but only
# deliberately (each one named here); every recorded field must still come back unchanged.
FIELDS_ADDED_SINCE: dict[str, frozenset[str]] = {
    "Meshes": frozenset({"input_order"}),
    "Points": frozenset({"object_ids", "object_attributes", "groups", "group_attributes"}),
}

# Result fields renamed after the golden stores were recorded (current name -> recorded name):
# the naming rule (``object_ids`` one per object, ``vertex_object_ids`` one per vertex) renamed
# result fields without changing what they hold or what the stores contain.
FIELDS_RENAMED_SINCE: dict[str, dict[str, str]] = {
    "Graph": {"vertex_object_ids": "object_ids"},
    "Meshes": {"vertex_object_ids": "object_ids", "object_ids": "ids"},
    "Points": {"vertex_object_ids": "object_ids"},
}


def _field(key: str) -> str:
    """The result field a flattened key belongs to (``f``, ``f/k``, ``f#keys`` -> ``f``)."""
    return key.split("/")[0].split("#")[0]


def _recorded(values: dict[str, Any], result_type: str) -> dict[str, Any]:
    """Flattened result values keyed by the field names the golden stores were recorded with."""
    added = FIELDS_ADDED_SINCE.get(result_type, frozenset())
    renamed = FIELDS_RENAMED_SINCE.get(result_type, {})
    out = {}
    for key, value in values.items():
        field = _field(key)
        if field not in added:
            out[renamed.get(field, field) + key[len(field) :]] = value
    return out


@pytest.fixture
def golden_copy(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A copy of the golden store: a read that wrote to its store would not damage the original."""
    src = GOLDEN_DIR / request.param
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def test_every_geometry_type_and_format_is_covered() -> None:
    seen = {(e["geometry_type"], e["zarr_format"], e["compressor"]) for e in STORES.values()}
    for gtype in READERS:
        for fmt in (2, 3):
            for cname in ("zstd", "lz4", "none"):
                assert (gtype, fmt, cname) in seen
    assert any(e.get("shards") for e in STORES.values())
    assert {p.name for p in GOLDEN_DIR.glob("*.zip")} == set(STORES)


@pytest.mark.parametrize("golden_copy", sorted(STORES), indirect=True)
@pytest.mark.parametrize("query", QUERIES)
def test_golden_store_reads_exactly(golden_copy: Path, query: str, expected: Any) -> None:
    entry = STORES[golden_copy.name]
    got = READERS[entry["geometry_type"]](str(golden_copy), **query_kwargs(entry, query))
    arrays, scalars = flatten(got)
    arrays = _recorded(arrays, type(got).__name__)
    scalars = _recorded(scalars, type(got).__name__)
    prefix = f"{entry['expected_key']}|{query}|"
    want = {k[len(prefix) :]: v for k, v in expected.items() if k.startswith(prefix)}
    assert sorted(arrays) == sorted(want), "fields of the result changed"
    for key, value in arrays.items():
        assert_arrays_identical(value, want[key], f"{golden_copy.name} {query} {key}")
    assert scalars == entry["expected"][query]
    assert golden_copy.read_bytes() == (GOLDEN_DIR / golden_copy.name).read_bytes()


@pytest.mark.parametrize("golden_copy", sorted(STORES), indirect=True)
def test_golden_store_validates(golden_copy: Path) -> None:
    report = zv.validate(str(golden_copy))
    assert report.ok, report.errors
    # neither the reads above nor validation may rewrite a store they only read
    assert golden_copy.read_bytes() == (GOLDEN_DIR / golden_copy.name).read_bytes()
