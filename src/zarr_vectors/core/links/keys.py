"""Vertex keys and stored links as keys (FORMAT.md §6–§8).

A vertex key numbers a stored row across chunks (``key = start of its chunk + row``); a link,
local (``links``) or cross-chunk (``cross_chunk_links``), becomes a pair of keys, checked to name
stored rows.  Edges are sorted by ``(source, target)`` through one packed int64 key each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.ragged import concat_ranges, offsets_from_counts, sort_keys
from zarr_vectors.core.reader import LevelReader, RowBlock, check_link_rows
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.spec import layout as L

__all__ = [
    "KeySpace",
    "edge_keys",
    "edges_between",
    "effective_runs",
    "first_appearance",
    "flat_chunks",
    "locate",
    "sorted_by_key",
    "sorted_edges",
    "sorted_unique",
    "take_column",
    "take_rows",
]

IntArray = npt.NDArray[np.int64]


def sorted_unique(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Sorted distinct values, by sorting (numpy 2.4's hashing ``np.unique`` is much slower).

    Examples
    --------
    >>> sorted_unique(np.array([3, 1, 3])).tolist()
    [1, 3]
    """
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


def first_appearance(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Distinct values in order of first appearance.

    Examples
    --------
    >>> first_appearance(np.array([5, 2, 5, 7, 2])).tolist()
    [5, 2, 7]
    """
    if values.size == 0:
        return values.copy()
    if bool(np.all(values[1:] >= values[:-1])):  # sorted: no sort
        return values[np.concatenate(([True], values[1:] != values[:-1]))]
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
    return ranked[starts][np.argsort(order[starts])]


@dataclass(frozen=True)
class KeySpace:
    """Vertex keys ``key = base[slot[chunk]] + row`` for the rows of some chunks.

    :meth:`of` numbers every stored vertex of a level (``slot`` is the identity);
    :meth:`fetched` numbers only the rows of some chunks, by their concatenation (``RowBlock``
    order), so keys are compact row indices and rows of other chunks have no key (-1).
    """

    base: IntArray
    """(n_slots + 1,) first key of each slot's rows, and the number of keys."""
    counts: IntArray
    """Rows of every chunk of the level."""
    slot: IntArray | None = None
    """Slot of every chunk of the level, -1 outside the space; None: the chunk itself."""

    @classmethod
    def of(cls, reader: LevelReader) -> KeySpace:
        """Keys of every stored vertex of the level, chunk by chunk in flat order."""
        counts = reader.vertex_counts
        return cls(offsets_from_counts(counts), counts)

    @classmethod
    def fetched(cls, reader: LevelReader, flats: IntArray) -> KeySpace:
        """Keys ``0..n-1`` for the rows of chunks ``flats`` (ascending), in concatenation order."""
        counts = reader.vertex_counts
        slot = np.full(len(counts), -1, dtype=np.int64)
        slot[flats] = np.arange(len(flats), dtype=np.int64)
        return cls(offsets_from_counts(counts[flats]), counts, slot)

    @property
    def size(self) -> int:
        """Number of keys."""
        return int(self.base[-1])

    def keys_of(self, flats: IntArray) -> IntArray:
        """Keys of every row of ``flats`` (level space), in their concatenation order."""
        return concat_ranges(self.base[flats], self.counts[flats])

    def flat_of(self, keys: IntArray) -> IntArray:
        """Chunk (flat index) holding each key (level space)."""
        return (np.searchsorted(self.base, keys, side="right") - 1).astype(np.int64)

    def start(self, flats: IntArray) -> IntArray:
        """First key of each chunk of ``flats``; -1 for chunks outside the space."""
        if self.slot is None:
            return self.base[flats]
        s = self.slot[flats]
        return np.where(s >= 0, self.base[s], -1)

    def local_keys(self, flats: IntArray, block: RowBlock) -> IntArray:
        """``links`` rows of chunks ``flats`` (inside the space) as keys, checking they exist."""
        rows = block.values if block.values.dtype.kind == "i" else block.values.astype(np.int64)
        if rows.shape[1] != 2:
            raise CorruptPayloadError(f"{L.LINKS} rows have width {rows.shape[1]}, expected 2")
        check_link_rows(rows, block.offsets, self.counts[flats], L.LINKS)
        keys = rows.astype(np.int64)
        keys += np.repeat(self.start(flats), np.diff(block.offsets))[:, None]
        return keys

    def cross_keys(self, reader: LevelReader, cross: npt.NDArray[Any], arity: int = 2) -> IntArray:
        """``cross_chunk_links`` records as keys (-1: endpoint outside the space), checked.

        ``arity`` endpoints per record: 2 for edges, 3 for triangles.
        """
        d = reader.layout.ndim
        if cross.shape[1] != arity * (d + 1):
            what = "edges" if arity == 2 else f"{arity} endpoints"
            raise CorruptPayloadError(
                f"{L.CROSS_CHUNK_LINKS} rows have width {cross.shape[1]}, "
                f"expected {arity * (d + 1)} for {what}"
            )
        cols = np.ascontiguousarray(cross.T, dtype=np.int64)  # one pass, then contiguous columns
        out = np.empty((arity, len(cross)), dtype=np.int64)
        for j in range(arity):
            flat = flat_chunks(reader, cols[j * (d + 1) : j * (d + 1) + d].T)
            row = cols[j * (d + 1) + d]
            if (row.view(np.uint64) >= self.counts[flat].view(np.uint64)).any():  # -1 wraps: big
                raise CorruptPayloadError(
                    f"{L.CROSS_CHUNK_LINKS}: a link names a row outside its chunk"
                )
            start = self.start(flat)
            np.add(start, row, out=out[j])
            out[j][start < 0] = -1
        return out.T  # (E, arity) view of the (arity, E) keys


def flat_chunks(reader: LevelReader, coords: IntArray) -> IntArray:
    """Flat index of chunk coordinates (C order), raising for a chunk outside the grid."""
    grid = reader.layout.grid
    flat = np.zeros(len(coords), dtype=np.int64)
    for axis, (lo, n) in enumerate(zip(grid.origin, grid.shape, strict=True)):
        idx = coords[:, axis] - int(lo)
        if (idx.view(np.uint64) >= int(n)).any():  # negative indices wrap: too big
            raise CorruptPayloadError(
                f"{L.CROSS_CHUNK_LINKS}: an endpoint chunk is outside the chunk grid"
            )
        flat *= int(n)
        flat += idx
    return flat


def edge_keys(
    reader: LevelReader, ks: KeySpace, local: IntArray, cross: IntArray, names: Sequence[str]
) -> tuple[IntArray, dict[str, Column]]:
    """Edges stored in chunks ``local`` (``links``) and ``cross`` (``cross_chunk_links``) as keys."""
    pieces: list[IntArray] = []
    cols: dict[str, list[Column]] = {n: [] for n in names}
    if reader.has(L.LINKS):  # also with no chunks: empty columns keep their dtype
        block = reader.rows(L.LINKS, local)
        pieces.append(ks.local_keys(local, block))
        for n in names:
            cols[n].append(reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", local, block))
    if reader.has(L.CROSS_CHUNK_LINKS):
        cross_block = reader.rows(L.CROSS_CHUNK_LINKS, cross)
        pieces.append(ks.cross_keys(reader, cross_block.values))
        for n in names:
            path = f"{L.CROSS_CHUNK_LINK_ATTRIBUTES}/{n}"
            cols[n].append(reader.aligned_column(path, cross, cross_block))
    if len(pieces) == 1:  # no copy
        keys = pieces[0]
    else:
        keys = np.concatenate(pieces) if pieces else np.zeros((0, 2), dtype=np.int64)
    attrs = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    return keys, attrs


def locate(keys: IntArray, wanted: IntArray) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """Index of each ``keys`` entry in ``wanted`` (unique keys) and whether it is there."""
    if wanted.size == 0:
        return np.zeros(keys.shape, dtype=np.int64), np.zeros(keys.shape, dtype=bool)
    lo, span = int(wanted.min()), int(wanted.max() - wanted.min()) + 1
    if span <= 16 * keys.size + 4 * wanted.size + 4096:  # O(span) table beats a binary search
        table = np.full(span + 1, -1, dtype=np.int64)  # the last entry answers keys outside
        table[wanted - lo] = np.arange(wanted.size, dtype=np.int64)
        rel = keys - lo
        rel[(rel < 0) | (rel >= span)] = span
        idx = np.take(table, rel)
        return np.maximum(idx, 0), idx >= 0
    order = np.argsort(wanted)
    ranked = wanted[order]
    pos = np.minimum(np.searchsorted(ranked, keys), len(ranked) - 1)
    return order[pos].astype(np.int64), ranked[pos] == keys


def edges_between(
    keys: IntArray,
    attrs: dict[str, Column],
    vertex_keys: IntArray,
) -> tuple[IntArray, dict[str, Column]]:
    """Edges whose two ends are among ``vertex_keys``, as indices into it."""
    idx, hit = locate(keys, vertex_keys)
    keep = np.flatnonzero(hit[:, 0] & hit[:, 1])  # cheaper than hit.all(axis=1)
    return take_rows(idx, keep), {k: take_column(c, keep) for k, c in attrs.items()}


def take_rows(values: npt.NDArray[Any], index: IntArray) -> npt.NDArray[Any]:
    """Rows ``index`` of ``values`` (``np.take``: faster than ``values[index]`` for 2-D).

    Examples
    --------
    >>> take_rows(np.arange(6).reshape(3, 2), np.array([2, 0])).tolist()
    [[4, 5], [0, 1]]
    """
    return np.take(values, index, axis=0)


def take_column(col: Column, index: IntArray) -> Column:
    """Rows ``index`` of a column, categories kept (as :meth:`Column.take`, via ``np.take``)."""
    return Column(take_rows(col.values, index), col.categories)


def effective_runs(key: IntArray) -> int:
    """Count the equal ascending runs that cost a merge sort as much as ``key``'s runs.

    ``2 ** H`` for ``H`` the entropy of the run lengths (1 when ``key`` is sorted): a few
    long runs plus many short ones (chunk-ordered local links, then cross-chunk links) count
    as few, so they merge (timsort, cheaper there) instead of being bucketed.

    Examples
    --------
    >>> effective_runs(np.array([1, 2, 3, 0, 1, 2]))
    2
    >>> effective_runs(np.arange(5))
    1
    """
    cuts = np.flatnonzero(key[1:] < key[:-1])
    if cuts.size == 0:
        return 1
    if 4 * cuts.size > len(key):  # mostly short runs: the count is as good
        return int(cuts.size) + 1
    lengths = np.diff(cuts, prepend=-1, append=len(key) - 1) / len(key)
    return max(2, round(float(2.0 ** -(lengths * np.log2(lengths)).sum())))


def sorted_by_key(
    key: IntArray, bits: int, attrs: dict[str, Column], edges: IntArray | None = None
) -> tuple[IntArray, dict[str, Column]]:
    """Edges ``(key >> bits, key & mask)`` sorted by key (consumed), attributes along.

    ``edges``, when given, are the same edges unpacked: returned as they are when the keys are
    sorted already.
    """
    runs = effective_runs(key)
    if runs == 1 and edges is not None:
        return edges, attrs
    order: IntArray | None = None
    if runs > 1:
        key, order = sort_keys(key, bool(attrs), runs)
    out = np.empty((len(key), 2), dtype=np.int64)
    np.right_shift(key, bits, out=out[:, 0])
    np.bitwise_and(key, (1 << bits) - 1, out=out[:, 1])
    if order is None:
        return out, attrs
    return out, {k: take_column(c, order) for k, c in attrs.items()}


def sorted_edges(
    edges: IntArray, attrs: dict[str, Column], n_vertices: int
) -> tuple[IntArray, dict[str, Column]]:
    """Edges sorted by ``(source, target)`` (indices below ``n_vertices``), attributes along."""
    if len(edges) == 0:
        return edges, attrs
    bits = max(n_vertices - 1, 1).bit_length()
    key = edges[:, 0] << bits
    key |= edges[:, 1]
    return sorted_by_key(key, bits, attrs, edges)
