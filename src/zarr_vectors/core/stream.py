"""Streaming writes: append batches of any size in bounded memory, same bytes as ``write_*``.

Each appended batch is spilled to disk by :func:`~zarr_vectors.core.spill.spill_batch`,
partitioned into blocks of chunks.  :meth:`StreamWriter.close` numbers everything globally
(:func:`~zarr_vectors.core.assemble.assemble`) and writes the level one *round* of blocks at a
time with the in-memory planner, so memory is bounded by ``memory_limit`` plus the object index,
not by the total number of vertices.  The distributed builder runs the same steps on a cluster.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.assemble import (
    Assembly,
    RoundResult,
    assemble,
    declare_arrays,
    finish_dense,
    merge_refs,
    process_link_round,
    process_round,
    write_cross_links,
    write_joins,
)
from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.closing import ClosesOnExit
from zarr_vectors.core.placement import make_spill_dir
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.spill import BatchSummary, spill_batch
from zarr_vectors.core.writer import LevelWriter, StoreOptions, WriteSummary, write_store_with
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.jsonvalue import parse_positive_int
from zarr_vectors.spec.typespec import type_spec

__all__ = ["ProgressCallback", "StreamWriter", "write_assembled"]

ProgressCallback = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` while long operations run (opt-in)."""


class StreamWriter(ClosesOnExit):
    """Append batches to a new store; the store is written when the writer closes.

    Use it as a context manager: an exception inside the block discards everything and leaves
    no store behind.  Object ids are numbered across batches in append order; links in a batch
    index that batch's vertices (objects never span batches, except point-cloud objects given
    by per-vertex user ids).
    """

    def __init__(
        self,
        store: Any,
        geometry_type: str,
        opts: StoreOptions,
        *,
        spill_dir: str | Path | None = None,
        partition_chunks: int = 1,
        memory_limit: int = 256 << 20,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.store = store
        self._progress = progress
        self.geometry_type = geometry_type
        self.opts = opts
        self._tmp = make_spill_dir(spill_dir)
        self._block = parse_positive_int(partition_chunks, "partition_chunks")
        self._memory_limit = parse_positive_int(memory_limit, "memory_limit")
        self._summaries: list[BatchSummary] = []
        self._closed = False

    @property
    def n_vertices(self) -> int:
        """Vertices appended so far."""
        return sum(s.n_vertices for s in self._summaries)

    def append_parts(
        self,
        parts: GeometryParts,
        user_ids: npt.NDArray[Any] | None = None,
        object_ids: npt.NDArray[Any] | None = None,
    ) -> None:
        """Spill one batch (object ids and link indices local to the batch).

        A batch inconsistent with earlier ones is refused before anything is spilled.
        """
        if self._closed:
            raise InvalidInputError("the writer is closed")
        batch = len(self._summaries)
        summary = spill_batch(
            self._tmp / "pending",
            batch,
            parts,
            chunk_shape=tuple(self.opts.chunk_shape),
            partition_chunks=self._block,
            user_ids=user_ids,
            object_ids=object_ids,
        )
        try:
            assemble(self._tmp / "pending", [*self._summaries[:1], summary], self.opts)
        except InvalidInputError:
            _remove_batch(self._tmp / "pending", batch)
            raise
        self._summaries.append(summary)

    def abort(self) -> None:
        """Discard every spilled batch; nothing is written."""
        self._closed = True
        shutil.rmtree(self._tmp, ignore_errors=True)

    def close(self) -> WriteSummary:
        """Write the store from the spilled batches and remove the spill files."""
        if self._closed:
            raise InvalidInputError("the writer is already closed")
        try:
            if not self._summaries:
                raise InvalidInputError("no batches were appended")
            asm = assemble(self._tmp / "pending", self._summaries, self.opts)
            return write_assembled(
                self.store,
                self.geometry_type,
                asm,
                self._summaries,
                self.opts,
                memory_limit=self._memory_limit,
                progress=self._progress,
            )
        finally:
            self.abort()


def _remove_batch(directory: Path, batch: int) -> None:
    for path in directory.glob(f"*/b{batch:09d}_*.npy"):
        path.unlink()


def write_assembled(
    store: Any,
    geometry_type: str,
    asm: Assembly,
    summaries: list[BatchSummary],
    opts: StoreOptions,
    *,
    memory_limit: int,
    run_rounds: Any = None,
    progress: ProgressCallback | None = None,
) -> WriteSummary:
    """Write a store from assembled spills; ``run_rounds`` may distribute the rounds.

    ``run_rounds(kind, asm, rounds, level_writer)`` returns one result per round; the default
    runs them here, in order, reporting ``progress("write", done, total)`` per round.
    """
    runner = run_rounds or _local_runner(progress)
    d = asm.layout.ndim

    def fill(w: LevelWriter, layout: ChunkLayout) -> tuple[int, int, int]:
        declare_arrays(asm, w)
        need_where = asm.arity > 0
        results: list[RoundResult] = runner("vertices", asm, list(asm.rounds(memory_limit)), w)
        vertex_counts = np.zeros(layout.n_chunks, dtype=np.int64)
        for r in results:
            vertex_counts[r.chunks] = r.counts
        manifest, offsets, ref_obj = merge_refs([r.refs for r in results], asm.n_objects, d)
        if need_where:
            where_path = Path(asm.directory).parent / "where.npy"
            where = np.lib.format.open_memmap(
                where_path, mode="w+", dtype=np.int64, shape=(asm.n_vertices, 2)
            )
            for r in results:
                assert r.where is not None
                where[r.where[:, 0]] = r.where[:, 1:]
            where.flush()
            del where
            plans = runner("links", asm, list(asm.rounds(memory_limit, links=True)), w)
            write_cross_links(w, plans, asm)
        elif asm.has_objects and type_spec(geometry_type).sequential:
            write_joins(w, layout, manifest, ref_obj)
        finish_dense(w, asm, vertex_counts, manifest, offsets, summaries)
        n_with = int(np.count_nonzero(np.diff(offsets)))
        return asm.n_vertices, n_with, int(np.count_nonzero(vertex_counts))

    extent = (asm.layout.grid, asm.bounding_box, d)
    return write_store_with(store, geometry_type, extent, opts, fill)


def _local_runner(progress: ProgressCallback | None) -> Callable[..., list[Any]]:
    def run(kind: str, asm: Assembly, rounds: list[list[str]], w: LevelWriter) -> list[Any]:
        where_path = Path(asm.directory).parent / "where.npy"
        out: list[Any] = []
        for i, r in enumerate(rounds):
            if kind == "vertices":
                out.append(process_round(asm, r, w, need_where=asm.arity > 0))
            else:
                out.append(process_link_round(asm, r, w, where_path))
            if progress is not None:
                progress("write " + kind, i + 1, len(rounds))
        return out

    return run
