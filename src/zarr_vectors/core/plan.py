"""Row planning: where every vertex and link of a level goes (FORMAT.md §2, §6, §7).

:func:`plan_level` sorts vertices into chunks once (sorting keys, not rows) and derives every
per-chunk table from that order: fragments, the object manifest, cross-chunk links and
chunk-local links.  Everything is vectorised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.gather import take_rows
from zarr_vectors.core.links.spans import LinkSpans
from zarr_vectors.core.ragged import (
    RangeOrder,
    RowOrder,
    as_index,
    change_mask,
    concat_ranges,
    offsets_from_counts,
    run_starts,
    smallest_uint,
    sort_keys,
    sort_order,
)
from zarr_vectors.errors import InvalidInputError

__all__ = [
    "FragmentRows",
    "FragmentTable",
    "GeometryParts",
    "LevelPlan",
    "LinkSpans",
    "FragmentHook",
    "OrderHook",
    "as_table",
    "grid_vertex_counts",
    "object_dtype",
    "plan_level",
]

IntArray = npt.NDArray[np.int64]
BinArray = npt.NDArray[np.integer[Any]]
"""Flat bin index per vertex (:attr:`ChunkLayout.bin_dtype`: usually uint8)."""
FlatArray = npt.NDArray[np.integer[Any]]
"""Flat chunk index per vertex (:attr:`ChunkLayout.flat_dtype`: usually uint16)."""

ObjectArray = npt.NDArray[np.int64 | np.int32]
"""Dense object id per vertex."""

OrderHook = Callable[[RowOrder, IntArray, IntArray], None]
"""Called with ``(order, chunks, chunk_offsets)`` of a level as soon as they are known."""

FragmentHook = Callable[["FragmentRows", IntArray, IntArray], None]
"""Called with ``(fragments, chunks, fragment_offsets)`` of a level as soon as they are known."""


def object_dtype(n_objects: int) -> type[np.int32 | np.int64]:
    """Dtype for dense per-vertex object ids: int32 when they fit (half an int64's memory).

    Examples
    --------
    >>> object_dtype(100_000), object_dtype(2**31 + 1)
    (<class 'numpy.int32'>, <class 'numpy.int64'>)
    """
    return np.int32 if n_objects <= 2**31 else np.int64


@dataclass(frozen=True, kw_only=True)
class GeometryParts:
    """A geometry type's data as flat arrays: what the core write pipeline consumes."""

    positions: npt.NDArray[np.floating]
    """(N, D) vertex positions, physical units."""
    vertex_object: ObjectArray | None = None
    """(N,) dense object id of each vertex (int64, or int32 to save memory), or None when
    vertices have no objects or ``object_offsets`` gives them (read :attr:`vertex_objects`)."""
    object_offsets: IntArray | None = None
    """(n_objects + 1,) CSR offsets when each object is one range of rows, in order (paths):
    planning then needs no per-vertex ids (``vertex_object`` may be None)."""
    n_objects: int = 0
    """Number of objects (ids 0..n_objects-1)."""
    ordered: bool = True
    """Rows keep input order within an object (paths, graphs); else sorted by bin (points)."""
    sequential: bool = False
    """Consecutive vertices of an object are connected (lines, polylines, streamlines)."""
    vertex_attributes: Mapping[str, Column] = field(default_factory=dict)
    """Per-vertex attributes, aligned with ``positions``."""
    links: IntArray | None = None
    """(L, k) explicit links (edges k=2, faces k=3) as global vertex indices."""
    link_attributes: Mapping[str, Column] = field(default_factory=dict)
    """Per-link attributes, aligned with ``links``."""
    link_spans: LinkSpans | None = None
    """Spans of ``links`` when the caller has them (the mesh input checks compute them):
    whole spans inside one run skip the per-link chunk lookup.  Used only when they describe
    this very ``links`` array."""
    object_attributes: Mapping[str, Column] = field(default_factory=dict)
    """Per-object attributes (n_objects rows)."""
    groups: GroupTable | None = None
    """Named groups of objects."""
    rank: IntArray | None = None
    """Traversal rank of each vertex when ``positions`` is a subset of a larger level
    (streaming); by default the rank in (object, input order) is computed here."""

    @property
    def has_objects(self) -> bool:
        """Whether vertices belong to objects."""
        return self.vertex_object is not None or self.object_offsets is not None

    @cached_property
    def vertex_objects(self) -> ObjectArray | None:
        """(N,) dense object id of each vertex (expanded from ``object_offsets`` if needed)."""
        if self.vertex_object is not None or self.object_offsets is None:
            return self.vertex_object
        counts = np.diff(self.object_offsets)
        return np.repeat(np.arange(self.n_objects, dtype=object_dtype(self.n_objects)), counts)


@dataclass(frozen=True)
class LinkPlan:
    """Links split into chunk-local and cross-chunk parts."""

    local_chunk: IntArray
    """Flat chunk index owning each local link, sorted ascending."""
    local_rows: npt.NDArray[np.int32]
    """(Ll, k) chunk-local vertex rows."""
    local_source: IntArray
    """Index of each local link in the input links (for link attributes)."""
    cross_chunk: IntArray
    """Flat chunk index owning each cross link (chunk of endpoint 0), sorted ascending."""
    cross_rows: IntArray
    """(Lc, k*(D+1)) ``[chunk coords..., row]`` per endpoint."""
    cross_source: IntArray
    """Index of each cross link in the input links, or -1 for implicit path joins."""


@dataclass(frozen=True)
class LevelPlan:
    """Where every row of a level goes."""

    order: RowOrder
    """Permutation: sorted row i holds input vertex ``order[i]`` (ranges for paths)."""
    chunks: IntArray
    """Flat indices of non-empty chunks, ascending."""
    chunk_offsets: IntArray
    """CSR offsets of each non-empty chunk's rows in sorted order."""
    vertex_counts: IntArray
    """Vertices per chunk over the whole grid (grid shape)."""
    fragments: FragmentRows
    """(F, 4) ``[bin_flat, object_id, start, count]`` rows, in sorted order (for paths cut
    at bins, a :class:`FragmentTable` built on demand; :func:`as_table` expands it)."""
    fragment_offsets: IntArray
    """CSR offsets of each non-empty chunk's fragments (``len(chunks) + 1``)."""
    manifest: IntArray
    """(R, D+2) ``[chunk coords..., start, count]`` refs, grouped by object in traversal order."""
    object_offsets: IntArray
    """(n_objects + 1,) CSR offsets into ``manifest``."""
    links: LinkPlan | None
    """Explicit and implicit links, or None."""
    ref_object: IntArray
    """Object of each manifest ref (rows of ``manifest``)."""
    ref_first_row: IntArray
    """Sorted row (index into ``order``) of each manifest ref's first vertex."""


@dataclass(frozen=True)
class _Refs:
    """Manifest refs (one object's consecutive rows in one chunk), in manifest order."""

    obj: IntArray
    """Object of each ref."""
    chunk: IntArray
    """Flat chunk index of each ref."""
    first: IntArray
    """Sorted row (index into ``order``) of each ref's first vertex."""
    row: IntArray
    """Row in its chunk of each ref's first vertex."""
    count: IntArray
    """Vertices in each ref."""


@dataclass(frozen=True)
class _Runs:
    """Runs of a level (see :func:`_sort_runs`), in traversal order."""

    start: IntArray
    """Traversal index of each run's first vertex (ascending, first is 0)."""
    chunk: IntArray
    """Flat chunk index of each run."""
    row: IntArray
    """Row in its chunk of each run's first vertex."""
    by_rank: IntArray | None
    """Input vertex at each traversal index, or None when input order is traversal order."""


@dataclass(frozen=True)
class _Rows:
    """Sorted rows of a level: the order, its chunks, fragments and object refs."""

    order: RowOrder
    chunks: IntArray
    chunk_offsets: IntArray
    fragments: FragmentRows
    fragment_offsets: IntArray
    refs: _Refs | None
    runs: _Runs | None = None


def _is_identity(rank: IntArray) -> bool:
    return bool(rank.size == 0 or (rank[0] == 0 and np.all(rank[1:] > rank[:-1])))


def grid_vertex_counts(
    chunks: IntArray, chunk_offsets: IntArray, grid_shape: tuple[int, ...]
) -> IntArray:
    """Return the vertices of every chunk of the grid, shaped ``grid_shape``.

    Chunk ``chunks[i]`` holds rows ``chunk_offsets[i]:chunk_offsets[i + 1]``; every other
    chunk holds none.
    """
    counts = np.zeros(int(np.prod(grid_shape)), dtype=np.int64)
    counts[chunks] = np.diff(chunk_offsets)
    return counts.reshape(grid_shape)


def plan_level(
    parts: GeometryParts,
    layout: ChunkLayout,
    *,
    bounds: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    on_order: OrderHook | None = None,
    on_fragments: FragmentHook | None = None,
) -> LevelPlan:
    """Compute the placement of every vertex, fragment, manifest ref and link.

    With objects whose rows keep traversal order (paths, graphs, meshes, points with
    objects), consecutive vertices of one object in one chunk form a *run* that stays whole
    through the sort by chunk; those levels are planned per run (a streamline crosses a chunk
    boundary every ~10 vertices) and only the final row order is expanded per vertex.

    ``bounds`` are the positions' per-axis extremes when the caller has them (see
    :meth:`ChunkLayout.locate`).  ``on_order`` receives the row order and chunk table before
    fragments, the object index and links are planned (a writer can start gathering rows
    meanwhile); ``on_fragments`` the fragment table before the object index and links are.
    """
    flat, bins = layout.locate(parts.positions, bounds)
    if not parts.has_objects:
        rows = _sort_points(layout, flat, bins, on_order)
    elif parts.ordered:
        rows = _sort_runs(parts, layout, flat, bins, on_order)
    else:
        rows = _sort_unordered(parts, layout, flat, bins, on_order)
    if on_fragments is not None:
        on_fragments(rows.fragments, rows.chunks, rows.fragment_offsets)
    vertex_counts = grid_vertex_counts(rows.chunks, rows.chunk_offsets, layout.grid.shape)
    refs = rows.refs
    manifest = np.zeros((0, layout.ndim + 2), dtype=np.int64)
    object_offsets = np.zeros(parts.n_objects + 1, dtype=np.int64)
    ref_obj = ref_first = np.zeros(0, dtype=np.int64)
    if refs is not None:
        ref_obj, ref_first = refs.obj, refs.first
        d = layout.ndim
        manifest = np.empty((len(ref_obj), d + 2), dtype=np.int64)
        # coordinates from a table of the non-empty chunks (few), not unravelled per ref
        if len(refs.chunk):
            coords = layout.coords_of_flat(rows.chunks)
            manifest[:, :d] = coords[_chunk_positions(rows.chunks, refs.chunk)]
        manifest[:, d] = refs.row
        manifest[:, d + 1] = refs.count
        object_offsets = offsets_from_counts(np.bincount(refs.obj, minlength=parts.n_objects))
    links = None
    if parts.links is not None or (parts.sequential and refs is not None):
        links = _plan_links(parts, layout, rows)
    return LevelPlan(
        order=rows.order,
        chunks=rows.chunks,
        chunk_offsets=rows.chunk_offsets,
        vertex_counts=vertex_counts,
        fragments=rows.fragments,
        fragment_offsets=rows.fragment_offsets,
        manifest=manifest,
        object_offsets=object_offsets,
        links=links,
        ref_object=ref_obj,
        ref_first_row=ref_first,
    )


def _bounds(item_chunk: IntArray) -> IntArray:
    """CSR offsets of the runs of equal chunks in ``item_chunk`` (items sorted by chunk)."""
    return np.append(run_starts(item_chunk), len(item_chunk)).astype(np.int64, copy=False)


def _chunk_rows(item_chunk: IntArray, item_start: IntArray, n: int) -> tuple[IntArray, ...]:
    """Chunks, CSR chunk offsets and row in chunk of items (runs, fragments) in sorted order.

    ``item_start`` is each item's first sorted row; items are sorted by ``item_chunk``.
    """
    cs = run_starts(item_chunk)
    chunks = item_chunk[cs]
    offsets = np.append(item_start[cs], n).astype(np.int64, copy=False)
    row = item_start - np.repeat(item_start[cs], np.diff(cs, append=len(item_chunk)))
    return chunks, offsets, row


def _sort_points(
    layout: ChunkLayout, flat: FlatArray, bins: BinArray, on_order: OrderHook | None
) -> _Rows:
    """Rows without objects: sorted by (chunk, bin), one fragment per non-empty bin."""
    n = len(flat)
    nbins = int(np.prod(layout.bins_per_chunk))
    total = layout.n_chunks * nbins
    if total >= 2**62:
        return _sort_unordered(None, layout, flat, bins, on_order)
    flat64: IntArray = flat.astype(np.int64, copy=False)
    key = flat64 if nbins == 1 else flat64 * nbins + bins
    order = sort_order([key], [total])
    s_key = key[order]
    f_starts = run_starts(s_key)
    f_key = s_key[f_starts]
    f_flat, f_bin = (f_key, np.zeros_like(f_key)) if nbins == 1 else np.divmod(f_key, nbins)
    chunks, chunk_offsets, f_row = _chunk_rows(f_flat, f_starts, n)
    if on_order is not None:
        on_order(order, chunks, chunk_offsets)
    fragments = np.stack(
        [f_bin, np.full_like(f_key, -1), f_row, np.diff(f_starts, append=n)], axis=1
    ).astype(np.int64, copy=False)
    return _Rows(order, chunks, chunk_offsets, fragments.reshape(-1, 4), _bounds(f_flat), None)


def _traversal(parts: GeometryParts) -> tuple[IntArray | None, npt.NDArray[np.bool_] | None]:
    """Return the traversal-order permutation and the visits that skip a rank.

    The permutation is None when input order is traversal order; the skips (they start a new
    run) are None unless ranks are given.
    """
    if parts.rank is None:  # rank in (object, input order)
        if parts.object_offsets is not None:
            return None, None
        obj = parts.vertex_objects
        assert obj is not None
        if len(obj) == 0 or bool(np.all(obj[1:] >= obj[:-1])):
            return None, None
        return sort_order([obj], [max(parts.n_objects, 1)]), None
    rank = parts.rank
    by_rank = None if _is_identity(rank) else np.argsort(rank, kind="stable")
    seq = rank if by_rank is None else rank[by_rank]
    gap = np.zeros(len(rank), dtype=bool)
    gap[1:] = seq[1:] != seq[:-1] + 1
    return by_rank, gap


def _sort_runs(
    parts: GeometryParts,
    layout: ChunkLayout,
    flat: FlatArray,
    bins: BinArray,
    on_order: OrderHook | None,
) -> _Rows:
    """Rows of objects in traversal order, chunk by chunk, planned per run.

    A run is a maximal sequence of vertices, consecutive in traversal order, of one object in
    one chunk.  Stable-sorting vertices by chunk keeps each run whole and in order, so the
    sorted rows are the runs stable-sorted by chunk; every fragment lies inside a run and every
    run is one manifest ref (two runs that end up adjacent differ in chunk or object, or skip
    a rank).
    """
    n = len(flat)
    by_rank, gap = _traversal(parts)
    q_flat = flat if by_rank is None else flat[by_rank]
    starts = parts.object_offsets if by_rank is None else None
    if starts is not None:  # objects are ranges of rows: they start where an offset says
        run_mask = change_mask(q_flat, extra=gap)
        run_mask[starts[:-1][starts[:-1] < n]] = True
    else:
        obj = parts.vertex_objects
        assert obj is not None
        q_obj = obj if by_rank is None else obj[by_rank]
        run_mask = change_mask(q_flat, q_obj, extra=gap)
    # the row order needs only the runs: the writer starts on the rows before fragments
    run = np.flatnonzero(run_mask)
    run_len = np.diff(run, append=n)
    run_flat: IntArray = q_flat[run].astype(np.int64, copy=False)
    by_chunk = sort_order([run_flat], [layout.n_chunks])
    c_flat, c_len = run_flat[by_chunk], run_len[by_chunk]
    c_first = offsets_from_counts(c_len)[:-1]
    order: RowOrder = RangeOrder(run[by_chunk], c_len)  # runs stay whole: no expanded index
    if by_rank is not None:
        order = by_rank[as_index(order)]
    chunks, chunk_offsets, c_row = _chunk_rows(c_flat, c_first, n)
    if on_order is not None:
        on_order(order, chunks, chunk_offsets)
    q_bin = None
    if int(np.prod(layout.bins_per_chunk)) > 1:
        q_bin = bins if by_rank is None else bins[by_rank]
        f_seq = np.flatnonzero(change_mask(q_bin, extra=run_mask))
        f_is_run = run_mask[f_seq]
    del run_mask
    if starts is not None:  # the last object starting at or before each run
        run_obj = np.searchsorted(starts, run, side="right") - 1
    else:
        run_obj = q_obj[run].astype(np.int64, copy=False)
    first = np.empty(len(run), dtype=np.int64)
    first[by_chunk] = c_first
    row = np.empty(len(run), dtype=np.int64)
    row[by_chunk] = c_row
    fragments: FragmentRows
    if q_bin is None:  # one bin per chunk: fragments are the runs
        fragments = np.stack([np.zeros_like(c_len), run_obj[by_chunk], c_row, c_len], axis=1)
        fragments = fragments.astype(np.int64, copy=False).reshape(-1, 4)
        fragment_offsets = _bounds(c_flat)
    else:
        fragments, fragment_offsets = _binned_fragments(
            f_seq, f_is_run, q_bin, run_obj, row - run, by_chunk, c_flat
        )
    # refs by (object, rank): runs are in rank order already
    if len(run) < 2 or bool(np.all(run_obj[1:] >= run_obj[:-1])):
        refs = _Refs(run_obj, run_flat, first, row, run_len)
    else:
        o = sort_order([run_obj], [max(parts.n_objects, 1)])
        refs = _Refs(run_obj[o], run_flat[o], first[o], row[o], run_len[o])
    runs = _Runs(run, run_flat, row, by_rank)
    return _Rows(order, chunks, chunk_offsets, fragments, fragment_offsets, refs, runs)


class FragmentTable:
    """The (F, 4) fragment rows of a level of paths cut at bin changes, built on demand.

    Runs (see :func:`_sort_runs`) are cut into fragments where the bin changes; a run's
    fragments are consecutive in traversal order and in sorted order.  So sorted fragment
    ``j`` is traversal fragment ``RangeOrder(run first fragments, fragments per run)[j]``,
    and any slice of the table is gathered from traversal-order data when asked for: a writer
    encoding the table a batch at a time never holds it whole (32 bytes a fragment; a
    streamline has one every ~4 vertices).

    Parameters
    ----------
    f_seq
        First traversal index of each fragment (ascending).
    q_bin
        Flat bin of each vertex in traversal order.
    n
        Vertices of the level.
    runs
        Each sorted run's fragments as a range of traversal fragment indices.
    s_obj, s_shift
        Per sorted run: its object, and its first row in its chunk minus its first traversal
        index.
    """

    dtype = np.dtype(np.int64)

    def __init__(
        self,
        f_seq: IntArray,
        q_bin: BinArray,
        n: int,
        runs: RangeOrder,
        s_obj: IntArray,
        s_shift: IntArray,
    ) -> None:
        self._f_seq, self._q_bin, self._n = f_seq, q_bin, n
        self._runs, self._obj, self._shift = runs, s_obj, s_shift
        self.shape = (len(f_seq), 4)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: slice) -> IntArray:
        """Rows ``key`` (a slice with step 1) of the table."""
        a, b, step = key.indices(len(self))
        if step != 1:
            raise ValueError("FragmentTable slices take no step")
        out = np.empty((max(b - a, 0), 4), dtype=np.int64)
        self.fill(a, b, out)
        return out

    def fill(self, start: int, stop: int, out: IntArray) -> None:
        """Write rows ``start:stop`` of the table into ``out``, a (stop - start, 4) array."""
        for j0 in range(start, stop, _FRAGMENT_BLOCK):
            j1 = min(j0 + _FRAGMENT_BLOCK, stop)
            self._fill(j0, j1, out[j0 - start : j1 - start])

    def dense(self) -> IntArray:
        """Return the whole table."""
        return self[:]

    def _fill(self, a: int, b: int, rows: IntArray) -> None:
        first_run, t_first, counts = self._runs.span(a, b)
        t = concat_ranges(t_first, counts)  # traversal index of each fragment
        first = self._f_seq[t]
        rows[:, 0] = self._q_bin[first]  # bin
        runs = slice(first_run, first_run + len(counts))
        rows[:, 1] = np.repeat(self._obj[runs], counts)  # object
        np.add(np.repeat(self._shift[runs], counts), first, out=rows[:, 2])  # row in chunk
        t += 1  # the next fragment's first index, or n after the last fragment
        end = np.take(self._f_seq, t, mode="clip")
        end[t == len(self._f_seq)] = self._n
        np.subtract(end, first, out=rows[:, 3])  # vertices


FragmentRows = IntArray | FragmentTable
"""A level's (F, 4) fragment rows, in sorted order."""


def as_table(fragments: FragmentRows) -> IntArray:
    """Return fragment rows as an array (building a :class:`FragmentTable`)."""
    return fragments.dense() if isinstance(fragments, FragmentTable) else fragments


def _binned_fragments(
    f_seq: IntArray,
    f_is_run: npt.NDArray[np.bool_],
    q_bin: BinArray,
    run_obj: IntArray,
    shift: IntArray,
    by_chunk: IntArray,
    c_flat: IntArray,
) -> tuple[FragmentTable, IntArray]:
    """Fragment table and per-chunk fragment offsets when runs are cut at bin changes.

    ``f_seq`` are the fragments' first traversal indices (``f_is_run``: also a run's first),
    ``shift`` is each run's first row in its chunk minus its traversal index, ``by_chunk``
    the runs' sorted order and ``c_flat`` their chunks in that order.
    """
    n_frag = len(f_seq)
    first_frag = np.flatnonzero(f_is_run)
    per_run = np.diff(first_frag, append=n_frag)
    runs = RangeOrder(first_frag[by_chunk], per_run[by_chunk])
    table = FragmentTable(f_seq, q_bin, len(q_bin), runs, run_obj[by_chunk], shift[by_chunk])
    cs = run_starts(c_flat)  # first sorted run of each chunk
    return table, np.append(runs.offsets[cs], n_frag)


def _sort_unordered(
    parts: GeometryParts | None,
    layout: ChunkLayout,
    flat: FlatArray,
    bins: BinArray,
    on_order: OrderHook | None,
) -> _Rows:
    """Rows sorted by (chunk, object, bin), vertex by vertex (``parts`` None: no objects)."""
    n = len(flat)
    nbins = int(np.prod(layout.bins_per_chunk))
    obj = None if parts is None else parts.vertex_objects
    if obj is None or parts is None:
        order = sort_order([flat, bins], [layout.n_chunks, nbins])
    else:
        order = sort_order([flat, obj, bins], [layout.n_chunks, max(parts.n_objects, 1), nbins])
    s_flat: IntArray = flat[order].astype(np.int64, copy=False)
    s_bin = bins[order]
    s_obj = np.full(n, -1, dtype=np.int64) if obj is None else obj[order]

    starts = run_starts(s_flat)
    chunks = s_flat[starts]
    chunk_offsets = np.append(starts, n).astype(np.int64)
    if on_order is not None:
        on_order(order, chunks, chunk_offsets)
    row_in_chunk = np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(chunk_offsets))
    f_starts = run_starts(s_flat, s_obj, s_bin)
    f_counts = np.diff(np.append(f_starts, n))
    fragments = (
        np.stack([s_bin[f_starts], s_obj[f_starts], row_in_chunk[f_starts], f_counts], axis=1)
        .astype(np.int64)
        .reshape(-1, 4)
    )
    refs = None
    if obj is not None and parts is not None:
        r_starts = run_starts(s_flat, s_obj)
        r_counts = np.diff(np.append(r_starts, n))
        ref_obj: IntArray = s_obj[r_starts].astype(np.int64, copy=False)
        key2 = s_flat[r_starts]
        ref_order = sort_order([ref_obj, key2], [parts.n_objects, max(n, layout.n_chunks, 1)])
        r_starts, r_counts = r_starts[ref_order], r_counts[ref_order]
        refs = _Refs(
            ref_obj[ref_order], s_flat[r_starts], r_starts, row_in_chunk[r_starts], r_counts
        )
    return _Rows(order, chunks, chunk_offsets, fragments, _bounds(s_flat[f_starts]), refs)


class _LocalLinks(NamedTuple):
    """Chunk-local links in chunk order (see :class:`LinkPlan`)."""

    chunk: IntArray
    rows: npt.NDArray[np.int32]
    source: IntArray

    @classmethod
    def empty(cls, k: int) -> _LocalLinks:
        """Return no local links, of arity ``k`` (``k == 0``: no links at all)."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, np.zeros((0, k), dtype=np.int32), z)


class _CrossLinks(NamedTuple):
    """Cross-chunk links in chunk order (see :class:`LinkPlan`)."""

    chunk: IntArray
    rows: IntArray
    source: IntArray


def _plan_links(parts: GeometryParts, layout: ChunkLayout, rows: _Rows) -> LinkPlan:
    """Split explicit links into chunk-local and cross-chunk links.

    Consecutive refs of a sequential object are joined by implicit cross-chunk links.
    """
    pieces: list[_CrossLinks] = []
    local = _LocalLinks.empty(0)
    if parts.links is not None and len(parts.links):
        spans = parts.link_spans
        if spans is not None and spans.links is not parts.links:
            spans = None
        local, explicit = _split_links(parts.links, layout, rows, spans)
        pieces.append(explicit)
    elif parts.links is not None:
        local = _LocalLinks.empty(parts.links.shape[1] if parts.links.ndim == 2 else 2)
    refs = rows.refs
    if parts.sequential and refs is not None and len(refs.obj) > 1:
        pieces.append(_join_links(refs, layout, rows.chunks))
    if len(pieces) == 1:  # every piece is in chunk order already
        cross = pieces[0]
    elif pieces:  # stable: a piece already in chunk order keeps its order within a chunk
        chunk = np.concatenate([p.chunk for p in pieces])
        o = sort_order([chunk], [layout.n_chunks])
        cross = _CrossLinks(
            chunk[o],
            np.take(np.concatenate([p.rows for p in pieces]), o, axis=0),
            np.concatenate([p.source for p in pieces])[o],
        )
    else:
        z = np.zeros(0, dtype=np.int64)
        cross = _CrossLinks(z, np.zeros((0, 0), dtype=np.int64), z)
    return LinkPlan(local.chunk, local.rows, local.source, cross.chunk, cross.rows, cross.source)


_LINK_BLOCK = 1 << 16
"""Links handled at once by :func:`_split_links` (its temporaries stay in cache)."""
_SPAN_RUN_LINKS = 4096
"""Mean links per run of spans looked up from which :func:`_link_groups` slices each run."""
_EDGE_KEY_BITS = 62
"""Bits of a packed (chunk, row, row) edge sort key; wider keys sort with numpy's lexsort."""
_FRAGMENT_BLOCK = 1 << 16
"""Fragment rows a :class:`FragmentTable` fills at a time (its temporaries stay in cache)."""


def _chunk_positions(chunks: IntArray, flat: IntArray) -> IntArray:
    """Position in ``chunks`` (ascending, non-empty) of each flat chunk index in ``flat``.

    A lookup table over the flat indices when it is not larger than ``flat``, else a binary
    search.
    """
    top = int(chunks[-1]) + 1
    if top > flat.size:
        return np.searchsorted(chunks, flat)
    table = np.zeros(top, dtype=np.int64)
    table[chunks] = np.arange(len(chunks), dtype=np.int64)
    return table[flat]


def _vertex_tables(rows: _Rows) -> tuple[npt.NDArray[Any], npt.NDArray[np.int32]]:
    """Per input vertex: the position of its chunk in ``rows.chunks`` and its row there.

    Positions use the narrowest unsigned type that holds them.  With long runs (and fewer
    than 2**30 vertices) both tables are built run by run, without a scatter: along a run
    the row counts up by one.
    """
    n = len(rows.order)
    nc = len(rows.chunks)
    runs = rows.runs
    dtype = smallest_uint(nc)
    if runs is None or not 0 < len(runs.start) * 8 <= n < 2**30:
        counts = np.diff(rows.chunk_offsets)
        order = as_index(rows.order)
        pos = np.empty(n, dtype=dtype)
        pos[order] = np.repeat(np.arange(nc, dtype=dtype), counts)
        in_chunk = np.arange(n, dtype=np.int32)
        in_chunk -= np.repeat(rows.chunk_offsets[:-1].astype(np.int32), counts)
        row = np.empty(n, dtype=np.int32)
        row[order] = in_chunk
        return pos, row
    r_pos = _chunk_positions(rows.chunks, runs.chunk).astype(dtype)
    pos = np.repeat(r_pos, np.diff(runs.start, append=n))
    shift = runs.row - runs.start  # row - traversal index, constant along a run
    row = np.ones(n, dtype=np.int32)
    row[0] = shift[0]
    row[runs.start[1:]] = np.diff(shift) + 1
    np.cumsum(row, out=row)
    if runs.by_rank is not None:  # tables are in traversal order: scatter to input order
        pos[runs.by_rank] = pos.copy()
        row[runs.by_rank] = row.copy()
    return pos, row


def _split_links(
    links: IntArray, layout: ChunkLayout, rows: _Rows, spans: LinkSpans | None = None
) -> tuple[_LocalLinks, _CrossLinks]:
    """Explicit (L, k) links as chunk-local and cross-chunk links, each in chunk order.

    A link is local when all its ends share a chunk; a cross link belongs to the chunk of its
    first end.  Triangles keep input order within a chunk; edges are sorted by their rows
    (:func:`_edges_by_rows`).  Links are classified (whole ``spans`` inside one run at once,
    see :func:`_span_owners`), then gathered, block by block: no (L, k) temporary.
    """
    if len(rows.order) >= 2**31:
        raise InvalidInputError("links: more than 2**31 - 1 vertices in one level")
    links = np.ascontiguousarray(links)
    pos, row = _vertex_tables(rows)
    nc = len(rows.chunks)
    group = _link_groups(links, pos, nc, _span_owners(spans, rows))
    order, counts = _group_order(group, 2 * nc)  # local links by chunk, then cross by chunk
    del group
    n_local = int(counts[:nc].sum())
    local_src, cross_src = order[:n_local], order[n_local:]
    local_rows = np.empty((n_local, links.shape[1]), dtype=np.int32)
    records = links.view(np.dtype((np.void, links.itemsize * links.shape[1]))).reshape(-1)
    buf = np.empty((min(n_local, _LINK_BLOCK), links.shape[1]), dtype=links.dtype)
    buf_records = buf.view(records.dtype).reshape(-1)
    for a in range(0, n_local, _LINK_BLOCK):
        src = local_src[a : a + _LINK_BLOCK]
        # one reused buffer: a fresh block temporary per pass costs page faults.  The
        # positions come from _group_order, so "clip" never clips and writes straight into out
        np.take(records, src, out=buf_records[: len(src)], mode="clip")
        # ends are valid indices (checked by _link_groups); "wrap" maps -1 like indexing does
        np.take(row, buf[: len(src)], out=local_rows[a : a + _LINK_BLOCK], mode="wrap")
    ends = take_rows(links, cross_src)
    if links.shape[1] == 2:  # edges: sorted inside each chunk (see _edges_by_rows)
        most = int(np.diff(rows.chunk_offsets).max(initial=1))
        by = _edges_by_rows(counts[:nc], local_rows[:, 0], local_rows[:, 1], most, most)
        if by is not None:
            local_rows, local_src = np.take(local_rows, by, axis=0), np.take(local_src, by)
        by = _edges_by_rows(counts[nc:], row[ends[:, 0]], None, most, 1)
        if by is not None:
            ends, cross_src = np.take(ends, by, axis=0), np.take(cross_src, by)
    local = _LocalLinks(np.repeat(rows.chunks, counts[:nc]), local_rows, local_src)
    cross = _endpoint_rows(layout, rows.chunks, pos[ends], row[ends])
    return local, _CrossLinks(np.repeat(rows.chunks, counts[nc:]), cross, cross_src)


def _edges_by_rows(
    per_chunk: IntArray,
    first: npt.NDArray[Any],
    second: npt.NDArray[Any] | None,
    first_bound: int,
    second_bound: int,
) -> IntArray | None:
    """Return the stable order sorting edges by ``(first, second)`` in their chunk, or None.

    Edges come grouped by chunk (``per_chunk`` each); None when they are sorted already.
    ``first`` is endpoint 0's row in the chunk (below ``first_bound``), ``second`` endpoint
    1's row (below ``second_bound``) for chunk-local edges, None for cross-chunk edges.  A
    chunk's rows follow global order, so a whole read finds each chunk's edges (nearly)
    ascending and its edge sort merges runs instead of sorting (docs/spec.md).
    """
    if len(first) < 2:
        return None
    a = max(first_bound - 1, 1).bit_length()
    b = 0 if second is None else max(second_bound - 1, 1).bit_length()
    if max(len(per_chunk) - 1, 1).bit_length() + a + b > _EDGE_KEY_BITS:  # no packed key
        chunk = np.repeat(np.arange(len(per_chunk), dtype=np.int64), per_chunk)
        by = np.lexsort((first, chunk) if second is None else (second, first, chunk))
        return None if _is_identity(by) else by.astype(np.int64, copy=False)
    key = np.repeat(np.arange(len(per_chunk), dtype=np.int64), per_chunk)
    key <<= a
    key |= first
    if second is not None:
        key <<= b
        key |= second
    descents = int(np.count_nonzero(key[1:] < key[:-1]))
    if descents == 0:
        return None
    _, order = sort_keys(key, True, descents + 1)
    return order


def _endpoint_rows(
    layout: ChunkLayout, chunks: IntArray, pos: npt.NDArray[Any], row: npt.NDArray[Any]
) -> IntArray:
    """Cross-chunk records ``[chunk coords..., row]`` per endpoint, (L, k*(D+1)).

    ``pos`` (L, k) are positions in ``chunks`` and ``row`` (L, k) rows in those chunks.  The
    coordinates come from a per-chunk table, gathered one endpoint record at a time.
    """
    d = layout.ndim
    endpoint = np.zeros((len(chunks), d + 1), dtype=np.int64)  # [chunk coords..., 0]
    endpoint[:, :d] = layout.coords_of_flat(chunks)
    record = np.dtype((np.void, endpoint.itemsize * (d + 1)))
    out = np.empty((len(pos), pos.shape[1] * (d + 1)), dtype=np.int64)
    # positions are valid: "clip" writes straight into out ("raise" buffers a whole copy)
    np.take(endpoint.view(record).reshape(-1), pos, out=out.view(record), mode="clip")
    out[:, d :: d + 1] = row
    return out


def _span_owners(spans: LinkSpans | None, rows: _Rows) -> tuple[IntArray, int] | None:
    """Chunk position of each span of links inside one run (else -1), and the span size.

    None without spans, or when runs are not in input order (streamed batches).
    """
    runs = rows.runs
    if spans is None or runs is None or runs.by_rank is not None or not len(spans.low):
        return None
    r_pos = _chunk_positions(rows.chunks, runs.chunk)
    return spans.owners(runs.start, r_pos, len(rows.order)), spans.size


def _link_groups(
    links: IntArray,
    pos: npt.NDArray[Any],
    nc: int,
    owners: tuple[IntArray, int] | None = None,
) -> npt.NDArray[Any]:
    """Sort key of each link: its first end's chunk position, plus ``nc`` for a cross link.

    ``owners`` (see :func:`_span_owners`) give whole spans their key without looking their
    ends up.

    Raises
    ------
    IndexError
        A link end that is not a vertex.
    """
    group = np.empty(len(links), dtype=smallest_uint(2 * nc))
    if owners is None:
        for a in range(0, len(links), _LINK_BLOCK):
            group[a : a + _LINK_BLOCK] = _end_groups(links[a : a + _LINK_BLOCK], pos, nc)
        return group
    owner, size = owners
    full = len(links) // size
    # every span keyed by its owner; the spans without one are looked up below
    group[: full * size].reshape(full, size)[:] = owner[:full, None].astype(group.dtype)
    group[full * size :] = owner[-1].astype(group.dtype)
    # runs of consecutive spans without an owner (a mesh across chunks), as link ranges
    mixed = np.diff((owner < 0).astype(np.int8), prepend=0, append=0)
    starts = np.flatnonzero(mixed > 0) * size
    stops = np.minimum(np.flatnonzero(mixed < 0) * size, len(links))
    if len(starts) * _SPAN_RUN_LINKS > len(links):  # short runs: one gather of their links
        idx = concat_ranges(starts, stops - starts)
        group[idx] = _end_groups(take_rows(links, idx), pos, nc)
        return group
    for a0, b0 in zip(starts.tolist(), stops.tolist(), strict=True):
        for a in range(a0, b0, _LINK_BLOCK):
            b = min(a + _LINK_BLOCK, b0)
            group[a:b] = _end_groups(links[a:b], pos, nc)
    return group


def _end_groups(links: IntArray, pos: npt.NDArray[Any], nc: int) -> npt.NDArray[Any]:
    """:func:`_link_groups` of a block of links, looked up end by end."""
    # (B, k) chunk positions; indexing validates the ends without the staging copy
    # np.take(..., out=) makes in "raise" mode
    ends = pos[links]
    key = ends[:, 0].astype(smallest_uint(2 * nc))
    if ends.shape[1] > 1:
        is_cross = ends[:, 1] != ends[:, 0]
        for j in range(2, ends.shape[1]):
            is_cross |= ends[:, j] != ends[:, 0]
        key[np.flatnonzero(is_cross)] += nc
    return key


def _group_order(group: npt.NDArray[Any], n_groups: int) -> tuple[IntArray, IntArray]:
    """Stable order sorting ``group`` (keys below ``n_groups``) and the count of each key.

    When the keys come in long runs (the links of a mesh or a path, listed object by
    object), the runs are sorted instead of the links.
    """
    change = change_mask(group)
    if np.count_nonzero(change) * 8 <= len(group):
        starts = np.flatnonzero(change)
        lengths = np.diff(starts, append=len(group))
        keys = group[starts]
        by_key = np.argsort(keys, kind="stable")
        counts = np.bincount(keys, weights=lengths, minlength=n_groups).astype(np.int64)
        return concat_ranges(starts[by_key], lengths[by_key]), counts
    del change
    counts = np.zeros(n_groups, dtype=np.int64)
    for a in range(0, len(group), _LINK_BLOCK):  # bincount converts its input to intp
        counts += np.bincount(group[a : a + _LINK_BLOCK], minlength=n_groups)
    if group.dtype == np.int64:
        return sort_order([group], [n_groups]), counts
    # numpy's stable sort of 8- and 16-bit keys is a radix sort
    return np.argsort(group, kind="stable").astype(np.int64, copy=False), counts


def _join_links(refs: _Refs, layout: ChunkLayout, chunks: IntArray) -> _CrossLinks:
    """Implicit links joining consecutive refs of one object, in chunk order (source -1).

    ``chunks`` are the level's non-empty chunks, ascending.  The joins are sorted by the
    position of their first ref's chunk (the order by chunk, with smaller keys), then their
    records are built in that order.
    """
    join = np.flatnonzero(refs.obj[1:] == refs.obj[:-1])  # ref j joins ref j+1
    pos = _chunk_positions(chunks, refs.chunk)
    join = join[sort_order([pos[join]], [len(chunks)])]
    row = np.empty((len(join), 2), dtype=np.int64)  # last row of ref j, first of ref j+1
    row[:, 0] = refs.row[join]
    row[:, 0] += refs.count[join]
    row[:, 0] -= 1
    row[:, 1] = refs.row[join + 1]
    return _CrossLinks(
        refs.chunk[join],
        _endpoint_rows(layout, chunks, pos[np.stack([join, join + 1], axis=1)], row),
        np.full(len(join), -1, dtype=np.int64),
    )
