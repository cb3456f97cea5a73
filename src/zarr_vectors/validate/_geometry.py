"""L4 geometry checks: connectivity means what the geometry type says (FORMAT.md §7, §11).

Links are gathered level-wide as global vertex numbers (chunk by chunk in flat order, then row),
streaming the ``links`` and ``cross_chunk_links`` payloads in batches; memory is O(vertices +
links) integers.  Links that L3 found out of range are left out here (already reported), and a
level whose ``vertex_counts`` L3 could not confirm is skipped.

* ``L4.skeleton.parents`` — a skeleton node is the child of more than one edge (edges are
  ``[child, parent]``).
* ``L4.skeleton.cycle`` — following parents from a node never reaches a root.
* ``L4.skeleton.cross_object`` — an edge joins nodes of two skeletons.
* ``L4.mesh.cross_object`` — a face joins vertices of two objects.
* ``L4.mesh.degenerate`` (warning) — faces repeating a vertex (allowed at level 0, dropped by
  coarsening); one finding per level with the count.
* ``L4.graph.self_loop`` (warning) — edges from a vertex to itself; one finding per level.
* ``L4.polyline.join_missing`` / ``L4.polyline.join_duplicate`` / ``L4.polyline.join_dangling``
  — each pair of consecutive manifest refs of a path in different chunks needs exactly one
  ``cross_chunk_links`` record ``[chunk of ref r…, its last row, chunk of ref r+1…, its first
  row]``, and every record must be such a join (``line``, ``polyline``, ``streamline``).
* ``L4.line.vertices`` — a ``line`` object does not have two vertices (one or two at coarse
  levels, where a segment inside one bin merges).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.ragged import concat_ranges, unique_sorted
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Severity, Topology
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._levelview import LevelView, RefTable, chunk_where, level_view
from zarr_vectors.validate._objectindex import load_refs

__all__ = ["check_link_geometry", "check_path_continuity"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
_KEY = np.dtype([("a", "<i8"), ("b", "<i8")])


@dataclass
class _Links:
    """Every readable link of a level, endpoints as global vertex numbers."""

    ends: IntArray
    """(E, k) global vertex numbers."""
    owner: IntArray
    """Flat index of the chunk storing each link."""
    index: IntArray
    """Row of each link inside its chunk's payload."""
    cross: BoolArray
    """True for ``cross_chunk_links`` records, False for ``links`` rows."""


class _Vertices:
    """Global vertex numbering of a level: chunk by chunk in flat order, then row."""

    def __init__(self, lv: LevelView, counts: IntArray, base: IntArray) -> None:
        self.lv, self.counts, self.base = lv, counts, base
        self.n = int(np.maximum(counts, 0).sum())

    def locate(self, g: int) -> str:
        flat = int(np.searchsorted(self.base, g, side="right")) - 1
        coords = self.lv.chunks.coords_of_flat(np.array([flat], dtype=np.int64))[0].tolist()
        return f"row {g - int(self.base[flat])} of chunk {coords}"

    def objects(self, refs: RefTable | None) -> IntArray | None:
        """Object of each vertex from the manifest (-1 where no ref covers it)."""
        if refs is None or not refs.all_valid:
            return None
        out = np.full(self.n, -1, dtype=np.int64)
        rows = concat_ranges(self.base[refs.flat] + refs.start, refs.count)
        out[rows] = np.repeat(refs.obj, refs.count)
        return out


def _numbering(lv: LevelView) -> _Vertices | None:
    base = lv.base()
    if lv.counts is None or base is None or not lv.counts_verified:
        return None  # L3 reported why; sizing arrays by unverified counts is unsafe
    return _Vertices(lv, lv.counts, base)


def _cross_k(lv: LevelView) -> int | None:
    info = lv.payloads.get(L.CROSS_CHUNK_LINKS)
    if info is None or info.width is None or info.width % (lv.ndim + 1):
        return None
    k = info.width // (lv.ndim + 1)
    return k if k >= 2 else None


def _collect(ctx: ValidationContext, lv: LevelView, vx: _Vertices, k: int) -> _Links:
    parts: list[tuple[IntArray, IntArray, IntArray, BoolArray]] = []
    cross_ok = _cross_k(lv) == k
    for flats in lv.batches(lv.occupied()):
        if L.LINKS in lv.payloads:
            links = lv.read(ctx, L.LINKS, flats, report=False)
            if links is not None and links.values.shape[1] == k:
                owner = flats[links.owner()]
                rows = links.values.astype(np.int64)
                ok = np.all((rows >= 0) & (rows < vx.counts[owner][:, None]), axis=1)
                index = np.arange(len(rows)) - links.offsets[links.owner()]
                ends = vx.base[owner][:, None] + rows
                parts.append((ends[ok], owner[ok], index[ok], np.zeros(int(ok.sum()), bool)))
        if cross_ok:
            cross = lv.read(ctx, L.CROSS_CHUNK_LINKS, flats, report=False)
            if cross is not None:
                parts.append(_cross_ends(lv, vx, flats, cross.values, cross.owner(), cross.offsets))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return _Links(np.zeros((0, k), np.int64), empty, empty, np.zeros(0, bool))
    return _Links(*(np.concatenate(p) for p in zip(*parts, strict=True)))


def _cross_ends(
    lv: LevelView,
    vx: _Vertices,
    flats: IntArray,
    values: npt.NDArray[np.int64],
    batch_owner: IntArray,
    offsets: IntArray,
) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
    d = lv.ndim
    recs = values.astype(np.int64).reshape(len(values), -1, d + 1)
    idx = recs[:, :, :d] - np.asarray(lv.grid.origin, dtype=np.int64)
    ok = np.all((idx >= 0) & (idx < np.asarray(lv.grid.shape)), axis=(1, 2))
    flat = np.zeros(recs.shape[:2], dtype=np.int64)
    if ok.any():
        flat[ok] = np.ravel_multi_index(tuple(idx[ok].reshape(-1, d).T), lv.grid.shape).reshape(
            -1, recs.shape[1]
        )
    rows = recs[:, :, d]
    ok &= np.all((rows >= 0) & (rows < vx.counts[flat]), axis=1)
    index = np.arange(len(recs)) - offsets[batch_owner]
    ends = vx.base[flat] + rows
    return ends[ok], flats[batch_owner][ok], index[ok], np.ones(int(ok.sum()), bool)


# ---------------------------------------------------------------------------------------------
# graphs, skeletons, meshes


def check_link_geometry(ctx: ValidationContext) -> None:
    """Check skeletons are forests, mesh faces stay inside objects, and graphs have no loops."""
    for level in ctx.level_paths:
        lv = level_view(ctx, level)
        spec = None if lv is None or lv.gtype is None else type_spec(lv.gtype)
        if lv is None or spec is None or not spec.linked:
            continue
        vx = _numbering(lv)
        if vx is None:
            continue
        with np.errstate(all="ignore"):
            links = _collect(ctx, lv, vx, spec.link_arity)
        obj = vx.objects(load_refs(ctx, lv))
        if spec.topology is Topology.FOREST:
            _check_tree(ctx, lv, vx, links, obj)
        elif spec.topology is Topology.SURFACE:
            _check_faces(ctx, lv, vx, links, obj)
        else:
            _summary(
                ctx,
                lv,
                links,
                links.ends[:, 0] == links.ends[:, 1],
                "L4.graph.self_loop",
                "edge(s) join a vertex to itself; graphs are simple at level 0",
            )


def _where(lv: LevelView, links: _Links, i: int) -> tuple[str, str, str]:
    """Return the array node, the chunk suffix and a description of link ``i``."""
    rel = L.CROSS_CHUNK_LINKS if links.cross[i] else L.LINKS
    coords = lv.chunks.coords_of_flat(links.owner[i : i + 1])[0].tolist()
    what = "record" if links.cross[i] else "link"
    return lv.node(rel), chunk_where(coords), f"{what} {int(links.index[i])} of chunk {coords}"


def _report_links(
    ctx: ValidationContext, lv: LevelView, links: _Links, bad: BoolArray, check: str, why: str
) -> None:
    for i in np.flatnonzero(bad).tolist():
        node, where, what = _where(lv, links, i)
        ctx.capped(check, Severity.ERROR, node, f"{what} {why}", where=where)


def _summary(
    ctx: ValidationContext, lv: LevelView, links: _Links, bad: BoolArray, check: str, why: str
) -> None:
    n = int(bad.sum())
    if n:
        _, _, what = _where(lv, links, int(np.argmax(bad)))
        ctx.warning(check, lv.path, f"{n} {why} (first: {what})")


def _check_tree(
    ctx: ValidationContext, lv: LevelView, vx: _Vertices, links: _Links, obj: IntArray | None
) -> None:
    child, parent = links.ends[:, 0], links.ends[:, 1]
    n_parents = np.bincount(child, minlength=vx.n)
    for g in np.flatnonzero(n_parents > 1).tolist():
        ctx.capped(
            "L4.skeleton.parents",
            Severity.ERROR,
            lv.path,
            f"node at {vx.locate(g)} has {int(n_parents[g])} parents; skeleton edges are "
            "[child, parent] and a node has at most one parent",
        )
    parents = np.full(vx.n, -1, dtype=np.int64)
    parents[child] = parent
    for g in _on_cycles(parents, obj).tolist():
        ctx.capped(
            "L4.skeleton.cycle",
            Severity.ERROR,
            lv.path,
            f"following parents from the node at {vx.locate(g)} never reaches a root: "
            "the skeleton has a cycle",
        )
    if obj is not None:
        _report_links(
            ctx,
            lv,
            links,
            obj[child] != obj[parent],
            "L4.skeleton.cross_object",
            "joins nodes of two different skeletons (objects)",
        )


def _on_cycles(parents: IntArray, obj: IntArray | None) -> IntArray:
    """Return one node on each cycle of the parent forest (one per object when known)."""
    n = len(parents)
    anc, steps = parents.copy(), 1
    while steps < n and (anc >= 0).any():  # pointer doubling: anc = 2^k-th ancestor
        has = anc >= 0
        nxt = np.full(n, -1, dtype=np.int64)
        nxt[has] = anc[anc[has]]
        anc, steps = nxt, steps * 2
    if steps < n or not (anc >= 0).any():
        return np.zeros(0, dtype=np.int64)
    nodes = unique_sorted(anc[anc >= 0])  # n or more steps up: on a cycle
    key = nodes if obj is None else obj[nodes]
    _, first = np.unique(key, return_index=True)
    return nodes[np.sort(first)]


def _check_faces(
    ctx: ValidationContext, lv: LevelView, vx: _Vertices, links: _Links, obj: IntArray | None
) -> None:
    f = links.ends
    degenerate = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2])
    _summary(
        ctx,
        lv,
        links,
        degenerate,
        "L4.mesh.degenerate",
        "face(s) repeat a vertex (degenerate); coarse levels drop them",
    )
    if obj is not None:
        o = obj[f]
        mixed = (o[:, 0] != o[:, 1]) | (o[:, 0] != o[:, 2])
        _report_links(
            ctx,
            lv,
            links,
            mixed,
            "L4.mesh.cross_object",
            "joins vertices of different objects; a face must stay inside one object",
        )


# ---------------------------------------------------------------------------------------------
# paths


def check_path_continuity(ctx: ValidationContext) -> None:
    """Check every chunk crossing of a path has exactly one join record, and nothing else does."""
    for level in ctx.level_paths:
        lv = level_view(ctx, level)
        spec = None if lv is None or lv.gtype is None else type_spec(lv.gtype)
        if lv is None or spec is None or spec.topology is not Topology.PATHS:
            continue
        refs = load_refs(ctx, lv)
        vx = _numbering(lv)
        if refs is None or vx is None or not refs.all_valid:
            continue  # L1/L3 reported why
        if spec.object_vertices == 2:
            _check_line_lengths(ctx, lv, refs)
        if L.CROSS_CHUNK_LINKS in lv.payloads and _cross_k(lv) != 2:
            continue  # L3.cross_chunk_links.width
        _check_joins(ctx, lv, vx, refs)


def _check_line_lengths(ctx: ValidationContext, lv: LevelView, refs: RefTable) -> None:
    n = np.bincount(refs.obj, weights=refs.count, minlength=refs.n_objects).astype(np.int64)
    allowed = "2" if lv.path == "0" else "1 or 2 (a coarse level may merge a segment)"
    bad = (n > 2) | ((n == 1) & (lv.path == "0"))
    for o in np.flatnonzero(bad).tolist():
        ctx.capped(
            "L4.line.vertices",
            Severity.ERROR,
            lv.node(L.OBJECT_INDEX),
            f"line object {o} has {int(n[o])} vertices; line objects have {allowed}",
        )


def _keys(a: IntArray, b: IntArray) -> npt.NDArray[np.void]:
    out = np.empty(len(a), dtype=_KEY)
    out["a"], out["b"] = a, b
    return out


def _check_joins(ctx: ValidationContext, lv: LevelView, vx: _Vertices, refs: RefTable) -> None:
    j = np.flatnonzero((refs.obj[1:] == refs.obj[:-1]) & (refs.flat[1:] != refs.flat[:-1]))
    last = vx.base[refs.flat[j]] + refs.start[j] + refs.count[j] - 1
    first = vx.base[refs.flat[j + 1]] + refs.start[j + 1]
    expected = _keys(last, first)
    links = _collect(ctx, lv, vx, 2) if L.CROSS_CHUNK_LINKS in lv.payloads else None
    none = np.zeros(0, dtype=np.int64)
    got = _keys(none, none) if links is None else _keys(links.ends[:, 0], links.ends[:, 1])
    node = lv.node(L.CROSS_CHUNK_LINKS)
    repeat = np.ones(len(got), dtype=bool)
    repeat[np.unique(got, return_index=True)[1]] = False  # every copy after the first
    for i in np.flatnonzero(~np.isin(expected, got)).tolist():
        a, b = int(j[i]), int(j[i]) + 1
        coords = lv.chunks.coords_of_flat(refs.flat[[a, b]])
        ctx.capped(
            "L4.polyline.join_missing",
            Severity.ERROR,
            node,
            f"object {int(refs.obj[a])}: refs {a} and {b} (chunks {coords[0].tolist()} → "
            f"{coords[1].tolist()}) are joined by no record [{vx.locate(int(last[i]))} → "
            f"{vx.locate(int(first[i]))}] stored in chunk {coords[0].tolist()}",
            where=chunk_where(coords[0]),
        )
    if links is None:
        return
    for check, bad, why in (
        (
            "L4.polyline.join_duplicate",
            repeat & np.isin(got, expected),
            "repeats a join another record already makes",
        ),
        (
            "L4.polyline.join_dangling",
            ~np.isin(got, expected),
            "does not join the last row of a ref to the first row of the same path's next ref",
        ),
    ):
        _report_links(ctx, lv, links, bad, check, why)
