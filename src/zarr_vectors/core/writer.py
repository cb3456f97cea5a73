"""The one write pipeline: validate, plan, encode, write level arrays, then root metadata.

Safe-write rule (FORMAT.md §3, issue "safe writes"): root ZVF attributes are written **last**, so
an interrupted write leaves a Zarr group that :func:`~zarr_vectors.core.store.open_store` and the
validator reject as incomplete.  Overwriting a local directory builds the new store beside it and
swaps it in only when complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.storage import ZipStore

from zarr_vectors.core.chunking import ChunkLayout, axis_bounds, grid_for_bounds
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.draco import MAX_DIMS, DracoSettings, require_dracopy
from zarr_vectors.core.gather import GATHER_BYTES, PayloadBatch, Rows, payload_batches, take_rows
from zarr_vectors.core.options import (
    FrameBytes,
    StoreKwargs,
    StoreOptions,
    chunk_ndim,
    default_frame_bytes,
    frame_bytes_option,
    make_axes,
    resolve_store_options,
)
from zarr_vectors.core.payload.compression import (
    LZ4_LINKS_BLOCK,
    Compressor,
    CompressorSpec,
    preset,
)
from zarr_vectors.core.payload.create import (
    create_payload_array,
    declare_dense_array,
    open_payload_array,
)
from zarr_vectors.core.payload.dense import write_dense
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.payload.store_io import set_many, settle_pending_writes
from zarr_vectors.core.placement import leftovers, remove_abandoned, staging_dir
from zarr_vectors.core.plan import (
    FragmentRows,
    GeometryParts,
    LevelPlan,
    LinkPlan,
    grid_vertex_counts,
    plan_level,
)
from zarr_vectors.core.ragged import RowOrder, run_starts
from zarr_vectors.core.store import (
    StoreHandle,
    StoreLike,
    check_replaceable_dir,
    has_data,
    init_root,
    place_staged,
    resolve_store,
)
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.query.statistics import (
    ChunkExtremes,
    StatArray,
    counts_crc32,
    gathered_statistics,
    rows_statistics,
    write_statistics,
)
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind, Compression
from zarr_vectors.spec.metadata import (
    BoundingBox,
    ChunkGrid,
    LevelMetadata,
    RootMetadata,
    parse_float_tuple,
)

__all__ = [
    "FrameBytes",
    "LevelWriter",
    "StoreKwargs",
    "StoreOptions",
    "WriteSummary",
    "check_positions",
    "chunk_ndim",
    "default_frame_bytes",
    "frame_bytes_option",
    "make_axes",
    "resolve_store_options",
    "column_attrs",
    "take_rows",
    "write_level",
    "write_dense_arrays",
    "write_link_plan",
    "write_store_with",
    "write_store",
]


@dataclass(frozen=True)
class WriteSummary:
    """What a ``write_*`` call stored."""

    geometry_type: str
    """Geometry type of the store."""
    vertex_count: int
    """Vertices written at level 0."""
    object_count: int
    """Objects written (0 for point clouds without objects)."""
    chunk_count: int
    """Non-empty chunks at level 0."""
    chunk_grid: ChunkGrid
    """Chunk grid of the store."""


def check_positions(
    positions: Any, *, ndim: int | None = None, finite: bool = True
) -> npt.NDArray[np.floating]:
    """Validate vertex positions: a finite (N, D) float array; float32 kept, others -> float64.

    ``finite=False`` leaves the NaN/inf scan to :func:`write_store` (it finds the column
    extents in the same pass).

    Raises
    ------
    InvalidInputError
        Wrong shape or dtype, or a NaN/inf coordinate (the message names the row).
    """
    try:
        arr = np.asarray(positions)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise InvalidInputError(f"positions are not an (N, D) array: {exc}") from exc
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InvalidInputError(f"positions must have shape (N, D), got {arr.shape}")
    if ndim is not None and arr.shape[1] != ndim:
        raise InvalidInputError(f"positions have {arr.shape[1]} columns, expected D={ndim}")
    if arr.dtype.kind not in "iuf":
        raise InvalidInputError(f"positions must be numeric, got dtype {arr.dtype}")
    refuse_inexact_integers(arr)
    if arr.dtype.kind == "f" and arr.dtype.itemsize == 4:  # any byte order (spec: little-endian)
        arr = arr.astype("<f4", copy=False)
    else:
        arr = arr.astype(np.float64)
    arr = np.ascontiguousarray(arr)
    if finite:
        _refuse_non_finite(arr)
    return arr


def refuse_inexact_integers(arr: npt.NDArray[Any]) -> None:
    """Refuse integer coordinates that float64 would round (beyond 2**53 in magnitude)."""
    if arr.dtype.kind not in "iu" or arr.dtype.itemsize < 8 or arr.size == 0:
        return
    big = arr > 2**53  # compared as integers: float64 would already have rounded them
    if arr.dtype.kind == "i":
        big |= arr < -(2**53)
    if big.any():
        row, col = divmod(int(np.argmax(big)), arr.shape[1])
        raise InvalidInputError(
            f"positions: integer coordinate {arr[row, col]} at row {row}, column {col} is "
            "beyond 2**53 and would be rounded (coordinates are stored as floats)"
        )


def _refuse_non_finite(arr: npt.NDArray[np.floating]) -> None:
    """Raise for the first NaN or infinite coordinate of C-contiguous (N, D) ``arr``."""
    flat = arr.reshape(-1)
    for a in range(0, len(flat), _FINITE_BLOCK):  # a cache-sized mask, not an (N, D) one
        bad = ~np.isfinite(flat[a : a + _FINITE_BLOCK])
        if bad.any():
            row, col = divmod(a + int(np.argmax(bad)), arr.shape[1])
            raise InvalidInputError(
                f"positions: non-finite coordinate {arr[row, col]} at row {row}, column {col}"
            )


_FINITE_BLOCK = 1 << 16


def _array_attrs(
    kind: ArrayKind,
    values: Rows,
    width: int,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return L.array_attributes(kind, values.dtype.str, width, extra)


def column_attrs(col: Column) -> dict[str, Any]:
    """Return the array attributes describing a column's shape and categories."""
    extra: dict[str, Any] = {"shape": list(col.values.shape[1:])}
    if col.categories is not None:
        extra["categories"] = list(col.categories)
    return extra


_WRITER_THREADS = 4
"""Writer threads of a :class:`LevelWriter`: jobs of different arrays run side by side, so a
large array (a mesh's ``links``) does not wait behind small ones.  The threads mostly wait for
zstd (which compresses on native threads of its own) and file writes."""


def _after(previous: Future[None] | None, func: Callable[..., None], *args: Any) -> None:
    """Run ``func(*args)`` once ``previous`` is done (FIFO queue: it already runs or ran)."""
    if previous is not None:
        previous.result()  # its failure is reported by finish() first
    func(*args)


BatchObserver = Callable[[PayloadBatch], None]
"""Sees each batch of gathered payloads before it is encoded (e.g. for chunk statistics)."""


def _write_chunks(
    arr: PayloadArray,
    chunks: npt.NDArray[np.int64],
    batches: Callable[[int], Iterator[PayloadBatch]],
    observe: BatchObserver | None = None,
) -> None:
    """Encode and store the payloads of ``chunks``: batch by batch where the array allows."""
    size = arr.write_batch_bytes
    if size is not None:
        for batch in batches(size):
            if observe is not None:
                observe(batch)
            arr.write(chunks[batch.first : batch.last], batch.payloads, batch.headed)
        return
    every = list(batches(GATHER_BYTES))  # one array's batches are all headed or all not
    if observe is not None:
        for batch in every:
            observe(batch)
    headed = bool(every) and every[0].headed
    arr.write(chunks, [p for batch in every for p in batch.payloads], headed)


class LevelWriter:
    """Writes the arrays of one level group from a plan."""

    def __init__(
        self,
        group: zarr.Group,
        grid_shape: tuple[int, ...],
        compressor: CompressorSpec,
        shards: tuple[int, ...] | None,
        *,
        existing: bool = False,
        draco: DracoSettings | None = None,
        frame_bytes: int | None = None,
    ) -> None:
        self.group = group
        self.frame_bytes = frame_bytes
        """Seekable zstd frame size of new payload arrays (None: one frame per chunk)."""
        self.draco = draco
        """Draco settings of the ``vertices`` payloads, or None for raw rows."""
        self.existing = existing
        """Arrays were declared by another process: open them instead of creating them."""
        self.grid_shape = grid_shape
        self.compressor = compressor
        self.shards = shards
        # gathers, encoding and file writes mostly release the GIL: writer threads overlap
        # them with each other and with the caller's next step
        self._pool = ThreadPoolExecutor(max_workers=_WRITER_THREADS)
        self._pending: list[Future[None]] = []
        self._last: dict[str, Future[None]] = {}
        """Latest queued job of each array path: jobs of one array run in queue order."""
        self._arrays: dict[str, PayloadArray] = {}

    def declare(
        self,
        path: str,
        kind: ArrayKind,
        dtype: str,
        width: int,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the payload array ``path`` before any rows exist (parallel writers)."""
        self._arrays[path] = self._create(path, kind, L.array_attributes(kind, dtype, width, extra))

    def _create(self, path: str, kind: ArrayKind, attributes: Mapping[str, Any]) -> PayloadArray:
        """Create the payload array ``path`` with this level's compressor, shards and frames."""
        return create_payload_array(
            self.group,
            path,
            self.grid_shape,
            attributes=attributes,
            compressor=self._compressor(path),
            shards=self.shards,
            frame_bytes=self._frames(kind, path),
        )

    def _frames(self, kind: ArrayKind, path: str) -> int | None:
        """Seekable frame (block) size of a new payload array of ``kind`` at ``path``.

        Only vertex-aligned arrays are read in part (rows of some objects); the others
        (fragments, links and their attributes) are always read whole, so they are one zstd
        frame, or Blosc blocks of c-blosc's own size, per chunk: smaller and faster.  The
        ``"lz4"`` preset's links are the exception: :data:`LZ4_LINKS_BLOCK` blocks.
        """
        if kind in (ArrayKind.VERTICES, ArrayKind.ATTRIBUTE):
            return self.frame_bytes
        if kind is ArrayKind.LINKS and preset(self._compressor(path)) is Compression.LZ4:
            return LZ4_LINKS_BLOCK
        return None

    def _compressor(self, path: str) -> Compressor | str:
        spec = self.compressor
        if isinstance(spec, Mapping):
            return spec.get(path, spec.get("*", "default"))
        return spec

    def abort(self) -> None:
        """Stop queued writes after a failure elsewhere (their errors are secondary)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()
        self._last.clear()

    def drain(self) -> None:
        """Wait for the writes queued so far (the writer stays open); re-raise a failure."""
        for f in list(self._pending):
            f.result()

    def finish(self) -> None:
        """Wait for every queued write; re-raise the first failure (in queue order)."""
        try:
            for f in self._pending:
                f.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pending.clear()
            self._last.clear()

    def compute(self, func: Callable[..., Any], *args: Any) -> Future[Any]:
        """Run ``func(*args)`` on a writer thread (beside the writes); return its future.

        For work the level needs later that can start before the level is planned (its
        statistics): the caller's planning and the writes overlap it.
        """
        job: Future[Any] = self._pool.submit(func, *args)
        self._pending.append(job)
        return job

    def _submit(self, path: str, func: Callable[..., None], *args: Any) -> None:
        """Queue ``func(*args)`` on the writer threads, after the earlier jobs of ``path``."""
        job = self._pool.submit(_after, self._last.get(path), func, *args)
        self._last[path] = job
        self._pending.append(job)

    def payload_chunks(
        self,
        path: str,
        kind: ArrayKind,
        rows: Rows,
        chunks: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Queue (n, K) rows sorted by chunk: chunk ``chunks[i]`` holds ``offsets[i]:offsets[i+1]``.

        ``rows`` may be a :class:`~zarr_vectors.core.gather.RowSource` (computed a batch at a
        time on the writer thread); it must not change until :meth:`finish`.
        """
        self._queue(path, kind, rows, None, chunks, offsets, extra)

    def payload(
        self,
        path: str,
        kind: ArrayKind,
        rows: npt.NDArray[Any],
        chunk_of_row: npt.NDArray[np.int64],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Queue the rows of some chunks (sorted by chunk) for the payload array ``path``.

        Payloads are cut, encoded and written on the writer thread: ``rows`` must not change
        until :meth:`finish`.
        """
        rows = rows.reshape(len(rows), -1) if rows.ndim != 2 else rows
        starts = run_starts(chunk_of_row) if len(rows) else np.zeros(0, dtype=np.int64)
        bounds = np.append(starts, len(rows)).astype(np.int64, copy=False)
        self.payload_chunks(path, kind, rows, chunk_of_row[starts], bounds, extra)

    def payload_rows(
        self,
        path: str,
        kind: ArrayKind,
        values: npt.NDArray[Any],
        order: RowOrder,
        chunks: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64],
        extra: Mapping[str, Any] | None = None,
        observe: BatchObserver | None = None,
    ) -> None:
        """Queue the sorted rows ``values[order]`` for the payload array ``path``.

        Chunk ``chunks[i]`` holds sorted rows ``offsets[i]:offsets[i + 1]``.  The rows are
        gathered, encoded and written on the writer thread, overlapping the caller's next
        step: ``values`` and ``order`` must not change until :meth:`finish`.  ``observe``
        sees each batch of gathered payloads (headed elements) on that thread.
        """
        rows = values.reshape(len(values), -1) if values.ndim != 2 else values
        self._queue(path, kind, rows, order, chunks, offsets, extra, observe)

    def _queue(
        self,
        path: str,
        kind: ArrayKind,
        rows: Rows,
        order: RowOrder | None,
        chunks: npt.NDArray[np.int64],
        bounds: npt.NDArray[np.int64],
        extra: Mapping[str, Any] | None,
        observe: BatchObserver | None = None,
    ) -> None:
        encode = None
        if path == L.VERTICES and self.draco is not None:
            extra, encode = {**(extra or {}), **self.draco.array_attributes()}, self.draco.encode
        arr = self._array(path, kind, rows, extra)
        batches = partial(payload_batches, rows, order, bounds, encode=encode)
        self._submit(path, _write_chunks, arr, chunks, batches, observe)

    def _array(
        self, path: str, kind: ArrayKind, rows: Rows, extra: Mapping[str, Any] | None
    ) -> PayloadArray:
        """Return the payload array ``path``, opened or created on first use.

        ``rows`` are (n, K) rows of the array's dtype and width.
        """
        arr = self._arrays.get(path)
        if arr is None and self.existing:
            arr = self._arrays[path] = open_payload_array(self.group, path)
        if arr is None:  # created on first use; later calls (streaming) add chunks
            attributes = _array_attrs(kind, rows, rows.shape[1], extra)
            arr = self._arrays[path] = self._create(path, kind, attributes)
        return arr

    def dense(
        self,
        path: str,
        kind: ArrayKind,
        data: npt.NDArray[Any],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the dense array ``path`` holding ``data``.

        The chunks are encoded and written on the writer thread: ``data`` must not change
        until :meth:`finish`.
        """
        self._submit(path, write_dense, *self._declare_dense(path, kind, data, extra))

    def dense_after(
        self,
        after: str,
        path: str,
        kind: ArrayKind,
        like: npt.NDArray[Any],
        fill: Callable[[], npt.NDArray[Any]],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        """Create the dense array ``path`` shaped as ``like``; store ``fill()`` later.

        ``fill`` runs on a writer thread once the queued jobs of array ``after`` are done
        (it reads what they computed) and returns the data: ``like``'s shape and dtype.
        """
        array, values = self._declare_dense(path, kind, like, extra)
        self._submit(after, _fill_dense, array, values, fill)

    def _declare_dense(
        self,
        path: str,
        kind: ArrayKind,
        data: npt.NDArray[Any],
        extra: Mapping[str, Any] | None,
    ) -> tuple[zarr.Array[Any], npt.NDArray[Any]]:
        width = 1 if data.ndim < 2 else int(np.prod(data.shape[1:]))
        chunks = (L.DENSE_CHUNK_ROWS, *data.shape[1:])
        if kind is ArrayKind.VERTEX_COUNTS:  # one count per chunk slot of the grid
            chunks, width = _grid_chunks(data.shape), 1
        return declare_dense_array(
            self.group,
            path,
            data,
            attributes=_array_attrs(kind, data, width, extra),
            chunks=chunks,
            compressor=self._compressor(path),
        )


def _fill_dense(
    array: zarr.Array[Any], values: npt.NDArray[Any], fill: Callable[[], npt.NDArray[Any]]
) -> None:
    """Store ``fill()`` in the dense array declared with ``values`` (same shape and dtype)."""
    data = fill()
    # the filler is ours (statistics of rows already checked): a mismatch is a bug here
    assert data.shape == values.shape, array.path
    assert data.dtype == values.dtype, array.path
    values[...] = data
    write_dense(array, values)


def _grid_chunks(shape: Sequence[int], max_elements: int = 1 << 20) -> tuple[int, ...]:
    chunks = list(shape)
    while int(np.prod(chunks)) > max_elements:
        axis = int(np.argmax(chunks))
        chunks[axis] = (chunks[axis] + 1) // 2
    return tuple(chunks)


def write_level(
    group: zarr.Group,
    parts: GeometryParts,
    layout: ChunkLayout,
    level: LevelMetadata,
    *,
    compressor: CompressorSpec = "default",
    shards: tuple[int, ...] | None = None,
    plan: LevelPlan | None = None,
    draco: DracoSettings | None = None,
) -> LevelMetadata:
    """Write every array of one level into ``group`` and return its completed metadata."""
    plan = plan_level(parts, layout) if plan is None else plan
    w = LevelWriter(group, layout.grid.shape, compressor, shards, draco=draco)
    try:
        _write_arrays(w, parts, plan)
    except BaseException:
        w.abort()
        raise
    w.finish()
    done = LevelMetadata(
        level=level.level,
        bin_ratio=level.bin_ratio,
        bin_shape=level.bin_shape,
        vertex_count=len(parts.positions),
        object_count=int(np.count_nonzero(np.diff(plan.object_offsets))),
        chunk_count=len(plan.chunks),
        object_sparsity=level.object_sparsity,
        sparsity_strategy=level.sparsity_strategy,
        coarsening=level.coarsening,
        extra=level.extra,
    )
    group.attrs.put(done.to_dict())
    return done


def _write_arrays(
    w: LevelWriter,
    parts: GeometryParts,
    plan: LevelPlan,
    *,
    rows_queued: bool = False,
    fragments_queued: bool = False,
    statistics: _EarlyStatistics | None = None,
) -> None:
    """Queue every array of a level (the rows and fragments too unless queued already).

    ``statistics``: the level's statistics were started with its rows.
    """
    if not rows_queued:
        write_rows(w, parts, plan.order, plan.chunks, plan.chunk_offsets)
    _write_links(w, parts, plan)  # links first: a mesh's largest array
    if not fragments_queued:
        write_fragments(w, plan.fragments, plan.chunks, plan.fragment_offsets)
    # chunk pruning for where= (docs/spec.md "Statistics")
    write_statistics(w, parts, plan, None if statistics is None else statistics.computed())
    has_obj = parts.has_objects
    write_dense_arrays(
        w,
        plan.vertex_counts,
        plan.manifest if has_obj else None,
        plan.object_offsets if has_obj else None,
        parts.object_attributes,
        parts.groups,
    )
    if statistics is not None:  # last: these wait for their attribute's rows to be written
        statistics.queue_gathered(w)


@dataclass(frozen=True)
class _EarlyStatistics:
    """Statistics of a level started as soon as its row order is known.

    Float attributes are reduced chunk by chunk as their payloads are gathered
    (``gathered``); the others are computed on a writer thread (``rest``).
    """

    gathered: Mapping[str, ChunkExtremes]
    rest: Future[list[StatArray]] | None
    chunks: npt.NDArray[np.int64]
    vertex_counts: npt.NDArray[np.int64]

    @classmethod
    def start(
        cls,
        w: LevelWriter,
        parts: GeometryParts,
        order: RowOrder,
        chunks: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64],
        grid_shape: tuple[int, ...],
    ) -> _EarlyStatistics:
        """Create the collectors and start computing the other statistics."""
        counts = grid_vertex_counts(chunks, offsets, grid_shape)
        gathered = gathered_statistics(parts)
        rest = None
        if len(gathered) < len(parts.vertex_attributes):
            rest = w.compute(rows_statistics, parts, order, offsets, chunks, counts, gathered)
        return cls(gathered, rest, chunks, counts)

    def computed(self) -> list[StatArray]:
        """Return the statistics arrays of the attributes not gathered (waits for them)."""
        return [] if self.rest is None else self.rest.result()

    def queue_gathered(self, w: LevelWriter) -> None:
        """Queue the gathered statistics, each after its attribute's payload writes."""
        n_grid = int(np.prod(self.vertex_counts.shape))
        extra = {"counts_crc32": counts_crc32(self.vertex_counts)}
        for name, extremes in self.gathered.items():
            fill = partial(_gathered_data, extremes, name, self.chunks, self.vertex_counts)
            w.dense_after(
                L.attribute_path(L.ATTRIBUTES, name),
                f"{L.STATISTICS}/{name}",
                ArrayKind.STATISTICS,
                np.zeros((n_grid, 2), dtype=extremes.dtype),
                fill,
                extra,
            )


def _gathered_data(
    extremes: ChunkExtremes,
    name: str,
    chunks: npt.NDArray[np.int64],
    vertex_counts: npt.NDArray[np.int64],
) -> npt.NDArray[Any]:
    return extremes.statistics(name, chunks, vertex_counts).data


def write_fragments(
    w: LevelWriter,
    fragments: FragmentRows,
    chunks: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
) -> None:
    """Queue the ``vertex_fragments`` of a level (a table may be built a batch at a time).

    Chunk ``chunks[i]`` holds fragment rows ``offsets[i]:offsets[i + 1]``.
    """
    w.payload_chunks(L.VERTEX_FRAGMENTS, ArrayKind.VERTEX_FRAGMENTS, fragments, chunks, offsets)


def write_rows(
    w: LevelWriter,
    parts: GeometryParts,
    order: RowOrder,
    chunks: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    extremes: Mapping[str, ChunkExtremes] | None = None,
) -> None:
    """Queue the sorted vertices and vertex attributes of a level (row order known).

    ``extremes`` collect the chunk statistics of some attributes from their gathered rows.
    """
    w.payload_rows(L.VERTICES, ArrayKind.VERTICES, parts.positions, order, chunks, offsets)
    for name, col in parts.vertex_attributes.items():
        path = L.attribute_path(L.ATTRIBUTES, name)
        seen = None if extremes is None or name not in extremes else extremes[name].observe
        w.payload_rows(
            path, ArrayKind.ATTRIBUTE, col.rows, order, chunks, offsets, column_attrs(col), seen
        )


def write_dense_arrays(
    w: LevelWriter,
    vertex_counts: npt.NDArray[np.int64],
    manifest: npt.NDArray[np.int64] | None,
    object_offsets: npt.NDArray[np.int64] | None,
    object_attributes: Mapping[str, Column],
    groups: GroupTable | None,
) -> None:
    """Write ``vertex_counts``, the object index, object attributes and groups of a level."""
    w.dense(L.VERTEX_COUNTS, ArrayKind.VERTEX_COUNTS, vertex_counts)
    if manifest is not None and object_offsets is not None:
        w.dense(L.OBJECT_OFFSETS, ArrayKind.OBJECT_OFFSETS, object_offsets)
        w.dense(L.OBJECT_MANIFEST, ArrayKind.OBJECT_MANIFEST, manifest)
    for name, col in object_attributes.items():
        w.dense(
            L.attribute_path(L.OBJECT_ATTRIBUTES, name),
            ArrayKind.OBJECT_ATTRIBUTE,
            col.values,
            column_attrs(col),
        )
    if groups is not None:
        _write_groups(w, groups)


def _write_links(w: LevelWriter, parts: GeometryParts, plan: LevelPlan) -> None:
    if plan.links is not None:
        write_link_plan(w, plan.links, parts.link_attributes, explicit=parts.links is not None)


def write_link_plan(
    w: LevelWriter, lp: LinkPlan, link_attributes: Mapping[str, Column], *, explicit: bool
) -> None:
    """Write chunk-local links, cross-chunk links and their attributes of some chunks."""
    if explicit:
        w.payload(
            L.LINKS,
            ArrayKind.LINKS,
            lp.local_rows,
            lp.local_chunk,
            {"arity": int(lp.local_rows.shape[1]) if lp.local_rows.ndim == 2 else 0},
        )
        for name, col in link_attributes.items():
            w.payload(
                L.attribute_path(L.LINK_ATTRIBUTES, name),
                ArrayKind.LINK_ATTRIBUTE,
                col.rows[lp.local_source],
                lp.local_chunk,
                column_attrs(col),
            )
    if len(lp.cross_chunk) == 0:
        return
    w.payload(
        L.CROSS_CHUNK_LINKS,
        ArrayKind.CROSS_CHUNK_LINKS,
        lp.cross_rows,
        lp.cross_chunk,
        {"endpoints": _endpoints(lp.cross_rows, len(w.grid_shape))},
    )
    is_explicit = lp.cross_source >= 0
    for name, col in link_attributes.items():
        if not is_explicit.all():
            raise InvalidInputError("link attributes are not supported on implicit path links")
        w.payload(
            L.attribute_path(L.CROSS_CHUNK_LINK_ATTRIBUTES, name),
            ArrayKind.CROSS_CHUNK_LINK_ATTRIBUTE,
            col.rows[lp.cross_source],
            lp.cross_chunk,
            column_attrs(col),
        )


def _endpoints(rows: npt.NDArray[np.int64], ndim: int) -> int:
    return int(rows.shape[1] // (ndim + 1))


def _write_groups(w: LevelWriter, g: GroupTable) -> None:
    w.dense(L.GROUP_OFFSETS, ArrayKind.GROUP_OFFSETS, g.offsets)
    w.dense(L.GROUP_MEMBERS, ArrayKind.GROUP_MEMBERS, g.members)
    w.group[L.GROUPINGS].attrs["names"] = list(g.names)
    for name, col in g.attributes.items():
        w.dense(
            L.attribute_path(L.GROUPINGS_ATTRIBUTES, name),
            ArrayKind.GROUP_ATTRIBUTE,
            col.values,
            column_attrs(col),
        )


Extent = tuple[npt.NDArray[np.floating], npt.NDArray[np.floating]] | None
"""Per-column minimum and maximum of the positions (None when there are none)."""


def _store_bounds(
    extent: Extent, opts: StoreOptions, d: int
) -> tuple[ChunkGrid, BoundingBox | None]:
    data_box = None
    if extent is not None:
        data_box = BoundingBox(
            min=tuple(float(v) for v in extent[0]), max=tuple(float(v) for v in extent[1])
        )
    cover = opts.bounds or data_box
    if cover is None:
        return ChunkGrid(origin=(0,) * d, shape=(1,) * d), None
    if opts.bounds is not None and data_box is not None:
        lo = np.minimum(data_box.min, opts.bounds.min)
        hi = np.maximum(data_box.max, opts.bounds.max)
        return grid_for_bounds(lo.tolist(), hi.tolist(), opts.chunk_shape, opts.shards), data_box
    return grid_for_bounds(cover.min, cover.max, opts.chunk_shape, opts.shards), data_box


LevelFiller = Callable[[LevelWriter, ChunkLayout], tuple[int, int, int]]
"""Writes the arrays of level 0; returns (vertex count, objects with vertices, chunk count)."""


def write_store(
    store: StoreLike,
    geometry_type: str,
    parts: GeometryParts,
    opts: StoreOptions,
    *,
    extent: Extent = None,
) -> WriteSummary:
    """Write a complete single-level store (root metadata last).

    ``extent`` is ``axis_bounds(parts.positions)`` when the caller has it already (a file
    converter measures it to choose the chunk shape); computed here when None.
    """
    d = parts.positions.shape[1]
    shapes = _shapes(opts, d)  # names chunk_shape / bin_shape problems before anything else
    if not len(parts.positions):
        extent = None
    elif extent is None:
        extent = axis_bounds(parts.positions)
    else:
        extent = (np.asarray(extent[0], dtype=np.float64), np.asarray(extent[1], np.float64))
    if extent is not None and not (np.isfinite(extent[0]).all() and np.isfinite(extent[1]).all()):
        _refuse_non_finite(parts.positions)  # NaN and inf show in the extents: name the row
    _check_chunk_range(parts.positions, shapes[0], extent)
    grid, data_box = _store_bounds(extent, opts, d)
    # every input error surfaces above, before the store is touched: planning is pure
    fill = partial(_plan_and_write, parts=parts, bounds=extent)
    return write_store_with(store, geometry_type, (grid, data_box, d), opts, fill)


def _plan_and_write(
    w: LevelWriter, layout: ChunkLayout, parts: GeometryParts, bounds: Extent = None
) -> tuple[int, int, int]:
    """Plan a level and queue its arrays (a :data:`LevelFiller`).

    ``bounds`` are the positions' per-axis extremes when known.  The vertex rows are queued
    as soon as their order is known: they are gathered, encoded and written while the rest of
    the level is planned.
    """
    queued: set[str] = set()
    stats: list[_EarlyStatistics] = []

    def queue_rows(
        order: RowOrder, chunks: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]
    ) -> None:
        early = None
        if parts.vertex_attributes:  # beside the planning, not after it
            early = _EarlyStatistics.start(w, parts, order, chunks, offsets, layout.grid.shape)
            stats.append(early)
        write_rows(w, parts, order, chunks, offsets, None if early is None else early.gathered)
        queued.add(L.VERTICES)

    def queue_fragments(
        fragments: FragmentRows, chunks: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]
    ) -> None:
        # written while the links are planned, so the two overlap
        write_fragments(w, fragments, chunks, offsets)
        queued.add(L.VERTEX_FRAGMENTS)

    plan = plan_level(
        parts, layout, bounds=bounds, on_order=queue_rows, on_fragments=queue_fragments
    )
    _write_arrays(
        w,
        parts,
        plan,
        rows_queued=L.VERTICES in queued,
        fragments_queued=L.VERTEX_FRAGMENTS in queued,
        statistics=stats[0] if stats else None,
    )
    objects = int(np.count_nonzero(np.diff(plan.object_offsets)))
    return len(parts.positions), objects, len(plan.chunks)


def _check_chunk_range(
    pos: npt.NDArray[np.floating], chunk: tuple[float, ...], extent: Extent
) -> None:
    """Refuse coordinates whose chunk index cannot be represented exactly (|p / C| > 2**53).

    ``max |p| / C`` is ``max(|min p|, |max p|) / C`` (division by C > 0 is monotonic), so the
    column extent decides; only a refused column is scanned, for the row to name.
    """
    if extent is None:
        return
    top = np.maximum(np.abs(extent[0].astype(np.float64)), np.abs(extent[1].astype(np.float64)))
    for axis, c in enumerate(chunk):
        if top[axis] / c > 2.0**53:
            col = np.abs(np.asarray(pos[:, axis], dtype=np.float64)) / c
            row = int(np.argmax(col))
            raise InvalidInputError(
                f"positions: coordinate {pos[row, axis]} at row {row}, column {axis} is too "
                f"large for chunk_shape {c} (chunk index beyond 2**53)"
            )


def _shapes(opts: StoreOptions, d: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    chunk = parse_float_tuple(opts.chunk_shape, "chunk_shape", length=d, positive=True)
    if opts.bin_shape is None:
        return chunk, chunk
    return chunk, parse_float_tuple(opts.bin_shape, "bin_shape", length=d, positive=True)


def write_store_with(
    store: StoreLike,
    geometry_type: str,
    extent: tuple[ChunkGrid, BoundingBox | None, int],
    opts: StoreOptions,
    fill: LevelFiller,
) -> WriteSummary:
    """Create a store, let ``fill`` write level 0, then write level and root metadata last."""
    grid, data_box, d = extent
    chunk, bins = _shapes(opts, d)
    root_meta = RootMetadata.create(
        geometry_type=geometry_type,
        chunk_shape=chunk,
        base_bin_shape=bins,
        axes=opts.axes,
        axis_units="unknown" if opts.axis_units is None else opts.axis_units,
        coordinate_system=opts.coordinate_system,
        bounding_box=data_box,
        chunk_grid=grid,
        creation_timestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        source_description=opts.source_description,
        notes=_notes(opts),
        custom_metadata=opts.custom_metadata,
        type_metadata=dict(opts.type_metadata),
        draco_compressed=True if opts.draco is not None else None,
    )
    if opts.draco is not None:
        require_dracopy()
        if d > MAX_DIMS:
            raise InvalidInputError(f"Draco encodes at most {MAX_DIMS} dimensions, got D={d}")
    layout = ChunkLayout(chunk, bins, grid)
    if opts.shards is not None and opts.zarr_format == 2:
        raise InvalidInputError("sharding needs Zarr v3 (zarr_format=3)")
    target, handle = _write_target(store, opts)
    final_dir = target.local_path
    zip_target = target.zip_path is not None or isinstance(target.store, ZipStore)
    try:
        root = init_root(
            handle, zarr_format=opts.zarr_format, overwrite=opts.overwrite, where=str(store)
        )
        ds = root_meta.multiscales.datasets[0]
        group = root.create_group(L.level_path(0))
        w = LevelWriter(
            group,
            layout.grid.shape,
            opts.compressor,
            opts.shards,
            draco=opts.draco,
            frame_bytes=frame_bytes_option(opts.frame_bytes, geometry_type),
        )
        try:
            n_vertices, n_objects, n_chunks = fill(w, layout)
        except BaseException:
            w.abort()
            raise
        w.finish()
        level = LevelMetadata(
            level=0,
            bin_ratio=ds.bin_ratio,
            bin_shape=ds.bin_shape,
            vertex_count=n_vertices,
            object_count=n_objects,
            chunk_count=n_chunks,
        )
        group.attrs.put(level.to_dict())
        root.attrs.put(root_meta.to_dict())
    except BaseException:
        if handle.local_path is not None and handle.local_path != final_dir:
            _remove_staging(handle.local_path)
        raise
    finally:
        handle.close()
    if zip_target and handle.local_path is not None:
        _pack_zip(handle.local_path, target)
    elif handle.local_path is not None and final_dir is not None:
        place_staged(handle.local_path, final_dir, overwrite=opts.overwrite, where=str(store))
    return WriteSummary(geometry_type, n_vertices, n_objects, n_chunks, grid)


def _write_target(store: StoreLike, opts: StoreOptions) -> tuple[StoreHandle, StoreHandle]:
    """Return the destination and the place to build the store in.

    Zip targets and overwritten local directories are built in a staging directory, so the old
    store stays until the new one is complete.
    """
    target = resolve_store(
        store, mode="w" if opts.overwrite else "w-", storage_options=opts.storage_options
    )
    if target.zip_path is not None or isinstance(target.store, ZipStore):
        occupied = has_data(target)
        if occupied and not opts.overwrite:
            raise StoreExistsError(f"{store} already holds data; pass overwrite=True to replace it")
        if occupied and target.zip_path is None:
            raise StoreExistsError(
                "an open ZipStore that holds data cannot be overwritten in place (zip entries "
                "cannot be removed); pass the .zip path instead, which is replaced whole"
            )
        base = target.zip_path or Path(tempfile.gettempdir()) / "store.zip"
        remove_abandoned(leftovers(base))  # staging of killed writes to the same zip
        staging = staging_dir(base)
        return target, resolve_store(staging, mode="w")
    if target.local_path is not None:  # built aside, renamed into place when complete
        check_replaceable_dir(target.local_path, overwrite=opts.overwrite, where=str(store))
        return target, resolve_store(staging_dir(target.local_path), mode="w")
    return target, target


def _pack_zip(staged: Path, target: StoreHandle) -> None:
    """Copy a complete staged store into a zip: a new file swapped in, or an open ZipStore."""
    items = sorted(
        (p.relative_to(staged).as_posix(), p.read_bytes()) for p in staged.rglob("*") if p.is_file()
    )
    try:
        if target.zip_path is not None:
            tmp = target.zip_path.with_name(f".{target.zip_path.name}.zv-{uuid.uuid4().hex[:8]}")
            packed = ZipStore(tmp, mode="w")
            set_many(packed, items)
            packed.close()
            os.replace(tmp, target.zip_path)
        else:
            assert isinstance(target.store, ZipStore)
            set_many(target.store, items)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _notes(opts: StoreOptions) -> str | None:
    if opts.shards is None:
        return opts.notes
    note = f"payload arrays sharded with {list(opts.shards)} chunks per shard"
    return note if opts.notes is None else f"{opts.notes}\n{note}"


def _remove_staging(staged: Path) -> None:
    """Remove the staging directory of a failed write, for good.

    Store writes still running next to the one that failed would recreate it, so they are
    waited for first; the removal is retried while something keeps writing into it.
    """
    for _ in range(3):
        settle_pending_writes()
        shutil.rmtree(staged, ignore_errors=True)
        if not staged.exists():
            return
