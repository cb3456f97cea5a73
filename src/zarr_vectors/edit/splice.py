"""What a chunk-incremental append writes: the touched chunks' payloads and the dense arrays.

Appended objects get the dense ids after the stored ones, so in every chunk a fresh write of
the old and the new data together orders the stored rows first (by object id) and the new rows
after them.  The payload of a chunk the new data lands in is therefore the stored payload
followed by the new data's own payload for that chunk, with its row numbers (fragment starts,
chunk-local links, cross-chunk endpoint rows, manifest starts) shifted by the chunk's stored
row count and its object ids by the stored object count.  A point cloud without objects orders
a chunk's rows by bin instead: its touched chunks are planned again from their stored rows and
the new ones.  With ``segment=True`` (what appends use) only the new rows are planned, as an
append segment holds them (:mod:`zarr_vectors.core.segments`): the same shifted row numbers for
object types, the new points ordered by bin alone for point clouds without objects, and the
statistics of the touched chunks merged from the stored ones and the new rows.  Dense arrays (``vertex_counts``, the object index, object attributes, groups,
statistics and value sets) are small and computed whole: the stored values with the new ones
merged in, exactly as a fresh write computes them.

:func:`plan_append` returns None whenever the result could differ from a fresh write (ids that
renumber stored objects, category tables that change, missing statistics, input-order
attributes); the caller then rebuilds the store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout, axis_bounds, grid_for_bounds
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.payload.dense import read_dense_whole
from zarr_vectors.core.plan import GeometryParts, LevelPlan, as_table, plan_level
from zarr_vectors.core.ragged import as_index, offsets_from_counts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.writer import column_attrs
from zarr_vectors.edit.merge import ID, check_schema, merge_parts
from zarr_vectors.query.statistics import MAX_VALUES, StatArray, counts_crc32
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind, GeometryTypeName
from zarr_vectors.spec.metadata import BoundingBox, LevelMetadata

__all__ = ["AppendPlan", "Block", "as_rows", "plan_append", "payload_kind"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Block:
    """Rows of some chunks: chunk ``i`` of the plan's ``touched`` holds ``offsets[i]:[i+1]``."""

    values: npt.NDArray[Any]
    offsets: IntArray
    extra: dict[str, Any]
    """Array attributes beyond kind, dtype and width (for an array the store lacks)."""


@dataclass(frozen=True)
class AppendPlan:
    """Everything an incremental append writes."""

    layout: ChunkLayout
    """Chunk layout of the new level 0 (the grid may have grown)."""
    touched: IntArray
    """Flat indices (new grid) of the chunks whose payloads are rewritten, ascending."""
    payloads: dict[str, Block]
    """Final rows of the touched chunks, per payload array path (``segment``: only the new
    rows, as an append segment holds them, see :mod:`zarr_vectors.core.segments`)."""
    vertex_counts: IntArray
    manifest: IntArray | None
    object_offsets: IntArray | None
    object_attributes: dict[str, Column]
    groups: GroupTable | None
    statistics: list[StatArray]
    box: BoundingBox
    level: LevelMetadata
    segment: bool = False
    """The payloads are an append segment's rows, not whole chunks."""

    def payload_rows(self) -> int:
        """Vertex rows the payloads hold."""
        return int(self.payloads[L.VERTICES].offsets[-1])


def payload_kind(path: str) -> ArrayKind:
    """Return the ``zv_array`` kind of a per-chunk array path."""
    head = path.split("/")[0]
    return {
        L.VERTICES: ArrayKind.VERTICES,
        L.VERTEX_FRAGMENTS: ArrayKind.VERTEX_FRAGMENTS,
        L.ATTRIBUTES: ArrayKind.ATTRIBUTE,
        L.LINKS: ArrayKind.LINKS,
        L.LINK_ATTRIBUTES: ArrayKind.LINK_ATTRIBUTE,
        L.CROSS_CHUNK_LINKS: ArrayKind.CROSS_CHUNK_LINKS,
        L.CROSS_CHUNK_LINK_ATTRIBUTES: ArrayKind.CROSS_CHUNK_LINK_ATTRIBUTE,
    }[head]


def _union(box: BoundingBox, pos: npt.NDArray[Any]) -> BoundingBox:
    lo, hi = axis_bounds(pos)
    lo, hi = np.minimum(lo, box.min), np.maximum(hi, box.max)
    return BoundingBox(min=tuple(float(v) for v in lo), max=tuple(float(v) for v in hi))


def _stored_columns(reader: LevelReader, prefix: str) -> dict[str, Column]:
    """Empty columns with each stored array's dtype, shape and categories (schema checks)."""
    none = np.zeros(0, dtype=np.int64)
    return {n: reader.column(f"{prefix}/{n}", none) for n in reader.names(prefix)}


def _recode(stored: dict[str, Column], new: dict[str, Column]) -> dict[str, Column] | None:
    """Return the new columns coded as the stored ones (None: a label the store lacks).

    A fresh write of stored and new labels together derives the stored category table when
    every new label is a stored one, so the new codes are mapped onto it.
    """
    out: dict[str, Column] = {}
    for name, col in new.items():
        cats = stored[name].categories
        dtype = stored[name].values.dtype
        if cats is None or col.categories == cats:
            out[name] = Column(col.values.astype(dtype, copy=False), col.categories)
            continue
        assert col.categories is not None  # same kind as the stored column (check_schema)
        where = {c: i for i, c in enumerate(cats)}
        if any(c not in where for c in col.categories):
            return None
        lookup = np.array([where[c] for c in col.categories], dtype=dtype)
        out[name] = Column(lookup[col.values], cats)
    return out


def _object_parts(reader: LevelReader, new: GeometryParts) -> GeometryParts:
    """Return the stored object-level data (no vertices) in the form :func:`merge_parts` takes."""
    d = reader.meta.spatial_dims
    return GeometryParts(
        positions=np.zeros((0, d), dtype=new.positions.dtype),
        vertex_object=np.zeros(0, dtype=np.int64),
        n_objects=reader.n_objects,
        vertex_attributes={n: Column(c.values[:0], c.categories) for n, c in _cols(new).items()},
        link_attributes={n: Column(c.values[:0], c.categories) for n, c in _lcols(new).items()},
        object_attributes=reader.object_attributes(None),
        groups=reader.groups,
    )


def _cols(parts: GeometryParts) -> dict[str, Column]:
    return dict(parts.vertex_attributes)


def _lcols(parts: GeometryParts) -> dict[str, Column]:
    return dict(parts.link_attributes)


def _old_to_new(old: ChunkLayout, new: ChunkLayout, flats: IntArray) -> IntArray:
    """Flat indices in ``new`` of the ``old`` grid's chunks ``flats``."""
    return new.flat_index(old.coords_of_flat(flats))


def _new_to_old(old: ChunkLayout, new: ChunkLayout, flats: IntArray) -> IntArray:
    """Flat indices in ``old`` of ``new`` chunks, -1 where the old grid has no such chunk."""
    idx = new.coords_of_flat(flats) - np.asarray(old.grid.origin, dtype=np.int64)
    shape = np.asarray(old.grid.shape, dtype=np.int64)
    inside = np.all((idx >= 0) & (idx < shape), axis=1)
    out = np.full(len(flats), -1, dtype=np.int64)
    if inside.any():
        out[inside] = np.ravel_multi_index(tuple(idx[inside].T), old.grid.shape)
    return out


@dataclass(frozen=True)
class _Frame:
    """The stored and new grids and the stored rows per touched chunk."""

    reader: LevelReader
    layout: ChunkLayout
    touched: IntArray
    old_flat: IntArray
    """Old-grid flat index of each touched chunk (-1: none)."""
    old_counts: IntArray
    """Stored vertex count of each touched chunk."""
    counts_new_grid: IntArray
    """Stored vertex count of every chunk of the new grid."""

    def old_block(self, path: str) -> tuple[npt.NDArray[Any], IntArray]:
        """Return the stored rows of ``path`` in the touched chunks, with CSR offsets over ``touched``."""
        has = self.old_counts > 0
        block = self.reader.rows(path, self.old_flat[has])
        counts = np.zeros(len(self.touched), dtype=np.int64)
        counts[has] = np.diff(block.offsets)
        return block.values, offsets_from_counts(counts)


def _interleave(
    a: npt.NDArray[Any], a_off: IntArray, b: npt.NDArray[Any], b_off: IntArray
) -> tuple[npt.NDArray[Any], IntArray]:
    """Per chunk: the rows of ``a`` then those of ``b`` (both CSR over the same chunks)."""
    b = as_rows(b).astype(a.dtype, copy=False) if len(a) else as_rows(b)
    out_off = offsets_from_counts(np.diff(a_off) + np.diff(b_off))
    if not len(a):
        return b, out_off
    out = np.empty((int(out_off[-1]), a.shape[1]), dtype=a.dtype)
    # one slice copy per chunk and source: a few hundred memcpys, no per-row index arrays
    for o, a0, a1, b0, b1 in zip(
        out_off[:-1].tolist(),
        a_off[:-1].tolist(),
        a_off[1:].tolist(),
        b_off[:-1].tolist(),
        b_off[1:].tolist(),
        strict=True,
    ):
        mid = o + a1 - a0
        out[o:mid] = a[a0:a1]
        out[mid : mid + b1 - b0] = b[b0:b1]
    return out, out_off


def as_rows(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``values`` as (n, K) rows (K: the product of the trailing dimensions, 1 for none)."""
    if values.ndim == 2:
        return values
    return values.reshape(len(values), int(np.prod(values.shape[1:], dtype=np.int64)))


def _csr(chunk_of_row: IntArray, touched: IntArray) -> IntArray:
    """CSR offsets over ``touched`` of rows sorted by chunk."""
    pos = np.searchsorted(touched, chunk_of_row)
    return offsets_from_counts(np.bincount(pos, minlength=len(touched)))


def _repeat_offsets(offsets: IntArray) -> IntArray:
    """Touched-chunk position of each row of a CSR block."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def plan_append(
    reader: LevelReader, new: GeometryParts, *, ids_given: bool, segment: bool = False
) -> AppendPlan | None:
    """Plan appending ``new`` to the stored level 0; None when only a rebuild is exact.

    ``segment``: plan the new rows as an append segment instead of whole chunks.
    """
    meta = reader.meta
    stored_attrs = _stored_columns(reader, L.ATTRIBUTES)
    if L.INPUT_INDEX in stored_attrs or meta.bounding_box is None or not len(new.positions):
        return None
    if new.positions.shape[1] != meta.spatial_dims:
        return None
    has_objects = reader.has(L.OBJECT_OFFSETS)
    if has_objects != new.has_objects:
        return None
    check_schema(stored_attrs, new.vertex_attributes, "attribute")
    stored_link = _stored_columns(reader, L.LINK_ATTRIBUTES)
    check_schema(stored_link, new.link_attributes, "link attribute")
    attrs, links = _recode(stored_attrs, _cols(new)), _recode(stored_link, _lcols(new))
    if attrs is None or links is None:
        return None
    new = replace(new, vertex_attributes=attrs, link_attributes=links)
    box = _union(meta.bounding_box, new.positions)
    grid = grid_for_bounds(box.min, box.max, meta.chunk_shape)
    layout = ChunkLayout(meta.chunk_shape, reader.level_meta.bin_shape, grid)
    old_layout = reader.layout
    stored_flats = reader.chunks()
    counts = np.zeros(layout.n_chunks, dtype=np.int64)
    counts[_old_to_new(old_layout, layout, stored_flats)] = reader.vertex_counts[stored_flats]
    if has_objects:
        return _plan_objects(reader, new, ids_given, layout, counts, box, segment)
    if segment:
        return _plan_points_segment(reader, new, layout, counts, box)
    return _plan_points(reader, new, layout, counts, box)


def _frame(reader: LevelReader, layout: ChunkLayout, touched: IntArray, counts: IntArray) -> _Frame:
    old_flat = _new_to_old(reader.layout, layout, touched)
    return _Frame(reader, layout, touched, old_flat, counts[touched], counts)


def _plan_points(
    reader: LevelReader,
    new: GeometryParts,
    layout: ChunkLayout,
    counts: IntArray,
    box: BoundingBox,
) -> AppendPlan | None:
    """Points without objects: touched chunks planned again from stored and new rows."""
    coords = layout.chunk_coords(new.positions)
    touched = np.unique(layout.flat_index(coords))
    fr = _frame(reader, layout, touched, counts)
    old_pos, _ = fr.old_block(L.VERTICES)
    attrs: dict[str, Column] = {}
    for name, col in new.vertex_attributes.items():
        vals, _ = fr.old_block(f"{L.ATTRIBUTES}/{name}")
        vals = vals.reshape((len(vals), *col.values.shape[1:]))
        attrs[name] = Column(np.concatenate([vals, col.values]), col.categories)
    merged = GeometryParts(
        positions=np.concatenate([old_pos, new.positions.astype(old_pos.dtype, copy=False)]),
        ordered=False,
        vertex_attributes=attrs,
    )
    plan = plan_level(merged, layout)
    payloads = _vertex_payloads(merged, plan, touched)
    frags = as_table(plan.fragments)
    payloads[L.VERTEX_FRAGMENTS] = Block(frags, plan.fragment_offsets, {})
    total = counts.copy()
    total[touched] = np.diff(plan.chunk_offsets)
    stats = _statistics(reader, fr, payloads, dict(merged.vertex_attributes), total)
    if stats is None:
        return None
    return _points_plan(reader, layout, touched, payloads, total, stats, box, segment=False)


def _plan_points_segment(
    reader: LevelReader,
    new: GeometryParts,
    layout: ChunkLayout,
    counts: IntArray,
    box: BoundingBox,
) -> AppendPlan | None:
    """Points without objects as a segment: the new rows of each chunk ordered by bin."""
    parts = replace(new, ordered=False)
    plan = plan_level(parts, layout)
    touched = plan.chunks
    fr = _frame(reader, layout, touched, counts)
    payloads = _vertex_payloads(parts, plan, touched)
    for path in list(payloads):
        if reader.has(path):
            blk = payloads[path]
            dtype = reader.payload(path).attrs["dtype"]
            payloads[path] = Block(
                as_rows(blk.values).astype(dtype, copy=False), blk.offsets, blk.extra
            )
    payloads[L.VERTEX_FRAGMENTS] = Block(as_table(plan.fragments), plan.fragment_offsets, {})
    total = counts.copy()
    total[touched] += np.diff(plan.chunk_offsets)
    stats = _statistics(reader, fr, payloads, dict(parts.vertex_attributes), total, combine=True)
    if stats is None:
        return None
    return _points_plan(reader, layout, touched, payloads, total, stats, box, segment=True)


def _points_plan(
    reader: LevelReader,
    layout: ChunkLayout,
    touched: IntArray,
    payloads: dict[str, Block],
    total: IntArray,
    stats: list[StatArray],
    box: BoundingBox,
    *,
    segment: bool,
) -> AppendPlan:
    """Return the plan of an append of points without objects, given each chunk's new vertex count."""
    level = replace(
        reader.level_meta,
        vertex_count=int(total.sum()),
        chunk_count=int(np.count_nonzero(total)),
    )
    return AppendPlan(
        layout,
        touched,
        payloads,
        total.reshape(layout.grid.shape),
        None,
        None,
        {},
        None,
        stats,
        box,
        level,
        segment=segment,
    )


def _vertex_payloads(parts: GeometryParts, plan: LevelPlan, touched: IntArray) -> dict[str, Block]:
    """Vertices and vertex attributes of a plan's chunks (which must be ``touched``)."""
    if not np.array_equal(plan.chunks, touched):
        raise AssertionError("planned chunks differ from the touched chunks")
    order = as_index(plan.order)
    out = {L.VERTICES: Block(parts.positions[order], plan.chunk_offsets, {})}
    for name, col in parts.vertex_attributes.items():
        out[L.attribute_path(L.ATTRIBUTES, name)] = Block(
            col.rows[order], plan.chunk_offsets, column_attrs(col)
        )
    return out


def _plan_objects(
    reader: LevelReader,
    new: GeometryParts,
    ids_given: bool,
    layout: ChunkLayout,
    counts: IntArray,
    box: BoundingBox,
    segment: bool,
) -> AppendPlan | None:
    """Object types: each touched chunk is its stored payload then the new data's."""
    n_old = reader.n_objects
    merged = merge_parts(_object_parts(reader, new), new, ids_given=ids_given, sort_ids=False)
    ids = merged.object_attributes.get(ID)
    point_ids = reader.meta.geometry_type == GeometryTypeName.POINT_CLOUD
    if point_ids and ids is not None and not bool(np.all(np.diff(ids.values) > 0)):
        return None  # a fresh write numbers point objects by id: stored objects would move
    plan = plan_level(new, layout)
    touched = plan.chunks
    fr = _frame(reader, layout, touched, counts)
    fresh = _vertex_payloads(new, plan, touched)
    frags = np.array(as_table(plan.fragments), dtype=np.int64, copy=True)
    frags[:, 1] += n_old
    frags[:, 2] += fr.old_counts[_repeat_offsets(plan.fragment_offsets)]
    fresh[L.VERTEX_FRAGMENTS] = Block(frags, plan.fragment_offsets, {})
    if plan.links is not None:
        fresh.update(_link_payloads(new, plan, fr))
    payloads: dict[str, Block] = {}
    for path, blk in fresh.items():
        values = as_rows(blk.values)
        offsets = blk.offsets
        if reader.has(path):
            values = values.astype(reader.payload(path).attrs["dtype"], copy=False)
        if reader.has(path) and not segment:
            old, old_off = fr.old_block(path)
            values, offsets = _interleave(old, old_off, values, offsets)
        payloads[path] = Block(values, offsets, blk.extra)
    total = counts.copy()
    total[touched] += np.diff(plan.chunk_offsets)
    stats = _statistics(reader, fr, payloads, dict(new.vertex_attributes), total, combine=segment)
    if stats is None:
        return None
    manifest, offsets = _object_index(reader, plan, fr)
    level = replace(
        reader.level_meta,
        vertex_count=int(total.sum()),
        chunk_count=int(np.count_nonzero(total)),
        object_count=reader.level_meta.object_count
        + int(np.count_nonzero(np.diff(plan.object_offsets))),
    )
    return AppendPlan(
        layout,
        touched,
        payloads,
        total.reshape(layout.grid.shape),
        manifest,
        offsets,
        dict(merged.object_attributes),
        merged.groups,
        stats,
        box,
        level,
        segment=segment,
    )


def _object_index(reader: LevelReader, plan: LevelPlan, fr: _Frame) -> tuple[IntArray, IntArray]:
    """Return the stored manifest and offsets with the new objects' refs appended (starts shifted)."""
    d = fr.layout.ndim
    old_off = reader.object_offsets
    old_man = read_dense_whole(reader.node(L.OBJECT_MANIFEST)).astype(np.int64)
    man = np.array(plan.manifest, dtype=np.int64, copy=True)
    if len(man):
        man[:, d] += fr.counts_new_grid[fr.layout.flat_index(man[:, :d])]
    manifest = np.concatenate([old_man.reshape(-1, d + 2), man])
    offsets = np.concatenate([old_off, plan.object_offsets[1:] + old_off[-1]])
    return manifest, offsets


def _link_payloads(new: GeometryParts, plan: LevelPlan, fr: _Frame) -> dict[str, Block]:
    """Chunk-local and cross-chunk links of the new data, rows shifted past the stored ones."""
    lp = plan.links
    assert lp is not None
    out: dict[str, Block] = {}
    if new.links is not None:
        where = np.searchsorted(fr.touched, lp.local_chunk)
        rows = lp.local_rows.astype(np.int64) + fr.old_counts[where][:, None]
        off = _csr(lp.local_chunk, fr.touched)
        arity = int(lp.local_rows.shape[1]) if lp.local_rows.ndim == 2 else 0
        out[L.LINKS] = Block(rows.astype(np.int32), off, {"arity": arity})
        for name, col in new.link_attributes.items():
            out[L.attribute_path(L.LINK_ATTRIBUTES, name)] = Block(
                col.rows[lp.local_source], off, column_attrs(col)
            )
    if len(lp.cross_chunk) == 0:
        return out
    d = fr.layout.ndim
    cross = np.array(lp.cross_rows, dtype=np.int64, copy=True)
    k = cross.shape[1] // (d + 1)
    for e in range(k):
        base = e * (d + 1)
        cross[:, base + d] += fr.counts_new_grid[fr.layout.flat_index(cross[:, base : base + d])]
    off = _csr(lp.cross_chunk, fr.touched)
    out[L.CROSS_CHUNK_LINKS] = Block(cross, off, {"endpoints": k})
    for name, col in new.link_attributes.items():
        out[L.attribute_path(L.CROSS_CHUNK_LINK_ATTRIBUTES, name)] = Block(
            col.rows[lp.cross_source], off, column_attrs(col)
        )
    return out


def _usable_stats(reader: LevelReader, path: str) -> npt.NDArray[Any] | None:
    if not reader.has(path):
        return None
    node = reader.node(path)
    if node.attrs.get("counts_crc32") != counts_crc32(reader.vertex_counts):
        return None
    if node.shape[0] != reader.layout.n_chunks:
        return None
    return read_dense_whole(node)


def _statistics(
    reader: LevelReader,
    fr: _Frame,
    payloads: dict[str, Block],
    columns: dict[str, Column],
    total: IntArray,
    *,
    combine: bool = False,
) -> list[StatArray] | None:
    """Statistics and value sets of the new level (None: the stored ones are unusable).

    ``combine``: the payloads hold only the new rows of the touched chunks, whose stored
    statistics are merged in.
    """
    crc = counts_crc32(total)
    n_grid = fr.layout.n_chunks
    stored = reader.chunks()
    at = _old_to_new(reader.layout, fr.layout, stored)
    out: list[StatArray] = []
    for name, col in columns.items():
        if col.values.ndim != 1 or col.values.dtype.kind not in "biuf":
            continue
        old = _usable_stats(reader, f"{L.STATISTICS}/{name}")
        if old is None or old.shape[1:] != (2,):
            return None
        block = payloads[L.attribute_path(L.ATTRIBUTES, name)]
        vals = block.values.reshape(len(block.values))
        starts = block.offsets[:-1]
        stat = np.zeros((n_grid, 2), dtype=old.dtype)
        stat[at] = old[stored]
        lo, hi = np.fmin.reduceat(vals, starts), np.fmax.reduceat(vals, starts)
        if combine:
            had = fr.old_counts > 0
            lo = np.where(had, np.fmin(stat[fr.touched, 0], lo), lo)
            hi = np.where(had, np.fmax(stat[fr.touched, 1], hi), hi)
        stat[fr.touched, 0] = lo
        stat[fr.touched, 1] = hi
        out.append(
            StatArray(f"{L.STATISTICS}/{name}", ArrayKind.STATISTICS, stat, {"counts_crc32": crc})
        )
        if vals.dtype.kind in "biu":
            vs = _value_set(reader, name, fr, vals, starts, at, combine)
            if vs is not None:
                values, present = vs
                extra = {"counts_crc32": crc, "values": [v.item() for v in values]}
                path = f"{L.VALUE_SETS}/{name}"
                out.append(StatArray(path, ArrayKind.VALUE_SET, present, extra))
    return out


def _value_set(
    reader: LevelReader,
    name: str,
    fr: _Frame,
    vals: npt.NDArray[Any],
    starts: IntArray,
    at: IntArray,
    combine: bool,
) -> tuple[npt.NDArray[Any], npt.NDArray[np.uint64]] | None:
    """Return the value set after the append, or None (more than MAX_VALUES distinct values).

    A level with statistics but no value set already held more distinct values.
    """
    path = f"{L.VALUE_SETS}/{name}"
    old_present = _usable_stats(reader, path)
    if old_present is None:
        return None
    old_values = np.asarray(reader.node(path).attrs["values"], dtype=vals.dtype)
    values = np.union1d(old_values, np.unique(vals)).astype(vals.dtype)
    if len(values) > MAX_VALUES:
        return None
    present = np.zeros(fr.layout.n_chunks, dtype=np.uint64)
    bits = old_present.astype(np.uint64)[reader.chunks()]
    moved = np.zeros(len(bits), dtype=np.uint64)
    for i, j in enumerate(np.searchsorted(values, old_values).tolist()):
        on = (bits >> np.uint64(i)) & np.uint64(1)
        moved |= on << np.uint64(j)
    present[at] = moved
    codes = np.searchsorted(values, vals).astype(np.uint64)
    bits_new = np.bitwise_or.reduceat(np.left_shift(np.uint64(1), codes), starts)
    present[fr.touched] = (present[fr.touched] | bits_new) if combine else bits_new
    return values, present
