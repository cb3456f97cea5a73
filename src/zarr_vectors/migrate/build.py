"""Put decoded chunk payloads together into a :class:`LevelData` (shared by both layouts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.migrate.blobs import Block
from zarr_vectors.migrate.level import Chunk, IntArray, LevelData, LinkSet

__all__ = ["chunk_key", "level_data", "parse_chunk_key"]


def parse_chunk_key(name: str, ndim: int, where: str) -> Chunk | None:
    """``"0.-1.2"`` -> ``(0, -1, 2)``; None for names that are not chunk keys of ``ndim`` axes."""
    parts = name.split(".")
    if len(parts) != ndim:
        return None
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        return None


def chunk_key(chunk: Chunk) -> str:
    """``(0, -1, 2)`` -> ``"0.-1.2"``."""
    return ".".join(str(c) for c in chunk)


def level_data(
    ndim: int,
    vertices: dict[Chunk, npt.NDArray[Any]],
    attributes: dict[str, dict[Chunk, npt.NDArray[Any]]],
    fragments: dict[Chunk, list[IntArray]],
    tables: dict[str, Any],
) -> LevelData:
    """Assign global vertex numbers chunk by chunk (sorted chunks) and gather the rest.

    ``tables`` carries ``manifests``, ``object_ids``, ``object_attributes``, ``groups`` and
    ``group_attributes`` as decoded; links are attached afterwards with ``with_links``.
    """
    chunks = sorted(c for c, v in vertices.items() if len(v))
    start: dict[Chunk, int] = {}
    total = 0
    for c in chunks:
        start[c] = total
        total += len(vertices[c])
    dtype = vertices[chunks[0]].dtype if chunks else np.dtype(np.float32)
    positions = (
        np.concatenate([vertices[c] for c in chunks]) if chunks else np.zeros((0, ndim), dtype)
    )
    flat = {
        name: np.concatenate([per[c] for c in chunks]) if chunks else np.zeros(0)
        for name, per in attributes.items()
    }
    for c in chunks:
        fragments.setdefault(c, [np.arange(len(vertices[c]), dtype=np.int64)])
    manifests: list[list[Block]] = tables.get("manifests", [])
    return LevelData(
        ndim=ndim,
        chunks=chunks,
        start=start,
        positions=positions,
        attributes=flat,
        fragments=fragments,
        manifests=manifests,
        object_ids=np.asarray(tables.get("object_ids", np.arange(len(manifests))), np.int64),
        links=LinkSet(np.zeros((0, 2), np.int64)),
        object_attributes=tables.get("object_attributes", {}),
        groups=tables.get("groups", []),
        group_attributes=tables.get("group_attributes", {}),
    )
