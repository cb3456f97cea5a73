"""The contract every geometry type meets, as a test class to subclass (zarr's ``StoreTests``).

A type's test module subclasses :class:`GeometryTypeTests` (under a ``Test...`` name so pytest
collects it), sets :attr:`~GeometryTypeTests.geometry_type` and implements the hooks: make an
input, write it, say what a full read returns, and put any result into a canonical, order-free
form.  The inherited tests then check, on a local store:

* the type is registered (its :class:`~zarr_vectors.spec.typespec.TypeSpec` and class);
* write → read returns :meth:`~GeometryTypeTests.expected` exactly (``assert_equal``);
* box reads equal a brute-force selection over the input (half-open boxes, FORMAT.md §2);
* reads by object id equal a brute-force selection;
* after ``build_pyramid`` level 0 still reads exactly, level 1 reads, and both validate;
* the written store validates with no errors.

Box and id selections are compared in canonical form because their row order is each type's
own rule (tested by the type's own tests); the full read is compared in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.api import open as open_reader
from zarr_vectors.multiscale import build_pyramid
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.testing.assertions import assert_geometry_equal
from zarr_vectors.types._base import get_geometry_type
from zarr_vectors.validate import validate

__all__ = ["Box", "GeometryTypeTests", "canonical_objects", "in_box"]

Box = tuple[tuple[float, ...], tuple[float, ...]]
"""A half-open query box ``(min, max)``."""


def in_box(positions: npt.ArrayLike, box: Box) -> npt.NDArray[np.bool_]:
    """Per row of ``positions``: whether ``min <= p < max`` on every axis (brute force)."""
    p = np.asarray(positions, dtype=np.float64)
    lo, hi = np.asarray(box[0], dtype=np.float64), np.asarray(box[1], dtype=np.float64)
    return np.asarray(np.all((p >= lo) & (p < hi), axis=-1))


def canonical_objects(ids: Sequence[Any], vertices: Sequence[npt.ArrayLike]) -> list[Any]:
    """Objects as a sorted list of ``(id, vertex tuples in order)``: equal for the same set."""
    rows = [
        (int(i), tuple(map(tuple, np.asarray(v, dtype=np.float64).tolist())))
        for i, v in zip(ids, vertices, strict=True)
    ]
    return sorted(rows)


class GeometryTypeTests:
    """Base class of the per-type contract tests; subclasses implement the hooks."""

    geometry_type: ClassVar[str]
    """Registered name of the type under test."""
    chunk_shape: ClassVar[tuple[float, ...]] = (4.0, 4.0, 4.0)
    """Chunk shape passed to :meth:`write`; the input should span a few chunks."""
    bin_shape: ClassVar[tuple[float, ...]] = (1.0, 1.0, 1.0)
    """Base bin shape passed to :meth:`write` (finer than the chunks, so a pyramid fits)."""
    pyramid_ratio: ClassVar[tuple[int, ...]] = (2, 2, 2)
    """Bin ratio of the level the pyramid test builds."""
    validate_level: ClassVar[int] = 4
    """Depth of the validation the tests run (4: geometry checks included)."""

    # -- hooks ----------------------------------------------------------------------------

    def make_input(self) -> Any:
        """Return the input the tests write (any object :meth:`write` understands)."""
        raise NotImplementedError

    def write(self, store: str, data: Any) -> None:
        """Write ``data`` to a new store at ``store`` with the type's writer."""
        raise NotImplementedError

    def expected(self, data: Any) -> Any:
        """Return the typed result a full read of the store written from ``data`` gives."""
        raise NotImplementedError

    def canonical(self, result: Any) -> Any:
        """Return an order-free form of a read result (e.g. :func:`canonical_objects`)."""
        raise NotImplementedError

    def expected_in_box(self, data: Any, box: Box) -> Any:
        """Return, by brute force over ``data``, the canonical form of a ``box`` read."""
        raise NotImplementedError

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        """Return, by brute force over ``data``, the canonical form of a read of ``ids``."""
        raise NotImplementedError

    def query_ids(self, data: Any) -> list[list[int]]:
        """Object-id selections the id test reads (default: none, for types without ids)."""
        return []

    def read(self, store: str, **kwargs: Any) -> Any:
        """Read the store through the generic reader (``zv.open(store).read``)."""
        with open_reader(store) as reader:
            return reader.read(**kwargs)

    def assert_equal(self, actual: Any, expected: Any) -> None:
        """Assert a full read equals the expected result (bit-exact, in order)."""
        assert_geometry_equal(actual, expected)

    def boxes(self) -> list[Box]:
        """Query boxes: chunk-aligned, straddling chunks, everything and nothing."""
        c = np.asarray(self.chunk_shape, dtype=np.float64)
        spans = [(0, 2), (0.5, 2.25), (1.75, 2.5), (2, 2.75), (1.5, 4), (-100, 100), (50, 51)]
        return [(tuple((a * c).tolist()), tuple((b * c).tolist())) for a, b in spans]

    # -- the contract ---------------------------------------------------------------------

    def _written(self, tmp_path: Path) -> tuple[str, Any]:
        store = str(tmp_path / f"{self.geometry_type}.zarr")
        data = self.make_input()
        self.write(store, data)
        return store, data

    def test_type_is_registered(self) -> None:
        """The name resolves to a spec and a registered class holding that spec."""
        spec = type_spec(self.geometry_type)
        assert spec.name == self.geometry_type
        assert get_geometry_type(self.geometry_type).spec is spec

    def test_write_read_exact(self, tmp_path: Path) -> None:
        """A full read returns the input exactly."""
        store, data = self._written(tmp_path)
        with open_reader(store) as reader:
            assert reader.geometry_type == self.geometry_type
        self.assert_equal(self.read(store), self.expected(data))

    def test_box_matches_brute_force(self, tmp_path: Path) -> None:
        """Box reads hold what a brute-force scan of the input selects."""
        store, data = self._written(tmp_path)
        for box in self.boxes():
            actual = self.canonical(self.read(store, bbox=box))
            assert actual == self.expected_in_box(data, box), f"box {box}"

    def test_by_id_matches_brute_force(self, tmp_path: Path) -> None:
        """Reads by object id hold what a brute-force scan selects."""
        store, data = self._written(tmp_path)
        for ids in self.query_ids(data):
            actual = self.canonical(self.read(store, object_ids=ids))
            assert actual == self.expected_by_ids(data, ids), f"ids {ids}"

    def test_pyramid_level0_is_input(self, tmp_path: Path) -> None:
        """A pyramid leaves level 0 as written; level 1 reads and validates."""
        store, data = self._written(tmp_path)
        build_pyramid(store, [self.pyramid_ratio])
        self.assert_equal(self.read(store, level=0), self.expected(data))
        with open_reader(store) as reader:
            assert reader.levels == [0, 1]
            coarse = reader.read(level=1)
        assert type(coarse) is type(self.expected(data))
        report = validate(store, self.validate_level)
        assert report.ok, report.errors

    def test_validate_ok(self, tmp_path: Path) -> None:
        """The validator finds no error in a written store."""
        store, _ = self._written(tmp_path)
        report = validate(store, self.validate_level)
        assert report.ok, report.errors
