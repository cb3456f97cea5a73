"""Row planning: where every vertex and link of a level goes (FORMAT.md §2, §6, §7).

:func:`plan_level` sorts vertices into chunks once (sorting keys, not rows) and derives every
per-chunk table from that order: fragments, the object manifest, cross-chunk links and
chunk-local links.  Everything is vectorised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.ragged import (
    change_mask,
    concat_ranges,
    offsets_from_counts,
    run_starts,
    sort_order,
)

__all__ = ["GeometryParts", "LevelPlan", "OrderHook", "plan_level"]

IntArray = npt.NDArray[np.int64]

OrderHook = Callable[[IntArray, IntArray, IntArray], None]
"""Called with ``(order, chunks, chunk_offsets)`` of a level as soon as they are known."""


@dataclass(frozen=True, kw_only=True)
class GeometryParts:
    """A geometry type's data as flat arrays: what the core write pipeline consumes."""

    positions: npt.NDArray[np.floating]
    """(N, D) vertex positions, physical units."""
    vertex_object: IntArray | None = None
    """(N,) dense object id of each vertex, or None when vertices have no objects."""
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
    object_attributes: Mapping[str, Column] = field(default_factory=dict)
    """Per-object attributes (n_objects rows)."""
    groups: GroupTable | None = None
    """Named groups of objects."""
    rank: IntArray | None = None
    """Traversal rank of each vertex when ``positions`` is a subset of a larger level
    (streaming); by default the rank in (object, input order) is computed here."""


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

    order: IntArray
    """Permutation: sorted row i holds input vertex ``order[i]``."""
    chunks: IntArray
    """Flat indices of non-empty chunks, ascending."""
    chunk_offsets: IntArray
    """CSR offsets of each non-empty chunk's rows in sorted order."""
    vertex_counts: IntArray
    """Vertices per chunk over the whole grid (grid shape)."""
    fragments: IntArray
    """(F, 4) ``[bin_flat, object_id, start, count]`` rows, in sorted order."""
    fragment_chunk: IntArray
    """Flat chunk index of each fragment."""
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
class _Rows:
    """Sorted rows of a level: the order, its chunks, fragments and object refs."""

    order: IntArray
    chunks: IntArray
    chunk_offsets: IntArray
    fragments: IntArray
    fragment_chunk: IntArray
    refs: _Refs | None


def _is_identity(rank: IntArray) -> bool:
    return bool(rank.size == 0 or (rank[0] == 0 and np.all(rank[1:] > rank[:-1])))


def plan_level(
    parts: GeometryParts, layout: ChunkLayout, *, on_order: OrderHook | None = None
) -> LevelPlan:
    """Compute the placement of every vertex, fragment, manifest ref and link.

    With objects whose rows keep traversal order (paths, graphs, meshes, points with
    objects), consecutive vertices of one object in one chunk form a *run* that stays whole
    through the sort by chunk; those levels are planned per run (a streamline crosses a chunk
    boundary every ~10 vertices) and only the final row order is expanded per vertex.

    ``on_order`` receives the row order and chunk table before fragments, the object index
    and links are planned (a writer can start gathering rows meanwhile).
    """
    flat, bins = layout.locate(parts.positions)
    if parts.vertex_object is None:
        rows = _sort_points(layout, flat, bins, on_order)
    elif parts.ordered:
        rows = _sort_runs(parts, layout, flat, bins, on_order)
    else:
        rows = _sort_unordered(parts, layout, flat, bins, on_order)
    vertex_counts = np.zeros(layout.n_chunks, dtype=np.int64)
    vertex_counts[rows.chunks] = np.diff(rows.chunk_offsets)
    refs = rows.refs
    manifest = np.zeros((0, layout.ndim + 2), dtype=np.int64)
    object_offsets = np.zeros(parts.n_objects + 1, dtype=np.int64)
    ref_obj = ref_first = np.zeros(0, dtype=np.int64)
    if refs is not None:
        ref_obj, ref_first = refs.obj, refs.first
        d = layout.ndim
        manifest = np.empty((len(ref_obj), d + 2), dtype=np.int64)
        manifest[:, :d] = layout.coords_of_flat(refs.chunk)
        manifest[:, d] = refs.row
        manifest[:, d + 1] = refs.count
        object_offsets = offsets_from_counts(np.bincount(refs.obj, minlength=parts.n_objects))
    links = None
    if parts.links is not None or (parts.sequential and refs is not None):
        links = _plan_links(parts, layout, flat, rows, manifest)
    return LevelPlan(
        order=rows.order,
        chunks=rows.chunks,
        chunk_offsets=rows.chunk_offsets,
        vertex_counts=vertex_counts.reshape(layout.grid.shape),
        fragments=rows.fragments,
        fragment_chunk=rows.fragment_chunk,
        manifest=manifest,
        object_offsets=object_offsets,
        links=links,
        ref_object=ref_obj,
        ref_first_row=ref_first,
    )


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
    layout: ChunkLayout, flat: IntArray, bins: IntArray, on_order: OrderHook | None
) -> _Rows:
    """Rows without objects: sorted by (chunk, bin), one fragment per non-empty bin."""
    n = len(flat)
    nbins = int(np.prod(layout.bins_per_chunk))
    total = layout.n_chunks * nbins
    if total >= 2**62:
        return _sort_unordered(None, layout, flat, bins, on_order)
    key = flat if nbins == 1 else flat * nbins + bins
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
    return _Rows(order, chunks, chunk_offsets, fragments.reshape(-1, 4), f_flat, None)


def _traversal(parts: GeometryParts) -> tuple[IntArray | None, npt.NDArray[np.bool_] | None]:
    """Return the traversal-order permutation and the visits that skip a rank.

    The permutation is None when input order is traversal order; the skips (they start a new
    run) are None unless ranks are given.
    """
    obj = parts.vertex_object
    assert obj is not None
    if parts.rank is None:  # rank in (object, input order)
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
    flat: IntArray,
    bins: IntArray,
    on_order: OrderHook | None,
) -> _Rows:
    """Rows of objects in traversal order, chunk by chunk, planned per run.

    A run is a maximal sequence of vertices, consecutive in traversal order, of one object in
    one chunk.  Stable-sorting vertices by chunk keeps each run whole and in order, so the
    sorted rows are the runs stable-sorted by chunk; every fragment lies inside a run and every
    run is one manifest ref (two runs that end up adjacent differ in chunk or object, or skip
    a rank).
    """
    obj = parts.vertex_object
    assert obj is not None
    n = len(flat)
    by_rank, gap = _traversal(parts)
    q_flat = flat if by_rank is None else flat[by_rank]
    q_obj = obj if by_rank is None else obj[by_rank]
    run_mask = change_mask(q_flat, q_obj, extra=gap)
    q_bin = None
    if int(np.prod(layout.bins_per_chunk)) > 1:
        q_bin = bins if by_rank is None else bins[by_rank]
        f_seq = np.flatnonzero(change_mask(q_bin, extra=run_mask))
        f_is_run = run_mask[f_seq]
        run = f_seq[f_is_run]
    else:
        run = np.flatnonzero(run_mask)
    del run_mask
    run_len = np.diff(run, append=n)
    run_flat, run_obj = q_flat[run], q_obj[run]
    by_chunk = sort_order([run_flat], [layout.n_chunks])
    c_flat, c_len = run_flat[by_chunk], run_len[by_chunk]
    c_first = offsets_from_counts(c_len)[:-1]
    seq_rows = concat_ranges(run[by_chunk], c_len)
    order = seq_rows if by_rank is None else by_rank[seq_rows]
    chunks, chunk_offsets, c_row = _chunk_rows(c_flat, c_first, n)
    if on_order is not None:
        on_order(order, chunks, chunk_offsets)
    first = np.empty(len(run), dtype=np.int64)
    first[by_chunk] = c_first
    row = np.empty(len(run), dtype=np.int64)
    row[by_chunk] = c_row
    if q_bin is None:  # one bin per chunk: fragments are the runs
        fragments = np.stack([np.zeros_like(c_len), run_obj[by_chunk], c_row, c_len], axis=1)
        fragment_chunk = c_flat
    else:
        # fragments of a run are consecutive in both orders: list them run by run
        first_frag = np.flatnonzero(f_is_run)
        sel = concat_ranges(first_frag[by_chunk], np.diff(first_frag, append=len(f_seq))[by_chunk])
        f_run = (np.cumsum(f_is_run) - 1)[sel]
        f_start = f_seq[sel]
        f_len = np.diff(f_seq, append=n)[sel]
        f_row = row[f_run] + (f_start - run[f_run])
        fragments = np.stack([q_bin[f_start], run_obj[f_run], f_row, f_len], axis=1)
        fragment_chunk = run_flat[f_run]
    fragments = fragments.astype(np.int64, copy=False).reshape(-1, 4)
    # refs by (object, rank): runs are in rank order already
    if len(run) < 2 or bool(np.all(run_obj[1:] >= run_obj[:-1])):
        refs = _Refs(run_obj, run_flat, first, row, run_len)
    else:
        o = sort_order([run_obj], [max(parts.n_objects, 1)])
        refs = _Refs(run_obj[o], run_flat[o], first[o], row[o], run_len[o])
    return _Rows(order, chunks, chunk_offsets, fragments, fragment_chunk, refs)


def _sort_unordered(
    parts: GeometryParts | None,
    layout: ChunkLayout,
    flat: IntArray,
    bins: IntArray,
    on_order: OrderHook | None,
) -> _Rows:
    """Rows sorted by (chunk, object, bin), vertex by vertex (``parts`` None: no objects)."""
    n = len(flat)
    nbins = int(np.prod(layout.bins_per_chunk))
    obj = None if parts is None else parts.vertex_object
    if obj is None or parts is None:
        order = sort_order([flat, bins], [layout.n_chunks, nbins])
    else:
        order = sort_order([flat, obj, bins], [layout.n_chunks, max(parts.n_objects, 1), nbins])
    s_flat, s_bin = flat[order], bins[order]
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
        ref_obj = s_obj[r_starts]
        key2 = s_flat[r_starts]
        ref_order = sort_order([ref_obj, key2], [parts.n_objects, max(n, layout.n_chunks, 1)])
        r_starts, r_counts = r_starts[ref_order], r_counts[ref_order]
        refs = _Refs(
            ref_obj[ref_order], s_flat[r_starts], r_starts, row_in_chunk[r_starts], r_counts
        )
    return _Rows(order, chunks, chunk_offsets, fragments, s_flat[f_starts], refs)


def _plan_links(
    parts: GeometryParts, layout: ChunkLayout, flat: IntArray, rows: _Rows, manifest: IntArray
) -> LinkPlan:
    """Split explicit links into chunk-local and cross-chunk links.

    Consecutive refs of a sequential object are joined by implicit cross-chunk links
    (``manifest`` holds the refs' chunk coordinates).
    """
    pieces_chunk, pieces_rows, pieces_src = [], [], []
    local_chunk = np.zeros(0, dtype=np.int64)
    local_rows = np.zeros((0, 0), dtype=np.int32)
    local_src = np.zeros(0, dtype=np.int64)
    d = layout.ndim

    if parts.links is not None and len(parts.links):
        n = len(rows.order)
        where = np.empty(n, dtype=np.int64)
        where[rows.order] = np.arange(n, dtype=np.int64)  # input vertex -> sorted row
        ends = where[parts.links]  # (L, k) sorted rows
        e_flat = flat[parts.links]  # chunk of each endpoint
        owner = e_flat[:, 0]
        same = np.all(e_flat == owner[:, None], axis=1)
        e_row = ends - rows.chunk_offsets[np.searchsorted(rows.chunks, e_flat)]
        local_idx = np.flatnonzero(same)
        local_idx = local_idx[sort_order([owner[local_idx]], [layout.n_chunks])]
        local_chunk = owner[local_idx]
        local_rows = e_row[local_idx].astype(np.int32)
        local_src = local_idx
        cross_idx = np.flatnonzero(~same)
        cross = np.empty((len(cross_idx), ends.shape[1] * (d + 1)), dtype=np.int64)
        for j in range(ends.shape[1]):
            at = j * (d + 1)
            cross[:, at : at + d] = layout.coords_of_flat(e_flat[cross_idx, j])
            cross[:, at + d] = e_row[cross_idx, j]
        pieces_chunk.append(owner[cross_idx])
        pieces_rows.append(cross)
        pieces_src.append(cross_idx)
    elif parts.links is not None:
        k = parts.links.shape[1] if parts.links.ndim == 2 else 2
        local_rows = np.zeros((0, k), dtype=np.int32)
    refs = rows.refs
    if parts.sequential and refs is not None and len(refs.obj) > 1:
        join = np.flatnonzero(refs.obj[1:] == refs.obj[:-1])  # ref j joins ref j+1
        nxt = join + 1
        joins = np.empty((len(join), 2 * d + 2), dtype=np.int64)  # built in ref order (reads
        joins[:, :d] = manifest[join, :d]  # stream), then sorted by chunk in one gather
        joins[:, d] = refs.row[join] + refs.count[join] - 1
        joins[:, d + 1 : 2 * d + 1] = manifest[nxt, :d]
        joins[:, 2 * d + 1] = refs.row[nxt]
        owner = refs.chunk[join]
        by_chunk = sort_order([owner], [layout.n_chunks])
        pieces_chunk.append(owner[by_chunk])
        pieces_rows.append(np.take(joins, by_chunk, axis=0))
        pieces_src.append(np.full(len(join), -1, dtype=np.int64))
    width = 0 if not pieces_rows else pieces_rows[0].shape[1]
    if len(pieces_rows) == 1 and not (parts.links is not None and len(parts.links)):
        cross_chunk, cross_rows, cross_src = pieces_chunk[0], pieces_rows[0], pieces_src[0]
    elif pieces_rows:  # stable: a piece already in chunk order keeps its order within a chunk
        cross_chunk = np.concatenate(pieces_chunk)
        o = sort_order([cross_chunk], [layout.n_chunks])
        cross_chunk = cross_chunk[o]
        cross_rows = np.take(np.concatenate(pieces_rows), o, axis=0)
        cross_src = np.concatenate(pieces_src)[o]
    else:
        cross_chunk = np.zeros(0, dtype=np.int64)
        cross_rows = np.zeros((0, width), dtype=np.int64)
        cross_src = np.zeros(0, dtype=np.int64)
    return LinkPlan(local_chunk, local_rows, local_src, cross_chunk, cross_rows, cross_src)
