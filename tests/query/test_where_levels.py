"""bbox + where + level on a pyramid level of every object type: the plain read, filtered.

Points and polylines are covered in test_where_points / test_where_objects; here lines,
skeletons, graphs and meshes, each a small case of one of two parametrised tests: types whose
query keeps whole objects (lines, skeletons) and types whose query keeps vertices and the links
between them (graphs, meshes).  The oracle is NumPy over the plain read of the same level; object,
vertex and link order included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from query._oracles import AnyArray, box_mask, boxes, range_mask, ranges

SEEDS = st.integers(0, 2**16)


def _vertices(n: int, seed: int) -> tuple[AnyArray, AnyArray]:
    rng = np.random.default_rng(seed)
    pos = rng.integers(0, 32, (n, 2)) / 2.0  # the half-unit grid: chunk and box edges hit
    values = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, np.nan], n)
    return pos, values


def _kept_objects(plain: Any, box: Any, rng: Any) -> list[int]:
    ids = plain.object_ids.tolist()
    pos = plain.positions
    vals = plain.attributes["value"]
    return [
        oid
        for i, oid in enumerate(ids)
        if (
            box_mask(pos[plain.offsets[i] : plain.offsets[i + 1]], box)
            & range_mask(vals[plain.offsets[i] : plain.offsets[i + 1]], rng)
        ).any()
    ]


@dataclass(frozen=True)
class Whole:
    """A type whose query keeps or drops whole objects, as the level tests see it."""

    write: Callable[[Any, AnyArray, AnyArray], None]
    """Write vertices and their ``value`` attribute (objects fixed by the case) to a store."""
    plain: Callable[..., Any]
    """Read of the whole level as paths (``positions``, ``offsets``, ``object_ids``)."""
    read: Callable[..., Any]
    """The type's own read, queried."""
    n: int
    """How many vertices the case writes."""


def _write_lines(store: Any, pos: AnyArray, values: AnyArray) -> None:
    m = len(pos) // 2
    zv.write_lines(
        store,
        pos.reshape(m, 2, 2),
        chunk_shape=(4, 4),
        bin_shape=(1, 1),
        attributes={"value": values.reshape(m, 2)},
    )


def _write_skeletons(store: Any, pos: AnyArray, values: AnyArray) -> None:
    starts = range(0, len(pos), 6)
    trees = [(pos[i : i + 6], np.array([-1, 0, 1, 1, 3, 4])) for i in starts]
    vals = [values[i : i + 6] for i in starts]
    zv.write_skeletons(
        store, trees, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": vals}
    )


WHOLE = {
    # lines: the level read as paths, filtered here
    "lines": Whole(_write_lines, zv.read_polylines, zv.read_lines, 40),
    "skeletons": Whole(_write_skeletons, zv.read_skeletons, zv.read_skeletons, 36),
}


@pytest.mark.parametrize("kind", sorted(WHOLE))
@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, box=boxes(), rng=ranges())
def test_whole_objects_level(kind: str, seed: int, box: Any, rng: Any) -> None:
    # the objects with a vertex matching box and where, in the plain read's order
    case = WHOLE[kind]
    pos, values = _vertices(case.n, seed)
    store = MemoryStore()
    case.write(store, pos, values)
    zv.build_pyramid(store, [(2, 2)])
    plain = case.plain(store, level=1)
    got = case.read(store, level=1, bbox=box, where={"value": rng})
    assert got.object_ids.tolist() == _kept_objects(plain, box, rng)
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == len(got.object_ids)


@dataclass(frozen=True)
class Linked:
    """A type whose vertices are joined by explicit links, as the level tests see it."""

    write: Callable[[Any, AnyArray, AnyArray], None]
    """Write vertices and their ``value`` attribute (links fixed by the case) to a store."""
    read: Callable[..., Any]
    vertices: str
    """Result field of the vertex positions."""
    links: str
    """Result field of the links (indices into the vertices)."""


def _write_graph(store: Any, pos: AnyArray, values: AnyArray) -> None:
    edges = np.array([[i, i + 1] for i in range(len(pos) - 1) if i % 5 != 4])
    zv.write_graph(
        store, pos, edges, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": values}
    )


def _write_meshes(store: Any, pos: AnyArray, values: AnyArray) -> None:
    pos = pos + np.arange(len(pos))[:, None] * 1e-3  # distinct vertices: faces map to unique rows
    faces = np.array([[i, i + 1, i + 2] for i in range(len(pos) - 2) if i % 6 < 4])
    zv.write_meshes(
        store, pos, faces, chunk_shape=(4, 4), bin_shape=(1, 1), attributes={"value": values}
    )


LINKED = {
    "graphs": Linked(_write_graph, zv.read_graph, "positions", "edges"),
    "meshes": Linked(_write_meshes, zv.read_meshes, "vertices", "faces"),
}


def _rows(*cols: AnyArray) -> list[tuple[str, ...]]:
    """Rows built from columns, in order (NaN-safe via repr)."""
    parts = [c.reshape(len(c), int(np.prod(c.shape[1:]))) for c in cols]
    return [tuple(repr(float(x)) for p in parts for x in p[i]) for i in range(len(parts[0]))]


def _kept_links(links: AnyArray, keep: AnyArray) -> AnyArray:
    """Brute force: the links whose ends are all kept, renumbered into the kept rows, in order."""
    new_index = {old: new for new, old in enumerate(np.flatnonzero(keep).tolist())}
    rows = [[new_index[i] for i in link] for link in links.tolist() if all(keep[link])]
    return np.array(rows, dtype=np.int64).reshape(-1, links.shape[1])


@pytest.mark.parametrize("kind", sorted(LINKED))
@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, box=boxes(), rng=ranges())
def test_linked_level(kind: str, seed: int, box: Any, rng: Any) -> None:
    # the filtered read is the plain read of the level, filtered: vertices and links, in order
    case = LINKED[kind]
    pos, values = _vertices(30, seed)
    store = MemoryStore()
    case.write(store, pos, values)
    zv.build_pyramid(store, [(2, 2)])
    plain = case.read(store, level=1)
    got = case.read(store, level=1, bbox=box, where={"value": rng})
    plain_pos, plain_vals = getattr(plain, case.vertices), plain.attributes["value"]
    keep = box_mask(plain_pos, box) & range_mask(plain_vals, rng)
    got_pos = getattr(got, case.vertices)
    assert _rows(got_pos, got.attributes["value"]) == _rows(plain_pos[keep], plain_vals[keep])
    np.testing.assert_array_equal(
        getattr(got, case.links), _kept_links(getattr(plain, case.links), keep)
    )
    assert zv.count(store, level=1, bbox=box, where={"value": rng}) == int(keep.sum())
