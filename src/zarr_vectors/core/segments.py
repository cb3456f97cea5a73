"""Append segments of a level: new rows of a chunk kept beside its stored payload.

A level whose group attributes list ``segments`` (ascending integers) holds, besides its own
per-chunk arrays (the *base*), one group ``segments/<n>`` per append, each with per-chunk
arrays of the same names, shapes and row formats holding only the rows that append added to a
chunk.  The rows of a chunk are the rows of its base and of every listed segment, merged:

- object types (and point clouds with objects): the base rows, then each segment's, in list
  order.  Row numbers inside segment rows (fragment starts, chunk-local links, cross-chunk
  endpoint rows) are already in the merged chunk's numbering;
- point clouds without objects: a fresh write orders a chunk's rows by bin, so the rows of the
  parts (base, then segments, in order) are stably sorted by bin.  Fragment starts are local
  to their part; the merged ``vertex_fragments`` are the runs of equal bin of the merged rows.

Dense arrays (``vertex_counts``, the object index, statistics) always describe the merged
level.  See docs/spec.md, "Append segments".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import offsets_from_counts
from zarr_vectors.errors import CorruptPayloadError, MetadataValidationError
from zarr_vectors.spec import layout as L

__all__ = [
    "SEGMENTS",
    "is_segment_path",
    "listed_segments",
    "merge_rows",
    "segment_path",
]

SEGMENTS = "segments"
"""Level attribute listing the committed segments, and the group holding them."""

IntArray = npt.NDArray[np.int64]
Rows = tuple[npt.NDArray[Any], IntArray]
"""(rows, CSR offsets over the requested chunks)."""

_SLICE_COPY_LIMIT = 4096
"""Up to this many (chunk, part) pieces the merge copies slices; above, one gather per part."""


def segment_path(segment: int, path: str) -> str:
    """Path inside the level group of array ``path`` of segment ``segment``."""
    return f"{SEGMENTS}/{segment}/{path}"


def is_segment_path(path: str) -> bool:
    """Whether ``path`` (inside a level group) lies in a segment group."""
    return path.startswith(SEGMENTS + "/")


def listed_segments(attrs: Mapping[str, Any], where: str) -> tuple[int, ...]:
    """Return the segments a level's attributes list (empty when none).

    Raises
    ------
    MetadataValidationError
        ``segments`` is not a list of ascending non-negative integers.
    """
    raw = attrs.get(SEGMENTS)
    if raw is None:
        return ()
    ok = isinstance(raw, list) and all(type(v) is int and v >= 0 for v in raw)
    if not ok or any(b <= a for a, b in pairwise(raw)):
        raise MetadataValidationError(
            f"level {where}: attribute 'segments' must be a list of ascending non-negative "
            f"integers, got {raw!r}"
        )
    return tuple(raw)


def _concat_by_chunk(blocks: list[Rows]) -> Rows:
    """Per chunk: the rows of each block in turn (all CSR over the same chunks)."""
    live = [(v, o) for v, o in blocks if len(v)]
    counts = [np.diff(o) for _, o in blocks]
    out_off = offsets_from_counts(np.sum(counts, axis=0))
    if len(live) <= 1:
        values = live[0][0] if live else blocks[0][0]
        return values, out_off
    first = live[0][0]
    out = np.empty((int(out_off[-1]), *first.shape[1:]), dtype=first.dtype)
    start = out_off[:-1].copy()
    n_chunks = len(out_off) - 1
    for values, off in blocks:
        n = np.diff(off)
        if n_chunks * len(blocks) <= _SLICE_COPY_LIMIT:
            for s, a, b in zip(start.tolist(), off[:-1].tolist(), off[1:].tolist(), strict=True):
                out[s : s + b - a] = values[a:b]
        elif len(values):
            dest = np.repeat(start - off[:-1], n) + np.arange(len(values), dtype=np.int64)
            out[dest] = values
        start += n
    return out, out_off


@dataclass(frozen=True)
class BinMerge:
    """Where the segment rows of bin-ordered chunks go among the base rows."""

    at: IntArray
    """Base row before which each (sorted) segment row is inserted."""
    order: IntArray
    """Order of the part-major segment rows that sorts them by (chunk, bin), stably."""
    bins: IntArray
    """Bin of every merged row."""
    offsets: IntArray
    """Merged CSR offsets over the chunks."""
    base_rows: IntArray
    """Merged row of every base row."""
    segment_rows: IntArray
    """Merged row of every sorted segment row."""

    def apply(self, base: npt.NDArray[Any], segments: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Merge rows of the base and (part-major) segment rows of one array."""
        out = np.empty((len(base) + len(segments), *base.shape[1:]), dtype=base.dtype)
        width = int(np.prod(base.shape[1:], dtype=np.int64))
        if not len(out) or not width:
            return out
        row = np.dtype((np.void, base.dtype.itemsize * width))

        def items(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            return np.ascontiguousarray(a).reshape(len(a), width).view(row)[:, 0]

        # rows as opaque items: one scatter per part, whatever the row width
        flat = out.reshape(len(out), width).view(row)[:, 0]
        flat[self.base_rows] = items(base)
        flat[self.segment_rows] = items(segments[self.order])
        return out


def _row_keys(frags: Rows) -> tuple[IntArray, IntArray]:
    """(chunk position, bin) of every row of a part, from its fragments."""
    values, off = frags
    table = values.reshape(-1, 4).astype(np.int64, copy=False)
    owner = np.repeat(np.arange(len(off) - 1, dtype=np.int64), np.diff(off))
    return np.repeat(owner, table[:, 3]), np.repeat(table[:, 0], table[:, 3])


def bin_merge(frags: list[Rows]) -> BinMerge:
    """Plan the stable merge by (chunk, bin) of the base (``frags[0]``) and segment rows.

    Each part's rows are sorted by (chunk, bin) already, so the segment rows (few) are sorted
    stably among themselves and inserted after the base rows of equal key.
    """
    keys = [_row_keys(f) for f in frags]
    span = max((int(b.max()) + 1 for _, b in keys if len(b)), default=1)
    base = keys[0][0] * span + keys[0][1]
    seg_chunk = np.concatenate([c for c, _ in keys[1:]])
    seg_bin = np.concatenate([b for _, b in keys[1:]])
    order = np.argsort(seg_chunk * span + seg_bin, kind="stable").astype(np.int64)
    at = np.searchsorted(base, (seg_chunk * span + seg_bin)[order], side="right")
    n_chunks = len(frags[0][1]) - 1
    counts = np.bincount(keys[0][0], minlength=n_chunks) + np.bincount(
        seg_chunk, minlength=n_chunks
    )
    at = at.astype(np.int64)
    seg_rows = at + np.arange(len(at), dtype=np.int64)
    n = len(base)
    # segment rows inserted at or before each base row shift it
    base_rows = np.arange(n, dtype=np.int64) + np.cumsum(np.bincount(at, minlength=n + 1))[:n]
    bins = np.empty(n + len(at), dtype=np.int64)
    bins[base_rows] = keys[0][1]
    bins[seg_rows] = seg_bin[order]
    return BinMerge(
        at, order, bins, offsets_from_counts(counts.astype(np.int64)), base_rows, seg_rows
    )


def _fragments_of(bins: IntArray, offsets: IntArray) -> Rows:
    """``vertex_fragments`` rows (``[bin, -1, start, count]``) of bin-sorted merged rows."""
    n = len(bins)
    local = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], np.diff(offsets))
    new_run = np.ones(n, dtype=bool)
    if n:
        new_run[1:] = (bins[1:] != bins[:-1]) | (local[1:] == 0)
    starts = np.flatnonzero(new_run)
    counts = np.diff(np.append(starts, n))
    table = np.stack(
        [bins[starts], np.full(len(starts), -1), local[starts], counts], axis=1
    ).astype(np.int64)
    per_chunk = np.bincount(
        np.searchsorted(offsets, starts, side="right") - 1, minlength=len(offsets) - 1
    )
    return table, offsets_from_counts(per_chunk.astype(np.int64))


def merge_rows(
    path: str,
    segments: Sequence[int],
    read: Callable[[str], Rows | None],
    total: IntArray | None,
    by_bin: bool,
    memo: dict[str, object] | None = None,
) -> Rows:
    """Return the merged rows of ``path`` over some chunks.

    ``read(p)`` returns the rows of level array ``p`` over those chunks (None when the part
    lacks the array); ``total`` is their ``vertex_counts`` (None: not checked here);
    ``by_bin`` selects the point-cloud merge; ``memo`` keeps its plan for other arrays over
    the same chunks.

    Raises
    ------
    CorruptPayloadError
        The parts' vertex rows do not add up to ``vertex_counts``.
    """
    names = [path, *(segment_path(s, path) for s in segments)]
    blocks = [read(p) for p in names]
    present = [b for b in blocks if b is not None]
    if not present:
        raise CorruptPayloadError(f"no part of the level holds array {path}")
    n_chunks = len(present[0][1]) - 1
    empty = (present[0][0][:0], np.zeros(n_chunks + 1, dtype=np.int64))
    parts = [empty if b is None else b for b in blocks]
    if total is not None and (path == L.VERTICES or path.startswith(L.ATTRIBUTES + "/")):
        rows = np.sum([np.diff(o) for _, o in parts], axis=0)
        bad = np.flatnonzero(rows != total)
        if bad.size:
            raise CorruptPayloadError(
                f"{path}: a chunk's base and segment rows add up to {rows[bad[0]]}, "
                f"vertex_counts says {total[bad[0]]}"
            )
    if not by_bin:
        return _concat_by_chunk(parts)
    frag_names = [L.VERTEX_FRAGMENTS, *(segment_path(s, L.VERTEX_FRAGMENTS) for s in segments)]
    frag_blocks = [read(p) for p in frag_names]
    frags = [
        (np.zeros((0, 4), np.int64), np.zeros(n_chunks + 1, np.int64)) if f is None else f
        for f in frag_blocks
    ]
    plan = memo.get("bins") if memo is not None else None
    if not isinstance(plan, BinMerge):
        plan = bin_merge(frags)
        if memo is not None:
            memo["bins"] = plan
    if path == L.VERTEX_FRAGMENTS:
        return _fragments_of(plan.bins, plan.offsets)
    segs = np.concatenate([v for v, _ in parts[1:]])
    return plan.apply(parts[0][0], segs), plan.offsets
