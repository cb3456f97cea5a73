"""``to_dask`` / ``to_dask_objects``: lazy, equal to the eager reads, on a 2-worker LocalCluster
and against an S3 (moto) store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from _s3_server import moto_s3
from distributed import Client, LocalCluster


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            host="127.0.0.1",
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    with moto_s3("zv-query") as options:
        yield options


def _points(store: Any, storage_options: Any = None) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    n = 20_000
    data = {
        "pos": (rng.random((n, 3)) * 100).astype(np.float32),
        "v": rng.random(n).astype(np.float32),
        "cell": rng.integers(0, 300, n),
        "kind": np.array(["a", "b", "c"])[rng.integers(0, 3, n)],
    }
    zv.write_points(
        store,
        data["pos"],
        chunk_shape=(20, 20, 20),
        attributes={"v": data["v"], "kind": data["kind"]},
        vertex_object_ids=data["cell"],
        storage_options=storage_options,
    )
    return data


def test_frame_equals_eager_read_on_a_cluster(tmp_path: Path, client: Client) -> None:
    path = str(tmp_path / "p.zarrvectors")
    data = _points(path)
    box = ([10, 10, 10], [70, 80, 90])
    where = {"v": (0.25, 0.75), "kind": {"a", "c"}}
    df = zv.to_dask(path, bbox=box, where=where, chunks_per_partition=10)
    assert df.npartitions > 1
    assert df.known_divisions
    got = df.compute()
    eager = zv.read_points(path, bbox=box, where=where)
    np.testing.assert_array_equal(got[["x", "y", "z"]].to_numpy(), eager.positions)
    np.testing.assert_array_equal(got["v"].to_numpy(), eager.attributes["v"])
    np.testing.assert_array_equal(got["kind"].to_numpy().astype(str), eager.attributes["kind"])
    np.testing.assert_array_equal(got["object_id"].to_numpy(), eager.vertex_object_ids)
    # brute force from the input
    p = data["pos"]
    mask = np.all((p >= box[0]) & (p < np.asarray(box[1])), axis=1)
    mask &= (data["v"] >= 0.25) & (data["v"] < 0.75) & np.isin(data["kind"], ["a", "c"])
    assert len(got) == int(mask.sum())


def test_per_object_mean_matches_numpy(tmp_path: Path, client: Client) -> None:
    # the docs/guides/dask.md example, at a test's size
    path = str(tmp_path / "p.zarrvectors")
    data = _points(path)
    df = zv.to_dask(path, attributes=["v"])
    means = df.groupby("object_id")["v"].mean().compute().sort_index()
    cells, inverse = np.unique(data["cell"], return_inverse=True)
    want = np.bincount(inverse, weights=data["v"].astype(np.float64)) / np.bincount(inverse)
    np.testing.assert_array_equal(means.index.to_numpy(), cells)
    np.testing.assert_allclose(means.to_numpy(), want, rtol=1e-6)


def test_objects_bag_equals_eager_read(tmp_path: Path, client: Client) -> None:
    rng = np.random.default_rng(2)
    paths = [rng.random((int(rng.integers(2, 9)), 3)) * 60 for _ in range(200)]
    fa = [rng.random(len(p)) for p in paths]
    path = str(tmp_path / "s.zarrvectors")
    zv.write_streamlines(
        path,
        paths,
        chunk_shape=(20, 20, 20),
        attributes={"fa": fa},
        object_attributes={"length": np.array([len(p) for p in paths], dtype=np.float64)},
    )
    where = {"fa": (0.9, None), "length": (4, None)}
    bag = zv.to_dask_objects(
        path, bbox=([0, 0, 0], [30, 30, 30]), where=where, objects_per_partition=7
    )
    records = bag.compute()
    eager = zv.read_streamlines(path, bbox=([0, 0, 0], [30, 30, 30]), where=where)
    assert [r.object_id for r in records] == eager.object_ids.tolist()
    for i, r in enumerate(records):
        np.testing.assert_array_equal(r.positions, eager[i])
        assert r.object_attributes["length"] == len(r.positions)


@pytest.mark.slow
@pytest.mark.s3
def test_s3_store_on_a_cluster(s3: dict[str, Any], client: Client) -> None:
    url = "s3://zv-query/points.zarrvectors"
    _points(url, storage_options=s3)
    where = {"v": (0.9, None)}
    got = zv.to_dask(url, where=where, storage_options=s3, chunks_per_partition=16).compute()
    eager = zv.read_points(url, where=where, storage_options=s3)
    np.testing.assert_array_equal(got[["x", "y", "z"]].to_numpy(), eager.positions)
    recs = zv.to_dask_objects(url, where=where, storage_options=s3).compute()
    assert sorted(r.object_id for r in recs) == sorted(np.unique(eager.vertex_object_ids).tolist())


def test_empty_and_errors(tmp_path: Path) -> None:
    path = str(tmp_path / "p.zarrvectors")
    zv.write_points(path, np.zeros((3, 2)), chunk_shape=(4, 4), attributes={"v": np.zeros(3)})
    df = zv.to_dask(path, where={"v": (1, None)})
    assert len(df.compute(scheduler="sync")) == 0
    with pytest.raises(zv.InvalidInputError, match="no objects"):
        zv.to_dask_objects(path)
    with pytest.raises(zv.InvalidInputError, match="no attribute"):
        zv.to_dask(path, where={"w": 1})


def test_object_records_carry_their_links(tmp_path: Path) -> None:
    # whole graphs, meshes and skeletons: each record's links renumbered into its positions
    rng = np.random.default_rng(4)
    pos = rng.random((60, 3)) * 40
    edges = np.array([[i, i + 1] for i in range(59) if i % 6 != 5])  # 10 chains of 6
    faces = np.array([[i, i + 1, i + 2] for i in range(58) if i % 6 < 4])
    trees = [(pos[i : i + 6], np.array([-1, 0, 1, 1, 3, 4])) for i in range(0, 60, 6)]
    cases = {
        "g": (lambda p: zv.write_graph(p, pos, edges, chunk_shape=(10, 10, 10)), zv.read_graph),
        "m": (lambda p: zv.write_meshes(p, pos, faces, chunk_shape=(10, 10, 10)), zv.read_meshes),
        "s": (lambda p: zv.write_skeletons(p, trees, chunk_shape=(10, 10, 10)), zv.read_skeletons),
    }
    for name, (write, read) in cases.items():
        path = str(tmp_path / f"{name}.zarrvectors")
        write(path)
        records = zv.to_dask_objects(path, objects_per_partition=3).compute(scheduler="sync")
        assert len(records) == 10
        for r in records:
            one = read(path, object_ids=[r.object_id])
            vertices = one.vertices if name == "m" else one.positions
            np.testing.assert_array_equal(r.positions, vertices)
            if name == "s":
                child = np.flatnonzero(one.parents >= 0)
                want = np.column_stack([child, one.parents[child]])
            else:
                want = one.faces if name == "m" else one.edges
            assert r.links is not None
            np.testing.assert_array_equal(r.links, want)
    recs = zv.to_dask_objects(str(tmp_path / "s.zarrvectors")).compute(scheduler="sync")
    assert recs[0].links.shape == (5, 2)  # a 6-node tree has 5 [child, parent] links
