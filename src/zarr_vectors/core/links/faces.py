"""A query on a level whose links are faces (meshes, FORMAT.md §6–§9).

Rows are picked chunk by chunk (box, objects), put in object then traversal order (the
manifest gives each row's place in its object) and the stored faces among them (``links`` and
``cross_chunk_links``, any arity) are remapped to the returned rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.links.keys import (
    KeySpace,
    chunk_links,
    effective_runs,
    sort_packed,
    sorted_unique,
    take_rows,
)
from zarr_vectors.core.ragged import concat_ranges, offsets_from_counts, sort_order
from zarr_vectors.core.reader import LevelReader, RowBlock, RowRanges, check_link_rows
from zarr_vectors.core.select import Query, in_box, read_objects
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.typespec import type_spec

__all__ = [
    "FaceRows",
    "Fetched",
    "face_boundary_chunks",
    "fetch_rows",
    "gather_faces",
    "object_chunks",
    "object_refs",
    "rank_in_object",
    "sorted_faces",
    "result_objects",
    "returned_faces",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class FaceRows:
    """Returned vertices in result order (object, then traversal) and the returned faces."""

    positions: npt.NDArray[np.floating]
    """(N, D) returned vertices."""
    objpos: IntArray
    """(N,) result position of each vertex's object (non-decreasing)."""
    objects: IntArray
    """Dense ids of the returned objects, in result order."""
    faces: IntArray
    """(F, k) faces as indices into ``positions``, in stored order."""
    attributes: dict[str, Column]
    """Per-vertex attributes aligned with ``positions``."""
    face_attributes: dict[str, Column]
    """Per-face attributes aligned with ``faces``."""


@dataclass(frozen=True)
class Fetched:
    """Rows of some chunks: positions, objects and which rows the query selects."""

    flats: IntArray
    positions: npt.NDArray[np.floating]
    objects: IntArray
    keep: npt.NDArray[np.bool_]


def fetch_rows(reader: LevelReader, flats: IntArray, query: Query) -> Fetched:
    """Positions and objects of the rows of chunks ``flats``, and which the query selects."""
    pos = reader.rows(L.VERTICES, flats).values
    obj = reader.vertex_object_ids(flats)
    keep = np.ones(len(pos), dtype=bool)
    if query.object_ids is not None:
        keep &= np.isin(obj, query.object_ids)
    if query.bbox is not None:
        keep &= in_box(pos, query.bbox)
    return Fetched(flats, pos, obj, keep)


def object_refs(reader: LevelReader, ids: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Manifest refs of ``ids``: level row id of each ref's first row, count, traversal start."""
    refs, per_object = reader.object_refs(ids)
    d = reader.layout.ndim
    level_start = offsets_from_counts(reader.vertex_counts)
    flat = reader.layout.flat_index(refs[:, :d]) if len(refs) else np.zeros(0, np.int64)
    counts = refs[:, d + 1]
    before = offsets_from_counts(counts)
    first_ref = offsets_from_counts(per_object)[:-1]
    trav = before[:-1] - np.repeat(before[first_ref], per_object)
    return level_start[flat] + refs[:, d], counts, trav


def object_chunks(reader: LevelReader, ids: IntArray) -> IntArray:
    """Chunks (flat indices, ascending) holding a vertex of objects ``ids``."""
    refs, _ = reader.object_refs(ids)
    d = reader.layout.ndim
    return sorted_unique(reader.layout.flat_index(refs[:, :d])) if len(refs) else refs[:, 0]


def rank_in_object(reader: LevelReader, objs: IntArray, level_rows: IntArray) -> IntArray:
    """Position of each row inside its object's traversal order (from the manifest)."""
    ref_start, _, trav = object_refs(reader, objs)
    o = np.argsort(ref_start, kind="stable")
    j = o[np.searchsorted(ref_start[o], level_rows, side="right") - 1]
    return trav[j] + level_rows - ref_start[j]


def face_boundary_chunks(reader: LevelReader, got: Fetched) -> IntArray:
    """Chunks holding faces that touch the selected rows, and their other vertices."""
    if not reader.has(L.CROSS_CHUNK_LINKS) or not got.keep.any():
        return got.flats
    touching = object_chunks(reader, sorted_unique(got.objects[got.keep]))
    candidates = sorted_unique(np.concatenate([got.flats, touching]))
    ks = KeySpace.of(reader)
    block = reader.rows(L.CROSS_CHUNK_LINKS, candidates)
    keys = ks.cross_keys(reader, candidates, block, type_spec(reader.meta.geometry_type).link_arity)
    inside = np.sort(ks.keys_of(got.flats)[got.keep])
    pos = np.minimum(np.searchsorted(inside, keys), max(len(inside) - 1, 0))
    touches = (inside[pos] == keys).any(axis=1)  # inside is not empty: some row is kept
    ends = ks.flat_of(take_rows(keys, np.flatnonzero(touches)).ravel())
    return sorted_unique(np.concatenate([got.flats, ends]))


def returned_faces(
    reader: LevelReader, got: Fetched, names: Sequence[str], boundary: bool
) -> tuple[npt.NDArray[np.bool_], IntArray, dict[str, Column]]:
    """Faces stored in the fetched chunks that the query returns, and the rows it returns."""
    block = chunk_links(reader, got.flats, names)
    ends = block.ends
    if (ends.size == 0 or ends.min() >= 0) and got.keep.all():  # every face returned
        return got.keep, ends, dict(block.attributes)
    whole = np.all(ends >= 0, axis=1)
    safe = np.where(ends >= 0, ends, 0)
    hit = got.keep[safe] & (ends >= 0)
    take = whole & (hit.any(axis=1) if boundary else hit.all(axis=1))
    returned = got.keep.copy()
    if boundary:  # a face never joins two objects, so its object is a selected one
        returned[ends[take].ravel()] = True
    idx = np.flatnonzero(take)
    return returned, ends[idx], {k: c.take(idx) for k, c in block.attributes.items()}


def gather_faces(
    reader: LevelReader, query: Query, face_names: Sequence[str], boundary: bool
) -> FaceRows:
    """Run a query on a mesh level: pick rows, order them by object and traversal, remap faces.

    ``boundary``: with a box, also the faces with a vertex in the box, and their other vertices.
    """
    ids = query.object_ids
    if ids is not None:
        first = np.sort(np.unique(ids, return_index=True)[1])  # sort-based: fast
        ids = ids[first]
        if query.bbox is None:
            with reader.caching():
                return object_faces(reader, ids, query.attributes or (), face_names)
    with reader.caching():
        whole = (
            level_faces(reader, query.attributes or (), face_names) if query.bbox is None else None
        )
        if whole is not None:
            return whole
        flats = reader.chunks(query.bbox)
        if ids is not None:
            flats = flats[np.isin(flats, object_chunks(reader, ids))]
        got = fetch_rows(reader, flats, query)
        if boundary and query.bbox is not None:
            got = fetch_rows(reader, face_boundary_chunks(reader, got), query)
        returned, faces, face_cols = returned_faces(reader, got, face_names, boundary)
        rows = np.flatnonzero(returned)
        obj = got.objects[rows]
        objs = result_objects(reader, ids, obj, query.bbox is not None)
        objpos = np.full(max(reader.n_objects, 1), -1, dtype=np.int64)
        objpos[objs] = np.arange(len(objs), dtype=np.int64)
        rank = rank_in_object(reader, objs, KeySpace.of(reader).keys_of(got.flats)[rows])
        n_rank = int(rank.max()) + 1 if len(rank) else 1
        order = rows[sort_order([objpos[obj], rank], [len(objs), n_rank])]
        where = np.full(len(got.positions), -1, dtype=np.int64)
        where[order] = np.arange(len(order), dtype=np.int64)
        attrs = {
            n: reader.column(f"{L.ATTRIBUTES}/{n}", got.flats).take(order)
            for n in query.attributes or ()
        }
    return FaceRows(
        got.positions[order], objpos[got.objects[order]], objs, where[faces], attrs, face_cols
    )


def level_faces(
    reader: LevelReader, names: Sequence[str], face_names: Sequence[str]
) -> FaceRows | None:
    """Every object of the level whole, with every stored face (a read without box or ids).

    The rows of a manifest ref are consecutive in their chunk and in traversal order, and an
    object's refs come in traversal order: the concatenated refs of all objects are the rows
    in result order, with no sort.  None when the manifest and the fragments do not agree on
    every row (the general path of :func:`gather_faces` then reads the level).
    """
    flats = reader.chunks(None)
    n = int(reader.vertex_counts.sum())
    if int(reader.vertex_counts[flats].sum()) != n or bool(np.any(np.diff(flats) <= 0)):
        return None  # rows of the fetched chunks are not numbered like level rows
    objs = np.arange(reader.n_objects, dtype=np.int64)
    refs, per_object = reader.object_refs(objs)
    d = reader.layout.ndim
    flat = reader.layout.flat_index(refs[:, :d]) if len(refs) else np.zeros(0, np.int64)
    counts = refs[:, d + 1].astype(np.int64, copy=False)
    if len(counts) and int(counts.min()) < 0:
        return None
    order = concat_ranges(offsets_from_counts(reader.vertex_counts)[flat] + refs[:, d], counts)
    if len(order) != n or (n and (int(order.min()) < 0 or int(order.max()) >= n)):
        return None
    where = np.full(n, -1, dtype=np.int64)
    where[order] = np.arange(n, dtype=np.int64)
    objpos = np.repeat(np.repeat(objs, per_object), counts)
    if (n and int(where.min()) < 0) or not np.array_equal(
        reader.vertex_object_ids(flats)[order], objpos
    ):
        return None  # a row in no ref or in two, or a ref naming another object's rows
    faces, face_cols = _level_links(reader, flats, where, face_names)
    if faces is None:
        return None
    positions = take_rows(reader.rows(L.VERTICES, flats).values, order)
    attrs = {n: reader.column(f"{L.ATTRIBUTES}/{n}", flats).take(order) for n in names}
    return FaceRows(positions, objpos, objs, faces, attrs, face_cols)


def _level_links(
    reader: LevelReader, flats: IntArray, where: IntArray, face_names: Sequence[str]
) -> tuple[IntArray | None, dict[str, Column]]:
    """Every stored face of chunks ``flats`` (all rows of the level), as result rows.

    ``where`` maps each level row to its result row.  Faces come in the order of
    :func:`~zarr_vectors.core.links.keys.chunk_links` (``links`` then ``cross_chunk_links``),
    their attributes ``face_names`` aligned.  None when a cross-chunk face names a chunk
    outside ``flats``.
    """
    arity = type_spec(reader.meta.geometry_type).link_arity
    local = reader.rows(L.LINKS, flats) if reader.has(L.LINKS) else None
    cross = reader.rows(L.CROSS_CHUNK_LINKS, flats) if reader.has(L.CROSS_CHUNK_LINKS) else None
    n_local = len(local.values) if local is not None else 0
    # one output for both kinds: no concatenation copy of the level's faces
    faces = np.empty((n_local + (len(cross.values) if cross is not None else 0), arity), np.int64)
    cols: dict[str, list[Column]] = {n: [] for n in face_names}
    if local is not None:
        _remapped_links(reader, flats, local, where, faces[:n_local])
        for n in face_names:
            cols[n].append(reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", flats, local))
    if cross is not None:
        keys = KeySpace.fetched(reader, flats).cross_keys(reader, flats, cross, arity)
        if keys.size and int(keys.min()) < 0:
            return None, {}
        np.take(where, keys, out=faces[n_local:])
        for n in face_names:
            path = f"{L.CROSS_CHUNK_LINK_ATTRIBUTES}/{n}"
            if reader.has(path) or len(cross.values):  # none written without records
                cols[n].append(reader.aligned_column(path, flats, cross))
    face_cols = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    return faces, face_cols


def _remapped_links(
    reader: LevelReader, flats: IntArray, block: RowBlock, where: IntArray, out: IntArray
) -> None:
    """Write the ``links`` rows of chunks ``flats`` to ``out`` (rows, arity) as result rows.

    Every row is checked to lie in its chunk.  One gather per chunk from that chunk's slice of
    ``where``: no level-wide keys are built.
    """
    arity = out.shape[1]
    rows = block.values if block.values.dtype.kind in "iu" else block.values.astype(np.int64)
    path = f"{reader.group.path}/{L.LINKS}"
    if rows.ndim != 2 or rows.shape[1] != arity:
        raise CorruptPayloadError(f"{path}: rows have width {rows.shape[-1]}, expected {arity}")
    counts = reader.vertex_counts[flats]
    check_link_rows(rows, block.offsets, counts, path)
    base = offsets_from_counts(counts).tolist()
    off = block.offsets.tolist()
    for i in range(len(flats)):
        np.take(
            where[base[i] : base[i + 1]], rows[off[i] : off[i + 1]], out=out[off[i] : off[i + 1]]
        )


def object_faces(
    reader: LevelReader, ids: IntArray, names: Sequence[str], face_names: Sequence[str]
) -> FaceRows:
    """Objects ``ids`` (distinct) whole, with their faces: located by the object index.

    The vertices are decoded by manifest ref (only their rows where the payloads allow), and
    the faces stored in the objects' chunks are kept when their three vertices are returned.
    """
    got = read_objects(reader, ids, names)
    flats = got.where.chunks
    index = np.full(int(reader.vertex_counts[flats].sum()), -1, dtype=np.int64)
    index[got.where.rows] = np.arange(len(got.where.rows), dtype=np.int64)
    pieces: list[IntArray] = []
    cols: dict[str, list[Column]] = {n: [] for n in face_names}
    if reader.has(L.LINKS):
        block = reader.rows(L.LINKS, flats)
        faces, idx = _local_faces(reader, flats, block, index, got.where.ranges)
        pieces.append(faces)
        for n in face_names:
            col = reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", flats, block)
            cols[n].append(col.take(idx))
    if reader.has(L.CROSS_CHUNK_LINKS):
        cross = reader.rows(L.CROSS_CHUNK_LINKS, flats)
        ks = KeySpace.fetched(reader, flats)
        ends = ks.cross_keys(reader, flats, cross, type_spec(reader.meta.geometry_type).link_arity)
        mapped = np.where(ends >= 0, index[np.maximum(ends, 0)], -1)
        idx = np.flatnonzero((mapped >= 0).all(axis=1))
        pieces.append(take_rows(mapped, idx))
        for n in face_names:
            path = f"{L.CROSS_CHUNK_LINK_ATTRIBUTES}/{n}"
            if reader.has(path) or len(cross.values):  # none written without records
                cols[n].append(reader.aligned_column(path, flats, cross).take(idx))
    arity = type_spec(reader.meta.geometry_type).link_arity
    faces = np.concatenate(pieces) if pieces else np.zeros((0, arity), dtype=np.int64)
    face_cols = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    objpos = np.repeat(np.arange(len(ids), dtype=np.int64), np.diff(got.offsets))
    return FaceRows(got.positions, objpos, ids, faces, got.attributes, face_cols)


def _local_faces(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray, ranges: RowRanges
) -> tuple[IntArray, IntArray]:
    """``links`` of chunks ``flats`` whose vertices are all returned, as result rows.

    ``index`` maps each row of the chunks' concatenation to its result row (-1: not
    returned); ``ranges`` are the returned rows as ranges of that concatenation.  A face is
    picked by its first vertex, chunk by chunk, and only the picked faces are remapped.
    """
    rows = block.values
    arity = type_spec(reader.meta.geometry_type).link_arity
    where = f"{reader.group.path}/{L.LINKS}"
    if rows.ndim != 2 or rows.shape[1] != arity:
        raise CorruptPayloadError(f"{where}: rows have width {rows.shape[1]}, expected {arity}")
    base = offsets_from_counts(reader.vertex_counts[flats])
    off = block.offsets.tolist()
    starts, counts = _merged(ranges, base)
    cut = np.searchsorted(starts, base).tolist()  # ranges of chunk i: cut[i]:cut[i + 1]
    returned = index >= 0
    picks: list[IntArray] = []
    for i, (lo, hi) in enumerate(itertools.pairwise(base.tolist())):
        chunk = rows[off[i] : off[i + 1]]
        if len(chunk) and (int(chunk.min()) < 0 or int(chunk.max()) >= hi - lo):
            raise CorruptPayloadError(f"{where}: a link names a row outside its chunk")
        if len(chunk) and cut[i + 1] > cut[i]:
            rng = slice(cut[i], cut[i + 1])
            hit = _first_hits(chunk[:, 0], starts[rng] - lo, counts[rng], returned[lo:hi])
            picks.append(hit + off[i])
    idx = np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)
    picked = take_rows(rows, idx).astype(np.int64)
    shift = np.repeat(base[:-1], np.diff(np.searchsorted(idx, off)))
    picked += shift[:, None]
    mapped = index[picked]
    whole = (mapped >= 0).all(axis=1)
    if not whole.all():
        idx, mapped = idx[whole], mapped[whole]
    return mapped, idx


def _merged(ranges: RowRanges, base: IntArray) -> tuple[IntArray, IntArray]:
    """Row ranges sorted by start, adjacent ones of a chunk joined (an object's rows there).

    ``base`` are the chunks' first rows: a range starting a chunk is never joined to the one
    ending the chunk before.
    """
    order = np.argsort(ranges.starts, kind="stable")
    starts, counts = ranges.starts[order], ranges.counts[order]
    if not len(starts):
        return starts, counts
    ends = starts + counts
    new = np.concatenate(([True], starts[1:] != ends[:-1]))
    new[np.isin(starts, base)] = True
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(starts)) - 1
    return starts[first], ends[last] - starts[first]


_RANGE_TESTS = 4
"""Most row ranges of one chunk tested by comparisons; more go through a per-row mask."""


def _first_hits(
    first: npt.NDArray[np.integer], starts: IntArray, counts: IntArray, mask: npt.NDArray[np.bool_]
) -> IntArray:
    """Positions of the rows ``first`` inside a range ``[starts, starts + counts)`` (in ``mask``).

    A few ranges are tested by comparing values (two passes each), many by gathering from
    ``mask`` (one row per chunk row).
    """
    if len(starts) > _RANGE_TESTS:
        return np.flatnonzero(mask[first])
    hit = np.zeros(len(first), dtype=bool)
    for s, n in zip(starts.tolist(), counts.tolist(), strict=True):
        # first - s wraps below 0 to a large unsigned value: one comparison tests both ends
        hit |= (first - first.dtype.type(s)).view(f"u{first.dtype.itemsize}") < n
    return np.flatnonzero(hit)


def result_objects(
    reader: LevelReader, ids: IntArray | None, row_objects: IntArray, boxed: bool
) -> IntArray:
    """Objects of the result: requested ones (or all); with a box, only those it returns."""
    if not boxed:
        return np.arange(reader.n_objects, dtype=np.int64) if ids is None else ids
    present = sorted_unique(row_objects)
    return present if ids is None else ids[np.isin(ids, present)]


def sorted_faces(faces: IntArray, n: int, with_order: bool) -> tuple[IntArray, IntArray | None]:
    """Return the faces sorted by vertex indices (all below ``n``) and the permutation.

    The stable permutation is computed only ``with_order`` (face attributes follow it);
    otherwise the sorted faces are unpacked from sorted keys, which is cheaper.  Each face
    packs into one int64 key, ``bits`` bits per vertex index, so that key order is the
    lexicographic order of the faces.
    """
    k = faces.shape[1] if faces.ndim == 2 else 0
    bits = max(n - 1, 1).bit_length()
    if len(faces) == 0 or k * bits > 63:
        order = sort_order([faces[:, j] for j in range(k)], [n] * k)
        return faces[order], order
    key = faces[:, 0].astype(np.int64)  # packed: one int64 per face
    for j in range(1, k):
        key <<= bits
        key |= faces[:, j]
    key, perm = sort_packed(key, with_order, effective_runs(key))
    if perm is not None:
        return np.take(faces, perm, axis=0), perm
    out = np.empty((len(key), k), dtype=np.int64)  # unpacked from the sorted keys
    mask = (1 << bits) - 1
    for j in range(k - 1, -1, -1):
        np.bitwise_and(key, mask, out=out[:, j])
        key >>= bits
    return out, None
