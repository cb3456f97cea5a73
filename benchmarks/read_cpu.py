"""Full-read cost of one existing store: median CPU and wall time in a fresh process.

For paired comparisons of two versions of the library on the same store (run it alternately
with each on ``PYTHONPATH``); one warm-up read, then ``--repeat`` timed reads::

    python -m benchmarks.read_cpu skeleton /dev/shm/skeletons.zv --repeat 7
    PYTHONPATH=/tmp/old/src python -m benchmarks.read_cpu skeleton /dev/shm/skeletons.zv
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import zarr_vectors as zv

READERS: dict[str, Callable[[str], Any]] = {
    "points": zv.read_points,
    "lines": zv.read_lines,
    "polylines": zv.read_polylines,
    "graph": zv.read_graph,
    "skeleton": zv.read_skeletons,
    "mesh": zv.read_meshes,
}


def measure(read: Callable[[str], Any], store: str, repeat: int) -> tuple[float, float]:
    """Median (CPU seconds, wall seconds) of ``repeat`` full reads after one warm-up read."""
    read(store)
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(repeat):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        read(store)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(cpu), statistics.median(wall)


def main(argv: Sequence[str] | None = None) -> int:
    """Print ``<kind> cpu <ms> wall <ms>`` for one store."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=sorted(READERS), help="geometry type (reader) of the store")
    p.add_argument("store", help="store path or URL")
    p.add_argument("--repeat", type=int, default=7, help="timed reads (default %(default)s)")
    args = p.parse_args(argv)
    cpu, wall = measure(READERS[args.kind], args.store, max(1, args.repeat))
    print(f"{args.kind} cpu {cpu * 1e3:.1f} ms wall {wall * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
