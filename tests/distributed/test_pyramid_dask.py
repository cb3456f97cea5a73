"""Pyramids built on a real LocalCluster equal the serial ``build_pyramid``, byte for byte."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from distributed import Client, LocalCluster
from zarr_vectors.distributed import build_pyramid_distributed, write_distributed


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a store; the root's creation timestamp left out (stores built apart)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            raw = p.read_bytes()
            if p.name in ("zarr.json", ".zattrs") and p.parent == root:
                raw = b"\n".join(
                    line for line in raw.split(b"\n") if b"creation_timestamp" not in line
                )
            out[p.relative_to(root).as_posix()] = raw
    return out


def _same(a: Path, b: Path) -> None:
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb)
    assert [k for k in fa if fa[k] != fb[k]] == []


def _both(
    tmp_path: Path,
    write: Callable[[Path], Any],
    ratios: list[tuple[int, ...]],
    client: Client | str,
    memory_limit: int = 1 << 14,  # many partitions and write rounds
    **options: Any,
) -> list[zv.PyramidLevel]:
    """Build the pyramid of one level 0 serially and on the cluster; assert equal stores."""
    write(tmp_path / "serial")
    shutil.copytree(tmp_path / "serial", tmp_path / "dask")
    serial = zv.build_pyramid(tmp_path / "serial", ratios, **options)
    levels = build_pyramid_distributed(
        tmp_path / "dask",
        ratios,
        client=client,
        spill_dir=tmp_path,
        memory_limit=memory_limit,
        **options,
    )
    assert levels == serial
    _same(tmp_path / "serial", tmp_path / "dask")
    return levels


@pytest.mark.slow
def test_points_store_and_pyramid_equal_serial(client: Client, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    parts = [rng.uniform(-30, 90, (int(rng.integers(500, 1500)), 3)) for _ in range(4)]
    vals = [rng.random(len(p)).astype(np.float32) for p in parts]
    kinds = [rng.integers(0, 5, len(p)) for p in parts]
    options: dict[str, Any] = {"chunk_shape": (30, 30, 30), "bin_shape": (5, 5, 5)}
    zv.write_points(
        tmp_path / "serial",
        np.concatenate(parts),
        attributes={"v": np.concatenate(vals), "kind": np.concatenate(kinds)},
        **options,
    )
    write_distributed(
        tmp_path / "dask",
        "point_cloud",
        [
            {"data": p, "attributes": {"v": v, "kind": k}}
            for p, v, k in zip(parts, vals, kinds, strict=True)
        ],
        client=client,
        spill_dir=tmp_path,
        partition_chunks=2,
        **options,
    )
    ratios = [(2, 2, 2), (3, 3, 3), (6, 6, 6)]
    serial = zv.build_pyramid(tmp_path / "serial", ratios, aggregation={"v": "max"})
    seen: list[tuple[str, int, int]] = []
    levels = build_pyramid_distributed(
        tmp_path / "dask",
        ratios,
        client=client,
        aggregation={"v": "max"},
        spill_dir=tmp_path,
        memory_limit=1 << 14,
        progress=lambda *a: seen.append(a),
    )
    assert levels == serial
    assert [lvl.vertex_count for lvl in levels] == sorted(
        (lvl.vertex_count for lvl in levels), reverse=True
    )
    _same(tmp_path / "serial", tmp_path / "dask")
    assert [s for s in seen if s[0] == "pyramid"] == [("pyramid", i, 3) for i in (1, 2, 3)]
    assert seen[0][0] == "pyramid partitions"
    assert zv.validate(tmp_path / "dask", level=2).ok


def _paths(seed: int, n: int = 40) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(0, 3, (int(rng.integers(2, 40)), 3)), axis=0) for _ in range(n)]


@pytest.mark.slow
def test_streamlines_store_and_pyramid_equal_serial(client: Client, tmp_path: Path) -> None:
    seeds = [1, 2, 3]
    batches = [_paths(s) for s in seeds]
    fa = [[np.random.default_rng(i).random(len(p)) for i, p in enumerate(b)] for b in batches]
    options: dict[str, Any] = {"chunk_shape": (16, 16, 16), "bin_shape": (2, 2, 2)}
    zv.write_streamlines(
        tmp_path / "serial",
        [p for b in batches for p in b],
        attributes={"fa": [a for f in fa for a in f]},
        **options,
    )
    write_distributed(
        tmp_path / "dask",
        "streamline",
        [{"data": b, "attributes": {"fa": f}} for b, f in zip(batches, fa, strict=True)],
        client=client,
        spill_dir=tmp_path,
        memory_limit=1 << 15,
        **options,
    )
    ratios = [(2, 2, 2), (4, 4, 4)]
    serial = zv.build_pyramid(tmp_path / "serial", ratios, object_sparsity=[0.6, 0.25])
    levels = build_pyramid_distributed(
        tmp_path / "dask",
        ratios,
        client=client,
        object_sparsity=[0.6, 0.25],
        spill_dir=tmp_path,
        memory_limit=1 << 14,
    )
    assert levels == serial
    assert [lvl.object_count for lvl in levels] == [72, 30]
    _same(tmp_path / "serial", tmp_path / "dask")
    coarse = zv.read_streamlines(tmp_path / "dask", level=2)
    assert len(coarse) == 30


@pytest.mark.parametrize("strategy", ["length", "random", "attribute"])
def test_polyline_strategies_and_a_scheduler_address(
    cluster: LocalCluster, client: Client, tmp_path: Path, strategy: str
) -> None:
    paths = _paths(7, 60)
    score = np.random.default_rng(8).random(len(paths))
    _both(
        tmp_path,
        lambda p: zv.write_polylines(
            p,
            paths,
            chunk_shape=(20, 20, 20),
            bin_shape=(2, 2, 2),
            object_attributes={"score": score},
        ),
        [(2, 2, 2), (5, 5, 5)],
        cluster.scheduler_address if strategy == "attribute" else client,
        object_sparsity=[0.8, 0.1],
        sparsity_strategy=strategy,
        sparsity_attribute="score" if strategy == "attribute" else None,
        seed=3,
    )


@pytest.mark.slow
def test_points_with_objects_equal_serial(client: Client, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    pts = rng.uniform(0, 60, (3000, 3)).astype(np.float32)
    ids = rng.integers(100, 140, len(pts))
    _both(
        tmp_path,
        lambda p: zv.write_points(
            p,
            pts,
            chunk_shape=(20, 20, 20),
            bin_shape=(2, 2, 2),
            vertex_object_ids=ids,
            attributes={"label": np.array(["a", "b", "c"])[rng.integers(0, 3, len(pts))]},
        ),
        [(2, 2, 2), (10, 10, 10)],
        client,
        object_sparsity=0.5,
    )


def test_metavertex_escaping_its_partition_is_merged_exactly(
    client: Client, tmp_path: Path
) -> None:
    # five float64 points just below the x = 7 * 1.1 chunk boundary: their mean rounds up
    # into the next chunk, which another partition holds
    c = 1.1
    x = 7 * c
    while np.floor(x / c) >= 7:
        x = np.nextafter(x, -np.inf)
    assert np.floor(np.full(5, x).sum() / 5 / c) == 7
    rng = np.random.default_rng(0)
    other = np.stack([rng.uniform(0, 11, 60), rng.uniform(0, 1, 60)], axis=1)
    other = other[np.floor(other[:, 0] / c) != 6]
    pts = np.concatenate([other, [[x, 0.5]] * 5, [[7.75, 0.5]]])
    seen: list[tuple[str, int, int]] = []
    _both(
        tmp_path,
        lambda p: zv.write_points(p, pts, chunk_shape=(c, c), bin_shape=(c / 2, c / 2)),
        [(1, 1), (2, 2), (2, 2)],
        client,
        memory_limit=100,  # a partition per chunk
        progress=lambda *a: seen.append(a),
    )
    totals = [t for stage, _, t in seen if stage == "pyramid partitions"]
    assert totals[0] > totals[-1]  # a retry with joined partitions


def test_refusals(client: Client, tmp_path: Path) -> None:
    memory = MemoryStore()
    zv.write_points(memory, np.zeros((3, 2)), chunk_shape=(2, 2), bin_shape=(1, 1))
    with pytest.raises(zv.InvalidInputError, match="every worker"):
        build_pyramid_distributed(memory, [(2, 2)], client=client)
    n = 50
    edges = np.stack([np.arange(1, n), np.arange(n - 1)], axis=1)
    zv.write_graph(
        tmp_path / "g", np.random.default_rng(0).uniform(0, 9, (n, 3)), edges, chunk_shape=(3, 3, 3)
    )
    with pytest.raises(zv.InvalidInputError, match="build_pyramid"):
        build_pyramid_distributed(tmp_path / "g", [(1, 1, 1)], client=client)
    zv.write_points(tmp_path / "p", np.zeros((3, 2)), chunk_shape=(2, 2), bin_shape=(1, 1))
    zv.build_pyramid(tmp_path / "p", [(2, 2)])
    with pytest.raises(zv.StoreExistsError):
        build_pyramid_distributed(tmp_path / "p", [(2, 2)], client=client)
    with pytest.raises(zv.InvalidInputError, match="object_sparsity"):
        build_pyramid_distributed(tmp_path / "p", [(2, 2)], client=client, object_sparsity=0.5)
    levels = build_pyramid_distributed(tmp_path / "p", [(2, 2)], client=client, overwrite=True)
    assert [lvl.vertex_count for lvl in levels] == [1]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["points", "streamlines"])
def test_sharded_store_pyramid_is_sharded_and_equals_serial(
    client: Client, tmp_path: Path, kind: str
) -> None:
    """Coarse levels are sharded as level 0; no two tasks write into one shard."""
    rng = np.random.default_rng(4)
    opts: dict[str, Any] = {"chunk_shape": (8, 8, 8), "bin_shape": (2, 2, 2), "shards": (2, 2, 2)}

    def write(path: Path) -> Any:
        if kind == "points":
            return zv.write_points(path, rng.uniform(0, 64, (6_000, 3)), **opts)
        return zv.write_streamlines(path, [p + 30 for p in _paths(9, 120)], **opts)

    _both(tmp_path, write, [(2, 2, 2), (4, 4, 4)], client)
    for level in (1, 2):  # several shards a level, which tasks might have shared
        shards = list((tmp_path / "dask" / str(level) / "vertices").rglob("*"))
        assert sum(p.is_file() and p.name != "zarr.json" for p in shards) > 4
    doc = (tmp_path / "dask" / "2" / "vertices" / "zarr.json").read_text()
    assert '"sharding_indexed"' in doc
    assert zv.validate(tmp_path / "dask", level=2).ok
