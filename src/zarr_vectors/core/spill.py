"""Spill one batch of geometry to disk, partitioned by blocks of chunks (FORMAT.md §6).

:func:`spill_batch` is a pure function of one batch: it can run in this process (the streaming
writer) or on any worker of a cluster (distributed builds), as long as the spill directory is
shared.  Every value written is *local to the batch* — vertex indices, object ids, category
codes — and the returned :class:`BatchSummary` carries what the assembler needs to map them to
global values once every batch is known (:mod:`zarr_vectors.core.assemble`).

Layout: ``<dir>/<prefix>/b<batch>_<field>.npy`` where ``prefix`` is ``v_<block coords>`` for
vertices and ``l_<block coords>`` for links owned (endpoint 0) by that block.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import sort_order
from zarr_vectors.core.writer import take_rows
from zarr_vectors.errors import InvalidInputError

__all__ = ["BatchSummary", "ColumnInfo", "block_prefix", "spill_batch"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class ColumnInfo:
    """dtype, row shape and (batch-local) categories of one attribute."""

    dtype: str
    shape: tuple[int, ...]
    categories: tuple[str, ...] | None

    @classmethod
    def of(cls, col: Column) -> ColumnInfo:
        """Describe a column."""
        return cls(col.values.dtype.str, tuple(col.values.shape[1:]), col.categories)

    def compatible(self, other: ColumnInfo) -> bool:
        """Return whether both have the same dtype, shape and kind (categorical or numeric)."""
        return (self.dtype, self.shape, self.categories is None) == (
            other.dtype,
            other.shape,
            other.categories is None,
        )


@dataclass(frozen=True)
class BatchSummary:
    """Everything about one spilled batch except its vertices."""

    batch: int
    """Batch number; batches are ordered by it."""
    n_vertices: int
    """Vertices in the batch."""
    n_objects: int
    """Objects in the batch (0 when objects come from per-vertex user ids)."""
    lo: tuple[float, ...] | None
    """Lower corner of the batch's vertices."""
    hi: tuple[float, ...] | None
    """Upper corner of the batch's vertices."""
    dtype: str
    """Position dtype."""
    ndim: int
    """Spatial dimensions."""
    has_objects: bool
    """Vertices belong to objects."""
    arity: int
    """Vertices per explicit link, 0 when the batch has no links array."""
    attributes: Mapping[str, ColumnInfo]
    """Per-vertex attribute descriptions."""
    link_attributes: Mapping[str, ColumnInfo]
    """Per-link attribute descriptions."""
    object_counts: IntArray | None
    """Vertices of each batch object (objects never span batches)."""
    uid_table: tuple[npt.NDArray[Any], IntArray] | None
    """Distinct per-vertex user object ids of the batch and their vertex counts."""
    object_attributes: Mapping[str, Column] = field(default_factory=dict)
    """Per-object attributes of the batch's objects."""
    object_ids: npt.NDArray[Any] | None = None
    """Per-object user ids of the batch's objects."""
    groups: GroupTable | None = None
    """Groups of the batch's objects (batch-local ids)."""
    spilled: Mapping[str, int] = field(default_factory=dict)
    """Prefix -> approximate bytes spilled there."""


def block_prefix(kind: str, block: npt.NDArray[np.int64]) -> str:
    """Directory name of a block of chunks, e.g. ``v_-1_0_3``."""
    return kind + "_" + "_".join(str(int(v)) for v in block)


def _blocks(
    pos: npt.NDArray[np.floating], chunk_shape: tuple[float, ...], partition_chunks: int
) -> tuple[list[str], IntArray]:
    """Return the distinct block prefixes (sorted by block coords) and each vertex's block."""
    if len(pos) == 0:
        return [], np.zeros(0, dtype=np.int64)
    cells = np.empty(pos.shape, dtype=np.int64)
    for d, c in enumerate(chunk_shape):  # same float64 floor(p / C) as ChunkLayout
        cells[:, d] = np.floor(np.asarray(pos[:, d], dtype=np.float64) / c)
    cells //= partition_chunks
    ndim = len(chunk_shape)
    lo = np.array([cells[:, d].min() for d in range(ndim)], dtype=np.int64)
    extent = np.array([cells[:, d].max() for d in range(ndim)], dtype=np.int64) - lo + 1
    if float(np.prod(extent.astype(np.float64))) >= 2.0**62:  # keys would overflow
        uniq, inverse = np.unique(cells, axis=0, return_inverse=True)
        return [block_prefix("v", b) for b in uniq], inverse.ravel().astype(np.int64)
    # one C-order integer key per block: sorting keys sorts block coords lexicographically
    key = np.zeros(len(cells), dtype=np.int64)
    for d in range(ndim):
        key *= extent[d]
        key += cells[:, d] - lo[d]
    keys, inverse = _dense_unique(key, int(np.prod(extent)))
    uniq = np.stack(np.unravel_index(keys, tuple(extent.tolist())), axis=1) + lo
    return [block_prefix("v", b) for b in uniq], inverse


def _dense_unique(key: IntArray, size: int) -> tuple[IntArray, IntArray]:
    """``np.unique(key, return_inverse=True)`` for keys in ``0..size-1``.

    With no more possible keys than rows, one count over the key range replaces the sort
    (numpy's unique sorts, or hashes, all rows, which costs more than one counting pass).
    """
    if size > max(len(key), 1 << 16):
        keys, inverse = np.unique(key, return_inverse=True)
        return keys, inverse.ravel().astype(np.int64)
    present = np.bincount(key, minlength=size) > 0
    rank = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present), rank[key]


def _members(group: IntArray, n_groups: int) -> list[IntArray]:
    """Rows of each group, ascending (one stable sort instead of a scan per group)."""
    order = sort_order([group], [n_groups])
    bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
    return [order[a:b] for a, b in itertools.pairwise(bounds.tolist())]


def _occurrence(keys: npt.NDArray[Any]) -> tuple[IntArray, npt.NDArray[Any], IntArray]:
    """Index of each row among rows with the same key, plus distinct keys and their counts."""
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    if len(sk) == 0:
        return np.zeros(0, np.int64), sk, np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    counts = np.diff(np.append(starts, len(sk)))
    occ = np.empty(len(sk), dtype=np.int64)
    occ[order] = np.arange(len(sk)) - np.repeat(starts, counts)
    return occ, sk[starts], counts.astype(np.int64)


def spill_batch(
    directory: str | Path,
    batch: int,
    parts: GeometryParts,
    *,
    chunk_shape: tuple[float, ...],
    partition_chunks: int,
    user_ids: npt.NDArray[Any] | None = None,
    object_ids: npt.NDArray[Any] | None = None,
) -> BatchSummary:
    """Write one batch's vertices and links to ``directory``; return its summary.

    ``user_ids`` are per-vertex user object ids (point clouds, whose objects may span
    batches); ``object_ids`` are per-object user ids of the batch's objects.
    """
    root = Path(directory)
    pos = parts.positions
    n, d = pos.shape
    if len(chunk_shape) != d:
        raise InvalidInputError(f"positions have {d} columns, chunk_shape has {len(chunk_shape)}")
    if object_ids is not None and len(object_ids) != parts.n_objects:
        raise InvalidInputError(f"ids has {len(object_ids)} entries for {parts.n_objects} objects")
    prefixes, block = _blocks(pos, chunk_shape, partition_chunks)
    fields: dict[str, npt.NDArray[Any] | None] = {
        "pos": pos,
        "lidx": np.arange(n, dtype=np.int64),
        "obj": parts.vertex_objects if user_ids is None else user_ids,
    }
    counts = uid_table = None
    vertex_obj = parts.vertex_objects
    if vertex_obj is not None:
        keys = vertex_obj if user_ids is None else user_ids
        fields["occ"], uniq, per_key = _occurrence(keys)
        if user_ids is None:
            counts = np.bincount(vertex_obj, minlength=parts.n_objects).astype(np.int64)
        else:
            uid_table = (uniq, per_key)
    for name, col in parts.vertex_attributes.items():
        fields[f"a_{name}"] = col.values
    spilled: dict[str, int] = {}
    row_bytes = pos.itemsize * d + 8 * 3
    for prefix, sel in zip(prefixes, _members(block, len(prefixes)), strict=True):
        _save_fields(root / prefix, batch, fields, sel)
        spilled[prefix] = int(sel.size * row_bytes)
    if parts.links is not None and len(parts.links):
        owner = block[parts.links[:, 0]]
        link_fields: dict[str, npt.NDArray[Any] | None] = {"ends": parts.links}
        for name, col in parts.link_attributes.items():
            link_fields[f"a_{name}"] = col.values
        for i, sel in enumerate(_members(owner, len(prefixes))):
            if sel.size == 0:
                continue
            prefix = "l" + prefixes[i][1:]
            _save_fields(root / prefix, batch, link_fields, sel)
            spilled[prefix] = int(sel.size * 8 * parts.links.shape[1])
    return BatchSummary(
        batch=batch,
        n_vertices=n,
        n_objects=parts.n_objects if user_ids is None else 0,
        lo=tuple(float(pos[:, i].min()) for i in range(d)) if n else None,
        hi=tuple(float(pos[:, i].max()) for i in range(d)) if n else None,
        dtype=pos.dtype.str,
        ndim=d,
        has_objects=parts.has_objects,
        arity=0 if parts.links is None else int(parts.links.shape[1]),
        attributes={k: ColumnInfo.of(c) for k, c in parts.vertex_attributes.items()},
        link_attributes={k: ColumnInfo.of(c) for k, c in parts.link_attributes.items()},
        object_counts=counts,
        uid_table=uid_table,
        object_attributes=dict(parts.object_attributes),
        object_ids=None if object_ids is None else np.asarray(object_ids),
        groups=parts.groups,
        spilled=spilled,
    )


def _save_fields(
    folder: Path, batch: int, fields: Mapping[str, npt.NDArray[Any] | None], sel: IntArray
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for key, values in fields.items():
        if values is not None:
            np.save(folder / f"b{batch:09d}_{key}.npy", take_rows(values, sel), allow_pickle=False)
