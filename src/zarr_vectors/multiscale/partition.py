"""Split a pyramid build into independent partitions of level 0 (FORMAT.md §10, §6).

A :class:`Partition` is a contiguous slice of level 0 *in the order the serial build reads it*:

* **objects** ``[start, stop)`` for stores with objects.  Metavertices never span objects, so
  coarsening whole objects gives exactly the serial metavertices of those objects, at every
  level, whatever the geometry of the objects;
* **chunks** (flat grid indices) ``[start, stop)`` for point clouds without objects.  Their
  metavertices never span chunks, so a partition is exact as long as no vertex of it is
  located, at some level, in a chunk of another partition.  Means stay inside the bin of
  their members up to rounding, so this is rare; the coarsening task reports such *escaped*
  chunks and :func:`merge_partitions` joins the partitions involved for a retry.

Chunk ranges also split the reading of object stores, so that every chunk is decoded once
(:mod:`~zarr_vectors.multiscale.tasks`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.reader import LevelReader
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.typespec import type_spec

__all__ = [
    "Partition",
    "PartitionKind",
    "block_chunks",
    "exact_partitions",
    "merge_partitions",
    "plan_partitions",
    "row_bytes",
]

IntArray = npt.NDArray[np.int64]


def exact_partitions(geometry_type: str) -> bool:
    """Whether partitions derive the levels of ``geometry_type`` exactly.

    Types with a ``links`` array (graphs, skeletons, meshes) are left out: their links may join
    objects of different partitions, and the serial build orders and de-duplicates remapped
    links over the whole level.
    """
    return type_spec(geometry_type).exact_partitions


class PartitionKind(Enum):
    """What a partition's range counts."""

    OBJECTS = "objects"
    """Dense object ids (stores with objects)."""
    CHUNKS = "chunks"
    """Flat chunk-grid indices (point clouds without objects)."""


@dataclass(frozen=True)
class Partition:
    """A contiguous slice ``[start, stop)`` of level 0 in serial read order."""

    index: int
    """Position among the partitions (also the spill batch number)."""
    kind: PartitionKind
    """Whether the range counts objects or chunks."""
    start: int
    """First object id or flat chunk index."""
    stop: int
    """One past the last object id or flat chunk index."""


def row_bytes(reader: LevelReader) -> int:
    """Bytes of one level-0 vertex: position plus every vertex attribute."""
    total = 0
    for path in [L.VERTICES, *(f"{L.ATTRIBUTES}/{n}" for n in reader.names(L.ATTRIBUTES))]:
        attrs = reader.payload(path).attrs
        total += np.dtype(attrs["dtype"]).itemsize * int(attrs["width"])
    return total


def _object_vertices(reader: LevelReader) -> IntArray:
    """Cumulative level-0 vertices before each object, (n_objects + 1,)."""
    d = reader.layout.ndim
    counts = np.asarray(reader.node(L.OBJECT_MANIFEST)[:, d + 1], dtype=np.int64)
    per_ref = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return per_ref[reader.object_offsets]


def _cuts(cumulative: IntArray, n_parts: int) -> IntArray:
    """Return where partitions of similar vertex counts start (unit indices), plus the end."""
    n_units = len(cumulative) - 1
    targets = cumulative[-1] * np.arange(1, n_parts) / n_parts
    inner = np.searchsorted(cumulative, targets, side="left")
    return np.unique(np.concatenate([[0], np.clip(inner, 0, n_units), [n_units]]))


def plan_partitions(
    reader: LevelReader,
    *,
    max_vertices: int,
    min_count: int,
    min_vertices: int = 1 << 16,
    kind: PartitionKind | None = None,
) -> list[Partition]:
    """Split level 0 into ranges of whole objects (or chunks) of similar vertex counts.

    Parameters
    ----------
    reader
        Level 0 of the store.
    max_vertices
        Most vertices a partition should hold.
    min_count
        Fewest partitions wanted (for parallelism), if there are that many objects or chunks
        and each partition keeps at least ``min_vertices`` vertices.
    min_vertices
        Fewest vertices worth a partition of their own (smaller ones cost more than they
        save), unless ``max_vertices`` asks for smaller ones.
    kind
        Ranges of objects or of chunks; default: objects when the store has them.

    Returns
    -------
    list of Partition
        Ranges covering every object id (or every flat chunk index) once, in order.
    """
    if kind is None:
        has_objects = reader.has(L.OBJECT_OFFSETS)
        kind = PartitionKind.OBJECTS if has_objects else PartitionKind.CHUNKS
    flats = None
    if kind is PartitionKind.OBJECTS:
        cumulative = _object_vertices(reader)
    else:
        flats = reader.chunks()
        counts = reader.vertex_counts[flats]
        cumulative = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    total = int(cumulative[-1])
    wanted = min(min_count, math.ceil(total / max(min_vertices, 1)))
    n_parts = max(wanted, math.ceil(total / max(max_vertices, 1)), 1)
    cuts = _cuts(cumulative, min(n_parts, max(len(cumulative) - 1, 1)))
    if len(cuts) < 2:  # no objects: one empty partition
        cuts = np.array([0, 0], dtype=np.int64)
    edges = cuts
    if flats is not None:  # unit k is the k-th non-empty chunk; cover the whole grid
        edges = np.concatenate([[0], flats[cuts[1:-1]], [reader.layout.n_chunks]])
    return [
        Partition(i, kind, int(a), int(b))
        for i, (a, b) in enumerate(itertools.pairwise(edges.tolist()))
    ]


def merge_partitions(
    partitions: Sequence[Partition], escaped: Mapping[int, IntArray]
) -> list[Partition]:
    """Join chunk partitions whose vertices escaped into another partition's chunks.

    ``escaped`` maps a partition index to the flat chunks its vertices moved to.  The
    partitions between the two are joined too, so every partition stays a contiguous range.
    """
    starts = np.array([p.start for p in partitions], dtype=np.int64)
    joined = np.zeros(len(partitions), dtype=bool)  # joined[k]: k and k + 1 become one
    for p, flats in escaped.items():
        if len(flats) == 0:
            continue
        q = np.searchsorted(starts, flats, side="right") - 1
        lo, hi = min(p, int(q.min())), max(p, int(q.max()))
        joined[lo:hi] = True
    out: list[Partition] = []
    first = 0
    for k, part in enumerate(partitions):
        if not joined[k]:
            out.append(Partition(len(out), part.kind, partitions[first].start, part.stop))
            first = k + 1
    return out


def block_chunks(
    reader: LevelReader, *, bytes_per_vertex: int, max_block_bytes: int, min_blocks: int
) -> int:
    """Chunks per axis of a spill block: as large as memory and parallelism allow.

    Blocks group chunks for the shuffle (fewer, larger files); a write task handles whole
    blocks, so a block should stay below ``max_block_bytes`` and there should be at least
    ``min_blocks`` of them.
    """
    flats = reader.chunks()
    if len(flats) == 0:
        return 1
    counts = reader.vertex_counts[flats]
    coords = reader.layout.coords_of_flat(flats)
    k = 1
    while k < max(reader.layout.grid.shape):
        _, inverse = np.unique(coords // (2 * k), axis=0, return_inverse=True)
        sums = np.bincount(inverse.ravel(), weights=counts)
        if len(sums) < min_blocks or sums.max() * bytes_per_vertex > max_block_bytes:
            break
        k *= 2
    return k
