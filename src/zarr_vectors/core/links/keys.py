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
from zarr_vectors.spec.typespec import type_spec

__all__ = [
    "KeySpace",
    "LinkBlock",
    "chunk_links",
    "edge_keys",
    "edges_between",
    "effective_runs",
    "endpoint_error",
    "first_appearance",
    "flat_chunks",
    "locate",
    "sort_packed",
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

    def local_keys(
        self, reader: LevelReader, flats: IntArray, block: RowBlock, arity: int = 2
    ) -> IntArray:
        """``links`` rows of chunks ``flats`` (inside the space) as keys, checking they exist."""
        rows = block.values if block.values.dtype.kind == "i" else block.values.astype(np.int64)
        where = f"{reader.group.path}/{L.LINKS}"
        if rows.shape[1] != arity:
            raise CorruptPayloadError(f"{where}: rows have width {rows.shape[1]}, expected {arity}")
        check_link_rows(rows, block.offsets, self.counts[flats], where)
        keys = rows.astype(np.int64)
        keys += np.repeat(self.start(flats), np.diff(block.offsets))[:, None]
        return keys

    def cross_keys(
        self, reader: LevelReader, flats: IntArray, block: RowBlock, arity: int = 2
    ) -> IntArray:
        """``cross_chunk_links`` rows of chunks ``flats`` as keys (-1: endpoint outside the space).

        ``arity`` endpoints per record: 2 for edges, 3 for triangles.  Every endpoint is checked
        to name a stored row; the error names the chunk, record and endpoint that does not.
        """
        cross, d = block.values, reader.layout.ndim
        if cross.shape[1] != arity * (d + 1):
            raise CorruptPayloadError(
                f"{reader.group.path}/{L.CROSS_CHUNK_LINKS}: rows have width {cross.shape[1]}, "
                f"expected {arity} endpoints of {d + 1} values"
            )
        cols = np.ascontiguousarray(cross.T, dtype=np.int64)  # one pass, then contiguous columns
        out = np.empty((arity, len(cross)), dtype=np.int64)
        for j in range(arity):
            flat = flat_chunks(reader, cols[j * (d + 1) : j * (d + 1) + d])
            row = cols[j * (d + 1) + d]
            # -1 wraps to a big unsigned value: one comparison checks both bounds
            if flat is None or (row.view(np.uint64) >= self.counts[flat].view(np.uint64)).any():
                raise endpoint_error(reader, flats, block, cols, j)
            start = self.start(flat)
            np.add(start, row, out=out[j])
            out[j][start < 0] = -1
        return out.T  # (E, arity) view of the (arity, E) keys


def flat_chunks(reader: LevelReader, coords: IntArray) -> IntArray | None:
    """Flat index (C order) of chunk coordinates ``coords`` (D, E); None if one is off the grid."""
    grid = reader.layout.grid
    flat = np.zeros(coords.shape[1], dtype=np.int64)
    for axis, (lo, n) in enumerate(zip(grid.origin, grid.shape, strict=True)):
        idx = coords[axis] - int(lo)
        if (idx.view(np.uint64) >= int(n)).any():  # negative indices wrap: too big
            return None
        flat *= int(n)
        flat += idx
    return flat


def endpoint_error(
    reader: LevelReader, flats: IntArray, block: RowBlock, cols: IntArray, j: int
) -> CorruptPayloadError:
    """Build the error for the first record of ``block`` whose endpoint ``j`` names no row.

    ``cols`` (k * (D + 1), E) are the records' columns; the error names the chunk of ``flats``
    the record is stored in, its place there and the endpoint.
    """
    d, grid = reader.layout.ndim, reader.layout.grid
    idx = cols[j * (d + 1) : j * (d + 1) + d].T - np.asarray(grid.origin)
    inside = np.all((idx >= 0) & (idx < np.asarray(grid.shape)), axis=1)
    flat = np.zeros(len(idx), dtype=np.int64)
    flat[inside] = np.ravel_multi_index(tuple(idx[inside].T), grid.shape)
    row = cols[j * (d + 1) + d]
    bad = ~inside | (row < 0) | (row >= reader.vertex_counts[flat])
    rec = int(np.argmax(bad))
    i = int(np.searchsorted(block.offsets, rec, side="right") - 1)
    chunk = reader.layout.coords_of_flat(flats[i : i + 1])[0].tolist()
    why = "a row outside its chunk" if inside[rec] else "a chunk outside the chunk grid"
    return CorruptPayloadError(
        f"{reader.group.path}/{L.CROSS_CHUNK_LINKS} chunk {chunk}: record "
        f"{rec - int(block.offsets[i])} endpoint {j} names {why}"
    )


def edge_keys(
    reader: LevelReader,
    ks: KeySpace,
    local: IntArray,
    cross: IntArray,
    names: Sequence[str],
    arity: int = 2,
) -> tuple[IntArray, dict[str, Column]]:
    """Links stored in chunks ``local`` (``links``) and ``cross`` (``cross_chunk_links``) as keys.

    ``arity`` endpoints per link; attributes ``names`` come aligned with the links.
    """
    pieces: list[IntArray] = []
    cols: dict[str, list[Column]] = {n: [] for n in names}
    if reader.has(L.LINKS):  # also with no chunks: empty columns keep their dtype
        block = reader.rows(L.LINKS, local)
        pieces.append(ks.local_keys(reader, local, block, arity))
        for n in names:
            cols[n].append(reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", local, block))
    if reader.has(L.CROSS_CHUNK_LINKS):
        cross_block = reader.rows(L.CROSS_CHUNK_LINKS, cross)
        pieces.append(ks.cross_keys(reader, cross, cross_block, arity))
        for n in names:
            path = f"{L.CROSS_CHUNK_LINK_ATTRIBUTES}/{n}"
            if reader.has(path) or len(cross_block.values):  # none written without records
                cols[n].append(reader.aligned_column(path, cross, cross_block))
    if len(pieces) == 1:  # no copy
        keys = pieces[0]
    else:
        keys = np.concatenate(pieces) if pieces else np.zeros((0, arity), dtype=np.int64)
    attrs = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    return keys, attrs


@dataclass(frozen=True)
class LinkBlock:
    """Links of some chunks with endpoints as indices into the chunks' concatenated rows."""

    ends: IntArray
    """(L, k) endpoint rows; -1 where the endpoint's chunk was not fetched."""
    attributes: dict[str, Column]
    """Link attributes aligned with ``ends``."""


def chunk_links(reader: LevelReader, flats: IntArray, names: Sequence[str] = ()) -> LinkBlock:
    """Links stored in chunks ``flats``, endpoints as rows of the ``flats`` concatenation.

    Local links come from ``links``, cross-chunk links from ``cross_chunk_links`` (stored in
    the chunk of endpoint 0); an endpoint in a chunk outside ``flats`` is -1.  The type's link
    arity gives the endpoints per link.  Link attributes ``names`` come aligned with the links.
    """
    arity = type_spec(reader.meta.geometry_type).link_arity
    ends, attrs = edge_keys(reader, KeySpace.fetched(reader, flats), flats, flats, names, arity)
    return LinkBlock(ends, attrs)


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
        key, order = sort_packed(key, bool(attrs), runs)
    out = np.empty((len(key), 2), dtype=np.int64)
    np.right_shift(key, bits, out=out[:, 0])
    np.bitwise_and(key, (1 << bits) - 1, out=out[:, 1])
    if order is None:
        return out, attrs
    return out, {k: take_column(c, order) for k, c in attrs.items()}


MERGED_RUNS = 4
"""Effective runs (:func:`effective_runs`) up to which edge keys are merged by timsort;
beyond, numpy's default sort (vectorised quicksort) costs less, whatever the runs."""


def sort_packed(key: IntArray, with_order: bool, runs: int) -> tuple[IntArray, IntArray | None]:
    """Sort non-negative ``key`` (consumed) in ``runs`` effective runs, and the permutation.

    :func:`~zarr_vectors.core.ragged.sort_keys`, with numpy's unstable default sort where
    it is exact: on values alone (equal keys are equal values) and on keys made distinct by
    their position in the low bits (the permutation rides along, in input order for ties).
    """
    n = len(key)
    if runs <= MERGED_RUNS:
        return sort_keys(key, with_order, runs)
    if not with_order:
        key.sort()
        return key, None
    bits = max(n - 1, 1).bit_length()
    if int(key.max()) >= (1 << (63 - bits)):  # no spare bits for the positions
        return sort_keys(key, with_order, runs)
    key <<= bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    order = key & ((1 << bits) - 1)
    key >>= bits
    return key, order


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
