"""Distributed builds on dask.distributed: many input partitions in, one store out.

The steps are the streaming writer's, run as cluster tasks (FORMAT.md §6 concurrency rule):

1. **ingest** — one task per input partition loads it, converts it with
   :func:`~zarr_vectors.streaming.batch_parts` and spills it by blocks of chunks
   (:func:`~zarr_vectors.core.spill.spill_batch`): the shuffle by chunk;
2. **number** — the client assembles the batch summaries (global ids, categories, grid);
3. **write** — one task per round of blocks plans and writes its chunks' payloads; rounds own
   disjoint chunks, so every chunk is written by exactly one task;
4. **merge** — the client writes the object index, links across blocks, dense arrays and
   metadata (root metadata last).

The spill directory must be reachable by every worker (a local path for a ``LocalCluster``,
shared storage otherwise), and so must the store (a path or URL, not a ``MemoryStore``).
The bytes written equal those of the in-memory ``write_*`` functions.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import zarr
from zarr.storage import MemoryStore

import distributed
from zarr_vectors.core.assemble import Assembly, assemble, process_link_round, process_round
from zarr_vectors.core.io import CompressorSpec
from zarr_vectors.core.reader import BBoxLike
from zarr_vectors.core.spill import BatchSummary, spill_batch
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.stream import write_assembled
from zarr_vectors.core.writer import LevelWriter, StoreOptions, WriteSummary, store_options
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.streaming import batch_parts, type_keys

__all__ = ["write_distributed"]

Loader = Callable[[Any], Mapping[str, Any]]
"""Turns one input partition into the keyword arguments of a batch (``data`` + options)."""


def _spill_task(
    batch: int,
    item: Any,
    load: Loader | None,
    geometry_type: GeometryTypeName,
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
        frame_bytes=opts.frame_bytes,
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


def _runner(client: distributed.Client, opts: StoreOptions) -> Callable[..., list[Any]]:
    def run(kind: str, asm: Assembly, rounds: list[list[str]], w: LevelWriter) -> list[Any]:
        if isinstance(w.group.store_path.store, MemoryStore):
            raise InvalidInputError(
                "distributed builds need a store every worker can reach "
                "(a path or URL), not a MemoryStore"
            )
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
    geometry_type: GeometryTypeName | str,
    partitions: Sequence[Any],
    *,
    chunk_shape: Sequence[float],
    load: Loader | None = None,
    client: distributed.Client | str | None = None,
    bin_shape: Sequence[float] | None = None,
    bounds: BBoxLike | None = None,
    spill_dir: str | Path | None = None,
    partition_chunks: int = 1,
    memory_limit: int = 256 << 20,
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    compressor: CompressorSpec = "default",
    shards: Sequence[int] | None = None,
    frame_bytes: int | Literal["auto"] | None = "auto",
    storage_options: Mapping[str, Any] | None = None,
    directed: bool = False,
    type_metadata: Mapping[str, Any] | None = None,
    coordinate_system: str = "unknown",
    axis_units: str | None = None,
    source_description: str | None = None,
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
    chunk_shape, bin_shape, bounds, zarr_format, overwrite, compressor, shards, storage_options
        As in :func:`~zarr_vectors.write_points`.
    load
        Runs on a worker for each partition item (e.g. reads a file); default: identity.
    client
        A ``distributed.Client``, a scheduler address, or None for the current client.
    spill_dir
        Directory shared by every worker for the shuffle (default: system temp directory,
        fine for a ``LocalCluster``).
    partition_chunks, memory_limit
        Block size of the shuffle and bytes handled per write task.
    directed, type_metadata, coordinate_system, axis_units, source_description
        Root metadata.

    Returns
    -------
    WriteSummary
        What was written; the store equals the in-memory writer's for the same data.
    """
    gtype = GeometryTypeName.parse(geometry_type)
    if isinstance(store, MemoryStore):
        raise InvalidInputError(
            "distributed builds need a store every worker can reach "
            "(a path or URL), not a MemoryStore"
        )
    own_client = isinstance(client, str)
    cl = (
        distributed.Client(client)
        if isinstance(client, str)
        else (client or distributed.get_client())
    )
    opts = store_options(
        len(chunk_shape), locals(), type_keys(gtype, directed, type_metadata), gtype
    )
    tmp = Path(tempfile.mkdtemp(prefix="zv-shuffle-", dir=spill_dir))
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
            partition_chunks=partition_chunks,
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
