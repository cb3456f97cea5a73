"""The streaming writer writes byte-for-byte what the in-memory writers write."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv


def _dump(store: MemoryStore) -> dict[str, bytes]:
    """Every key of a store; metadata documents without the creation timestamp."""
    out = {}
    for key, buf in store._store_dict.items():
        raw = buf.to_bytes()
        if key.endswith(("zarr.json", ".zattrs")):
            doc = json.loads(raw)
            doc.get("attributes", doc).pop("creation_timestamp", None)
            raw = json.dumps(doc, sort_keys=True).encode()
        out[key] = raw
    return out


def _assert_same_store(a: MemoryStore, b: MemoryStore) -> None:
    da, db = _dump(a), _dump(b)
    assert sorted(da) == sorted(db)
    assert [k for k in da if da[k] != db[k]] == []


def _cuts(n: int, rng: np.random.Generator) -> list[slice]:
    edges = np.unique(np.r_[0, rng.integers(0, n + 1, 4), n])
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(edges)]


@pytest.mark.parametrize("with_ids", [False, True])
@pytest.mark.parametrize("partition_chunks", [pytest.param(2, marks=pytest.mark.slow), 64])
def test_points_stream_equals_in_memory(with_ids: bool, partition_chunks: int) -> None:
    rng = np.random.default_rng(partition_chunks)
    n = 3000
    pos = rng.uniform(-40, 40, (n, 3)).astype(np.float32)
    attrs = {
        "a": rng.random(n),
        "gene": rng.choice(np.array(["Gad1", "Pvalb", "Sst"]), n),
        "rgb": rng.integers(0, 255, (n, 3)).astype(np.uint8),
    }
    ids = rng.integers(10**12, 10**12 + 50, n).astype(np.uint64) if with_ids else None
    expected = MemoryStore()
    zv.write_points(
        expected,
        pos,
        chunk_shape=(10, 10, 10),
        bin_shape=(5, 5, 5),
        attributes=attrs,
        vertex_object_ids=ids,
    )
    got = MemoryStore()
    with zv.open_writer(
        got,
        "point_cloud",
        chunk_shape=(10, 10, 10),
        bin_shape=(5, 5, 5),
        partition_chunks=partition_chunks,
    ) as w:
        for sl in _cuts(n, rng):
            w.append(
                pos[sl],
                attributes={k: v[sl] for k, v in attrs.items()},
                vertex_object_ids=None if ids is None else ids[sl],
            )
    _assert_same_store(expected, got)


@pytest.mark.slow
@pytest.mark.parametrize("gtype", ["polyline", "streamline"])
def test_paths_stream_equals_in_memory(gtype: str) -> None:
    rng = np.random.default_rng(7)
    paths = [
        np.cumsum(rng.normal(0, 2.5, (int(rng.integers(1, 50)), 3)), axis=0) for _ in range(200)
    ]
    fa = [rng.random(len(p)).astype(np.float32) for p in paths]
    ids = rng.choice(10**9, len(paths), replace=False).astype(np.uint64)
    expected = MemoryStore()
    zv.write_polylines(
        expected,
        paths,
        geometry_type=gtype,
        chunk_shape=(6, 6, 6),  # type: ignore[arg-type]
        bin_shape=(3, 3, 3),
        attributes={"fa": fa},
        object_attributes={"k": np.arange(200)},
        object_ids=ids,
    )
    got = MemoryStore()
    with zv.open_writer(
        got,
        gtype,
        chunk_shape=(6, 6, 6),
        bin_shape=(3, 3, 3),  # type: ignore[arg-type]
        partition_chunks=2,
    ) as w:
        for sl in _cuts(len(paths), rng):
            w.append(
                paths[sl],
                attributes={"fa": fa[sl]},
                object_attributes={"k": np.arange(200)[sl]},
                object_ids=ids[sl],
            )
    _assert_same_store(expected, got)
    back = zv.read_polylines(got)
    assert all(np.array_equal(back[i], p) for i, p in enumerate(paths))


def test_lines_stream_equals_in_memory() -> None:
    rng = np.random.default_rng(3)
    seg = rng.uniform(0, 50, (500, 2, 2))
    expected = MemoryStore()
    zv.write_lines(expected, seg, chunk_shape=(10, 10), attributes={"w": rng.random((500, 2))})
    got = MemoryStore()
    w_attr = np.asarray(zv.read_lines(expected).attributes["w"])
    with zv.open_writer(got, "line", chunk_shape=(10, 10)) as w:
        w.append(seg[:120], attributes={"w": w_attr[:120]})
        w.append(seg[120:], attributes={"w": w_attr[120:]})
    _assert_same_store(expected, got)


def test_exception_inside_block_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "never.zarrvectors"

    def fail() -> None:
        with zv.open_writer(target, "point_cloud", chunk_shape=(1, 1), spill_dir=tmp_path) as w:
            w.append(np.zeros((3, 2)))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail()
    assert not target.exists()
    assert [p for p in tmp_path.iterdir() if p.name.startswith("zv-spill-")] == []


@pytest.mark.parametrize(
    ("first", "second", "match"),
    [
        ({"attributes": {"a": np.zeros(2)}}, {}, "attributes"),
        ({"attributes": {"a": np.zeros(2)}}, {"attributes": {"a": np.zeros(2, np.int32)}}, "dtype"),
        ({}, {"vertex_object_ids": np.zeros(2, np.int64)}, "user object ids"),
    ],
)
def test_inconsistent_batches_are_refused(
    first: dict[str, Any], second: dict[str, Any], match: str
) -> None:
    w = zv.open_writer(MemoryStore(), "point_cloud", chunk_shape=(1, 1))
    w.append(np.zeros((2, 2)), **first)
    with pytest.raises(zv.InvalidInputError, match=match):
        w.append(np.ones((2, 2)), **second)
    w.abort()


def test_bad_batch_leaves_writer_usable() -> None:
    store = MemoryStore()
    w = zv.open_writer(store, "point_cloud", chunk_shape=(1, 1))
    w.append(np.zeros((2, 2)))
    with pytest.raises(zv.InvalidInputError, match="row 1"):
        w.append(np.array([[0.0, 0.0], [np.nan, 1.0]]))
    w.append(np.ones((1, 2)))
    assert w.close().vertex_count == 3
    assert len(zv.read_points(store)) == 3


@pytest.mark.parametrize("gtype", ["streamline", "polyline"])
def test_non_finite_path_vertex_is_refused_when_appended(gtype: str) -> None:
    """In-memory path writes check NaN/inf in ``write_store``; batches are checked at append."""
    w = zv.open_writer(MemoryStore(), gtype, chunk_shape=(1, 1))
    pos = np.array([[0.0, 0.0], [0.5, 0.5], [0.2, np.inf], [0.1, 0.1]])
    with pytest.raises(zv.InvalidInputError, match="row 2"):
        w.append(pos, offsets=np.array([0, 2, 4]))
    w.abort()


@pytest.mark.slow
def test_graph_stream_equals_in_memory() -> None:
    rng = np.random.default_rng(11)
    pieces = []
    for _ in range(6):  # six batches of whole components
        n = int(rng.integers(20, 200))
        pos = rng.uniform(0, 40, (n, 3))
        edges = np.stack([np.arange(1, n), rng.integers(0, np.arange(1, n))], axis=1)
        pieces.append((pos, edges, rng.random(len(edges))))
    all_pos = np.concatenate([p for p, _, _ in pieces])
    base = np.cumsum([0] + [len(p) for p, _, _ in pieces])[:-1]
    all_edges = np.concatenate([e + b for (_, e, _), b in zip(pieces, base, strict=True)])
    weights = np.concatenate([w for _, _, w in pieces])
    expected = MemoryStore()
    zv.write_graph(
        expected,
        all_pos,
        all_edges,
        chunk_shape=(8, 8, 8),
        bin_shape=(4, 4, 4),
        edge_attributes={"w": weights},
    )
    got = MemoryStore()
    with zv.open_writer(
        got, "graph", chunk_shape=(8, 8, 8), bin_shape=(4, 4, 4), memory_limit=1 << 14
    ) as w:
        for pos, edges, wt in pieces:
            w.append(pos, edges=edges, edge_attributes={"w": wt})
    _assert_same_store(expected, got)


@pytest.mark.slow
def test_skeleton_stream_equals_in_memory() -> None:
    rng = np.random.default_rng(12)
    trees = []
    for _ in range(30):
        n = int(rng.integers(1, 60))
        parents = np.r_[-1, rng.integers(0, np.maximum(np.arange(1, n), 1))][:n]
        trees.append((np.cumsum(rng.normal(0, 2, (n, 3)), axis=0), parents))
    ids = rng.choice(10**9, 30, replace=False).astype(np.uint64)
    expected = MemoryStore()
    zv.write_skeletons(expected, trees, chunk_shape=(5, 5, 5), object_ids=ids)
    got = MemoryStore()
    with zv.open_writer(got, "skeleton", chunk_shape=(5, 5, 5), memory_limit=1 << 12) as w:
        for i in range(0, 30, 7):
            w.append(trees[i : i + 7], object_ids=ids[i : i + 7])
    _assert_same_store(expected, got)


def test_mesh_stream_equals_in_memory() -> None:
    """Root keys too: ``winding_order`` as ``write_meshes`` writes it."""
    rng = np.random.default_rng(13)
    meshes = []
    for _ in range(12):
        verts = rng.uniform(0, 20, (int(rng.integers(3, 40)), 3))
        faces = rng.integers(0, len(verts), (int(rng.integers(1, 30)), 3))
        meshes.append((verts, faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2])
                                    & (faces[:, 0] != faces[:, 2])]))  # fmt: skip
    expected = MemoryStore()
    zv.write_meshes(expected, meshes, chunk_shape=(5, 5, 5))
    got = MemoryStore()
    with zv.open_writer(got, "mesh", chunk_shape=(5, 5, 5), memory_limit=1 << 12) as w:
        for i in range(0, 12, 5):
            w.append(meshes[i : i + 5])
    _assert_same_store(expected, got)
    assert zv.open(got).metadata.type_metadata["winding_order"] == "ccw"


def test_progress_is_reported() -> None:
    events: list[tuple[str, int, int]] = []
    store = MemoryStore()
    with zv.open_writer(
        store,
        "point_cloud",
        chunk_shape=(1, 1),
        partition_chunks=1,
        memory_limit=1,
        progress=lambda *e: events.append(e),
    ) as w:
        w.append(np.random.default_rng(0).uniform(0, 4, (100, 2)))
    assert events[-1][1] == events[-1][2] > 1
    assert [e[1] for e in events] == list(range(1, events[-1][2] + 1))
    pyramid: list[tuple[str, int, int]] = []
    zv.build_pyramid(store, [(1, 1)], progress=lambda *e: pyramid.append(e))
    assert pyramid == [("pyramid", 1, 1)]
