"""Distributed builds on a real LocalCluster equal the serial in-memory writers, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from distributed import Client
from zarr_vectors.distributed import write_distributed


def _files(root: Path) -> dict[str, bytes]:
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


SHARDS = pytest.mark.parametrize("shards", [None, (2, 2, 2)], ids=["plain", "sharded"])
"""Builds of the byte-for-byte tests: unsharded, and 2x2x2 chunks a shard."""


def _distributed_equals_serial(
    client: Client, tmp_path: Path, kind: str, batches: list[Any], **options: Any
) -> zv.WriteSummary:
    """Build ``tmp_path/dask`` from ``batches`` in tiny shuffle blocks; same bytes as serial.

    ``options`` override the defaults (6-unit chunks, one chunk a block, 4 KiB a task).
    """
    summary = write_distributed(
        tmp_path / "dask",
        kind,
        batches,
        client=client,
        spill_dir=tmp_path,
        **{"chunk_shape": (6, 6, 6), "partition_chunks": 1, "memory_limit": 1 << 12, **options},
    )
    _same(tmp_path / "serial", tmp_path / "dask")
    return summary


@pytest.mark.slow
def test_points_distributed_equal_serial(client: Client, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    parts = [
        rng.uniform(-30, 90, (int(rng.integers(500, 3000)), 3)).astype(np.float32) for _ in range(5)
    ]
    vals = [rng.random(len(p)) for p in parts]
    zv.write_points(
        tmp_path / "serial",
        np.concatenate(parts),
        chunk_shape=(20, 20, 20),
        bin_shape=(5, 5, 5),
        attributes={"v": np.concatenate(vals)},
    )
    summary = _distributed_equals_serial(
        client,
        tmp_path,
        "point_cloud",
        [{"data": p, "attributes": {"v": v}} for p, v in zip(parts, vals, strict=True)],
        chunk_shape=(20, 20, 20),
        bin_shape=(5, 5, 5),
        partition_chunks=2,
        memory_limit=1 << 15,
    )
    assert summary.vertex_count == sum(len(p) for p in parts)
    assert zv.validate(tmp_path / "dask").ok


def _load_paths(seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    paths = [np.cumsum(rng.normal(0, 3, (int(rng.integers(2, 40)), 3)), axis=0) for _ in range(50)]
    return {"data": paths, "attributes": {"fa": [rng.random(len(p)) for p in paths]}}


@pytest.mark.slow
def test_streamlines_distributed_equal_serial(client: Client, tmp_path: Path) -> None:
    seeds = [1, 2, 3, 4]
    loaded = [_load_paths(s) for s in seeds]
    paths = [p for d in loaded for p in d["data"]]  # type: ignore[attr-defined]
    fa = [a for d in loaded for a in d["attributes"]["fa"]]  # type: ignore[index]
    zv.write_streamlines(
        tmp_path / "serial",
        paths,
        chunk_shape=(8, 8, 8),
        bin_shape=(4, 4, 4),
        attributes={"fa": fa},
    )
    _distributed_equals_serial(
        client,
        tmp_path,
        "streamline",
        seeds,
        load=_load_paths,
        chunk_shape=(8, 8, 8),
        bin_shape=(4, 4, 4),
        memory_limit=1 << 14,
    )
    back = zv.read_streamlines(tmp_path / "dask")
    assert all(np.array_equal(back[i], p) for i, p in enumerate(paths))


@pytest.mark.slow
@SHARDS
def test_graph_distributed_equal_serial(
    client: Client, tmp_path: Path, shards: tuple[int, ...] | None
) -> None:
    rng = np.random.default_rng(5)
    batches = []
    for _ in range(3):
        n = int(rng.integers(50, 300))
        edges = np.stack([np.arange(1, n), rng.integers(0, np.arange(1, n))], axis=1)
        batches.append({"data": rng.uniform(0, 30, (n, 3)), "edges": edges})
    base = np.cumsum([0] + [len(b["data"]) for b in batches])[:-1]
    zv.write_graph(
        tmp_path / "serial",
        np.concatenate([b["data"] for b in batches]),
        np.concatenate([b["edges"] + o for b, o in zip(batches, base, strict=True)]),
        chunk_shape=(6, 6, 6),
        shards=shards,
    )
    _distributed_equals_serial(client, tmp_path, "graph", batches, shards=shards)


@pytest.mark.slow
@SHARDS
def test_skeletons_distributed_equal_serial(
    client: Client, tmp_path: Path, shards: tuple[int, ...] | None
) -> None:
    """Trees with uint64 ids, radius and swc_type, in 3 partitions, several chunks each."""
    rng = np.random.default_rng(6)
    batches = []
    for b in range(3):
        sizes = rng.integers(20, 120, 4)
        trees, parents = [], []
        for n in sizes.tolist():
            trees.append(np.cumsum(rng.normal(0, 1, (n, 3)), axis=0) + rng.uniform(5, 25, 3))
            local = np.arange(-1, n - 1)
            local[2:] = np.where(rng.random(n - 2) < 0.1, rng.integers(0, 2, n - 2), local[2:])
            parents.append(local)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        glob = np.concatenate(
            [np.where(p >= 0, p + o, -1) for p, o in zip(parents, offsets[:-1], strict=True)]
        )
        batches.append(
            {
                "data": np.concatenate(trees),
                "parents": glob,
                "offsets": offsets,
                "object_ids": np.arange(4, dtype=np.uint64) + np.uint64(2**63 + 8 * b),
                "radius": rng.random(int(offsets[-1])).astype(np.float32),
                "swc_type": rng.integers(1, 5, int(offsets[-1])).astype(np.int32),
            }
        )
    base = np.cumsum([0] + [len(b["data"]) for b in batches])
    zv.write_skeletons(
        tmp_path / "serial",
        np.concatenate([b["data"] for b in batches]),
        np.concatenate(
            [
                np.where(b["parents"] >= 0, b["parents"] + o, -1)
                for b, o in zip(batches, base[:-1], strict=True)
            ]
        ),
        offsets=np.unique(
            np.concatenate([b["offsets"] + o for b, o in zip(batches, base[:-1], strict=True)])
        ),
        object_ids=np.concatenate([b["object_ids"] for b in batches]),
        radius=np.concatenate([b["radius"] for b in batches]),
        swc_type=np.concatenate([b["swc_type"] for b in batches]),
        chunk_shape=(6, 6, 6),
        shards=shards,
    )
    _distributed_equals_serial(client, tmp_path, "skeleton", batches, shards=shards)
    back = zv.read_skeletons(tmp_path / "dask")
    assert len(back) == 12
    assert back.object_ids.dtype == np.uint64
    assert zv.validate(tmp_path / "dask", level=2).ok


def test_memory_store_is_refused(client: Client) -> None:
    from zarr.storage import MemoryStore

    with pytest.raises(zv.InvalidInputError, match="every worker"):
        write_distributed(
            MemoryStore(),
            "point_cloud",
            [{"data": np.zeros((1, 2))}],
            chunk_shape=(1, 1),
            client=client,
        )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["point_cloud", "streamline"])
def test_sharded_distributed_build_equals_serial(client: Client, tmp_path: Path, kind: str) -> None:
    """Shuffle blocks grow to whole shards: no two tasks merge into one shard (lost chunks)."""
    rng = np.random.default_rng(7)
    if kind == "point_cloud":
        parts = [rng.uniform(0, 60, (int(rng.integers(800, 2000)), 3)) for _ in range(6)]
        zv.write_points(tmp_path / "serial", np.concatenate(parts), chunk_shape=(6, 6, 6),
                        shards=(2, 2, 2))  # fmt: skip
        batches: list[Any] = [{"data": p} for p in parts]
    else:
        paths = [np.cumsum(rng.normal(0, 1.5, (60, 3)), axis=0) + 30 for _ in range(60)]
        zv.write_streamlines(tmp_path / "serial", paths, chunk_shape=(6, 6, 6), shards=(2, 2, 2))
        batches = [{"data": paths[k : k + 10]} for k in range(0, 60, 10)]
    summary = _distributed_equals_serial(client, tmp_path, kind, batches, shards=(2, 2, 2))
    assert summary.chunk_count > 8  # many shards, each written by one of several tasks
    assert zv.validate(tmp_path / "dask").ok


def _sheet(offset: Any, n: int = 12) -> tuple[Any, Any]:
    """A wavy n x n vertex sheet, two triangles a cell, moved by ``offset``."""
    u, v = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float), indexing="ij")
    verts = np.stack([u * 2.0, v * 2.0, np.sin(u / 2) * 3], axis=-1).reshape(-1, 3) + offset
    i = (np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]).ravel()
    faces = np.concatenate([np.stack([i, i + 1, i + n], 1), np.stack([i + 1, i + n + 1, i + n], 1)])
    return verts, faces


@pytest.mark.slow
@SHARDS
def test_meshes_distributed_equal_serial(
    client: Client, tmp_path: Path, shards: tuple[int, ...] | None
) -> None:
    rng = np.random.default_rng(9)
    meshes = [_sheet(rng.uniform(0, 30, 3)) for _ in range(6)]
    zv.write_meshes(tmp_path / "serial", meshes, chunk_shape=(6, 6, 6), shards=shards)
    batches = [{"data": meshes[k : k + 2]} for k in range(0, 6, 2)]
    _distributed_equals_serial(client, tmp_path, "mesh", batches, shards=shards)
    assert len(zv.read_meshes(tmp_path / "dask")) == 6
    assert zv.validate(tmp_path / "dask", level=2).ok
