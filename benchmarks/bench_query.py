"""Query benchmark: ``where=`` vs full read vs a Parquet row-group filter, ``count``, budgets.

One process, same run for ours and the peer (pyarrow).  Data: ``--points`` uniform points in a
1000-unit cube (float32), a float32 attribute ``value`` and a categorical ``label`` (20
string labels, stored as int32 codes plus categories; a dictionary column in Parquet).  Two
attribute layouts:

* ``coherent``: ``value = z / 1000`` (an attribute that follows space, like depth or time),
  ``label`` uniform random; 1 % of values sit in one slab of chunks, so statistics prune;
* ``random``: ``value`` uniform random: every chunk holds every value, nothing can be pruned
  by per-chunk statistics.

Our store: ``write_points`` with chunk 100, bin 10 (1000 chunks), default compressor.  The
Parquet peer holds the same rows sorted by ``value`` (the predicate column, so its row-group
min/max statistics prune as well as they can; for ``coherent`` this is also z order, the
store's spatial order) in row groups of ``--row-group`` rows (default 100,000: about two
groups hold the 1 % rows), zstd, read with ``pyarrow.dataset`` and a filter expression; a
second copy with pyarrow's default row groups (1,048,576 rows) is timed on the 1 % filter.
A third copy, ``unsorted``, holds the rows in the input order (the natural way a user writes
the table; row groups of ``--row-group`` rows, statistics on, zstd): it shows what row-group
statistics prune when the file is not sorted by the predicate column.  For each Parquet file
the JSON also records how many row groups its statistics keep for the 1 % filter
(``ParquetFileFragment.split_by_row_group``).

Rows (CPU seconds, ``time.process_time``, includes pyarrow's threads; median of ``--repeat``
runs, ours and the peer alternating):

* ``full_read``: ``reader.read()`` (every column); ``positions_read``: ``reader.read(
  attributes=False)``, the least any query must decode when its matches lie in every chunk
  (every Blosc block of positions holds some of a uniform 1 %);
* ``where_1pct``: ``value in [0.5, 0.51)``; ``where_mixed_1pct``: ``value in [0.5, 0.55)`` and
  ``label in {c00 .. c03}`` (5 % x 20 %); each against the same filter on Parquet;
* ``count_box_1pct``: ``zv.count`` of the box ``[0, 215.44)^3`` (1 % of the volume);
* ``max_vertices_1e5``: ``reader.read(max_vertices=100_000)`` over the whole extent, after
  ``build_pyramid(store, [(2,2,2), (2,2,5), (5,5,5)])`` (build time reported separately).

With ``--dask``: the per-object mean of docs/guides/dask.md on ``--points`` spots in 50,000
cells (12-bit intensities, so the float64 sums are exact), ``to_dask`` + ``groupby().mean()``
on a ``LocalCluster`` of 2 worker processes (1 thread each); wall seconds of the compute,
median of ``--repeat``, result checked equal to NumPy.

Results are checked against NumPy on the input.  Usage::

    python -m benchmarks.bench_query                    # 10M points, repeat 3
    python -m benchmarks.bench_query --points 1000000 --workdir /dev/shm/bq
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import zarr_vectors as zv
from distributed import Client, LocalCluster

LABELS = np.array([f"c{i:02d}" for i in range(20)])
BOX_SIDE = 1000 * 0.01 ** (1 / 3)  # a cube holding 1 % of the volume
PYRAMID = [(2, 2, 2), (2, 2, 5), (5, 5, 5)]


def _time(fn: Callable[[], Any]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def _paired(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, dict[str, float]]:
    """Median CPU and wall seconds of each function, run in alternating order."""
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    names = list(fns)
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            times[name].append(_time(fns[name]))
    return {
        k: {
            "cpu": statistics.median(t[0] for t in v),
            "wall": statistics.median(t[1] for t in v),
        }
        for k, v in times.items()
    }


def _data(n: int, coherent: bool) -> dict[str, npt.NDArray[Any]]:
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    value = (pos[:, 2] / 1000 if coherent else rng.random(n)).astype(np.float32)
    codes = rng.integers(0, len(LABELS), n).astype(np.int32)
    return {"pos": pos, "value": value, "codes": codes}


def _write_parquet(
    data: dict[str, npt.NDArray[Any]], path: Path, row_group: int, *, sort: bool = True
) -> None:
    """Write the rows sorted by ``value`` (``sort=True``) or in the input order."""
    n = len(data["value"])
    order = np.argsort(data["value"], kind="stable") if sort else np.arange(n)
    label = pa.DictionaryArray.from_arrays(pa.array(data["codes"][order]), pa.array(LABELS))
    table = pa.table(
        {
            "x": data["pos"][order, 0],
            "y": data["pos"][order, 1],
            "z": data["pos"][order, 2],
            "value": data["value"][order],
            "label": label,
        }
    )
    pq.write_table(table, path, row_group_size=row_group, compression="zstd")


def _expected(data: dict[str, npt.NDArray[Any]]) -> dict[str, int]:
    v, c, p = data["value"].astype(np.float64), data["codes"], data["pos"]  # exact comparisons
    one = (v >= 0.5) & (v < 0.51)
    mixed = (v >= 0.5) & (v < 0.55) & (c < 4)
    box = np.all((p >= 0) & (p.astype(np.float64) < BOX_SIDE), axis=1)  # compared in float64
    return {
        "where_1pct": int(one.sum()),
        "where_mixed_1pct": int(mixed.sum()),
        "count_box_1pct": int(np.count_nonzero(box)),
    }


def _prepare(n: int, coherent: bool, root: Path, row_group: int) -> dict[str, Any]:
    data = _data(n, coherent)
    tag = "coherent" if coherent else "random"
    store = root / f"q_{tag}_{n}.zarrvectors"
    parquet = root / f"q_{tag}_{n}_rg{row_group}.parquet"
    out: dict[str, Any] = {"data": data, "store": str(store), "parquet": parquet}
    if not store.exists():
        _, wall = _time(
            lambda: zv.write_points(
                str(store),
                data["pos"],
                chunk_shape=(100, 100, 100),
                bin_shape=(10, 10, 10),
                attributes={"value": data["value"], "label": LABELS[data["codes"]]},
            )
        )
        out["write_s"] = wall
        _, wall = _time(lambda: zv.build_pyramid(str(store), PYRAMID))
        out["pyramid_build_s"] = wall
    for path, rows in ((parquet, row_group), (_default_rg(parquet), DEFAULT_ROW_GROUP)):
        if not path.exists():
            _write_parquet(data, path, rows)
    if not _unsorted(parquet).exists():
        _write_parquet(data, _unsorted(parquet), row_group, sort=False)
    return out


DEFAULT_ROW_GROUP = 1 << 20
"""pyarrow's default ``row_group_size`` (rows), for a second Parquet file."""


def _default_rg(parquet: Path) -> Path:
    return parquet.with_name(parquet.stem.rsplit("_rg", 1)[0] + "_rgdefault.parquet")


def _unsorted(parquet: Path) -> Path:
    return parquet.with_name(parquet.stem + "_unsorted.parquet")


def _row_groups_kept(dataset: ds.Dataset, expr: ds.Expression) -> tuple[int, int]:
    """Row groups the file's min/max statistics keep for ``expr``, and the total."""
    kept = total = 0
    for fragment in dataset.get_fragments():
        total += fragment.metadata.num_row_groups
        kept += len(fragment.split_by_row_group(expr))
    return kept, total


def run(n: int, coherent: bool, root: Path, repeat: int, row_group: int) -> dict[str, Any]:
    """Measure every row for one attribute layout."""
    prep = _prepare(n, coherent, root, row_group)
    reader = zv.open(prep["store"])
    dataset = ds.dataset(prep["parquet"])
    default_rg = ds.dataset(_default_rg(prep["parquet"]))
    unsorted = ds.dataset(_unsorted(prep["parquet"]))
    one = {"value": (0.5, 0.51)}
    mixed = {"value": (0.5, 0.55), "label": {"c00", "c01", "c02", "c03"}}
    f_one = (ds.field("value") >= 0.5) & (ds.field("value") < 0.51)
    f_mixed = (
        (ds.field("value") >= 0.5)
        & (ds.field("value") < 0.55)
        & ds.field("label").isin(list(LABELS[:4]))
    )
    box = ([0.0, 0.0, 0.0], [BOX_SIDE] * 3)
    want = _expected(prep["data"])
    got = {
        "where_1pct": len(reader.read(where=one)),
        "where_mixed_1pct": len(reader.read(where=mixed)),
        "count_box_1pct": zv.count(reader, bbox=box),
        "parquet_1pct": dataset.to_table(filter=f_one).num_rows,
        "parquet_mixed_1pct": dataset.to_table(filter=f_mixed).num_rows,
        "unsorted_1pct": unsorted.to_table(filter=f_one).num_rows,
        "unsorted_mixed_1pct": unsorted.to_table(filter=f_mixed).num_rows,
    }
    assert got["where_1pct"] == want["where_1pct"] == got["parquet_1pct"], got
    assert got["unsorted_1pct"] == want["where_1pct"], got
    assert got["unsorted_mixed_1pct"] == want["where_mixed_1pct"], got
    assert got["where_mixed_1pct"] == want["where_mixed_1pct"] == got["parquet_mixed_1pct"]
    assert got["count_box_1pct"] == want["count_box_1pct"], (got, want)
    res = _paired(
        {
            "full_read": lambda: reader.read(),
            "positions_read": lambda: reader.read(attributes=False),
            "where_1pct": lambda: reader.read(where=one),
            "parquet_1pct": lambda: dataset.to_table(filter=f_one),
            "where_mixed_1pct": lambda: reader.read(where=mixed),
            "parquet_mixed_1pct": lambda: dataset.to_table(filter=f_mixed),
            "parquet_full": lambda: dataset.to_table(),
            "parquet_default_rg_1pct": lambda: default_rg.to_table(filter=f_one),
            "unsorted_full": lambda: unsorted.to_table(),
            "unsorted_1pct": lambda: unsorted.to_table(filter=f_one),
            "unsorted_mixed_1pct": lambda: unsorted.to_table(filter=f_mixed),
            "count_box_1pct": lambda: zv.count(reader, bbox=box),
            "max_vertices_1e5": lambda: reader.read(max_vertices=100_000),
        },
        repeat,
    )
    budget = reader.read(max_vertices=100_000)
    plan = zv.explain(reader, max_vertices=100_000)
    return {
        "times": res,
        "rows": want,
        "max_vertices_level": plan.level,
        "max_vertices_rows": len(budget),
        "chunks_read_1pct": zv.explain(reader, where=one).chunks_read,
        "row_groups_kept_1pct": {
            "sorted": _row_groups_kept(dataset, f_one),
            "default_rg": _row_groups_kept(default_rg, f_one),
            "unsorted": _row_groups_kept(unsorted, f_one),
        },
        "write_s": prep.get("write_s"),
        "pyramid_build_s": prep.get("pyramid_build_s"),
    }


def run_dask(n: int, root: Path, repeat: int) -> dict[str, Any]:
    """Per-object mean intensity over ``n`` spots on a 2-process LocalCluster."""
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    cell = rng.integers(0, 50_000, n)
    intensity = (rng.integers(0, 4096, n) / 4096).astype(np.float32)
    path = root / f"q_cells_{n}.zarrvectors"
    out: dict[str, Any] = {}
    if not path.exists():
        _, out["write_s"] = _time(
            lambda: zv.write_points(
                str(path),
                pos,
                chunk_shape=(100, 100, 100),
                attributes={"intensity": intensity},
                vertex_object_ids=cell,
            )
        )
    ids, inverse = np.unique(cell, return_inverse=True)
    want = np.bincount(inverse, weights=intensity.astype(np.float64)) / np.bincount(inverse)
    walls = []
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            host="127.0.0.1",
        ) as cluster,
        Client(cluster),
    ):
        for _ in range(repeat):
            start = time.perf_counter()
            df = zv.to_dask(str(path), attributes=["intensity"])
            df = df.assign(intensity=df["intensity"].astype("float64"))
            means = df.groupby("object_id")["intensity"].mean(split_out=1).compute().sort_index()
            walls.append(time.perf_counter() - start)
            assert np.array_equal(means.index.to_numpy(), ids)
            assert np.array_equal(means.to_numpy(), want)
    out.update(wall_s=statistics.median(walls), walls=walls, partitions=df.npartitions)
    return out


def _summary(label: str, res: dict[str, Any]) -> str:
    t = {k: v["cpu"] for k, v in res["times"].items()}
    lines = [f"{label}: " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in t.items())]
    lines.append(
        f"  full/where {t['full_read'] / t['where_1pct']:.1f}x, "
        f"positions/where {t['positions_read'] / t['where_1pct']:.2f}, "
        f"where/parquet {t['where_1pct'] / t['parquet_1pct']:.2f}, "
        f"mixed where/parquet {t['where_mixed_1pct'] / t['parquet_mixed_1pct']:.2f}, "
        f"unsorted parquet full/1% {t['unsorted_full'] / t['unsorted_1pct']:.2f}x, "
        f"where/unsorted {t['where_1pct'] / t['unsorted_1pct']:.2f}, "
        f"mixed where/unsorted {t['where_mixed_1pct'] / t['unsorted_mixed_1pct']:.2f}, "
        f"row groups kept (1%) {res['row_groups_kept_1pct']}, "
        f"budget level {res['max_vertices_level']} ({res['max_vertices_rows']} rows), "
        f"chunks read (1%) {res['chunks_read_1pct']}, write {res['write_s']}, "
        f"pyramid build {res['pyramid_build_s']} s"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--row-group", type=int, default=100_000, help="Parquet rows per group")
    parser.add_argument("--layouts", default="coherent,random")
    parser.add_argument("--workdir", type=Path, default=None, help="keep stores here (reused)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--dask", action="store_true", help="only the Dask per-object mean")
    args = parser.parse_args()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="bench_query_"))
    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    try:
        if args.dask:
            out["dask"] = run_dask(args.points, root, args.repeat)
            print("dask per-object mean", out["dask"], flush=True)
        for label in [] if args.dask else args.layouts.split(","):
            out[label] = run(args.points, label == "coherent", root, args.repeat, args.row_group)
            print(_summary(label, out[label]), flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
