"""Timing of our own ``zarr_vectors``, returning the same :class:`BenchResult` as the peers.

Conventions (shared by ``bench_points.py``, ``bench_streamlines.py`` and ``bench_pyramid.py``):

* every write repeat goes to a **fresh directory name** (nothing is deleted inside or between
  the timed regions; stale stores are removed after all timings, untimed);
* times are medians; ``write_s`` over ``write_repeat`` writes, ``read_s`` over ``repeat``
  full reads;
* ``bbox_read_s`` is the *functional* ``read_*(store, bbox=...)`` (opens the store each call)
  on the same central box the peers and upstream use; the open-Reader variant
  (``zv.open(store).read(bbox=...)``, metadata cached) and the random-box statistics are in
  ``extra``;
* random boxes are centred on random data vertices and scaled (through
  :func:`benchmarks.datasets.bbox_fraction`) so that they hold a target fraction of the points
  (or hit a target fraction of the streamlines), see :func:`calibrated_boxes`;
* correctness is checked against NumPy on the input arrays, outside the timed regions, with
  our half-open box semantics ``min <= p < max``.
"""

from __future__ import annotations

import gc
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from benchmarks import peers
from benchmarks.datasets import PointsData, StreamlinesData, TaskData, bbox_fraction, save_task_npz
from benchmarks.peers import BenchResult, disk_usage

T = TypeVar("T")
Arr = npt.NDArray[Any]
BBox = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]

RUNS_ROOT = Path("/work/bench-runs")
"""Default parent of run directories (file creation under /tmp is ~8x slower here)."""

__all__ = [
    "RUNS_ROOT",
    "PairedReads",
    "ZvConfig",
    "bench_zv_points",
    "bench_zv_streamlines",
    "calibrated_boxes",
    "half_open_mask",
    "median_time",
    "new_workdir",
    "paired_reads",
    "remove_quietly",
    "streamline_hits",
    "time_each",
    "time_writes",
    "zv_version",
]


# ---------------------------------------------------------------------------
# Generic helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ZvConfig:
    """Chunk and bin shape of one of our stores (cubic, physical units)."""

    chunk: float
    bin: float | None = None
    compressor: str = "default"
    """``compressor=`` of the writers (``"default"``: Blosc-LZ4 blocks, ``"zstd"``, ``"none"``)."""

    @property
    def chunk_shape(self) -> tuple[float, float, float]:
        """Chunk shape tuple."""
        return (self.chunk,) * 3

    @property
    def bin_shape(self) -> tuple[float, float, float] | None:
        """Bin shape tuple (``None``: one bin per chunk)."""
        return None if self.bin is None else (self.bin,) * 3

    @property
    def label(self) -> str:
        """Short name used as the result's ``fmt``."""
        b = "" if self.bin is None else f"/b{self.bin:g}"
        c = "" if self.compressor == "default" else f" {self.compressor}"
        return f"zv c{self.chunk:g}{b}{c}"


def zv_version() -> str:
    """Version string of our package."""
    import zarr_vectors

    return str(zarr_vectors.__version__)


def new_workdir(name: str, root: Path = RUNS_ROOT) -> Path:
    """Create and return a fresh ``root/name-YYYYmmdd-HHMMSS[-k]`` directory."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    for k in range(1000):
        path = root / (f"{name}-{stamp}" + (f"-{k}" if k else ""))
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"could not create a run directory under {root}")


def remove_quietly(paths: Sequence[Path]) -> None:
    """Delete stores (outside every timed region)."""
    for p in paths:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        elif p.exists():
            p.unlink()


def median_time(
    fn: Callable[[], T], repeat: int, cpu: list[float] | None = None
) -> tuple[float, T]:
    """Run ``fn`` ``repeat`` times; return (median seconds, last result); CPU as in time_each.

    Only the latest result is kept (as the upstream runner's ``time_median`` does): keeping
    every repeat's result would make each later call fill fresh memory, which on some
    machines costs more than the read itself.
    """
    times: list[float] = []
    result: T | None = None
    for _ in range(max(1, repeat)):
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return statistics.median(times), result  # type: ignore[return-value]


def time_each(
    fns: Sequence[Callable[[], T]], cpu: list[float] | None = None
) -> tuple[list[float], list[T]]:
    """Time each callable once (GC collected, not timed); return wall times and results.

    If ``cpu`` is given, the process CPU time (all threads) of each call is appended to it:
    on a shared, overloaded machine it estimates what the wall time would be when idle.
    """
    times: list[float] = []
    results: list[T] = []
    for fn in fns:
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        results.append(fn())
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return times, results


def time_writes(
    write: Callable[[Path], T],
    workdir: Path,
    stem: str,
    repeat: int,
    cpu: list[float] | None = None,
) -> tuple[list[float], list[Path], T]:
    """Write ``repeat`` times, each into a fresh ``workdir/stem-k.zv`` (no deletion timed).

    Returns
    -------
    tuple
        Per-repeat seconds, the store paths (last one is the one to read), last result.
    """
    times: list[float] = []
    paths: list[Path] = []
    result: T | None = None
    for k in range(max(1, repeat)):
        path = workdir / f"{stem}-w{k}.zv"
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        result = write(path)
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
        paths.append(path)
    assert result is not None
    return times, paths, result


def time_rewrites(
    write: Callable[[Path], T], path: Path, repeat: int, cpu: list[float] | None = None
) -> list[float]:
    """Delete the store at ``path`` (untimed), then time writing it again; ``repeat`` times.

    Overwriting a store is the common case (re-running a pipeline) and the hardest for the
    disk: on ext4 the new files are created right after the old ones were deleted.
    """
    times: list[float] = []
    for _ in range(max(1, repeat)):
        remove_quietly([path])
        gc.collect()
        c0 = time.process_time()
        t0 = time.perf_counter()
        write(path)
        times.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return times


def half_open_mask(pos: Arr, box: BBox) -> npt.NDArray[np.bool_]:
    """Rows with ``min <= p < max`` on every axis (our bbox semantics)."""
    lo, hi = box
    return np.asarray(np.all((pos >= lo) & (pos < hi), axis=1), dtype=np.bool_)


def streamline_hits(pos: Arr, offsets: npt.NDArray[np.int64], box: BBox) -> npt.NDArray[np.int64]:
    """Ids of streamlines with at least one vertex in the half-open ``box``."""
    inside = half_open_mask(pos, box).view(np.uint8)
    hit = np.maximum.reduceat(inside, offsets[:-1]) if len(offsets) > 1 else inside[:0]
    return np.flatnonzero(hit).astype(np.int64)


def calibrated_boxes(
    pos: Arr,
    n_boxes: int,
    target: float,
    rng: np.random.Generator,
    offsets: npt.NDArray[np.int64] | None = None,
) -> list[BBox]:
    """Boxes centred on random vertices holding about ``target`` of the points (or objects).

    Each box has the aspect ratio of the data's bounding box (it is a
    :func:`~benchmarks.datasets.bbox_fraction` box around the centre); its size is chosen
    exactly: with ``d`` = per-vertex Chebyshev distance to the centre in units of the half
    extent, a scale halfway between the ``k``-th and ``(k+1)``-th smallest ``d``
    (``k = target * n``; per object: the minimum over its vertices) gives a box holding ``k``
    points (hitting ``k`` objects) with no vertex on its faces.

    Parameters
    ----------
    pos : ndarray, shape (N, 3)
        Vertices.
    n_boxes : int
        Number of boxes.
    target : float
        Fraction of points (``offsets is None``) or of objects to capture.
    rng : numpy.random.Generator
        Source of the centres.
    offsets : ndarray of int64, optional
        CSR offsets of objects (streamlines); calibrate on objects hit.

    Returns
    -------
    list of (min, max)
        Float64 corners.
    """
    lo = pos.min(axis=0).astype(np.float64)
    hi = pos.max(axis=0).astype(np.float64)
    half_ext = np.where(hi > lo, (hi - lo) / 2.0, 1.0).astype(np.float32)
    n_units = pos.shape[0] if offsets is None else offsets.shape[0] - 1
    k = max(1, round(target * n_units))
    boxes: list[BBox] = []
    for idx in rng.integers(0, pos.shape[0], size=n_boxes):
        centre = pos[idx].astype(np.float64)
        d = np.max(np.abs(pos - pos[idx]) / half_ext, axis=1)
        if offsets is not None:
            d = np.minimum.reduceat(d, offsets[:-1])
        # Halfway between the k-th and (k+1)-th distance: no vertex sits on a face.
        kth = np.partition(d, [k - 1, min(k, len(d) - 1)])
        scale = float(kth[k - 1] + kth[min(k, len(d) - 1)]) / 2.0 + 1e-9
        boxes.append(bbox_fraction(pos, scale**3, centre=centre))
    return boxes


def _same_rows(a: Arr, b: Arr) -> bool:
    """Whether two 2-D arrays hold the same multiset of rows."""
    if a.shape != b.shape:
        return False
    if a.shape[0] == 0:
        return True
    return bool(np.array_equal(a[np.lexsort(a.T[::-1])], b[np.lexsort(b.T[::-1])]))


def _make_result(
    *,
    fmt: str,
    task: str,
    n_vertices: int,
    n_objects: int | None,
    timings: dict[str, float | None],
    path: Path,
    checks: dict[str, bool],
    extra: dict[str, float],
    n_chunks: int | None,
    remarks: Sequence[str] = (),
    unsupported: dict[str, str] | None = None,
) -> BenchResult:
    size, count = disk_usage(path)
    failed = [k for k, ok in checks.items() if not ok]
    parts = [f"FAILED {', '.join(failed)}"] if failed else []
    parts.extend(remarks)
    return BenchResult(
        library="zarr-vectors",
        version=zv_version(),
        fmt=fmt,
        task=task,
        n_vertices=n_vertices,
        n_objects=n_objects,
        write_s=timings.get("write_s"),
        read_s=timings.get("read_s"),
        bbox_read_s=timings.get("bbox_read_s"),
        object_read_s=timings.get("object_read_s"),
        size_bytes=size,
        file_count=count,
        correct=bool(checks) and all(checks.values()),
        note="; ".join(parts) if parts else "ok",
        unsupported=tuple(sorted((unsupported or {}).items())),
        checks=tuple(checks.items()),
        extra=tuple(extra.items()),
        n_chunks=n_chunks,
    )


def _spread(
    prefix: str, times: Sequence[float], cpu: Sequence[float] | None = None
) -> dict[str, float]:
    """Median, 10th and 90th percentile of ``times`` (and median CPU) under ``prefix``."""
    arr = np.asarray(times, dtype=np.float64)
    out = {
        f"{prefix}_s": float(np.median(arr)),
        f"{prefix}_p10_s": float(np.percentile(arr, 10)),
        f"{prefix}_p90_s": float(np.percentile(arr, 90)),
    }
    if cpu:
        out[f"{prefix}_cpu_s"] = float(np.median(np.asarray(cpu, dtype=np.float64)))
    return out


def store_stem(config: ZvConfig, prefix: str = "") -> str:
    """File-name stem of a configuration's stores: ``prefix`` + label without blanks/slashes."""
    return prefix + config.label.replace(" ", "-").replace("/", "-")


def write_stores(
    write: Callable[[Path], T], workdir: Path, stem: str, repeat: int, keep_all: bool
) -> tuple[Path, T, dict[str, float | None], dict[str, float]]:
    """:func:`time_writes`, then drop the extra stores (unless ``keep_all``), untimed.

    Returns
    -------
    tuple
        The store to read, the last write's result, ``timings`` (``write_s``) and ``extra``
        (write spread and process CPU).
    """
    w_cpu: list[float] = []
    w_times, paths, summary = time_writes(write, workdir, stem, repeat, w_cpu)
    if not keep_all:
        remove_quietly(paths[:-1])
    extra: dict[str, float] = {
        "write_min_s": min(w_times),
        "write_max_s": max(w_times),
        "write_cpu_s": statistics.median(w_cpu),
        "write_repeat": float(len(w_times)),
    }
    return paths[-1], summary, {"write_s": statistics.median(w_times)}, extra


@dataclass(frozen=True)
class PairedReads:
    """Our read and a peer's, timed alternately round by round (seconds)."""

    ours: tuple[float, ...]
    theirs: tuple[float, ...]

    @property
    def speedups(self) -> npt.NDArray[np.float64]:
        """Peer seconds over ours, per round."""
        return np.asarray(self.theirs) / np.asarray(self.ours)

    def extra(self, prefix: str = "paired") -> dict[str, float]:
        """Medians and the per-round speedup spread, as ``extra`` entries under ``prefix``."""
        speed = self.speedups
        return {
            f"{prefix}_read_s": statistics.median(self.ours),
            f"{prefix}_upstream_read_s": statistics.median(self.theirs),
            f"{prefix}_speedup": float(np.median(speed)),
            f"{prefix}_speedup_min": float(speed.min()),
            f"{prefix}_speedup_max": float(speed.max()),
            f"{prefix}_rounds": float(len(speed)),
        }


def paired_reads(
    ours: Callable[[], object], theirs: Callable[[], float], rounds: int
) -> PairedReads:
    """Time ``ours`` and ``theirs`` alternately, ``rounds`` times each, in alternating order.

    On a shared machine the speed of both moves with the load of the moment; timing them
    side by side, round by round, compares them under the same load, which medians taken
    minutes apart do not.  ``theirs`` does its own timing (another process) and returns
    seconds; ``ours`` is timed here (GC collected first, not timed).
    """
    mine: list[float] = []
    peer: list[float] = []
    for i in range(max(1, rounds)):
        if i % 2:
            peer.append(theirs())
        gc.collect()
        t0 = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - t0)
        if not i % 2:
            peer.append(theirs())
    return PairedReads(tuple(mine), tuple(peer))


def median_time_cpu(fn: Callable[[], T], repeat: int) -> tuple[float, float, T]:
    """:func:`median_time` plus the median process CPU: (wall, CPU, last result)."""
    cpu: list[float] = []
    wall, result = median_time(fn, repeat, cpu)
    return wall, statistics.median(cpu), result


def object_reads(
    ids: npt.NDArray[np.int64],
    read_func: Callable[[int], T],
    read_open: Callable[[int], T],
    check: Callable[[T, npt.NDArray[np.int64]], bool],
) -> tuple[float, dict[str, bool], dict[str, float]]:
    """Time one-object reads, one call per id: functional, then open Reader (warmed once).

    Returns
    -------
    tuple
        ``object_read_s`` (functional median), the checks ``object_read`` /
        ``object_read_open`` and the ``extra`` spreads ``object_func_*`` / ``object_open_*``
        with ``n_object_queries``.
    """
    fo_cpu: list[float] = []
    oo_cpu: list[float] = []
    f_times, f_res = time_each([lambda q=q: read_func(int(q)) for q in ids], fo_cpu)
    read_open(int(ids[0]))  # warm the metadata cache
    o_times, o_res = time_each([lambda q=q: read_open(int(q)) for q in ids], oo_cpu)
    checks = {
        "object_read": all(check(r, np.array([q])) for q, r in zip(ids, f_res, strict=True)),
        "object_read_open": all(check(r, np.array([q])) for q, r in zip(ids, o_res, strict=True)),
    }
    extra = _spread("object_func", f_times, fo_cpu) | _spread("object_open", o_times, oo_cpu)
    extra["n_object_queries"] = float(len(ids))
    return statistics.median(f_times), checks, extra


# ---------------------------------------------------------------------------
# Points
# ---------------------------------------------------------------------------


def bench_zv_points(
    data: PointsData,
    workdir: Path,
    config: ZvConfig,
    central_box: BBox,
    boxes: Sequence[BBox],
    repeat: int = 3,
    write_repeat: int = 5,
    keep_all: bool = False,
) -> BenchResult:
    """Benchmark ``write_points`` / ``read_points`` / ``zv.open(...).read`` on one config.

    Returns
    -------
    BenchResult
        ``bbox_read_s``: functional read on ``central_box``; ``extra`` holds
        ``bbox_central_open_s`` and, over ``boxes`` (one timing per box),
        ``bbox_random_func_s`` / ``bbox_random_open_s`` with p10/p90, plus write spread.
    """
    import zarr_vectors as zv

    pos, a, b = data.positions, data.attr_a, data.attr_b
    attrs = {"attr_a": a, "attr_b": b}
    stem = store_stem(config)

    def write(path: Path) -> Any:
        return zv.write_points(
            str(path),
            pos,
            chunk_shape=config.chunk_shape,
            bin_shape=config.bin_shape,
            attributes=attrs,
            compressor=config.compressor,
        )

    path, summary, timings, extra = write_stores(write, workdir, stem, write_repeat, keep_all)
    store = str(path)
    rw_cpu: list[float] = []
    rw_times = time_rewrites(write, path, write_repeat, rw_cpu)
    extra["rewrite_s"] = statistics.median(rw_times)
    extra["rewrite_cpu_s"] = statistics.median(rw_cpu)

    def rows(res: Any) -> Arr:
        return np.column_stack([res.positions, res.attributes["attr_a"], res.attributes["attr_b"]])

    timings["read_s"], extra["read_cpu_s"], full = median_time_cpu(
        lambda: zv.read_points(store), repeat
    )
    expected = np.column_stack([pos, a, b])
    checks = {"full_read": _same_rows(expected, rows(full))}
    del full

    n_box_rep = max(repeat, 5)
    timings["bbox_read_s"], res = median_time(
        lambda: zv.read_points(store, bbox=central_box), n_box_rep
    )
    mask = half_open_mask(pos, central_box)
    checks["bbox_central"] = _same_rows(expected[mask], rows(res))
    extra["bbox_central_rows"] = float(mask.sum())

    reader = zv.open(store)
    reader.read(bbox=central_box)  # warm the metadata cache
    t_open, res = median_time(lambda: reader.read(bbox=central_box), n_box_rep)
    extra["bbox_central_open_s"] = t_open
    checks["bbox_central_open"] = _same_rows(expected[mask], rows(res))

    f_cpu: list[float] = []
    o_cpu: list[float] = []
    f_times, f_res = time_each(
        [lambda bx=bx: zv.read_points(store, bbox=bx) for bx in boxes], f_cpu
    )
    o_times, o_res = time_each([lambda bx=bx: reader.read(bbox=bx) for bx in boxes], o_cpu)
    ok_f = ok_o = True
    counts = []
    for bx, rf, ro in zip(boxes, f_res, o_res, strict=True):
        m = half_open_mask(pos, bx)
        counts.append(int(m.sum()))
        ok_f = ok_f and _same_rows(expected[m], rows(rf))
        ok_o = ok_o and _same_rows(expected[m], rows(ro))
    checks["bbox_random"] = ok_f
    checks["bbox_random_open"] = ok_o
    extra.update(_spread("bbox_random_func", f_times, f_cpu))
    extra.update(_spread("bbox_random_open", o_times, o_cpu))
    extra["n_boxes"] = float(len(boxes))
    extra["bbox_random_rows_mean"] = float(np.mean(counts)) if counts else 0.0
    extra["bbox_random_frac_mean"] = float(np.mean(counts)) / max(1, len(pos)) if counts else 0.0
    reader.close()
    return _make_result(
        fmt=config.label,
        task="points",
        n_vertices=data.n_vertices,
        n_objects=None,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        extra=extra,
        n_chunks=int(summary.chunk_count),
        unsupported={"object_read_s": "point cloud has no objects"},
    )


# ---------------------------------------------------------------------------
# Streamlines
# ---------------------------------------------------------------------------


def _gather_rows(offsets: npt.NDArray[np.int64], ids: npt.NDArray[np.int64]) -> Arr:
    """Vertex rows of objects ``ids`` (in that order), vectorised."""
    starts, ends = offsets[ids], offsets[ids + 1]
    lengths = ends - starts
    if lengths.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    base = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return base + np.arange(int(lengths.sum()), dtype=np.int64)


def _check_paths(data: StreamlinesData, res: Any, ids: npt.NDArray[np.int64]) -> bool:
    """Whether ``res`` holds exactly streamlines ``ids`` (in order), whole, with ``attr``."""
    if not np.array_equal(np.asarray(res.object_ids), ids):
        return False
    rows = _gather_rows(data.offsets, ids)
    exp_off = np.concatenate([[0], np.cumsum(np.diff(data.offsets)[ids])])
    return bool(
        np.array_equal(res.offsets, exp_off)
        and np.array_equal(res.positions, data.positions[rows])
        and np.array_equal(res.attributes["attr"], data.attr[rows])
    )


def bench_zv_streamlines(
    data: StreamlinesData,
    workdir: Path,
    config: ZvConfig,
    central_box: BBox,
    boxes: Sequence[BBox],
    object_ids: npt.NDArray[np.int64],
    repeat: int = 3,
    write_repeat: int = 3,
    keep_all: bool = False,
) -> BenchResult:
    """Benchmark ``write_streamlines`` / ``read_streamlines`` / ``zv.open(...).read``.

    Returns
    -------
    BenchResult
        ``object_read_s``: functional ``read_streamlines(store, object_ids=[q])``, median
        over ``object_ids`` (one call each); ``bbox_read_s``: functional read of
        ``central_box``.  ``extra``: ``object_open_s`` (open Reader), ``bbox_central_open_s``,
        random-box ``bbox_random_func_s`` / ``bbox_random_open_s`` (+ p10/p90), write spread.
    """
    import zarr_vectors as zv

    stem = store_stem(config)
    n = data.n_objects

    def write(path: Path) -> Any:
        return zv.write_streamlines(
            str(path),
            data.positions,
            offsets=data.offsets,
            chunk_shape=config.chunk_shape,
            bin_shape=config.bin_shape,
            attributes={"attr": data.attr},
            compressor=config.compressor,
        )

    path, summary, timings, extra = write_stores(write, workdir, stem, write_repeat, keep_all)
    store = str(path)

    timings["read_s"], extra["read_cpu_s"], full = median_time_cpu(
        lambda: zv.read_streamlines(store), repeat
    )
    checks = {"full_read": _check_paths(data, full, np.arange(n, dtype=np.int64))}
    del full

    ids = np.asarray(object_ids, dtype=np.int64)
    reader = zv.open(store)
    timings["object_read_s"], obj_checks, obj_extra = object_reads(
        ids,
        lambda q: zv.read_streamlines(store, object_ids=[q]),
        lambda q: reader.read(object_ids=[q]),
        lambda res, want: _check_paths(data, res, want),
    )
    checks.update(obj_checks)
    extra.update(obj_extra)

    n_box_rep = max(repeat, 5)
    timings["bbox_read_s"], res = median_time(
        lambda: zv.read_streamlines(store, bbox=central_box), n_box_rep
    )
    hits = streamline_hits(data.positions, data.offsets, central_box)
    checks["bbox_central"] = _check_paths(data, res, hits)
    extra["bbox_central_hits"] = float(len(hits))
    t_open, res = median_time(lambda: reader.read(bbox=central_box), n_box_rep)
    extra["bbox_central_open_s"] = t_open
    checks["bbox_central_open"] = _check_paths(data, res, hits)
    del res

    f_cpu: list[float] = []
    o_cpu: list[float] = []
    f_times, f_res = time_each(
        [lambda bx=bx: zv.read_streamlines(store, bbox=bx) for bx in boxes], f_cpu
    )
    o_times, o_res = time_each([lambda bx=bx: reader.read(bbox=bx) for bx in boxes], o_cpu)
    ok_f = ok_o = True
    counts = []
    for bx, rf, ro in zip(boxes, f_res, o_res, strict=True):
        h = streamline_hits(data.positions, data.offsets, bx)
        counts.append(len(h))
        ok_f = ok_f and _check_paths(data, rf, h)
        ok_o = ok_o and _check_paths(data, ro, h)
    checks["bbox_random"] = ok_f
    checks["bbox_random_open"] = ok_o
    extra.update(_spread("bbox_random_func", f_times, f_cpu))
    extra.update(_spread("bbox_random_open", o_times, o_cpu))
    extra["n_boxes"] = float(len(boxes))
    extra["bbox_random_hits_mean"] = float(np.mean(counts)) if counts else 0.0
    extra["bbox_random_frac_mean"] = float(np.mean(counts)) / max(1, n) if counts else 0.0
    reader.close()
    return _make_result(
        fmt=config.label,
        task="streamlines",
        n_vertices=data.n_vertices,
        n_objects=n,
        timings=timings,
        path=path,
        checks=checks,
        extra=extra,
        n_chunks=int(summary.chunk_count),
    )


# ---------------------------------------------------------------------------
# Command line and upstream plumbing shared by the bench scripts
# ---------------------------------------------------------------------------


def add_common_args(
    parser: Any, *, n: int, repeat: int, upstream_repeat: int | None = None
) -> None:
    """Add ``--n --repeat --workdir --upstream/--no-upstream --upstream-repeat --json --keep``."""
    import argparse

    parser.add_argument("--n", type=int, default=n, help=f"data size (default {n:,})")
    parser.add_argument(
        "--repeat", type=int, default=repeat, help=f"timing repeats, median (default {repeat})"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help=f"scratch directory (default: a fresh directory under {RUNS_ROOT})",
    )
    parser.add_argument(
        "--upstream",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run upstream zarr-vectors 0.2.0 from its venv (default: yes)",
    )
    parser.add_argument(
        "--upstream-repeat",
        type=int,
        default=upstream_repeat,
        help="repeats for the (slow) upstream run (default: --repeat)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write JSON here")
    parser.add_argument(
        "--keep", action="store_true", help="keep every written store (default: delete extras)"
    )


def prepare_workdir(args: Any, name: str) -> Path:
    """``--workdir`` (created if missing) or a fresh run directory ``name-<stamp>``."""
    work: Path = args.workdir or new_workdir(name)
    work.mkdir(parents=True, exist_ok=True)
    return work


def sample_ids(rng: np.random.Generator, n_objects: int, k: int) -> npt.NDArray[np.int64]:
    """``min(k, n_objects)`` distinct random object ids, sorted."""
    return np.sort(rng.choice(n_objects, size=min(k, n_objects), replace=False))


def run_upstream_task(
    data: TaskData,
    work: Path,
    config: ZvConfig,
    box: BBox,
    repeat: int,
    *,
    task: str | None = None,
    query_object: int | None = None,
    write_repeat: int | None = None,
    skipped: str = "upstream skipped",
    prepare: Callable[[Path], None] | None = None,
    keep: bool = False,
) -> BenchResult | str:
    """Upstream 0.2.0 on the same data, chunk and bin shape; ``"<skipped>: reason"`` on failure.

    The input goes to ``work/<task>.npz`` (``task`` defaults to the data set's), which
    ``prepare`` may amend, and is deleted afterwards.  ``keep`` keeps upstream's store for
    :class:`~benchmarks.peers.UpstreamReads`.
    """
    task = task or data.task
    npz = save_task_npz(
        work / f"{task}.npz",
        data,
        chunk_shape=config.chunk_shape,
        bin_shape=config.bin_shape,
        bbox_min=box[0],
        bbox_max=box[1],
        query_object=query_object,
    )
    if prepare is not None:
        prepare(npz)
    try:
        return peers.run_upstream(task, npz, work, repeat, write_repeat=write_repeat, keep=keep)
    except (peers.UpstreamVenvMissingError, RuntimeError) as exc:
        return f"{skipped}: {exc}"
    finally:
        npz.unlink(missing_ok=True)


def keep_upstream(
    up: BenchResult | str, results: list[BenchResult], notes: list[str]
) -> BenchResult | None:
    """Append an upstream result to ``results`` (or its skip reason to ``notes``); return it."""
    if isinstance(up, str):
        notes.append(up)
        return None
    results.append(up)
    return up
