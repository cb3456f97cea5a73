"""Point-cloud benchmark: ours vs Parquet (zstd), raw .npy, LAZ and upstream zarr-vectors 0.2.0.

One process, one data set (:func:`benchmarks.datasets.make_points`: ``--n`` points in a
1000³ box, half uniform, half in 64 Gaussian clusters, two float32 attributes).  Our store is
written once per configuration (``--configs``, default chunk 250 / bin 50 and chunk
125 / bin 25 with the default codec, and chunk 250 / bin 50 with ``compressor="zstd"``).
Writes are timed twice: into fresh directory names, and into the path of the store just
deleted (the overwrite case, slowest on ext4).  Queries:

* central box: :func:`~benchmarks.datasets.bbox_fraction` ``(pos, 0.01)`` (1 % of the
  volume; ~1.6 % of the points) -- the box every peer and upstream answer;
* ``--boxes`` random boxes centred on random points, each holding 1 % of the points.

Usage::

    python -m benchmarks.bench_points                       # 1M points, repeat 5, upstream
    python -m benchmarks.bench_points --n 20000 --repeat 1 --no-upstream --json out.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks import datasets as ds
from benchmarks import peers
from benchmarks.ours import (
    ZvConfig,
    add_common_args,
    bench_zv_points,
    calibrated_boxes,
    keep_upstream,
    prepare_workdir,
    run_upstream_task,
)
from benchmarks.peers import BenchResult
from benchmarks.report import Op, Target, fmt_seconds, render_configs, save_run

OPS = (
    Op("write", "write_s", "write_s"),
    Op("write to a just-deleted path", "extra:rewrite_s", "write_s"),
    Op("full read", "read_s", "read_s"),
    Op("bbox central (functional)", "bbox_read_s", "bbox_read_s"),
    Op("bbox central (open Reader)", "extra:bbox_central_open_s", "bbox_read_s"),
    Op("bbox central vs Parquet pushdown", "bbox_read_s", "extra:bbox_read_pushdown_s"),
    Op("bbox random 1 % (functional, median)", "extra:bbox_random_func_s", "bbox_read_s"),
    Op("bbox random 1 % (open Reader, median)", "extra:bbox_random_open_s", "bbox_read_s"),
    Op("bbox random 1 % (open Reader, p90)", "extra:bbox_random_open_p90_s", "bbox_read_s"),
    Op("write — process CPU (ours only)", "extra:write_cpu_s", None),
    Op("write to a just-deleted path — process CPU", "extra:rewrite_cpu_s", None),
    Op("full read — process CPU", "extra:read_cpu_s", None),
    Op("bbox random 1 % functional — CPU median", "extra:bbox_random_func_cpu_s", None),
    Op("bbox random 1 % open Reader — CPU median", "extra:bbox_random_open_cpu_s", None),
)


def parse_configs(text: str) -> list[ZvConfig]:
    """Parse ``"250/50,125/25:lz4"`` (chunk/bin[:compressor]; ``"250"`` = one bin per chunk)."""
    out = []
    for item in text.split(","):
        shape, _, comp = item.strip().partition(":")
        chunk, _, b = shape.partition("/")
        out.append(ZvConfig(float(chunk), float(b) if b else None, comp or "default"))
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p, n=1_000_000, repeat=5)
    p.add_argument(
        "--configs",
        default="250/50,125/25,250/50:zstd",
        help="chunk/bin list (default %(default)s)",
    )
    p.add_argument("--boxes", type=int, default=30, help="random boxes (default 30)")
    p.add_argument("--fraction", type=float, default=0.01, help="points per random box")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def evaluate(ours: Sequence[BenchResult], peer_res: Sequence[BenchResult]) -> list[Target]:
    """The issue's point-cloud targets, per configuration."""
    pq = next((r for r in peer_res if r.fmt == "parquet-zstd"), None)
    up = next((r for r in peer_res if r.fmt == "zv-upstream"), None)
    targets: list[Target] = []
    for r in ours:
        if pq is not None and r.write_s is not None and pq.write_s:
            ratio = r.write_s / pq.write_s
            targets.append(
                Target(
                    f"points write ≤ 1.5× Parquet zstd [{r.fmt}]",
                    ratio <= 1.5,
                    f"{fmt_seconds(r.write_s)} vs {fmt_seconds(pq.write_s)} = {ratio:.2f}×",
                )
            )
        rewrite = r.get_extra("rewrite_s")
        if pq is not None and rewrite is not None and pq.write_s:
            ratio = rewrite / pq.write_s
            targets.append(
                Target(
                    f"points write to a just-deleted path ≤ 1.5× Parquet zstd [{r.fmt}]",
                    ratio <= 1.5,
                    f"{fmt_seconds(rewrite)} vs {fmt_seconds(pq.write_s)} = {ratio:.2f}×",
                )
            )
        if pq is not None and r.read_s is not None and pq.read_s:
            ratio = r.read_s / pq.read_s
            targets.append(
                Target(
                    f"points full read ≤ 3× Parquet zstd [{r.fmt}]",
                    ratio <= 3.0,
                    f"{fmt_seconds(r.read_s)} vs {fmt_seconds(pq.read_s)} = {ratio:.2f}×",
                )
            )
        t_open = r.get_extra("bbox_random_open_s")
        t_func = r.get_extra("bbox_random_func_s")
        if t_open is not None and t_func is not None:
            up_txt = (
                f"; upstream central box {fmt_seconds(up.bbox_read_s)}"
                if up is not None and up.bbox_read_s is not None
                else ""
            )
            targets.append(
                Target(
                    f"points bbox 1 % < 10 ms median, open Reader [{r.fmt}]",
                    t_open < 0.010,
                    f"median {fmt_seconds(t_open)} over {r.get_extra('n_boxes'):.0f} boxes "
                    f"(p90 {fmt_seconds(r.get_extra('bbox_random_open_p90_s'))}, CPU "
                    f"{fmt_seconds(r.get_extra('bbox_random_open_cpu_s'))}){up_txt}",
                )
            )
            targets.append(
                Target(
                    f"points bbox 1 % < 10 ms median, functional read_points [{r.fmt}]",
                    t_func < 0.010,
                    f"median {fmt_seconds(t_func)} (includes opening the store; CPU "
                    f"{fmt_seconds(r.get_extra('bbox_random_func_cpu_s'))})",
                )
            )
    return targets


def run_peers(
    data: ds.PointsData, work: Path, box: tuple[np.ndarray, np.ndarray], repeat: int
) -> list[BenchResult]:
    """Parquet (zstd, plain and Z-sorted), .npy and LAZ on the central box."""
    return [
        peers.bench_parquet_points(data, work, box, repeat),
        peers.bench_parquet_points(data, work, box, repeat, sort_rows=True),
        peers.bench_npy_points(data, work, box, repeat),
        peers.bench_laz_points(data, work, box, repeat),
    ]


def run_upstream(
    data: ds.PointsData,
    work: Path,
    box: tuple[np.ndarray, np.ndarray],
    config: ZvConfig,
    repeat: int,
) -> BenchResult | str:
    """Upstream 0.2.0 on the same data, chunk and bin shape; a reason string on failure."""
    return run_upstream_task(data, work, config, box, repeat)


def render(results: Sequence[BenchResult], targets: Sequence[Target], notes: Sequence[str]) -> str:
    """Markdown: one timing table per configuration of ours, sizes, correctness, targets."""
    return render_configs(results, targets, notes, OPS)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print markdown, optionally write JSON."""
    args = parse_args(argv)
    work = prepare_workdir(args, "points")
    configs = parse_configs(args.configs)
    data = ds.make_points(args.n, seed=args.seed)
    central = ds.bbox_fraction(data.positions, 0.01)
    rng = np.random.default_rng(args.seed + 1)
    boxes = calibrated_boxes(data.positions, args.boxes, args.fraction, rng)
    print(f"# points: {args.n:,} points, repeat {args.repeat}, workdir {work}", flush=True)

    ours = [
        bench_zv_points(
            data,
            work,
            cfg,
            central,
            boxes,
            repeat=args.repeat,
            write_repeat=args.repeat,
            keep_all=args.keep,
        )
        for cfg in configs
    ]
    peer_res = run_peers(data, work, central, args.repeat)
    notes: list[str] = []
    if args.upstream:
        up = run_upstream(data, work, central, configs[0], args.upstream_repeat or args.repeat)
        keep_upstream(up, peer_res, notes)

    targets = evaluate(ours, peer_res)
    print(render([*ours, *peer_res], targets, notes))
    save_run(
        args,
        script="bench_points",
        work=work,
        results=[*ours, *peer_res],
        targets=targets,
        extra={"notes": notes, "central_box": [central[0].tolist(), central[1].tolist()]},
    )
    return 0 if all(r.correct for r in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
