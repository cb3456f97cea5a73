"""Pyramids: coarser levels shrink, keep structure and carry the seed's multiscales block."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import trimesh
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.parts import read_parts
from zarr_vectors.core.reader import LevelReader

SEED = Path(__file__).resolve().parents[3] / "shared" / "seeds" / "004_915fedf6e22b5c56.txt"


def _walks(rng: np.random.Generator, n: int, steps: int, scale: float = 1.0) -> list[np.ndarray]:
    start = rng.uniform(100, 700, (n, 1, 3))
    return list(start + np.cumsum(rng.normal(0, 8 * scale, (n, steps, 3)), axis=1))


def test_seed_example_multiscales_reproduced() -> None:
    rng = np.random.default_rng(0)
    store = MemoryStore()
    zv.write_streamlines(
        store,
        _walks(rng, 40, 60),
        chunk_shape=(200, 200, 200),
        bin_shape=(50, 50, 50),
        coordinate_system="RAS",
        axis_units="micrometer",
    )
    zv.build_pyramid(store, [(2, 2, 2)], object_sparsity=0.5)
    datasets = zv.open_store(store).attrs["multiscales"][0]["datasets"]
    text = SEED.read_text() if SEED.exists() else ""
    if text:
        start = text.index('"datasets"')
        expected_snippet = text[start:]
        assert '"bin_ratio":       [2, 2, 2]' in expected_snippet
    assert datasets == [
        {
            "path": "0",
            "level": 0,
            "bin_ratio": [1, 1, 1],
            "bin_shape": [50.0, 50.0, 50.0],
            "object_sparsity": 1.0,
            "coordinateTransformations": [
                {"type": "scale", "scale": [1.0, 1.0, 1.0]},
                {"type": "translation", "translation": [25.0, 25.0, 25.0]},
            ],
        },
        {
            "path": "1",
            "level": 1,
            "bin_ratio": [2, 2, 2],
            "bin_shape": [100.0, 100.0, 100.0],
            "object_sparsity": 0.5,
            "coordinateTransformations": [
                {"type": "scale", "scale": [2.0, 2.0, 2.0]},
                {"type": "translation", "translation": [50.0, 50.0, 50.0]},
            ],
        },
    ]
    root = json.loads(json.dumps(zv.open_store(store).attrs.asdict()))
    assert root["multiscales"][0]["type"] == "zarr_vectors_multiscale"
    assert len(zv.read_streamlines(store, level=1)) == 20
    assert zv.validate(store, level=2).ok


def _levels_shrink(store: MemoryStore, n_levels: int) -> list[int]:
    counts = [zv.open(store).level(n).level_meta.vertex_count for n in range(n_levels + 1)]
    assert all(b < a for a, b in itertools.pairwise(counts)), counts
    return counts


def _bbox_of_sources_holds(fine: np.ndarray, coarse: np.ndarray) -> None:
    lo, hi = fine.min(axis=0), fine.max(axis=0)
    assert np.all(coarse >= lo - 1e-4)
    assert np.all(coarse <= hi + 1e-4)


def test_points_levels_shrink_and_aggregate() -> None:
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 400, (20_000, 3)).astype(np.float32)
    store = MemoryStore()
    zv.write_points(
        store,
        pos,
        chunk_shape=(100, 100, 100),
        bin_shape=(10, 10, 10),
        attributes={
            "v": rng.random(20_000),
            "label": rng.integers(0, 3, 20_000),
            "cell": rng.choice(np.array(["a", "b"]), 20_000),
        },
    )
    zv.build_pyramid(store, [(2, 2, 2), (10, 10, 10)])
    _levels_shrink(store, 2)
    coarse = zv.read_points(store, level=2)
    assert coarse.positions.dtype == np.float32
    assert len(coarse) == 64  # one metavertex per 100-unit bin
    assert set(np.unique(coarse.attributes["label"])) <= {0, 1, 2}
    assert set(coarse.attributes["cell"]) <= {"a", "b"}
    # a metavertex is the mean of the points of its bin
    lo = np.array([0, 0, 0])
    inside = np.all((pos >= lo) & (pos < lo + 100), axis=1)
    mean = pos[inside].astype(np.float64).mean(axis=0)
    one = zv.read_points(store, level=2, bbox=(lo, lo + 100))
    assert np.allclose(one.positions[0], mean, atol=1e-3)


def test_streamlines_keep_order_and_sparsity_is_deterministic() -> None:
    rng = np.random.default_rng(2)
    walks = _walks(rng, 60, 80)
    stores = []
    for _ in range(2):
        store = MemoryStore()
        zv.write_streamlines(
            store,
            walks,
            chunk_shape=(100, 100, 100),
            bin_shape=(5, 5, 5),
            attributes={"fa": [rng.random(80) for _ in walks]},
        )
        zv.build_pyramid(
            store,
            [(2, 2, 2), (4, 4, 4)],
            object_sparsity=[0.5, 0.25],
            sparsity_strategy="random",
            seed=4,
        )
        stores.append(store)
    a, b = (zv.read_streamlines(s, level=2) for s in stores)
    assert np.array_equal(a.object_ids, b.object_ids)
    assert len(a) == 15
    kept1 = set(zv.read_streamlines(stores[0], level=1).object_ids.tolist())
    assert set(a.object_ids.tolist()) <= kept1  # nested subsets
    for i, oid in enumerate(a.object_ids):
        # coarse vertices stay inside the box of the streamline they summarise, in order
        _bbox_of_sources_holds(walks[oid], a[i])
        assert len(a[i]) < len(walks[oid])
    assert zv.validate(stores[0], level=2).ok


@pytest.mark.parametrize("strategy", ["spatial_coverage", "length", "random"])
def test_sparsity_strategies_keep_the_requested_fraction(strategy: str) -> None:
    rng = np.random.default_rng(3)
    walks = [w[: int(rng.integers(5, 80))] for w in _walks(rng, 40, 80)]
    store = MemoryStore()
    zv.write_polylines(store, walks, chunk_shape=(100, 100, 100), bin_shape=(10, 10, 10))
    levels = zv.build_pyramid(store, [(2, 2, 2)], object_sparsity=0.25, sparsity_strategy=strategy)  # type: ignore[arg-type]
    assert levels[0].object_count == 10
    if strategy == "length":
        kept = zv.read_polylines(store, level=1).object_ids
        lengths = np.array([np.linalg.norm(np.diff(w, axis=0), axis=1).sum() for w in walks])
        assert set(kept.tolist()) == set(np.argsort(-lengths)[:10].tolist())


def test_attribute_strategy_keeps_highest_scores() -> None:
    rng = np.random.default_rng(5)
    walks = _walks(rng, 20, 30)
    score = rng.random(20)
    store = MemoryStore()
    zv.write_polylines(
        store,
        walks,
        chunk_shape=(100, 100, 100),
        bin_shape=(10, 10, 10),
        object_attributes={"score": score},
    )
    zv.build_pyramid(
        store,
        [(2, 2, 2)],
        object_sparsity=0.2,
        sparsity_strategy="attribute",
        sparsity_attribute="score",
    )
    kept = zv.read_polylines(store, level=1)
    assert set(kept.object_ids.tolist()) == set(np.argsort(-score)[:4].tolist())
    # object attributes are copied to every level
    assert np.allclose(kept.object_attributes["score"], score[kept.object_ids])


@pytest.mark.parametrize(
    ("ratios", "match"),
    [
        ([(2, 2, 2), (1, 1, 1)], "non-decreasing"),
        ([(3, 3, 3)], "does not divide"),
        ([(2, 2)], "3 values"),
    ],
)
def test_bad_ratios_are_refused(ratios: list[tuple[int, ...]], match: str) -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 3)), chunk_shape=(8, 8, 8), bin_shape=(2, 2, 2))
    with pytest.raises(zv.ZarrVectorsError, match=match):
        zv.build_pyramid(store, ratios)
    assert zv.list_resolution_levels(zv.open_store(store)) == [0]


def test_ratio_coarser_than_the_chunks_says_how_to_fix_it() -> None:
    store = MemoryStore()  # no bin_shape: one bin per chunk, so no coarser level fits
    zv.write_points(store, np.zeros((3, 3)), chunk_shape=(8, 8, 8))
    with pytest.raises(zv.InvalidInputError) as err:
        zv.build_pyramid(store, [(2, 2, 2)])
    msg = str(err.value)
    assert "larger than the chunk shape [8.0, 8.0, 8.0]" in msg
    assert "this store's is [8.0, 8.0, 8.0]" in msg
    assert "bin_shape=(4.0, 4.0, 4.0)" in msg
    assert zv.list_resolution_levels(zv.open_store(store)) == [0]


def test_existing_levels_need_overwrite_and_anisotropy_works() -> None:
    rng = np.random.default_rng(6)
    store = MemoryStore()
    zv.write_points(
        store, rng.uniform(0, 64, (5000, 3)), chunk_shape=(32, 32, 32), bin_shape=(2, 2, 2)
    )
    zv.build_pyramid(store, [(2, 2, 1)])
    with pytest.raises(zv.StoreExistsError):
        zv.build_pyramid(store, [(4, 4, 2)])
    levels = zv.build_pyramid(store, [(4, 4, 2), (16, 16, 16)], overwrite=True)
    assert [lv.bin_ratio for lv in levels] == [(4, 4, 2), (16, 16, 16)]
    ds = zv.open_store(store).attrs["multiscales"][0]["datasets"]
    assert ds[1]["bin_shape"] == [8.0, 8.0, 4.0]


def test_level_zero_read_back_equals_input_after_pyramid() -> None:
    rng = np.random.default_rng(7)
    walks = _walks(rng, 10, 20)
    store = MemoryStore()
    zv.write_polylines(store, walks, chunk_shape=(100, 100, 100), bin_shape=(10, 10, 10))
    zv.build_pyramid(store, [(2, 2, 2)])
    back = zv.read_polylines(store)
    assert all(np.array_equal(back[i], w) for i, w in enumerate(walks))


def test_choose_level_by_budget_and_resolution() -> None:
    rng = np.random.default_rng(8)
    store = MemoryStore()
    zv.write_points(
        store, rng.uniform(0, 100, (20_000, 3)), chunk_shape=(50, 50, 50), bin_shape=(1, 1, 1)
    )
    zv.build_pyramid(store, [(5, 5, 5), (50, 50, 50)])
    assert zv.choose_level(store, max_vertices=10**9) == 0
    assert zv.choose_level(store, max_vertices=10) == 2
    assert zv.choose_level(store, resolution=5.0) == 1
    box = ([0, 0, 0], [10, 10, 10])
    assert zv.choose_level(store, bbox=box, max_vertices=500) == 0


def test_add_resolution_level_then_regenerate_multiscales() -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((3, 2)), chunk_shape=(4, 4), bin_shape=(1, 1))
    root = zv.open_store(store, mode="r+")
    zv.add_resolution_level(root, 1, (2, 2))
    ms = zv.write_multiscale_metadata(root)
    assert [d.level for d in ms.datasets] == [0, 1]
    zv.remove_resolution_level(root, 1)
    assert [d["level"] for d in root.attrs["multiscales"][0]["datasets"]] == [0]


def test_read_parts_of_level_zero_is_the_input() -> None:
    rng = np.random.default_rng(9)
    walks = _walks(rng, 5, 12)
    store = MemoryStore()
    zv.write_polylines(store, walks, chunk_shape=(50, 50, 50))
    parts = read_parts(LevelReader(zv.open_store(store), 0), sequential=True)
    assert np.array_equal(parts.positions, np.concatenate(walks))


def test_graph_levels_remap_edges_without_loops_or_duplicates() -> None:
    rng = np.random.default_rng(10)
    n = 3000
    pos = rng.uniform(0, 100, (n, 3))
    edges = np.stack([np.arange(1, n), rng.integers(0, np.arange(1, n))], axis=1)
    store = MemoryStore()
    zv.write_graph(
        store,
        pos,
        edges,
        chunk_shape=(50, 50, 50),
        bin_shape=(5, 5, 5),
        attributes={"w": rng.random(n)},
    )
    zv.build_pyramid(store, [(2, 2, 2), (5, 5, 5)])
    _levels_shrink(store, 2)
    for level in (1, 2):
        g = zv.read_graph(store, level=level)
        assert np.all(g.edges[:, 0] != g.edges[:, 1])
        assert len(np.unique(np.sort(g.edges, axis=1), axis=0)) == len(g.edges)
        assert g.edges.min() >= 0
        assert g.edges.max() < len(g.positions)
        _bbox_of_sources_holds(pos, g.positions)
    assert zv.validate(store, level=2).ok


def test_skeleton_levels_stay_trees() -> None:
    rng = np.random.default_rng(11)
    trees = []
    for _ in range(12):
        m = 300
        parents = np.r_[-1, rng.integers(np.maximum(np.arange(1, m) - 3, 0), np.arange(1, m))]
        steps = rng.normal(0, 1.5, (m, 3))
        pos = np.zeros((m, 3))
        for i in range(1, m):  # a small test tree: walk from the parent
            pos[i] = pos[parents[i]] + steps[i]
        trees.append((pos + rng.uniform(20, 80, 3), parents))
    store = MemoryStore()
    zv.write_skeletons(store, trees, chunk_shape=(50, 50, 50), bin_shape=(1, 1, 1))
    zv.build_pyramid(store, [(2, 2, 2), (5, 5, 5)])
    _levels_shrink(store, 2)
    for level in (1, 2):
        sk = zv.read_skeletons(store, level=level)
        assert len(sk) == 12
        for tree in sk:
            parents = tree.parents
            assert (parents == -1).sum() >= 1
            # a forest: following parents from every node ends at a root without repeats
            for start in range(len(parents)):
                node, steps = start, 0
                while node != -1 and steps <= len(parents):
                    node, steps = parents[node], steps + 1
                assert steps <= len(parents)  # no cycle


def test_mesh_levels_have_valid_faces() -> None:
    store = MemoryStore()
    sphere = trimesh.creation.icosphere(subdivisions=4, radius=30.0)
    zv.write_meshes(
        store,
        np.asarray(sphere.vertices) + 50,
        np.asarray(sphere.faces),
        chunk_shape=(25, 25, 25),
        bin_shape=(1, 1, 1),
    )
    zv.build_pyramid(store, [(5, 5, 5), (25, 25, 25)])
    _levels_shrink(store, 2)
    for level in (1, 2):
        m = zv.read_meshes(store, level=level)
        f = m.faces
        assert f.min() >= 0
        assert f.max() < len(m.vertices)
        assert np.all((f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2]))
        assert len(np.unique(np.sort(f, axis=1), axis=0)) == len(f)
