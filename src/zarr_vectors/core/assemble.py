"""Turn spilled batches into a level: global numbering, then one round of blocks at a time.

:class:`Assembly` is computed once from every :class:`~zarr_vectors.core.spill.BatchSummary`:
vertex and object offsets of each batch, final (sorted) categories and per-batch code maps,
per-vertex user ids → dense ids.  It is small and picklable, so rounds can run in this process
or on cluster workers.  A *round* is a set of blocks of chunks: it loads their spilled rows,
maps them to global values, plans them with the in-memory planner and writes their payloads.
Every chunk lives in one block, so rounds write disjoint chunks (FORMAT.md §6).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout, grid_for_bounds
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.plan import GeometryParts, LinkPlan, plan_level
from zarr_vectors.core.ragged import as_index, offsets_from_counts, sort_order, unique_sorted
from zarr_vectors.core.spill import BatchSummary, ColumnInfo
from zarr_vectors.core.writer import (
    LevelWriter,
    StoreOptions,
    column_attrs,
    write_dense_arrays,
    write_fragments,
    write_link_plan,
    write_rows,
)
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.statistics import write_payload_statistics
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind
from zarr_vectors.spec.metadata import BoundingBox, ChunkGrid

__all__ = ["Assembly", "RoundResult", "assemble", "process_link_round", "process_round"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Categorical:
    categories: tuple[str, ...]
    remap: Mapping[int, IntArray]  # batch -> local code -> final code


@dataclass(frozen=True)
class Assembly:
    """Global numbering of a set of spilled batches."""

    directory: str
    """The spill directory (shared by every process taking part)."""
    layout: ChunkLayout
    """Chunk grid and bins of the level."""
    bounding_box: BoundingBox | None
    """Extent of all vertices."""
    n_vertices: int
    """Vertices over all batches."""
    n_objects: int
    """Dense objects over all batches."""
    has_objects: bool
    """Vertices belong to objects."""
    arity: int
    """Vertices per explicit link (0: none)."""
    dtype: str
    """Position dtype."""
    vertex_base: Mapping[int, int]
    """Batch -> global index of its first vertex."""
    object_base: Mapping[int, int]
    """Batch -> global id of its first object."""
    attributes: Mapping[str, ColumnInfo]
    """Per-vertex attributes (final categories)."""
    link_attributes: Mapping[str, ColumnInfo]
    """Per-link attributes (final categories)."""
    categorical: Mapping[str, _Categorical]
    """Vertex and link attribute code maps (link names prefixed ``link:``)."""
    distinct_uids: npt.NDArray[Any] | None
    """Sorted distinct per-vertex user object ids (their rank is the dense id)."""
    uid_before: Mapping[int, tuple[npt.NDArray[Any], IntArray]]
    """Batch -> (its distinct user ids, vertices of each in earlier batches)."""
    object_start: IntArray
    """Traversal rank of each dense object's first vertex."""
    blocks: tuple[tuple[str, int], ...]
    """Vertex block prefixes with their spilled bytes, in a fixed order."""
    link_blocks: tuple[tuple[str, int], ...]
    """Link block prefixes with their spilled bytes."""

    def rounds(self, memory_limit: int, *, links: bool = False) -> Iterator[list[str]]:
        """Group blocks into rounds of at most ``memory_limit`` spilled bytes."""
        group: list[str] = []
        size = 0
        for prefix, nbytes in self.link_blocks if links else self.blocks:
            if group and size + nbytes > memory_limit:
                yield group
                group, size = [], 0
            group.append(prefix)
            size += nbytes
        if group:
            yield group


def _check_same(summaries: Sequence[BatchSummary]) -> None:
    first = summaries[0]
    for s in summaries[1:]:
        if (s.uid_table is None) != (first.uid_table is None):
            raise InvalidInputError("give per-vertex user object ids in every batch or in none")
        if (s.has_objects, s.arity, s.dtype, s.ndim) != (
            first.has_objects,
            first.arity,
            first.dtype,
            first.ndim,
        ):
            raise InvalidInputError(
                f"batch {s.batch} differs from batch {first.batch} in objects, links, position "
                "dtype or dimensionality"
            )
        if (s.object_ids is None) != (first.object_ids is None):
            raise InvalidInputError("give ids in every batch or in none")
        for mine, theirs, what in (
            (s.attributes, first.attributes, "attributes"),
            (s.link_attributes, first.link_attributes, "link attributes"),
        ):
            if set(mine) != set(theirs):
                raise InvalidInputError(
                    f"batch {s.batch} {what} {sorted(mine)} differ from "
                    f"batch {first.batch} {sorted(theirs)}"
                )
            for k, info in mine.items():
                if not info.compatible(theirs[k]):
                    raise InvalidInputError(
                        f"attribute {k!r}: batch {s.batch} has dtype {info.dtype} shape "
                        f"{info.shape}, batch {first.batch} has {theirs[k].dtype} "
                        f"{theirs[k].shape}"
                    )


def _categorical(name: str, per_batch: Mapping[int, ColumnInfo]) -> _Categorical | None:
    infos = list(per_batch.values())
    if not infos or infos[0].categories is None:
        return None
    labels = sorted({c for info in infos for c in (info.categories or ())})
    index = {c: i for i, c in enumerate(labels)}
    remap = {
        b: np.array([index[c] for c in (info.categories or ())], dtype=np.int64)
        for b, info in per_batch.items()
    }
    return _Categorical(tuple(labels), remap)


def _final_info(name: str, info: ColumnInfo, cat: _Categorical | None) -> ColumnInfo:
    return ColumnInfo(info.dtype, info.shape, None if cat is None else cat.categories)


def assemble(
    directory: str | Path,
    summaries: Sequence[BatchSummary],
    opts: StoreOptions,
    ndim: int | None = None,
) -> Assembly:
    """Compute the global numbering of all spilled batches."""
    summaries = sorted(summaries, key=lambda s: s.batch)
    if not summaries:
        raise InvalidInputError("no batches were appended")
    _check_same(summaries)
    first = summaries[0]
    vbase = dict(
        zip(
            [s.batch for s in summaries],
            offsets_from_counts([s.n_vertices for s in summaries])[:-1].tolist(),
            strict=True,
        )
    )
    obase = dict(
        zip(
            [s.batch for s in summaries],
            offsets_from_counts([s.n_objects for s in summaries])[:-1].tolist(),
            strict=True,
        )
    )
    cats: dict[str, _Categorical] = {}
    for name in first.attributes:
        cat = _categorical(name, {s.batch: s.attributes[name] for s in summaries})
        if cat is not None:
            cats[name] = cat
    for name in first.link_attributes:
        cat = _categorical(name, {s.batch: s.link_attributes[name] for s in summaries})
        if cat is not None:
            cats["link:" + name] = cat
    distinct, before, start = _object_numbering(summaries)
    grid, box = _extent(summaries, opts, ndim or first.ndim)
    bins = opts.bin_shape or opts.chunk_shape
    blocks: dict[str, int] = {}
    links: dict[str, int] = {}
    for s in summaries:
        for prefix, nbytes in s.spilled.items():
            target = links if prefix.startswith("l_") else blocks
            target[prefix] = target.get(prefix, 0) + nbytes
    return Assembly(
        directory=str(directory),
        layout=ChunkLayout(tuple(opts.chunk_shape), tuple(bins), grid),
        bounding_box=box,
        n_vertices=sum(s.n_vertices for s in summaries),
        n_objects=len(distinct) if distinct is not None else sum(s.n_objects for s in summaries),
        has_objects=first.has_objects,
        arity=first.arity,
        dtype=first.dtype,
        vertex_base=vbase,
        object_base=obase,
        attributes={k: _final_info(k, v, cats.get(k)) for k, v in first.attributes.items()},
        link_attributes={
            k: _final_info(k, v, cats.get("link:" + k)) for k, v in first.link_attributes.items()
        },
        categorical=cats,
        distinct_uids=distinct,
        uid_before=before,
        object_start=start,
        blocks=tuple(sorted(blocks.items())),
        link_blocks=tuple(sorted(links.items())),
    )


def _object_numbering(
    summaries: Sequence[BatchSummary],
) -> tuple[npt.NDArray[Any] | None, dict[int, tuple[npt.NDArray[Any], IntArray]], IntArray]:
    """Dense ids of user ids, per-batch earlier-occurrence counts, first rank per object."""
    if summaries[0].uid_table is None:
        pieces = [s.object_counts for s in summaries if s.object_counts is not None]
        per_object = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        return None, {}, offsets_from_counts(per_object)[:-1]
    tables = [s.uid_table for s in summaries if s.uid_table is not None]
    distinct = unique_sorted(np.concatenate([t[0] for t in tables]))
    running = np.zeros(len(distinct), dtype=np.int64)
    before: dict[int, tuple[npt.NDArray[Any], IntArray]] = {}
    for s in summaries:
        assert s.uid_table is not None
        uniq, counts = s.uid_table
        idx = np.searchsorted(distinct, uniq)
        before[s.batch] = (uniq, running[idx].copy())
        running[idx] += counts
    return distinct, before, offsets_from_counts(running)[:-1]


def _extent(
    summaries: Sequence[BatchSummary], opts: StoreOptions, ndim: int
) -> tuple[ChunkGrid, BoundingBox | None]:
    los = [s.lo for s in summaries if s.lo is not None]
    his = [s.hi for s in summaries if s.hi is not None]
    box = None
    if los and his:
        box = BoundingBox(
            min=tuple(np.min(los, axis=0).tolist()), max=tuple(np.max(his, axis=0).tolist())
        )
    cover = opts.bounds or box
    if cover is None:
        return ChunkGrid(origin=(0,) * ndim, shape=(1,) * ndim), None
    lo, hi = np.asarray(cover.min), np.asarray(cover.max)
    if opts.bounds is not None and box is not None:
        lo, hi = np.minimum(lo, box.min), np.maximum(hi, box.max)
    return grid_for_bounds(lo.tolist(), hi.tolist(), opts.chunk_shape, opts.shards), box


# -- rounds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundResult:
    """What a round reports back to the coordinator."""

    chunks: IntArray
    """Flat indices of the chunks written."""
    counts: IntArray
    """Vertices of each chunk written."""
    refs: IntArray
    """(R, 2 + D + 2) ``[object, first rank, chunk coords..., start, count]`` manifest refs."""
    where: IntArray | None
    """(n, 3) ``[global vertex, flat chunk, row]`` when links must be resolved."""


def _files(directory: Path, prefix: str, field_name: str) -> list[Path]:
    return sorted((directory / prefix).glob(f"b*_{field_name}.npy"))


def _batch_of(path: Path) -> int:
    return int(path.name[1:10])


def _load(
    asm: Assembly, prefixes: Sequence[str], field_name: str
) -> tuple[npt.NDArray[Any] | None, IntArray]:
    """Concatenate a field over blocks (each in batch order); also the batch of each row."""
    arrays, batches = [], []
    for prefix in prefixes:
        for path in _files(Path(asm.directory), prefix, field_name):
            values = np.load(path)
            arrays.append(values)
            batches.append(np.full(len(values), _batch_of(path), dtype=np.int64))
    if not arrays:
        return None, np.zeros(0, dtype=np.int64)
    return np.concatenate(arrays), np.concatenate(batches)


def _by_batch(mapping: Mapping[int, int], batch: IntArray) -> IntArray:
    keys = np.array(sorted(mapping), dtype=np.int64)
    values = np.array([mapping[k] for k in keys.tolist()], dtype=np.int64)
    return values[np.searchsorted(keys, batch)]


def _remap_codes(cat: _Categorical, codes: npt.NDArray[Any], batch: IntArray) -> npt.NDArray[Any]:
    out = np.empty_like(codes)
    for b in unique_sorted(batch).tolist():
        sel = batch == b
        out[sel] = cat.remap[b][codes[sel]]
    return out


def load_parts(asm: Assembly, prefixes: Sequence[str]) -> tuple[GeometryParts, IntArray] | None:
    """Load blocks as parts with global object ids, ranks and final category codes."""
    pos, batch = _load(asm, prefixes, "pos")
    if pos is None:
        return None
    lidx, _ = _load(asm, prefixes, "lidx")
    assert lidx is not None
    gidx = lidx + _by_batch(asm.vertex_base, batch)
    obj = rank = None
    if asm.has_objects:
        local, _ = _load(asm, prefixes, "obj")
        occ, _ = _load(asm, prefixes, "occ")
        assert local is not None
        assert occ is not None
        if asm.distinct_uids is None:
            obj = local.astype(np.int64) + _by_batch(asm.object_base, batch)
        else:
            obj = np.searchsorted(asm.distinct_uids, local).astype(np.int64)
            occ = occ + _uid_before(asm, local, batch)
        rank = asm.object_start[obj] + occ
    attrs: dict[str, Column] = {}
    for name, info in asm.attributes.items():
        values, _ = _load(asm, prefixes, f"a_{name}")
        assert values is not None
        cat = asm.categorical.get(name)
        attrs[name] = Column(
            values if cat is None else _remap_codes(cat, values, batch), info.categories
        )
    parts = GeometryParts(
        positions=pos,
        vertex_object=obj,
        n_objects=asm.n_objects,
        ordered=obj is not None,
        vertex_attributes=attrs,
        rank=rank,
    )
    return parts, gidx


def _uid_before(asm: Assembly, uid: npt.NDArray[Any], batch: IntArray) -> IntArray:
    out = np.zeros(len(uid), dtype=np.int64)
    for b in unique_sorted(batch).tolist():
        sel = batch == b
        uniq, before = asm.uid_before[b]
        out[sel] = before[np.searchsorted(uniq, uid[sel])]
    return out


def process_round(
    asm: Assembly, prefixes: Sequence[str], w: LevelWriter, *, need_where: bool
) -> RoundResult:
    """Plan and write the vertex payloads of some blocks."""
    loaded = load_parts(asm, prefixes)
    empty = np.zeros(0, dtype=np.int64)
    if loaded is None:
        return RoundResult(empty, empty, np.zeros((0, asm.layout.ndim + 4), np.int64), None)
    parts, gidx = loaded
    plan = plan_level(parts, asm.layout)
    order = as_index(plan.order)
    counts = np.diff(plan.chunk_offsets)
    write_rows(w, parts, order, plan.chunks, plan.chunk_offsets)
    write_fragments(w, plan.fragments, plan.chunks, plan.fragment_offsets)
    refs = np.zeros((0, asm.layout.ndim + 4), np.int64)
    if asm.has_objects:
        first = gidx[order[plan.ref_first_row]]
        refs = np.concatenate([plan.ref_object[:, None], first[:, None], plan.manifest], axis=1)
    where = None
    if need_where:
        rows = np.arange(len(gidx)) - np.repeat(plan.chunk_offsets[:-1], counts)
        row_chunk = np.repeat(plan.chunks, counts)
        where = np.stack([gidx[order], row_chunk, rows], axis=1).astype(np.int64)
    return RoundResult(plan.chunks, counts, refs, where)


def declare_arrays(asm: Assembly, w: LevelWriter) -> None:
    """Create every payload array rounds write into (before any round runs)."""
    d = asm.layout.ndim
    w.declare(L.VERTICES, ArrayKind.VERTICES, asm.dtype, d)
    w.declare(L.VERTEX_FRAGMENTS, ArrayKind.VERTEX_FRAGMENTS, "<i8", L.FRAGMENT_WIDTH)
    for name, info in asm.attributes.items():
        w.declare(
            L.attribute_path(L.ATTRIBUTES, name),
            ArrayKind.ATTRIBUTE,
            info.dtype,
            int(np.prod(info.shape)),
            _info_attrs(info),
        )
    if asm.arity:
        w.declare(L.LINKS, ArrayKind.LINKS, "<i4", asm.arity, {"arity": asm.arity})
        for name, info in asm.link_attributes.items():
            w.declare(
                L.attribute_path(L.LINK_ATTRIBUTES, name),
                ArrayKind.LINK_ATTRIBUTE,
                info.dtype,
                int(np.prod(info.shape)),
                _info_attrs(info),
            )


def _info_attrs(info: ColumnInfo) -> dict[str, Any]:
    extra: dict[str, Any] = {"shape": list(info.shape)}
    if info.categories is not None:
        extra["categories"] = list(info.categories)
    return extra


def process_link_round(
    asm: Assembly, prefixes: Sequence[str], w: LevelWriter, where_path: str | Path
) -> tuple[LinkPlan, dict[str, Column]]:
    """Write the chunk-local links of some blocks; return their cross-chunk links."""
    ends, batch = _load(asm, prefixes, "ends")
    if ends is None:
        raise InvalidInputError(f"no links spilled under {list(prefixes)}")
    ends = ends.astype(np.int64) + _by_batch(asm.vertex_base, batch)[:, None]
    where = np.load(where_path, mmap_mode="r")
    attrs: dict[str, Column] = {}
    for name, info in asm.link_attributes.items():
        values, _ = _load(asm, prefixes, f"a_{name}")
        assert values is not None
        cat = asm.categorical.get("link:" + name)
        attrs[name] = Column(
            values if cat is None else _remap_codes(cat, values, batch), info.categories
        )
    plan = split_links(ends, where, asm.layout)
    local = LinkPlan(
        plan.local_chunk,
        plan.local_rows,
        plan.local_source,
        np.zeros(0, np.int64),
        np.zeros((0, 0), np.int64),
        np.zeros(0, np.int64),
    )
    write_link_plan(w, local, attrs, explicit=True)
    cross_attrs = {k: c.take(plan.cross_source) for k, c in attrs.items()}
    return plan, cross_attrs


def split_links(ends: IntArray, where: npt.NDArray[np.int64], layout: ChunkLayout) -> LinkPlan:
    """Split global links into chunk-local and cross-chunk parts (as the in-memory planner)."""
    k = ends.shape[1]
    chunk = where[ends, 0] if len(ends) else np.zeros((0, k), np.int64)
    row = where[ends, 1] if len(ends) else np.zeros((0, k), np.int64)
    owner = chunk[:, 0]
    same = np.all(chunk == owner[:, None], axis=1)
    local = np.flatnonzero(same)
    bound = max(int(row.max(initial=0)) + 1, 1)
    if k == 2:  # edges sorted inside a chunk by their rows (as the in-memory planner)
        keys = [owner[local], row[local, 0], row[local, 1]]
        local = local[sort_order(keys, [layout.n_chunks, bound, bound])]
    else:
        local = local[np.argsort(owner[local], kind="stable")]
    cross = np.flatnonzero(~same)
    pieces = [
        np.concatenate([layout.coords_of_flat(chunk[cross, j]), row[cross, j, None]], axis=1)
        for j in range(k)
    ]
    cross_rows = (
        np.concatenate(pieces, axis=1)
        if len(cross)
        else np.zeros((0, k * (layout.ndim + 1)), np.int64)
    )
    co = _by_owner(owner[cross], row[cross, 0] if k == 2 else None, layout.n_chunks, bound)
    return LinkPlan(
        owner[local],
        row[local].astype(np.int32),
        local,
        owner[cross][co],
        cross_rows[co].astype(np.int64),
        cross[co],
    )


def _by_owner(owner: IntArray, first: IntArray | None, n_chunks: int, bound: int) -> IntArray:
    """Stable order of cross-chunk links by owner chunk, then endpoint 0's row for edges."""
    if first is None:
        return np.argsort(owner, kind="stable").astype(np.int64)
    return sort_order([owner, first], [n_chunks, max(bound, 1)])


def merge_refs(
    refs: Sequence[IntArray], n_objects: int, ndim: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Sort per-round refs by (object, traversal rank) into manifest rows and offsets."""
    allrefs = np.concatenate(refs) if refs else np.zeros((0, ndim + 4), np.int64)
    allrefs = allrefs[np.lexsort((allrefs[:, 1], allrefs[:, 0]))]
    ref_obj = allrefs[:, 0]
    offsets = offsets_from_counts(np.bincount(ref_obj, minlength=n_objects))
    return np.ascontiguousarray(allrefs[:, 2:]), offsets, ref_obj


def write_joins(w: LevelWriter, layout: ChunkLayout, manifest: IntArray, ref_obj: IntArray) -> None:
    """Cross-chunk records joining consecutive refs of each path (stored in the first chunk)."""
    d = layout.ndim
    join = np.flatnonzero(ref_obj[1:] == ref_obj[:-1])
    if join.size == 0:
        return
    a, b = manifest[join], manifest[join + 1]
    rows = np.concatenate(
        [a[:, :d], (a[:, d] + a[:, d + 1] - 1)[:, None], b[:, :d], b[:, d][:, None]], axis=1
    ).astype(np.int64)
    owner = layout.flat_index(a[:, :d])
    o = np.argsort(owner, kind="stable")
    empty = np.zeros(0, np.int64)
    lp = LinkPlan(
        empty, np.zeros((0, 2), np.int32), empty, owner[o], rows[o], np.full(len(o), -1, np.int64)
    )
    write_link_plan(w, lp, {}, explicit=False)


def write_cross_links(
    w: LevelWriter, plans: Sequence[tuple[LinkPlan, dict[str, Column]]], asm: Assembly
) -> None:
    """Write the cross-chunk links gathered from link rounds (stable by owner chunk)."""
    if not plans:
        return
    owner = np.concatenate([p.cross_chunk for p, _ in plans])
    if owner.size == 0:
        return
    rows = np.concatenate([p.cross_rows for p, _ in plans])
    d = asm.layout.ndim
    first = rows[:, d] if asm.arity == 2 else None
    o = _by_owner(owner, first, asm.layout.n_chunks, int(rows[:, d].max(initial=0)) + 1)
    attrs = {
        k: Column(np.concatenate([a[k].values for _, a in plans])[o], info.categories)
        for k, info in asm.link_attributes.items()
    }
    lp = LinkPlan(
        np.zeros(0, np.int64),
        np.zeros((0, asm.arity), np.int32),
        np.zeros(0, np.int64),
        owner[o],
        rows[o],
        np.arange(len(o), dtype=np.int64),
    )
    _write_cross_only(w, lp, attrs)


def _write_cross_only(w: LevelWriter, lp: LinkPlan, attrs: Mapping[str, Column]) -> None:
    w.payload(
        L.CROSS_CHUNK_LINKS,
        ArrayKind.CROSS_CHUNK_LINKS,
        lp.cross_rows,
        lp.cross_chunk,
        {"endpoints": int(lp.cross_rows.shape[1] // (len(w.grid_shape) + 1))},
    )
    for name, col in attrs.items():
        w.payload(
            L.attribute_path(L.CROSS_CHUNK_LINK_ATTRIBUTES, name),
            ArrayKind.CROSS_CHUNK_LINK_ATTRIBUTE,
            col.rows,
            lp.cross_chunk,
            column_attrs(col),
        )


def finish_dense(
    w: LevelWriter,
    asm: Assembly,
    vertex_counts: IntArray,
    manifest: IntArray,
    offsets: IntArray,
    summaries: Sequence[BatchSummary],
) -> None:
    """Write vertex counts, object index, object attributes and groups."""
    summaries = sorted(summaries, key=lambda s: s.batch)
    obj_attrs: dict[str, Column] = {}
    for name in summaries[0].object_attributes:
        cols = [s.object_attributes[name] for s in summaries]
        obj_attrs[name] = _concat_columns(name, cols)
    if asm.distinct_uids is not None:
        d = asm.distinct_uids
        if not (len(d) == 0 or (d[0] == 0 and d[-1] == len(d) - 1)):
            obj_attrs["id"] = Column(d)
    ids = [s.object_ids for s in summaries if s.object_ids is not None]
    if ids:
        allids = np.concatenate(ids)
        uniq, counts = np.unique(allids, return_counts=True)
        if (counts > 1).any():
            raise InvalidInputError(f"ids: duplicate id {uniq[np.argmax(counts > 1)]!r}")
        if not np.array_equal(allids, np.arange(len(allids))):
            obj_attrs["id"] = Column(np.ascontiguousarray(allids))
    write_payload_statistics(w, w.group, asm.layout, vertex_counts)  # as write_store does
    write_dense_arrays(
        w,
        vertex_counts.reshape(asm.layout.grid.shape),
        manifest if asm.has_objects else None,
        offsets if asm.has_objects else None,
        obj_attrs,
        _groups(asm, summaries),
    )


def _concat_columns(name: str, cols: Sequence[Column]) -> Column:
    if cols[0].categories is None:
        return Column(np.concatenate([c.values for c in cols]))
    labels = sorted({c for col in cols for c in (col.categories or ())})
    index = {c: i for i, c in enumerate(labels)}
    pieces = [
        np.array([index[c] for c in (col.categories or ())], np.int64)[col.values].astype(
            col.values.dtype
        )
        for col in cols
    ]
    return Column(np.concatenate(pieces), tuple(labels))


def _groups(asm: Assembly, summaries: Sequence[BatchSummary]) -> GroupTable | None:
    names: list[str] = []
    members: dict[str, list[IntArray]] = {}
    attrs: dict[str, dict[str, Any]] = {}
    for s in summaries:
        if s.groups is None:
            continue
        for g, name in enumerate(s.groups.names):
            if name not in members:
                names.append(name)
                members[name] = []
                attrs[name] = {k: c.values[g] for k, c in s.groups.attributes.items()}
            members[name].append(s.groups.members_of(g) + asm.object_base[s.batch])
    if not names:
        return None
    flat = [np.concatenate(members[n]) for n in names]
    gattrs = {k: Column(np.asarray([attrs[n][k] for n in names])) for k in attrs[names[0]]}
    return GroupTable(
        tuple(names),
        offsets_from_counts([len(m) for m in flat]),
        np.concatenate(flat).astype(np.int64),
        gattrs,
    )
