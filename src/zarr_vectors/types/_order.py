"""Input order (docs/spec.md §8.8): the reserved ``_input_index`` attribute and ``order=``.

A writer asked to keep input order stores, next to each element, its position in the
writer's input: a per-vertex attribute for point clouds and mesh vertices, a per-face (link and
cross-chunk-link) attribute for mesh faces.  The name :data:`INPUT_INDEX` is reserved for it;
its dtype is the smallest unsigned integer holding ``count - 1`` (:func:`index_dtype`).  A
reader asked for ``order="input"`` sorts what it returns by that attribute, and never returns
the attribute itself.  Stores written without it have no such array: nothing changes on disk
for them.

Examples
--------
>>> input_index(300).dtype, input_index(3).tolist()
(dtype('uint16'), [0, 1, 2])
>>> ElementOrder.parse("input")
<ElementOrder.INPUT: 'input'>
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError

__all__ = [
    "INPUT_INDEX",
    "ElementOrder",
    "index_dtype",
    "input_index",
    "input_permutation",
    "missing_order",
    "visible",
]

INPUT_INDEX = "_input_index"
"""Reserved attribute name: the position of each element in the writer's input."""


class ElementOrder(enum.Enum):
    """Order in which a reader returns elements."""

    STORAGE = "storage"
    """Storage order (chunk by chunk; see §8.1): always available, fastest."""
    INPUT = "input"
    """The writer's input order; needs a store written with ``keep_order=True``."""

    @classmethod
    def parse(cls, value: str | ElementOrder) -> ElementOrder:
        """Return the member named by ``value``; raise InvalidInputError otherwise."""
        if isinstance(value, ElementOrder):
            return value
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in cls)
            raise InvalidInputError(f"order must be one of {allowed}, got {value!r}") from None


def index_dtype(count: int) -> np.dtype[Any]:
    """Smallest unsigned integer dtype holding ``0 .. count - 1``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if count <= np.iinfo(dtype).max + 1:
            return np.dtype(dtype)
    return np.dtype(np.uint64)


def input_index(count: int, start: int = 0, total: int | None = None) -> npt.NDArray[Any]:
    """Return ``start .. start + count - 1`` in :func:`index_dtype` of ``total`` (or count)."""
    dtype = index_dtype(count + start if total is None else total)
    return np.arange(start, start + count, dtype=np.int64).astype(dtype)


def visible(names: Sequence[str]) -> tuple[str, ...]:
    """Attribute names a reader returns: all but :data:`INPUT_INDEX`."""
    return tuple(n for n in names if n != INPUT_INDEX)


def input_permutation(index: npt.NDArray[Any], what: str) -> npt.NDArray[np.int64]:
    """Return the (stable) permutation sorting elements by their stored input index.

    Raises
    ------
    InvalidInputError
        ``index`` is not one value per element.
    """
    if index.ndim != 1:
        raise InvalidInputError(f"{what}: {INPUT_INDEX} must be one value per element")
    return np.argsort(index, kind="stable").astype(np.int64, copy=False)


def missing_order(what: str) -> InvalidInputError:
    """Return the error for ``order="input"`` on a store written without input order."""
    return InvalidInputError(
        f"{what} holds no input order ({INPUT_INDEX}): it was written without keep_order; "
        "read with order='storage'"
    )
