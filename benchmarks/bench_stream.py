"""Streaming ingest of N points generated on the fly, in bounded memory.

Run: ``/usr/bin/time -v python benchmarks/bench_stream.py 1e8`` (peak RSS is "Maximum resident
set size").  Writes under /work/bench; delete the store afterwards.
"""

import shutil
import sys
import time

import numpy as np

import zarr_vectors as zv

n_total = int(float(sys.argv[1]))
batch = 1_000_000
out = "/work/bench/stream100m.zv"
shutil.rmtree(out, ignore_errors=True)
t = time.perf_counter()
with zv.open_writer(
    out,
    "point_cloud",
    chunk_shape=(250, 250, 250),
    bin_shape=(50, 50, 50),
    spill_dir="/work/bench",
    memory_limit=128 << 20,
) as w:
    for i in range(0, n_total, batch):
        rng = np.random.default_rng(i)
        m = min(batch, n_total - i)
        w.append(
            rng.uniform(0, 2000, (m, 3)).astype(np.float32),
            attributes={"intensity": rng.random(m, dtype=np.float32)},
        )
print(f"points {n_total:,} seconds {time.perf_counter() - t:.1f}")
r = zv.open(out)
print("stored", r.level(0).level_meta.vertex_count)
