"""One resolution level of an upstream store, decoded into plain arrays.

Both upstream layouts end up in :class:`LevelData`: vertices numbered chunk by chunk in sorted
chunk order (the order upstream's own readers return them in), links and faces as rows of those
global numbers, and the object, attribute and group tables as upstream wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.migrate.blobs import Block

__all__ = ["Chunk", "LevelData", "LinkSet"]

IntArray = npt.NDArray[np.int64]
Chunk = tuple[int, ...]


@dataclass(frozen=True)
class LinkSet:
    """Links (edges or faces) as global vertex numbers, with their attributes."""

    rows: IntArray
    """``(n, width)`` global vertex numbers, endpoints in the order upstream recorded."""
    attributes: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-link values, row ``i`` for link ``i``."""
    directed: bool = False
    """True when upstream marked the links directed (0.9.x ``links/0`` ``directed``)."""


@dataclass(frozen=True)
class LevelData:
    """Everything of one upstream level, decoded."""

    ndim: int
    """Spatial dimensions."""
    chunks: list[Chunk]
    """Non-empty chunks, sorted."""
    start: dict[Chunk, int]
    """Global number of each chunk's first vertex."""
    sizes: dict[Chunk, int]
    """Number of vertices of each chunk."""
    positions: npt.NDArray[np.floating[Any]]
    """``(N, D)`` vertices in global order."""
    attributes: dict[str, npt.NDArray[Any]]
    """Per-vertex attributes in global order."""
    fragments: dict[Chunk, list[IntArray]]
    """Each chunk's fragments as local row numbers."""
    manifests: list[list[Block]]
    """Object manifests, in object-table order (empty when the level has no object index)."""
    object_ids: IntArray
    """The object id of each manifest."""
    links: LinkSet
    """Edges or faces, intra- and cross-chunk together."""
    object_attributes: dict[str, npt.NDArray[Any]]
    """Per-object values, row ``i`` for object id ``i``."""
    groups: list[IntArray]
    """Member object ids of each group."""
    group_attributes: dict[str, npt.NDArray[Any]]
    """Per-group values."""
    notes: tuple[str, ...] = ()
    """What could not be carried over exactly (one sentence each)."""
    categories: dict[str, list[Any]] = field(default_factory=dict)
    """Categories of upstream's dictionary-encoded attributes, by attribute name."""

    def global_rows(self, chunk: Chunk, local: IntArray, where: str) -> IntArray:
        """Turn rows local to ``chunk`` into global vertex numbers."""
        if chunk not in self.start:
            raise CorruptPayloadError(f"{where}: names chunk {chunk}, which holds no vertices")
        first = self.start[chunk]
        size = self.chunk_size(chunk)
        if local.size and (local.min() < 0 or local.max() >= size):
            raise CorruptPayloadError(f"{where}: a row is outside chunk {chunk} ({size} rows)")
        return local + first

    def chunk_size(self, chunk: Chunk) -> int:
        """Count the vertices in ``chunk``."""
        return self.sizes[chunk]

    def endpoints_to_global(self, coords: IntArray, rows: IntArray, where: str) -> IntArray:
        """Global numbers of ``(chunk coords, local row)`` endpoints, ``coords`` as ``(n, D)``."""
        out = np.empty(len(rows), np.int64)
        if not len(rows):
            return out
        unique, inverse = np.unique(coords, axis=0, return_inverse=True)
        for k, chunk in enumerate(unique.tolist()):
            pick = inverse.reshape(-1) == k
            out[pick] = self.global_rows(tuple(chunk), rows[pick], where)
        return out

    def object_rows(self, index: int, where: str) -> IntArray:
        """Global vertex numbers of object ``index`` (manifest order, fragment by fragment)."""
        parts = [
            self.global_rows(chunk, self.fragments[chunk][f], where)
            for chunk, frags in self.manifests[index]
            for f in frags
        ]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def object_fragments(self, index: int, where: str) -> list[IntArray]:
        """Return the fragments of object ``index`` as global vertex numbers, in manifest order."""
        return [
            self.global_rows(chunk, self.fragments[chunk][f], where)
            for chunk, frags in self.manifests[index]
            for f in frags
        ]
