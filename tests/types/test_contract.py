"""The geometry-type contract (:class:`~zarr_vectors.testing.GeometryTypeTests`) for the seven
built-in types: each class below only says how to make, write and canonicalise its input.

Inputs span 4 x 4 x 4 chunks of 4 units; coordinates are multiples of 1/8 plus 1/16, so no
vertex sits on a box face used by the contract and chunk arithmetic has no rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import zarr_vectors as zv
from zarr_vectors.testing import (
    Box,
    GeometryTypeTests,
    assert_geometry_equal,
    canonical_objects,
    in_box,
)

AnyArray = npt.NDArray[Any]


def coords(rng: np.random.Generator, n: int) -> AnyArray:
    """``n`` 3-D positions in [0, 16) on a 1/8 grid shifted by 1/16 (float64)."""
    return rng.integers(0, 128, (n, 3)) / 8.0 + 1 / 16


def walk(rng: np.random.Generator, n: int) -> AnyArray:
    """A random walk of ``n`` vertices inside [0, 16) crossing chunks."""
    steps = rng.integers(-12, 13, (n, 3)) / 8.0
    return np.clip(8.0 + np.cumsum(steps, axis=0), 0, 15.875) + 1 / 16


def touching(objects: Sequence[AnyArray], box: Box) -> list[int]:
    """Indices of the objects with a vertex in ``box`` (objects come whole, FORMAT.md §7)."""
    return [i for i, v in enumerate(objects) if in_box(v, box).any()]


# -- point clouds -----------------------------------------------------------------------------


class TestPointCloudContract(GeometryTypeTests):
    geometry_type = "point_cloud"

    def make_input(self) -> tuple[AnyArray, AnyArray]:
        rng = np.random.default_rng(1)
        return coords(rng, 80), rng.integers(0, 6, 80)

    def write(self, store: str, data: Any) -> None:
        pos, ids = data
        zv.write_points(
            store,
            pos,
            chunk_shape=self.chunk_shape,
            bin_shape=self.bin_shape,
            vertex_object_ids=ids,
        )

    def expected(self, data: Any) -> zv.Points:
        pos, ids = data
        return zv.Points(pos, {}, ids)

    def assert_equal(self, actual: Any, expected: Any) -> None:
        # a point cloud reads back in storage order: compare the rows as a multiset
        assert_geometry_equal(actual, expected, ignore_order=True)

    def canonical(self, result: zv.Points) -> Any:
        return sorted(
            zip(
                result.vertex_object_ids.tolist(),
                map(tuple, result.positions.tolist()),
                strict=True,
            )
        )

    def expected_in_box(self, data: Any, box: Box) -> Any:
        pos, ids = data
        keep = in_box(pos, box)
        return sorted(zip(ids[keep].tolist(), map(tuple, pos[keep].tolist()), strict=True))

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        pos, obj = data
        keep = np.isin(obj, ids)
        return sorted(zip(obj[keep].tolist(), map(tuple, pos[keep].tolist()), strict=True))

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[0], [2, 5], [1, 3, 4]]


# -- paths --------------------------------------------------------------------------------------


class TestPolylineContract(GeometryTypeTests):
    geometry_type = "polyline"

    def make_input(self) -> list[AnyArray]:
        rng = np.random.default_rng(2)
        return [walk(rng, int(n)) for n in rng.integers(1, 12, 9)]

    def write(self, store: str, data: Any) -> None:
        zv.write_polylines(store, data, chunk_shape=self.chunk_shape, bin_shape=self.bin_shape)

    def expected(self, data: Any) -> zv.Polylines:
        offsets = np.cumsum([0] + [len(p) for p in data]).astype(np.int64)
        return zv.Polylines(np.concatenate(data), offsets, np.arange(len(data), dtype=np.int64))

    def canonical(self, result: Any) -> Any:
        return canonical_objects(result.object_ids, list(result))

    def expected_in_box(self, data: Any, box: Box) -> Any:
        keep = touching(data, box)
        return canonical_objects(keep, [data[i] for i in keep])

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        return canonical_objects(ids, [data[i] for i in ids])

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[0], [3, 8], [1, 2, 7]]


class TestStreamlineContract(TestPolylineContract):
    geometry_type = "streamline"

    def write(self, store: str, data: Any) -> None:
        zv.write_streamlines(
            store, data, chunk_shape=self.chunk_shape, bin_shape=self.bin_shape, step_size=0.5
        )


class TestLineContract(GeometryTypeTests):
    geometry_type = "line"

    def make_input(self) -> AnyArray:
        rng = np.random.default_rng(3)
        return coords(rng, 40).reshape(20, 2, 3)

    def write(self, store: str, data: Any) -> None:
        zv.write_lines(store, data, chunk_shape=self.chunk_shape, bin_shape=self.bin_shape)

    def expected(self, data: Any) -> zv.Lines:
        return zv.Lines(data, np.arange(len(data), dtype=np.int64))

    def canonical(self, result: Any) -> Any:
        return canonical_objects(result.object_ids, list(result.endpoints))

    def expected_in_box(self, data: Any, box: Box) -> Any:
        keep = touching(list(data), box)
        return canonical_objects(keep, [data[i] for i in keep])

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        return canonical_objects(ids, [data[i] for i in ids])

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[5], [0, 19], [2, 3, 11]]

    def test_pyramid_level0_is_input(self, tmp_path: Any) -> None:
        # a coarse line level may merge a segment's ends into one vertex: it then reads
        # through read_polylines, not as Lines (see LineType.read)
        store, data = self._written(tmp_path)
        zv.build_pyramid(store, [self.pyramid_ratio])
        self.assert_equal(self.read(store, level=0), self.expected(data))
        assert len(zv.read_polylines(store, level=1)) == len(data)
        assert zv.validate(store, 4).ok


# -- graphs, skeletons, meshes ----------------------------------------------------------------


@dataclass(frozen=True)
class LinkedInput:
    """Vertices grouped by object, local link rows, and each object's vertex offsets."""

    positions: AnyArray
    links: AnyArray
    offsets: AnyArray

    @property
    def owner(self) -> AnyArray:
        return np.repeat(np.arange(len(self.offsets) - 1), np.diff(self.offsets))


def _vertex_and_link_sets(positions: AnyArray, links: AnyArray) -> Any:
    """Canonical form of a vertex/link selection: sorted vertex and link coordinates."""
    verts = sorted(map(tuple, positions.tolist()))
    rows = sorted(tuple(map(tuple, positions[row].tolist())) for row in links.tolist())
    return verts, rows


def _select_links(data: LinkedInput, keep: AnyArray) -> Any:
    """Vertices with ``keep`` and the links whose every vertex is kept (box semantics)."""
    inside = keep[data.links].all(axis=1)
    index = np.cumsum(keep) - 1
    return _vertex_and_link_sets(data.positions[keep], index[data.links[inside]])


class TestGraphContract(GeometryTypeTests):
    geometry_type = "graph"

    def make_input(self) -> LinkedInput:
        rng = np.random.default_rng(4)
        sizes = [7, 1, 12, 5]
        pos = np.concatenate([walk(rng, n) for n in sizes])
        edges = []
        start = 0
        for n in sizes:  # a path per component plus a chord, so each is connected
            edges += [(start + i, start + i + 1) for i in range(n - 1)]
            if n > 3:
                edges.append((start, start + n - 1))
            start += n
        e = np.array(sorted(edges), dtype=np.int64)
        return LinkedInput(pos, e, np.cumsum([0, *sizes]).astype(np.int64))

    def write(self, store: str, data: Any) -> None:
        zv.write_graph(
            store,
            data.positions,
            data.links,
            chunk_shape=self.chunk_shape,
            bin_shape=self.bin_shape,
        )

    def expected(self, data: Any) -> zv.Graph:
        return zv.Graph(data.positions, data.links, data.owner.astype(np.int64))

    def canonical(self, result: Any) -> Any:
        return _vertex_and_link_sets(np.asarray(result.positions), np.asarray(result.edges))

    def expected_in_box(self, data: Any, box: Box) -> Any:
        return _select_links(data, in_box(data.positions, box))

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        return _select_links(data, np.isin(data.owner, ids))

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[0], [1, 3], [0, 2, 3]]


class TestSkeletonContract(GeometryTypeTests):
    geometry_type = "skeleton"

    def make_input(self) -> LinkedInput:
        rng = np.random.default_rng(5)
        sizes = [9, 1, 14]
        pos = np.concatenate([walk(rng, n) for n in sizes])
        offsets = np.cumsum([0, *sizes]).astype(np.int64)
        parents = np.concatenate(  # global indices: each node's parent comes before it
            [
                np.concatenate([[-1], s + rng.integers(0, np.arange(1, n))])
                for s, n in zip(offsets, sizes, strict=False)
            ]
        ).astype(np.int64)
        return LinkedInput(pos, parents, offsets)

    def write(self, store: str, data: Any) -> None:
        zv.write_skeletons(
            store,
            data.positions,
            parents=data.links,
            offsets=data.offsets,
            chunk_shape=self.chunk_shape,
            bin_shape=self.bin_shape,
        )

    def expected(self, data: Any) -> Any:
        return zv.Skeletons(
            data.positions, data.links, data.offsets, np.arange(len(data.offsets) - 1)
        )

    def _trees(self, data: LinkedInput) -> list[AnyArray]:
        return [
            data.positions[a:b] for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True)
        ]

    def canonical(self, result: Any) -> Any:
        trees = [
            np.asarray(result.positions)[a:b]
            for a, b in zip(result.offsets[:-1], result.offsets[1:], strict=True)
        ]
        return canonical_objects(result.object_ids, trees)

    def expected_in_box(self, data: Any, box: Box) -> Any:
        trees = self._trees(data)
        keep = touching(trees, box)
        return canonical_objects(keep, [trees[i] for i in keep])

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        trees = self._trees(data)
        return canonical_objects(ids, [trees[i] for i in ids])

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[1], [0, 2]]


class TestMeshContract(GeometryTypeTests):
    geometry_type = "mesh"

    def make_input(self) -> LinkedInput:
        rng = np.random.default_rng(6)
        sizes = [6, 3, 10]
        pos = np.concatenate([walk(rng, n) for n in sizes])
        faces, start = [], 0
        for n in sizes:  # a triangle strip per mesh, rows in sorted order
            faces += [(start + i, start + i + 1, start + i + 2) for i in range(n - 2)]
            start += n
        return LinkedInput(
            pos, np.array(faces, dtype=np.int64), np.cumsum([0, *sizes]).astype(np.int64)
        )

    def write(self, store: str, data: Any) -> None:
        meshes = [
            (data.positions[a:b], data.links[(data.links[:, 0] >= a) & (data.links[:, 0] < b)] - a)
            for a, b in zip(data.offsets[:-1], data.offsets[1:], strict=True)
        ]
        zv.write_meshes(store, meshes, chunk_shape=self.chunk_shape, bin_shape=self.bin_shape)

    def expected(self, data: Any) -> Any:
        n = len(data.offsets) - 1
        face_owner = data.owner[data.links[:, 0]]
        face_offsets = np.searchsorted(face_owner, np.arange(n + 1)).astype(np.int64)
        return zv.Meshes(
            vertices=data.positions,
            faces=data.links,
            vertex_object_ids=data.owner.astype(np.int64),
            object_ids=np.arange(n, dtype=np.int64),
            offsets=data.offsets,
            face_offsets=face_offsets,
        )

    def canonical(self, result: Any) -> Any:
        return _vertex_and_link_sets(np.asarray(result.vertices), np.asarray(result.faces))

    def expected_in_box(self, data: Any, box: Box) -> Any:
        return _select_links(data, in_box(data.positions, box))

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        return _select_links(data, np.isin(data.owner, ids))

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[2], [0, 1]]
