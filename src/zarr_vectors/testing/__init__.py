"""Test kit shipped with zarr_vectors: exact assertions, canonical examples, strategies.

* :func:`assert_geometry_equal` / :func:`assert_points_equal` compare results bit-exactly
  (point sets as multisets, since reads return storage order);
* :mod:`zarr_vectors.testing.examples` is a catalogue of canonical inputs (empty, single
  vertex, chunk boundaries, NaN attributes, 2-D/3-D/4-D, uint64 ids, ...);
* :class:`GeometryTypeTests` is the contract every geometry type's tests subclass (write →
  read exact, box and id reads = brute force, pyramid level 0 = input, validation clean);
* :class:`StoreFactory` makes fresh stores of every kind (memory, local, zip, path strings);
* :mod:`zarr_vectors.testing.strategies` holds hypothesis strategies for point sets, chunk and
  bin shapes, boxes and ragged geometry (import it explicitly; it needs ``hypothesis``).
"""

from __future__ import annotations

from zarr_vectors.testing.assertions import (
    assert_arrays_identical,
    assert_geometry_equal,
    assert_points_equal,
)
from zarr_vectors.testing.contract import Box, GeometryTypeTests, canonical_objects, in_box
from zarr_vectors.testing.examples import (
    POINT_CLOUD_EXAMPLES,
    PointCloudExample,
    point_cloud_example,
)
from zarr_vectors.testing.stores import STORE_KINDS, StoreFactory

__all__ = [
    "POINT_CLOUD_EXAMPLES",
    "STORE_KINDS",
    "Box",
    "GeometryTypeTests",
    "PointCloudExample",
    "StoreFactory",
    "assert_arrays_identical",
    "assert_geometry_equal",
    "assert_points_equal",
    "canonical_objects",
    "in_box",
    "point_cloud_example",
]
