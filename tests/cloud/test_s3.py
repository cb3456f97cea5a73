"""Stores on a real S3 protocol server (moto) on 127.0.0.1: write, read, query, pyramid, validate.

Requests are counted at the client (every ``S3FileSystem._call_s3`` is one HTTP request).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import s3fs
from zarr.storage import MemoryStore

import zarr_vectors as zv
from _s3_server import moto_s3
from zarr_vectors.testing import assert_geometry_equal
from zarr_vectors.testing.examples import random_walk_trees

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    with moto_s3("zv-test") as options:
        yield options


@pytest.fixture
def request_count(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    original = s3fs.S3FileSystem._call_s3

    async def counting(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(method)
        return await original(self, method, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", counting)
    return calls


@pytest.mark.slow
def test_points_round_trip_query_pyramid_validate(
    s3: dict[str, Any], request_count: list[str]
) -> None:
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 100, (20_000, 3)).astype(np.float32)
    url = "s3://zv-test/points.zarrvectors"
    zv.write_points(
        url,
        pos,
        chunk_shape=(25, 25, 25),
        bin_shape=(5, 5, 5),
        attributes={"v": rng.random(20_000)},
        storage_options=s3,
    )
    with pytest.raises(zv.StoreExistsError):
        zv.write_points(url, pos, chunk_shape=(25, 25, 25), storage_options=s3)
    back = zv.read_points(url, storage_options=s3)
    key = np.lexsort(pos.T)
    assert np.array_equal(
        np.sort(back.positions.view("V12").ravel()), np.sort(pos.view("V12").ravel())
    )
    assert len(key) == len(back)

    lo, hi = np.array([10, 10, 10]), np.array([40, 40, 40])  # 2x2x2 chunks
    request_count.clear()
    box = zv.read_points(url, bbox=(lo, hi), storage_options=s3)
    assert len(box) == int(np.all((pos >= lo) & (pos < hi), axis=1).sum())
    touched = 8
    payload_arrays = 2  # vertices + attribute v
    payload_gets = [c for c in request_count if c == "get_object"]
    # metadata: a fixed number of documents (root, level, 7 nodes -- statistics/ and
    # statistics/v included -- and vertex_counts); payloads: one GET per touched chunk and
    # array -- independent of the store's size
    assert len(request_count) <= 34 + touched * payload_arrays, request_count
    assert len(payload_gets) <= 11 + touched * payload_arrays, request_count

    request_count.clear()
    reader = zv.open(url, storage_options=s3)
    reader.read(bbox=(lo, hi))
    request_count.clear()
    again = reader.read(bbox=(lo, hi))  # an open reader only fetches payloads
    assert len(again) == len(box)
    assert len(request_count) <= touched * payload_arrays, request_count

    zv.build_pyramid(url, [(5, 5, 5)], storage_options=s3)
    assert len(zv.read_points(url, level=1, storage_options=s3)) == 64
    assert zv.validate(url, level=2, storage_options=s3).ok


def test_streamlines_on_s3(s3: dict[str, Any]) -> None:
    rng = np.random.default_rng(1)
    paths = [np.cumsum(rng.normal(0, 2, (40, 3)), axis=0) + 50 for _ in range(30)]
    url = "s3://zv-test/tracts.zarrvectors"
    zv.write_streamlines(url, paths, chunk_shape=(10, 10, 10), storage_options=s3)
    one = zv.read_streamlines(url, object_ids=[7], storage_options=s3)
    assert np.array_equal(one[0], paths[7])


@pytest.mark.slow
def test_sharded_store_on_s3_needs_fewer_requests(
    s3: dict[str, Any], request_count: list[str]
) -> None:
    rng = np.random.default_rng(2)
    pos = rng.uniform(0, 80, (10_000, 3))
    plain, sharded = "s3://zv-test/plain.zarrvectors", "s3://zv-test/sharded.zarrvectors"
    zv.write_points(plain, pos, chunk_shape=(10, 10, 10), storage_options=s3)
    zv.write_points(sharded, pos, chunk_shape=(10, 10, 10), shards=(4, 4, 4), storage_options=s3)
    counts = []
    for url in (plain, sharded):
        reader = zv.open(url, storage_options=s3)
        request_count.clear()
        got = reader.read(bbox=([0, 0, 0], [40, 40, 40]))
        counts.append(len(request_count))
        assert len(got) == int(np.all(pos < 40, axis=1).sum())
    assert counts[1] * 4 < counts[0], counts


STORE_OPTIONS = pytest.mark.parametrize(
    "options",
    [{}, {"compressor": "lz4"}, {"compressor": "none"}, {"shards": (2, 2, 2)}],
    ids=["zstd", "lz4", "none", "sharded"],
)
"""Write options of the parity tests: default compressor, the lz4 and none presets, sharded."""


def _name(options: dict[str, Any]) -> str:
    return "-".join(f"{k}{v}" for k, v in options.items()) or "plain"


@pytest.mark.slow
@STORE_OPTIONS
def test_skeletons_and_graphs_on_s3_read_as_local(
    s3: dict[str, Any], options: dict[str, Any]
) -> None:
    """Whole, by-id and box reads from S3 equal the same reads of a local store."""
    rng = np.random.default_rng(3)
    pos, par, off = random_walk_trees(12, 300, seed=3)
    name = _name(options)
    common = {"chunk_shape": (24, 24, 24), **options}
    url = f"s3://zv-test/skeletons-{name}.zarrvectors"
    local = MemoryStore()
    ids = np.arange(12, dtype=np.uint64) + (1 << 40)
    radius = rng.random(len(pos)).astype(np.float32)
    for store, so in ((url, s3), (local, None)):
        zv.write_skeletons(
            store,
            pos,
            par,
            offsets=off,
            object_ids=ids,
            radius=radius,
            storage_options=so,
            **common,
        )
    box = ([30, 30, 30], [50, 50, 50])
    for query in ({}, {"object_ids": [ids[3], ids[9]]}, {"bbox": box}):
        expected = zv.read_skeletons(local, **query)
        assert len(expected) > 0, query
        assert_geometry_equal(zv.read_skeletons(url, storage_options=s3, **query), expected)
    whole = zv.read_skeletons(url, storage_options=s3)
    assert np.array_equal(whole.parents, par)
    assert np.array_equal(whole.positions, pos)

    edges = np.stack([np.arange(len(pos) - 1), np.arange(1, len(pos))], axis=1)
    edges = edges[rng.random(len(edges)) < 0.9]  # several components
    weight = rng.random(len(edges))
    gurl = f"s3://zv-test/graph-{name}.zarrvectors"
    glocal = MemoryStore()
    for store, so in ((gurl, s3), (glocal, None)):
        zv.write_graph(
            store, pos, edges, edge_attributes={"w": weight}, storage_options=so, **common
        )
    for query in ({}, {"object_ids": [0, 2]}, {"bbox": box}):
        expected_g = zv.read_graph(glocal, **query)
        assert len(expected_g.edges) > 0, query
        assert_geometry_equal(zv.read_graph(gurl, storage_options=s3, **query), expected_g)
    assert zv.validate(url, level=2, storage_options=s3).ok
    assert zv.validate(gurl, level=2, storage_options=s3).ok


def _grid_mesh(rng: np.random.Generator, n: int = 12) -> tuple[Any, Any]:
    """A wavy n x n vertex sheet, two triangles a cell, somewhere in the volume."""
    u, v = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float), indexing="ij")
    verts = np.stack([u * 2.0, v * 2.0, np.sin(u / 2) * 3], axis=-1).reshape(-1, 3)
    verts += rng.uniform(0, 40, 3)
    i = np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]
    a, b, c, d = i.ravel(), i.ravel() + 1, i.ravel() + n, i.ravel() + n + 1
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([b, d, c], 1)])
    return verts, faces


@pytest.mark.slow
@STORE_OPTIONS
def test_meshes_paths_and_points_on_s3_read_as_local(
    s3: dict[str, Any], options: dict[str, Any]
) -> None:
    """Whole, by-id and box reads of meshes, streamlines and points from S3 equal local ones."""
    rng = np.random.default_rng(4)
    name = _name(options)
    common = {"chunk_shape": (16, 16, 16), **options}
    box = ([15, 15, 15], [35, 35, 35])
    meshes = [_grid_mesh(rng) for _ in range(6)]
    paths = [np.cumsum(rng.normal(0, 2, (60, 3)), axis=0) + 30 for _ in range(25)]
    points = rng.uniform(0, 60, (5_000, 3)).astype(np.float32)
    cases: list[tuple[str, Any, Any, Any, list[dict[str, Any]]]] = [
        ("mesh", zv.write_meshes, zv.read_meshes, meshes, [{"object_ids": [1, 4]}]),
        ("streamlines", zv.write_streamlines, zv.read_polylines, paths, [{"object_ids": [3]}]),
        ("points", zv.write_points, zv.read_points, points, []),
    ]
    for kind, write, read, data, by_id in cases:
        url = f"s3://zv-test/{kind}-{name}.zarrvectors"
        local = MemoryStore()
        write(url, data, storage_options=s3, **common)
        write(local, data, **common)
        for query in ({}, {"bbox": box}, *by_id):
            expected = read(local, **query)
            assert len(expected) > 0, (kind, query)
            assert_geometry_equal(read(url, storage_options=s3, **query), expected)
        assert zv.validate(url, level=2, storage_options=s3).ok, kind
