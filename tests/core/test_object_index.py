"""Whole-index reads: a manifest of many chunks is decoded and checked in two halves."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core import reader as zv_reader
from zarr_vectors.core.payload.dense import dense_chunk_count
from zarr_vectors.errors import CorruptPayloadError

N = 140_000  # one path through random points: ~one manifest ref per node, 9 index chunks


@pytest.fixture(scope="module")
def long_graph() -> tuple[MemoryStore, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    pos = rng.uniform(0, 100, (N, 3)).astype(np.float32)
    edges = np.stack([np.arange(N - 1), np.arange(1, N)], axis=1)
    store = MemoryStore()
    zv.write_graph(store, pos, edges, chunk_shape=(10, 10, 10))
    return store, pos, edges


def test_many_chunk_index_reads_in_two_halves(
    long_graph: tuple[MemoryStore, np.ndarray, np.ndarray],
) -> None:
    store, pos, edges = long_graph
    manifest = zv.open_store(store)["0/object_index/manifest"]
    assert isinstance(manifest, zarr.Array)
    n_chunks = dense_chunk_count(manifest)
    assert n_chunks is not None
    assert n_chunks >= zv_reader._PARALLEL_REF_CHUNKS
    got = zv.read_graph(store)
    np.testing.assert_array_equal(got.positions, pos)
    np.testing.assert_array_equal(got.edges, edges)


@pytest.mark.parametrize("row", [3, -3], ids=["first half", "second half"])
def test_bad_ref_in_either_half_is_named(
    long_graph: tuple[MemoryStore, np.ndarray, np.ndarray], row: int
) -> None:
    source, _, _ = long_graph
    store = MemoryStore()
    zv.rechunk(source, store, chunk_shape=(10, 10, 10))  # a copy to damage
    manifest = zarr.open_array(store, path="0/object_index/manifest", mode="r+")
    k = row % manifest.shape[0]
    ref = manifest[k]
    ref[-1] = 10**6  # the row count: far past its chunk's rows
    manifest[k] = ref
    with pytest.raises(CorruptPayloadError, match=rf"ref {k} .* names rows outside its chunk"):
        zv.read_graph(store)
