"""append_graph with edges that reference stored nodes equals a fresh write of the whole graph.

Edges index ``[stored nodes in read_graph order, new nodes]``; the reference is a fresh
``write_graph`` of exactly that concatenation (stored edges plus the new ones).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.edit.cases import plain
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.edit.incremental import LAST_PATH, AppendPath
from zarr_vectors.errors import GeometryError, InvalidInputError

CHUNK = (8.0, 8.0)
BOX = ([-4.0, -4.0], [6.0, 9.0])


def _edges(rng: np.random.Generator, n: int, k: int, directed: bool) -> np.ndarray:
    """Up to ``k`` distinct edges among ``n`` nodes, no self-loops."""
    if n < 2:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = rng.integers(0, n, size=(k, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    key = pairs if directed else np.sort(pairs, axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    return pairs[np.sort(first)].astype(np.int64)


def _new_edges(
    rng: np.random.Generator, stored: np.ndarray, n_old: int, n_new: int, directed: bool
) -> np.ndarray:
    """Edges over [stored, new] nodes, each touching a new node or joining stored ones."""
    n = n_old + n_new
    cand = _edges(rng, n, 3 * n_new + 3, directed)
    old = stored if directed else np.sort(stored, axis=1)
    key = cand if directed else np.sort(cand, axis=1)
    fresh = ~(key[:, None, :] == old[None, :, :]).all(axis=2).any(axis=1) if len(old) else None
    return cand if fresh is None else cand[fresh]


def _store(kind: str, tmp: Path, name: str) -> Any:
    return MemoryStore() if kind == "memory" else str(tmp / f"{name}.zarrvectors")


def _reads(store: Any) -> list[Any]:
    whole = zv.read_graph(store)
    out = [plain(whole), plain(zv.read_graph(store, bbox=BOX))]
    ids = whole.object_ids
    out.append(plain(zv.read_graph(store, object_ids=ids[::2])))
    out.append(plain(zv.read_graph(store, bbox=BOX, include_boundary_edges=True)))
    return out


def _check(seed: int, kind: str, directed: bool, user_ids: bool) -> None:
    rng = np.random.default_rng(seed)
    n_a, n_b = int(rng.integers(1, 12)), int(rng.integers(0, 8))
    pos_a = np.round(rng.uniform(-12, 12, size=(n_a, 2)), 2)
    pos_b = np.round(rng.uniform(-12, 12, size=(n_b, 2)), 2)
    e_a = _edges(rng, n_a, n_a, directed)
    ids_a = rng.integers(0, 4, size=n_a) * 10 if user_ids else None
    kw_a: dict[str, Any] = {"vertex_object_ids": ids_a} if user_ids else {}
    with tempfile.TemporaryDirectory() as tmp:
        appended = _store(kind, Path(tmp), "a")
        zv.write_graph(
            appended,
            pos_a,
            e_a,
            directed=directed,
            chunk_shape=CHUNK,
            attributes={"w": rng.normal(size=n_a)},
            edge_attributes={"e": np.arange(len(e_a), dtype=np.int32)},
            **kw_a,
        )
        before = zv.read_graph(appended)
        new = _new_edges(rng, before.edges, n_a, n_b, directed)
        w_b = rng.normal(size=n_b)
        e_b = np.arange(100, 100 + len(new), dtype=np.int32)
        kw_b: dict[str, Any] = {}
        ids_b = None
        if user_ids:
            ids_b = 100 + rng.integers(0, 3, size=n_b)
            kw_b["vertex_object_ids"] = ids_b
        zv.append_graph(
            appended,
            pos_b,
            new,
            attributes={"w": w_b},
            edge_attributes={"e": e_b},
            **kw_b,
        )
        fresh = _store(kind, Path(tmp), "fresh")
        kw: dict[str, Any] = {}
        if user_ids:
            kw["vertex_object_ids"] = np.concatenate([before.vertex_object_ids, ids_b])
        zv.write_graph(
            fresh,
            np.concatenate([before.positions, pos_b]),
            np.concatenate([before.edges, new]),
            directed=directed,
            chunk_shape=CHUNK,
            attributes={"w": np.concatenate([before.attributes["w"], w_b])},
            edge_attributes={"e": np.concatenate([before.edge_attributes["e"], e_b])},
            **kw,
        )
        assert _reads(appended) == _reads(fresh)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["memory", "local"]),
    directed=st.booleans(),
    user_ids=st.booleans(),
)
def test_append_with_links_equals_fresh_write(
    seed: int, kind: str, directed: bool, user_ids: bool
) -> None:
    _check(seed, kind, directed, user_ids)


def _two_components(store: Any, **kw: Any) -> None:
    pos = np.array([[0.0, 0.0], [1.0, 0.0], [20.0, 20.0], [21.0, 20.0]])
    zv.write_graph(store, pos, [[0, 1], [2, 3]], chunk_shape=CHUNK, **kw)


def test_edge_joining_two_components_merges_them() -> None:
    store = MemoryStore()
    _two_components(store)
    assert zv.read_graph(store).vertex_object_ids.tolist() == [0, 0, 1, 1]
    zv.append_graph(store, [[10.0, 10.0]], [[1, 4], [4, 2]])
    g = zv.read_graph(store)
    assert g.vertex_object_ids.tolist() == [0, 0, 0, 0, 0]
    assert g.positions[:, 0].tolist() == [0.0, 1.0, 20.0, 21.0, 10.0]
    assert g.edges.tolist() == [[0, 1], [1, 4], [2, 3], [2, 4]]


def test_user_objects_keep_cross_object_edge_and_numbering() -> None:
    store = MemoryStore()
    _two_components(store, vertex_object_ids=[7, 7, 3, 3])
    zv.append_graph(store, [[10.0, 10.0]], [[1, 4], [4, 2]], vertex_object_ids=[9])
    g = zv.read_graph(store)
    assert g.vertex_object_ids.tolist() == [7, 7, 3, 3, 9]
    assert g.positions[:, 0].tolist() == [0.0, 1.0, 20.0, 21.0, 10.0]
    assert g.edges.tolist() == [[0, 1], [1, 4], [2, 3], [2, 4]]


def test_local_store_paths(tmp_path: Path) -> None:
    """Edges among new nodes only take the chunk path; an edge to a stored node rebuilds."""
    store = str(tmp_path / "g.zarrvectors")
    _two_components(store)
    zv.append_graph(store, [[3.0, 3.0], [4.0, 3.0]], [[4, 5]])
    assert LAST_PATH[-1] is AppendPath.CHUNKS
    zv.append_graph(store, [[5.0, 3.0]], [[5, 6], [6, 0]])
    assert LAST_PATH[-1] is AppendPath.REBUILD
    g = zv.read_graph(store)
    # node 6 joins component {4, 5} to component {0, 1}: the merged component comes first,
    # so the stored nodes 2 and 3 move to the end (the numbering is not stable here)
    assert g.positions[:, 0].tolist() == [0.0, 1.0, 3.0, 4.0, 5.0, 20.0, 21.0]
    assert g.edges.tolist() == [[0, 1], [0, 4], [2, 3], [3, 4], [5, 6]]
    assert g.vertex_object_ids.tolist() == [0, 0, 0, 0, 0, 1, 1]


def test_directed_store_keeps_direction() -> None:
    store = MemoryStore()
    _two_components(store, directed=True)
    zv.append_graph(store, [[5.0, 5.0]], [[1, 0], [4, 3]])
    g = zv.read_graph(store)
    assert g.directed
    assert g.edges.tolist() == [[0, 1], [1, 0], [2, 3], [4, 3]]


@pytest.mark.parametrize(
    ("edges", "message"),
    [
        ([[0, 5]], "edges row 0: vertex index 5 is out of range for 5 vertices"),
        ([[-1, 4]], "edges row 0: vertex index -1 is out of range"),
        ([[4, 4]], "edges row 0 is a self-loop on vertex 4"),
        ([[4, 0], [1, 0]], r"edges row 1 \(1, 0\) is already in the store"),
        ([[0, 4], [3, 4], [4, 0]], r"edges rows 0 and 2 are the same edge \(0, 4\)"),
    ],
)
def test_refusals_leave_store_untouched(edges: list[list[int]], message: str) -> None:
    store = MemoryStore()
    _two_components(store)
    before = plain(zv.read_graph(store))
    with pytest.raises(GeometryError, match=message):
        zv.append_graph(store, [[5.0, 5.0]], edges)
    assert plain(zv.read_graph(store)) == before


def test_directed_duplicate_only_in_same_direction() -> None:
    store = MemoryStore()
    _two_components(store, directed=True)
    with pytest.raises(GeometryError, match=r"edges row 0 \(0, 1\) is already in the store"):
        zv.append_graph(store, np.zeros((0, 2)), [[0, 1]])


def test_merge_refused_when_store_has_object_attributes() -> None:
    store = MemoryStore()
    _two_components(store, object_attributes={"label": [1, 2]})
    before = plain(zv.read_graph(store))
    with pytest.raises(InvalidInputError, match=r"edges row 0 \(1, 2\) joins objects.*'label'"):
        zv.append_graph(
            store, np.zeros((0, 2)), [[1, 2]], object_attributes={"label": np.zeros(0, np.int64)}
        )
    assert plain(zv.read_graph(store)) == before


def test_duplicate_new_edges_named_in_caller_indices(tmp_path: Path) -> None:
    store = str(tmp_path / "g.zarrvectors")
    _two_components(store)
    with pytest.raises(GeometryError, match=r"edges rows 0 and 1 are the same edge \(4, 5\)"):
        zv.append_graph(store, [[3.0, 3.0], [4.0, 3.0]], [[4, 5], [5, 4]])
    assert zv.read_graph(store).n_vertices == 4
