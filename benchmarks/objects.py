"""Pieces shared by the object-type benchmarks (``bench_meshes.py``, ``bench_skeletons.py``).

* :func:`match_rows` -- row correspondence between an expected and a returned vertex array
  (for checks of results whose vertex order is free);
* :func:`object_chunk_stats` -- chunks each queried object occupies vs the chunk files its
  one-object reads open (untimed, through :mod:`benchmarks.chunk_reads`);
* :func:`time_dir_writes` and :func:`file_peer_extra` -- timing of the "one file per object"
  peers (PLY per mesh, SWC per skeleton).
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.chunk_reads import chunk_origin, object_chunks, payload_reads, split_keys
from benchmarks.ours import _spread

Arr = npt.NDArray[Any]

__all__ = [
    "READ_CHUNK_ROWS",
    "file_peer_extra",
    "match_rows",
    "object_chunk_stats",
    "time_dir_writes",
]

READ_CHUNK_ROWS = (
    ("object_chunks_read_open_mean", "chunks read, open Reader (mean)"),
    ("object_files_read_open_mean", "payload files read, open Reader (mean)"),
    ("object_index_reads_open_mean", "index-array reads, open Reader (mean)"),
    ("object_chunks_read_func_mean", "chunks read, functional (mean)"),
    ("object_files_read_func_mean", "payload files read, functional (mean)"),
    ("object_index_reads_func_mean", "index-array reads, functional (mean)"),
)
"""``(key, label)`` rows of :func:`object_chunk_stats`'s per-mode statistics (for a chunk table)."""


def match_rows(reference: Arr, found: Arr) -> npt.NDArray[np.int64] | None:
    """Index into ``reference`` of each row of ``found`` (unique rows), or None if they differ."""
    if reference.shape != found.shape:
        return None
    if reference.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    o_ref = np.lexsort(reference.T[::-1])
    o_found = np.lexsort(found.T[::-1])
    if not np.array_equal(reference[o_ref], found[o_found]):
        return None
    mapping = np.empty(found.shape[0], dtype=np.int64)
    mapping[o_found] = o_ref
    return mapping


def object_chunk_stats(
    store: str,
    positions: Arr,
    offsets: npt.NDArray[np.int64],
    ids: npt.NDArray[np.int64],
    chunk_shape: Sequence[float],
    reads: dict[str, Callable[[int], Any]],
    keys: Sequence[str],
) -> dict[str, float]:
    """Chunks occupied vs chunk files read by one-object reads (untimed spied calls).

    Parameters
    ----------
    store : str
        Our store.
    positions, offsets : ndarray
        Input vertices and the CSR offsets of the objects.
    ids : ndarray of int64
        Objects to read, one call each per mode.
    chunk_shape : sequence of float
        The store's chunk shape.
    reads : dict
        Mode (``"open"``, ``"func"``) -> one-object read.
    keys : sequence of str
        The statistics to return, in this order, among ``object_vertices_mean``,
        ``object_chunks_occupied_mean`` / ``_max``, ``object_{chunks,files}_read_<mode>_mean``,
        ``object_index_reads_<mode>_mean``, ``object_reads_only_own_chunks`` (fraction of ids
        whose reads, in every mode, opened only chunks the object occupies) and
        ``object_reads_all_own_chunks`` (... opened all of them).

    Returns
    -------
    dict
        ``keys`` -> value; empty if the library's payload I/O can no longer be spied on.
    """
    origin = chunk_origin(store)
    occupied: list[int] = []
    n_vert: list[int] = []
    per_mode: dict[str, dict[str, list[float]]] = {
        m: {"chunks": [], "files": [], "index": []} for m in reads
    }
    only_own = all_own = 0
    for q in ids.tolist():
        s, e = int(offsets[q]), int(offsets[q + 1])
        mine = object_chunks(positions[s:e], chunk_shape)
        occupied.append(len(mine))
        n_vert.append(e - s)
        inside = covers = True
        for mode, read in reads.items():
            _res, fetched = payload_reads(lambda q=q, read=read: read(q))
            if fetched is None:
                return {}
            got = split_keys(fetched, origin)
            per_mode[mode]["chunks"].append(len(got.chunks))
            per_mode[mode]["files"].append(got.n_files)
            per_mode[mode]["index"].append(len(got.index_keys))
            inside = inside and got.chunks <= mine and not got.unparsed
            covers = covers and got.chunks >= mine
        only_own += int(inside)
        all_own += int(covers)
    out = {
        "object_vertices_mean": float(np.mean(n_vert)),
        "object_chunks_occupied_mean": float(np.mean(occupied)),
        "object_chunks_occupied_max": float(np.max(occupied)),
    }
    for mode, stats in per_mode.items():
        out[f"object_chunks_read_{mode}_mean"] = float(np.mean(stats["chunks"]))
        out[f"object_files_read_{mode}_mean"] = float(np.mean(stats["files"]))
        out[f"object_index_reads_{mode}_mean"] = float(np.mean(stats["index"]))
    out["object_reads_only_own_chunks"] = only_own / max(1, len(ids))
    out["object_reads_all_own_chunks"] = all_own / max(1, len(ids))
    return {k: out[k] for k in keys}


def time_dir_writes(write: Callable[[], None], path: Path, repeat: int) -> tuple[float, float]:
    """Write a directory peer ``repeat`` times (``path`` removed before each, untimed).

    Returns
    -------
    tuple of float
        Median wall seconds and median process CPU seconds.
    """
    times: list[float] = []
    cpu: list[float] = []
    for _ in range(max(1, repeat)):
        if path.exists():
            shutil.rmtree(path)  # untimed
        c0 = time.process_time()
        t0 = time.perf_counter()
        write()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpu)


def file_peer_extra(
    object_times: Sequence[float], write_cpu: float, read_cpu: float
) -> tuple[tuple[str, float], ...]:
    """A file-per-object peer's ``extra``: one-object spread, write and full-read CPU."""
    extra = _spread("object", object_times) | {"write_cpu_s": write_cpu, "read_cpu_s": read_cpu}
    return tuple(extra.items())
