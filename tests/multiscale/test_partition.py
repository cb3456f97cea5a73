"""Partitions of a pyramid build: coverage, joins, and in-process equality with the serial build."""

from __future__ import annotations

import itertools
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from zarr_vectors.core.assemble import process_round
from zarr_vectors.core.multiscale import write_multiscale_metadata
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.writer import LevelWriter
from zarr_vectors.multiscale.partition import (
    Partition,
    PartitionKind,
    block_chunks,
    merge_partitions,
    plan_partitions,
)
from zarr_vectors.multiscale.pyramid import clear_levels, plan_pyramid
from zarr_vectors.multiscale.sparsity import ObjectScores, rank_scores
from zarr_vectors.multiscale.spilled import (
    assemble_level,
    finish_level,
    open_level,
    writer_options,
)
from zarr_vectors.multiscale.tasks import (
    coarsen_partition,
    load_rows,
    partition_scores,
    read_partition,
    spill_rows,
)


def _paths(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(0, 2, (int(rng.integers(1, 30)), 3)), axis=0) for _ in range(n)]


def _build_in_process(store: Path, ratios: list[tuple[int, ...]], **options: Any) -> None:
    """The distributed build's steps, run here one partition and one block at a time."""
    root = zv.open_store(store, mode="r+")
    reader = LevelReader(root, 0)
    plan = plan_pyramid(reader, ratios, **options)
    clear_levels(root, overwrite=False)
    parts = plan_partitions(reader, max_vertices=80, min_count=3)
    rows = str(store.parent / "spill" / "level0")
    for chunks in plan_partitions(reader, max_vertices=80, min_count=3, kind=PartitionKind.CHUNKS):
        spill_rows(reader, chunks, parts, rows)
    keep = None
    if plan.needs_ranking:
        scores = [partition_scores(reader, p, plan, rows=rows) for p in parts]
        ranking = rank_scores(ObjectScores.concat(scores))
        keep = np.empty(len(ranking), np.int64)
        keep[ranking] = np.arange(len(ranking))
    dirs = [str(store.parent / "spill" / f"level{i}") for i in range(1, len(ratios) + 1)]
    block = math.lcm(1, *(plan.block_shards or ()))  # a round writes whole shards
    results = [
        coarsen_partition(
            reader,
            p,
            plan,
            keep_rank=None if keep is None else keep[p.start : p.stop],
            directories=dirs,
            partition_chunks=block,
            rows=rows,
        )
        for p in parts
    ]
    for i, directory in enumerate(dirs, start=1):
        opts = writer_options(plan, i)
        asm = assemble_level(directory, [r.summaries[i - 1] for r in results], plan, i)
        w = open_level(root, plan, asm, i)
        rounds = []
        for prefixes in asm.rounds(1 << 12):
            group = zarr.open_group(w.group.store_path.store, path=w.group.path, mode="r+")
            lw = LevelWriter(group, w.grid_shape, opts.compressor, opts.shards, existing=True)
            rounds.append(process_round(asm, prefixes, lw, need_where=False))
            lw.finish()
        finish_level(
            w,
            asm,
            rounds,
            plan,
            i,
            used=results[0].used,
            object_attributes=reader.object_attributes(None),
            groups=reader.groups,
        )
    write_multiscale_metadata(root)


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
@pytest.mark.parametrize("sparsity", [None, [0.5, 0.2]])
def test_partitions_in_process_equal_serial(tmp_path: Path, sparsity: list[float] | None) -> None:
    paths = _paths(30)
    zv.write_streamlines(
        tmp_path / "serial",
        paths,
        chunk_shape=(12, 12, 12),
        bin_shape=(2, 2, 2),
        attributes={"fa": [np.arange(len(p), dtype=np.float32) for p in paths]},
    )
    shutil.copytree(tmp_path / "serial", tmp_path / "parts")
    options: dict[str, Any] = {"object_sparsity": sparsity, "sparsity_strategy": "length"}
    zv.build_pyramid(tmp_path / "serial", [(2, 2, 2), (3, 3, 3)], **options)
    _build_in_process(tmp_path / "parts", [(2, 2, 2), (3, 3, 3)], **options)
    serial, parts = _files(tmp_path / "serial"), _files(tmp_path / "parts")
    assert sorted(serial) == sorted(parts)
    assert [k for k in serial if serial[k] != parts[k]] == []


def test_partitions_cover_objects_and_chunks(tmp_path: Path) -> None:
    zv.write_polylines(tmp_path / "p", _paths(50), chunk_shape=(4, 4, 4))
    reader = LevelReader(zv.open_store(tmp_path / "p"), 0)
    parts = plan_partitions(reader, max_vertices=80, min_count=2)
    assert all(p.kind is PartitionKind.OBJECTS for p in parts)
    assert [p.index for p in parts] == list(range(len(parts)))
    assert parts[0].start == 0
    assert parts[-1].stop == 50
    assert all(a.stop == b.start for a, b in itertools.pairwise(parts))
    assert len(parts) > 2

    pts = np.random.default_rng(1).uniform(0, 40, (2000, 2))
    zv.write_points(tmp_path / "q", pts, chunk_shape=(5, 5))
    reader = LevelReader(zv.open_store(tmp_path / "q"), 0)
    parts = plan_partitions(reader, max_vertices=1 << 20, min_count=4, min_vertices=100)
    assert len(parts) == 4
    assert (parts[0].start, parts[-1].stop) == (0, reader.layout.n_chunks)
    assert all(p.kind is PartitionKind.CHUNKS for p in parts)
    # tiny stores are not split just for parallelism
    assert len(plan_partitions(reader, max_vertices=1 << 20, min_count=4)) == 1
    assert block_chunks(reader, bytes_per_vertex=16, max_block_bytes=1 << 20, min_blocks=4) == 4
    assert block_chunks(reader, bytes_per_vertex=16, max_block_bytes=200, min_blocks=4) == 1


def test_merge_joins_the_partitions_between() -> None:
    parts = [Partition(i, PartitionKind.CHUNKS, 10 * i, 10 * i + 10) for i in range(5)]
    merged = merge_partitions(parts, {1: np.array([31]), 4: np.zeros(0, np.int64)})
    assert merged == [
        Partition(0, PartitionKind.CHUNKS, 0, 10),
        Partition(1, PartitionKind.CHUNKS, 10, 40),
        Partition(2, PartitionKind.CHUNKS, 40, 50),
    ]
    assert merge_partitions(parts, {}) == parts
    backwards = merge_partitions(parts, {4: np.array([5])})
    assert backwards == [Partition(0, PartitionKind.CHUNKS, 0, 50)]


def test_rows_read_by_chunks_equal_rows_read_by_objects(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 30, (500, 3)).astype(np.float32)
    zv.write_points(
        tmp_path / "p",
        pts,
        chunk_shape=(10, 10, 10),
        vertex_object_ids=rng.integers(0, 20, len(pts)),
        attributes={"c": np.array(["x", "y"])[rng.integers(0, 2, len(pts))]},
    )
    reader = LevelReader(zv.open_store(tmp_path / "p"), 0)
    parts = plan_partitions(reader, max_vertices=120, min_count=2)
    for chunks in plan_partitions(reader, max_vertices=90, min_count=2, kind=PartitionKind.CHUNKS):
        assert spill_rows(reader, chunks, parts, tmp_path / "rows") > 0
    for p in parts:
        direct = read_partition(reader, p, sequential=False)
        gathered = load_rows(reader, p, tmp_path / "rows", sequential=False)
        assert np.array_equal(direct.positions, gathered.positions)
        assert direct.positions.dtype == gathered.positions.dtype
        assert np.array_equal(direct.vertex_object, gathered.vertex_object)  # type: ignore[arg-type]
        assert direct.n_objects == gathered.n_objects
        a, b = direct.vertex_attributes["c"], gathered.vertex_attributes["c"]
        assert np.array_equal(a.values, b.values)
        assert a.categories == b.categories
