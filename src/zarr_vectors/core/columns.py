"""Normalised attribute columns and group tables shared by the write and read pipelines.

A column is a numeric or bool array of shape (n,) or (n, K).  Strings are dictionary-encoded
(int32 codes plus ``categories``, FORMAT.md §6) so every stored array is plain numeric.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.spec.layout import check_name_length

__all__ = ["Column", "GroupTable", "normalize_columns", "to_column"]


@dataclass(frozen=True)
class Column:
    """One attribute: little-endian values of shape (n,) or (n, K), optional categories."""

    values: npt.NDArray[Any]
    """Numeric or bool values; strings are stored as integer codes."""
    categories: tuple[str, ...] | None = None
    """Category labels when ``values`` are dictionary codes."""

    @property
    def width(self) -> int:
        """Values per row (K)."""
        return 1 if self.values.ndim == 1 else int(np.prod(self.values.shape[1:]))

    @property
    def rows(self) -> npt.NDArray[Any]:
        """Values as a C-contiguous (n, K) array."""
        return np.ascontiguousarray(self.values.reshape(len(self.values), self.width))

    def take(self, index: npt.NDArray[np.int64]) -> Column:
        """Return the column restricted to ``index`` rows."""
        return Column(self.values[index], self.categories)

    def decoded(self) -> npt.NDArray[Any]:
        """Return values with categories resolved to strings (numeric columns unchanged)."""
        if self.categories is None:
            return self.values
        labels = np.asarray(self.categories, dtype=object)
        codes = self.values
        if codes.dtype.kind not in "iu":
            raise CorruptPayloadError(f"categorical codes must be integers, got {codes.dtype}")
        if codes.size and (codes.min() < 0 or codes.max() >= len(labels)):
            raise CorruptPayloadError(
                f"a categorical code is outside its {len(labels)} categories "
                f"(codes {codes.min()}..{codes.max()})"
            )
        out: npt.NDArray[Any] = labels[codes]
        return out


def to_column(name: str, values: Any, n: int, what: str) -> Column:
    """Validate and normalise one user attribute of ``n`` rows."""
    if isinstance(values, Column):
        arr, cats = values.values, values.categories
    else:
        arr, cats = np.asarray(values), None
    if arr.ndim == 0 or arr.shape[0] != n:
        got = "a scalar" if arr.ndim == 0 else f"{arr.shape[0]} rows"
        raise InvalidInputError(f"{what} {name!r} has {got}, expected {n}")
    if arr.ndim > 2:
        raise InvalidInputError(f"{what} {name!r} must be 1-D or 2-D, got shape {arr.shape}")
    if arr.dtype.kind == "S":  # would come back as str: refuse rather than change the type
        raise InvalidInputError(
            f"{what} {name!r} holds bytes (dtype {arr.dtype}); decode it to str, or store the "
            "bytes as a uint8 array"
        )
    if arr.dtype.kind in "USO" and cats is None:
        if arr.ndim != 1:
            raise InvalidInputError(f"{what} {name!r}: string attributes must be 1-D")
        if arr.dtype.kind == "O" and not all(isinstance(v, str) for v in arr.tolist()):
            raise InvalidInputError(f"{what} {name!r}: object arrays must hold only strings")
        labels, codes = np.unique(arr.astype(str), return_inverse=True)
        return Column(codes.astype(np.int32), tuple(str(s) for s in labels))
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(
            f"{what} {name!r} has dtype {arr.dtype}; use numeric, bool or string values"
        )
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and np.little_endian is False):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return Column(np.ascontiguousarray(arr), cats)


def normalize_columns(columns: Mapping[str, Any] | None, n: int, what: str) -> dict[str, Column]:
    """Validate a mapping of attribute name to values (names must be identifiers)."""
    out: dict[str, Column] = {}
    for name, values in (columns or {}).items():
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidInputError(f"{what} name {name!r} is not an identifier")
        check_name_length(name)
        out[name] = to_column(name, values, n, what)
    return out


@dataclass(frozen=True)
class GroupTable:
    """Named groups of objects as CSR (FORMAT.md §6 ``groupings``)."""

    names: tuple[str, ...]
    """Group names, in group-id order."""
    offsets: npt.NDArray[np.int64]
    """CSR offsets (n_groups + 1,) into ``members``."""
    members: npt.NDArray[np.int64]
    """Dense object ids of each group's members."""
    attributes: Mapping[str, Column] = field(default_factory=dict)
    """Per-group attributes."""

    @classmethod
    def from_mapping(
        cls,
        groups: Mapping[str, Sequence[int] | npt.ArrayLike],
        dense_of: Any,
        n_objects: int,
        attributes: Mapping[str, Any] | None = None,
    ) -> GroupTable:
        """Build from ``{name: member ids}``; ``dense_of`` maps user ids to dense ids."""
        names, counts, members = [], [], []
        for name, ids in groups.items():
            if not isinstance(name, str):
                raise InvalidInputError(f"group name {name!r} must be a string")
            dense = np.asarray(dense_of(np.asarray(ids).ravel(), f"group {name!r}"), dtype=np.int64)
            if dense.size and (dense.min() < 0 or dense.max() >= n_objects):
                raise InvalidInputError(f"group {name!r} names an object id out of range")
            names.append(name)
            counts.append(dense.size)
            members.append(dense)
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
        return cls(
            tuple(names),
            offsets,
            flat,
            normalize_columns(attributes, len(names), "group attribute"),
        )

    def index_of(self, group: str | int) -> int:
        """Return the group id of a name or id, with a clear error if unknown."""
        if isinstance(group, str):
            if group not in self.names:
                raise InvalidInputError(f"unknown group {group!r}; groups: {list(self.names)}")
            return self.names.index(group)
        g = int(group)
        if not 0 <= g < len(self.names):
            raise InvalidInputError(f"group id {g} out of range (0..{len(self.names) - 1})")
        return g

    def members_of(self, group: str | int) -> npt.NDArray[np.int64]:
        """Return the dense object ids of one group."""
        g = self.index_of(group)
        return self.members[self.offsets[g] : self.offsets[g + 1]]
