"""Conversion benchmark: ``zarr-vectors convert`` of a TRK (and TCK) file vs nibabel loading it.

Data: :func:`benchmarks.datasets.make_streamlines` with ``--n`` streamlines of exactly
``--vertices`` vertices (default 100k x 100 = 10M vertices, one float32 per-vertex scalar),
saved with nibabel (TRK with the scalar as ``fa``; TCK coordinates only).  Each repeat, in this
order and in one process:

* ``nibabel load``: ``nibabel.streamlines.load(path)`` (eager: every streamline in memory);
* ``convert``: :func:`zarr_vectors.formats.registry.convert` with the CLI defaults (chunk shape
  chosen from the extent, bins from the data: docs/guides/pyramids.md, in-memory write
  below 20M vertices) into a fresh
  store (``--compressors`` picks the presets; every repeat writes a new store, and stores are
  deleted only after all timings); its two phases are timed separately on the side (``read``: opening, indexing and
  gathering the file with our reader; ``write``: the store write with convert's chunk and
  bin shapes);
* optionally (``--cli``) the same conversion as a ``zarr-vectors convert`` subprocess;
* optionally (``--export``) nibabel saving the loaded tractogram against exporting the new
  store back to the same format (:func:`zarr_vectors.formats.registry.export`).

Times are medians over ``--repeat`` (min in brackets).  The target: converting a TRK takes less
time than nibabel alone takes to load it.  The stored coordinates are checked against nibabel's.

Usage::

    python -m benchmarks.bench_convert                    # 100k x 100, repeat 3
    python -m benchmarks.bench_convert --n 2000 --repeat 1 --formats trk
    python -m benchmarks.bench_convert --formats trk --compressors default,lz4 --cli
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np
from nibabel.streamlines import ArraySequence, TckFile, Tractogram, TrkFile

from benchmarks import datasets as ds
from benchmarks.ours import new_workdir
from benchmarks.report import Target, environment, render_targets
from zarr_vectors.errors import ZVUserWarning
from zarr_vectors.formats.registry import WriteOptions, convert, export
from zarr_vectors.formats.tractography import open_tck, open_trk
from zarr_vectors.types.polylines import read_streamlines

OPENERS: dict[str, Callable[[Path], Any]] = {"trk": open_trk, "tck": open_tck}


@dataclass
class Timings:
    """Seconds per repeat of one format."""

    fmt: str
    vertices: int
    compressor: str = "default"
    nibabel_load: list[float] = field(default_factory=list)
    convert: list[float] = field(default_factory=list)
    nibabel_cpu: list[tuple[float, float]] = field(default_factory=list)
    """(user, system) CPU seconds of each nibabel load (all threads of the process)."""
    convert_cpu: list[tuple[float, float]] = field(default_factory=list)
    """(user, system) CPU seconds of each convert."""
    read: list[float] = field(default_factory=list)
    write: list[float] = field(default_factory=list)
    nibabel_save: list[float] = field(default_factory=list)
    """Seconds of ``TrkFile(tractogram).save`` / ``TckFile`` of the loaded file (``--export``)."""
    export: list[float] = field(default_factory=list)
    """Seconds of :func:`zarr_vectors.formats.registry.export` of the store to the same format."""
    cli: list[float] = field(default_factory=list)
    chunk_shape: tuple[float, ...] = ()
    bin_shape: tuple[float, ...] = ()
    """Level-0 bin convert chose (the write phase uses the same)."""
    chunks: int = 0
    correct: bool = False


def _sequence(data: ds.StreamlinesData, values: np.ndarray) -> ArraySequence:
    seq = ArraySequence()
    seq._data = values  # nibabel has no public (data, offsets) constructor
    seq._offsets = data.offsets[:-1]
    seq._lengths = np.diff(data.offsets)
    return seq


def write_inputs(data: ds.StreamlinesData, folder: Path, formats: Sequence[str]) -> dict[str, Path]:
    """Save the streamlines with nibabel (not timed)."""
    out = {}
    streamlines = _sequence(data, data.positions)
    if "trk" in formats:
        tg = Tractogram(
            streamlines,
            data_per_point={"fa": _sequence(data, data.attr.reshape(-1, 1))},
            affine_to_rasmm=np.eye(4),
        )
        header = {"dimensions": np.array([200, 220, 150]), "voxel_sizes": np.ones(3)}
        out["trk"] = folder / "tracts.trk"
        TrkFile(tg, header=header).save(str(out["trk"]))
    if "tck" in formats:
        out["tck"] = folder / "tracts.tck"
        TckFile(Tractogram(streamlines, affine_to_rasmm=np.eye(4))).save(str(out["tck"]))
    return out


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def _timed_cpu(fn: Callable[[], Any]) -> tuple[float, tuple[float, float], Any]:
    """Wall seconds, (user, system) CPU seconds of the process, and the result of ``fn()``.

    On a shared VM the system time (the kernel zeroing fresh pages) swings several-fold from
    run to run while the user time stays put: both are reported next to the wall time.
    """
    c0 = os.times()
    seconds, result = _timed(fn)
    c1 = os.times()
    return seconds, (c1.user - c0.user, c1.system - c0.system), result


def _phases(path: Path, store: Path, t: Timings, compressor: str) -> None:
    """Time reading and writing separately, with the shapes convert chose."""
    t0 = time.perf_counter()
    with OPENERS[t.fmt](path) as src:
        src.everything()
        t.read.append(time.perf_counter() - t0)
        opts = WriteOptions(
            chunk_shape=t.chunk_shape,
            bin_shape=t.bin_shape,
            compressor=compressor,
        )
        seconds, _ = _timed(lambda: src.write(str(store), opts))
        t.write.append(seconds)


class _FreshStores:
    """New store names in ``workdir``; the stores are deleted only by :meth:`clean`.

    Nothing is deleted between timed runs: on ext4 without a journal (this benchmark's
    machine), creating files within a minute of deleting many is several times slower, which
    would charge the previous repeat's cleanup to the next conversion.
    """

    def __init__(self, workdir: Path, stem: str) -> None:
        self.workdir, self.stem, self.made = workdir, stem, []

    def __call__(self) -> Path:
        path = self.workdir / f"{self.stem}-{len(self.made)}.zarrvectors"
        self.made.append(path)
        return path

    def clean(self) -> None:
        for p in self.made:
            shutil.rmtree(p, ignore_errors=True)
        self.made.clear()


def _nibabel_save(tractogram: Any, fmt: str, out: Path) -> None:
    cls = TrkFile if fmt == "trk" else TckFile
    cls(tractogram.tractogram, header=tractogram.header).save(str(out))


def bench_format(
    path: Path,
    workdir: Path,
    repeat: int,
    cli: bool,
    compressor: str = "default",
    export_too: bool = False,
) -> Timings:
    fmt = path.suffix[1:]
    fresh = _FreshStores(workdir, f"{fmt}-{compressor}")
    t = Timings(fmt, 0, compressor=compressor)
    for _ in range(repeat):
        seconds, cpu, tractogram = _timed_cpu(lambda: nib.streamlines.load(str(path)))
        t.nibabel_load.append(seconds)
        t.nibabel_cpu.append(cpu)
        reference = np.asarray(tractogram.streamlines.get_data(), np.float32)
        if export_too:
            out = workdir / f"nibabel-save.{fmt}"
            t.nibabel_save.append(_timed(partial(_nibabel_save, tractogram, fmt, out))[0])
            out.unlink()
        del tractogram
        store = fresh()
        seconds, cpu, report = _timed_cpu(partial(convert, path, str(store), compressor=compressor))
        t.convert.append(seconds)
        t.convert_cpu.append(cpu)
        t.chunk_shape, t.chunks = report.chunk_shape, report.summary.chunk_count
        t.bin_shape = report.bin_shape
        t.vertices = report.summary.vertex_count
        t.correct = bool(np.array_equal(read_streamlines(str(store)).positions, reference))
        del reference
        if export_too:
            out = workdir / f"export.{fmt}"
            with warnings.catch_warnings():  # TCK drops the per-point scalar, and says so
                warnings.simplefilter("ignore", ZVUserWarning)
                t.export.append(_timed(partial(export, str(store), out))[0])
            out.unlink()
        _phases(path, fresh(), t, compressor)
        if cli:
            cmd = [sys.executable, "-m", "zarr_vectors.cli", "convert", str(path), str(fresh())]
            cmd += ["--compressor", "zstd" if compressor == "default" else compressor]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            t.cli.append(time.perf_counter() - t0)
    fresh.clean()
    return t


def _fmt(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} s ({min(values):.2f})"


def _cpu(values: Sequence[tuple[float, float]]) -> str:
    if not values:
        return "-"
    user = statistics.median(u for u, _ in values)
    system = statistics.median(s for _, s in values)
    return f"{user:.2f} + {system:.2f}"


def render(results: Sequence[Timings]) -> str:
    lines = [
        (
            "| format | compressor | vertices | nibabel load | convert | read / write phases | CLI | "
            "convert / load | CPU user + sys, load / convert (s) | chunk shape (chunks), bins "
            "| coordinates equal |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in results:
        ratio = statistics.median(t.convert) / statistics.median(t.nibabel_load)
        phases = f"{_fmt(t.read)} / {_fmt(t.write)}"
        lines.append(
            f"| {t.fmt} | {t.compressor} | {t.vertices:,} | {_fmt(t.nibabel_load)} | {_fmt(t.convert)} | {phases} "
            f"| {_fmt(t.cli)} | {ratio:.2f} | {_cpu(t.nibabel_cpu)} / {_cpu(t.convert_cpu)} "
            f"| {list(t.chunk_shape)} ({t.chunks}), bins {list(t.bin_shape)} "
            f"| {'yes' if t.correct else 'NO'} |"
        )
    return "\n".join(lines)


def render_export(results: Sequence[Timings]) -> str:
    """The ``--export`` table: store -> file against nibabel saving the loaded file."""
    lines = [
        "| format | compressor | nibabel save | export (store read + file write) | export / save |",
        "|---|---|---|---|---|",
    ]
    for t in results:
        ratio = statistics.median(t.export) / statistics.median(t.nibabel_save)
        lines.append(
            f"| {t.fmt} | {t.compressor} | {_fmt(t.nibabel_save)} | {_fmt(t.export)} "
            f"| {ratio:.2f} |"
        )
    return "\n".join(lines)


def targets(results: Sequence[Timings]) -> list[Target]:
    out = []
    for t in results:
        if t.fmt != "trk":
            continue
        conv, load = statistics.median(t.convert), statistics.median(t.nibabel_load)
        out.append(
            Target(
                f"TRK {t.vertices:,} vertices converted ({t.compressor}) faster than nibabel "
                "loads it",
                conv < load,
                f"convert {conv:.2f} s vs nibabel load {load:.2f} s (medians)",
            )
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="streamlines (default 100,000)")
    parser.add_argument("--vertices", type=int, default=100, help="vertices per streamline")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (median)")
    parser.add_argument("--formats", default="trk,tck", help="comma-separated: trk, tck")
    parser.add_argument(
        "--compressors",
        default="default",
        help="comma-separated compressor presets to convert with (default, lz4)",
    )
    parser.add_argument("--cli", action="store_true", help="also time the CLI in a subprocess")
    parser.add_argument(
        "--export",
        action="store_true",
        help="also time exporting the store back to the format against nibabel's save",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="scratch directory")
    parser.add_argument("--json", type=Path, default=None, help="write results as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the files and stores")
    args = parser.parse_args(argv)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    workdir = args.workdir or new_workdir("convert")
    workdir.mkdir(parents=True, exist_ok=True)
    data = ds.make_streamlines(args.n, args.vertices, vary_length=False)
    t0 = time.perf_counter()
    paths = write_inputs(data, workdir, formats)
    setup = time.perf_counter() - t0
    print(f"wrote {', '.join(str(p) for p in paths.values())} with nibabel in {setup:.1f} s")
    del data
    presets = [c.strip() for c in args.compressors.split(",") if c.strip()]
    results = [
        bench_format(paths[f], workdir, args.repeat, args.cli, c, args.export)
        for f in formats
        for c in presets
    ]
    found = targets(results)
    print(render(results))
    if args.export:
        print()
        print(render_export(results))
    print()
    print(render_targets(found))
    if args.json is not None:
        doc = {
            "script": "bench_convert",
            "args": {k: str(v) for k, v in vars(args).items()},
            "environment": environment(),
            "results": [asdict(r) for r in results],
            "targets": [asdict(t) for t in found],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1, default=str))
    if not args.keep and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r.correct for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
