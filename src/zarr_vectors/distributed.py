"""Distributed builds on dask.distributed: stores and their pyramids, same bytes as serial.

:func:`write_distributed` builds a store from many input partitions.  The steps are the
streaming writer's, run as cluster tasks (FORMAT.md §6 concurrency rule):

1. **ingest** — one task per input partition loads it, converts it with
   :func:`~zarr_vectors.streaming.batch_parts` and spills it by blocks of chunks
   (:func:`~zarr_vectors.core.spill.spill_batch`): the shuffle by chunk;
2. **number** — the client assembles the batch summaries (global ids, categories, grid);
3. **write** — one task per round of blocks plans and writes its chunks' payloads; rounds own
   disjoint chunks, so every chunk is written by exactly one task;
4. **merge** — the client writes the object index, links across blocks, dense arrays and
   metadata (root metadata last).

The bytes written equal those of the in-memory ``write_*`` functions.

:func:`build_pyramid_distributed` adds coarse levels (FORMAT.md §10) to an existing store:

1. **partition** — the client splits level 0 into ranges of whole objects, or of chunks for
   point clouds without objects (:mod:`~zarr_vectors.multiscale.partition`).  Object stores
   are read once by ranges of chunks, each vertex spilled to its object's partition; objects
   are ranked when a level drops some (length and spatial coverage: a scoring task per
   partition);
2. **coarsen** — one task per partition takes its slice of level 0, derives *every* level
   from it and spills each level by blocks of chunks (metavertices never span objects or
   chunks, so each is computed by exactly one task, as the serial build computes it);
3. **write** — the rounds of blocks of all levels run at once; every output chunk of a level
   is written by exactly one task;
4. **merge** — level by level, the client writes the object index, path joins, dense arrays
   and level metadata, then the root ``multiscales`` block last.

The spill directory must be reachable by every worker (a local path for a ``LocalCluster``,
shared storage otherwise), and so must the store (a path or URL, not a ``MemoryStore``).
"""

from __future__ import annotations

import itertools
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from typing_extensions import Unpack
from zarr.storage import MemoryStore, StorePath, ZipStore

import distributed
from zarr_vectors.core.assemble import Assembly, assemble, process_link_round, process_round
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.multiscale import write_multiscale_metadata
from zarr_vectors.core.payload.compression import CompressorSpec
from zarr_vectors.core.placement import make_spill_dir
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.spill import BatchSummary, spill_batch
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.stream import ProgressCallback, write_assembled
from zarr_vectors.core.writer import (
    LevelWriter,
    StoreKwargs,
    StoreOptions,
    WriteSummary,
    chunk_ndim,
    resolve_store_options,
)
from zarr_vectors.core.zarr_adapter import AccessModeLiteral
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.multiscale.partition import (
    Partition,
    PartitionKind,
    block_chunks,
    exact_partitions,
    merge_partitions,
    plan_partitions,
    row_bytes,
)
from zarr_vectors.multiscale.pyramid import PyramidLevel, PyramidPlan, coarse_levels, plan_pyramid
from zarr_vectors.multiscale.sparsity import (
    ObjectScores,
    needs_vertices,
    rank_scores,
    rank_without_vertices,
)
from zarr_vectors.multiscale.spilled import (
    assemble_level,
    finish_level,
    open_level,
    writer_options,
)
from zarr_vectors.multiscale.staging import begin_staging, drop_staging, swap_levels
from zarr_vectors.multiscale.tasks import (
    PartitionResult,
    coarsen_partition,
    partition_scores,
    spill_rows,
)
from zarr_vectors.spec.conventions import Aggregation, SparsityStrategy
from zarr_vectors.spec.typespec import parse_geometry_type, registered_type_names
from zarr_vectors.streaming import batch_parts, type_keys

__all__ = ["build_pyramid_distributed", "write_distributed"]

IntArray = npt.NDArray[np.int64]

_MIN_ROUND_BYTES = 4 << 20
"""Spilled bytes below which a pyramid write task is not worth splitting further."""

Loader = Callable[[Any], Mapping[str, Any]]
"""Turns one input partition into the keyword arguments of a batch (``data`` + options)."""


def _spill_task(
    batch: int,
    item: Any,
    load: Loader | None,
    geometry_type: str,
    opts: StoreOptions,
    directory: str,
    partition_chunks: int,
) -> BatchSummary:
    kwargs = dict(load(item) if load is not None else item)
    if "data" not in kwargs:
        raise InvalidInputError("each input partition must give 'data' (positions, paths...)")
    data = kwargs.pop("data")
    converted = batch_parts(geometry_type, data, type_metadata=opts.type_metadata, **kwargs)
    return spill_batch(
        directory,
        batch,
        converted.parts,
        chunk_shape=tuple(opts.chunk_shape),
        partition_chunks=partition_chunks,
        user_ids=converted.user_ids,
        object_ids=converted.object_ids,
    )


def _round_task(
    kind: str,
    asm: Assembly,
    prefixes: list[str],
    group_path: Any,
    grid_shape: tuple[int, ...],
    opts: StoreOptions,
    where_path: str,
) -> Any:
    group = zarr.open_group(group_path.store, path=group_path.path, mode="r+")
    w = LevelWriter(
        group,
        grid_shape,
        opts.compressor,
        opts.shards,
        existing=True,
        draco=opts.draco,
        frame_bytes=opts.frame_size(),
    )
    try:
        if kind == "vertices":
            result: Any = process_round(asm, prefixes, w, need_where=asm.arity > 0)
        else:
            result = process_link_round(asm, prefixes, w, where_path)
    except BaseException:
        w.abort()
        raise
    w.finish()
    return result


def _whole_shards(partition_chunks: int, shards: Sequence[int] | None) -> int:
    """Chunks per axis of a shuffle block: ``partition_chunks``, grown to whole shards.

    A write task owns whole blocks; with ``shards`` every shard must lie in one block, or two
    tasks would each read, merge and rewrite it (the later write losing the other's chunks).
    """
    if shards is None:
        return partition_chunks
    return math.lcm(partition_chunks, *(int(s) for s in shards))


def _check_reachable(store: Any, *, zip_ok: bool = True) -> None:
    """Refuse stores workers cannot reach (or, ``zip_ok`` False, cannot write concurrently)."""
    if isinstance(store, MemoryStore) or (not zip_ok and isinstance(store, ZipStore)):
        raise InvalidInputError(
            "distributed builds need a store every worker can reach "
            f"(a path or URL), not a {type(store).__name__}"
        )


def _connect(client: distributed.Client | str | None) -> tuple[distributed.Client, bool]:
    """Return the client to use, and whether this call opened it (and must close it)."""
    if isinstance(client, str):
        return distributed.Client(client), True
    return client or distributed.get_client(), False


def _runner(client: distributed.Client, opts: StoreOptions) -> Callable[..., list[Any]]:
    def run(kind: str, asm: Assembly, rounds: list[list[str]], w: LevelWriter) -> list[Any]:
        _check_reachable(w.group.store_path.store)
        where = str(Path(asm.directory).parent / "where.npy")
        futures = [
            client.submit(
                _round_task, kind, asm, r, w.group.store_path, w.grid_shape, opts, where, pure=False
            )
            for r in rounds
        ]
        return list(client.gather(futures))

    return run


def write_distributed(
    store: StoreLike,
    geometry_type: str,
    partitions: Sequence[Any],
    *,
    load: Loader | None = None,
    client: distributed.Client | str | None = None,
    spill_dir: str | Path | None = None,
    partition_chunks: int = 1,
    memory_limit: int = 256 << 20,
    directed: bool = False,
    type_metadata: Mapping[str, Any] | None = None,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Build a store on a dask.distributed cluster from many input partitions.

    Parameters
    ----------
    store
        Destination path or URL (every worker writes into it).
    geometry_type
        Any of the seven geometry types.
    partitions
        One item per input partition, in order; each is (or ``load`` turns it into) a mapping
        with ``data`` plus the batch keywords of :func:`~zarr_vectors.streaming.batch_parts`.
        Partitions hold whole objects; point-cloud objects (``object_ids``) may span them.
    load
        Runs on a worker for each partition item (e.g. reads a file); default: identity.
    client
        A ``distributed.Client``, a scheduler address, or None for the current client.
    spill_dir
        Directory shared by every worker for the shuffle (default: system temp directory,
        fine for a ``LocalCluster``).
    partition_chunks, memory_limit
        Block size of the shuffle (chunks per axis; with ``shards``, grown to whole shards so
        that each shard is written by one task) and bytes handled per write task.
    directed, type_metadata
        Root metadata: graph ``is_directed`` and type-specific root keys.

    Other Parameters
    ----------------
    **store_kwargs
        Store keywords (``chunk_shape`` required, ``bin_shape``, ``compressor``, ...) or
        ``options=``: see :class:`~zarr_vectors.StoreKwargs`.

    Returns
    -------
    WriteSummary
        What was written; the store equals the in-memory writer's for the same data.
    """
    gtype = parse_geometry_type(geometry_type)
    opts = resolve_store_options(
        store_kwargs,
        ndim=chunk_ndim(store_kwargs),
        geometry_type=gtype,
        type_metadata=type_keys(gtype, directed, type_metadata),
    )
    _check_reachable(store)
    cl, own_client = _connect(client)
    block = _whole_shards(partition_chunks, opts.shards)
    tmp = make_spill_dir(spill_dir)
    try:
        spill = str(tmp / "pending")
        futures = cl.map(
            _spill_task,
            range(len(partitions)),
            list(partitions),
            load=load,
            geometry_type=gtype,
            opts=opts,
            directory=spill,
            partition_chunks=block,
            pure=False,
        )
        summaries: list[BatchSummary] = list(cl.gather(futures))
        asm = assemble(spill, summaries, opts)
        return write_assembled(
            store,
            gtype,
            asm,
            summaries,
            opts,
            memory_limit=memory_limit,
            run_rounds=_runner(cl, opts),
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if own_client:
            cl.close()


# -- pyramids -------------------------------------------------------------------------------


def _open_level0(root_path: StorePath, mode: AccessModeLiteral = "r") -> LevelReader:
    return LevelReader(zarr.open_group(root_path.store, path=root_path.path, mode=mode), 0)


def _rows_task(
    root_path: StorePath, chunks: Partition, partitions: list[Partition], directory: str
) -> int:
    return spill_rows(_open_level0(root_path), chunks, partitions, directory)


def _scores_task(
    root_path: StorePath, part: Partition, plan: PyramidPlan, rows: str | None
) -> ObjectScores:
    return partition_scores(_open_level0(root_path), part, plan, rows=rows)


def _coarsen_task(
    root_path: StorePath,
    part: Partition,
    plan: PyramidPlan,
    keep_rank: IntArray | None,
    directories: list[str],
    partition_chunks: int,
    rows: str | None,
) -> PartitionResult:
    return coarsen_partition(
        _open_level0(root_path),
        part,
        plan,
        keep_rank=keep_rank,
        directories=directories,
        partition_chunks=partition_chunks,
        rows=rows,
    )


def _gather(
    client: distributed.Client,
    futures: list[Any],
    progress: ProgressCallback | None,
    stage: str,
) -> list[Any]:
    """Return the futures' results in order (reporting progress); cancel them all on failure."""
    try:
        if progress is not None:
            for done, _ in enumerate(distributed.as_completed(futures), start=1):
                progress(stage, done, len(futures))
        return list(client.gather(futures))
    except BaseException:
        client.cancel(futures)
        raise


@dataclass(frozen=True)
class _Build:
    """One distributed pyramid build: where, what, and with which cluster."""

    client: distributed.Client
    root: zarr.Group
    reader: LevelReader
    plan: PyramidPlan
    spill: Path
    memory_limit: int
    progress: ProgressCallback | None
    stage: zarr.Group | None = None
    """Where new levels are written (a staging group swapped in at the end); None: ``root``."""

    @property
    def threads(self) -> int:
        """Worker threads of the cluster."""
        return max(1, int(sum(self.client.nthreads().values())))

    def spill_rows(self, partitions: list[Partition], max_vertices: int) -> str | None:
        """Read level 0 once, by ranges of chunks, into the object partitions (None: none)."""
        if partitions[0].kind is not PartitionKind.OBJECTS:
            return None
        chunks = plan_partitions(
            self.reader,
            max_vertices=max_vertices,
            min_count=2 * self.threads,
            kind=PartitionKind.CHUNKS,
        )
        directory = str(self.spill / "level0")
        futures = [
            self.client.submit(
                _rows_task, self.root.store_path, c, partitions, directory, pure=False
            )
            for c in chunks
        ]
        _gather(self.client, futures, self.progress, "pyramid read")
        return directory

    def keep_ranks(
        self, partitions: list[Partition], objects: dict[str, Column], rows: str | None
    ) -> IntArray | None:
        """Return every object's position in the sparsity ranking (None: all are kept)."""
        plan = self.plan
        if not plan.needs_ranking or plan.n_objects is None:
            return None
        if needs_vertices(plan.strategy):
            futures = [
                self.client.submit(_scores_task, self.root.store_path, p, plan, rows, pure=False)
                for p in partitions
            ]
            ranking = rank_scores(ObjectScores.concat(_gather(self.client, futures, None, "")))
        else:
            ranking = rank_without_vertices(
                plan.strategy,
                plan.n_objects,
                objects,
                attribute=plan.sparsity_attribute,
                seed=plan.seed,
            )
        position = np.empty(plan.n_objects, dtype=np.int64)
        position[ranking] = np.arange(plan.n_objects, dtype=np.int64)
        return position

    def coarsen(
        self, partitions: list[Partition], keep: IntArray | None, block: int, rows: str | None
    ) -> tuple[list[PartitionResult], list[str]]:
        """Coarsen every partition; join partitions and retry while vertices escape them."""
        for attempt in itertools.count():
            top = self.spill / f"attempt{attempt}"
            dirs = [str(top / f"level{i}") for i in range(1, len(self.plan.ratios) + 1)]
            futures = [
                self.client.submit(
                    _coarsen_task,
                    self.root.store_path,
                    p,
                    self.plan,
                    None if keep is None else keep[p.start : p.stop],
                    dirs,
                    block,
                    rows,
                    pure=False,
                )
                for p in partitions
            ]
            results: list[PartitionResult] = _gather(
                self.client, futures, self.progress, "pyramid partitions"
            )
            escaped = {
                p.index: r.escaped
                for p, r in zip(partitions, results, strict=True)
                if len(r.escaped)
            }
            if not escaped:
                return results, dirs
            partitions = merge_partitions(partitions, escaped)
            shutil.rmtree(top, ignore_errors=True)
        raise AssertionError("unreachable")  # pragma: no cover

    def submit_level(
        self, level: int, directory: str, results: list[PartitionResult]
    ) -> tuple[Assembly, LevelWriter, list[Any]]:
        """Create level ``level`` and submit the tasks writing its payloads."""
        plan = self.plan
        asm = assemble_level(directory, [r.summaries[level - 1] for r in results], plan, level)
        w = open_level(self.root if self.stage is None else self.stage, plan, asm, level)
        total = sum(nbytes for _, nbytes in asm.blocks)
        per_task = max(total // (2 * self.threads), _MIN_ROUND_BYTES)
        scattered = self.client.scatter(asm, hash=False)
        futures = [
            self.client.submit(
                _round_task,
                "vertices",
                scattered,
                r,
                w.group.store_path,
                w.grid_shape,
                writer_options(plan, level),
                "",
                pure=False,
            )
            for r in asm.rounds(max(1, min(self.memory_limit, per_task)))
        ]
        return asm, w, futures

    def write(
        self,
        results: list[PartitionResult],
        dirs: list[str],
        objects: dict[str, Column],
        groups: GroupTable | None,
    ) -> list[PyramidLevel]:
        """Write the payloads of all levels at once, then finish the levels in order."""
        pending: list[tuple[Assembly, LevelWriter, list[Any]]] = []
        out = []
        try:
            for i, directory in enumerate(dirs, start=1):
                pending.append(self.submit_level(i, directory, results))
            for i, (asm, w, futures) in enumerate(pending, start=1):
                done = finish_level(
                    w,
                    asm,
                    _gather(self.client, futures, None, ""),
                    self.plan,
                    i,
                    used=results[0].used,
                    object_attributes=objects,
                    groups=groups,
                )
                out.append(self.plan.summary(done))
                if self.progress is not None:
                    self.progress("pyramid", i, len(dirs))
        except BaseException:
            for _, w, futures in pending:
                self.client.cancel(futures)
                w.abort()
            raise
        return out


def build_pyramid_distributed(
    store: StoreLike,
    bin_ratios: Sequence[Sequence[int]],
    *,
    client: distributed.Client | str | None = None,
    object_sparsity: float | Sequence[float] | None = None,
    sparsity_strategy: SparsityStrategy | str = "spatial_coverage",
    sparsity_attribute: str | None = None,
    aggregation: Mapping[str, Aggregation | str] | None = None,
    seed: int = 0,
    overwrite: bool = False,
    compressor: CompressorSpec = "source",
    storage_options: Mapping[str, Any] | None = None,
    spill_dir: str | Path | None = None,
    memory_limit: int = 256 << 20,
    progress: ProgressCallback | None = None,
) -> list[PyramidLevel]:
    """Add coarser levels to a store on a dask.distributed cluster, as ``build_pyramid`` does.

    The levels are byte for byte those of :func:`~zarr_vectors.build_pyramid` with the same
    options; the work is split by ranges of whole objects (or of chunks, for point clouds
    without objects) and by blocks of output chunks.

    Parameters
    ----------
    store
        An existing store every worker can reach: a path or URL (not a ``MemoryStore`` or a
        zip file).
    bin_ratios, object_sparsity, sparsity_strategy, sparsity_attribute, aggregation, seed
        As in :func:`~zarr_vectors.build_pyramid`.
    overwrite, compressor, storage_options
        As in :func:`~zarr_vectors.build_pyramid`.
    client
        A ``distributed.Client``, a scheduler address (``"tcp://host:8786"``), or None for
        the current client.
    spill_dir
        Directory shared by every worker for the shuffle (default: system temp directory,
        fine for a ``LocalCluster``).
    memory_limit
        Bytes of level-0 vertices one task coarsens, and of spilled rows one write task
        handles (tasks use a few times this); there are at least two tasks per worker
        thread when the store has enough objects or chunks.
    progress
        Called as ``progress("pyramid read", done, tasks)`` while an object store is read,
        ``progress("pyramid partitions", done, partitions)`` while partitions coarsen, then
        ``progress("pyramid", levels done, levels)`` after each level.

    Returns
    -------
    list of PyramidLevel
        What each new level holds.

    Raises
    ------
    InvalidInputError
        As ``build_pyramid``; also for an unreachable store, or a graph, skeleton or mesh
        store (their links cross partitions: use ``build_pyramid``).
    StoreExistsError
        Levels > 0 exist and ``overwrite`` is False.
    """
    root = open_store(store, mode="r+", storage_options=storage_options)
    _check_reachable(root.store_path.store, zip_ok=False)
    reader = LevelReader(root, 0)
    plan = plan_pyramid(
        reader,
        bin_ratios,
        object_sparsity=object_sparsity,
        sparsity_strategy=sparsity_strategy,
        sparsity_attribute=sparsity_attribute,
        aggregation=aggregation,
        seed=seed,
        compressor=compressor,
    )
    gtype = plan.meta.geometry_type
    if not exact_partitions(gtype):
        names = ", ".join(sorted(n for n in registered_type_names() if exact_partitions(n)))
        raise InvalidInputError(
            f"distributed pyramids support {names}; a {gtype} store's links may join "
            "objects of different partitions: build its pyramid with zarr_vectors.build_pyramid"
        )
    cl, own_client = _connect(client)  # before deleting anything: there may be no cluster
    tmp = make_spill_dir(spill_dir)
    stage = None
    try:
        old_levels = coarse_levels(root, overwrite=overwrite)
        stage = begin_staging(root)  # old levels stay until every new one is complete
        build = _Build(cl, root, reader, plan, tmp, int(memory_limit), progress, stage)
        vertex_bytes = row_bytes(reader) + 16  # + object id and weight while coarsening
        max_vertices = max(1, build.memory_limit // vertex_bytes)
        partitions = plan_partitions(reader, max_vertices=max_vertices, min_count=2 * build.threads)
        block = block_chunks(
            reader,
            bytes_per_vertex=vertex_bytes,
            max_block_bytes=build.memory_limit // 2,
            min_blocks=4 * build.threads,
        )
        block = _whole_shards(block, plan.block_shards)
        objects = reader.object_attributes(None)
        rows = build.spill_rows(partitions, max_vertices)
        keep = build.keep_ranks(partitions, objects, rows)
        results, dirs = build.coarsen(partitions, keep, block, rows)
        levels = build.write(results, dirs, objects, reader.groups)
        swap_levels(root, stage, list(range(1, len(levels) + 1)), old_levels)
        stage = None
        write_multiscale_metadata(root)
        return levels
    finally:
        if stage is not None:  # the build failed: drop its partial levels
            drop_staging(root, stage)
        shutil.rmtree(tmp, ignore_errors=True)
        if own_client:
            cl.close()
