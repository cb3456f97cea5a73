"""Exact comparison of geometry results, for tests of code that writes or reads ZVF stores.

Comparisons are **bit-exact**: float values are compared by their bit patterns, so ``-0.0``
differs from ``0.0`` and a NaN equals a NaN with the same payload, and dtypes must match
(float32 stays float32).  Categorical attributes compare by their string values whatever their
string dtype (``<U`` input, ``object`` output).

Reads return rows in storage order, not input order; :func:`assert_points_equal` therefore
compares point sets as **multisets** by default: both sides are sorted by the raw bytes of every
row (position, attributes, object id) before comparing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.types.points import Points

__all__ = ["assert_arrays_identical", "assert_geometry_equal", "assert_points_equal"]

AnyArray = npt.NDArray[Any]


def _is_string(arr: AnyArray) -> bool:
    if arr.dtype.kind in "US":
        return True
    return arr.dtype.kind == "O" and all(isinstance(v, str) for v in arr.ravel().tolist())


def _bits(arr: AnyArray) -> AnyArray:
    """Return the raw bytes of ``arr`` as unsigned integers of the same shape."""
    a = np.ascontiguousarray(arr)
    if a.dtype.kind == "b":
        return a.view(np.uint8)
    if a.dtype.kind in "iuf" and a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(np.dtype(f"u{a.dtype.itemsize}"))
    return a


def assert_arrays_identical(actual: npt.ArrayLike, expected: npt.ArrayLike, what: str) -> None:
    """Assert two arrays have the same shape, dtype and bit-identical values.

    String arrays of any string dtype (``<U``, ``object`` of ``str``) compare by value.

    Examples
    --------
    >>> assert_arrays_identical(np.array([0.0]), np.array([0.0]), "x")
    >>> assert_arrays_identical(np.array([0.0]), np.array([-0.0]), "x")
    Traceback (most recent call last):
    ...
    AssertionError: x: values differ at 1 of 1 elements (first at index (0,): 0.0 != -0.0)
    """
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    if _is_string(a) or _is_string(e):
        if not (_is_string(a) and _is_string(e)):
            raise AssertionError(f"{what}: dtype {a.dtype} != expected {e.dtype}")
        a, e = a.astype(str), e.astype(str)
        differ = a != e
    else:
        if a.dtype != e.dtype:
            raise AssertionError(f"{what}: dtype {a.dtype} != expected {e.dtype}")
        differ = _bits(a) != _bits(e)
    if np.any(differ):
        where = np.argwhere(differ)
        first = tuple(int(i) for i in where[0])
        raise AssertionError(
            f"{what}: values differ at {len(where)} of {a.size} elements "
            f"(first at index {first}: {a[first].tolist()!r} != {e[first].tolist()!r})"
        )


def _canonical_ids(ids: AnyArray) -> AnyArray:
    """Object ids as int64 when they fit, else uint64, so equal values give equal bytes."""
    arr = np.asarray(ids)
    if arr.dtype.kind == "u" and (arr.size == 0 or int(arr.max()) < 2**63):
        return arr.astype(np.int64)
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64)
    return arr.astype(np.int64)


def _row_keys(points: Points, names: list[str], labels: Mapping[str, AnyArray]) -> AnyArray:
    """Return an (N, B) uint8 matrix holding the raw bytes of every row of ``points``."""
    n = len(points)
    cols: list[AnyArray] = [np.ascontiguousarray(points.positions).reshape(n, -1)]
    for name in names:
        values = np.asarray(points.attributes[name])
        if name in labels:
            values = np.searchsorted(labels[name], values.astype(str)).astype(np.int64)
        cols.append(np.ascontiguousarray(values).reshape(n, -1))
    if points.vertex_object_ids is not None:
        cols.append(_canonical_ids(points.vertex_object_ids).reshape(n, 1))
    return np.concatenate([c.view(np.uint8).reshape(n, -1) for c in cols], axis=1)


def _storage_free_order(
    points: Points, names: list[str], labels: Mapping[str, AnyArray]
) -> npt.NDArray[np.intp]:
    if len(points) == 0:
        return np.arange(0)
    keys = _row_keys(points, names, labels)
    return np.lexsort(keys.T[::-1])


def _take(points: Points, order: npt.NDArray[np.intp]) -> Points:
    return Points(
        positions=points.positions[order],
        attributes={k: np.asarray(v)[order] for k, v in points.attributes.items()},
        vertex_object_ids=None
        if points.vertex_object_ids is None
        else np.asarray(points.vertex_object_ids)[order],
    )


def assert_points_equal(actual: Points, expected: Points, *, ignore_order: bool = True) -> None:
    """Assert two point sets are equal: positions bit-identical, same attributes and ids.

    Parameters
    ----------
    actual, expected
        The :class:`~zarr_vectors.Points` to compare (``expected`` usually built from the input
        of a write).
    ignore_order
        Compare as multisets of rows (default), since reads return storage order.

    Raises
    ------
    AssertionError
        Naming the first field that differs.

    Examples
    --------
    >>> a = Points(np.array([[1.0, 2.0], [0.0, 0.0]]), {"i": np.array([1, 0])})
    >>> b = Points(np.array([[0.0, 0.0], [1.0, 2.0]]), {"i": np.array([0, 1])})
    >>> assert_points_equal(a, b)
    >>> assert_points_equal(a, b, ignore_order=False)
    Traceback (most recent call last):
    ...
    AssertionError: positions: values differ at 4 of 4 elements (first at index (0, 0): 1.0 != 0.0)
    """
    if len(actual) != len(expected):
        raise AssertionError(f"point count {len(actual)} != expected {len(expected)}")
    if set(actual.attributes) != set(expected.attributes):
        raise AssertionError(
            f"attribute names {sorted(actual.attributes)} != expected {sorted(expected.attributes)}"
        )
    if (actual.vertex_object_ids is None) != (expected.vertex_object_ids is None):
        raise AssertionError(
            f"vertex_object_ids {'missing' if actual.vertex_object_ids is None else 'present'}, expected "
            f"{'none' if expected.vertex_object_ids is None else 'ids'}"
        )
    names = sorted(expected.attributes)
    if ignore_order:
        labels: dict[str, AnyArray] = {}
        for name in names:
            a, e = np.asarray(actual.attributes[name]), np.asarray(expected.attributes[name])
            if _is_string(a) and _is_string(e):
                labels[name] = np.unique(np.concatenate([a.astype(str), e.astype(str)]))
        actual = _take(actual, _storage_free_order(actual, names, labels))
        expected = _take(expected, _storage_free_order(expected, names, labels))
    assert_arrays_identical(actual.positions, expected.positions, "positions")
    for name in names:
        assert_arrays_identical(
            actual.attributes[name], expected.attributes[name], f"attribute {name!r}"
        )
    if actual.vertex_object_ids is not None and expected.vertex_object_ids is not None:
        assert_arrays_identical(
            _canonical_ids(actual.vertex_object_ids),
            _canonical_ids(expected.vertex_object_ids),
            "vertex_object_ids",
        )


def _assert_values_equal(actual: Any, expected: Any, what: str) -> None:
    if isinstance(expected, np.ndarray) or isinstance(actual, np.ndarray):
        assert_arrays_identical(actual, expected, what)
    elif isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if set(actual) != set(expected):
            raise AssertionError(f"{what}: keys {sorted(actual)} != expected {sorted(expected)}")
        for key in expected:
            _assert_values_equal(actual[key], expected[key], f"{what}[{key!r}]")
    elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        assert_geometry_equal(actual, expected, _what=what)
    elif actual != expected:
        raise AssertionError(f"{what}: {actual!r} != expected {expected!r}")


def assert_geometry_equal(
    actual: object, expected: object, *, ignore_order: bool = False, _what: str = ""
) -> None:
    """Assert two geometry results (``Points``, ``Polylines``, ...) are exactly equal.

    Results are compared field by field: arrays bit-identically with their dtypes, mappings
    key by key, other values with ``==``.  For :class:`~zarr_vectors.Points`, ``ignore_order``
    compares the rows as multisets (see :func:`assert_points_equal`); other geometry types
    are compared in order, since their reads return objects in a defined order.

    Raises
    ------
    AssertionError
        Naming the field that differs.

    Examples
    --------
    >>> p = Points(np.zeros((1, 2), np.float32))
    >>> assert_geometry_equal(p, Points(np.zeros((1, 2), np.float32)))
    >>> assert_geometry_equal(p, Points(np.zeros((1, 2), np.float64)))
    Traceback (most recent call last):
    ...
    AssertionError: Points.positions: dtype float32 != expected float64
    """
    if type(actual) is not type(expected):
        raise AssertionError(
            f"{_what or 'result'}: type {type(actual).__name__} != {type(expected).__name__}"
        )
    if isinstance(actual, Points) and isinstance(expected, Points) and ignore_order:
        assert_points_equal(actual, expected, ignore_order=True)
        return
    if not dataclasses.is_dataclass(expected) or isinstance(expected, type):
        _assert_values_equal(actual, expected, _what or "result")
        return
    prefix = _what or type(expected).__name__
    for f in dataclasses.fields(expected):
        _assert_values_equal(
            getattr(actual, f.name), getattr(expected, f.name), f"{prefix}.{f.name}"
        )
