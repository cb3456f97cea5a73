"""A catalogue of canonical geometries that every implementation must round-trip.

Each example is small, named, and aimed at one edge of the format (FORMAT.md §2, §6, §8): the
empty set, a single vertex, points exactly on chunk boundaries, negative coordinates and
``-0.0``, duplicates, data spread over many chunks, NaN attributes, 2-D/3-D/4-D variants,
float32, categorical attributes and non-dense uint64 object ids.

Examples
--------
>>> import zarr_vectors as zv
>>> from zarr.storage import MemoryStore
>>> from zarr_vectors.testing import assert_points_equal
>>> ex = point_cloud_example("chunk_boundaries_3d")
>>> store = MemoryStore()
>>> _ = zv.write_points(store, **ex.write_kwargs())
>>> assert_points_equal(zv.read_points(store), ex.expected())
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.types.points import Points

__all__ = [
    "POINT_CLOUD_EXAMPLES",
    "PointCloudExample",
    "point_cloud_example",
    "random_walk_paths",
    "random_walk_trees",
]

AnyArray = npt.NDArray[Any]


@dataclass(frozen=True)
class PointCloudExample:
    """One named point-cloud input plus the options to write it."""

    name: str
    """Identifier, used as the pytest id."""
    positions: AnyArray
    """(N, D) coordinates."""
    chunk_shape: tuple[float, ...]
    """Chunk extent per axis."""
    bin_shape: tuple[float, ...] | None = None
    """Bin extent per axis, or None for one bin per chunk."""
    attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-point attributes."""
    vertex_object_ids: AnyArray | None = None
    """Per-point object ids, or None."""
    object_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-object attributes, one row per distinct id in ascending order."""
    groups: Mapping[str, AnyArray] = field(default_factory=dict)
    """Named groups of object ids."""

    def write_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``write_points(store, **kwargs)``."""
        out: dict[str, Any] = {
            "positions": self.positions,
            "chunk_shape": self.chunk_shape,
            "bin_shape": self.bin_shape,
            "attributes": dict(self.attributes),
        }
        if self.vertex_object_ids is not None:
            out["vertex_object_ids"] = self.vertex_object_ids
            out["object_attributes"] = dict(self.object_attributes)
            out["groups"] = dict(self.groups)
        return out

    def expected(self) -> Points:
        """Return the :class:`~zarr_vectors.Points` a full read must give back (as a multiset)."""
        return Points(self.positions, dict(self.attributes), self.vertex_object_ids)


def _grid(ndim: int, per_axis: int, step: float) -> AnyArray:
    axes = np.meshgrid(*[np.arange(per_axis) * step for _ in range(ndim)], indexing="ij")
    return np.stack([a.ravel() for a in axes], axis=1)


def _build() -> tuple[PointCloudExample, ...]:
    rng = np.random.default_rng(20241115)
    boundaries = np.array(
        [
            [0.0, 0.0, 0.0],
            [10.0, 10.0, 10.0],
            [-10.0, 0.0, 10.0],
            [5.0, -5.0, 20.0],
            [-20.0, -20.0, -20.0],
            [9.999999, 10.0, -0.0],
        ]
    )
    many = rng.uniform(-95.0, 95.0, size=(400, 3))
    nan_attr = np.array([0.5, np.nan, -np.inf, np.inf, -0.0], dtype=np.float32)
    cats = np.array(["soma", "axon", "", "axon", "dendrite"])
    uint_ids = np.array([2**64 - 1, 7, 7, 2**63, 2**64 - 1], dtype=np.uint64)
    five = np.arange(15, dtype=np.float64).reshape(5, 3) - 7.0
    return (
        PointCloudExample("empty_3d", np.zeros((0, 3)), (10.0, 10.0, 10.0)),
        PointCloudExample("empty_2d_float32", np.zeros((0, 2), np.float32), (1.0, 1.0)),
        PointCloudExample("single_point", np.array([[1.0, 2.0, 3.0]]), (10.0, 10.0, 10.0)),
        PointCloudExample(
            "single_point_2d_float32", np.array([[-1.5, 2.5]], np.float32), (1.0, 1.0), (0.5, 0.5)
        ),
        PointCloudExample("chunk_boundaries_3d", boundaries, (10.0, 10.0, 10.0), (5.0, 5.0, 2.5)),
        PointCloudExample("negative_2d", -np.abs(_grid(2, 6, 0.75)) - 0.25, (1.0, 2.0), (0.5, 0.5)),
        PointCloudExample("duplicates", np.repeat(five, 3, axis=0), (4.0, 4.0, 4.0)),
        PointCloudExample("many_chunks", many, (10.0, 10.0, 10.0), (2.5, 5.0, 10.0)),
        PointCloudExample("four_d", _grid(4, 3, 0.5), (1.0, 1.0, 1.0, 0.5), (0.5, 0.5, 0.5, 0.5)),
        PointCloudExample("decimal_chunks", _grid(2, 7, 0.1), (0.3, 0.2), (0.1, 0.1)),
        PointCloudExample(
            "nan_attributes", five, (4.0, 4.0, 4.0), attributes={"intensity": nan_attr}
        ),
        PointCloudExample(
            "typed_attributes",
            five,
            (4.0, 4.0, 4.0),
            (2.0, 2.0, 2.0),
            attributes={
                "rgb": np.arange(15, dtype=np.uint8).reshape(5, 3),
                "flag": np.array([True, False, True, True, False]),
                "big": np.array([0, 1, 2**63, 2**64 - 1, 5], dtype=np.uint64),
                "label": cats,
            },
        ),
        PointCloudExample(
            "uint64_object_ids",
            five,
            (4.0, 4.0, 4.0),
            vertex_object_ids=uint_ids,
            object_attributes={"volume": np.array([1.5, 2.5, 3.5])},
            groups={"big": np.array([2**63, 2**64 - 1], dtype=np.uint64)},
        ),
    )


POINT_CLOUD_EXAMPLES: tuple[PointCloudExample, ...] = _build()
"""Every canonical point-cloud example, in a fixed order."""


def point_cloud_example(name: str) -> PointCloudExample:
    """Return the example called ``name`` (``KeyError`` listing the names if unknown)."""
    for ex in POINT_CLOUD_EXAMPLES:
        if ex.name == name:
            return ex
    raise KeyError(f"no example {name!r}; examples: {[e.name for e in POINT_CLOUD_EXAMPLES]}")


def random_walk_paths(
    n: int = 300, seed: int = 0, min_length: int = 1, max_length: int = 60
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Random-walk paths (steps of ~0.4 units) starting uniformly in ``[0, 10)^3``.

    Parameters
    ----------
    n : int
        Number of paths.
    seed : int
        Random seed.
    min_length, max_length : int
        Vertices per path, drawn from ``[min_length, max_length)``.

    Returns
    -------
    positions : ndarray of float32, shape (N, 3)
        All vertices, path by path.
    offsets : ndarray of int64, shape (n + 1,)
        CSR offsets of the paths.
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_length, max_length, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    steps = rng.normal(0, 0.4, (int(offsets[-1]), 3))
    steps[offsets[:-1]] = rng.uniform(0, 10, (n, 3))
    pos = np.cumsum(steps, axis=0)
    pos -= np.repeat(np.cumsum(steps, axis=0)[offsets[:-1]] - steps[offsets[:-1]], lengths, axis=0)
    return pos.astype(np.float32), offsets


def random_walk_trees(
    n: int = 12, nodes: int = 300, seed: int = 0
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Random-walk trees (steps of ~1.5 units, 5 % of nodes branching off an earlier node).

    Each starts uniformly in ``[20, 60)^3`` and spans several 24-unit chunks.

    Parameters
    ----------
    n : int
        Number of trees.
    nodes : int
        Nodes per tree.
    seed : int
        Random seed.

    Returns
    -------
    positions : ndarray of float64, shape (n * nodes, 3)
        All nodes, tree by tree.
    parents : ndarray of int64, shape (n * nodes,)
        Global parent index of each node (-1: the root, each tree's first node).
    offsets : ndarray of int64, shape (n + 1,)
        CSR offsets of the trees.
    """
    rng = np.random.default_rng(seed)
    pos, par = [], []
    offsets = np.arange(n + 1, dtype=np.int64) * nodes
    for start in offsets[:-1]:
        pos.append(np.cumsum(rng.normal(0, 1.5, (nodes, 3)), axis=0) + rng.uniform(20, 60, 3))
        local = np.arange(-1, nodes - 1)
        fork = np.flatnonzero(rng.random(nodes) < 0.05)
        fork = fork[fork > 1]
        local[fork] = rng.integers(0, fork)
        par.append(np.where(local >= 0, local + start, -1))
    return np.concatenate(pos), np.concatenate(par).astype(np.int64), offsets
