"""Write a coarse level from the spilled batches of its partitions (FORMAT.md §5, §6, §10).

The partitions of :mod:`~zarr_vectors.multiscale.partition` spill each coarse level by blocks
of chunks, one batch per partition in serial order.  The streaming writer's steps then turn
them into the level, with the same bytes as :func:`~zarr_vectors.build_pyramid`:

1. :func:`assemble_level` numbers the batches globally on the store's chunk grid;
2. :func:`open_level` creates the level group and declares its payload arrays;
3. rounds of blocks (:func:`~zarr_vectors.core.assemble.process_round`, run anywhere) write
   the payloads, every chunk by exactly one round;
4. :func:`finish_level` merges the rounds' object refs into the object index and writes the
   path joins, the dense arrays and, last, the level metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import zarr

from zarr_vectors.core.assemble import (
    Assembly,
    RoundResult,
    assemble,
    declare_arrays,
    merge_refs,
    write_joins,
)
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.spill import BatchSummary
from zarr_vectors.core.writer import LevelWriter, StoreOptions, write_dense_arrays
from zarr_vectors.multiscale.pyramid import PyramidPlan
from zarr_vectors.query.statistics import write_payload_statistics
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import LevelMetadata

__all__ = ["assemble_level", "finish_level", "open_level", "writer_options"]


def writer_options(plan: PyramidPlan, level: int) -> StoreOptions:
    """Options of the payload writers of coarse level ``level`` (as the serial build)."""
    return StoreOptions(
        chunk_shape=tuple(plan.meta.chunk_shape),
        compressor=plan.compressor,
        shards=plan.shards(level),
        frame_bytes=None,
    )


def assemble_level(
    directory: str | Path, summaries: Sequence[BatchSummary], plan: PyramidPlan, level: int
) -> Assembly:
    """Return the global numbering of the spilled batches of ``level`` on the store's grid.

    Attribute categories stay those of level 0 (every batch carries them unchanged), so no
    category code is remapped.
    """
    layout = plan.layout(level)
    opts = StoreOptions(chunk_shape=layout.chunk_shape, bin_shape=layout.bin_shape)
    asm = assemble(directory, summaries, opts, ndim=layout.ndim)
    first = min(summaries, key=lambda s: s.batch)
    return replace(asm, layout=layout, attributes=dict(first.attributes), categorical={})


def open_level(root: zarr.Group, plan: PyramidPlan, asm: Assembly, level: int) -> LevelWriter:
    """Create the group of level ``level`` and declare the payload arrays rounds write."""
    group = root.create_group(L.level_path(level))
    w = LevelWriter(group, asm.layout.grid.shape, plan.compressor, plan.shards(level))
    declare_arrays(asm, w)
    return w


def finish_level(
    w: LevelWriter,
    asm: Assembly,
    results: Sequence[RoundResult],
    plan: PyramidPlan,
    level: int,
    *,
    used: Mapping[str, str],
    object_attributes: Mapping[str, Column],
    groups: GroupTable | None,
) -> LevelMetadata:
    """Write everything of a level but its payloads, then its metadata (last).

    Parameters
    ----------
    w
        The level's writer (from :func:`open_level`).
    asm
        The level's numbering.
    results
        What every round of the level reported.
    plan
        The build.
    level
        Level number.
    used
        Aggregation applied per vertex attribute.
    object_attributes, groups
        Level-0 object attributes and groups (every level keeps all object ids).

    Returns
    -------
    LevelMetadata
        The level's metadata, as written.
    """
    layout = asm.layout
    vertex_counts = np.zeros(layout.n_chunks, dtype=np.int64)
    for r in results:
        vertex_counts[r.chunks] = r.counts
    manifest, offsets, ref_obj = merge_refs([r.refs for r in results], asm.n_objects, layout.ndim)
    try:
        if asm.has_objects and plan.sequential:
            write_joins(w, layout, manifest, ref_obj)
        write_payload_statistics(w, w.group, layout, vertex_counts)  # as the serial build
        write_dense_arrays(
            w,
            vertex_counts.reshape(layout.grid.shape),
            manifest if asm.has_objects else None,
            offsets if asm.has_objects else None,
            object_attributes,
            groups,
        )
    except BaseException:
        w.abort()
        raise
    w.finish()
    done = replace(
        plan.level_template(level, used),
        vertex_count=asm.n_vertices,
        object_count=int(np.count_nonzero(np.diff(offsets))),
        chunk_count=int(np.count_nonzero(vertex_counts)),
    )
    w.group.attrs.put(done.to_dict())
    return done
