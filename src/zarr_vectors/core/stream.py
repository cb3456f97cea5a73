"""Streaming writes: append batches of any size in bounded memory, same bytes as ``write_*``.

Each batch arrives as :class:`~zarr_vectors.core.plan.GeometryParts` with batch-local object ids
and link indices.  Vertices are routed to *partitions* — blocks of chunks keyed by absolute
chunk coordinates — and spilled to ``.npy`` files.  :meth:`StreamWriter.close` then processes
one partition at a time with the same planner as the in-memory writer: every chunk lives in one
partition, so every payload is written once (disjoint writers, FORMAT.md §6).  Object manifests,
path joins and dense arrays are assembled from per-partition summaries, so memory grows with
the number of objects and manifest refs, not with the number of vertices.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout, grid_for_bounds
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.plan import GeometryParts, LinkPlan, plan_level
from zarr_vectors.core.ragged import offsets_from_counts
from zarr_vectors.core.writer import (
    LevelWriter,
    StoreOptions,
    WriteSummary,
    column_attrs,
    take_rows,
    write_dense_arrays,
    write_link_plan,
    write_store_with,
)
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind, GeometryTypeName
from zarr_vectors.spec.metadata import BoundingBox, ChunkGrid

__all__ = ["StreamWriter"]

IntArray = npt.NDArray[np.int64]


@dataclass
class _ColumnSchema:
    """dtype/shape of one attribute across batches, plus its growing category list."""

    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    labels: list[str] | None = None
    index: dict[str, int] = field(default_factory=dict)

    def check(self, name: str, col: Column) -> None:
        if col.values.dtype != self.dtype or col.values.shape[1:] != self.shape:
            raise InvalidInputError(
                f"attribute {name!r}: batch has dtype {col.values.dtype} shape "
                f"{col.values.shape[1:]}, earlier batches {self.dtype} {self.shape}"
            )
        if (col.categories is None) != (self.labels is None):
            raise InvalidInputError(f"attribute {name!r}: mixes strings and numbers across batches")

    def global_codes(self, col: Column) -> npt.NDArray[Any]:
        """Map a batch's category codes to append-order global codes."""
        if self.labels is None or col.categories is None:
            values: npt.NDArray[Any] = col.values
            return values
        table = np.empty(len(col.categories), dtype=np.int64)
        for i, label in enumerate(col.categories):  # categories, not rows
            if label not in self.index:
                self.index[label] = len(self.labels)
                self.labels.append(label)
            table[i] = self.index[label]
        mapped: npt.NDArray[Any] = table[col.values].astype(col.values.dtype)
        return mapped

    def final(self) -> tuple[tuple[str, ...] | None, npt.NDArray[np.int64] | None]:
        """Sorted categories and the remap from append-order codes to sorted codes."""
        if self.labels is None:
            return None, None
        order = np.argsort(np.asarray(self.labels, dtype=str), kind="stable")
        remap = np.empty(len(order), dtype=np.int64)
        remap[order] = np.arange(len(order))
        return tuple(self.labels[i] for i in order), remap


class StreamWriter:
    """Append batches to a new store; the store is written when the writer closes.

    Use it as a context manager: an exception inside the block discards everything and leaves
    no store behind.  Object ids are numbered across batches in append order; links in a batch
    index that batch's vertices (objects never span batches).
    """

    def __init__(
        self,
        store: Any,
        geometry_type: GeometryTypeName,
        opts: StoreOptions,
        *,
        spill_dir: str | Path | None = None,
        partition_chunks: int = 8,
        memory_limit: int = 256 << 20,
    ) -> None:
        self.store = store
        self.geometry_type = geometry_type
        self.opts = opts
        self._tmp = Path(tempfile.mkdtemp(prefix="zv-spill-", dir=spill_dir))
        self._block = int(partition_chunks)
        self._memory_limit = int(memory_limit)
        self._uid: bool | None = None  # per-vertex user object ids, fixed by the first batch
        self._partitions: dict[tuple[int, ...], int] = {}
        self._spilled: dict[str, list[int]] = {}  # "v3" / "l3" -> batches holding that partition
        self._spilled_bytes: dict[str, int] = {}
        self._batches = 0
        self.n_vertices = 0
        self.n_objects = 0
        self._lo: npt.NDArray[np.float64] | None = None
        self._hi: npt.NDArray[np.float64] | None = None
        self._dtype: np.dtype[Any] | None = None
        self._schema: dict[str, _ColumnSchema] = {}
        self._link_schema: dict[str, _ColumnSchema] = {}
        self._object_attrs: dict[str, list[npt.NDArray[Any]]] = {}
        self._object_schema: dict[str, _ColumnSchema] = {}
        self._uids: list[npt.NDArray[Any]] = []
        self._object_ids: list[npt.NDArray[Any]] = []
        self._seen_ids: npt.NDArray[Any] = np.zeros(0, dtype=np.int64)
        self._seen_counts: IntArray = np.zeros(0, dtype=np.int64)
        self._object_counts: list[IntArray] = []
        self._groups: dict[str, list[IntArray]] = {}
        self._group_attrs: dict[str, dict[str, Any]] = {}
        self._flags: tuple[bool, bool, int] | None = None
        self._closed = False

    # -- appending ---------------------------------------------------------------------------

    def _save(self, name: str, array: npt.NDArray[Any]) -> None:
        np.save(self._tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)

    def _check_batch(self, parts: GeometryParts) -> None:
        has_links = parts.links is not None
        arity = 0 if parts.links is None else int(parts.links.shape[1])
        flags = (parts.vertex_object is not None, has_links, arity)
        if self._flags is None:
            self._flags = flags
        elif flags != self._flags:
            raise InvalidInputError("every batch must have the same kind of objects and links")
        pos = parts.positions
        if self._dtype is None:
            self._dtype = pos.dtype
        elif pos.dtype != self._dtype:
            raise InvalidInputError(f"batch positions are {pos.dtype}, earlier {self._dtype}")
        for store_, cols in (
            (self._schema, parts.vertex_attributes),
            (self._link_schema, parts.link_attributes),
        ):
            if self._batches and set(cols) != set(store_):
                raise InvalidInputError(
                    f"attributes {sorted(cols)} differ from earlier batches {sorted(store_)}"
                )
            for name, col in cols.items():
                sch = store_.setdefault(
                    name,
                    _ColumnSchema(
                        col.values.dtype,
                        col.values.shape[1:],
                        None if col.categories is None else [],
                    ),
                )
                sch.check(name, col)

    def append_parts(
        self,
        parts: GeometryParts,
        user_ids: npt.NDArray[Any] | None = None,
        object_ids: npt.NDArray[Any] | None = None,
    ) -> None:
        """Spill one batch (object ids and link indices local to the batch).

        ``user_ids`` are per-vertex user object ids (point clouds: objects may span batches);
        ``object_ids`` are per-object user ids of the batch's objects.  A batch that fails
        validation leaves the writer unchanged.
        """
        self._validate(parts, user_ids, object_ids)
        pos = parts.positions
        n = len(pos)
        if n:
            lo = np.array([pos[:, d].min() for d in range(pos.shape[1])], dtype=np.float64)
            hi = np.array([pos[:, d].max() for d in range(pos.shape[1])], dtype=np.float64)
            self._lo = lo if self._lo is None else np.minimum(self._lo, lo)
            self._hi = hi if self._hi is None else np.maximum(self._hi, hi)
        chunk = np.asarray(self.opts.chunk_shape, dtype=np.float64)
        cells = np.floor(np.asarray(pos, dtype=np.float64) / chunk).astype(np.int64) // self._block
        pids = self._partition_ids(cells)
        self._spill_vertices(parts, pids, user_ids)
        if parts.links is not None and len(parts.links):
            self._spill_links(parts, pids)
        self._keep_objects(parts, user_ids)
        if object_ids is not None:
            self._object_ids.append(np.asarray(object_ids))
        self.n_vertices += n
        self.n_objects += parts.n_objects
        self._batches += 1

    def _validate(
        self,
        parts: GeometryParts,
        user_ids: npt.NDArray[Any] | None,
        object_ids: npt.NDArray[Any] | None,
    ) -> None:
        if self._closed:
            raise InvalidInputError("the writer is closed")
        if self._uid is not None and self._uid != (user_ids is not None):
            raise InvalidInputError("give per-vertex user object ids in every batch or in none")
        if self._batches and bool(self._object_ids) != (object_ids is not None):
            raise InvalidInputError("give ids in every batch or in none")
        if object_ids is not None and len(object_ids) != parts.n_objects:
            raise InvalidInputError(
                f"ids has {len(object_ids)} entries for {parts.n_objects} objects"
            )
        self._check_batch(parts)
        self._uid = user_ids is not None

    def _spill_vertices(
        self, parts: GeometryParts, pids: IntArray, user_ids: npt.NDArray[Any] | None
    ) -> None:
        b, n = self._batches, len(parts.positions)
        gidx = np.arange(self.n_vertices, self.n_vertices + n, dtype=np.int64)
        obj = None if parts.vertex_object is None else parts.vertex_object + self.n_objects
        occ = self._occurrences(parts, user_ids)
        fields: dict[str, npt.NDArray[Any] | None] = {
            "pos": parts.positions,
            "gidx": gidx,
            "occ": occ,
            "obj": obj,
            "uid": user_ids,
        }
        for name, col in parts.vertex_attributes.items():
            fields[f"a_{name}"] = self._schema[name].global_codes(col)
        for pid in np.unique(pids).tolist():
            sel = np.flatnonzero(pids == pid)
            self._note_spill(f"v{pid}", b, sel.size * parts.positions.itemsize * 8)
            for key, values in fields.items():
                if values is not None:
                    self._save(f"v{pid}_{b}_{key}", take_rows(values, sel))

    def _spill_links(self, parts: GeometryParts, pids: IntArray) -> None:
        assert parts.links is not None
        b = self._batches
        owner = pids[parts.links[:, 0]]
        codes = {k: self._link_schema[k].global_codes(c) for k, c in parts.link_attributes.items()}
        for pid in np.unique(owner).tolist():
            sel = np.flatnonzero(owner == pid)
            self._note_spill(f"l{pid}", b, sel.size * 8 * parts.links.shape[1])
            self._save(f"l{pid}_{b}_ends", parts.links[sel] + self.n_vertices)
            for name, values in codes.items():
                self._save(f"l{pid}_{b}_a_{name}", values[sel])

    def _occurrences(
        self, parts: GeometryParts, user_ids: npt.NDArray[Any] | None
    ) -> IntArray | None:
        """Index of each vertex among the vertices of its object, over all batches so far."""
        if parts.vertex_object is None:
            return None
        keys = parts.vertex_object if user_ids is None else user_ids
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]) if len(sk) else np.zeros(0, int)
        counts = np.diff(np.append(starts, len(sk)))
        within = np.arange(len(sk)) - np.repeat(starts, counts)
        uniq = sk[starts]
        before = np.zeros(len(uniq), dtype=np.int64)
        if user_ids is not None and len(self._seen_ids):  # objects may span batches
            pos = np.searchsorted(self._seen_ids, uniq)
            hit = (pos < len(self._seen_ids)) & (
                self._seen_ids[np.minimum(pos, len(self._seen_ids) - 1)] == uniq
            )
            before[hit] = self._seen_counts[pos[hit]]
        occ = np.empty(len(sk), dtype=np.int64)
        occ[order] = within + np.repeat(before, counts)
        if user_ids is not None:
            merged = np.concatenate([self._seen_ids, uniq])
            weights = np.concatenate([self._seen_counts, counts])
            self._seen_ids, inverse = np.unique(merged, return_inverse=True)
            self._seen_counts = np.bincount(inverse.ravel(), weights=weights).astype(np.int64)
        else:
            self._object_counts.append(np.bincount(parts.vertex_object, minlength=parts.n_objects))
        return occ

    def _partition_ids(self, cells: IntArray) -> IntArray:
        if len(cells) == 0:
            return np.zeros(0, dtype=np.int64)
        uniq, inverse = np.unique(cells, axis=0, return_inverse=True)
        ids = np.array(
            [
                self._partitions.setdefault(tuple(int(v) for v in row), len(self._partitions))
                for row in uniq
            ]
        )
        return ids[inverse.ravel()].astype(np.int64)

    def _keep_objects(self, parts: GeometryParts, user_ids: npt.NDArray[Any] | None) -> None:
        if user_ids is not None:
            self._uids.append(np.unique(user_ids))
        for name, col in parts.object_attributes.items():
            sch = self._object_schema.setdefault(
                name,
                _ColumnSchema(
                    col.values.dtype, col.values.shape[1:], None if col.categories is None else []
                ),
            )
            sch.check(name, col)
            self._object_attrs.setdefault(name, []).append(sch.global_codes(col))
        if parts.groups is not None:
            for g, name in enumerate(parts.groups.names):
                members = parts.groups.members_of(g) + self.n_objects
                self._groups.setdefault(name, []).append(members)
                attrs = {k: c.values[g] for k, c in parts.groups.attributes.items()}
                self._group_attrs.setdefault(name, attrs)

    # -- closing -----------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def abort(self) -> None:
        """Discard every spilled batch; nothing is written."""
        self._closed = True
        shutil.rmtree(self._tmp, ignore_errors=True)

    def close(self) -> WriteSummary:
        """Write the store from the spilled batches and remove the spill files."""
        if self._closed:
            raise InvalidInputError("the writer is already closed")
        try:
            return write_store_with(
                self.store, self.geometry_type, self._grid_and_box(), self.opts, self._write_level0
            )
        finally:
            self.abort()

    def _grid_and_box(self) -> tuple[ChunkGrid, BoundingBox | None, int]:
        d = len(self.opts.chunk_shape)
        box = None
        if self._lo is not None and self._hi is not None:
            box = BoundingBox(min=tuple(self._lo.tolist()), max=tuple(self._hi.tolist()))
        cover = self.opts.bounds or box
        if cover is None:
            return ChunkGrid(origin=(0,) * d, shape=(1,) * d), None, 0
        lo, hi = np.asarray(cover.min), np.asarray(cover.max)
        if self.opts.bounds is not None and box is not None:
            lo, hi = np.minimum(lo, box.min), np.maximum(hi, box.max)
        return grid_for_bounds(lo.tolist(), hi.tolist(), self.opts.chunk_shape), box, d

    def _note_spill(self, prefix: str, batch: int, nbytes: int) -> None:
        self._spilled.setdefault(prefix, []).append(batch)
        self._spilled_bytes[prefix] = self._spilled_bytes.get(prefix, 0) + nbytes

    def _rounds(self, kind: str) -> Iterator[list[str]]:
        """Group partitions into rounds of at most ``memory_limit`` spilled bytes."""
        group: list[str] = []
        size = 0
        for pid in range(len(self._partitions)):
            prefix = f"{kind}{pid}"
            if prefix not in self._spilled:
                continue
            nbytes = self._spilled_bytes[prefix]
            if group and size + nbytes > self._memory_limit:
                yield group
                group, size = [], 0
            group.append(prefix)
            size += nbytes
        if group:
            yield group

    def _load(self, prefixes: list[str], field_name: str) -> npt.NDArray[Any] | None:
        files = [
            self._tmp / f"{prefix}_{b}_{field_name}.npy"
            for prefix in prefixes
            for b in self._spilled.get(prefix, [])
        ]
        arrays = [np.load(f) for f in files if f.exists()]
        return np.concatenate(arrays) if arrays else None

    def _write_level0(self, w: LevelWriter, layout: ChunkLayout) -> tuple[int, int, int]:
        """Write every array of level 0; return (vertices, objects with vertices, chunks)."""
        has_obj, has_links, arity = self._flags or (False, False, 0)
        distinct = np.unique(np.concatenate(self._uids)) if self._uids else None
        n_objects = len(distinct) if distinct is not None else self.n_objects
        per_object = (
            self._seen_counts
            if distinct is not None
            else (
                np.concatenate(self._object_counts)
                if self._object_counts
                else np.zeros(0, np.int64)
            )
        )
        object_start = offsets_from_counts(per_object)[:-1]
        remaps = {k: s.final() for k, s in self._schema.items()}
        vertex_counts = np.zeros(layout.n_chunks, dtype=np.int64)
        refs: list[IntArray] = []
        where = None
        if has_links:  # chunk and row of every vertex, on disk: links are resolved through it
            where = np.lib.format.open_memmap(
                self._tmp / "where.npy", mode="w+", dtype=np.int64, shape=(self.n_vertices, 2)
            )
        for group in self._rounds("v"):
            part = self._partition_parts(group, distinct, n_objects, remaps, object_start)
            if part is None:
                continue
            parts, gidx = part
            plan = plan_level(parts, layout)
            counts = np.diff(plan.chunk_offsets)
            vertex_counts[plan.chunks] = counts
            row_chunk = np.repeat(plan.chunks, counts)
            _write_vertex_payloads(
                w, parts, plan.order, row_chunk, plan.fragments, plan.fragment_chunk
            )
            if has_obj:
                first = gidx[plan.order[plan.ref_first_row]]
                refs.append(
                    np.concatenate(
                        [plan.ref_object[:, None], first[:, None], plan.manifest], axis=1
                    )
                )
            if where is not None:
                rows = np.arange(len(gidx)) - np.repeat(plan.chunk_offsets[:-1], counts)
                where[gidx[plan.order]] = np.stack([row_chunk, rows], axis=1)
        manifest, offsets, ref_obj = _merge_refs(refs, n_objects, layout.ndim)
        if has_links and where is not None:
            self._write_explicit_links(w, layout, where, arity)
        elif has_obj and self.geometry_type in _SEQUENTIAL:
            _write_joins(w, layout, manifest, ref_obj)
        self._write_dense(
            w, vertex_counts.reshape(layout.grid.shape), manifest, offsets, distinct, has_obj
        )
        n_with = int(np.count_nonzero(np.diff(offsets)))
        return self.n_vertices, n_with, int(np.count_nonzero(vertex_counts))

    def _partition_parts(
        self,
        stem: list[str],
        distinct: npt.NDArray[Any] | None,
        n_objects: int,
        remaps: Mapping[str, tuple[tuple[str, ...] | None, IntArray | None]],
        object_start: IntArray,
    ) -> tuple[GeometryParts, IntArray] | None:
        pos = self._load(stem, "pos")
        gidx = self._load(stem, "gidx")
        if pos is None or gidx is None:
            return None
        obj = self._load(stem, "obj")
        uid = self._load(stem, "uid")
        if uid is not None and distinct is not None:
            obj = np.searchsorted(distinct, uid).astype(np.int64)
        attrs: dict[str, Column] = {}
        for name in self._schema:
            values = self._load(stem, f"a_{name}")
            assert values is not None
            cats, remap = remaps[name]
            if remap is not None:
                values = remap[values].astype(values.dtype)
            attrs[name] = Column(values, cats)
        rank = None
        if obj is not None:
            occ = self._load(stem, "occ")
            assert occ is not None
            rank = object_start[obj] + occ  # global (object, input order) rank
        parts = GeometryParts(
            positions=pos,
            vertex_object=obj,
            n_objects=n_objects,
            ordered=obj is not None,
            vertex_attributes=attrs,
            rank=rank,
        )
        return parts, gidx

    def _write_explicit_links(
        self, w: LevelWriter, layout: ChunkLayout, where: IntArray, arity: int
    ) -> None:
        remaps = {k: s.final() for k, s in self._link_schema.items()}
        wrote = False
        for group in self._rounds("l"):
            ends = self._load(group, "ends")
            if ends is None:
                continue
            attrs = {}
            for name in self._link_schema:
                values = self._load(group, f"a_{name}")
                assert values is not None
                cats, remap = remaps[name]
                attrs[name] = Column(values if remap is None else remap[values], cats)
            write_link_plan(w, _split_links(ends, where, layout), attrs, explicit=True)
            wrote = True
        if not wrote:  # the in-memory writer creates an empty links array too
            empty = np.zeros((0, arity), dtype=np.int64)
            attrs = {
                k: Column(np.zeros((0, *s.shape), s.dtype), remaps[k][0])
                for k, s in self._link_schema.items()
            }
            write_link_plan(w, _split_links(empty, where, layout), attrs, explicit=True)

    def _write_dense(
        self,
        w: LevelWriter,
        vertex_counts: IntArray,
        manifest: IntArray,
        offsets: IntArray,
        distinct: npt.NDArray[Any] | None,
        has_obj: bool,
    ) -> None:
        obj_attrs: dict[str, Column] = {}
        for name, pieces in self._object_attrs.items():
            cats, remap = self._object_schema[name].final()
            values = np.concatenate(pieces)
            obj_attrs[name] = Column(values if remap is None else remap[values], cats)
        if distinct is not None and not (
            len(distinct) == 0 or (distinct[0] == 0 and distinct[-1] == len(distinct) - 1)
        ):
            obj_attrs["id"] = Column(distinct)
        if self._object_ids:
            ids = np.concatenate(self._object_ids)
            uniq, counts = np.unique(ids, return_counts=True)
            if (counts > 1).any():
                raise InvalidInputError(f"ids: duplicate id {uniq[np.argmax(counts > 1)]!r}")
            if not np.array_equal(ids, np.arange(len(ids))):
                obj_attrs["id"] = Column(np.ascontiguousarray(ids))
        groups = None
        if self._groups:
            names = tuple(self._groups)
            members = [np.concatenate(self._groups[g]) for g in names]
            offs = offsets_from_counts([len(m) for m in members])
            gattrs = {}
            for key in next(iter(self._group_attrs.values()), {}):
                gattrs[key] = Column(np.asarray([self._group_attrs[g][key] for g in names]))
            groups = GroupTable(names, offs, np.concatenate(members).astype(np.int64), gattrs)
        write_dense_arrays(
            w,
            vertex_counts,
            manifest if has_obj else None,
            offsets if has_obj else None,
            obj_attrs,
            groups,
        )


_SEQUENTIAL = {GeometryTypeName.LINE, GeometryTypeName.POLYLINE, GeometryTypeName.STREAMLINE}


def _write_vertex_payloads(
    w: LevelWriter,
    parts: GeometryParts,
    order: IntArray,
    row_chunk: IntArray,
    fragments: IntArray,
    fragment_chunk: IntArray,
) -> None:
    w.payload(L.VERTICES, ArrayKind.VERTICES, take_rows(parts.positions, order), row_chunk)
    w.payload(L.VERTEX_FRAGMENTS, ArrayKind.VERTEX_FRAGMENTS, fragments, fragment_chunk)
    for name, col in parts.vertex_attributes.items():
        w.payload(
            L.attribute_path(L.ATTRIBUTES, name),
            ArrayKind.ATTRIBUTE,
            take_rows(col.rows, order),
            row_chunk,
            column_attrs(col),
        )


def _merge_refs(
    refs: list[IntArray], n_objects: int, ndim: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Sort per-partition refs by (object, traversal rank) into manifest rows and offsets."""
    if not refs:
        return (
            np.zeros((0, ndim + 2), np.int64),
            np.zeros(n_objects + 1, np.int64),
            np.zeros(0, np.int64),
        )
    allrefs = np.concatenate(refs)
    order = np.lexsort((allrefs[:, 1], allrefs[:, 0]))
    allrefs = allrefs[order]
    ref_obj = allrefs[:, 0]
    offsets = offsets_from_counts(np.bincount(ref_obj, minlength=n_objects))
    return np.ascontiguousarray(allrefs[:, 2:]), offsets, ref_obj


def _write_joins(
    w: LevelWriter, layout: ChunkLayout, manifest: IntArray, ref_obj: IntArray
) -> None:
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


def _split_links(ends: IntArray, where: IntArray, layout: ChunkLayout) -> LinkPlan:
    """Split global links into chunk-local and cross-chunk parts (as the in-memory planner)."""
    k = ends.shape[1]
    chunk = where[ends, 0] if len(ends) else np.zeros((0, k), np.int64)
    row = where[ends, 1] if len(ends) else np.zeros((0, k), np.int64)
    owner = chunk[:, 0]
    same = np.all(chunk == owner[:, None], axis=1)
    local = np.flatnonzero(same)
    lo = np.argsort(owner[local], kind="stable")
    local = local[lo]
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
    co = np.argsort(owner[cross], kind="stable")
    return LinkPlan(
        owner[local],
        row[local].astype(np.int32),
        local,
        owner[cross][co],
        cross_rows[co].astype(np.int64),
        cross[co],
    )


def iter_batches(n: int, size: int) -> Iterator[slice]:
    """Yield slices covering ``range(n)`` in steps of ``size``."""
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))
