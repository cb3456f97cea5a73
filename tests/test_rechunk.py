"""rechunk gives back the same geometry for every type."""

from __future__ import annotations

import numpy as np
from zarr.storage import MemoryStore

import zarr_vectors as zv


def _rows(a: np.ndarray) -> np.ndarray:
    return np.sort(
        np.ascontiguousarray(a).view(np.dtype((np.void, a.itemsize * a.shape[1]))).ravel()
    )


def test_rechunk_points_keeps_metadata() -> None:
    rng = np.random.default_rng(0)
    pos = rng.uniform(-20, 20, (3000, 3)).astype(np.float32)
    src, dst = MemoryStore(), MemoryStore()
    zv.write_points(
        src,
        pos,
        chunk_shape=(10, 10, 10),
        attributes={"v": rng.random(3000)},
        coordinate_system="RAS",
        axis_units="micrometer",
    )
    zv.rechunk(src, dst, chunk_shape=(4, 4, 4), bin_shape=(2, 2, 2))
    got = zv.read_points(dst)
    assert np.array_equal(_rows(got.positions), _rows(pos))
    attrs = zv.open_store(dst).attrs
    assert attrs["chunk_shape"] == [4.0, 4.0, 4.0]
    assert attrs["coordinate_system"] == "RAS"
    assert attrs["axis_units"] == "micrometer"
    assert zv.validate(dst).ok


def test_rechunk_paths_graphs_skeletons_meshes() -> None:
    rng = np.random.default_rng(1)
    paths = [np.cumsum(rng.normal(0, 2, (30, 3)), axis=0) for _ in range(20)]
    src, dst = MemoryStore(), MemoryStore()
    zv.write_streamlines(src, paths, chunk_shape=(5, 5, 5), step_size=0.5)
    zv.rechunk(src, dst, chunk_shape=(3, 3, 3))
    back = zv.read_streamlines(dst)
    assert all(np.array_equal(back[i], p) for i, p in enumerate(paths))
    assert zv.open_store(dst).attrs["step_size"] == 0.5

    n = 200
    pos = rng.uniform(0, 20, (n, 3))
    edges = np.stack([np.arange(1, n), rng.integers(0, np.arange(1, n))], axis=1)
    src, dst = MemoryStore(), MemoryStore()
    zv.write_graph(src, pos, edges, chunk_shape=(5, 5, 5))
    zv.rechunk(src, dst, chunk_shape=(7, 7, 7))
    a, b = zv.read_graph(src), zv.read_graph(dst)
    assert np.array_equal(a.positions, b.positions)
    assert np.array_equal(a.edges, b.edges)

    verts = np.array([[0.0, 0, 0], [9, 0, 0], [0, 9, 0], [9, 9, 9]])
    faces = np.array([[0, 1, 2], [1, 3, 2]])
    src, dst = MemoryStore(), MemoryStore()
    zv.write_meshes(src, verts, faces, chunk_shape=(5, 5, 5))
    zv.rechunk(src, dst, chunk_shape=(2, 2, 2))
    m = zv.read_meshes(dst)
    assert np.array_equal(m.vertices, verts)
    assert sorted(map(tuple, m.faces.tolist())) == sorted(map(tuple, faces.tolist()))
