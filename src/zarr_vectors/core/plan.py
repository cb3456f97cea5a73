"""Row planning: where every vertex and link of a level goes (FORMAT.md §2, §6, §7).

:func:`plan_level` sorts vertices into chunks once (sorting keys, not rows) and derives every
per-chunk table from that order: fragments, the object manifest, cross-chunk links and
chunk-local links.  Everything is vectorised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.ragged import offsets_from_counts, run_starts, sort_order

__all__ = ["GeometryParts", "LevelPlan", "plan_level"]

IntArray = npt.NDArray[np.int64]


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


def _traversal_rank(parts: GeometryParts) -> IntArray:
    """Rank of each vertex in (object, input order); identity when objects are contiguous."""
    if parts.rank is not None:
        return parts.rank
    obj = parts.vertex_object
    n = len(parts.positions)
    if obj is None or n == 0 or np.all(obj[1:] >= obj[:-1]):
        return np.arange(n, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(obj, kind="stable")] = np.arange(n, dtype=np.int64)
    return rank


def _is_identity(rank: IntArray) -> bool:
    return bool(rank.size == 0 or (rank[0] == 0 and np.all(rank[1:] > rank[:-1])))


def plan_level(parts: GeometryParts, layout: ChunkLayout) -> LevelPlan:
    """Compute the placement of every vertex, fragment, manifest ref and link."""
    pos = parts.positions
    n = len(pos)
    flat, bins = layout.locate(pos)
    nbins = int(np.prod(layout.bins_per_chunk))
    obj = parts.vertex_object
    rank = _traversal_rank(parts)
    if obj is None:
        order = sort_order([flat, bins], [layout.n_chunks, nbins])
    elif parts.ordered:
        # rows of a chunk in traversal order: visit vertices by rank, then stable-sort by chunk
        by_rank = np.argsort(rank, kind="stable") if not _is_identity(rank) else None
        if by_rank is None:
            order = sort_order([flat], [layout.n_chunks])
        else:
            order = by_rank[sort_order([flat[by_rank]], [layout.n_chunks])]
    else:
        order = sort_order([flat, obj, bins], [layout.n_chunks, max(parts.n_objects, 1), nbins])
    s_flat, s_bin = flat[order], bins[order]
    s_obj = np.full(n, -1, dtype=np.int64) if obj is None else obj[order]
    s_rank = rank[order]

    starts = run_starts(s_flat)
    chunks = s_flat[starts]
    chunk_offsets = np.append(starts, n).astype(np.int64)
    counts = np.diff(chunk_offsets)
    vertex_counts = np.zeros(layout.n_chunks, dtype=np.int64)
    vertex_counts[chunks] = counts
    row_in_chunk = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)

    # a break in traversal order inside one chunk also ends a fragment / manifest ref
    gap = np.zeros(n, dtype=bool)
    if obj is not None and parts.ordered and n:
        gap[1:] = s_rank[1:] != s_rank[:-1] + 1
    f_starts = run_starts(s_flat, s_obj, s_bin, extra=gap)
    f_counts = np.diff(np.append(f_starts, n))
    fragments = (
        np.stack([s_bin[f_starts], s_obj[f_starts], row_in_chunk[f_starts], f_counts], axis=1)
        .astype(np.int64)
        .reshape(-1, 4)
    )

    manifest = np.zeros((0, layout.ndim + 2), dtype=np.int64)
    object_offsets = np.zeros(parts.n_objects + 1, dtype=np.int64)
    ref_chunk = ref_first = ref_last = np.zeros(0, dtype=np.int64)
    ref_obj = np.zeros(0, dtype=np.int64)
    if obj is not None:
        r_starts = run_starts(s_flat, s_obj, extra=gap)
        r_counts = np.diff(np.append(r_starts, n))
        ref_obj = s_obj[r_starts]
        key2 = s_rank[r_starts] if parts.ordered else s_flat[r_starts]
        ref_order = sort_order([ref_obj, key2], [parts.n_objects, max(n, layout.n_chunks, 1)])
        r_starts, r_counts, ref_obj = r_starts[ref_order], r_counts[ref_order], ref_obj[ref_order]
        ref_chunk, ref_first = s_flat[r_starts], r_starts
        ref_last = r_starts + r_counts - 1
        manifest = np.concatenate(
            [layout.coords_of_flat(ref_chunk), row_in_chunk[r_starts, None], r_counts[:, None]],
            axis=1,
        ).astype(np.int64)
        object_offsets = offsets_from_counts(np.bincount(ref_obj, minlength=parts.n_objects))

    links = None
    if parts.links is not None or (parts.sequential and obj is not None):
        links = _plan_links(
            parts,
            layout,
            order,
            s_flat,
            row_in_chunk,
            ref_obj,
            ref_chunk,
            ref_first,
            ref_last,
        )
    return LevelPlan(
        order=order,
        chunks=chunks,
        chunk_offsets=chunk_offsets,
        vertex_counts=vertex_counts.reshape(layout.grid.shape),
        fragments=fragments,
        fragment_chunk=s_flat[f_starts],
        manifest=manifest,
        object_offsets=object_offsets,
        links=links,
        ref_object=ref_obj,
        ref_first_row=ref_first,
    )


def _plan_links(
    parts: GeometryParts,
    layout: ChunkLayout,
    order: IntArray,
    s_flat: IntArray,
    row_in_chunk: IntArray,
    ref_obj: IntArray,
    ref_chunk: IntArray,
    ref_first: IntArray,
    ref_last: IntArray,
) -> LinkPlan:
    n = len(order)
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n, dtype=np.int64)  # input vertex -> sorted row
    pieces_chunk, pieces_rows, pieces_src = [], [], []
    local_chunk = np.zeros(0, dtype=np.int64)
    local_rows = np.zeros((0, 0), dtype=np.int32)
    local_src = np.zeros(0, dtype=np.int64)

    def s_coords(rows: IntArray) -> IntArray:
        return layout.coords_of_flat(s_flat[rows])

    if parts.links is not None and len(parts.links):
        ends = where[parts.links]  # (L, k) sorted rows
        owner = s_flat[ends[:, 0]]
        same = np.all(s_flat[ends] == owner[:, None], axis=1)
        local_idx = np.flatnonzero(same)
        o = np.argsort(owner[local_idx], kind="stable")
        local_idx = local_idx[o]
        local_chunk = owner[local_idx]
        local_rows = row_in_chunk[ends[local_idx]].astype(np.int32)
        local_src = local_idx
        cross_idx = np.flatnonzero(~same)
        e = ends[cross_idx]
        rows = np.concatenate(
            [
                np.concatenate([s_coords(e[:, j]), row_in_chunk[e[:, j], None]], axis=1)
                for j in range(e.shape[1])
            ],
            axis=1,
        )
        pieces_chunk.append(owner[cross_idx])
        pieces_rows.append(rows)
        pieces_src.append(cross_idx)
    elif parts.links is not None:
        k = parts.links.shape[1] if parts.links.ndim == 2 else 2
        local_rows = np.zeros((0, k), dtype=np.int32)
    if parts.sequential and len(ref_obj) > 1:
        join = np.flatnonzero(ref_obj[1:] == ref_obj[:-1])  # ref j joins ref j+1
        a, b = ref_last[join], ref_first[join + 1]
        rows = np.concatenate(
            [s_coords(a), row_in_chunk[a, None], s_coords(b), row_in_chunk[b, None]], axis=1
        )
        pieces_chunk.append(ref_chunk[join])
        pieces_rows.append(rows)
        pieces_src.append(np.full(len(join), -1, dtype=np.int64))
    width = 0 if not pieces_rows else pieces_rows[0].shape[1]
    if pieces_rows:
        cross_chunk = np.concatenate(pieces_chunk)
        cross_rows = np.concatenate(pieces_rows).astype(np.int64)
        cross_src = np.concatenate(pieces_src)
        o = np.argsort(cross_chunk, kind="stable")
        cross_chunk, cross_rows, cross_src = cross_chunk[o], cross_rows[o], cross_src[o]
    else:
        cross_chunk = np.zeros(0, dtype=np.int64)
        cross_rows = np.zeros((0, width), dtype=np.int64)
        cross_src = np.zeros(0, dtype=np.int64)
    return LinkPlan(local_chunk, local_rows, local_src, cross_chunk, cross_rows, cross_src)
