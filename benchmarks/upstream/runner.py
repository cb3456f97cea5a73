#!/usr/bin/env python3
"""Benchmark the *upstream* PyPI ``zarr-vectors==0.2.0`` package on one task.

Run this file with the interpreter of the isolated venv created by
``benchmarks/upstream/setup_venv.sh`` (default ``/tmp/zv-upstream-venv``), never
with the project interpreter: it imports ``zarr_vectors`` and must get the
upstream package, not ours.  It depends on nothing but NumPy and upstream::

    /tmp/zv-upstream-venv/bin/python benchmarks/upstream/runner.py \
        TASK DATA.npz WORKDIR --repeat N

``TASK`` is one of ``points``, ``streamlines``, ``skeletons``, ``graph``, ``mesh``,
``pyramid``.
Stores are written below ``WORKDIR`` (re-created for each write repeat).
Exactly one JSON object is printed on stdout; everything else goes to stderr.

Paired timing (``skeletons`` and ``graph``): after a run with ``--keep``, ::

    /tmp/zv-upstream-venv/bin/python benchmarks/upstream/runner.py serve TASK WORKDIR

times one full ``read_graph`` of the kept store for each ``read`` line on stdin and answers
each with one JSON line ``{"read_s": seconds}``; it exits at end of input.  The caller
alternates these reads with its own, so both are timed under the same machine load.

Input ``.npz`` keys
-------------------
All tasks
    ``chunk_shape`` (3,) float64 -- spatial chunk edge lengths;
    ``bbox_min``, ``bbox_max`` (3,) float64 -- inclusive bbox query corners;
    optional ``bin_shape`` (3,) float64 -- sub-chunk bins (upstream ``bin_shape``);
    optional ``query_object`` () int64 -- object id for the single-object read
    (default: ``n_objects // 2``).
points
    ``positions`` (N, 3) float32, ``attr_a`` (N,) float32, ``attr_b`` (N,) float32.
streamlines
    ``positions`` (V, 3) float32 (all streamlines concatenated),
    ``offsets`` (n + 1,) int64 (streamline ``i`` = ``positions[offsets[i]:offsets[i+1]]``),
    ``attr`` (V,) float32 (one value per vertex).
skeletons
    ``positions`` (V, 3) float32, ``parents`` (V,) int64 (global index of the
    parent node, ``-1`` for roots), ``offsets`` (n + 1,) int64 (node range of
    each tree; the tree index is the object id).
graph
    ``positions`` (V, 3) float32, ``edges`` (E, 2) int64 (directed source, target).
mesh
    ``vertices`` (V, 3) float32, ``faces`` (F, 3) int64 (global vertex indices),
    ``vertex_offsets`` (n + 1,) int64, ``face_offsets`` (n + 1,) int64.
pyramid
    the ``points`` keys (``bin_shape`` required), optional ``pyramid_ratios`` (L,)
    float64 -- bin ratio of each coarse level relative to level 0 (default ``[2, 4]``).

Output JSON
-----------
``runner`` ("upstream"), ``library``, ``version``, ``task``, ``repeat``,
``n_vertices``, ``n_objects`` (int or null), ``n_chunks`` (int or null),
``write_s``, ``read_s``, ``bbox_read_s``, ``object_read_s`` (median seconds, or
null), ``size_bytes`` and ``file_count`` (recursive, of the written store),
``correct`` (all checks passed), ``note`` (short text), ``checks``
({name: bool}), ``unsupported`` ({timing field: reason} for every null
timing), ``extra`` ({name: number}, e.g. ``read_positions_only_s``,
``bbox_returned``, ``bbox_expected``; ``object_read_all_s`` / ``object_read_returned``: time
and size of a skeleton or mesh read by id that ignored ``object_ids`` and returned everything;
``write_cpu_s`` / ``read_cpu_s``: process CPU seconds per write / full read, for the
skeletons, graph and mesh tasks).

Upstream API used (zarr-vectors 0.2.0)
--------------------------------------
points
    ``zarr_vectors.types.points.write_points(path, positions, *, chunk_shape,
    bin_shape=None, vertex_attributes={name: (N,)})`` and
    ``read_points(path, *, bbox=None, attribute_names=None)`` -> dict
    ``positions``, ``vertex_attributes``.  Attributes are only returned when
    ``attribute_names`` is given (the docstring says "all" by default).
streamlines
    ``zarr_vectors.types.polylines.write_polylines(path, [arr (n_k, 3)], *,
    chunk_shape, vertex_attributes={name: [arr (n_k,)]})`` and
    ``read_polylines(path, *, object_ids=None, bbox=None)`` -> dict
    ``polylines`` (list of lists of segment arrays).  No attributes and no
    object ids are returned; this runner reassembles the attribute with the
    low-level ``core.arrays.read_chunk_attributes`` + object manifests.
skeletons / graph
    ``zarr_vectors.types.graphs.write_graph(path, positions, edges, *,
    chunk_shape, kind="skeleton" | "graph", object_ids=None)`` (skeleton edges
    are ``[child, parent]`` rows) and ``read_graph(path, *, object_ids=None,
    bbox=None)`` -> dict ``positions``, ``edges``.
mesh
    ``zarr_vectors.types.meshes.write_mesh(path, vertices, faces, *,
    chunk_shape, object_ids=None)`` and ``read_mesh(path, *, bbox=None,
    object_ids=None)`` -> dict ``vertices``, ``faces``.
pyramid
    ``write_points`` as above (level 0, timed as ``write_s``), then
    ``zarr_vectors.multiresolution.coarsen.build_pyramid(path, factors=[(r, 1.0), ...])``
    on each written store (``extra.build_s``).  Upstream's ``coarsen_factor`` multiplies the
    *root* bin shape (``target_bin = base_bin * coarsen_factor``), so ratios relative to
    level 0 map directly to coarsen factors; sparsity 1.0 keeps every object.  Default
    ``cross_level_storage="explicit"`` (what a caller gets); one extra write + build with
    ``cross_level_storage="none"`` is timed as ``extra.build_no_links_s``.  Level vertex
    counts come from the returned ``level_specs[i]["vertex_count"]`` and are checked
    against the number of occupied ``bin * ratio`` cells of the input.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt

T = TypeVar("T")
TASKS = ("points", "streamlines", "skeletons", "graph", "mesh", "pyramid")
EXPECTED_VERSION = "0.2.0"


# ---------------------------------------------------------------------------
# Report container and timing helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Opts:
    """Repeat counts: ``repeat`` for reads, ``write_repeat`` for writes."""

    repeat: int = 3
    write_repeat: int = 3


@dataclass
class Report:
    """Mutable accumulator for the JSON printed at the end of a run."""

    task: str
    repeat: int
    version: str = "unknown"
    n_vertices: int = 0
    n_objects: int | None = None
    n_chunks: int | None = None
    timings: dict[str, float | None] = field(
        default_factory=lambda: {
            "write_s": None,
            "read_s": None,
            "bbox_read_s": None,
            "object_read_s": None,
        }
    )
    size_bytes: int = 0
    file_count: int = 0
    checks: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unsupported: dict[str, str] = field(default_factory=dict)
    extra: dict[str, float] = field(default_factory=dict)

    def skip(self, timing: str, reason: str) -> None:
        """Mark ``timing`` as not measurable with ``reason``."""
        self.timings[timing] = None
        self.unsupported[timing] = reason

    def check(self, name: str, ok: bool, note: str | None = None) -> None:
        """Record a correctness check and, if it failed, an explanatory note."""
        self.checks[name] = bool(ok)
        if note and not ok:
            self.notes.append(f"{name}: {note}")

    def to_json(self) -> dict[str, object]:
        """Return the JSON-serialisable report."""
        for key, value in self.timings.items():
            if value is None and key not in self.unsupported:
                self.unsupported[key] = "not measured"
        return {
            "runner": "upstream",
            "library": "zarr-vectors",
            "version": self.version,
            "task": self.task,
            "repeat": self.repeat,
            "n_vertices": self.n_vertices,
            "n_objects": self.n_objects,
            "n_chunks": self.n_chunks,
            **self.timings,
            "size_bytes": self.size_bytes,
            "file_count": self.file_count,
            "correct": bool(self.checks) and all(self.checks.values()),
            "note": "; ".join(self.notes) if self.notes else "ok",
            "checks": self.checks,
            "unsupported": self.unsupported,
            "extra": self.extra,
        }


def time_median(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Run ``fn`` ``repeat`` times and return (median seconds, last result)."""
    times: list[float] = []
    result: T | None = None
    for _ in range(max(1, repeat)):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result  # type: ignore[return-value]


def time_writes(write: Callable[[], T], store: Path, repeat: int) -> tuple[float, T]:
    """Time ``write`` into a fresh ``store`` each repeat (deletion is not timed)."""
    times: list[float] = []
    result: T | None = None
    for _ in range(max(1, repeat)):
        if store.exists():
            shutil.rmtree(store)
        gc.collect()
        t0 = time.perf_counter()
        result = write()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result  # type: ignore[return-value]


def dir_stats(path: Path) -> tuple[int, int]:
    """Return (total bytes, number of files) below ``path``, recursively."""
    total = 0
    count = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
            count += 1
    return total, count


@contextlib.contextmanager
def cpu_time(report: Report, key: str, calls: int) -> Iterator[None]:
    """Record the process CPU seconds (all threads) per call of the block as ``extra[key]``.

    Wrap only the timing call (``time_writes`` / ``time_median``): the value includes their
    untimed ``gc.collect`` (and store removal between write repeats), so it is approximate.
    On a loaded machine it estimates what the wall time would be when idle.
    """
    c0 = time.process_time()
    try:
        yield
    finally:
        report.extra[key] = (time.process_time() - c0) / max(1, calls)


@contextlib.contextmanager
def guarded(report: Report, timing: str) -> Iterator[None]:
    """Turn an exception inside an operation into a null timing with a reason."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - upstream may raise anything
        traceback.print_exc(file=sys.stderr)
        report.skip(timing, f"upstream raised {type(exc).__name__}: {str(exc)[:200]}")
        report.check(timing.removesuffix("_s"), False, f"raised {type(exc).__name__}")


# ---------------------------------------------------------------------------
# Comparison helpers (vectorised)
# ---------------------------------------------------------------------------


def sorted_rows(mat: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """Return the rows of a 2-D array in lexicographic order."""
    mat = np.asarray(mat)
    if mat.ndim == 1:
        mat = mat[:, None]
    if mat.shape[0] == 0:
        return mat
    return mat[np.lexsort(mat.T[::-1])]


def same_rows(a: npt.NDArray[np.generic], b: npt.NDArray[np.generic]) -> bool:
    """Whether two 2-D arrays hold the same multiset of rows."""
    return a.shape == b.shape and bool(np.array_equal(sorted_rows(a), sorted_rows(b)))


def match_rows(
    reference: npt.NDArray[np.floating], found: npt.NDArray[np.floating]
) -> npt.NDArray[np.int64] | None:
    """Map each row of ``found`` to the index of the equal row in ``reference``.

    Assumes rows of ``reference`` are unique.  Returns ``None`` if the two do
    not hold the same multiset of rows.
    """
    if reference.shape != found.shape:
        return None
    if reference.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    order_ref = np.lexsort(reference.T[::-1])
    order_found = np.lexsort(found.T[::-1])
    if not np.array_equal(reference[order_ref], found[order_found]):
        return None
    mapping = np.empty(found.shape[0], dtype=np.int64)
    mapping[order_found] = order_ref
    return mapping


def pair_keys(edges: npt.NDArray[np.integer], n: int) -> npt.NDArray[np.int64]:
    """Encode directed integer pairs as sortable int64 keys."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return np.sort(e[:, 0] * np.int64(n) + e[:, 1])


def compare_edges(
    expected: npt.NDArray[np.integer], found: npt.NDArray[np.integer], n: int
) -> tuple[bool, int, int]:
    """Compare directed edge multisets; return (equal, n_missing, n_spurious)."""
    ke, kf = pair_keys(expected, n), pair_keys(found, n)
    equal = ke.shape == kf.shape and bool(np.array_equal(ke, kf))
    missing = int(np.setdiff1d(ke, kf).shape[0])
    spurious = int(np.setdiff1d(kf, ke).shape[0])
    return equal, missing, spurious


def canonical_faces(faces: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """Rotate each face so its smallest index comes first (keeps orientation)."""
    f = np.asarray(faces, dtype=np.int64)
    if f.shape[0] == 0:
        return f.reshape(0, 3)
    shift = np.argmin(f, axis=1)
    cols = (np.arange(f.shape[1])[None, :] + shift[:, None]) % f.shape[1]
    return sorted_rows(np.take_along_axis(f, cols, axis=1))


def in_bbox(pos: npt.NDArray[np.floating], lo: npt.NDArray, hi: npt.NDArray) -> npt.NDArray:
    """Boolean mask of rows inside the inclusive box ``[lo, hi]``."""
    return np.all((pos >= lo) & (pos <= hi), axis=1)


def induced_edges(
    edges: npt.NDArray[np.integer], mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """Edges whose endpoints both satisfy ``mask`` (in original indices)."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return e[mask[e[:, 0]] & mask[e[:, 1]]]


def map_through(
    mapping: npt.NDArray[np.int64], idx: npt.NDArray[np.integer]
) -> npt.NDArray[np.int64]:
    """Map output indices to input ids; out-of-range indices become -1."""
    idx = np.asarray(idx, dtype=np.int64)
    ok = (idx >= 0) & (idx < mapping.shape[0])
    return np.where(ok, mapping[np.clip(idx, 0, max(mapping.shape[0] - 1, 0))], -1)


# ---------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------


def _common(data: dict[str, np.ndarray]) -> tuple[tuple[float, ...], tuple[float, ...] | None]:
    chunk_shape = tuple(float(x) for x in data["chunk_shape"])
    bin_shape = tuple(float(x) for x in data["bin_shape"]) if "bin_shape" in data else None
    return chunk_shape, bin_shape


def run_points(data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts) -> Path:
    """Benchmark ``write_points`` / ``read_points``."""
    from zarr_vectors.types.points import read_points, write_points

    pos = data["positions"].astype(np.float32, copy=False)
    a = data["attr_a"].astype(np.float32, copy=False)
    b = data["attr_b"].astype(np.float32, copy=False)
    lo, hi = data["bbox_min"], data["bbox_max"]
    chunk_shape, bin_shape = _common(data)
    rep.n_vertices = int(pos.shape[0])
    store = work / "points.zv"
    names = ["attr_a", "attr_b"]

    with guarded(rep, "write_s"):
        t, summary = time_writes(
            lambda: write_points(
                str(store),
                pos,
                chunk_shape=chunk_shape,
                bin_shape=bin_shape,
                vertex_attributes={"attr_a": a, "attr_b": b},
            ),
            store,
            opts.write_repeat,
        )
        rep.timings["write_s"] = t
        rep.n_chunks = int(summary["chunk_count"])

    expected = np.column_stack([pos, a, b])
    with guarded(rep, "read_s"):
        t, res = time_median(lambda: read_points(str(store), attribute_names=names), opts.repeat)
        rep.timings["read_s"] = t
        va = res["vertex_attributes"]
        if "attr_a" in va and "attr_b" in va:
            got = np.column_stack([res["positions"], va["attr_a"], va["attr_b"]])
            rep.check("full_read", same_rows(expected, got), "rows differ from input")
        else:
            rep.check("full_read", False, "attributes missing from full read")
        t_pos, res_pos = time_median(lambda: read_points(str(store)), opts.repeat)
        rep.extra["read_positions_only_s"] = t_pos
        if not res_pos["vertex_attributes"]:
            rep.notes.append(
                "read_points() without attribute_names returns no attributes "
                "(docstring says all are read)"
            )
    with guarded(rep, "bbox_read_s"):
        bbox = (np.asarray(lo), np.asarray(hi))
        t, res = time_median(
            lambda: read_points(str(store), bbox=bbox, attribute_names=names), opts.repeat
        )
        rep.timings["bbox_read_s"] = t
        mask = in_bbox(pos, lo, hi)
        va = res["vertex_attributes"]
        n_ret = int(res["positions"].shape[0])
        rep.extra["bbox_returned"] = n_ret
        rep.extra["bbox_expected"] = int(mask.sum())
        if n_ret and ("attr_a" not in va or "attr_b" not in va):
            rep.check("bbox_read", False, "attributes missing from bbox result")
        else:
            got = (
                np.column_stack([res["positions"], va["attr_a"], va["attr_b"]])
                if n_ret
                else np.zeros((0, 5), np.float32)
            )
            rep.check(
                "bbox_read",
                same_rows(expected[mask], got),
                f"returned {n_ret} rows, expected {int(mask.sum())}",
            )
    rep.skip("object_read_s", "point cloud has no objects in this task")
    return store


def _manifest_attr_reader(store: Path, name: str) -> Callable[[list[int] | None], list[np.ndarray]]:
    """Build a reader reassembling a per-vertex polyline attribute per object.

    Upstream ``read_polylines`` never returns vertex attributes, so this uses
    the low-level upstream API (object manifests + ``read_chunk_attributes``).
    """
    from zarr_vectors.core.arrays import (
        read_all_object_manifests,
        read_chunk_attributes,
        read_object_manifest,
    )

    from zarr_vectors.core.store import get_resolution_level, open_store

    def read(object_ids: list[int] | None) -> list[np.ndarray]:
        level = get_resolution_level(open_store(str(store)), 0)
        if object_ids is None:
            manifests = read_all_object_manifests(level)
        else:
            manifests = [read_object_manifest(level, int(o)) for o in object_ids]
        cache: dict[tuple[int, ...], list[np.ndarray]] = {}
        out: list[np.ndarray] = []
        for manifest in manifests:
            parts = []
            for cc, vgi in manifest:
                if cc not in cache:
                    cache[cc] = read_chunk_attributes(level, name, cc, dtype=np.float32)
                parts.append(cache[cc][vgi])
            out.append(np.concatenate(parts) if parts else np.zeros(0, np.float32))
        return out

    return read


def run_streamlines(data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts) -> Path:
    """Benchmark ``write_polylines`` / ``read_polylines``."""
    from zarr_vectors.types.polylines import read_polylines, write_polylines

    pos = data["positions"].astype(np.float32, copy=False)
    offsets = data["offsets"].astype(np.int64, copy=False)
    attr = data["attr"].astype(np.float32, copy=False)
    lo, hi = data["bbox_min"], data["bbox_max"]
    chunk_shape, bin_shape = _common(data)
    n = int(offsets.shape[0] - 1)
    q = int(data["query_object"]) if "query_object" in data else n // 2
    rep.n_vertices, rep.n_objects = int(pos.shape[0]), n
    polys = np.split(pos, offsets[1:-1])
    attrs = np.split(attr, offsets[1:-1])
    store = work / "streamlines.zv"

    with guarded(rep, "write_s"):
        t, summary = time_writes(
            lambda: write_polylines(
                str(store),
                polys,
                chunk_shape=chunk_shape,
                bin_shape=bin_shape,
                vertex_attributes={"attr": attrs},
            ),
            store,
            opts.write_repeat,
        )
        rep.timings["write_s"] = t
        rep.n_chunks = int(summary["chunk_count"])
        rep.extra["cross_chunk_links"] = int(summary["cross_chunk_link_count"])

    read_attr = _manifest_attr_reader(store, "attr")

    def full() -> tuple[dict[str, object], list[np.ndarray]]:
        return read_polylines(str(store)), read_attr(None)

    with guarded(rep, "read_s"):
        t, (res, got_attr) = time_median(full, opts.repeat)
        rep.timings["read_s"] = t
        rep.extra["read_positions_only_s"] = time_median(
            lambda: read_polylines(str(store)), opts.repeat
        )[0]
        got = [np.concatenate(p) for p in res["polylines"]]  # type: ignore[attr-defined]
        lens = np.array([len(p) for p in got], dtype=np.int64)
        ok_pos = len(got) == n and bool(np.array_equal(lens, np.diff(offsets)))
        ok_pos = ok_pos and bool(np.array_equal(np.concatenate(got), pos))
        ok_attr = len(got_attr) == n and bool(np.array_equal(np.concatenate(got_attr), attr))
        rep.check("full_read_positions", ok_pos, "positions/order differ from input")
        rep.check("full_read_attr", ok_attr, "attribute differs from input")
        rep.notes.append(
            "read_polylines returns no vertex attributes (reassembled via low-level API)"
        )

    def one() -> tuple[dict[str, object], list[np.ndarray]]:
        return read_polylines(str(store), object_ids=[q]), read_attr([q])

    with guarded(rep, "object_read_s"):
        t, (res, got_attr) = time_median(one, opts.repeat)
        rep.timings["object_read_s"] = t
        s, e = int(offsets[q]), int(offsets[q + 1])
        polylines = res["polylines"]  # type: ignore[index]
        ok = len(polylines) == 1 and np.array_equal(np.concatenate(polylines[0]), pos[s:e])
        ok = ok and np.array_equal(got_attr[0], attr[s:e])
        rep.check("object_read", bool(ok), "single streamline differs from input")

    with guarded(rep, "bbox_read_s"):
        bbox = (np.asarray(lo), np.asarray(hi))
        t, res = time_median(lambda: read_polylines(str(store), bbox=bbox), opts.repeat)
        rep.timings["bbox_read_s"] = t
        hit = np.zeros(n, dtype=bool)
        vmask = in_bbox(pos, lo, hi)
        seg = np.repeat(np.arange(n), np.diff(offsets))
        hit[seg[vmask]] = True
        # Identify returned polylines by their first vertex (upstream returns no ids).
        first = {pos[offsets[i]].tobytes(): i for i in range(n)}
        polylines = res["polylines"]  # type: ignore[index]
        ids = np.array(
            [first.get(p[0][0].tobytes(), -1) for p in polylines if p and len(p[0])],
            dtype=np.int64,
        )
        returned = np.zeros(n, dtype=bool)
        returned[ids[ids >= 0]] = True
        rep.extra["bbox_returned"] = len(polylines)
        rep.extra["bbox_expected"] = int(hit.sum())
        rep.extra["bbox_missing"] = int((hit & ~returned).sum())
        rep.check(
            "bbox_read",
            bool(np.array_equal(hit, returned)) and len(polylines) == int(hit.sum()),
            f"returned {len(polylines)} streamlines, {int(hit.sum())} intersect the box "
            f"({int((hit & ~returned).sum())} missing); chunk-granular, no ids/attributes",
        )
    return store


def _graph_checks(
    rep: Report,
    prefix: str,
    pos: npt.NDArray[np.float32],
    edges: npt.NDArray[np.int64],
    node_ids: npt.NDArray[np.int64],
    res: dict[str, np.ndarray],
) -> None:
    """Compare a ``read_graph`` result with the expected node subset and edges."""
    ref = pos[node_ids]
    mapping = match_rows(ref, np.asarray(res["positions"], dtype=np.float32))
    ok_nodes = mapping is not None
    rep.check(
        f"{prefix}_nodes",
        ok_nodes,
        f"returned {len(res['positions'])} nodes, expected {len(node_ids)}",
    )
    if mapping is None:
        rep.check(f"{prefix}_edges", False, "not comparable (node mismatch)")
        return
    ids = node_ids[mapping]
    got = map_through(ids, res["edges"])
    equal, missing, spurious = compare_edges(edges, got, pos.shape[0])
    rep.extra[f"{prefix}_edges_missing"] = missing
    rep.extra[f"{prefix}_edges_spurious"] = spurious
    rep.check(
        f"{prefix}_edges",
        equal,
        f"{len(got)} edges vs {len(edges)} expected: {missing} missing, {spurious} spurious",
    )


def _run_graph_like(
    data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts, kind: str
) -> Path:
    """Shared body of the ``skeletons`` and ``graph`` tasks."""
    from zarr_vectors.types.graphs import read_graph, write_graph

    pos = data["positions"].astype(np.float32, copy=False)
    lo, hi = data["bbox_min"], data["bbox_max"]
    chunk_shape, bin_shape = _common(data)
    n_nodes = int(pos.shape[0])
    rep.n_vertices = n_nodes
    object_ids: npt.NDArray[np.int64] | None = None
    if kind == "skeleton":
        parents = data["parents"].astype(np.int64, copy=False)
        offsets = data["offsets"].astype(np.int64, copy=False)
        child = np.flatnonzero(parents >= 0)
        edges = np.stack([child, parents[child]], axis=1)  # upstream: [child, parent]
        n_obj = int(offsets.shape[0] - 1)
        object_ids = np.repeat(np.arange(n_obj, dtype=np.int64), np.diff(offsets))
        rep.n_objects = n_obj
    else:
        edges = data["edges"].astype(np.int64, copy=False)
        offsets = None
    store = work / f"{kind}.zv"

    with guarded(rep, "write_s"), cpu_time(rep, "write_cpu_s", opts.write_repeat):
        t, summary = time_writes(
            lambda: write_graph(
                str(store),
                pos,
                edges,
                chunk_shape=chunk_shape,
                bin_shape=bin_shape,
                kind=kind,
                object_ids=object_ids,
            ),
            store,
            opts.write_repeat,
        )
        rep.timings["write_s"] = t
        rep.n_chunks = int(summary["chunk_count"])
        rep.extra["cross_edges"] = int(summary["cross_edge_count"])

    with guarded(rep, "read_s"):
        with cpu_time(rep, "read_cpu_s", opts.repeat):
            t, res = time_median(lambda: read_graph(str(store)), opts.repeat)
        rep.timings["read_s"] = t
        _graph_checks(rep, "full_read", pos, edges, np.arange(n_nodes), res)

    with guarded(rep, "bbox_read_s"):
        bbox = (np.asarray(lo), np.asarray(hi))
        t, res = time_median(lambda: read_graph(str(store), bbox=bbox), opts.repeat)
        rep.timings["bbox_read_s"] = t
        mask = in_bbox(pos, lo, hi)
        rep.extra["bbox_returned"] = len(res["positions"])
        rep.extra["bbox_expected"] = int(mask.sum())
        _graph_checks(rep, "bbox_read", pos, induced_edges(edges, mask), np.flatnonzero(mask), res)

    if kind != "skeleton" or offsets is None:
        rep.skip("object_read_s", "graph task has a single object")
        return store
    q = int(data["query_object"]) if "query_object" in data else rep.n_objects // 2  # type: ignore[operator]
    with guarded(rep, "object_read_s"):
        t, res = time_median(lambda: read_graph(str(store), object_ids=[q]), opts.repeat)
        s, e = int(offsets[q]), int(offsets[q + 1])
        n_ret = len(res["positions"])
        if n_ret != e - s:
            rep.extra["object_read_all_s"] = t  # the call's time, though it returned everything
            rep.extra["object_read_returned"] = n_ret
            rep.skip(
                "object_read_s",
                f"read_graph(object_ids=[{q}]) ignores object_ids: returned {n_ret} nodes "
                f"for a {e - s}-node tree (call took {t:.3f} s)",
            )
            rep.check("object_read", False, "object_ids filter not applied")
        else:
            rep.timings["object_read_s"] = t
            sub = np.zeros(n_nodes, dtype=bool)
            sub[s:e] = True
            _graph_checks(rep, "object_read", pos, induced_edges(edges, sub), np.arange(s, e), res)
    return store


def run_skeletons(data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts) -> Path:
    """Benchmark ``write_graph(kind="skeleton")`` / ``read_graph``."""
    return _run_graph_like(data, work, rep, opts, "skeleton")


def run_graph(data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts) -> Path:
    """Benchmark ``write_graph(kind="graph")`` / ``read_graph``."""
    return _run_graph_like(data, work, rep, opts, "graph")


def _mesh_checks(
    rep: Report,
    prefix: str,
    verts: npt.NDArray[np.float32],
    faces: npt.NDArray[np.int64],
    vert_ids: npt.NDArray[np.int64],
    res: dict[str, np.ndarray],
) -> None:
    """Compare a ``read_mesh`` result with the expected vertex subset and faces."""
    mapping = match_rows(verts[vert_ids], np.asarray(res["vertices"], dtype=np.float32))
    rep.check(
        f"{prefix}_vertices",
        mapping is not None,
        f"returned {len(res['vertices'])} vertices, expected {len(vert_ids)}",
    )
    if mapping is None:
        rep.check(f"{prefix}_faces", False, "not comparable (vertex mismatch)")
        return
    got = map_through(vert_ids[mapping], res["faces"])
    ok = bool(np.array_equal(canonical_faces(got), canonical_faces(faces)))
    rep.check(f"{prefix}_faces", ok, f"{len(got)} faces vs {len(faces)} expected")


def run_mesh(data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts) -> Path:
    """Benchmark ``write_mesh`` / ``read_mesh``."""
    from zarr_vectors.types.meshes import read_mesh, write_mesh

    verts = data["vertices"].astype(np.float32, copy=False)
    faces = data["faces"].astype(np.int64, copy=False)
    voff = data["vertex_offsets"].astype(np.int64, copy=False)
    lo, hi = data["bbox_min"], data["bbox_max"]
    chunk_shape, bin_shape = _common(data)
    n_obj = int(voff.shape[0] - 1)
    rep.n_vertices, rep.n_objects = int(verts.shape[0]), n_obj
    object_ids = np.repeat(np.arange(n_obj, dtype=np.int64), np.diff(voff))
    store = work / "mesh.zv"

    with guarded(rep, "write_s"), cpu_time(rep, "write_cpu_s", opts.write_repeat):
        t, summary = time_writes(
            lambda: write_mesh(
                str(store),
                verts,
                faces,
                chunk_shape=chunk_shape,
                bin_shape=bin_shape,
                object_ids=object_ids,
            ),
            store,
            opts.write_repeat,
        )
        rep.timings["write_s"] = t
        rep.n_chunks = int(summary["chunk_count"])
        rep.extra["cross_faces"] = int(summary["cross_face_count"])

    with guarded(rep, "read_s"):
        with cpu_time(rep, "read_cpu_s", opts.repeat):
            t, res = time_median(lambda: read_mesh(str(store)), opts.repeat)
        rep.timings["read_s"] = t
        _mesh_checks(rep, "full_read", verts, faces, np.arange(len(verts)), res)

    with guarded(rep, "bbox_read_s"):
        bbox = (np.asarray(lo), np.asarray(hi))
        t, res = time_median(lambda: read_mesh(str(store), bbox=bbox), opts.repeat)
        rep.timings["bbox_read_s"] = t
        mask = in_bbox(verts, lo, hi)
        rep.extra["bbox_returned"] = len(res["vertices"])
        rep.extra["bbox_expected"] = int(mask.sum())
        fmask = mask[faces].all(axis=1)
        _mesh_checks(rep, "bbox_read", verts, faces[fmask], np.flatnonzero(mask), res)

    q = int(data["query_object"]) if "query_object" in data else n_obj // 2
    with guarded(rep, "object_read_s"):
        t, res = time_median(lambda: read_mesh(str(store), object_ids=[q]), opts.repeat)
        s, e = int(voff[q]), int(voff[q + 1])
        n_ret = len(res["vertices"])
        if n_ret != e - s:
            rep.extra["object_read_all_s"] = t  # the call's time, though it returned everything
            rep.extra["object_read_returned"] = n_ret
            rep.skip(
                "object_read_s",
                f"read_mesh(object_ids=[{q}]) ignores object_ids: returned {n_ret} vertices "
                f"for a {e - s}-vertex mesh (call took {t:.3f} s)",
            )
            rep.check("object_read", False, "object_ids filter not applied")
        else:
            rep.timings["object_read_s"] = t
            foff = data["face_offsets"].astype(np.int64, copy=False)
            sub_faces = faces[int(foff[q]) : int(foff[q + 1])]
            _mesh_checks(rep, "object_read", verts, sub_faces, np.arange(s, e), res)
    return store


def _occupied_cells(pos: npt.NDArray[np.floating], cell: npt.NDArray[np.float64]) -> int:
    """Number of distinct ``floor(pos / cell)`` cells."""
    idx = np.floor(np.asarray(pos, dtype=np.float64) / cell).astype(np.int64)
    return int(np.unique(idx, axis=0).shape[0]) if len(idx) else 0


def run_pyramid(data: dict[str, np.ndarray], work: Path, rep: Report, opts: Opts) -> Path:
    """Benchmark ``write_points`` (level 0) then ``build_pyramid`` on each written store."""
    from zarr_vectors.multiresolution.coarsen import build_pyramid

    from zarr_vectors.types.points import read_points, write_points

    pos = data["positions"].astype(np.float32, copy=False)
    attrs = {
        "attr_a": data["attr_a"].astype(np.float32, copy=False),
        "attr_b": data["attr_b"].astype(np.float32, copy=False),
    }
    chunk_shape, bin_shape = _common(data)
    if bin_shape is None:
        raise SystemExit("pyramid task needs bin_shape in the npz")
    ratios = [float(r) for r in data.get("pyramid_ratios", np.array([2.0, 4.0]))]
    factors = [(r, 1.0) for r in ratios]
    rep.n_vertices = int(pos.shape[0])
    rep.skip("bbox_read_s", "not measured for the pyramid task")
    rep.skip("object_read_s", "not measured for the pyramid task")

    def write(store: Path) -> dict[str, object]:
        if store.exists():
            shutil.rmtree(store)
        return write_points(
            str(store),
            pos,
            chunk_shape=chunk_shape,
            bin_shape=bin_shape,
            vertex_attributes=attrs,
        )

    w_times: list[float] = []
    b_times: list[float] = []
    store = work / "pyramid.zv"
    summary: dict[str, object] = {}
    with guarded(rep, "write_s"):
        for i in range(max(1, opts.write_repeat)):
            path = work / f"pyramid-{i}.zv"
            gc.collect()
            t0 = time.perf_counter()
            written = write(path)
            w_times.append(time.perf_counter() - t0)
            rep.n_chunks = int(written["chunk_count"])
            if i == 0:
                rep.size_bytes, rep.file_count = dir_stats(path)
                rep.extra["level0_bytes"] = rep.size_bytes
                rep.extra["level0_files"] = rep.file_count
            gc.collect()
            t0 = time.perf_counter()
            summary = build_pyramid(str(path), factors=factors)
            b_times.append(time.perf_counter() - t0)
            if store.exists():
                shutil.rmtree(store)
            path.rename(store)
        rep.timings["write_s"] = statistics.median(w_times)
        rep.extra["write_min_s"] = min(w_times)
        rep.extra["write_max_s"] = max(w_times)
        rep.extra["build_s"] = statistics.median(b_times)
        rep.extra["build_min_s"] = min(b_times)
        rep.extra["build_max_s"] = max(b_times)
        specs = summary.get("level_specs", [])
        assert isinstance(specs, list)
        base = np.asarray(bin_shape, dtype=np.float64)
        for lvl, (ratio, spec) in enumerate(zip(ratios, specs, strict=False), start=1):
            got = int(spec.get("vertex_count", -1))
            rep.extra[f"level{lvl}_vertices"] = got
            want = _occupied_cells(pos, base * ratio)
            rep.extra[f"level{lvl}_expected_vertices"] = want
            rep.check(f"level{lvl}_vertex_count", got == want, f"{got} != {want} cells")
        rep.check("levels_created", len(specs) == len(ratios), f"{len(specs)} levels")

    with guarded(rep, "read_s"):
        t, res = time_median(lambda: read_points(str(store)), opts.repeat)
        rep.timings["read_s"] = t
        rep.check("level0_read", res["positions"].shape == pos.shape, "level-0 size differs")
        for lvl in range(1, len(ratios) + 1):
            t, res = time_median(lambda lvl=lvl: read_points(str(store), level=lvl), opts.repeat)
            rep.extra[f"level{lvl}_read_s"] = t
            rep.extra[f"level{lvl}_read_vertices"] = int(res["positions"].shape[0])

    with guarded(rep, "build_no_links"):
        path = work / "pyramid-nolinks.zv"
        write(path)
        gc.collect()
        t0 = time.perf_counter()
        build_pyramid(str(path), factors=factors, cross_level_storage="none")
        rep.extra["build_no_links_s"] = time.perf_counter() - t0
        shutil.rmtree(path, ignore_errors=True)
    rep.timings.pop("build_no_links", None)
    rep.unsupported.pop("build_no_links", None)
    return store


RUNNERS: dict[str, Callable[[dict[str, np.ndarray], Path, Report, Opts], Path]] = {
    "points": run_points,
    "streamlines": run_streamlines,
    "skeletons": run_skeletons,
    "graph": run_graph,
    "mesh": run_mesh,
    "pyramid": run_pyramid,
}


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def task_dir(workdir: Path, task: str) -> Path:
    """Directory below ``workdir`` holding the stores of ``task`` (re-created by each run)."""
    return workdir / f"upstream-{task}"


SERVED = {"skeletons": "skeleton", "graph": "graph"}
"""Tasks :func:`serve` can time, with the store name (``<kind>.zv``) their run keeps."""


def serve(task: str, workdir: Path) -> int:
    """Answer each ``read`` line on stdin with the seconds of one full read of the kept store."""
    from zarr_vectors.types.graphs import read_graph

    store = task_dir(workdir, task) / f"{SERVED[task]}.zv"
    if not store.exists():
        print(f"no kept store {store}: run the task with --keep first", file=sys.stderr)
        return 2
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        for line in sys.stdin:
            if line.strip() != "read":
                print(f"unknown request {line.strip()!r} (expected 'read')", file=sys.stderr)
                return 2
            gc.collect()
            t0 = time.perf_counter()
            read_graph(str(store))
            seconds = time.perf_counter() - t0
            real_stdout.write(json.dumps({"read_s": seconds}) + "\n")
            real_stdout.flush()
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=TASKS)
    p.add_argument("data", type=Path, help="input .npz (keys: see module docstring)")
    p.add_argument("workdir", type=Path, help="scratch directory for the stores")
    p.add_argument("--repeat", type=int, default=3, help="timing repeats (median)")
    p.add_argument(
        "--write-repeat", type=int, default=None, help="write repeats (default: --repeat)"
    )
    p.add_argument("--keep", action="store_true", help="keep the written store")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run one task and print the JSON report on stdout (or ``serve TASK WORKDIR``)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        if len(argv) != 3 or argv[1] not in SERVED:
            print(f"usage: runner.py serve {{{','.join(SERVED)}}} WORKDIR", file=sys.stderr)
            return 2
        return serve(argv[1], Path(argv[2]))
    args = parse_args(argv)
    real_stdout = sys.stdout
    rep = Report(task=args.task, repeat=args.repeat)
    with contextlib.redirect_stdout(sys.stderr):
        import zarr_vectors

        rep.version = str(getattr(zarr_vectors, "__version__", "unknown"))
        if rep.version != EXPECTED_VERSION:
            rep.notes.append(f"expected upstream {EXPECTED_VERSION}, got {rep.version}")
        with np.load(args.data, allow_pickle=False) as npz:
            data = {k: npz[k] for k in npz.files}
        work = task_dir(args.workdir, args.task)
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        write_repeat = args.write_repeat if args.write_repeat is not None else args.repeat

        store = RUNNERS[args.task](data, work, rep, Opts(args.repeat, write_repeat))
        if store.exists():
            rep.size_bytes, rep.file_count = dir_stats(store)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    json.dump(rep.to_json(), real_stdout)
    real_stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
