"""Pyramid benchmark: cost of ``zv.build_pyramid`` (two coarser levels) vs the level-0 write.

One process, one data set (:func:`benchmarks.datasets.make_points`, ``--n`` points, default
10M, two float32 attributes).  For each chunk configuration (``--configs``, default chunk 200
with bin 50 and chunk 100 with bin 25: ``bin x 2`` and ``bin x 4`` must divide the chunk) the
level-0 store is written ``--repeat`` times into fresh directories, and
``build_pyramid(store, [(2,2,2), (4,4,4)])`` is timed on each of those stores.  The target is
``median(build) <= 2 x median(write)``.

Correctness: each coarse level must hold exactly one metavertex per occupied cell of its bin
grid (``floor(p / (bin x ratio))``), at the mean position and mean ``attr_a`` of the level-0
points in that cell (metavertices are weighted by their level-0 vertex counts); a box read at
level 2 is compared with the same computation.  No peer format builds a point
pyramid.  With ``--upstream`` (default when the venv exists) upstream 0.2.0 runs the
``pyramid`` task of ``benchmarks/upstream/runner.py`` on the same points and the first
configuration (its ``build_pyramid(factors=[(2, 1), (4, 1)])``: coarsen factors multiply the
level-0 bin, like our ratios), and a same-run comparison row is printed.

Usage::

    python -m benchmarks.bench_pyramid                 # 10M points, repeat 3
    python -m benchmarks.bench_pyramid --n 20000 --repeat 1 --json out.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import datasets as ds
from benchmarks.bench_points import parse_configs
from benchmarks.ours import (
    ZvConfig,
    add_common_args,
    half_open_mask,
    keep_upstream,
    median_time,
    prepare_workdir,
    remove_quietly,
    run_upstream_task,
    time_each,
    time_writes,
    zv_version,
)
from benchmarks.peers import BenchResult, disk_usage
from benchmarks.report import Target, checks_table, closing_sections, fmt_seconds, save_run

RATIOS = ((2, 2, 2), (4, 4, 4))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p, n=10_000_000, repeat=3)
    p.add_argument("--configs", default="200/50,100/25", help="chunk/bin list (%(default)s)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def _cell_means(
    pos: npt.NDArray[np.floating], attr: npt.NDArray[np.floating], cell: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Mean position and mean ``attr`` of every occupied ``cell``-sized cell."""
    idx = np.floor(np.asarray(pos, dtype=np.float64) / cell).astype(np.int64)
    if len(idx) == 0:
        return np.zeros((0, 3)), np.zeros(0)
    idx -= idx.min(axis=0)
    span = idx.max(axis=0) + 1
    key = (idx[:, 0] * span[1] + idx[:, 1]) * span[2] + idx[:, 2]
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    mean_pos = np.stack(
        [np.bincount(inv, np.asarray(pos[:, a], dtype=np.float64)) / counts for a in range(3)],
        axis=1,
    )
    return mean_pos, np.bincount(inv, np.asarray(attr, dtype=np.float64)) / counts


def expected_levels(
    pos: npt.NDArray[np.floating], attr: npt.NDArray[np.floating], cells: Sequence[float]
) -> list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    """Expected (positions, attr) per coarse level: per-cell means of the level-0 points.

    ``build_pyramid`` derives each level from the previous one but weights metavertices by
    the number of level-0 vertices behind them, so every level holds exact means.
    """
    return [_cell_means(pos, attr, cell) for cell in cells]


def _matches(
    expected: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]], cell: float, res: Any
) -> bool:
    """Whether ``res`` holds exactly the expected metavertices (float32 tolerance)."""
    exp_pos, exp_attr = expected
    got_pos = np.asarray(res.positions, dtype=np.float64)
    got_attr = np.asarray(res.attributes["attr_a"], dtype=np.float64)
    if got_pos.shape != exp_pos.shape:
        return False
    # Order both by the cell each mean falls in (a mean lies inside its convex cell).
    order_e = np.lexsort(np.floor(exp_pos / cell).T[::-1])
    order_g = np.lexsort(np.floor(got_pos / cell).T[::-1])
    return bool(
        np.allclose(exp_pos[order_e], got_pos[order_g], rtol=0, atol=1e-3)
        and np.allclose(exp_attr[order_e], got_attr[order_g], rtol=0, atol=1e-5)
    )


def bench_config(
    data: ds.PointsData, work: Any, cfg: ZvConfig, repeat: int, keep: bool
) -> BenchResult:
    """Write level 0 ``repeat`` times, build the pyramid on each store, read every level."""
    import zarr_vectors as zv

    assert cfg.bin is not None
    stem = cfg.label.replace(" ", "-").replace("/", "-")
    attrs = {"attr_a": data.attr_a, "attr_b": data.attr_b}

    def write(path: Any) -> Any:
        return zv.write_points(
            str(path),
            data.positions,
            chunk_shape=cfg.chunk_shape,
            bin_shape=cfg.bin_shape,
            attributes=attrs,
        )

    w_cpu: list[float] = []
    b_cpu: list[float] = []
    w_times, paths, summary = time_writes(write, work, stem, repeat, w_cpu)
    size0, files0 = disk_usage(paths[-1])
    b_times, levels = time_each(
        [lambda p=p: zv.build_pyramid(str(p), [list(r) for r in RATIOS]) for p in paths], b_cpu
    )
    if not keep:
        remove_quietly(paths[:-1])
    store = str(paths[-1])
    size_all, files_all = disk_usage(paths[-1])
    extra: dict[str, float] = {
        "build_s": statistics.median(b_times),
        "build_min_s": min(b_times),
        "build_max_s": max(b_times),
        "build_cpu_s": statistics.median(b_cpu),
        "write_cpu_s": statistics.median(w_cpu),
        "write_min_s": min(w_times),
        "write_max_s": max(w_times),
        "level0_bytes": float(size0),
        "level0_files": float(files0),
        "all_files": float(files_all),
    }
    checks: dict[str, bool] = {}
    reader = zv.open(store)
    checks["levels_listed"] = reader.levels == [0, 1, 2]
    central = ds.bbox_fraction(data.positions, 0.01)
    cells = [cfg.bin * r[0] for r in RATIOS]
    expected = expected_levels(data.positions, data.attr_a, cells)
    for lvl, cell in enumerate(cells, start=1):
        extra[f"level{lvl}_vertices"] = float(levels[-1][lvl - 1].vertex_count)
        t_read, res = median_time(lambda lvl=lvl: zv.read_points(store, level=lvl), repeat)
        extra[f"level{lvl}_read_s"] = t_read
        checks[f"level{lvl}_cell_means"] = _matches(expected[lvl - 1], cell, res)
        t_box, _ = median_time(lambda lvl=lvl: reader.read(level=lvl, bbox=central), repeat)
        extra[f"level{lvl}_bbox_open_s"] = t_box
    # A level-2 box read on a box aligned to level-2 cells (so no cell is cut).
    lo = np.ceil(central[0] / cells[-1]) * cells[-1]
    hi = np.floor(central[1] / cells[-1]) * cells[-1]
    res = reader.read(level=2, bbox=(lo, hi))
    sel = half_open_mask(data.positions, (lo, hi))
    exp_box = expected_levels(data.positions[sel], data.attr_a[sel], cells)[-1]
    checks["level2_bbox_cell_means"] = _matches(exp_box, cells[-1], res)
    t0, _ = median_time(lambda: zv.read_points(store), repeat)
    extra["level0_read_s"] = t0
    reader.close()
    return BenchResult(
        library="zarr-vectors",
        version=zv_version(),
        fmt=cfg.label,
        task="pyramid",
        n_vertices=data.n_vertices,
        n_objects=None,
        write_s=statistics.median(w_times),
        read_s=t0,
        bbox_read_s=None,
        object_read_s=None,
        size_bytes=size_all,
        file_count=files_all,
        correct=all(checks.values()),
        note="ok"
        if all(checks.values())
        else "FAILED " + ", ".join(k for k, v in checks.items() if not v),
        checks=tuple(checks.items()),
        extra=tuple(extra.items()),
        n_chunks=int(summary.chunk_count),
    )


def run_upstream(data: ds.PointsData, work: Path, cfg: ZvConfig, repeat: int) -> BenchResult | str:
    """Upstream 0.2.0 ``pyramid`` task on the same points and ``cfg``; a reason on failure."""

    def add_ratios(npz: Path) -> None:
        with np.load(npz) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["pyramid_ratios"] = np.array([float(r[0]) for r in RATIOS])
        np.savez(npz, **arrays)  # type: ignore[arg-type]

    extent = (data.positions.min(axis=0), data.positions.max(axis=0))
    return run_upstream_task(data, work, cfg, extent, repeat, task="pyramid", prepare=add_ratios)


def upstream_table(ours: BenchResult, up: BenchResult) -> str:
    """Markdown: same-run comparison of our build with upstream's on the same config."""

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}×" if a and b else "—"

    ob, ub = ours.get_extra("build_s"), up.get_extra("build_s")
    lines = [
        (
            "| config | ours: write / build | upstream: write / build (no links) | "
            "ours build / upstream build | ours build / write | upstream build / write | "
            "level 1 / 2 vertices (ours; upstream) |"
        ),
        "|---|---|---|---|---|---|---|",
        (
            f"| {ours.fmt} | {fmt_seconds(ours.write_s)} / {fmt_seconds(ob)} "
            f"| {fmt_seconds(up.write_s)} / {fmt_seconds(ub)} "
            f"({fmt_seconds(up.get_extra('build_no_links_s'))}) "
            f"| {ratio(ob, ub)} | {ratio(ob, ours.write_s)} | {ratio(ub, up.write_s)} "
            f"| {ours.get_extra('level1_vertices') or 0:,.0f} / "
            f"{ours.get_extra('level2_vertices') or 0:,.0f}; "
            f"{up.get_extra('level1_vertices') or 0:,.0f} / "
            f"{up.get_extra('level2_vertices') or 0:,.0f} |"
        ),
    ]
    return "\n".join(lines)


def table(results: Sequence[BenchResult]) -> str:
    """Markdown: one row per configuration."""
    head = (
        "| config | chunks | level-0 write | build 2 levels | build / write | CPU: write / "
        "build | level 1 / 2 vertices | read L0 / L1 / L2 | size L0 → all (MB) | "
        "files L0 → all |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        e = r.get_extra
        build, write = e("build_s"), r.write_s
        ratio = f"{build / write:.2f}×" if build and write else "—"
        lines.append(
            f"| {r.fmt} | {r.n_chunks} | {fmt_seconds(write)} | {fmt_seconds(build)} | {ratio} "
            f"| {fmt_seconds(e('write_cpu_s'))} / {fmt_seconds(e('build_cpu_s'))} "
            f"| {e('level1_vertices'):,.0f} / {e('level2_vertices'):,.0f} "
            f"| {fmt_seconds(r.read_s)} / {fmt_seconds(e('level1_read_s'))} / "
            f"{fmt_seconds(e('level2_read_s'))} "
            f"| {(e('level0_bytes') or 0) / 1e6:.1f} → {r.size_bytes / 1e6:.1f} "
            f"| {e('level0_files') or 0:,.0f} → {e('all_files') or 0:,.0f} |"
        )
    return "\n".join(lines)


def evaluate(results: Sequence[BenchResult]) -> list[Target]:
    """Build of two levels ≤ 2× the level-0 write, per configuration."""
    targets = []
    for r in results:
        build = r.get_extra("build_s")
        assert build is not None
        assert r.write_s is not None
        targets.append(
            Target(
                f"pyramid: 2 levels ≤ 2× level-0 write [{r.fmt}]",
                build <= 2.0 * r.write_s,
                f"build {fmt_seconds(build)} vs write {fmt_seconds(r.write_s)} = "
                f"{build / r.write_s:.2f}× (process CPU: build "
                f"{fmt_seconds(r.get_extra('build_cpu_s'))} vs write "
                f"{fmt_seconds(r.get_extra('write_cpu_s'))})",
            )
        )
    return targets


def render(
    results: Sequence[BenchResult],
    targets: Sequence[Target],
    notes: Sequence[str],
    upstream: BenchResult | None = None,
) -> str:
    """Markdown: pyramid table, upstream comparison, correctness, targets."""
    parts = ["## Pyramid (ratios 2 and 4)", table(results)]
    if upstream is not None:
        parts += ["## Upstream 0.2.0, same run", upstream_table(results[0], upstream)]
    checked = [*results, upstream] if upstream is not None else list(results)
    parts += ["## Correctness", checks_table(checked)]
    parts += closing_sections(targets, notes)
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print markdown, optionally write JSON."""
    args = parse_args(argv)
    work = prepare_workdir(args, "pyramid")
    configs = parse_configs(args.configs)
    data = ds.make_points(args.n, seed=args.seed)
    print(f"# pyramid: {args.n:,} points, repeat {args.repeat}, workdir {work}", flush=True)
    results = [bench_config(data, work, cfg, args.repeat, args.keep) for cfg in configs]
    targets = evaluate(results)
    notes: list[str] = []
    upstream: BenchResult | None = None
    if args.upstream:
        up = run_upstream(data, work, configs[0], args.upstream_repeat or args.repeat)
        upstream = keep_upstream(up, [], notes)  # shown in its own table, not with ours
    print(render(results, targets, notes, upstream))
    save_run(
        args,
        script="bench_pyramid",
        work=work,
        results=[*results, upstream] if upstream is not None else results,
        targets=targets,
        extra={"notes": notes},
    )
    return 0 if all(r.correct for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
