"""Row planning: the run-level planner equals a straightforward vertex-by-vertex planner."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.core import plan as plan_module
from zarr_vectors.core.chunking import ChunkLayout, grid_for_bounds
from zarr_vectors.core.plan import GeometryParts, LevelPlan, as_table, plan_level
from zarr_vectors.core.ragged import as_index, offsets_from_counts, run_starts

IntArray = np.ndarray[Any, np.dtype[np.int64]]


def _runs(n: int, *keys: IntArray, extra: np.ndarray[Any, Any] | None = None) -> IntArray:
    return run_starts(*keys, extra=extra) if n else np.zeros(0, dtype=np.int64)


def reference_plan(parts: GeometryParts, layout: ChunkLayout) -> dict[str, Any]:
    """Every table of :class:`LevelPlan`, computed vertex by vertex (FORMAT.md §6, §7)."""
    n = len(parts.positions)
    flat, bins = layout.locate(parts.positions)
    obj = parts.vertex_objects
    rank = np.arange(n) if parts.rank is None else parts.rank
    if parts.rank is None and obj is not None:
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(obj, kind="stable")] = np.arange(n)
    # points by (chunk, bin); objects' rows of a chunk in traversal order
    order = np.lexsort((bins, flat)) if obj is None else np.lexsort((rank, flat))
    s_flat, s_bin, s_rank = flat[order], bins[order], rank[order]
    s_obj = np.full(n, -1) if obj is None else obj[order]
    starts = _runs(n, s_flat)
    offsets = np.append(starts, n)
    row = np.arange(n) - np.repeat(starts, np.diff(offsets))
    gap = np.zeros(n, dtype=bool)
    if obj is not None:
        gap[1:] = s_rank[1:] != s_rank[:-1] + 1
    f = _runs(n, s_flat, s_obj, s_bin, extra=gap)
    out: dict[str, Any] = {
        "order": order,
        "chunks": s_flat[starts],
        "chunk_offsets": offsets,
        "fragments": np.stack([s_bin[f], s_obj[f], row[f], np.diff(np.append(f, n))], axis=1),
        # each non-empty chunk's fragments, as CSR offsets
        "fragment_offsets": np.append(_runs(len(f), s_flat[f]), len(f)),
    }
    counts = np.zeros(layout.n_chunks, dtype=np.int64)
    counts[s_flat[starts]] = np.diff(offsets)
    out["vertex_counts"] = counts.reshape(layout.grid.shape)
    r = count = np.zeros(0, dtype=np.int64)
    if obj is not None:  # refs by (object, rank of their first vertex)
        r = _runs(n, s_flat, s_obj, extra=gap)
        count = np.diff(np.append(r, n))
        by_object = np.lexsort((s_rank[r], s_obj[r]))
        r, count = r[by_object], count[by_object]
    coords = layout.coords_of_flat(s_flat[r])
    out["manifest"] = np.concatenate([coords, row[r, None], count[:, None]], axis=1)
    out["ref_object"] = s_obj[r]
    out["ref_first_row"] = r
    out["object_offsets"] = offsets_from_counts(np.bincount(s_obj[r], minlength=parts.n_objects))
    joins = []
    if parts.sequential and obj is not None:
        for j in np.flatnonzero(s_obj[r][1:] == s_obj[r][:-1]).tolist():
            a, b = r[j] + count[j] - 1, r[j + 1]
            joins.append((s_flat[a], [*coords[j], row[a], *coords[j + 1], row[b]]))
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)
    cross = []
    local = []
    links = np.zeros((0, 2), dtype=np.int64) if parts.links is None else parts.links
    edges = links.shape[1] == 2  # edges are sorted inside a chunk; triangles keep input order
    for i, link in enumerate(links.tolist()):
        ends = where[link]
        if np.all(s_flat[ends] == s_flat[ends[0]]):
            key = tuple(row[ends].tolist()) if edges else ()
            local.append((s_flat[ends[0]], row[ends].tolist(), i, key))
        else:
            rec = [v for e in ends for v in (*layout.coords_of_flat(s_flat[[e]])[0], row[e])]
            key = (int(row[ends[0]]),) if edges else ()
            cross.append((s_flat[ends[0]], rec, i, key))
    local.sort(key=lambda t: (t[0], t[3]))  # stable
    cross.sort(key=lambda t: (t[0], t[3]))
    cross += [(c, rec, -1, ()) for c, rec in joins]
    cross.sort(key=lambda t: t[0])  # stable: explicit links first, then joins
    out["local"] = [(int(c), list(rows), i) for c, rows, i, _ in local]
    out["cross"] = [(int(c), [int(v) for v in rec], i) for c, rec, i, _ in cross]
    return out


def assert_same_plan(plan: LevelPlan, ref: dict[str, Any]) -> None:
    for f in fields(plan):
        if f.name == "links":
            continue
        got = getattr(plan, f.name)
        if f.name == "order":
            got = as_index(got)
        if f.name == "fragments":
            got = as_table(got)
        assert got.dtype == np.int64, f.name
        np.testing.assert_array_equal(got, np.asarray(ref[f.name]).reshape(got.shape), f.name)
    lp = plan.links
    if lp is None:
        assert ref["local"] == []
        assert ref["cross"] == []
        return
    local = [
        (int(c), r.tolist(), int(i))
        for c, r, i in zip(lp.local_chunk, lp.local_rows, lp.local_source, strict=True)
    ]
    cross = [
        (int(c), r.tolist(), int(i))
        for c, r, i in zip(lp.cross_chunk, lp.cross_rows, lp.cross_source, strict=True)
    ]
    assert local == ref["local"]
    assert cross == ref["cross"]
    assert lp.local_rows.dtype == np.int32
    assert lp.cross_rows.dtype == np.int64


@st.composite
def level_cases(draw: st.DrawFn) -> tuple[GeometryParts, ChunkLayout]:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 3))
    n = draw(st.integers(0, 120))
    chunk = tuple(draw(st.sampled_from([1.0, 2.0, 5.0])) for _ in range(d))
    ratio = [draw(st.sampled_from([1, 1, 2, 5])) for _ in range(d)]
    step = draw(st.sampled_from([0.3, 1.5, 6.0]))
    pos = np.cumsum(rng.normal(0, step, (n, d)), axis=0) if n else np.zeros((0, d))
    lo = pos.min(axis=0) if n else np.zeros(d)
    hi = pos.max(axis=0) + draw(st.sampled_from([0.0, 7.0])) if n else np.zeros(d)
    # a long first axis: flat chunk indices beyond uint8 (400 chunks) and uint16 (70,000),
    # as long as the grid stays small (its dense per-slot arrays take 8 bytes a slot: a
    # 70,000 x 120 x 120 grid would take gigabytes in the plan and its reference)
    # (sized before it is made: a grid past the writers' 2^30 slots is an error to make)
    grid = grid_for_bounds(lo.tolist(), hi.tolist(), chunk)
    extra = draw(st.sampled_from([0, 0, 400, 70_000]))
    if int(np.prod(grid.shape[1:])) * (grid.shape[0] + extra + 1) <= 1 << 22:
        hi[0] += extra * chunk[0]
        grid = grid_for_bounds(lo.tolist(), hi.tolist(), chunk)
    layout = ChunkLayout(chunk, tuple(c / r for c, r in zip(chunk, ratio, strict=True)), grid)
    mode = draw(st.sampled_from(["none", "contiguous", "interleaved", "ranks", "shuffled_ranks"]))
    if mode == "none" or n == 0:
        return GeometryParts(positions=pos, ordered=False), layout
    k = draw(st.integers(1, max(1, n // 3)))
    obj = rng.integers(0, k, n)
    if mode not in ("interleaved", "shuffled_ranks"):
        obj = np.sort(obj)
    # int64 ids, or int32 as polylines pass them
    obj = np.unique(obj, return_inverse=True)[1].astype(draw(st.sampled_from([np.int64, np.int32])))
    kw: dict[str, Any] = {"vertex_object": obj, "n_objects": int(obj.max()) + 1}
    if mode == "contiguous" and draw(st.booleans()):  # as paths pass them: offsets, no ids
        empty = draw(st.lists(st.integers(0, kw["n_objects"]), max_size=3))  # empty objects
        counts = np.insert(np.bincount(obj), np.array(sorted(empty), dtype=np.int64), 0)
        kw = {"object_offsets": offsets_from_counts(counts), "n_objects": len(counts)}
    if mode in ("ranks", "shuffled_ranks"):  # a batch of a bigger level: ranks with gaps
        rank = np.empty(n, dtype=np.int64)
        rank[np.argsort(obj, kind="stable")] = np.cumsum(rng.integers(1, 3, n)) - 1
        kw["rank"] = rank
    if draw(st.booleans()):
        kw["sequential"] = True
    elif draw(st.booleans()):
        kw["links"] = rng.integers(0, n, (int(rng.integers(0, 2 * n)), int(rng.integers(2, 4))))
    return GeometryParts(positions=pos, **kw), layout


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(level_cases())
def test_plan_equals_vertex_by_vertex_reference(case: tuple[GeometryParts, ChunkLayout]) -> None:
    parts, layout = case
    assert_same_plan(plan_level(parts, layout), reference_plan(parts, layout))


@pytest.mark.parametrize("n_objects", [1, 40])
def test_order_hook_sees_the_final_order(n_objects: int) -> None:
    rng = np.random.default_rng(n_objects)
    pos = np.cumsum(rng.normal(0, 1.0, (500, 2)), axis=0)
    obj = np.sort(rng.integers(0, n_objects, 500))
    layout = ChunkLayout((2.0, 2.0), (1.0, 1.0), grid_for_bounds(pos.min(0), pos.max(0), (2, 2)))
    seen: list[tuple[IntArray, ...]] = []
    for parts in (
        GeometryParts(positions=pos, ordered=False),
        GeometryParts(positions=pos, vertex_object=obj, n_objects=n_objects, sequential=True),
    ):
        seen.clear()
        plan = plan_level(parts, layout, on_order=lambda *a: seen.append(a))
        assert len(seen) == 1
        got, chunks, offsets = seen[0]
        assert got is plan.order
        np.testing.assert_array_equal(chunks, plan.chunks)
        np.testing.assert_array_equal(offsets, plan.chunk_offsets)


@pytest.mark.parametrize("seed", range(4))
def test_links_split_block_by_block_equal_the_reference(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(plan_module, "_LINK_BLOCK", 3)  # many blocks, a partial last one
    rng = np.random.default_rng(seed)
    n = 200
    pos = np.cumsum(rng.normal(0, 1.5, (n, 3)), axis=0)
    obj = np.sort(rng.integers(0, 6, n))
    obj = np.unique(obj, return_inverse=True)[1].astype(np.int64)
    links = rng.integers(0, n, (301, 2 + seed % 2))
    layout = ChunkLayout((4.0,) * 3, (4.0,) * 3, grid_for_bounds(pos.min(0), pos.max(0), (4,) * 3))
    parts = GeometryParts(
        positions=pos, vertex_object=obj, n_objects=int(obj.max()) + 1, links=links
    )
    assert_same_plan(plan_level(parts, layout), reference_plan(parts, layout))


@pytest.mark.parametrize("block", [1, 3, 7])
def test_binned_fragments_filled_block_by_block_equal_the_reference(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Paths cut at bin changes: fragment tables are filled a few runs at a time."""
    monkeypatch.setattr(plan_module, "_FRAGMENT_BLOCK", block)
    rng = np.random.default_rng(block)
    n = 400
    pos = np.cumsum(rng.normal(0, 0.8, (n, 2)), axis=0)
    obj = np.sort(rng.integers(0, 9, n))
    obj = np.unique(obj, return_inverse=True)[1].astype(np.int32)
    layout = ChunkLayout((4.0, 4.0), (1.0, 2.0), grid_for_bounds(pos.min(0), pos.max(0), (4, 4)))
    parts = GeometryParts(
        positions=pos, vertex_object=obj, n_objects=int(obj.max()) + 1, sequential=True
    )
    plan = plan_level(parts, layout)
    assert len(plan.fragments) > 3 * block  # several blocks, the last fragment not sorted last
    assert_same_plan(plan, reference_plan(parts, layout))
    table = as_table(plan.fragments)
    for a in range(0, len(table), 7):  # any slice, as a writer's batches ask for them
        for b in (a, a + 1, a + 13, len(table) + 5):
            np.testing.assert_array_equal(plan.fragments[a:b], table[a:b])


@pytest.mark.parametrize("seed", [0, 2])
def test_edges_sort_without_a_packed_key(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Chunk, row and row indices too wide for one int64 key still sort edges in each chunk."""
    monkeypatch.setattr(plan_module, "_EDGE_KEY_BITS", 3)
    rng = np.random.default_rng(seed)
    n = 200
    pos = np.cumsum(rng.normal(0, 1.5, (n, 3)), axis=0)
    obj = np.unique(np.sort(rng.integers(0, 6, n)), return_inverse=True)[1].astype(np.int64)
    links = rng.integers(0, n, (301, 2))
    layout = ChunkLayout((4.0,) * 3, (4.0,) * 3, grid_for_bounds(pos.min(0), pos.max(0), (4,) * 3))
    parts = GeometryParts(
        positions=pos, vertex_object=obj, n_objects=int(obj.max()) + 1, links=links
    )
    assert_same_plan(plan_level(parts, layout), reference_plan(parts, layout))


@pytest.mark.parametrize("run_links", [1, 10**9])
@pytest.mark.parametrize("seed", range(3))
def test_link_spans_inside_runs_equal_the_reference(
    monkeypatch: pytest.MonkeyPatch, seed: int, run_links: int
) -> None:
    """Faces listed object by object, classified span by span with spans of 4 links.

    Objects spread over one or several chunks, so some spans lie inside one run (keyed by
    it) and the others are looked up: slice by slice (``run_links`` 1) or in one gather.
    """
    monkeypatch.setattr(plan_module, "_SPAN_RUN_LINKS", run_links)
    monkeypatch.setattr(plan_module, "_LINK_BLOCK", 5)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 40, 12)
    obj = np.repeat(np.arange(len(sizes)), sizes)
    centre = rng.uniform(0, 16, (len(sizes), 3))
    spread = np.where(np.arange(len(sizes)) % 3 == 0, 4.0, 0.3)[:, None]  # some cross chunks
    pos = centre[obj] + rng.normal(0, 1, (len(obj), 3)) * spread[obj]
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    faces = np.concatenate(
        [
            f + rng.integers(0, s, (int(rng.integers(1, 30)), 3))
            for f, s in zip(first, sizes, strict=True)
        ]
    ).astype(np.int64)
    layout = ChunkLayout((4.0,) * 3, (4.0,) * 3, grid_for_bounds(pos.min(0), pos.max(0), (4,) * 3))
    kw: dict[str, Any] = {"vertex_object": obj, "n_objects": len(sizes), "links": faces}
    spans = plan_module.LinkSpans.of(faces, 4)
    parts = GeometryParts(positions=pos, link_spans=spans, **kw)
    seen: list[Any] = []
    span_owners = plan_module._span_owners
    monkeypatch.setattr(
        plan_module, "_span_owners", lambda *a: seen.append(span_owners(*a)) or seen[-1]
    )
    got = plan_level(parts, layout)
    owner = seen[0][0]
    assert (owner >= 0).any()  # spans inside one run
    assert (owner < 0).any()  # and spans looked up
    assert_same_plan(got, reference_plan(parts, layout))
    plain = plan_level(GeometryParts(positions=pos, **kw), layout)  # no spans: looked up
    assert_same_plan(got, reference_plan(GeometryParts(positions=pos, **kw), layout))
    np.testing.assert_array_equal(got.links.local_rows, plain.links.local_rows)


def test_link_spans_of_other_links_are_ignored() -> None:
    """Spans describe one links array: beside another one (a replaced copy) they are unused."""
    rng = np.random.default_rng(5)
    pos = rng.uniform(0, 8, (60, 2))
    obj = np.zeros(60, dtype=np.int64)
    faces = rng.integers(0, 60, (40, 3))
    stale = plan_module.LinkSpans.of(np.zeros((40, 3), dtype=np.int64), 4)  # claims vertex 0
    layout = ChunkLayout((4.0, 4.0), (4.0, 4.0), grid_for_bounds(pos.min(0), pos.max(0), (4, 4)))
    parts = GeometryParts(
        positions=pos, vertex_object=obj, n_objects=1, links=faces, link_spans=stale
    )
    assert_same_plan(plan_level(parts, layout), reference_plan(parts, layout))
