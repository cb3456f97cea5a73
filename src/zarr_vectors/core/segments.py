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

_ROWS_PER_RUN = 256
"""Bin runs at least this long on average are copied slice by slice, shorter ones gathered."""

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
    """The merge of bin-ordered parts as runs: each a fragment of one part, in merged order."""

    part: list[int]
    """Part (0: base) of each run."""
    src: list[int]
    """First row of each run in its part's rows (all the requested chunks, in order)."""
    dst: list[int]
    """First merged row of each run."""
    length: list[int]
    """Rows of each run."""
    fragments: Rows
    """Merged ``vertex_fragments`` and their CSR offsets over the chunks."""
    offsets: IntArray
    """Merged CSR offsets of the rows over the chunks."""

    def apply(self, parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
        """Merge the rows of one array given per part (part-major, chunk order)."""
        first = parts[0]
        total = int(self.offsets[-1])
        if len(self.length) * _ROWS_PER_RUN > total:  # short runs: one gather beats the loop
            starts = offsets_from_counts(np.array([len(v) for v in parts], dtype=np.int64))
            src = starts[np.asarray(self.part, dtype=np.int64)] + np.asarray(self.src, np.int64)
            lengths = np.asarray(self.length, dtype=np.int64)
            shift = np.repeat(src - np.asarray(self.dst, dtype=np.int64), lengths)
            index = shift + np.arange(total, dtype=np.int64)
            return np.take(np.concatenate(parts), index, axis=0)
        out = np.empty((total, *first.shape[1:]), dtype=first.dtype)
        # one slice copy per run: long runs copy at memory speed
        for p, s, d, n in zip(self.part, self.src, self.dst, self.length, strict=True):
            out[d : d + n] = parts[p][s : s + n]
        return out


def _runs(frags: Rows, part: int) -> list[IntArray]:
    """(chunk, bin, part, source row, length) of each fragment of one part."""
    values, off = frags
    table = values.reshape(-1, 4).astype(np.int64, copy=False)
    n_chunks = len(off) - 1
    owner = np.repeat(np.arange(n_chunks, dtype=np.int64), np.diff(off))
    rows = np.bincount(owner, weights=table[:, 3], minlength=n_chunks).astype(np.int64)
    src = offsets_from_counts(rows)[:-1][owner] + table[:, 2]
    return [owner, table[:, 0], np.full(len(table), part, dtype=np.int64), src, table[:, 3]]


def bin_merge(frags: list[Rows]) -> BinMerge:
    """Plan the stable merge by (chunk, bin) of the base (``frags[0]``) and segment rows.

    Every part's rows are ordered by bin within each chunk, so the merged rows are the parts'
    fragments sorted by (chunk, bin, part): runs of rows copied whole.
    """
    cols = [
        np.concatenate(c) for c in zip(*(_runs(f, p) for p, f in enumerate(frags)), strict=True)
    ]
    chunk, bins, part, src, length = cols
    order = np.lexsort((part, bins, chunk))
    chunk, bins, part, src, length = (c[order] for c in cols)
    keep = length > 0
    chunk, bins, part, src, length = chunk[keep], bins[keep], part[keep], src[keep], length[keep]
    dst = offsets_from_counts(length)
    n_chunks = len(frags[0][1]) - 1
    counts = np.bincount(chunk, weights=length, minlength=n_chunks).astype(np.int64)
    offsets = offsets_from_counts(counts)
    new = np.ones(len(chunk), dtype=bool)
    new[1:] = (chunk[1:] != chunk[:-1]) | (bins[1:] != bins[:-1])
    heads = np.flatnonzero(new)
    sizes = np.add.reduceat(length, heads) if len(heads) else heads
    table = np.stack(
        [
            bins[heads],
            np.full(len(heads), -1),
            dst[:-1][heads] - offsets[chunk[heads]],
            sizes,
        ],
        axis=1,
    ).astype(np.int64)
    per_chunk = np.bincount(chunk[heads], minlength=n_chunks).astype(np.int64)
    return BinMerge(
        part.tolist(),
        src.tolist(),
        dst[:-1].tolist(),
        length.tolist(),
        (table, offsets_from_counts(per_chunk)),
        offsets,
    )


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
        return plan.fragments
    return plan.apply([v for v, _ in parts]), plan.offsets
