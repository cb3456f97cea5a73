"""Skeleton and graph benchmark: ours vs SWC files (NumPy) and upstream zarr-vectors 0.2.0.

One process, two data sets:

* skeletons -- :func:`benchmarks.datasets.make_skeletons`: ``--n`` neuron-like trees of
  ``--nodes`` nodes each (default 1,000 x 1,000 = 1M nodes) with roots in ``[100, 900]^3``;
  written with ``zv.write_skeletons(store, positions, parents, offsets=...)`` so tree ``i`` is
  object ``i``;
* graph -- :func:`benchmarks.datasets.make_graph`: ``--graph-nodes`` nodes (default 1M) uniform
  in ``[0, 1000]^3``, ~3 edges per node along a Morton curve plus 1 % long-range edges (one
  connected component), written with ``zv.write_graph(..., directed=True)`` (the data set's
  edges are directed ``(source, target)``; ``--undirected`` stores them as ``[min, max]``).

Our stores are written once per chunk configuration (``--configs``).  Queries:

* skeletons: full read, and one skeleton by id -- ``--ids`` random ids (fixed seed), one call
  each, functional ``zv.read_skeletons(store, object_ids=[q])`` and open-Reader
  ``zv.open(store).read(object_ids=[q])``; for every id the chunk files the read opened are
  counted (untimed, by spying on our payload I/O) against the chunks the tree occupies;
* graph: full read and the central box :func:`~benchmarks.datasets.bbox_fraction`
  ``(pos, 0.01)`` (1 % of the volume), functional ``zv.read_graph`` and open Reader.

Peers:

* ``swc`` -- one SWC text file per skeleton (``n T x y z R P``, ``%.9g`` coordinates so float32
  round-trips), written with ``np.savetxt`` and read with ``np.loadtxt`` (navis is not
  installed); one skeleton by id = load its file.  Graphs have no SWC form.
* ``zv-upstream`` -- the ``skeletons`` and ``graph`` tasks of ``benchmarks/upstream/runner.py``
  on the same data and the first configuration's chunk shape.  Upstream's ``read_graph``
  returns spurious edges for skeletons and ignores ``object_ids`` (it returns every node); both
  are recorded as failed correctness flags, and the time of that everything-returning "by id"
  call is shown in its own row.  After its run upstream's store is kept and read again in
  ``--paired`` rounds alternating with our full reads (``runner.py serve``): the "full read
  ≥ 10×" targets judge the per-round speedups (see benchmarks/README.md, "Paired full
  reads").

Usage::

    python -m benchmarks.bench_skeletons --repeat 3 --upstream-repeat 1
    python -m benchmarks.bench_skeletons --n 20 --nodes 200 --graph-nodes 5000 --repeat 1 \\
        --no-upstream
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
from collections.abc import Callable, Collection, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import datasets as ds
from benchmarks.bench_points import parse_configs
from benchmarks.objects import (
    READ_CHUNK_ROWS,
    file_peer_extra,
    match_rows,
    object_chunk_stats,
    time_dir_writes,
)
from benchmarks.ours import (
    BBox,
    ZvConfig,
    _make_result,
    add_common_args,
    half_open_mask,
    keep_upstream,
    median_time,
    median_time_cpu,
    object_reads,
    paired_reads,
    prepare_workdir,
    run_upstream_task,
    sample_ids,
    store_stem,
    time_each,
    write_stores,
    zv_version,
)
from benchmarks.peers import BenchResult, UpstreamReads, disk_usage
from benchmarks.report import (
    Op,
    Target,
    checks_table,
    chunk_table,
    closing_sections,
    config_sections,
    cpu_ratio,
    fmt_seconds,
    save_run,
    sizes_table,
)

Arr = npt.NDArray[Any]

PAIRED_OPS = (
    Op("full read (functional), alternating with upstream: median", "extra:paired_read_s", None),
    Op("upstream's full read in the same rounds: median", "extra:paired_upstream_read_s", None),
)
SKELETON_OPS = (
    Op("write", "write_s", "write_s"),
    Op("full read (functional)", "read_s", "read_s"),
    Op("full read (open Reader)", "extra:read_open_s", "read_s"),
    *PAIRED_OPS,
    Op("bbox central 1 %: nodes in the box (functional read_graph)", "bbox_read_s", "bbox_read_s"),
    Op("bbox central 1 %: whole trees touching it (read_skeletons)", "extra:bbox_whole_s", None),
    Op("one skeleton by id (functional, median)", "object_read_s", "object_read_s"),
    Op("one skeleton by id (open Reader, median)", "extra:object_open_s", "object_read_s"),
    Op("one skeleton by id (open Reader, p90)", "extra:object_open_p90_s", "object_read_s"),
    Op(
        "one skeleton by id vs upstream's by-id call (returns all nodes)",
        "extra:object_open_s",
        "extra:object_read_all_s",
    ),
    Op("write — process CPU", "extra:write_cpu_s", "extra:write_cpu_s"),
    Op("full read functional — process CPU", "extra:read_cpu_s", "extra:read_cpu_s"),
    Op("one skeleton functional — CPU median", "extra:object_func_cpu_s", None),
    Op("one skeleton open Reader — CPU median", "extra:object_open_cpu_s", None),
)
GRAPH_OPS = (
    Op("write", "write_s", "write_s"),
    Op("full read (functional)", "read_s", "read_s"),
    Op("full read (open Reader)", "extra:read_open_s", "read_s"),
    *PAIRED_OPS,
    Op("bbox central 1 % (functional)", "bbox_read_s", "bbox_read_s"),
    Op("bbox central 1 % (open Reader)", "extra:bbox_central_open_s", "bbox_read_s"),
    Op("write — process CPU", "extra:write_cpu_s", "extra:write_cpu_s"),
    Op("full read functional — process CPU", "extra:read_cpu_s", "extra:read_cpu_s"),
    Op("bbox central functional — CPU median", "extra:bbox_func_cpu_s", None),
)
CHUNK_ROWS = (
    ("object_chunks_occupied_mean", "chunks a skeleton occupies (mean)"),
    *READ_CHUNK_ROWS,
    ("object_reads_only_own_chunks", "ids whose read stayed in their own chunks (fraction)"),
)
OBJECT_TARGET_S = 0.005
FULL_READ_SPEEDUP = 10.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p, n=1000, repeat=3, upstream_repeat=1)
    p.add_argument("--nodes", type=int, default=1000, help="nodes per skeleton (%(default)s)")
    p.add_argument(
        "--graph-nodes",
        type=int,
        default=1_000_000,
        help="graph nodes (default %(default)s; 0 skips the graph)",
    )
    p.add_argument(
        "--configs",
        default="250,250:zstd,250:none",
        help="chunk/bin[:compressor] list (default %(default)s)",
    )
    p.add_argument("--ids", type=int, default=50, help="random ids for one-skeleton reads")
    p.add_argument("--undirected", action="store_true", help="store the graph undirected")
    p.add_argument("--no-swc", action="store_true", help="skip the SWC peer")
    p.add_argument(
        "--paired",
        type=int,
        default=9,
        metavar="ROUNDS",
        help="rounds of full reads alternating ours and upstream's (default %(default)s; 0: none)",
    )
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------
# Checks (outside the timed regions)
# ---------------------------------------------------------------------------


def _local_parents(parents: Arr, start: int) -> Arr:
    return np.where(parents >= 0, parents - start, -1)


def check_skeletons(data: ds.SkeletonsData, res: Any, ids: npt.NDArray[np.int64]) -> bool:
    """Whether ``res`` (a ``Skeletons``) holds exactly trees ``ids``, in order, nodes exact."""
    if not np.array_equal(np.asarray(res.object_ids), ids):
        return False
    counts = np.diff(data.offsets)[ids]
    if not np.array_equal(res.offsets, np.concatenate([[0], np.cumsum(counts)])):
        return False
    for k, q in enumerate(ids.tolist()):
        s, e = int(data.offsets[q]), int(data.offsets[q + 1])
        a, b = int(res.offsets[k]), int(res.offsets[k + 1])
        if not (
            np.array_equal(res.positions[a:b], data.positions[s:e])
            and np.array_equal(
                _local_parents(res.parents[a:b], a), _local_parents(data.parents[s:e], s)
            )
        ):
            return False
    return True


def check_full_skeletons(data: ds.SkeletonsData, res: Any) -> bool:
    """Whole-forest check, vectorised (the per-tree loop of :func:`check_skeletons` is slow)."""
    return bool(
        np.array_equal(np.asarray(res.object_ids), np.arange(data.n_objects))
        and np.array_equal(res.offsets, data.offsets)
        and np.array_equal(res.positions, data.positions)
        and np.array_equal(res.parents, data.parents)
    )


def _edge_set(edges: Arr, n: int, directed: bool) -> npt.NDArray[np.int64]:
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if not directed:
        e = np.sort(e, axis=1)
    return np.sort(e[:, 0] * np.int64(n) + e[:, 1])


def check_graph(
    pos: Arr, edges: Arr, mask: npt.NDArray[np.bool_], res: Any, directed: bool
) -> tuple[bool, bool]:
    """(vertices ok, edges ok) of a ``Graph`` result against the vertex subset ``mask``."""
    keep = np.flatnonzero(mask)
    mapping = match_rows(pos[keep], np.asarray(res.positions))
    if mapping is None:
        return False, False
    got = keep[mapping][np.asarray(res.edges, dtype=np.int64)].reshape(-1, 2)
    exp = edges[mask[edges[:, 0]] & mask[edges[:, 1]]]
    n = pos.shape[0]
    return True, bool(np.array_equal(_edge_set(got, n, directed), _edge_set(exp, n, directed)))


# ---------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------


def bench_zv_skeletons(
    data: ds.SkeletonsData,
    workdir: Path,
    config: ZvConfig,
    ids: npt.NDArray[np.int64],
    box: BBox,
    repeat: int,
    keep_all: bool = False,
) -> tuple[BenchResult, Path]:
    """``write_skeletons`` / ``read_skeletons`` / ``zv.open(...).read`` on one configuration.

    The box read (``bbox_read_s``) is upstream's: the nodes in ``box`` and the edges among
    them (``read_graph(store, bbox=box)``); ``extra["bbox_whole_s"]`` times
    ``read_skeletons(store, bbox=box)``, every tree with a node in the box, whole.
    Returns the result and the store read.
    """
    import zarr_vectors as zv

    stem = store_stem(config, "skel-")

    def write(path: Path) -> Any:
        return zv.write_skeletons(
            str(path),
            data.positions,
            data.parents,
            offsets=data.offsets,
            chunk_shape=config.chunk_shape,
            bin_shape=config.bin_shape,
            compressor=config.compressor,
        )

    path, summary, timings, extra = write_stores(write, workdir, stem, repeat, keep_all)
    store = str(path)

    timings["read_s"], extra["read_cpu_s"], full = median_time_cpu(
        lambda: zv.read_skeletons(store), repeat
    )
    checks = {"full_read": check_full_skeletons(data, full)}
    del full
    reader = zv.open(store)
    extra["read_open_s"], full = median_time(lambda: reader.read(), repeat)
    checks["full_read_open"] = check_full_skeletons(data, full)
    del full

    reads = {
        "open": lambda q: reader.read(object_ids=[q]),
        "func": lambda q: zv.read_skeletons(store, object_ids=[q]),
    }
    timings["object_read_s"], obj_checks, obj_extra = object_reads(
        ids, reads["func"], reads["open"], lambda res, want: check_skeletons(data, res, want)
    )
    checks.update(obj_checks)
    extra.update(obj_extra)
    n_box_rep = max(repeat, 5)
    timings["bbox_read_s"], extra["bbox_func_cpu_s"], res = median_time_cpu(
        lambda: zv.read_graph(store, bbox=box), n_box_rep
    )
    mask = half_open_mask(data.positions, box)
    child = np.flatnonzero(data.parents >= 0)
    links = np.stack([child, data.parents[child]], axis=1)
    v_ok, e_ok = check_graph(data.positions, links, mask, res, True)
    checks["bbox_nodes"], checks["bbox_edges"] = v_ok, e_ok
    extra["bbox_nodes"] = float(mask.sum())
    extra["bbox_whole_s"], whole = median_time(
        lambda: zv.read_skeletons(store, bbox=box), n_box_rep
    )
    owner = np.repeat(np.arange(data.n_objects), np.diff(data.offsets))
    touched = np.unique(owner[mask])
    checks["bbox_whole"] = check_skeletons(data, whole, touched)
    extra["bbox_whole_nodes"] = float(len(whole.positions))
    chunk_keys = [key for key, _label in CHUNK_ROWS]
    extra.update(
        object_chunk_stats(
            store, data.positions, data.offsets, ids, config.chunk_shape, reads, chunk_keys
        )
    )
    reader.close()
    result = _make_result(
        fmt=config.label,
        task="skeletons",
        n_vertices=data.n_vertices,
        n_objects=data.n_objects,
        timings=timings,
        path=path,
        checks=checks,
        extra=extra,
        n_chunks=int(summary.chunk_count),
    )
    return result, path


def bench_zv_graph(
    data: ds.GraphData,
    workdir: Path,
    config: ZvConfig,
    box: BBox,
    repeat: int,
    directed: bool,
    keep_all: bool = False,
) -> tuple[BenchResult, Path]:
    """``write_graph`` / ``read_graph`` / ``zv.open(...).read`` on one configuration.

    Returns the result and the store read.
    """
    import zarr_vectors as zv

    stem = store_stem(config, "graph-")
    pos, edges = data.positions, data.edges

    def write(path: Path) -> Any:
        return zv.write_graph(
            str(path),
            pos,
            edges,
            directed=directed,
            chunk_shape=config.chunk_shape,
            bin_shape=config.bin_shape,
            compressor=config.compressor,
        )

    path, summary, timings, extra = write_stores(write, workdir, stem, repeat, keep_all)
    store = str(path)
    everything = np.ones(len(pos), dtype=bool)

    timings["read_s"], extra["read_cpu_s"], full = median_time_cpu(
        lambda: zv.read_graph(store), repeat
    )
    v_ok, e_ok = check_graph(pos, edges, everything, full, directed)
    checks = {"full_read_vertices": v_ok, "full_read_edges": e_ok}
    extra["full_read_input_order"] = float(np.array_equal(full.positions, pos))
    del full
    reader = zv.open(store)
    extra["read_open_s"], full = median_time(lambda: reader.read(), repeat)
    v_ok, e_ok = check_graph(pos, edges, everything, full, directed)
    checks["full_read_open"] = v_ok and e_ok
    del full

    n_box_rep = max(repeat, 5)
    timings["bbox_read_s"], extra["bbox_func_cpu_s"], res = median_time_cpu(
        lambda: zv.read_graph(store, bbox=box), n_box_rep
    )
    mask = half_open_mask(pos, box)
    v_ok, e_ok = check_graph(pos, edges, mask, res, directed)
    checks["bbox_vertices"], checks["bbox_edges"] = v_ok, e_ok
    extra["bbox_vertices"] = float(mask.sum())
    extra["bbox_edges"] = float(len(res.edges))
    reader.read(bbox=box)  # warm
    extra["bbox_central_open_s"], res = median_time(lambda: reader.read(bbox=box), n_box_rep)
    v_ok, e_ok = check_graph(pos, edges, mask, res, directed)
    checks["bbox_open"] = v_ok and e_ok
    reader.close()
    result = _make_result(
        fmt=config.label,
        task="graph",
        n_vertices=data.n_vertices,
        n_objects=1,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        extra=extra,
        n_chunks=int(summary.chunk_count),
        remarks=["directed" if directed else "undirected"],
        unsupported={"object_read_s": "the graph is one connected component (one object)"},
    )
    return result, path


# ---------------------------------------------------------------------------
# SWC peer (one text file per skeleton)
# ---------------------------------------------------------------------------

SWC_FMT = ["%d", "%d", "%.9g", "%.9g", "%.9g", "%g", "%d"]


def _swc_name(i: int) -> str:
    return f"{i:07d}.swc"


def write_swc_dir(path: Path, data: ds.SkeletonsData) -> None:
    """One SWC file per tree: ``n T x y z R P`` with 1-based sample ids, parent -1 for roots."""
    path.mkdir(parents=True)
    for i in range(data.n_objects):
        s, e = int(data.offsets[i]), int(data.offsets[i + 1])
        n = e - s
        par = data.parents[s:e]
        rows = np.empty((n, 7), dtype=np.float64)
        rows[:, 0] = np.arange(1, n + 1)
        rows[:, 1] = 0
        rows[:, 2:5] = data.positions[s:e]
        rows[:, 5] = 1.0
        rows[:, 6] = np.where(par >= 0, par - s + 1, -1)
        np.savetxt(path / _swc_name(i), rows, fmt=SWC_FMT, header="synthetic skeleton")


def read_swc_file(path: Path) -> tuple[Arr, Arr]:
    """Positions (float32) and local parent indices (-1 roots) of one SWC file."""
    rows = np.loadtxt(path, ndmin=2)
    sample = rows[:, 0].astype(np.int64)
    parent = rows[:, 6].astype(np.int64)
    order = np.argsort(sample, kind="stable")  # sample ids need not be 1..n
    where = order[np.clip(np.searchsorted(sample, parent, sorter=order), 0, len(order) - 1)]
    parents = np.where(parent >= 0, where, -1)
    return rows[:, 2:5].astype(np.float32), parents


def read_swc_dir(path: Path, n: int) -> tuple[Arr, Arr, Arr]:
    """Every file (in id order) concatenated: positions, global parents, offsets."""
    pos_parts: list[Arr] = []
    par_parts: list[Arr] = []
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        p, par = read_swc_file(path / _swc_name(i))
        par_parts.append(np.where(par >= 0, par + offsets[i], -1))
        pos_parts.append(p)
        offsets[i + 1] = offsets[i] + len(p)
    return np.concatenate(pos_parts), np.concatenate(par_parts), offsets


def bench_swc_skeletons(
    data: ds.SkeletonsData, workdir: Path, ids: npt.NDArray[np.int64], repeat: int
) -> BenchResult:
    """SWC directory peer: write all, read all, read one file per queried id."""
    path = workdir / "skeletons-swc"
    n = data.n_objects
    write_s, write_cpu = time_dir_writes(lambda: write_swc_dir(path, data), path, repeat)
    timings: dict[str, float | None] = {"write_s": write_s}
    timings["read_s"], read_cpu, (pos, par, off) = median_time_cpu(
        lambda: read_swc_dir(path, n), repeat
    )
    checks = {
        "full_read": bool(
            np.array_equal(pos, data.positions)
            and np.array_equal(par, data.parents)
            and np.array_equal(off, data.offsets)
        )
    }
    o_times, o_res = time_each([lambda q=q: read_swc_file(path / _swc_name(int(q))) for q in ids])
    ok = True
    for q, (p, lp) in zip(ids.tolist(), o_res, strict=True):
        s, e = int(data.offsets[q]), int(data.offsets[q + 1])
        ok = ok and np.array_equal(p, data.positions[s:e])
        ok = ok and np.array_equal(lp, _local_parents(data.parents[s:e], s))
    checks["object_read"] = bool(ok)
    timings["object_read_s"] = statistics.median(o_times)
    size, count = disk_usage(path)
    return BenchResult(
        library="numpy",
        version=np.__version__,
        fmt="swc (file per skeleton)",
        task="skeletons",
        n_vertices=data.n_vertices,
        n_objects=n,
        write_s=timings["write_s"],
        read_s=timings["read_s"],
        bbox_read_s=None,
        object_read_s=timings["object_read_s"],
        size_bytes=size,
        file_count=count,
        correct=all(checks.values()),
        note="text, %.9g coordinates (float32 exact); np.savetxt / np.loadtxt",
        unsupported=(("bbox_read_s", "SWC has no spatial index"),),
        checks=tuple(checks.items()),
        extra=file_peer_extra(o_times, write_cpu, read_cpu),
    )


# ---------------------------------------------------------------------------
# Upstream, targets, rendering
# ---------------------------------------------------------------------------


def pair_with_upstream(
    ours: Sequence[tuple[BenchResult, Path]],
    task: str,
    work: Path,
    args: argparse.Namespace,
    read: Callable[[str], object],
) -> list[BenchResult]:
    """Our results with ``paired_*`` extras: full reads alternating with upstream's.

    Upstream's kept store (``run_upstream_task(..., keep=True)``) is read in its venv
    between our reads of each configuration's store, then deleted unless ``--keep``.
    """
    out: list[BenchResult] = []
    try:
        with UpstreamReads(task, work) as theirs:
            for result, path in ours:
                paired = paired_reads(partial(read, str(path)), theirs.read, args.paired)
                extra = result.extra + tuple(paired.extra().items())
                out.append(dataclasses.replace(result, extra=extra))
    finally:
        if not args.keep:
            # runner.py's task_dir (that file runs in the upstream venv, not imported here)
            shutil.rmtree(work / f"upstream-{task}", ignore_errors=True)
    return out


def evaluate(
    results: Sequence[BenchResult], compared: Collection[str] | None = None
) -> list[Target]:
    """The issue's skeleton/graph targets, per configuration.

    ``compared``: the configurations (``fmt``) stored with the chunk and bin shape of
    upstream's run, the only ones whose full read is held against upstream's (default: all).
    """
    targets: list[Target] = []
    for task in ("skeletons", "graph"):
        up = next((r for r in results if r.task == task and r.fmt == "zv-upstream"), None)
        for r in (r for r in results if r.task == task and r.fmt.startswith("zv ")):
            like = compared is None or r.fmt in compared
            if up is not None and up.read_s and r.read_s and like:
                targets.append(_full_read_target(task, r, up, r.read_s, up.read_s))
            if task != "skeletons":
                continue
            for label, key in (("open Reader", "object_open_s"), ("functional", "object_func_s")):
                t = r.get_extra(key)
                if t is None:
                    continue
                targets.append(
                    Target(
                        f"one skeleton by id < 5 ms median, {label} [{r.fmt}]",
                        t < OBJECT_TARGET_S,
                        f"median {fmt_seconds(t)} over {r.get_extra('n_object_queries'):.0f} ids "
                        f"(p90 {fmt_seconds(r.get_extra(key.replace('_s', '_p90_s')))}, CPU "
                        f"{fmt_seconds(r.get_extra(key.replace('_s', '_cpu_s')))})",
                    )
                )
    return targets


def _full_read_target(
    task: str, r: BenchResult, up: BenchResult, mine: float, theirs: float
) -> Target:
    """Full read ≥ 10× upstream (``mine``, ``theirs``: median seconds of ``r`` and ``up``).

    Judged on the paired rounds when measured, else on the medians.
    The medians of the two are taken minutes apart (ours, then upstream's run), each in
    whatever load the shared machine had then; the paired rounds time the two side by side.
    """
    speed = theirs / mine
    separate = (
        f"{fmt_seconds(mine)} vs upstream {fmt_seconds(theirs)} = {speed:.1f}× faster; "
        f"process CPU {cpu_ratio(r, up, 'read_cpu_s')}; open Reader "
        f"{fmt_seconds(r.get_extra('read_open_s'))}"
    )
    name = f"{task} full read ≥ 10× faster than upstream [{r.fmt}]"
    paired = r.get_extra("paired_speedup")
    if paired is None:
        return Target(name, speed >= FULL_READ_SPEEDUP, separate)
    detail = (
        f"{r.get_extra('paired_rounds'):.0f} alternating rounds: ours "
        f"{fmt_seconds(r.get_extra('paired_read_s'))} vs upstream "
        f"{fmt_seconds(r.get_extra('paired_upstream_read_s'))} (medians), speedup per round "
        f"median {paired:.1f}× (min {r.get_extra('paired_speedup_min'):.1f}×, max "
        f"{r.get_extra('paired_speedup_max'):.1f}×); separate runs: {separate}"
    )
    return Target(name, paired >= FULL_READ_SPEEDUP, detail)


def render(results: Sequence[BenchResult], targets: Sequence[Target], notes: Sequence[str]) -> str:
    """Markdown: per task, one timing table per configuration, sizes, correctness; targets."""
    parts: list[str] = []
    for task, ops in (("skeletons", SKELETON_OPS), ("graph", GRAPH_OPS)):
        mine = [r for r in results if r.task == task and r.fmt.startswith("zv ")]
        others = [r for r in results if r.task == task and not r.fmt.startswith("zv ")]
        if not mine:
            continue
        parts.append(f"# {task}: {mine[0].n_vertices:,} nodes")
        parts += config_sections(mine, others, ops, prefix=f"{task} ")
        if task == "skeletons":
            chunks = chunk_table(mine, CHUNK_ROWS, "one-skeleton reads")
            parts += ["## skeletons: chunks read by one-skeleton reads", chunks]
        parts += [f"## {task}: store sizes", sizes_table([*mine, *others], reference=mine[0])]
        parts += [f"## {task}: correctness", checks_table([*mine, *others])]
    parts += closing_sections(targets, notes)
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print markdown, optionally write JSON."""
    args = parse_args(argv)
    work = prepare_workdir(args, "skeletons")
    configs = parse_configs(args.configs)
    rng = np.random.default_rng(args.seed + 1)
    skel = ds.make_skeletons(args.n, args.nodes, seed=args.seed)
    ids = sample_ids(rng, skel.n_objects, args.ids)
    graph = ds.make_graph(args.graph_nodes, seed=args.seed) if args.graph_nodes > 0 else None
    box = ds.bbox_fraction(graph.positions, 0.01) if graph is not None else None
    directed = not args.undirected
    about_graph = (
        "no graph"
        if graph is None
        else f"graph {graph.n_vertices:,} nodes, {len(graph.edges):,} edges"
    )
    print(
        f"# skeletons: {skel.n_objects:,} trees, {skel.n_vertices:,} nodes; {about_graph}; "
        f"repeat {args.repeat}, zarr-vectors {zv_version()}, workdir {work}",
        flush=True,
    )

    import zarr_vectors as zv

    sk_box = ds.bbox_fraction(skel.positions, 0.01)
    trees = [
        bench_zv_skeletons(skel, work, cfg, ids, sk_box, args.repeat, args.keep) for cfg in configs
    ]
    results = [r for r, _ in trees]
    notes: list[str] = []
    if not args.no_swc:
        results.append(bench_swc_skeletons(skel, work, ids, args.repeat))
    up_repeat = args.upstream_repeat or args.repeat
    if args.upstream:
        up = run_upstream_task(
            skel,
            work,
            configs[0],
            sk_box,
            up_repeat,
            query_object=int(ids[len(ids) // 2]),
            write_repeat=1,
            skipped="upstream skeletons skipped",
            keep=args.paired > 0,
        )
        if not isinstance(up, str) and args.paired > 0:
            results[: len(trees)] = pair_with_upstream(
                trees, "skeletons", work, args, zv.read_skeletons
            )
        keep_upstream(up, results, notes)
    if graph is not None and box is not None:
        graphs = [
            bench_zv_graph(graph, work, cfg, box, args.repeat, directed, args.keep)
            for cfg in configs
        ]
        graph_results = [r for r, _ in graphs]
        if args.upstream:
            up = run_upstream_task(
                graph,
                work,
                configs[0],
                box,
                up_repeat,
                write_repeat=1,
                skipped="upstream graph skipped",
                keep=args.paired > 0,
            )
            if not isinstance(up, str) and args.paired > 0:
                graph_results = pair_with_upstream(graphs, "graph", work, args, zv.read_graph)
            keep_upstream(up, graph_results, notes)
        results.extend(graph_results)

    same = [c for c in configs if (c.chunk, c.bin) == (configs[0].chunk, configs[0].bin)]
    others = [c.label for c in configs if c not in same]
    if args.upstream and others:
        notes.append(
            f"upstream ran with the chunk shape of {configs[0].label}; the full reads of "
            f"{', '.join(others)} are timed but not held against it"
        )
    targets = evaluate(results, {c.label for c in same})
    print(render(results, targets, notes))
    save_run(
        args,
        script="bench_skeletons",
        work=work,
        results=results,
        targets=targets,
        extra={
            "notes": notes,
            "graph_box": None if box is None else [box[0].tolist(), box[1].tolist()],
            "query_ids": ids.tolist(),
        },
    )
    ours = [r for r in results if r.fmt.startswith("zv ")]
    return 0 if all(r.correct for r in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
