"""Per-chunk statistics: written with every level, used to skip chunks, checked by validate."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import example, given, settings
from hypothesis import strategies as st
from zarr.abc.store import ByteRequest
from zarr.core.buffer import Buffer, BufferPrototype
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.chunking import ChunkLayout, grid_for_bounds
from zarr_vectors.core.columns import Column
from zarr_vectors.core.plan import GeometryParts, plan_level
from zarr_vectors.core.ragged import as_index, offsets_from_counts
from zarr_vectors.query.statistics import counts_crc32, level_statistics
from zarr_vectors.validate._statistics import _crc


class RecordingStore(MemoryStore):
    """A memory store that records every key read (to prove chunks are never fetched)."""

    def __init__(self, *args: Any, read_keys: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_keys: list[str] = [] if read_keys is None else read_keys

    def with_read_only(self, read_only: bool = False) -> RecordingStore:
        """Reopen sharing the data and the log of keys read."""
        return RecordingStore(
            store_dict=self._store_dict, read_only=read_only, read_keys=self.read_keys
        )

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        self.read_keys.append(key)
        return await super().get(key, prototype, byte_range)


def _grid_points() -> tuple[Any, Any, Any]:
    # 16 chunks of 4x4; value = chunk index / 16 (so one chunk holds values in [0.5, 0.5625))
    xs, ys = np.meshgrid(np.arange(0.5, 16, 1.0), np.arange(0.5, 16, 1.0), indexing="ij")
    pos = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)
    chunk = (pos[:, 0] // 4) * 4 + pos[:, 1] // 4
    return pos, chunk / 16.0, chunk.astype(np.int64)


def _write(store: Any) -> None:
    pos, value, label = _grid_points()
    zv.write_points(
        store,
        pos,
        chunk_shape=(4, 4),
        bin_shape=(1, 1),
        attributes={"value": value, "label": label},
    )


def test_pruned_chunks_are_never_read() -> None:
    store = RecordingStore()
    _write(store)
    store.read_keys.clear()
    got = zv.read_points(store, where={"value": (0.5, 0.55)})
    assert len(got) == 16
    assert np.all(got.attributes["label"] == 8)
    payload = [k for k in store.read_keys if k.startswith("0/vertices/c") or "attributes/" in k]
    chunk_keys = {k.rsplit("/c/", 1)[-1] for k in payload if "/c/" in k}
    assert chunk_keys == {"2/0"}, chunk_keys  # chunk 8 of the 4x4 grid is (2, 0)
    store.read_keys.clear()
    assert zv.count(store, where={"label": {8, 9}}) == 32
    plan = zv.explain(store, where={"label": {8, 9}})
    assert (plan.chunks_total, plan.chunks_read, plan.pruned_by) == (16, 2, ("label",))


def test_count_of_whole_chunks_decodes_no_payload() -> None:
    store = RecordingStore()
    _write(store)
    store.read_keys.clear()
    assert zv.count(store, bbox=([0, 0], [8, 12])) == 96
    assert not [k for k in store.read_keys if "/c/" in k and "vertex_counts" not in k]
    # a box cutting chunks decodes only those chunks' positions
    store.read_keys.clear()
    assert zv.count(store, bbox=([0, 0], [6, 4])) == 24
    assert {k for k in store.read_keys if "vertices/c" in k} == {"0/vertices/c/1/0"}


def test_every_level_has_statistics_and_validates(tmp_path: Path) -> None:
    path = str(tmp_path / "s.zarrvectors")
    _write(path)
    zv.build_pyramid(path, [(2, 2), (4, 4)])
    root = zarr.open_group(path, mode="r")
    for level in ("0", "1", "2"):
        assert set(root[f"{level}/statistics"].array_keys()) == {"value", "label"}
        assert "label" in set(root[f"{level}/value_sets"].array_keys())
    report = zv.validate(path, level=5)
    assert not report.findings, report.findings
    assert zv.explain(path, level=2, where={"value": (0.9, None)}).pruned_by == ("value",)


def test_stores_without_statistics_still_answer(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    _write(str(path))
    before = zv.read_points(str(path), where={"value": (0.5, 0.55)})
    shutil.rmtree(path / "0" / "statistics")
    shutil.rmtree(path / "0" / "value_sets")
    after = zv.read_points(str(path), where={"value": (0.5, 0.55)})
    np.testing.assert_array_equal(before.positions, after.positions)
    plan = zv.explain(str(path), where={"value": (0.5, 0.55)})
    assert plan.chunks_read == 16
    assert plan.without_statistics == ("value",)
    assert not zv.validate(str(path), level=5).findings


def test_stale_statistics_are_ignored_and_reported(tmp_path: Path) -> None:
    path = str(tmp_path / "s.zarrvectors")
    _write(path)
    arr = zarr.open_array(f"{path}/0/statistics/value", mode="r+")
    arr.attrs["counts_crc32"] = 1
    # wrong statistics: claim chunk 8 holds nothing in range
    stats = arr[...]
    stats[8] = [0.0, 0.0]
    arr[...] = stats
    assert len(zv.read_points(path, where={"value": (0.5, 0.55)})) == 16  # not pruned
    ids = {f.check for f in zv.validate(path, level=5).findings}
    assert ids == {"L3.statistics.stale"}
    arr.attrs["counts_crc32"] = counts_crc32(zv.open(path).level(0).vertex_counts)
    ids = {f.check for f in zv.validate(path, level=5).findings}
    assert ids == {"L3.statistics.values"}


def test_validate_and_reader_digest_agree() -> None:
    counts = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    assert counts_crc32(counts) == _crc(counts.ravel())


def test_nan_and_bool_statistics() -> None:
    store = MemoryStore()
    pos = np.array([[0.5, 0.5], [5.0, 0.5], [9.0, 0.5]])
    zv.write_points(
        store,
        pos,
        chunk_shape=(4, 4),
        attributes={"v": np.array([np.nan, 1.0, np.nan]), "flag": np.array([True, False, True])},
    )
    root = zarr.open_group(store, mode="r")
    stats = root["0/statistics/v"][...]
    assert np.isnan(stats[0]).all()
    assert stats[1].tolist() == [1.0, 1.0]
    assert root["0/value_sets/flag"].attrs["values"] == [False, True]
    assert zv.read_points(store, where={"flag": True}).positions.tolist() == [
        [0.5, 0.5],
        [9.0, 0.5],
    ]
    assert zv.explain(store, where={"v": (None, None)}).chunks_read == 1


@pytest.mark.parametrize("many", [63, 64, 65])
def test_value_sets_only_for_small_cardinality(many: int) -> None:
    store = MemoryStore()
    pos = np.column_stack([np.arange(many) * 0.1, np.zeros(many)])
    zv.write_points(store, pos, chunk_shape=(4, 4), attributes={"k": np.arange(many)})
    level = zarr.open_group(store, mode="r")["0"]
    has = "value_sets" in set(level.group_keys()) and "k" in set(level["value_sets"].array_keys())
    assert has == (many <= 64)
    assert zv.count(store, where={"k": {5, 70}}) == 1


def test_value_sets_of_negative_and_huge_integers(tmp_path: Path) -> None:
    path = str(tmp_path / "s.zarrvectors")
    pos = np.array([[0.5, 0.5], [5.0, 0.5], [9.0, 0.5], [9.5, 0.5]])
    huge = np.array([2**63 + 9, 2**63 + 7, 2**63 + 7, 5], dtype=np.uint64)
    neg = np.array([-3, 5, -3, 0], dtype=np.int32)
    zv.write_points(path, pos, chunk_shape=(4, 4), attributes={"huge": huge, "neg": neg})
    root = zarr.open_group(path, mode="r")
    assert root["0/value_sets/huge"].attrs["values"] == [5, 2**63 + 7, 2**63 + 9]
    assert root["0/value_sets/neg"].attrs["values"] == [-3, 0, 5]
    got = zv.read_points(path, where={"huge": {2**63 + 7}})
    assert sorted(got.positions.tolist()) == [[5.0, 0.5], [9.0, 0.5]]
    assert zv.explain(path, where={"huge": {2**63 + 8}}).chunks_read == 0
    assert zv.count(path, where={"neg": {-3}}) == 2
    assert zv.explain(path, where={"neg": {5}}).chunks_read == 1
    assert not zv.validate(path, level=5).findings


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8])
def test_value_sets_of_narrow_integers_spanning_their_range(dtype: Any) -> None:
    info = np.iinfo(dtype)
    values = np.array([info.min, info.max, info.min, 0], dtype=dtype)
    pos = np.array([[0.5, 0.5], [5.0, 0.5], [9.0, 0.5], [9.5, 0.5]])
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(4, 4), attributes={"v": values})
    root = zarr.open_group(store, mode="r")
    assert root["0/value_sets/v"].attrs["values"] == sorted({int(v) for v in values})
    got = zv.read_points(store, where={"v": {int(info.max)}})
    assert got.positions.tolist() == [[5.0, 0.5]]
    assert zv.count(store, where={"v": (int(info.min), 1)}) == 3


def _brute_statistics(
    values: np.ndarray[Any, Any], chunk_of: np.ndarray[Any, Any], n_grid: int
) -> np.ndarray[Any, Any]:
    """Per-chunk [min, max] ignoring NaN (NaN when all are), zeros for empty chunks."""
    out = np.zeros((n_grid, 2), dtype=values.dtype)
    for c in np.unique(chunk_of):
        v = values[chunk_of == c]
        real = v[~np.isnan(v)] if v.dtype.kind == "f" else v
        out[c] = (real.min(), real.max()) if len(real) else (np.nan, np.nan)
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1.0, 3.0]), st.booleans())
@example(29713, 3.0, False)  # a chunk whose max is 0.0 and -0.0
def test_path_statistics_equal_brute_force_and_the_gathered_path(
    seed: int, chunk: float, by_rank: bool
) -> None:
    # paths sorted by chunk are runs of input rows (a RangeOrder): statistics reduce the runs
    # in place; they must equal per-chunk brute force and the gathered path (integer and
    # bool statistics byte for byte; which zero a float min or max of -0.0 and 0.0 records
    # depends on the grouping, as in any reduction)
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 30, int(rng.integers(1, 12)))
    n = int(counts.sum())
    pos = np.cumsum(rng.normal(0, 1.5, (n, 2)), axis=0)
    floats = rng.choice(np.array([np.nan, -0.0, 0.0, 1.5, -2.0], np.float32), n)
    attrs = {
        "f": Column(floats),
        "i8": Column(rng.integers(-128, 128, n).astype(np.int8)),
        "flag": Column(rng.random(n) < 0.5),
    }
    kw: dict[str, Any] = {"object_offsets": offsets_from_counts(counts)}
    if by_rank:  # a batch of a bigger level: objects ranked with gaps (an expanded order)
        kw = {"vertex_object": np.repeat(np.arange(len(counts)), counts), "rank": np.arange(n) * 2}
    parts = GeometryParts(positions=pos, n_objects=len(counts), vertex_attributes=attrs, **kw)
    grid = grid_for_bounds(pos.min(axis=0).tolist(), pos.max(axis=0).tolist(), (chunk, chunk))
    layout = ChunkLayout((chunk, chunk), (chunk / 2, chunk / 2), grid)
    plan = plan_level(parts, layout)
    got = {a.path: a for a in level_statistics(parts, plan)}
    gathered = level_statistics(parts, replace(plan, order=as_index(plan.order)))
    assert [a.path for a in gathered] == list(got)
    for a in gathered:
        if a.data.dtype.kind == "f":  # a zero extreme may be -0.0 or 0.0 (equal values)
            assert np.array_equal(got[a.path].data, a.data, equal_nan=True)
        else:
            assert got[a.path].data.tobytes() == a.data.tobytes()
        assert got[a.path].extra == a.extra
    n_grid = int(np.prod(grid.shape))
    flat, _ = layout.locate(pos)
    for name, col in attrs.items():
        expected = _brute_statistics(col.values, flat.astype(np.int64), n_grid)
        assert np.array_equal(got[f"statistics/{name}"].data, expected, equal_nan=True)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([2.0, 5.0]))
def test_statistics_gathered_with_the_payloads_equal_the_planned_ones(
    seed: int, chunk: float
) -> None:
    # float attributes are reduced chunk by chunk while their payloads are gathered
    # (ChunkExtremes); the stored arrays equal level_statistics of the same plan
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 40, int(rng.integers(1, 30)))
    n = int(counts.sum())
    pos = np.cumsum(rng.normal(0, 1.5, (n, 3)), axis=0).astype(np.float32)
    attrs = {
        "f32": rng.choice(np.array([np.nan, -0.0, 0.0, 1.5, -2.0, 7.25], np.float32), n),
        "f64": rng.normal(size=n),
        "i16": rng.integers(-3, 3, n).astype(np.int16),
    }
    store = MemoryStore()
    offsets = offsets_from_counts(counts)
    zv.write_polylines(
        store, pos, offsets=offsets, chunk_shape=(chunk,) * 3, bin_shape=(chunk / 2,) * 3,
        attributes=attrs,
    )  # fmt: skip
    meta = zv.open_store(store, mode="r")
    level = zarr.open_group(store, mode="r")["0"]
    lo, hi = pos.min(axis=0).astype(np.float64), pos.max(axis=0).astype(np.float64)
    grid = grid_for_bounds(lo.tolist(), hi.tolist(), (chunk,) * 3)
    assert list(meta.attrs["chunk_grid"]["shape"]) == list(grid.shape)
    layout = ChunkLayout((chunk,) * 3, (chunk / 2,) * 3, grid)
    parts = GeometryParts(
        positions=pos,
        object_offsets=offsets,
        n_objects=len(counts),
        sequential=True,
        vertex_attributes={k: Column(v) for k, v in attrs.items()},
    )
    expected = level_statistics(parts, plan_level(parts, layout))
    assert sorted(a.path for a in expected) == sorted(
        f"{g}/{k}" for g in ("statistics", "value_sets") for k in level[g].array_keys()
    )
    for a in expected:
        stored = level[a.path]
        assert stored.dtype == a.data.dtype
        assert np.array_equal(stored[...], a.data, equal_nan=a.data.dtype.kind == "f")
        assert stored.attrs["counts_crc32"] == a.extra["counts_crc32"]
