"""Living-store benchmark: appends and compaction against fresh writes of the same data.

Default store configurations only (the first configuration of ``bench_points`` and
``bench_streamlines``: points chunk 250 / bin 50, streamlines chunk 20 mm, one bin per chunk).

* (a) append 1 % more points (:func:`benchmarks.datasets.make_points`, another seed) to a
  ``--points`` store vs writing that 1 % as a new store.  ``spread``: the new points come from
  the same distribution (they land in every chunk); ``tile``: the same points moved one box
  side along x (a new tile: the chunk grid grows, no stored chunk is touched).
* (b) append ``--new-streamlines`` streamlines to a ``--streamlines`` store (both from
  :func:`benchmarks.datasets.make_streamlines`, ~100 vertices each) vs writing them fresh;
  ``spread`` and ``tile`` (moved 200 mm along x) as in (a).
* (d) read speed of a ``--points`` store (1 % box and whole) fresh, after 1 and after 10
  spread appends of 1 % each (append segments), and after ``compact``: median CPU seconds.
* (c) compact a ``--points`` store with object ids (100 points per object) after deleting 10 %
  of its objects vs a fresh write of the remaining points.

Each repeat restores the store from a hard-link copy of the original (not timed; appends never
write a stored file in place) and measures the edit and the fresh write alternately, wall and
process CPU time.  Reported: medians over ``--repeat`` repeats and their ratios.

Usage::

    python -m benchmarks.bench_edit                       # 10M points, 100k streamlines, 3x
    python -m benchmarks.bench_edit --points 200000 --streamlines 2000 --new-streamlines 20
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks import datasets as ds
from zarr_vectors.edit import incremental

POINT_CHUNK = (250.0, 250.0, 250.0)
POINT_BIN = (50.0, 50.0, 50.0)
STREAM_CHUNK = (20.0, 20.0, 20.0)


@dataclass(frozen=True)
class Timing:
    """Median wall and CPU seconds of one operation."""

    wall_s: float
    cpu_s: float


@dataclass(frozen=True)
class Row:
    """One benchmark: the edit, the fresh write it is compared with, the target ratio."""

    name: str
    edit: Timing
    fresh: Timing
    target: float
    path: str
    """How the edit was carried out (appends: ``chunks`` or ``rebuild``; else ``rewrite``)."""

    @property
    def wall_ratio(self) -> float:
        """Edit wall time over fresh-write wall time."""
        return self.edit.wall_s / self.fresh.wall_s

    @property
    def cpu_ratio(self) -> float:
        """Edit CPU time over fresh-write CPU time."""
        return self.edit.cpu_s / self.fresh.cpu_s


def _timed(func: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    func()
    return time.perf_counter() - wall, time.process_time() - cpu


def _restore(pristine: Path, work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    for root, _dirs, files in os.walk(pristine):
        rel = Path(root).relative_to(pristine)
        (work / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(Path(root) / name, work / rel / name)


def _median(samples: list[tuple[float, float]]) -> Timing:
    return Timing(
        statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)
    )


def compare(
    name: str,
    pristine: Path,
    edit: Callable[[str], Any],
    fresh: Callable[[str], Any],
    repeat: int,
    target: float,
) -> Row:
    """Time ``edit`` on restored copies of ``pristine`` and ``fresh`` into new stores."""
    work, out = pristine.with_name("work.zarr"), pristine.with_name("fresh.zarr")
    edits: list[tuple[float, float]] = []
    fresh_runs: list[tuple[float, float]] = []
    incremental.LAST_PATH.clear()
    for i in range(repeat):
        _restore(pristine, work)
        shutil.rmtree(out, ignore_errors=True)
        steps = [(edits, lambda: edit(str(work))), (fresh_runs, lambda: fresh(str(out)))]
        for sink, step in steps if i % 2 == 0 else steps[::-1]:
            sink.append(_timed(step))
    path = incremental.LAST_PATH[-1].value if incremental.LAST_PATH else "rewrite"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    row = Row(name, _median(edits), _median(fresh_runs), target, path)
    print(
        f"{name}: edit {row.edit.wall_s:.3f} s wall / {row.edit.cpu_s:.3f} s CPU ({path}); "
        f"fresh {row.fresh.wall_s:.3f} s / {row.fresh.cpu_s:.3f} s; "
        f"ratio {row.wall_ratio:.2f} wall, {row.cpu_ratio:.2f} CPU (target <= {target})",
        flush=True,
    )
    return row


def bench_points(work: Path, n: int, repeat: int) -> list[Row]:
    """(a) append 1 % more points, spread over the store and as a new tile."""
    base = ds.make_points(n, seed=0)
    extra = ds.make_points(max(n // 100, 1), seed=1)
    pristine = work / "points" / "store.zarr"
    zv.write_points(
        str(pristine),
        base.positions,
        attributes={"a": base.attr_a, "b": base.attr_b},
        chunk_shape=POINT_CHUNK,
        bin_shape=POINT_BIN,
    )
    rows = []
    for label, pos in (
        ("spread", extra.positions),
        ("tile", extra.positions + np.float32([1000.0, 0.0, 0.0])),
    ):
        attrs = {"a": extra.attr_a, "b": extra.attr_b}
        rows.append(
            compare(
                f"(a) append 1 % points ({label})",
                pristine,
                lambda s, p=pos, at=attrs: zv.append_points(s, p, attributes=at),
                lambda s, p=pos, at=attrs: zv.write_points(
                    s, p, attributes=at, chunk_shape=POINT_CHUNK, bin_shape=POINT_BIN
                ),
                repeat,
                3.0,
            )
        )
    return rows


def bench_streamlines(work: Path, n: int, n_new: int, repeat: int) -> list[Row]:
    """(b) append ``n_new`` streamlines to a store of ``n``: spread, and as a new tile."""
    base = ds.make_streamlines(n, seed=0)
    extra = ds.make_streamlines(n_new, seed=1)
    pristine = work / "streamlines" / "store.zarr"
    zv.write_streamlines(
        str(pristine),
        base.positions,
        offsets=base.offsets,
        attributes={"v": base.attr},
        chunk_shape=STREAM_CHUNK,
    )
    kw = {"offsets": extra.offsets, "attributes": {"v": extra.attr}}
    rows = []
    for label, pos in (
        ("spread", extra.positions),
        ("tile", extra.positions + np.float32([200.0, 0.0, 0.0])),
    ):
        rows.append(
            compare(
                f"(b) append {n_new:,} streamlines to {n:,} ({label})",
                pristine,
                lambda s, p=pos: zv.append_streamlines(s, p, **kw),
                lambda s, p=pos: zv.write_streamlines(s, p, chunk_shape=STREAM_CHUNK, **kw),
                repeat,
                3.0,
            )
        )
    return rows


def bench_compact(work: Path, n: int, repeat: int) -> Row:
    """(c) compact after deleting 10 % of the objects vs a fresh write of the rest."""
    data = ds.make_points(n, seed=2)
    rng = np.random.default_rng(3)
    n_obj = max(n // 100, 10)
    ids = rng.integers(0, n_obj, n)
    gone = rng.choice(n_obj, n_obj // 10, replace=False)
    pristine = work / "compact" / "store.zarr"
    attrs = {"a": data.attr_a, "b": data.attr_b}
    kw: dict[str, Any] = {"chunk_shape": POINT_CHUNK, "bin_shape": POINT_BIN}
    zv.write_points(str(pristine), data.positions, attributes=attrs, vertex_object_ids=ids, **kw)
    zv.delete_objects(str(pristine), gone)
    keep = ~np.isin(ids, gone)
    rest = {k: v[keep] for k, v in attrs.items()}
    return compare(
        "(c) compact, 10 % of objects deleted",
        pristine,
        lambda s: zv.compact(s),
        lambda s: zv.write_points(
            s, data.positions[keep], attributes=rest, vertex_object_ids=ids[keep], **kw
        ),
        repeat,
        1.5,
    )


def _read_times(store: str, box: Any, repeat: int) -> tuple[float, float]:
    """Median CPU seconds of a 1 % box read and of a whole read of ``store``."""
    boxed = [_timed(lambda: zv.read_points(store, bbox=box))[1] for _ in range(repeat)]
    whole = [_timed(lambda: zv.read_points(store))[1] for _ in range(repeat)]
    return statistics.median(boxed), statistics.median(whole)


def bench_reads(work: Path, n: int, repeat: int) -> list[str]:
    """(d) box and whole reads after 0, 1 and 10 appends, and after compact (Markdown rows)."""
    base = ds.make_points(n, seed=0)
    store = str(work / "reads" / "store.zarr")
    kw: dict[str, Any] = {"chunk_shape": POINT_CHUNK, "bin_shape": POINT_BIN}
    zv.write_points(store, base.positions, attributes={"a": base.attr_a, "b": base.attr_b}, **kw)
    box = ds.bbox_fraction(base.positions, 0.01)
    out = []
    done = 0
    for label, upto in (("fresh write", 0), ("after 1 append", 1), ("after 10 appends", 10)):
        for seed in range(done, upto):
            extra = ds.make_points(max(n // 100, 1), seed=10 + seed)
            attrs = {"a": extra.attr_a, "b": extra.attr_b}
            zv.append_points(store, extra.positions, attributes=attrs)
        done = upto
        boxed, whole = _read_times(store, box, repeat)
        out.append(f"| (d) read, {label} | {boxed:.3f} | {whole:.3f} |")
        print(out[-1], flush=True)
    zv.compact(store)
    boxed, whole = _read_times(store, box, repeat)
    out.append(f"| (d) read, after compact | {boxed:.3f} | {whole:.3f} |")
    print(out[-1], flush=True)
    return out


def render(rows: Sequence[Row], args: argparse.Namespace) -> str:
    """Markdown table of the results."""
    head = (
        f"points {args.points:,}, streamlines {args.streamlines:,} "
        f"(+{args.new_streamlines:,}), medians of {args.repeat} repeats"
    )
    lines = [
        head,
        "",
        "| benchmark | edit wall / CPU s | fresh write wall / CPU s | ratio wall / CPU | target |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.name} ({r.path}) | {r.edit.wall_s:.2f} / {r.edit.cpu_s:.2f} | "
        f"{r.fresh.wall_s:.2f} / {r.fresh.cpu_s:.2f} | {r.wall_ratio:.2f} / "
        f"{r.cpu_ratio:.2f} | ≤ {r.target} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks and print a Markdown table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--points", type=int, default=10_000_000)
    p.add_argument("--streamlines", type=int, default=100_000)
    p.add_argument("--new-streamlines", type=int, default=1_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", choices=("a", "b", "c", "d"), action="append")
    p.add_argument("--workdir", type=Path, default=Path("bench_edit_work"))
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    only = set(args.only or "abcd")
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    rows: list[Row] = []
    reads: list[str] = []
    try:
        if "b" in only:
            rows += bench_streamlines(work, args.streamlines, args.new_streamlines, args.repeat)
        if "a" in only:
            rows += bench_points(work, args.points, args.repeat)
        if "c" in only:
            rows.append(bench_compact(work, args.points, args.repeat))
        if "d" in only:
            reads = bench_reads(work, args.points, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(render(rows, args))
    if reads:
        print("\n| read of the points store | 1 % box CPU s | whole CPU s |\n|---|---|---|")
        print("\n".join(reads))
    if args.json is not None:
        doc = [{**asdict(r), "wall_ratio": r.wall_ratio, "cpu_ratio": r.cpu_ratio} for r in rows]
        args.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
