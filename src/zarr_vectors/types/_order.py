"""Input order (docs/spec.md §8.8): the reserved ``_input_index`` attribute and ``order=``.

A writer asked to keep input order stores, next to each element, its position in the
writer's input: a per-vertex attribute for point clouds, mesh vertices and graph nodes, a
per-link (link and cross-chunk-link) attribute for mesh faces and graph edges.  The name :data:`INPUT_INDEX` is reserved for it;
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
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.layout import INPUT_INDEX

__all__ = [
    "INPUT_INDEX",
    "ElementOrder",
    "index_dtype",
    "input_index",
    "input_permutation",
    "inverse_permutation",
    "missing_order",
    "visible",
    "with_input_index",
]


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


def inverse_permutation(perm: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Return ``where`` with ``where[perm[i]] = i``: the new position of each old row.

    Examples
    --------
    >>> inverse_permutation(np.array([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    where = np.empty(len(perm), dtype=np.int64)
    where[perm] = np.arange(len(perm), dtype=np.int64)
    return where


def with_input_index(parts: GeometryParts) -> GeometryParts:
    """``parts`` plus the input position of every vertex and every link (reserved name).

    Raises
    ------
    InvalidInputError
        A vertex or link attribute is already named :data:`INPUT_INDEX`.
    """
    if INPUT_INDEX in parts.vertex_attributes or INPUT_INDEX in parts.link_attributes:
        raise InvalidInputError(f"attribute name {INPUT_INDEX!r} is reserved for keep_order")
    links = {}
    if parts.links is not None:
        links = {INPUT_INDEX: Column(input_index(len(parts.links)))}
    return replace(
        parts,
        vertex_attributes={
            **parts.vertex_attributes,
            INPUT_INDEX: Column(input_index(len(parts.positions))),
        },
        link_attributes={**parts.link_attributes, **links},
    )


def missing_order(what: str) -> InvalidInputError:
    """Return the error for ``order="input"`` on a store written without input order."""
    return InvalidInputError(
        f"{what} holds no input order ({INPUT_INDEX}): it was written without keep_order; "
        "read with order='storage'"
    )
