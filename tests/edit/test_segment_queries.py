"""Queries on stores with append segments answer as on a fresh write of the same data.

Counts, predicates, spheres and open-Reader reads (which remember verified files and decode
only some rows) must merge segment rows exactly as the plain reads do (docs/spec.md §13.2).
"""

from __future__ import annotations

from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.edit.cases import CASE_IDS, CASES, Case, plain

import zarr_vectors as zv
from zarr_vectors.edit import incremental
from zarr_vectors.edit.incremental import AppendPath


def _stores(case: Case, tmp_path: Path) -> tuple[str, str, dict[str, Any]]:
    rng = np.random.default_rng(11)
    parts = [case.make(rng, 12, 0.0) for _ in range(3)]
    store, fresh = str(tmp_path / "a.zarr"), str(tmp_path / "f.zarr")
    case.write(store, chunk_shape=case.chunk, **parts[0])
    for data in parts[1:]:
        case.append(store, **data)
        assert incremental.LAST_PATH[-1] is AppendPath.CHUNKS
    assert zv.open_store(store)["0"].attrs["segments"] == [1, 2]
    whole = reduce(case.concat, parts)
    case.write(fresh, chunk_shape=case.chunk, **whole)
    return store, fresh, whole


def _predicate(data: dict[str, Any]) -> dict[str, Any]:
    for key in ("attributes", "object_attributes"):
        for name, values in (data.get(key) or {}).items():
            flat = (
                np.concatenate([np.ravel(v) for v in values])
                if isinstance(values, list)
                else values
            )
            if np.asarray(flat).dtype.kind == "f":
                return {name: (float(np.median(flat)), None)}
    return {}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_queries_on_segments_equal_fresh(case: Case, tmp_path: Path) -> None:
    store, fresh, whole = _stores(case, tmp_path)
    d = len(case.chunk)
    box = ([-5.0] * d, [6.0] * d)
    big = ([-9.0] * d, [9.0] * d)  # holds whole chunks: counted from vertex_counts
    sphere = ([1.0] * d, 7.5)
    where = _predicate(whole)
    assert where or case.name in {"skeleton", "mesh"}
    a, f = zv.open(store), zv.open(fresh)
    for _ in range(2):  # the second pass takes the remembered-file route
        assert plain(a.read(bbox=box)) == plain(f.read(bbox=box))
        assert plain(a.read(sphere=sphere)) == plain(f.read(sphere=sphere))
        if where:
            assert plain(a.read(where=where)) == plain(f.read(where=where))
            assert plain(a.read(bbox=box, where=where)) == plain(f.read(bbox=box, where=where))
        if case.name != "point_cloud":
            ids = np.arange(0, int(zv.open_store(fresh)["0"].attrs["object_count"]), 3)
            assert plain(a.read(object_ids=ids)) == plain(f.read(object_ids=ids))
    assert zv.count(store, bbox=box) == zv.count(fresh, bbox=box)
    assert zv.count(store, bbox=big) == zv.count(fresh, bbox=big)
    assert plain(a.read(bbox=big)) == plain(f.read(bbox=big))
    assert zv.count(store, sphere=sphere) == zv.count(fresh, sphere=sphere)
    if where:
        assert zv.count(store, where=where) == zv.count(fresh, where=where)
        assert zv.count(store, bbox=box, where=where) == zv.count(fresh, bbox=box, where=where)
