"""L3 consistency checks: payloads decode and agree with each other (FORMAT.md §6, §8, §11).

Every level is streamed chunk batch by chunk batch (see :mod:`._levelview`); each check below is
vectorised over the batch.  Findings about a chunk have the path ``/<level>/<array>[c0,c1,…]``
with the chunk's absolute coordinates.

The object index is checked in :mod:`._objectindex` (``L3.object_index.*``, ``L3.manifest.range``,
``L3.object_attributes.align``, ``L3.groupings*``).

Chunk payloads (:func:`check_chunks`):

* ``L3.payload.decode`` / ``L3.payload.rows`` — an element does not decode / is not whole rows.
* ``L3.chunk.empty_written`` (warning) — an element is stored but holds no rows.
* ``L3.vertex_counts.match`` — ``vertex_counts`` differs from the decoded row count.
* ``L3.vertices.finite`` / ``L3.vertices.chunk`` — a vertex is NaN/inf or outside its chunk.
* ``L3.fragments.tile`` — fragments do not tile the chunk's rows (starts contiguous from 0,
  counts ≥ 1 summing to the row count).
* ``L3.fragments.bin`` — a vertex is not in the bin its fragment names.
* ``L3.fragments.object`` — a fragment's object id is outside ``[0, n_objects)`` (``-1`` in
  stores without an object index).
* ``L3.manifest.tile`` — the refs of a chunk overlap, cover rows of another object, or leave
  rows of an object uncovered.
* ``L3.attributes.align`` / ``L3.link_attributes.align`` /
  ``L3.cross_chunk_link_attributes.align`` — attribute rows per chunk equal vertex / link rows.
* ``L3.links.range`` — a link names a row outside its chunk.
* ``L3.cross_chunk_links.width`` — width is not ``k·(D+1)`` with the type's k (2 or 3) and the
  ``endpoints`` attribute.
* ``L3.cross_chunk_links.owner`` — a record is not stored in the chunk of its endpoint 0.
* ``L3.cross_chunk_links.chunk`` / ``L3.cross_chunk_links.row`` — an endpoint's chunk is outside
  the grid, or its row outside that chunk.
* ``L3.cross_chunk_links.local`` (warning) — every endpoint is in one chunk (belongs in
  ``links``).

Level counts (:func:`check_level_counts`): ``L3.level.vertex_count``, ``L3.level.chunk_count``
and ``L3.level.object_count`` equal what the payloads and manifest hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import concat_ranges
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._levelview import (
    LevelView,
    RefTable,
    Rows,
    chunk_where,
    first_per_group,
    level_ints,
    level_view,
    segment_sums,
)
from zarr_vectors.validate._objectindex import load_refs

__all__ = ["check_chunks", "check_level_counts"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
E = Severity.ERROR


def _views(ctx: ValidationContext) -> list[LevelView]:
    return [v for v in (level_view(ctx, p) for p in ctx.level_paths) if v is not None]


# ---------------------------------------------------------------------------------------------
# chunk payloads


@dataclass
class _Batch:
    """What one batch of chunks decoded to."""

    flats: IntArray
    coords: IntArray
    nv: IntArray
    """Vertex rows per chunk (meaningful where ``verts_ok``)."""
    verts_ok: BoolArray
    pos: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    owner: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    row_base: IntArray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    inside: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    tiled: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    row_obj: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def check_chunks(ctx: ValidationContext) -> None:
    """Stream every occupied chunk of every level and check its payloads against each other."""
    for lv in _views(ctx):
        scan = _ChunkScan(ctx, lv, load_refs(ctx, lv))
        with np.errstate(all="ignore"):  # garbage rows (NaN, 1e300) are findings, not warnings
            for flats in lv.batches(lv.occupied()):
                scan.batch(flats)
        if scan.complete:  # a chunk that did not decode leaves the totals unknown
            lv.totals.update(scan.totals)
            lv.counts_verified = lv.counts is not None and not scan.counts_differ


class _ChunkScan:
    """The per-batch checks of one level."""

    def __init__(self, ctx: ValidationContext, lv: LevelView, refs: RefTable | None) -> None:
        self.ctx, self.lv, self.refs = ctx, lv, refs
        self.totals = {"vertex_count": 0, "chunk_count": 0}
        self.complete = "vertices" in lv.payloads and lv.payloads["vertices"].usable
        self.ref_order = None if refs is None else refs.by_chunk()
        self.cross_k = _cross_k(ctx, lv)
        self.counts_differ = False

    def report(self, check: str, rel: str, flat_pos: int, b: _Batch, message: str) -> None:
        coords = b.coords[flat_pos].tolist()
        self.ctx.capped(
            check, E, self.lv.node(rel), f"chunk {coords}: {message}", where=chunk_where(coords)
        )

    def batch(self, flats: IntArray) -> None:
        lv = self.lv
        verts = lv.read(self.ctx, L.VERTICES, flats)  # a failed chunk is reported once, here
        n = len(flats)
        b = _Batch(
            flats,
            lv.chunks.coords_of_flat(flats),
            np.zeros(n, np.int64) if verts is None else verts.counts,
            np.zeros(n, bool) if verts is None else verts.ok,
        )
        if verts is None or not verts.ok.all():
            self.complete = False
        if verts is not None:
            self._empty(L.VERTICES, b, verts)
            self._counts(b, verts)
            self._positions(b, verts)
        frags = self._read(L.VERTEX_FRAGMENTS, b)
        if frags is not None:
            self._fragments(b, frags)
            self._refs(b)
        for rel in sorted(lv.payloads):
            if rel.startswith(L.ATTRIBUTES + "/"):
                self._aligned(rel, b, b.nv, b.verts_ok, "vertex")
        self._links(b)
        self._cross(b)
        good = b.verts_ok
        self.totals["vertex_count"] += int(b.nv[good].sum())
        self.totals["chunk_count"] += int(np.count_nonzero(b.nv[good]))

    # -- vertices ---------------------------------------------------------------------------

    def _empty(self, rel: str, b: _Batch, rows: Rows) -> None:
        info = self.lv.payloads[rel]
        if info.present is None:
            return
        pos = np.minimum(np.searchsorted(info.present, b.flats), max(len(info.present) - 1, 0))
        stored = info.present[pos] == b.flats if len(info.present) else np.zeros_like(b.flats, bool)
        for i in np.flatnonzero(stored & rows.ok & (rows.counts == 0)).tolist():
            coords = b.coords[i].tolist()
            self.ctx.capped(
                "L3.chunk.empty_written",
                Severity.WARNING,
                info.path,
                f"chunk {coords}: an element with no rows is stored; writers leave empty "
                "chunks unwritten (absent key = no rows)",
                where=chunk_where(coords),
            )

    def _counts(self, b: _Batch, verts: Rows) -> None:
        counts = self.lv.counts
        if counts is None or self.lv.payloads[L.VERTICES].draco:
            return
        expected = counts[b.flats]
        differ = verts.ok & (expected != verts.counts)
        self.counts_differ |= bool(differ.any())
        for i in np.flatnonzero(differ).tolist():
            held = f"{verts.counts[i]} rows" if verts.counts[i] else "no rows (nothing stored)"
            self.report(
                "L3.vertex_counts.match",
                L.VERTEX_COUNTS,
                i,
                b,
                f"vertex_counts says {int(expected[i])} vertices, the vertices payload holds "
                f"{held}",
            )

    def _positions(self, b: _Batch, verts: Rows) -> None:
        b.pos = verts.values.astype(np.float64)
        b.owner = verts.owner()
        b.row_base = verts.offsets
        if self.lv.payloads[L.VERTICES].draco:  # lossy: positions are only approximately placed
            b.inside = np.zeros(len(b.pos), dtype=bool)
            return
        finite = np.asarray(np.isfinite(b.pos).all(axis=1), dtype=bool)
        # floor(p / C) in float64 as ChunkLayout.chunk_coords does, without its int cast, which
        # garbage coordinates (1e300) would overflow
        cc = np.floor(b.pos / np.asarray(self.lv.chunks.chunk_shape))
        b.inside = finite & np.all(cc == b.coords[b.owner], axis=1)
        for chunk, row in zip(*first_per_group(b.owner, ~finite), strict=True):
            local = int(row - b.row_base[chunk])
            self.report(
                "L3.vertices.finite",
                L.VERTICES,
                int(chunk),
                b,
                f"vertex row {local} is {b.pos[row].tolist()}; coordinates must be finite",
            )
        for chunk, row in zip(*first_per_group(b.owner, finite & ~b.inside), strict=True):
            local = int(row - b.row_base[chunk])
            self.report(
                "L3.vertices.chunk",
                L.VERTICES,
                int(chunk),
                b,
                f"vertex row {local} at {b.pos[row].tolist()} lies in chunk {_ints(cc[row])}, "
                "not in the chunk it is stored in",
            )

    # -- fragments --------------------------------------------------------------------------

    def _fragments(self, b: _Batch, frags: Rows) -> None:
        fr = frags.values.astype(np.int64)
        fo = frags.owner()
        start, count = fr[:, 2], fr[:, 3]
        excl = np.cumsum(count) - count  # rows before each fragment, over the whole batch
        first = np.r_[excl, 0][frags.offsets[:-1]]
        expected = excl - np.repeat(first, frags.counts)
        bad = (start != expected) | (count < 1)
        total = segment_sums(count, frags.offsets)
        both = frags.ok & b.verts_ok
        bad_chunk = np.zeros(len(b.flats), dtype=bool)
        bad_chunk[fo[bad]] = True
        b.tiled = both & ~bad_chunk & (total == b.nv)
        for i in np.flatnonzero(both & ~b.tiled).tolist():
            self.report(
                "L3.fragments.tile", L.VERTEX_FRAGMENTS, i, b, _tile_detail(fr, frags, i, b)
            )
        self._fragment_objects(b, frags, fr, fo)
        b.row_obj = np.full(len(b.pos), -2, dtype=np.int64)
        if len(b.pos) == 0:
            return
        fmask = b.tiled[fo]
        rmask = b.tiled[b.owner]
        b.row_obj[rmask] = np.repeat(fr[fmask, 1], count[fmask])
        self._bins(b, np.repeat(fr[fmask, 0], count[fmask]), rmask)

    def _fragment_objects(self, b: _Batch, frags: Rows, fr: IntArray, fo: IntArray) -> None:
        obj = fr[:, 1]
        if self.refs is not None:
            n = self.refs.n_objects
            bad, want = (obj < 0) | (obj >= n), f"in [0, {n}) (the object ids of this level)"
        elif L.OBJECT_OFFSETS in self.lv.dense or (
            self.lv.gtype and type_spec(self.lv.gtype).has_objects
        ):
            return  # object index missing or unreadable: reported elsewhere
        else:
            bad, want = obj != -1, "-1 (the level has no object index)"
        for chunk, k in zip(*first_per_group(fo, bad & frags.ok[fo]), strict=True):
            local = int(k - frags.offsets[chunk])
            self.report(
                "L3.fragments.object",
                L.VERTEX_FRAGMENTS,
                int(chunk),
                b,
                f"fragment {local} names object {int(obj[k])}; object ids must be {want}",
            )

    def _bins(self, b: _Batch, frag_bin: IntArray, rmask: BoolArray) -> None:
        bins = self.lv.bins
        if bins is None or not rmask.any():
            return
        rows = np.flatnonzero(rmask)
        inside = b.inside[rows]  # bins of vertices outside their chunk mean nothing
        got = np.full(len(rows), -1, dtype=np.int64)
        got[inside] = bins.bin_flat(b.pos[rows[inside]], b.coords[b.owner[rows[inside]]])
        wrong = inside & (got != frag_bin)
        for chunk, k in zip(*first_per_group(b.owner[rows], wrong), strict=True):
            row = rows[k]
            self.report(
                "L3.fragments.bin",
                L.VERTEX_FRAGMENTS,
                int(chunk),
                b,
                f"vertex row {int(row - b.row_base[chunk])} at {b.pos[row].tolist()} is in bin "
                f"{int(got[k])} (bin_shape {list(bins.bin_shape)}), its fragment says bin "
                f"{int(frag_bin[k])}",
            )

    # -- manifest refs against fragments ----------------------------------------------------

    def _refs(self, b: _Batch) -> None:
        refs, order, counts = self.refs, self.ref_order, self.lv.counts
        if refs is None or order is None or counts is None or len(b.pos) == 0:
            return
        sorted_flat = refs.flat[order]
        lo = np.searchsorted(sorted_flat, b.flats, side="left")
        hi = np.searchsorted(sorted_flat, b.flats, side="right")
        take = order[concat_ranges(lo, hi - lo)]
        owner = np.repeat(np.arange(len(b.flats), dtype=np.int64), hi - lo)
        usable = b.tiled & (counts[b.flats] == b.nv)
        keep = usable[owner]
        take, owner = take[keep], owner[keep]
        start, count, obj = refs.start[take], refs.count[take], refs.obj[take]
        g0 = b.row_base[owner] + start
        g1 = g0 + count - 1
        run = np.cumsum(
            np.r_[True, (b.row_obj[1:] != b.row_obj[:-1]) | (b.owner[1:] != b.owner[:-1])]
        )
        member = (run[g0] == run[g1]) & (b.row_obj[g0] == obj)
        overlap = np.zeros(len(take), dtype=bool)
        overlap[1:] = (owner[1:] == owner[:-1]) & (start[1:] < start[:-1] + count[:-1])
        object_rows = segment_sums((b.row_obj >= 0).astype(np.int64), b.row_base)
        covered = np.bincount(owner, weights=count, minlength=len(b.flats)).astype(np.int64)
        msgs: dict[int, str] = {}
        for chunk, k in zip(*first_per_group(owner, overlap), strict=True):
            msgs[int(chunk)] = (
                f"manifest ref {int(take[k])} (object {int(obj[k])}) overlaps the previous ref "
                f"of this chunk at row {int(start[k])}"
            )
        for chunk, k in zip(*first_per_group(owner, ~member), strict=True):
            msgs.setdefault(
                int(chunk),
                f"manifest ref {int(take[k])} names object {int(obj[k])} for rows "
                f"{int(start[k])}..{int(start[k] + count[k] - 1)}, but the fragments give "
                "those rows to another object",
            )
        for i in np.flatnonzero(usable & (covered != object_rows)).tolist():
            msgs.setdefault(
                i,
                f"the fragments give {int(object_rows[i])} rows to objects, the manifest refs "
                f"cover {int(covered[i])}: every object row must be in exactly one ref",
            )
        for i, msg in sorted(msgs.items()):
            self.report("L3.manifest.tile", L.OBJECT_MANIFEST, i, b, msg)

    # -- attributes and links ---------------------------------------------------------------

    def _read(self, rel: str, b: _Batch) -> Rows | None:
        rows = self.lv.read(self.ctx, rel, b.flats)
        if rows is not None:
            self._empty(rel, b, rows)
        return rows

    def _aligned(
        self, rel: str, b: _Batch, expected: IntArray, expected_ok: BoolArray, what: str
    ) -> Rows | None:
        rows = self._read(rel, b)
        if rows is None:
            return None
        check = f"L3.{rel.split('/', 1)[0]}.align"
        for i in np.flatnonzero(rows.ok & expected_ok & (rows.counts != expected)).tolist():
            self.report(
                check,
                rel,
                i,
                b,
                f"{int(rows.counts[i])} rows, the chunk has {int(expected[i])} {what} rows; "
                "attribute rows must align one-to-one",
            )
        return rows

    def _links(self, b: _Batch) -> None:
        if L.LINKS not in self.lv.payloads:
            return
        links = self._read(L.LINKS, b)
        if links is None:
            return
        vals = links.values.astype(np.int64)
        owner = links.owner()
        bad = ((vals < 0) | (vals >= b.nv[owner][:, None])).any(axis=1) & b.verts_ok[owner]
        for chunk, k in zip(*first_per_group(owner, bad), strict=True):
            self.report(
                "L3.links.range",
                L.LINKS,
                int(chunk),
                b,
                f"link {int(k - links.offsets[chunk])} is {vals[k].tolist()}; rows must be in "
                f"[0, {int(b.nv[chunk])})",
            )
        for rel in sorted(self.lv.payloads):
            if rel.startswith(L.LINK_ATTRIBUTES + "/"):
                self._aligned(rel, b, links.counts, links.ok, "link")

    def _cross(self, b: _Batch) -> None:
        if L.CROSS_CHUNK_LINKS not in self.lv.payloads or self.cross_k is None:
            return
        cross = self._read(L.CROSS_CHUNK_LINKS, b)
        if cross is None:
            return
        for rel in sorted(self.lv.payloads):
            if rel.startswith(L.CROSS_CHUNK_LINK_ATTRIBUTES + "/"):
                self._aligned(rel, b, cross.counts, cross.ok, "cross-chunk link")
        d, k = self.lv.ndim, self.cross_k
        recs = cross.values.astype(np.int64).reshape(len(cross.values), k, d + 1)
        owner = cross.owner()
        coords, rows = recs[:, :, :d], recs[:, :, d]
        idx = coords - np.asarray(self.lv.grid.origin, dtype=np.int64)
        in_grid = np.all((idx >= 0) & (idx < np.asarray(self.lv.grid.shape)), axis=2)
        row_ok = np.ones_like(in_grid)
        if self.lv.counts is not None and in_grid.any():
            flat = np.zeros(in_grid.shape, dtype=np.int64)
            flat[in_grid] = np.ravel_multi_index(tuple(idx[in_grid].T), self.lv.grid.shape)
            row_ok = ~in_grid | ((rows >= 0) & (rows < self.lv.counts[flat]))
        checks = (
            (
                "L3.cross_chunk_links.owner",
                np.any(coords[:, 0] != b.coords[owner], axis=1),
                "is not stored in the chunk of its endpoint 0",
            ),
            (
                "L3.cross_chunk_links.chunk",
                ~in_grid.all(axis=1),
                "names a chunk outside the chunk grid",
            ),
            (
                "L3.cross_chunk_links.row",
                ~row_ok.all(axis=1),
                "names a row outside its chunk (rows must be < that chunk's vertex_counts)",
            ),
        )
        for check, bad, why in checks:
            for chunk, j in zip(*first_per_group(owner, bad), strict=True):
                self.report(
                    check,
                    L.CROSS_CHUNK_LINKS,
                    int(chunk),
                    b,
                    f"record {int(j - cross.offsets[chunk])} {recs[j].tolist()} {why}",
                )
        local = np.all(coords == coords[:, :1], axis=(1, 2))
        for chunk, j in zip(*first_per_group(owner, local), strict=True):
            coords_c = b.coords[chunk].tolist()
            self.ctx.capped(
                "L3.cross_chunk_links.local",
                Severity.WARNING,
                self.lv.node(L.CROSS_CHUNK_LINKS),
                f"chunk {coords_c}: record {int(j - cross.offsets[chunk])} has every endpoint "
                "in one chunk; chunk-local connections belong in 'links'",
                where=chunk_where(coords_c),
            )


def _ints(values: npt.NDArray[np.float64]) -> list[float | int]:
    return [int(v) if abs(v) < 2**62 else float(v) for v in values.tolist()]


def _tile_detail(fr: IntArray, frags: Rows, i: int, b: _Batch) -> str:
    rows = fr[frags.offsets[i] : frags.offsets[i + 1]]
    n = int(b.nv[i])
    if len(rows) == 0:
        return f"no fragments, but the chunk has {n} vertex rows"
    expected = 0
    for j, (_, _, start, count) in enumerate(rows.tolist()):
        if start != expected or count < 1:
            return (
                f"fragment {j} is [start {start}, count {count}], expected start {expected} "
                "and count >= 1 (fragments must tile the rows in order)"
            )
        expected += count
    return f"fragments cover {expected} rows, the chunk has {n} vertex rows"


def _cross_k(ctx: ValidationContext, lv: LevelView) -> int | None:
    info = lv.payloads.get(L.CROSS_CHUNK_LINKS)
    if info is None or info.width is None:
        return None
    d = lv.ndim
    k, rem = divmod(info.width, d + 1)
    attr = (ctx.attrs(info.path) or {}).get("endpoints")
    want = None if lv.gtype is None else type_spec(lv.gtype).cross_chunk_endpoints or None
    problem = None
    if rem or k < 2:
        problem = f"width {info.width} is not k·(D+1) = k·{d + 1} with k >= 2 endpoints"
    elif want is not None and k != want:
        problem = f"records have {k} endpoints, {lv.gtype} stores need {want}"
    elif attr is not None and attr != k:
        problem = f"the 'endpoints' attribute is {attr!r}, width {info.width} gives {k}"
    if problem is None:
        return k
    ctx.error("L3.cross_chunk_links.width", info.path, problem)
    return None


# ---------------------------------------------------------------------------------------------
# level counts


def check_level_counts(ctx: ValidationContext) -> None:
    """Check the level attributes ``vertex_count``, ``chunk_count`` and ``object_count``."""
    for lv in _views(ctx):
        attrs = level_ints(ctx, lv.path)
        actual = dict(lv.totals)
        if lv.refs is not None and lv.refs.all_valid:
            actual["object_count"] = int(lv.refs.present().sum())
        elif (
            lv.gtype is not None
            and not type_spec(lv.gtype).has_objects
            and not {
                L.OBJECT_OFFSETS,
                L.OBJECT_MANIFEST,
            }
            & set(lv.dense)
        ):
            actual["object_count"] = 0  # a point cloud without objects
        for key in ("vertex_count", "chunk_count", "object_count"):
            if key in attrs and key in actual and attrs[key] != actual[key]:
                ctx.error(
                    f"L3.level.{key}",
                    lv.path,
                    f"level attribute {key} is {attrs[key]}, the level holds {actual[key]}",
                )
