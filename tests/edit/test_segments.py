"""Append segments (docs/spec.md §13.2): many appends, old readers, validation, compaction."""

from __future__ import annotations

import json
import shutil
from functools import reduce
from pathlib import Path

import numpy as np
import pytest
from tests.edit.cases import CASE_IDS, CASES, Case, reads

import zarr_vectors as zv
from zarr_vectors.edit import incremental
from zarr_vectors.edit.incremental import AppendPath
from zarr_vectors.errors import CorruptPayloadError


def _level_doc(store: Path) -> Path:
    return store / "0" / "zarr.json"


def _edit_level_attrs(store: Path, change: dict[str, object]) -> None:
    doc = _level_doc(store)
    meta = json.loads(doc.read_text())
    meta["attributes"].update(change)
    meta["attributes"] = {k: v for k, v in meta["attributes"].items() if v is not None}
    doc.write_text(json.dumps(meta))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_several_appends_read_as_one_fresh_write(case: Case, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    parts = [case.make(rng, 6, 0.0) for _ in range(4)]
    store, fresh = tmp_path / "a.zarr", tmp_path / "f.zarr"
    case.write(str(store), chunk_shape=case.chunk, **parts[0])
    for data in parts[1:]:
        case.append(str(store), **data)
        assert incremental.LAST_PATH[-1] is AppendPath.CHUNKS
    case.write(str(fresh), chunk_shape=case.chunk, **reduce(case.concat, parts))
    assert zv.open_store(str(store))["0"].attrs["segments"] == [1, 2, 3]
    assert reads(case, str(store)) == reads(case, str(fresh))
    report = zv.validate(str(store), level=5)
    assert report.ok
    assert [f.check for f in report.findings] == ["L2.level.segments"]
    zv.compact(str(store))
    assert "segments" not in zv.open_store(str(store))["0"].attrs
    assert not (store / "0" / "segments").exists()
    assert reads(case, str(store)) == reads(case, str(fresh))
    assert zv.validate(str(store), level=5).findings == ()


def _points_with_segment(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    store = tmp_path / "p.zarr"
    zv.write_points(str(store), rng.uniform(0, 40, (400, 3)), chunk_shape=(10.0,) * 3)
    zv.append_points(str(store), rng.uniform(0, 40, (50, 3)))
    return store


def test_a_reader_ignoring_segments_refuses_the_store(tmp_path: Path) -> None:
    store = _points_with_segment(tmp_path)
    _edit_level_attrs(store, {"segments": None})  # what a reader without the extension sees
    with pytest.raises(CorruptPayloadError, match="vertex_counts says"):
        zv.read_points(str(store))
    checks = {f.check for f in zv.validate(str(store), level=3).findings}
    assert "L3.vertex_counts.match" in checks
    assert "L1.level.unknown_node" in checks


def test_validate_reports_missing_unlisted_and_malformed_segments(tmp_path: Path) -> None:
    store = _points_with_segment(tmp_path)
    seg = store / "0" / "segments"
    shutil.copytree(seg / "1", seg / "7")  # a group the level does not list
    found = {f.check: f for f in zv.validate(str(store)).findings}
    assert found["L1.level.segment_unlisted"].path.endswith("segments/7")
    shutil.rmtree(seg / "1")  # the listed group is gone
    report = zv.validate(str(store))
    assert not report.ok
    assert "L1.level.segments" in {f.check for f in report.findings}
    _edit_level_attrs(store, {"segments": [2, 1]})
    report = zv.validate(str(store))
    assert any(f.check == "L1.level.segments" and "ascending" in f.message for f in report.findings)
    with pytest.raises(zv.errors.MetadataValidationError, match="ascending"):
        zv.read_points(str(store))


def test_ten_point_appends_keep_bin_order_and_statistics(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    chunks = [rng.uniform(-5, 35, (int(rng.integers(1, 60)), 3)) for _ in range(11)]
    values = [rng.integers(0, 7, len(c)).astype(np.int16) for c in chunks]
    store, fresh = tmp_path / "a.zarr", tmp_path / "f.zarr"
    kw = {"chunk_shape": (10.0,) * 3, "bin_shape": (2.5,) * 3}
    chunks[0][:2] = [[-5, -5, -5], [35, 35, 35]]
    zv.write_points(str(store), chunks[0], attributes={"v": values[0]}, **kw)
    for c, v in zip(chunks[1:], values[1:], strict=True):
        zv.append_points(str(store), c, attributes={"v": v})
    zv.write_points(
        str(fresh), np.concatenate(chunks), attributes={"v": np.concatenate(values)}, **kw
    )
    assert zv.open_store(str(store))["0"].attrs["segments"] == list(range(1, 11))
    for box in (None, ([0.0, 0.0, 0.0], [12.0, 20.0, 7.0])):
        a, f = zv.read_points(str(store), bbox=box), zv.read_points(str(fresh), bbox=box)
        np.testing.assert_array_equal(a.positions, f.positions)
        np.testing.assert_array_equal(a.attributes["v"], f.attributes["v"])
    for name in ("statistics/v", "value_sets/v", "vertex_counts"):
        a_arr = zv.open_store(str(store))["0"][name]
        f_arr = zv.open_store(str(fresh))["0"][name]
        np.testing.assert_array_equal(a_arr[...], f_arr[...])
        assert dict(a_arr.attrs) == dict(f_arr.attrs)
    assert zv.validate(str(store), level=5).ok


@pytest.mark.parametrize("name", ["point_cloud", "streamline", "mesh"])
def test_segments_move_when_a_later_append_grows_the_grid(name: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == name)
    rng = np.random.default_rng(5)
    parts = [case.make(rng, 5, 0.0), case.make(rng, 5, 3.0), case.make(rng, 5, -25.0)]
    store, fresh = tmp_path / "a.zarr", tmp_path / "f.zarr"
    case.write(str(store), chunk_shape=case.chunk, **parts[0])
    case.append(str(store), **parts[1])
    grid = zv.open_store(str(store)).attrs["chunk_grid"]
    case.append(str(store), **parts[2])  # into negative chunks: segment 1's files are renamed
    assert zv.open_store(str(store)).attrs["chunk_grid"] != grid
    assert zv.open_store(str(store))["0"].attrs["segments"] == [1, 2]
    case.write(str(fresh), chunk_shape=case.chunk, **reduce(case.concat, parts))
    assert reads(case, str(store)) == reads(case, str(fresh))
    assert zv.validate(str(store), level=5).ok
