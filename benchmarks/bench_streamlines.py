"""Streamline benchmark: ours vs TRX (deflate / stored), TCK and upstream zarr-vectors 0.2.0.

One process, one data set (:func:`benchmarks.datasets.make_streamlines`: ``--n`` streamlines of
50-150 vertices (mean ``--vertices``) at 1 mm steps in a ~140 x 170 x 120 mm brain-like
ellipsoid, one float32 per-vertex attribute).  Our store is written once per chunk
configuration (``--configs``, default chunk 40 mm with 20 mm bins and chunk 20 mm with one
bin per chunk, with the default codec, and chunk 40 / bins 20 with ``compressor="zstd"``).
Queries:

* one streamline by id: ``--ids`` random ids, one call each, functional
  ``read_streamlines(store, object_ids=[q])`` and open-Reader ``zv.open(store).read(...)``;
  the peers (TRX) and upstream read the middle streamline;
* central box: :func:`~benchmarks.datasets.bbox_fraction` ``(pos, 0.01)`` (1 % of the volume,
  ~8.6 % of the streamlines) -- the box the peers and upstream answer;
* ``--boxes`` random boxes centred on random vertices, each hitting 1 % of the streamlines.

Sizes: TRX in trx-python can only use :mod:`zipfile` codecs (deflate or stored; Python 3.11 has
no zstd), so "zstd TRX" is measured as the whole ``ZIP_STORED`` .trx file compressed with
``zstandard`` (levels 3 -- our default -- and 19); such a file is not directly readable by
trx-python.

Usage::

    python -m benchmarks.bench_streamlines --upstream-repeat 1   # 100k x 100, repeat 3
    python -m benchmarks.bench_streamlines --n 500 --repeat 1 --no-upstream
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks import datasets as ds
from benchmarks import peers
from benchmarks.bench_points import parse_configs
from benchmarks.ours import (
    ZvConfig,
    add_common_args,
    bench_zv_streamlines,
    calibrated_boxes,
    keep_upstream,
    prepare_workdir,
    run_upstream_task,
    sample_ids,
    zv_version,
)
from benchmarks.peers import BenchResult
from benchmarks.report import Op, Target, fmt_seconds, render_configs, save_run

OPS = (
    Op("write", "write_s", "write_s"),
    Op("full read", "read_s", "read_s"),
    Op("one streamline by id (functional, median)", "object_read_s", "object_read_s"),
    Op("one streamline by id (open Reader, median)", "extra:object_open_s", "object_read_s"),
    Op("bbox central (functional)", "bbox_read_s", "bbox_read_s"),
    Op("bbox central (open Reader)", "extra:bbox_central_open_s", "bbox_read_s"),
    Op(
        "bbox random 1 % of streamlines (functional, median)",
        "extra:bbox_random_func_s",
        "bbox_read_s",
    ),
    Op(
        "bbox random 1 % of streamlines (open Reader, median)",
        "extra:bbox_random_open_s",
        "bbox_read_s",
    ),
    Op(
        "bbox random 1 % of streamlines (open Reader, p90)",
        "extra:bbox_random_open_p90_s",
        "bbox_read_s",
    ),
    Op("write — process CPU (ours only)", "extra:write_cpu_s", None),
    Op("full read — process CPU", "extra:read_cpu_s", None),
    Op("one streamline functional — CPU median", "extra:object_func_cpu_s", None),
    Op("one streamline open Reader — CPU median", "extra:object_open_cpu_s", None),
    Op("bbox random 1 % functional — CPU median", "extra:bbox_random_func_cpu_s", None),
    Op("bbox random 1 % open Reader — CPU median", "extra:bbox_random_open_cpu_s", None),
)
ZSTD_LEVELS = (3, 19)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p, n=100_000, repeat=3, upstream_repeat=1)
    p.add_argument("--vertices", type=int, default=100, help="mean vertices per streamline")
    p.add_argument(
        "--configs",
        default="40/20,20,40/20:zstd",
        help="chunk/bin[:compressor] list in mm (%(default)s)",
    )
    p.add_argument("--boxes", type=int, default=30, help="random boxes (default 30)")
    p.add_argument("--ids", type=int, default=50, help="random ids for one-streamline reads")
    p.add_argument("--fraction", type=float, default=0.01, help="streamlines hit per box")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def zstd_sizes(trx_stored: Path) -> list[BenchResult]:
    """Size-only results: the whole ZIP_STORED .trx file compressed with zstandard."""
    import zstandard

    raw = trx_stored.read_bytes()
    out = []
    for level in ZSTD_LEVELS:
        t0 = time.perf_counter()
        comp = zstandard.ZstdCompressor(level=level, threads=-1).compress(raw)
        dt = time.perf_counter() - t0
        out.append(
            BenchResult(
                library="zstandard",
                version=zstandard.__version__,
                fmt=f"trx-stored+zstd-{level}",
                task="streamlines",
                n_vertices=0,
                n_objects=None,
                write_s=None,
                read_s=None,
                bbox_read_s=None,
                object_read_s=None,
                size_bytes=len(comp),
                file_count=1,
                correct=True,
                note=f"size only: whole .trx compressed in {dt:.2f} s; not readable by trx-python",
                extra=(("compress_s", dt),),
            )
        )
    return out


def evaluate(
    ours: Sequence[BenchResult], peer_res: Sequence[BenchResult], zstd: Sequence[BenchResult]
) -> list[Target]:
    """The issue's streamline targets, per configuration."""
    up = next((r for r in peer_res if r.fmt == "zv-upstream"), None)
    z3 = next((r for r in zstd if r.fmt.endswith("zstd-3")), None)
    targets: list[Target] = []
    for r in ours:
        if up is not None and up.write_s and r.write_s:
            speed = up.write_s / r.write_s
            targets.append(
                Target(
                    f"streamlines write ≥ 10× faster than upstream [{r.fmt}]",
                    speed >= 10.0,
                    f"{fmt_seconds(r.write_s)} vs upstream {fmt_seconds(up.write_s)} "
                    f"({up.n_chunks} chunks) = {speed:.1f}× faster; our write CPU "
                    f"{fmt_seconds(r.get_extra('write_cpu_s'))}",
                )
            )
        for label, key in (("open Reader", "object_open_s"), ("functional", "object_func_s")):
            t = r.get_extra(key)
            if t is not None:
                targets.append(
                    Target(
                        f"one streamline by id < 2 ms median, {label} [{r.fmt}]",
                        t < 0.002,
                        f"median {fmt_seconds(t)} over {r.get_extra('n_object_queries'):.0f} ids "
                        f"(p90 {fmt_seconds(r.get_extra(key.replace('_s', '_p90_s')))}, CPU "
                        f"{fmt_seconds(r.get_extra(key.replace('_s', '_cpu_s')))})",
                    )
                )
        for label, key in (
            ("open Reader", "bbox_random_open_s"),
            ("functional", "bbox_random_func_s"),
        ):
            t = r.get_extra(key)
            if t is not None:
                targets.append(
                    Target(
                        f"bbox 1 % of streamlines < 50 ms median, {label} [{r.fmt}]",
                        t < 0.050,
                        f"median {fmt_seconds(t)} over {r.get_extra('n_boxes'):.0f} boxes, "
                        f"mean {r.get_extra('bbox_random_hits_mean'):.0f} streamlines hit, CPU "
                        f"{fmt_seconds(r.get_extra(key.replace('_s', '_cpu_s')))}",
                    )
                )
        if z3 is not None and z3.size_bytes:
            ratio = r.size_bytes / z3.size_bytes
            targets.append(
                Target(
                    f"store size ≤ 1.2× zstd TRX [{r.fmt}]",
                    ratio <= 1.2,
                    f"{r.size_bytes / 1e6:.1f} MB vs {z3.size_bytes / 1e6:.1f} MB "
                    f"({z3.fmt}, whole file) = {ratio:.2f}×",
                )
            )
    return targets


def render(results: Sequence[BenchResult], targets: Sequence[Target], notes: Sequence[str]) -> str:
    """Markdown: one timing table per configuration of ours, sizes, correctness, targets."""
    sized = [r for r in results if r.library == "zstandard"]
    return render_configs(results, targets, notes, OPS, size_only=sized)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print markdown, optionally write JSON."""
    args = parse_args(argv)
    work = prepare_workdir(args, "streamlines")
    configs = parse_configs(args.configs)
    data = ds.make_streamlines(args.n, args.vertices, seed=args.seed)
    central = ds.bbox_fraction(data.positions, 0.01)
    rng = np.random.default_rng(args.seed + 1)
    boxes = calibrated_boxes(data.positions, args.boxes, args.fraction, rng, data.offsets)
    ids = sample_ids(rng, data.n_objects, args.ids)
    print(
        f"# streamlines: {data.n_objects:,} streamlines, {data.n_vertices:,} vertices, "
        f"repeat {args.repeat}, zarr-vectors {zv_version()}, workdir {work}",
        flush=True,
    )

    ours = [
        bench_zv_streamlines(
            data,
            work,
            cfg,
            central,
            boxes,
            ids,
            repeat=args.repeat,
            write_repeat=args.repeat,
            keep_all=args.keep,
        )
        for cfg in configs
    ]
    peer_res = [
        peers.bench_trx_streamlines(data, work, central, args.repeat),
        peers.bench_trx_streamlines(data, work, central, args.repeat, compressed=False),
        peers.bench_tck_streamlines(data, work, central, args.repeat),
    ]
    zstd = zstd_sizes(work / "streamlines-trx-stored.trx")
    notes: list[str] = []
    if args.upstream:
        up_config = ZvConfig(configs[0].chunk)  # upstream gets the chunk shape only, no bins
        up_repeat = args.upstream_repeat or args.repeat
        up = run_upstream_task(data, work, up_config, central, up_repeat, write_repeat=1)
        keep_upstream(up, peer_res, notes)

    targets = evaluate(ours, peer_res, zstd)
    print(render([*ours, *peer_res, *zstd], targets, notes))
    save_run(
        args,
        script="bench_streamlines",
        work=work,
        results=[*ours, *peer_res, *zstd],
        targets=targets,
        extra={
            "notes": notes,
            "central_box": [central[0].tolist(), central[1].tolist()],
            "query_ids": ids.tolist(),
        },
    )
    return 0 if all(r.correct for r in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
