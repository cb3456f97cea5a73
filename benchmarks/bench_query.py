"""Query benchmark: ``where=`` vs full read vs pyarrow dataset filter, ``count``, ``max_vertices``.

CPU time (``time.process_time``), median of alternating runs.  Two attribute layouts:
``coherent`` (the float attribute grows with z, so 1 % of values sit in 1 % of the chunks:
statistics prune) and ``random`` (every chunk holds every value: nothing can be pruned, by us
or by Parquet row-group statistics).

    python -m benchmarks.bench_query --points 1000000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import zarr_vectors as zv


def _cpu(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def _data(n: int, coherent: bool) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    value = (pos[:, 2] / 1000 if coherent else rng.random(n)).astype(np.float32)
    return {"pos": pos, "value": value, "label": rng.integers(0, 20, n).astype(np.int32)}


def run(n: int, coherent: bool, root: Path, repeat: int) -> dict[str, float]:
    data = _data(n, coherent)
    store = str(root / f"q_{coherent}.zarrvectors")
    zv.write_points(
        store,
        data["pos"],
        chunk_shape=(100, 100, 100),
        bin_shape=(10, 10, 10),
        attributes={"value": data["value"], "label": data["label"]},
    )
    table = pa.table(
        {
            "x": data["pos"][:, 0],
            "y": data["pos"][:, 1],
            "z": data["pos"][:, 2],
            "value": data["value"],
            "label": data["label"],
        }
    )
    parquet = root / f"q_{coherent}.parquet"
    order = np.argsort(data["pos"][:, 2]) if coherent else np.arange(n)
    pq.write_table(table.take(order), parquet, row_group_size=max(1, n // 1000), compression="zstd")
    reader = zv.open(store)
    where = {"value": (0.5, 0.51)}
    dataset = ds.dataset(parquet)
    flt = (ds.field("value") >= 0.5) & (ds.field("value") < 0.51)
    out = {
        "full_read": _cpu(lambda: reader.read(), repeat),
        "where_1pct": _cpu(lambda: reader.read(where=where), repeat),
        "pyarrow_filter": _cpu(lambda: dataset.to_table(filter=flt), repeat),
        "count_box_1pct": _cpu(
            lambda: zv.count(reader, bbox=([0, 0, 0], [215.4, 215.4, 215.4])), repeat
        ),
    }
    zv.build_pyramid(store, [(10, 10, 10)])
    budget = zv.open(store)
    out["max_vertices_1e5"] = _cpu(lambda: budget.read(max_vertices=100_000), repeat)
    got = len(reader.read(where=where))
    want = int(((data["value"] >= 0.5) & (data["value"] < 0.51)).sum())
    assert got == want, (got, want)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for coherent in (True, False):
            res = run(args.points, coherent, Path(tmp), args.repeat)
            label = "coherent" if coherent else "random"
            print(label, {k: round(v * 1000, 1) for k, v in res.items()}, "ms CPU")


if __name__ == "__main__":
    main()
