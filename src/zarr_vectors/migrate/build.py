"""Put decoded chunk payloads together into a :class:`LevelData` (shared by both layouts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.migrate.blobs import Block
from zarr_vectors.migrate.level import Chunk, IntArray, LevelData, LinkSet

__all__ = ["chunk_key", "decode_categories", "level_data", "parse_chunk_key"]


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


def decode_categories(
    name: str, codes: npt.NDArray[Any], meta: dict[str, Any]
) -> tuple[npt.NDArray[Any], str | None]:
    """Turn upstream's dictionary-encoded (categorical) attribute back into strings.

    ZVF string attributes cannot hold a missing value, so an attribute with missing entries
    (code ``_FillValue``) keeps upstream's integer codes; the returned note says so.
    """
    if meta.get("encoding") != "dictionary":
        return codes, None
    categories = np.asarray([str(c) for c in meta.get("categories", [])], dtype=object)
    fill = meta.get("_FillValue")
    missing = codes == fill if fill is not None else np.zeros(codes.shape, bool)
    bad = (codes < 0) | (codes >= len(categories))
    if missing.any() or (bad & ~missing).any():
        note = (
            f"attribute {name!r}: {int(missing.sum())} missing value(s), which a ZVF string "
            f"attribute cannot hold; kept as upstream's integer codes ({fill} = missing) with "
            "the categories in custom_metadata"
        )
        return codes, note
    return categories[codes.astype(np.int64)], None


def level_data(
    ndim: int,
    vertices: dict[Chunk, npt.NDArray[Any]],
    attributes: dict[str, tuple[dict[Chunk, npt.NDArray[Any]], dict[str, Any]]],
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
    flat: dict[str, npt.NDArray[Any]] = {}
    notes: list[str] = []
    for name, (per, meta) in attributes.items():
        values = np.concatenate([per[c] for c in chunks]) if chunks else np.zeros(0)
        flat[name], note = decode_categories(name, values, meta)
        notes.extend([note] if note else [])
    for c in chunks:
        fragments.setdefault(c, [np.arange(len(vertices[c]), dtype=np.int64)])
    manifests: list[list[Block]] = tables.get("manifests", [])
    return LevelData(
        ndim=ndim,
        chunks=chunks,
        start=start,
        sizes={c: len(vertices[c]) for c in chunks},
        positions=positions,
        attributes=flat,
        fragments=fragments,
        manifests=manifests,
        object_ids=np.asarray(tables.get("object_ids", np.arange(len(manifests))), np.int64),
        links=LinkSet(np.zeros((0, 2), np.int64)),
        object_attributes=tables.get("object_attributes", {}),
        groups=tables.get("groups", []),
        group_attributes=tables.get("group_attributes", {}),
        notes=tuple(notes),
        categories={
            n: list(meta["categories"])
            for n, (_, meta) in attributes.items()
            if meta.get("encoding") == "dictionary"
        },
    )
