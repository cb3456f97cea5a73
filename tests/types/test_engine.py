"""The shared read pipeline: ``core.engine.gather`` plus a geometry type's ``assemble`` hook."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.engine import Gathered, PathRows, PointRows, gather, rows_as
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.select import Query
from zarr_vectors.core.store import open_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import MergeRule, SceneKind, Topology
from zarr_vectors.spec.typespec import TypeSpec
from zarr_vectors.types import GeometryType
from zarr_vectors.types._base import build_query

AnyArray = npt.NDArray[Any]

RINGS = TypeSpec(
    name="engine_test_ring",
    family="polyline",
    topology=Topology.PATHS,
    cross_chunk_endpoints=2,
    sequential=True,
    merge_rule=MergeRule.RUN,
    scene=SceneKind.PATHS,
)


class RingType(GeometryType[list[AnyArray]]):
    """A type that only says how gathered rows become its result (never registered)."""

    spec = RINGS

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> list[AnyArray]:
        got = rows_as(rows, PathRows, cls.spec).vertices
        return [got.positions[a:b] for a, b in zip(got.offsets[:-1], got.offsets[1:], strict=True)]


def _paths(seed: int) -> list[AnyArray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(0, 40, (int(rng.integers(1, 9)), 2)) for _ in range(25)]


def _reader(paths: list[AnyArray]) -> LevelReader:
    store = MemoryStore()
    zv.write_polylines(store, paths, chunk_shape=(10, 10))
    return LevelReader(open_store(store, mode="r"), 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_type_with_only_assemble_reads_all_ids_and_boxes(seed: int) -> None:
    paths = _paths(seed)
    reader = _reader(paths)
    got = RingType.read(reader, build_query(reader))
    assert len(got) == len(paths)
    for a, b in zip(got, paths, strict=True):
        np.testing.assert_array_equal(a, b)
    named = RingType.read(reader, build_query(reader, object_ids=[7, 3]))
    np.testing.assert_array_equal(named[0], paths[7])
    np.testing.assert_array_equal(named[1], paths[3])
    lo, hi = np.array([5.0, 12.0]), np.array([21.0, 30.0])
    boxed = RingType.read(reader, build_query(reader, bbox=(lo, hi)))
    touching = [p for p in paths if np.all((p >= lo) & (p < hi), axis=1).any()]  # brute force
    assert len(boxed) == len(touching)
    for a, b in zip(boxed, touching, strict=True):
        np.testing.assert_array_equal(a, b)


def test_rows_of_another_topology_are_refused() -> None:
    rows = PointRows(np.zeros((0, 2)), None, {})
    with pytest.raises(InvalidInputError, match="PathRows, got PointRows"):
        rows_as(rows, PathRows, RINGS)


def test_boundary_links_only_for_graphs_and_meshes() -> None:
    reader = _reader(_paths(0))
    query = build_query(reader, bbox=([0, 0], [10, 10]))
    with pytest.raises(InvalidInputError, match="no boundary links"):
        gather(reader, query, RINGS, boundary=True)
    assert isinstance(gather(reader, query, RINGS), PathRows)
