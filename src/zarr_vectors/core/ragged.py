"""Helpers for ragged data held as flat values plus CSR offsets (as in shapely and Arrow).

All functions are vectorised: no Python loop runs per row or per object.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "change_mask",
    "RangeOrder",
    "RowOrder",
    "as_index",
    "concat_ranges",
    "unique_sorted",
    "offsets_from_counts",
    "run_starts",
    "smallest_uint",
    "sort_keys",
    "sort_order",
]

IntArray = npt.NDArray[np.int64]


def offsets_from_counts(counts: npt.ArrayLike) -> IntArray:
    """Return CSR offsets (n+1,) from per-item counts.

    Examples
    --------
    >>> offsets_from_counts([2, 0, 3]).tolist()
    [0, 2, 2, 5]
    """
    c = np.asarray(counts, dtype=np.int64)
    out = np.zeros(c.size + 1, dtype=np.int64)
    np.cumsum(c, out=out[1:])
    return out


_EXPAND_BLOCK = 1 << 16
"""Values :func:`concat_ranges` adds an ``arange`` to at a time (the block stays in cache)."""


def concat_ranges(
    starts: npt.ArrayLike, counts: npt.ArrayLike, out: IntArray | None = None
) -> IntArray:
    """Return ``concatenate([arange(s, s + n) for s, n in zip(starts, counts)])``, vectorised.

    ``out`` (optional) receives the values: an int64 array of ``sum(counts)``.

    Examples
    --------
    >>> concat_ranges([10, 0], [3, 2]).tolist()
    [10, 11, 12, 0, 1]
    >>> concat_ranges([], []).tolist()
    []
    """
    s = np.asarray(starts, dtype=np.int64)
    n = np.asarray(counts, dtype=np.int64)
    first = offsets_from_counts(n)
    total = int(first[-1])
    # value at position p of range k is p + (s[k] - first[k]): one repeat of the shifts, then
    # the positions added a cache-sized block at a time (a running sum is a slower pass)
    shifts = np.repeat(s - first[:-1], n)
    if out is None:
        out = shifts
    for a in range(0, total, _EXPAND_BLOCK):
        b = min(total, a + _EXPAND_BLOCK)
        np.add(shifts[a:b], np.arange(a, b, dtype=np.int64), out=out[a:b])
    return out


class RangeOrder:
    """A permutation held as consecutive ranges: ``concat_ranges(starts, counts)``, unexpanded.

    Sorting the vertices of paths by chunk moves whole runs of consecutive rows, so the row
    order of a level is a few hundred thousand ranges where an expanded index would be tens of
    millions of int64 values.  Slices expand only their own part, so a writer gathering rows a
    batch at a time never holds (nor pays to fill) the whole index.

    Parameters
    ----------
    starts
        First value of each range.
    counts
        Length of each range (zero allowed).

    Examples
    --------
    >>> order = RangeOrder(np.array([10, 0, 5]), np.array([3, 2, 1]))
    >>> len(order), order[:].tolist(), order[2:5].tolist()
    (6, [10, 11, 12, 0, 1, 5], [12, 0, 1])
    """

    def __init__(self, starts: IntArray, counts: IntArray) -> None:
        self.starts = np.asarray(starts, dtype=np.int64)
        self.offsets = offsets_from_counts(counts)

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, key: slice) -> IntArray:
        """Expand positions ``key`` (a slice with step 1) of the permutation."""
        a, b, step = key.indices(len(self))
        if step != 1:
            raise ValueError("RangeOrder slices take no step")
        _, starts, counts = self.span(a, b)
        return concat_ranges(starts, counts)

    def span(self, a: int, b: int) -> tuple[int, IntArray, IntArray]:
        """Return the ranges covering positions ``a:b``, cut to them.

        Returns the index of the first range and the cut ranges' starts and counts (none
        when ``b <= a``).

        Examples
        --------
        >>> first, starts, counts = RangeOrder(np.array([10, 0, 5]), np.array([3, 2, 1])).span(2, 4)
        >>> first, starts.tolist(), counts.tolist()
        (0, [12, 0], [1, 1])
        """
        if b <= a:
            return 0, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        off = self.offsets
        first = int(np.searchsorted(off, a, side="right")) - 1  # range holding position a
        stop = int(np.searchsorted(off, b, side="left"))  # ranges first..stop-1 reach b
        starts = self.starts[first:stop].copy()
        counts = np.diff(off[first : stop + 1])
        skip = a - int(off[first])
        starts[0] += skip
        counts[0] -= skip
        counts[-1] -= int(off[stop]) - b
        return first, starts, counts

    def dense(self) -> IntArray:
        """Return the whole permutation expanded."""
        return self[:]


RowOrder = IntArray | RangeOrder
"""A level's row order: sorted row ``i`` holds input row ``order[i]``."""


def as_index(order: RowOrder) -> IntArray:
    """Return a row order as an index array (expanding a :class:`RangeOrder`)."""
    return order.dense() if isinstance(order, RangeOrder) else order


def unique_sorted(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Return the sorted distinct values of a 1-D array (like :func:`numpy.unique`).

    Sort-based: numpy 2.4's default ``np.unique`` takes a hash path that is much slower on
    large integer arrays.

    Examples
    --------
    >>> unique_sorted(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    if values.size == 0:
        return np.sort(values)
    s = np.sort(values, kind="stable")
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]


def run_starts(
    *keys: npt.NDArray[np.generic],
    extra: npt.NDArray[np.bool_] | None = None,
) -> IntArray:
    """Return indices where any of the equally long key arrays changes value (first is 0).

    ``extra`` marks further rows that start a run.

    Examples
    --------
    >>> run_starts(np.array([1, 1, 2, 2]), np.array([0, 1, 1, 1])).tolist()
    [0, 1, 2]
    """
    if len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(change_mask(*keys, extra=extra)).astype(np.int64, copy=False)


def change_mask(
    *keys: npt.NDArray[np.generic],
    extra: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.bool_]:
    """Return a mask that is True where any of the equally long key arrays changes value.

    The first row is True when there are rows; ``extra`` marks further True rows.  This is
    the mask whose true indices :func:`run_starts` returns.

    Examples
    --------
    >>> change_mask(np.array([1, 1, 2, 2]), np.array([0, 1, 1, 1])).tolist()
    [True, True, True, False]
    """
    n = len(keys[0])
    change = np.empty(n, dtype=bool)
    if n == 0:
        return change
    change[0] = True
    np.not_equal(keys[0][1:], keys[0][:-1], out=change[1:])
    for k in keys[1:]:
        change[1:] |= k[1:] != k[:-1]
    if extra is not None:
        change |= extra
    return change


def smallest_uint(n: int) -> type[np.integer[Any]]:
    """Return the narrowest of uint8, uint16 and int64 that holds ``0 .. n - 1``.

    Examples
    --------
    >>> smallest_uint(256), smallest_uint(257), smallest_uint(2**17)
    (<class 'numpy.uint8'>, <class 'numpy.uint16'>, <class 'numpy.int64'>)
    """
    return np.uint8 if n <= 2**8 else np.uint16 if n <= 2**16 else np.int64


def sort_order(keys: list[npt.NDArray[np.integer[Any]]], sizes: list[int]) -> IntArray:
    """Return the stable order sorting rows by ``keys`` (most significant first).

    Keys are non-negative integers below ``sizes``; they are packed into one int64 when the
    product of sizes fits, which is several times faster than :func:`numpy.lexsort`.

    Examples
    --------
    >>> sort_order([np.array([1, 0, 1]), np.array([0, 5, 0])], [2, 6]).tolist()
    [1, 0, 2]
    """
    if not keys or len(keys[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    total = 1
    for s in sizes:
        total *= max(int(s), 1)
    if total < 2**62:
        if len(keys) == 1:
            packed = keys[0]
        else:
            packed = np.zeros(len(keys[0]), dtype=np.int64)
            for k, s in zip(keys, sizes, strict=True):
                packed *= max(int(s), 1)
                packed += k
        if total <= 2**16:  # numpy's stable sort is a radix sort for 16-bit keys
            packed = packed.astype(np.uint16, copy=False)
        return np.argsort(packed, kind="stable").astype(np.int64, copy=False)
    return np.lexsort(tuple(reversed(keys))).astype(np.int64, copy=False)


_BUCKET_MIN = 2048
"""Keys (in many runs) from which a sort first buckets them by their top 16 bits."""
_PARALLEL_SORT = 1 << 20
"""Keys (in many runs) from which the two halves are sorted side by side in two threads."""


def sort_keys(key: IntArray, with_order: bool, runs: int) -> tuple[IntArray, IntArray | None]:
    """Sort non-negative int64 ``key`` (consumed), and the permutation when ``with_order``.

    ``runs`` is the number of ascending runs in ``key`` (see :func:`_sort_values`).  The
    permutation rides along in the low bits of the keys when they leave spare bits: a value
    sort is faster than ``np.argsort``.  Equal keys keep their input order.
    """
    n = len(key)
    if not with_order:
        return _sort_values(key, runs), None
    bits = max(n - 1, 1).bit_length()
    if int(key.max()) >= (1 << (63 - bits)):  # no spare bits: sort a permutation
        pre = _buckets(key) if runs > n // 1024 and n >= _BUCKET_MIN else None
        if pre is not None:
            key = np.take(key, pre)
        order = np.argsort(key, kind="stable")
        key = np.take(key, order)
        return key, order if pre is None else np.take(pre, order)
    key <<= bits
    key |= np.arange(n, dtype=np.int64)
    key = _sort_values(key, runs)
    order = key & ((1 << bits) - 1)
    key >>= bits
    return key, order


def _sort_values(key: IntArray, runs: int) -> IntArray:
    """Sorted values of non-negative int64 ``key`` (consumed) in ``runs`` ascending runs.

    A few long runs (edges stored chunk by chunk in order) merge in near-linear time
    (timsort, in place).  Many runs (edges in storage order) are first bucketed by their top
    16 bits (:func:`_buckets`); timsort then only repairs the order inside each small bucket,
    cheaper than a comparison sort of the whole array.  Big arrays sort their two halves in
    two threads (numpy releases the GIL) and merge the two sorted runs.
    """
    n = len(key)
    if runs <= n // 1024:
        part = _merged
    elif n < _BUCKET_MIN:
        key.sort()
        return key
    else:
        part = _bucket_sort
    if n < _PARALLEL_SORT:
        return part(key)
    half = n // 2
    with ThreadPoolExecutor(max_workers=1) as pool:
        upper = pool.submit(part, key[half:])
        lower, higher = part(key[:half]), upper.result()
    # timsort sorted the halves in place; bucket sorts returned copies
    out = key if part is _merged else np.concatenate([lower, higher])
    out.sort(kind="stable")  # two sorted runs: one linear merge
    return out


def _merged(key: IntArray) -> IntArray:
    """``key`` sorted in place by timsort (near-linear on a few long runs)."""
    key.sort(kind="stable")
    return key


def _buckets(key: IntArray) -> IntArray:
    """Permutation ordering non-negative ``key`` by its top 16 bits, stably.

    numpy sorts 16-bit keys by counting (radix sort), in linear time.
    """
    shift = max(int(key.max()).bit_length() - 16, 0)
    return np.argsort((key >> shift).astype(np.uint16), kind="stable")


def _bucket_sort(key: IntArray) -> IntArray:
    """Sorted copy of non-negative ``key``: bucketed by its top 16 bits, then timsorted."""
    out = np.take(key, _buckets(key))
    out.sort(kind="stable")
    return out
