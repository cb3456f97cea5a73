"""Chunk-incremental appends of every geometry type store what a fresh write of A+B stores.

The append puts the new rows in an append segment (docs/spec.md, "Append segments"): the
appended store reads as a fresh write of the concatenated input, validates at the default
level and at level 5, keeps the files of the store before the append (hard links) unchanged,
holds the fresh write's dense arrays and coarse levels byte for byte, and after ``compact``
equals the fresh write file by file (the root's creation timestamp aside).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.edit.cases import CASE_IDS, CASES, Case, reads

import zarr_vectors as zv
from zarr_vectors.edit import append_points, append_streamlines, incremental
from zarr_vectors.edit.incremental import AppendPath

SIZES = st.tuples(
    st.integers(0, 2**31),
    st.integers(1, 6),
    st.integers(1, 6),
    st.floats(-30, 30),
    st.sampled_from([2, 3]),
)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a store by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def hard_links(src: Path, dst: Path) -> None:
    """Link every file of ``src`` into ``dst`` (to see whether a file was written in place)."""
    for root, _dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(Path(root) / name, dst / rel / name)


def _root(doc: bytes, name: str) -> Any:
    meta = json.loads(doc)
    attrs = meta.get("attributes", meta) if name == "zarr.json" else meta
    attrs.pop("creation_timestamp", None)
    return meta


_PER_CHUNK = ("vertices", "vertex_fragments", "attributes", "links", "link_attributes", "cross")


def assert_same_dense(store: Path, fresh: Path) -> None:
    """Every file but level 0's payloads and segments is the fresh write's (timestamp aside)."""
    a, f = snapshot(store), snapshot(fresh)

    def dense(names: dict[str, bytes]) -> list[str]:
        return sorted(
            n for n in names if not n.startswith(("0/segments/", *[f"0/{p}" for p in _PER_CHUNK]))
        )

    assert dense(a) == dense(f)
    for name in dense(a):
        if name in ("zarr.json", ".zattrs"):
            assert _root(a[name], name) == _root(f[name], name)
        elif name not in ("0/zarr.json", "0/.zattrs"):
            assert a[name] == f[name], name


def assert_same_files(store: Path, fresh: Path) -> None:
    """Both stores hold the same files with the same bytes (root timestamp aside)."""
    a, f = snapshot(store), snapshot(fresh)
    assert sorted(a) == sorted(f)
    for name in sorted(a):
        if name in ("zarr.json", ".zattrs"):
            assert _root(a[name], name) == _root(f[name], name)
        else:
            assert a[name] == f[name], name


def check_append(case: Case, tmp: Path, a: dict[str, Any], b: dict[str, Any], fmt: int) -> None:
    """Append ``b`` to a store of ``a``: the chunk path, a fresh write's files, old files kept."""
    store, fresh, backup = tmp / "a.zarr", tmp / "f.zarr", tmp / "links"
    case.write(str(store), chunk_shape=case.chunk, zarr_format=fmt, **a)
    hard_links(store, backup)
    before = snapshot(backup)
    case.append(str(store), **b)
    assert incremental.LAST_PATH[-1] is AppendPath.CHUNKS
    assert snapshot(backup) == before  # no file of the old store was written in place
    case.write(str(fresh), chunk_shape=case.chunk, zarr_format=fmt, **case.concat(a, b))
    assert_same_dense(store, fresh)
    assert reads(case, str(store)) == reads(case, str(fresh))
    assert zv.validate(str(store)).ok
    assert zv.validate(str(store), level=5).ok
    assert [f.check for f in zv.validate(str(store)).findings] == ["L2.level.segments"]
    zv.compact(str(store))
    assert_same_files(store, fresh)
    assert sorted(p.name for p in tmp.iterdir()) == ["a.zarr", "f.zarr", "links"]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sizes=SIZES)
def test_incremental_append_equals_fresh_write(
    case: Case, tmp_path_factory: pytest.TempPathFactory, sizes: tuple[int, int, int, float, int]
) -> None:
    seed, na, nb, shift, fmt = sizes
    rng = np.random.default_rng(seed)
    a = case.make(rng, na, 0.0)
    b = case.make(rng, nb, shift)  # shifted: the grid grows, also to negative chunks
    check_append(case, tmp_path_factory.mktemp("inc"), a, b, fmt)


def _writer(fn: Any) -> Any:
    def write(store: Any, **kw: Any) -> Any:
        return fn(store, kw.pop("positions"), **kw)

    return write


def _ids_points(rng: np.random.Generator, n: int, shift: float) -> dict[str, Any]:
    base = 100 if shift else 0
    return {
        "positions": np.round(rng.uniform(-12, 12, (3 * n, 2)) + shift, 2),
        "vertex_object_ids": np.sort(rng.integers(base, base + 50, 3 * n)),
        "attributes": {"k": rng.integers(0, 5, 3 * n).astype(np.int16)},
        "object_attributes": None,
    }


def _ids_cat(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {
        "positions": np.concatenate([a["positions"], b["positions"]]),
        "vertex_object_ids": np.concatenate([a["vertex_object_ids"], b["vertex_object_ids"]]),
        "attributes": {"k": np.concatenate([a["attributes"]["k"], b["attributes"]["k"]])},
        "object_attributes": None,
    }


POINT_IDS = Case(
    "point_cloud",
    _ids_points,
    _writer(zv.write_points),
    _writer(append_points),
    _ids_cat,
    zv.read_points,
    (8.0, 8.0),
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(sizes=SIZES)
def test_points_with_new_larger_ids_append_chunks(
    tmp_path_factory: pytest.TempPathFactory, sizes: tuple[int, int, int, float, int]
) -> None:
    seed, na, nb, shift, fmt = sizes
    rng = np.random.default_rng(seed)
    a = POINT_IDS.make(rng, na, 0.0)
    b = POINT_IDS.make(rng, nb, shift or 1.0)  # ids 100.. : after every stored id
    check_append(POINT_IDS, tmp_path_factory.mktemp("ids"), a, b, fmt)


def test_points_with_smaller_ids_are_rebuilt(tmp_path: Path) -> None:
    pos = np.arange(12.0).reshape(6, 2)
    store, fresh = str(tmp_path / "a.zarr"), str(tmp_path / "f.zarr")
    zv.write_points(store, pos[:3], chunk_shape=(4, 4), vertex_object_ids=[5, 9, 5])
    append_points(store, pos[3:], vertex_object_ids=[7, 2, 7])  # renumbers stored objects
    assert incremental.LAST_PATH[-1] is AppendPath.REBUILD
    zv.write_points(fresh, pos, chunk_shape=(4, 4), vertex_object_ids=[5, 9, 5, 7, 2, 7])
    assert reads(POINT_IDS, store) == reads(POINT_IDS, fresh)


def test_new_category_label_is_rebuilt(tmp_path: Path) -> None:
    paths = [np.array([[0.0, 0.0], [9.0, 1.0]]), np.array([[3.0, 3.0], [4.0, 20.0]])]
    labels = [np.array(["a", "b"]), np.array(["b", "b"])]
    store, fresh = str(tmp_path / "a.zarr"), str(tmp_path / "f.zarr")
    zv.write_streamlines(store, paths[:1], chunk_shape=(8, 8), attributes={"t": labels[:1]})
    append_streamlines(store, paths[1:], attributes={"t": labels[1:]})
    assert incremental.LAST_PATH[-1] is AppendPath.CHUNKS  # "b" is a stored label
    append_streamlines(store, paths[:1], attributes={"t": [np.array(["c", "a"])]})
    assert incremental.LAST_PATH[-1] is AppendPath.REBUILD  # "c" changes the category table
    zv.write_streamlines(
        fresh,
        [*paths, paths[0]],
        chunk_shape=(8, 8),
        attributes={"t": [*labels, np.array(["c", "a"])]},
    )
    assert_same_files(Path(store), Path(fresh))


def test_sharded_store_is_rebuilt(tmp_path: Path) -> None:
    store = str(tmp_path / "a.zarr")
    zv.write_points(store, np.zeros((3, 2)), chunk_shape=(4, 4), shards=(2, 2))
    append_points(store, np.ones((2, 2)))
    assert incremental.LAST_PATH[-1] is AppendPath.REBUILD
    assert zv.read_points(store).positions.shape == (5, 2)


@pytest.mark.parametrize("fmt", [2, 3])
def test_coarse_levels_are_rebuilt_from_the_incremental_level(tmp_path: Path, fmt: int) -> None:
    rng = np.random.default_rng(fmt)
    pa = [rng.uniform(0, 40, (int(rng.integers(2, 9)), 3)) for _ in range(30)]
    pb = [rng.uniform(-20, 40, (int(rng.integers(2, 9)), 3)) for _ in range(10)]
    store, fresh, backup = tmp_path / "a.zarr", tmp_path / "f.zarr", tmp_path / "links"
    kw: dict[str, Any] = {"chunk_shape": (8.0,) * 3, "bin_shape": (2.0,) * 3, "zarr_format": fmt}
    zv.write_streamlines(str(store), pa, **kw)
    zv.build_pyramid(str(store), [(2, 2, 2), (4, 4, 4)], object_sparsity=[0.5, 0.25])
    hard_links(store, backup)
    before = snapshot(backup)
    append_streamlines(str(store), pb)
    assert incremental.LAST_PATH[-1] is AppendPath.CHUNKS
    assert snapshot(backup) == before
    zv.write_streamlines(str(fresh), pa + pb, **kw)
    zv.build_pyramid(str(fresh), [(2, 2, 2), (4, 4, 4)], object_sparsity=[0.5, 0.25])
    assert_same_dense(store, fresh)  # coarse levels included
    assert zv.validate(str(store), level=5).ok
    zv.compact(str(store))
    assert_same_files(store, fresh)
