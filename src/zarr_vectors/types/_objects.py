"""Shared read/write steps of the object geometry types (FORMAT.md §7–§8).

Object types store each object's vertices in traversal order, split into manifest refs per chunk.
Reads either name objects (ids, a group) or find them through a box: every object with a vertex
in ``min <= p < max`` comes back whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column, GroupTable, normalize_columns
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.select import user_ids
from zarr_vectors.core.writer import check_positions
from zarr_vectors.errors import InvalidInputError

__all__ = [
    "UserIdMap",
    "flatten_ragged",
    "group_members_out",
    "groups_table",
    "output_ids",
    "ragged_columns",
]

IntArray = npt.NDArray[np.int64]


def flatten_ragged(
    items: Any, offsets: Any, what: str, *, finite: bool = True
) -> tuple[npt.NDArray[np.floating], IntArray]:
    """Accept a list of (Ni, D) arrays or flat positions + offsets; return both flat.

    ``finite=False``: the caller's :func:`~zarr_vectors.core.writer.write_store` refuses
    NaN and infinite coordinates (see :func:`~zarr_vectors.core.writer.check_positions`).
    """
    if offsets is None:
        if isinstance(items, np.ndarray) and items.ndim == 2:
            raise InvalidInputError(f"{what}: a flat (N, D) array needs offsets=")
        arrays = [np.asarray(a) for a in items]
        if not arrays:
            raise InvalidInputError(
                f"{what}: give at least one object, or positions of shape (0, D) with offsets=[0]"
            )
        for i, a in enumerate(arrays):
            if a.ndim != 2:
                raise InvalidInputError(f"{what}: object {i} has shape {a.shape}, expected (N, D)")
            if a.dtype.kind not in "iuf":  # even empty: concatenation would hide its dtype
                raise InvalidInputError(
                    f"{what}: object {i} has dtype {a.dtype}; positions must be numeric"
                )
        widths = np.array([a.shape[1] for a in arrays], dtype=np.int64)
        odd = np.flatnonzero(widths != widths[0])
        if odd.size:
            i = int(odd[0])
            raise InvalidInputError(
                f"{what}: object {i} has {widths[i]} columns, object 0 has {widths[0]}; every "
                "object needs the same number D of coordinates"
            )
        counts = np.array([len(a) for a in arrays], dtype=np.int64)
        flat = np.concatenate(arrays, axis=0)
        off = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
        return check_positions(flat, finite=finite), off
    pos = check_positions(items, finite=finite)
    off = np.asarray(offsets)
    if off.ndim != 1 or off.size < 1 or off.dtype.kind not in "iu":
        raise InvalidInputError(f"{what}: offsets must be a 1-D integer array of n+1 entries")
    off = off.astype(np.int64)
    if off[0] != 0 or off[-1] != len(pos):
        raise InvalidInputError(
            f"{what}: offsets must start at 0 and end at {len(pos)} (got {off[0]} .. {off[-1]})"
        )
    bad = np.flatnonzero(np.diff(off) < 0)
    if bad.size:
        raise InvalidInputError(f"{what}: offsets decrease at object {bad[0]}")
    return pos, off


def ragged_columns(
    columns: Mapping[str, Any] | None, offsets: IntArray, what: str
) -> dict[str, Column]:
    """Per-vertex attributes given flat (N, ...) or as one array per object."""
    n = int(offsets[-1])
    flat: dict[str, Any] = {}
    for name, values in (columns or {}).items():
        if (
            isinstance(values, list | tuple)
            and len(values) == len(offsets) - 1
            and not (len(values) == n and np.ndim(values[0]) == 0)
        ):
            for i, v in enumerate(values):
                if len(v) != offsets[i + 1] - offsets[i]:
                    raise InvalidInputError(
                        f"{what} {name!r}: object {i} has {len(v)} values, "
                        f"expected {offsets[i + 1] - offsets[i]}"
                    )
            flat[name] = (
                np.concatenate([np.asarray(v) for v in values], axis=0) if values else np.zeros(0)
            )
        else:
            flat[name] = values
    return normalize_columns(flat, n, what)


@dataclass(frozen=True)
class UserIdMap:
    """User ids of objects (None when ids are the dense 0..n-1) and their resolution."""

    ids: npt.NDArray[Any] | None

    @classmethod
    def from_user(cls, ids: Any, n: int) -> UserIdMap:
        """Validate per-object user ids: 1-D integers, unique, one per object."""
        if ids is None:
            return cls(None)
        arr = np.asarray(ids)
        if arr.shape != (n,) or arr.dtype.kind not in "iu":
            raise InvalidInputError(
                f"object_ids must be {n} integers (one per object), got "
                f"shape {arr.shape} dtype {arr.dtype}"
            )
        uniq, counts = np.unique(arr, return_counts=True)
        if (counts > 1).any():
            dup = uniq[np.argmax(counts > 1)]
            raise InvalidInputError(f"object_ids: duplicate id {dup!r}")
        if n and np.array_equal(arr, np.arange(n)):
            return cls(None)
        return cls(arr)

    def to_dense(self, user: npt.NDArray[Any], what: str) -> IntArray:
        """Map user ids to dense ids, naming an unknown one."""
        if self.ids is None:
            return np.asarray(user, dtype=np.int64)
        order = np.argsort(self.ids, kind="stable")
        ranked = self.ids[order]
        pos = np.searchsorted(ranked, user)
        ok = (pos < len(ranked)) & (ranked[np.minimum(pos, len(ranked) - 1)] == user)
        if not ok.all():
            bad = np.asarray(user)[np.argmax(~ok)]
            raise InvalidInputError(
                f"{what}: unknown object id {bad.item()!r} (object_ids= was given: name "
                "objects by those ids)"
            )
        return order[pos].astype(np.int64)

    def columns(self) -> dict[str, Column]:
        """Return the ``id`` object attribute to store, if any."""
        return {} if self.ids is None else {"id": Column(np.ascontiguousarray(self.ids))}


def groups_table(
    groups: Mapping[str, Any] | None,
    group_attributes: Mapping[str, Any] | None,
    idmap: UserIdMap,
    n_objects: int,
) -> GroupTable | None:
    """Build the group table from ``{name: object ids}`` (user ids when given)."""
    if not groups:
        if group_attributes:
            raise InvalidInputError("group_attributes need groups")
        return None
    return GroupTable.from_mapping(groups, idmap.to_dense, n_objects, group_attributes)


# -- reading --------------------------------------------------------------------------------


def output_ids(reader: LevelReader, dense: IntArray) -> npt.NDArray[Any]:
    """User ids of dense ids (dense ids themselves when the store keeps none)."""
    stored = user_ids(reader)
    return dense if stored is None else stored[dense]


def group_members_out(
    reader: LevelReader, dense: IntArray
) -> tuple[dict[str, npt.NDArray[Any]], dict[str, npt.NDArray[Any]]]:
    """Return groups restricted to the returned objects (user ids) and group attributes."""
    table = reader.groups
    if table is None:
        return {}, {}
    out: dict[str, npt.NDArray[Any]] = {}
    for i, name in enumerate(table.names):
        members = table.members_of(i)
        out[name] = output_ids(reader, members[np.isin(members, dense)])
    return out, {k: c.decoded() for k, c in table.attributes.items()}
