"""Strict JSON values for metadata: what every JSON parser reads back unchanged (RFC 8259).

Python's :mod:`json` writes ``NaN`` and ``Infinity`` (which strict parsers reject) and
refuses numpy scalars with a ``TypeError``.  Metadata inputs therefore pass through
:func:`parse_json` once, at the boundary: numpy scalars become Python numbers, tuples become
lists, and anything JSON cannot carry exactly is refused with a
:class:`~zarr_vectors.errors.MetadataValidationError` naming the field and the place inside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from zarr_vectors.errors import MetadataValidationError

__all__ = ["MAX_DEPTH", "parse_json", "parse_json_object", "parse_positive_int"]

MAX_DEPTH = 64
"""Deepest nesting accepted (deeper documents exhaust recursive parsers)."""

_EXACT = 2**53
"""Integers beyond this lose digits in the many JSON readers that parse numbers as doubles."""


def parse_json(value: object, field: str, *, _depth: int = 0) -> Any:
    """Return ``value`` as a strict JSON value, or raise naming ``field``.

    Examples
    --------
    >>> parse_json({"a": (1, np.float32(0.5))}, "custom_metadata")
    {'a': [1, 0.5]}
    >>> parse_json({"x": float("inf")}, "custom_metadata")
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.MetadataValidationError: custom_metadata['x']: inf is not finite; JSON has no NaN or Infinity
    """
    if _depth > MAX_DEPTH:
        raise MetadataValidationError(f"{field}: nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return _integer(int(value), field)
    if isinstance(value, float | np.floating):
        f = float(value)
        if not math.isfinite(f):
            raise MetadataValidationError(
                f"{field}: {f} is not finite; JSON has no NaN or Infinity"
            )
        return f
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise MetadataValidationError(f"{field}: key {k!r} is not a string")
            out[k] = parse_json(v, f"{field}[{k!r}]", _depth=_depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [parse_json(v, f"{field}[{i}]", _depth=_depth + 1) for i, v in enumerate(value)]
    kind = type(value).__name__
    hint = "; convert it with .tolist()" if isinstance(value, np.ndarray) else ""
    raise MetadataValidationError(f"{field}: a {kind} is not a JSON value{hint}")


def _integer(v: int, field: str) -> int:
    if abs(v) > _EXACT:
        raise MetadataValidationError(
            f"{field}: {v} is beyond 2**53, which JSON readers that parse numbers as doubles "
            "round; store it as a string"
        )
    return v


def parse_json_object(value: object, field: str) -> dict[str, Any]:
    """Return a strict JSON object (a mapping with string keys)."""
    if not isinstance(value, Mapping):
        raise MetadataValidationError(f"{field}: expected an object, got {value!r}")
    out = parse_json(value, field)
    assert isinstance(out, dict)
    return out


def parse_positive_int(value: object, field: str) -> int:
    """Return ``value`` as an integer >= 1 (numpy integers accepted; booleans and floats not).

    Examples
    --------
    >>> parse_positive_int(np.int64(3), "partition_chunks")
    3
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise MetadataValidationError(f"{field}: expected a positive integer, got {value!r}")
    if value < 1:
        raise MetadataValidationError(f"{field}: must be >= 1, got {value}")
    return int(value)
