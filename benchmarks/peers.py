"""Peer-format benchmarks, timed the same way as the ``zarr_vectors`` benchmarks.

Runs in the project interpreter.  Peers:

* points: Parquet via pyarrow (zstd; numpy-filter and filter-pushdown bbox
  reads), raw ``.npy`` (``np.save`` / ``np.load``), LAZ via laspy (lazrs).
* streamlines: TRX via trx-python (zip, deflate or stored; Python's zipfile
  has no zstd before 3.14) and TCK via nibabel.
* meshes: binary PLY via trimesh.
* upstream ``zarr-vectors==0.2.0`` in its own venv, through
  ``benchmarks/upstream/runner.py`` (see :func:`run_upstream`).

Every function returns a frozen :class:`BenchResult`.  Timings are medians over
``repeat`` runs (writes go to a fresh file each time); ``None`` means the
operation is not possible for that format, with the reason in ``unsupported``.

Smoke run (small sizes, all peers plus upstream)::

    python -m benchmarks.peers --small
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from importlib import metadata
from pathlib import Path
from typing import Any, Self, TypeVar

import numpy as np
import numpy.typing as npt

from benchmarks.datasets import MeshData, PointsData, StreamlinesData

T = TypeVar("T")
Arr = npt.NDArray[Any]
BBox = tuple[npt.NDArray[np.floating], npt.NDArray[np.floating]]

UPSTREAM_VENV_ENV = "ZV_UPSTREAM_VENV"
DEFAULT_UPSTREAM_VENV = Path("/tmp/zv-upstream-venv")
RUNNER = Path(__file__).resolve().parent / "upstream" / "runner.py"
SETUP_SCRIPT = Path(__file__).resolve().parent / "upstream" / "setup_venv.sh"

__all__ = [
    "BenchResult",
    "UpstreamReads",
    "UpstreamVenvMissingError",
    "bench_laz_points",
    "bench_npy_points",
    "bench_parquet_points",
    "bench_ply_mesh",
    "bench_tck_streamlines",
    "bench_trx_streamlines",
    "run_upstream",
    "upstream_python",
]


# ---------------------------------------------------------------------------
# Result type and helpers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchResult:
    """Timings, size and correctness of one library/format on one task.

    Attributes
    ----------
    library : str
        Library that did the I/O (``"pyarrow"``, ``"zarr-vectors"`` ...).
    version : str
        Version of ``library``.
    fmt : str
        Storage format / variant (``"parquet-zstd"``, ``"zv-upstream"`` ...).
    task : str
        ``points``, ``streamlines``, ``skeletons``, ``graph`` or ``mesh``.
    n_vertices : int
        Number of vertices (points, nodes) in the data set.
    n_objects : int or None
        Number of objects (streamlines, trees, meshes) if meaningful.
    write_s, read_s, bbox_read_s, object_read_s : float or None
        Median seconds for write, full read, bounding-box read and
        single-object read; ``None`` if unsupported (see ``unsupported``).
    size_bytes : int
        Bytes on disk (recursive for directory stores).
    file_count : int
        Number of files on disk.
    correct : bool
        Whether every check in ``checks`` passed.
    note : str
        Short human-readable remark (failures, lossy encodings ...).
    unsupported : tuple of (str, str)
        ``(timing field, reason)`` for every ``None`` timing.
    checks : tuple of (str, bool)
        Individual correctness checks.
    extra : tuple of (str, float)
        Additional measurements (variant timings, counts).
    n_chunks : int or None
        Number of spatial chunks, for chunked stores.
    """

    library: str
    version: str
    fmt: str
    task: str
    n_vertices: int
    n_objects: int | None
    write_s: float | None
    read_s: float | None
    bbox_read_s: float | None
    object_read_s: float | None
    size_bytes: int
    file_count: int
    correct: bool
    note: str
    unsupported: tuple[tuple[str, str], ...] = ()
    checks: tuple[tuple[str, bool], ...] = ()
    extra: tuple[tuple[str, float], ...] = ()
    n_chunks: int | None = None

    def get_extra(self, name: str) -> float | None:
        """Return the extra measurement ``name`` or ``None``."""
        return next((v for k, v in self.extra if k == name), None)

    def summary(self) -> str:
        """One-line human-readable summary."""

        def fmt(v: float | None) -> str:
            return "   n/a " if v is None else f"{v:7.3f}"

        return (
            f"{self.task:11s} {self.fmt:22s} W {fmt(self.write_s)} R {fmt(self.read_s)} "
            f"B {fmt(self.bbox_read_s)} O {fmt(self.object_read_s)} "
            f"{self.size_bytes / 1e6:9.2f} MB {self.file_count:6d} files "
            f"{'OK ' if self.correct else 'BAD'} {self.note}"
        )


class UpstreamVenvMissingError(RuntimeError):
    """The isolated venv with upstream ``zarr-vectors`` has not been created."""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def _median_time(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Run ``fn`` ``repeat`` times; return (median seconds, last result)."""
    times: list[float] = []
    result: T | None = None
    for _ in range(max(1, repeat)):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result  # type: ignore[return-value]


def _time_write(write: Callable[[], object], target: Path, repeat: int) -> float:
    """Time ``write`` into a fresh ``target`` each repeat (removal not timed)."""

    def fresh() -> None:
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()

    times: list[float] = []
    for _ in range(max(1, repeat)):
        fresh()
        gc.collect()
        t0 = time.perf_counter()
        write()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def disk_usage(path: Path) -> tuple[int, int]:
    """Return (bytes, file count) of a file or, recursively, a directory.

    Parameters
    ----------
    path : Path
        File or directory.

    Returns
    -------
    tuple of int
        Total size in bytes and number of files.
    """
    if path.is_file():
        return path.stat().st_size, 1
    total = count = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
            count += 1
    return total, count


def _in_bbox(pos: Arr, bbox: BBox) -> npt.NDArray[np.bool_]:
    lo, hi = bbox
    return np.asarray(np.all((pos >= lo) & (pos <= hi), axis=1), dtype=np.bool_)


def _note(checks: dict[str, bool], remarks: Sequence[str]) -> str:
    failed = [k for k, ok in checks.items() if not ok]
    parts = [f"FAILED {', '.join(failed)}"] if failed else []
    parts.extend(remarks)
    return "; ".join(parts) if parts else "ok"


def _result(
    *,
    library: str,
    fmt: str,
    task: str,
    n_vertices: int,
    n_objects: int | None,
    timings: dict[str, float | None],
    path: Path,
    checks: dict[str, bool],
    remarks: Sequence[str] = (),
    unsupported: dict[str, str] | None = None,
    extra: dict[str, float] | None = None,
) -> BenchResult:
    size, count = disk_usage(path)
    return BenchResult(
        library=library,
        version=_version(library),
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
        note=_note(checks, remarks),
        unsupported=tuple(sorted((unsupported or {}).items())),
        checks=tuple(checks.items()),
        extra=tuple((extra or {}).items()),
    )


def _morton_order(pos: npt.NDArray[np.floating], cells_per_axis: int = 64) -> npt.NDArray[np.intp]:
    """Row order along a Z-curve over a ``cells_per_axis``^3 grid."""
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    cells = np.minimum(((pos - lo) / span * cells_per_axis).astype(np.uint64), cells_per_axis - 1)
    key = np.zeros(pos.shape[0], dtype=np.uint64)
    for b in range(int(math.log2(cells_per_axis)) + 1):
        for axis in range(3):
            key |= ((cells[:, axis] >> np.uint64(b)) & np.uint64(1)) << np.uint64(3 * b + axis)
    return np.argsort(key, kind="stable")


# ---------------------------------------------------------------------------
# Points
# ---------------------------------------------------------------------------


def bench_parquet_points(
    data: PointsData,
    workdir: str | Path,
    bbox: BBox,
    repeat: int = 3,
    *,
    compression: str = "zstd",
    sort_rows: bool = False,
    row_group_size: int | None = None,
) -> BenchResult:
    """Benchmark a point table in Parquet (columns x, y, z, attr_a, attr_b).

    Parameters
    ----------
    data : PointsData
        Points with two attributes.
    workdir : str or Path
        Scratch directory.
    bbox : tuple of ndarray
        Inclusive ``(min, max)`` corners for the box query.
    repeat : int, optional
        Timing repeats (median).
    compression : str, optional
        Parquet codec.
    sort_rows : bool, optional
        Sort rows along a Z-curve before writing (sorting is timed as part
        of the write) so row-group statistics can prune the pushdown query.
    row_group_size : int, optional
        Rows per row group (pyarrow default when ``None``; 65 536 is used
        when ``sort_rows`` is set and this is ``None``).

    Returns
    -------
    BenchResult
        ``bbox_read_s`` is read-all + NumPy mask; the pyarrow ``filters=``
        pushdown variant is in ``extra`` as ``bbox_read_pushdown_s``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    variant = f"parquet-{compression}" + ("-zsorted" if sort_rows else "")
    path = work / f"{variant}.parquet"
    rgs = row_group_size if row_group_size is not None else (65_536 if sort_rows else None)
    pos, a, b = data.positions, data.attr_a, data.attr_b

    def write() -> None:
        order = _morton_order(pos) if sort_rows else slice(None)
        p = pos[order]
        table = pa.table(
            {"x": p[:, 0], "y": p[:, 1], "z": p[:, 2], "attr_a": a[order], "attr_b": b[order]}
        )
        pq.write_table(table, path, compression=compression, row_group_size=rgs)

    def read_arrays(filters: list[tuple[str, str, float]] | None = None) -> Arr:
        table = pq.read_table(path, filters=filters)
        cols = [table.column(c).to_numpy() for c in ("x", "y", "z", "attr_a", "attr_b")]
        return np.column_stack(cols)

    def bbox_numpy() -> Arr:
        rows = read_arrays()
        return rows[_in_bbox(rows[:, :3], bbox)]

    lo, hi = bbox
    filters = [
        (c, op, float(v)) for i, c in enumerate("xyz") for op, v in ((">=", lo[i]), ("<=", hi[i]))
    ]

    timings: dict[str, float | None] = {"write_s": _time_write(write, path, repeat)}
    timings["read_s"], full = _median_time(read_arrays, repeat)
    timings["bbox_read_s"], sub = _median_time(bbox_numpy, repeat)
    t_push, sub_push = _median_time(lambda: read_arrays(filters), repeat)
    expected = np.column_stack([pos, a, b])
    mask = _in_bbox(pos, bbox)
    checks = {
        "full_read": _same_rows(expected, full),
        "bbox_read": _same_rows(expected[mask], sub),
        "bbox_read_pushdown": _same_rows(expected[mask], sub_push),
    }
    return _result(
        library="pyarrow",
        fmt=variant,
        task="points",
        n_vertices=data.n_vertices,
        n_objects=None,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        unsupported={"object_read_s": "point cloud has no objects"},
        extra={"bbox_read_pushdown_s": t_push, "bbox_rows": float(mask.sum())},
    )


def _same_rows(a: Arr, b: Arr) -> bool:
    """Whether two 2-D arrays hold the same multiset of rows."""
    if a.shape != b.shape:
        return False
    if a.shape[0] == 0:
        return True
    return bool(np.array_equal(a[np.lexsort(a.T[::-1])], b[np.lexsort(b.T[::-1])]))


def bench_npy_points(
    data: PointsData, workdir: str | Path, bbox: BBox, repeat: int = 3
) -> BenchResult:
    """Benchmark raw ``.npy`` files (positions, attr_a, attr_b) in one directory.

    Parameters
    ----------
    data : PointsData
        Points with two attributes.
    workdir : str or Path
        Scratch directory.
    bbox : tuple of ndarray
        Inclusive ``(min, max)`` corners for the box query.
    repeat : int, optional
        Timing repeats (median).

    Returns
    -------
    BenchResult
        The bbox read is a full load plus a NumPy mask (no index).
    """
    path = Path(workdir) / "points-npy"
    names = ("positions", "attr_a", "attr_b")

    def write() -> None:
        path.mkdir(parents=True)
        for name in names:
            np.save(path / f"{name}.npy", getattr(data, name))

    def read() -> tuple[Arr, ...]:
        return tuple(np.load(path / f"{name}.npy") for name in names)

    def bbox_read() -> tuple[Arr, ...]:
        arrays = read()
        mask = _in_bbox(arrays[0], bbox)
        return tuple(x[mask] for x in arrays)

    timings: dict[str, float | None] = {"write_s": _time_write(write, path, repeat)}
    timings["read_s"], full = _median_time(read, repeat)
    timings["bbox_read_s"], sub = _median_time(bbox_read, repeat)
    mask = _in_bbox(data.positions, bbox)
    checks = {
        "full_read": all(
            np.array_equal(x, getattr(data, n)) for x, n in zip(full, names, strict=True)
        ),
        "bbox_read": all(
            np.array_equal(x, getattr(data, n)[mask]) for x, n in zip(sub, names, strict=True)
        ),
    }
    return _result(
        library="numpy",
        fmt="npy",
        task="points",
        n_vertices=data.n_vertices,
        n_objects=None,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        unsupported={"object_read_s": "point cloud has no objects"},
    )


def bench_laz_points(
    data: PointsData,
    workdir: str | Path,
    bbox: BBox,
    repeat: int = 3,
    *,
    scale: float = 1e-3,
) -> BenchResult:
    """Benchmark LAZ 1.4 (point format 6, lazrs backend, two float32 extra bytes).

    Parameters
    ----------
    data : PointsData
        Points with two attributes.
    workdir : str or Path
        Scratch directory.
    bbox : tuple of ndarray
        Inclusive ``(min, max)`` corners for the box query.
    repeat : int, optional
        Timing repeats (median).
    scale : float, optional
        Coordinate quantisation step (LAS stores scaled int32 coordinates).

    Returns
    -------
    BenchResult
        Coordinates are lossy (quantised to ``scale``); the check allows
        ``scale / 2`` plus float32 rounding.  The bbox read is a full
        decompress plus mask (no COPC/LAX index).
    """
    import laspy

    path = Path(workdir) / "points.laz"
    path.parent.mkdir(parents=True, exist_ok=True)
    pos = data.positions
    backend = laspy.LazBackend.LazrsParallel
    if backend not in laspy.LazBackend.detect_available():
        backend = laspy.LazBackend.Lazrs

    def write() -> None:
        header = laspy.LasHeader(point_format=6, version="1.4")
        header.offsets = np.floor(pos.min(axis=0)).astype(np.float64)
        header.scales = np.full(3, scale)
        header.add_extra_dims(
            [
                laspy.ExtraBytesParams(name="attr_a", type=np.float32),
                laspy.ExtraBytesParams(name="attr_b", type=np.float32),
            ]
        )
        las = laspy.LasData(header)
        las.x, las.y, las.z = pos[:, 0], pos[:, 1], pos[:, 2]
        las.attr_a = data.attr_a
        las.attr_b = data.attr_b
        las.write(str(path), laz_backend=backend)

    def read() -> Arr:
        las = laspy.read(str(path), laz_backend=backend)
        return np.column_stack(
            [np.asarray(las.x), np.asarray(las.y), np.asarray(las.z), las.attr_a, las.attr_b]
        )

    def bbox_read() -> Arr:
        rows = read()
        return rows[_in_bbox(rows[:, :3], bbox)]

    timings: dict[str, float | None] = {"write_s": _time_write(write, path, repeat)}
    timings["read_s"], full = _median_time(read, repeat)
    timings["bbox_read_s"], sub = _median_time(bbox_read, repeat)
    tol = scale / 2 + float(np.abs(pos).max()) * float(np.finfo(np.float32).eps)
    err = float(np.abs(full[:, :3] - pos).max()) if len(pos) else 0.0
    attrs_ok = np.array_equal(full[:, 3], data.attr_a) and np.array_equal(full[:, 4], data.attr_b)
    mask = _in_bbox(pos, bbox)
    checks = {
        "full_read": bool(full.shape[0] == len(pos) and err <= tol and attrs_ok),
        # Quantisation can move points across the box faces; allow that slack.
        "bbox_read": abs(int(sub.shape[0]) - int(mask.sum())) <= max(3, int(mask.sum()) // 1000),
    }
    return _result(
        library="laspy",
        fmt="laz-lazrs",
        task="points",
        n_vertices=data.n_vertices,
        n_objects=None,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        remarks=[f"lossy: coordinates quantised to {scale:g} (max err {err:.2g})"],
        unsupported={"object_read_s": "point cloud has no objects"},
        extra={"max_abs_coord_error": err},
    )


# ---------------------------------------------------------------------------
# Streamlines
# ---------------------------------------------------------------------------


def _array_sequence(data: Arr, offsets: npt.NDArray[np.int64]) -> object:
    """Build a nibabel ``ArraySequence`` without copying per streamline."""
    from nibabel.streamlines.array_sequence import ArraySequence

    seq = ArraySequence()
    seq._data = data
    seq._offsets = offsets[:-1].copy()
    seq._lengths = np.diff(offsets)
    return seq


def _streamlines_hit(data: StreamlinesData, bbox: BBox) -> npt.NDArray[np.int64]:
    """Ids of streamlines with at least one vertex inside ``bbox``."""
    seg = np.repeat(np.arange(data.n_objects), np.diff(data.offsets))
    return np.unique(seg[_in_bbox(data.positions, bbox)])


def _hits_from_arrays(
    pos: Arr, offsets: npt.NDArray[np.int64], bbox: BBox
) -> npt.NDArray[np.int64]:
    seg = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    return np.unique(seg[_in_bbox(pos, bbox)])


def bench_trx_streamlines(
    data: StreamlinesData,
    workdir: str | Path,
    bbox: BBox,
    repeat: int = 3,
    *,
    compressed: bool = True,
    query_object: int | None = None,
) -> BenchResult:
    """Benchmark TRX (trx-python) with positions, offsets and a per-vertex attribute.

    Parameters
    ----------
    data : StreamlinesData
        Streamlines with one per-vertex attribute (stored as ``dpv/attr``).
    workdir : str or Path
        Scratch directory.
    bbox : tuple of ndarray
        Inclusive ``(min, max)`` corners; the query returns the ids of
        streamlines having a vertex in the box (load + vectorised mask).
    repeat : int, optional
        Timing repeats (median).
    compressed : bool, optional
        ``True``: zip with ``ZIP_DEFLATED`` (trx-python only supports
        :mod:`zipfile` codecs; no zstd on Python < 3.14).  ``False``:
        ``ZIP_STORED``, which trx-python memory-maps on load.
    query_object : int, optional
        Streamline id for the single-object read (default: middle one).

    Returns
    -------
    BenchResult
        Full read materialises positions, offsets and the attribute in RAM.
    """
    from nibabel.streamlines.tractogram import Tractogram
    from trx.trx_file_memmap import TrxFile, load, save

    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    fmt = "trx-deflate" if compressed else "trx-stored"
    path = work / f"streamlines-{fmt}.trx"
    codec = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    q = data.n_objects // 2 if query_object is None else query_object

    def write() -> None:
        tractogram = Tractogram(
            _array_sequence(data.positions, data.offsets),
            data_per_point={"attr": _array_sequence(data.attr[:, None], data.offsets)},
            affine_to_rasmm=np.eye(4),
        )
        ref = {
            "NB_VERTICES": data.n_vertices,
            "VOXEL_TO_RASMM": np.eye(4, dtype=np.float32),
            "DIMENSIONS": np.array([256, 256, 256], dtype=np.uint16),
        }
        trx = TrxFile.from_tractogram(tractogram, reference=ref)
        try:
            save(trx, str(path), compression_standard=codec)
        finally:
            trx.close()

    def read() -> tuple[Arr, Arr, Arr]:
        trx = load(str(path))
        try:
            pos = np.array(trx.streamlines._data)
            off = np.append(np.asarray(trx.streamlines._offsets, dtype=np.int64), len(pos))
            attr = np.array(trx.data_per_vertex["attr"]._data).reshape(-1)
        finally:
            trx.close()
        return pos, off, attr

    def read_one() -> tuple[Arr, Arr]:
        trx = load(str(path))
        try:
            return np.array(trx.streamlines[q]), np.array(trx.data_per_vertex["attr"][q]).ravel()
        finally:
            trx.close()

    def bbox_read() -> npt.NDArray[np.int64]:
        trx = load(str(path))
        try:
            pos = np.asarray(trx.streamlines._data)
            off = np.append(np.asarray(trx.streamlines._offsets, dtype=np.int64), len(pos))
            return _hits_from_arrays(pos, off, bbox)
        finally:
            trx.close()

    timings: dict[str, float | None] = {"write_s": _time_write(write, path, repeat)}
    timings["read_s"], (pos, off, attr) = _median_time(read, repeat)
    timings["object_read_s"], (one, one_attr) = _median_time(read_one, repeat)
    timings["bbox_read_s"], hits = _median_time(bbox_read, repeat)
    s, e = int(data.offsets[q]), int(data.offsets[q + 1])
    checks = {
        "full_read": bool(
            np.array_equal(pos, data.positions)
            and np.array_equal(off, data.offsets)
            and np.array_equal(attr, data.attr)
        ),
        "object_read": bool(
            np.array_equal(one, data.positions[s:e]) and np.array_equal(one_attr, data.attr[s:e])
        ),
        "bbox_read": bool(np.array_equal(hits, _streamlines_hit(data, bbox))),
    }
    return _result(
        library="trx-python",
        fmt=fmt,
        task="streamlines",
        n_vertices=data.n_vertices,
        n_objects=data.n_objects,
        timings=timings,
        path=path,
        checks=checks,
        remarks=["bbox = load + scan (no spatial index)"],
        extra={"bbox_hits": float(len(hits))},
    )


def bench_tck_streamlines(
    data: StreamlinesData, workdir: str | Path, bbox: BBox, repeat: int = 3
) -> BenchResult:
    """Benchmark MRtrix TCK via nibabel (positions only; TCK has no vertex data).

    Parameters
    ----------
    data : StreamlinesData
        Streamlines; the attribute is *not* stored (TCK cannot hold it).
    workdir : str or Path
        Scratch directory.
    bbox : tuple of ndarray
        Inclusive ``(min, max)`` corners; query returns hit streamline ids.
    repeat : int, optional
        Timing repeats (median).

    Returns
    -------
    BenchResult
        ``object_read_s`` is ``None``: TCK has no offsets table, so a single
        streamline needs a sequential scan of the file.
    """
    import nibabel as nib
    from nibabel.streamlines.tractogram import Tractogram

    path = Path(workdir) / "streamlines.tck"
    path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        tractogram = Tractogram(
            _array_sequence(data.positions, data.offsets), affine_to_rasmm=np.eye(4)
        )
        nib.streamlines.save(tractogram, str(path))

    def read() -> tuple[Arr, Arr]:
        seq = nib.streamlines.load(str(path)).streamlines
        off = np.append(np.asarray(seq._offsets, dtype=np.int64), len(seq._data))
        return np.asarray(seq._data), off

    def bbox_read() -> npt.NDArray[np.int64]:
        pos, off = read()
        return _hits_from_arrays(pos, off, bbox)

    timings: dict[str, float | None] = {"write_s": _time_write(write, path, repeat)}
    timings["read_s"], (pos, off) = _median_time(read, repeat)
    timings["bbox_read_s"], hits = _median_time(bbox_read, repeat)
    checks = {
        "full_read_positions": bool(
            np.array_equal(pos, data.positions) and np.array_equal(off, data.offsets)
        ),
        "bbox_read": bool(np.array_equal(hits, _streamlines_hit(data, bbox))),
    }
    return _result(
        library="nibabel",
        fmt="tck",
        task="streamlines",
        n_vertices=data.n_vertices,
        n_objects=data.n_objects,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        remarks=["per-vertex attribute not storable in TCK (dropped)"],
        unsupported={"object_read_s": "TCK has no streamline index (sequential scan only)"},
        extra={"bbox_hits": float(len(hits))},
    )


# ---------------------------------------------------------------------------
# Meshes
# ---------------------------------------------------------------------------


def bench_ply_mesh(data: MeshData, workdir: str | Path, bbox: BBox, repeat: int = 3) -> BenchResult:
    """Benchmark one binary PLY (trimesh) holding all meshes of the set.

    Parameters
    ----------
    data : MeshData
        Mesh set (concatenated into one vertex/face table).
    workdir : str or Path
        Scratch directory.
    bbox : tuple of ndarray
        Inclusive ``(min, max)`` corners; the query returns the vertices in the
        box and the faces whose three vertices are all inside (load + mask).
    repeat : int, optional
        Timing repeats (median).

    Returns
    -------
    BenchResult
        ``object_read_s`` is ``None``: PLY keeps no per-object index.
    """
    import trimesh

    path = Path(workdir) / "meshes.ply"
    path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        mesh = trimesh.Trimesh(vertices=data.vertices, faces=data.faces, process=False)
        mesh.export(str(path), file_type="ply", encoding="binary")

    def read() -> tuple[Arr, Arr]:
        mesh = trimesh.load_mesh(str(path), process=False)
        return np.asarray(mesh.vertices), np.asarray(mesh.faces)

    def bbox_read() -> tuple[Arr, Arr]:
        v, f = read()
        mask = _in_bbox(v, bbox)
        remap = np.cumsum(mask) - 1
        keep = mask[f].all(axis=1)
        return v[mask], remap[f[keep]]

    timings: dict[str, float | None] = {"write_s": _time_write(write, path, repeat)}
    timings["read_s"], (v, f) = _median_time(read, repeat)
    timings["bbox_read_s"], (bv, bf) = _median_time(bbox_read, repeat)
    mask = _in_bbox(data.vertices, bbox)
    exp_f = data.faces[mask[data.faces].all(axis=1)]
    checks = {
        "full_read": bool(
            np.array_equal(v.astype(np.float32), data.vertices) and np.array_equal(f, data.faces)
        ),
        "bbox_read": bool(
            np.array_equal(bv.astype(np.float32), data.vertices[mask])
            and np.array_equal(bf, (np.cumsum(mask) - 1)[exp_f])
        ),
    }
    return _result(
        library="trimesh",
        fmt="ply-binary",
        task="mesh",
        n_vertices=data.n_vertices,
        n_objects=data.n_objects,
        timings=timings | {"object_read_s": None},
        path=path,
        checks=checks,
        remarks=[f"vertices stored as {v.dtype}"] if v.dtype != np.float32 else [],
        unsupported={"object_read_s": "PLY has no per-object index (one file for the set)"},
    )


# ---------------------------------------------------------------------------
# Upstream zarr-vectors 0.2.0 (isolated venv)
# ---------------------------------------------------------------------------


def upstream_python(venv: str | Path | None = None) -> Path:
    """Return the upstream venv's interpreter, or raise if it does not exist.

    Parameters
    ----------
    venv : str or Path, optional
        Venv directory; default ``$ZV_UPSTREAM_VENV`` or ``/tmp/zv-upstream-venv``.

    Returns
    -------
    Path
        Path of ``bin/python`` inside the venv.

    Raises
    ------
    UpstreamVenvMissingError
        If the venv or its upstream ``zarr_vectors`` is missing.
    """
    root = Path(venv or os.environ.get(UPSTREAM_VENV_ENV) or DEFAULT_UPSTREAM_VENV)
    python = root / "bin" / "python"
    if not python.exists() or not list(root.glob("lib/python*/site-packages/zarr_vectors")):
        raise UpstreamVenvMissingError(
            f"upstream zarr-vectors venv not found at {root}; create it with "
            f"`bash {SETUP_SCRIPT}` (set {UPSTREAM_VENV_ENV} to use another location)"
        )
    return python


def _opt_float(value: object) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float):
        raise TypeError(f"expected a number or null, got {value!r}")
    return float(value)


def _opt_int(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int):
        raise TypeError(f"expected an integer or null, got {value!r}")
    return value


def _mapping(value: object) -> dict[str, object]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {value!r}")
    return {str(k): v for k, v in value.items()}


def _parse_upstream(payload: dict[str, object]) -> BenchResult:
    """Convert the runner's JSON object into a :class:`BenchResult`.

    Parameters
    ----------
    payload : dict
        Decoded JSON printed by ``benchmarks/upstream/runner.py``.

    Returns
    -------
    BenchResult
        The typed result.

    Raises
    ------
    TypeError
        If a field has an unexpected type.
    """
    extra: list[tuple[str, float]] = []
    for key, value in _mapping(payload.get("extra")).items():
        number = _opt_float(value)
        if number is not None:
            extra.append((key, number))
    return BenchResult(
        library="zarr-vectors",
        version=str(payload.get("version", "unknown")),
        fmt="zv-upstream",
        task=str(payload["task"]),
        n_vertices=_opt_int(payload.get("n_vertices")) or 0,
        n_objects=_opt_int(payload.get("n_objects")),
        write_s=_opt_float(payload.get("write_s")),
        read_s=_opt_float(payload.get("read_s")),
        bbox_read_s=_opt_float(payload.get("bbox_read_s")),
        object_read_s=_opt_float(payload.get("object_read_s")),
        size_bytes=_opt_int(payload.get("size_bytes")) or 0,
        file_count=_opt_int(payload.get("file_count")) or 0,
        correct=bool(payload.get("correct", False)),
        note=str(payload.get("note", "")),
        unsupported=tuple(
            (k, str(v)) for k, v in sorted(_mapping(payload.get("unsupported")).items())
        ),
        checks=tuple((k, bool(v)) for k, v in _mapping(payload.get("checks")).items()),
        extra=tuple(extra),
        n_chunks=_opt_int(payload.get("n_chunks")),
    )


def run_upstream(
    task: str,
    npz_path: str | Path,
    workdir: str | Path,
    repeat: int = 3,
    *,
    write_repeat: int | None = None,
    venv: str | Path | None = None,
    timeout: float | None = None,
    keep: bool = False,
) -> BenchResult:
    """Run ``benchmarks/upstream/runner.py`` in the upstream venv and parse its JSON.

    Parameters
    ----------
    task : str
        ``points``, ``streamlines``, ``skeletons``, ``graph`` or ``mesh``.
    npz_path : str or Path
        Input written by :func:`benchmarks.datasets.save_task_npz`.
    workdir : str or Path
        Scratch directory for the upstream store.
    repeat : int, optional
        Read repeats (median).
    write_repeat : int, optional
        Write repeats (default: ``repeat``).
    venv : str or Path, optional
        Upstream venv (default ``$ZV_UPSTREAM_VENV`` or ``/tmp/zv-upstream-venv``).
    timeout : float, optional
        Seconds before the subprocess is killed.
    keep : bool, optional
        Keep the written store below ``workdir`` (for :class:`UpstreamReads`).

    Returns
    -------
    BenchResult
        Upstream timings, size and correctness checks.

    Raises
    ------
    UpstreamVenvMissingError
        If the venv has not been created (run ``setup_venv.sh``).
    RuntimeError
        If the runner fails or prints no JSON.
    """
    python = upstream_python(venv)
    cmd = [str(python), str(RUNNER), task, str(Path(npz_path).resolve())]
    cmd += [str(Path(workdir).resolve()), "--repeat", str(repeat)]
    if write_repeat is not None:
        cmd += ["--write-repeat", str(write_repeat)]
    if keep:
        cmd.append("--keep")
    Path(workdir).mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=_upstream_env(),
        cwd=str(Path(workdir).resolve()),
        timeout=timeout,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(
            f"upstream runner failed (exit {proc.returncode}) for task {task!r}:\n"
            f"{proc.stderr[-2000:]}"
        )
    return _parse_upstream(json.loads(lines[-1]))


def _upstream_env() -> dict[str, str]:
    """The environment for the runner: never let our package (src/ on PYTHONPATH) shadow upstream's."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


class UpstreamReads:
    """Full reads of a kept upstream store, timed on request in the upstream venv.

    A context manager around ``runner.py serve TASK WORKDIR`` (after
    :func:`run_upstream` with ``keep=True``).  Each :meth:`read` times one full read
    there and returns its seconds, so a benchmark can alternate upstream's reads with its
    own and compare the two under the same machine load.

    Parameters
    ----------
    task : str
        ``skeletons`` or ``graph``.
    workdir : str or Path
        The ``workdir`` given to :func:`run_upstream`.
    venv : str or Path, optional
        Upstream venv, as in :func:`run_upstream`.
    """

    def __init__(self, task: str, workdir: str | Path, venv: str | Path | None = None) -> None:
        self._cmd = [str(upstream_python(venv)), str(RUNNER), "serve", task]
        self._cmd.append(str(Path(workdir).resolve()))
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Self:
        self._proc = subprocess.Popen(
            self._cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_upstream_env(),
        )
        return self

    def __exit__(self, *exc: object) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        finally:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def read(self) -> float:
        """Time one full upstream read; return its seconds.

        Raises
        ------
        RuntimeError
            If the server is not running or did not answer (its stderr is in the message).
        """
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise RuntimeError("UpstreamReads used outside its with block")
        proc.stdin.write("read\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read() if proc.stderr is not None else ""
            raise RuntimeError(f"upstream read server stopped: {err[-2000:]}")
        return float(json.loads(line)["read_s"])


# ---------------------------------------------------------------------------
# Smoke run
# ---------------------------------------------------------------------------


def _smoke(scale: float, repeat: int, workdir: Path, with_upstream: bool) -> list[BenchResult]:
    """Run every peer (and optionally upstream) on scaled-down data sets."""
    from benchmarks import datasets as ds

    results: list[BenchResult] = []
    pts = ds.make_points(int(10_000 * scale))
    pbox = ds.bbox_fraction(pts.positions, 0.05)
    results.append(bench_parquet_points(pts, workdir, pbox, repeat))
    results.append(bench_parquet_points(pts, workdir, pbox, repeat, sort_rows=True))
    results.append(bench_npy_points(pts, workdir, pbox, repeat))
    results.append(bench_laz_points(pts, workdir, pbox, repeat))
    sls = ds.make_streamlines(int(1000 * scale), 100)
    sbox = ds.bbox_fraction(sls.positions, 0.05)
    results.append(bench_trx_streamlines(sls, workdir, sbox, repeat))
    results.append(bench_trx_streamlines(sls, workdir, sbox, repeat, compressed=False))
    results.append(bench_tck_streamlines(sls, workdir, sbox, repeat))
    mesh = ds.make_mesh_set(int(50_000 * scale))
    mbox = ds.bbox_fraction(mesh.vertices, 0.05, centre=mesh.vertices[mesh.n_vertices // 2])
    results.append(bench_ply_mesh(mesh, workdir, mbox, repeat))
    if with_upstream:
        sk = ds.make_skeletons(max(2, int(20 * scale)), 500)
        gr = ds.make_graph(int(10_000 * scale))
        sets: list[tuple[ds.TaskData, BBox]] = [
            (pts, pbox),
            (sls, sbox),
            (sk, ds.bbox_fraction(sk.positions, 0.05)),
            (gr, ds.bbox_fraction(gr.positions, 0.05)),
            (mesh, mbox),
        ]
        for data, box in sets:
            arrays = data.arrays()
            pos = arrays["vertices"] if data.task == "mesh" else arrays["positions"]
            npz = ds.save_task_npz(
                workdir / f"{data.task}.npz",
                data,
                chunk_shape=ds.chunk_shape_for(pos, 4),
                bbox_min=box[0],
                bbox_max=box[1],
            )
            results.append(run_upstream(data.task, npz, workdir, repeat))
    return results


def main(argv: list[str] | None = None) -> int:
    """Command-line smoke run printing one summary line per result."""
    parser = argparse.ArgumentParser(description="Peer-format benchmark smoke run")
    parser.add_argument("--scale", type=float, default=1.0, help="size multiplier")
    parser.add_argument("--small", action="store_true", help="alias for --scale 1")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-upstream", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="print JSON lines instead")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zv-peers-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for res in _smoke(args.scale, args.repeat, work, not args.no_upstream):
            if args.json:
                print(json.dumps({f.name: getattr(res, f.name) for f in fields(res)}))
            else:
                print(res.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
