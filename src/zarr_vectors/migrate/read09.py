"""Read a level of an upstream 0.9.x store: one variable-length-bytes array per kind of data.

Each per-chunk kind (vertices, fragments, attributes, links) is an array over the chunk grid
with ``(1, ..., 1)`` chunks whose elements are the chunk payloads.  Links are split by the chunk
offset of their other endpoints (``links/0/0.+1.0`` joins a chunk to the next one along y);
records that cross chunks carry a permutation code restoring their endpoint order.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.migrate.blobs import (
    decode_fragments,
    decode_manifest,
    decode_neighbour_links,
    permutation,
)
from zarr_vectors.migrate.build import level_data
from zarr_vectors.migrate.level import Chunk, IntArray, LevelData, LinkSet
from zarr_vectors.migrate.tree import Tree

__all__ = ["load_level"]


def _dtype(meta: dict[str, Any]) -> np.dtype[Any]:
    return np.dtype(str(meta.get("dtype", "float32"))).newbyteorder("<")


def _grid(tree: Tree, path: str) -> dict[Chunk, bytes]:
    """Read the non-empty payloads of a grid-shaped variable-length array, by chunk."""
    meta = tree.attrs(path)
    listed = meta.get("nonempty_chunks")
    names = [tuple(int(v) for v in str(name).split(".")) for name in listed or ()]
    if listed is None:  # not listed: read the whole grid
        values = tree.array(path)
        ndim = values.ndim
    else:
        ndim = len(names[0]) if names else 0
    # the grid starts at the lowest chunk written, which may be negative
    origin = meta.get("chunk_grid_origin") or [0] * ndim
    if len(origin) != ndim:
        raise CorruptPayloadError(f"{tree.name}/{path}: chunk_grid_origin {origin} vs grid")
    if listed is None:
        index = [tuple(i) for i in np.ndindex(values.shape)]
        items = [values[i] for i in index]
    else:  # upstream lists the chunks it wrote: read only those, in one call
        index = [_shift(n, origin, -1) for n in names]
        items = list(tree.points(path, index))
    return {
        _shift(i, origin, 1): bytes(item)
        for i, item in zip(index, items, strict=True)
        if item is not None and len(item)
    }


def _shift(index: tuple[int, ...], origin: list[int], sign: int) -> Chunk:
    return tuple(int(i) + sign * int(o) for i, o in zip(index, origin, strict=True))


def _per_chunk(tree: Tree, path: str, ndim: int) -> dict[Chunk, npt.NDArray[Any]]:
    meta = tree.attrs(path)
    dtype = _dtype(meta)
    shape = tuple(meta.get("row_shape") or ())
    if path.endswith("vertices"):
        if meta.get("encoding", "raw") != "raw":
            raise InvalidInputError(
                f"{tree.name}/{path}: Draco-encoded vertices are not supported by the "
                "migration; rewrite the store with encoding='raw' upstream first"
            )
        shape = (ndim,)
    return {
        c: np.frombuffer(raw, dtype).astype(dtype.newbyteorder("=")).reshape((-1, *shape))
        for c, raw in _grid(tree, path).items()
    }


def _tables(tree: Tree, base: str) -> dict[str, Any]:
    tables: dict[str, Any] = {}
    if tree.exists(f"{base}/object_index"):
        sid = int(tree.attrs(f"{base}/object_index").get("sid_ndim", 0))
        where = f"{tree.name}/{base}/object_index"
        raw = tree.array(f"{base}/object_index/manifests")
        tables["manifests"] = [decode_manifest(bytes(b), sid, where) for b in raw]
        if tree.exists(f"{base}/object_index/object_ids"):
            tables["object_ids"] = tree.array(f"{base}/object_index/object_ids")
    tables["object_attributes"] = {
        tree.attrs(f"{base}/object_attributes/{n}").get("name", n): tree.array(
            f"{base}/object_attributes/{n}"
        )
        for n in tree.children(f"{base}/object_attributes")
    }
    if tree.exists(f"{base}/groups"):
        tables["groups"] = [
            np.frombuffer(bytes(b), "<i8").astype(np.int64) for b in tree.array(f"{base}/groups")
        ]
    tables["group_attributes"] = {
        n: tree.array(f"{base}/group_attributes/{n}")
        for n in tree.children(f"{base}/group_attributes")
    }
    return tables


def _family(tree: Tree, path: str, data: LevelData) -> IntArray:
    """One ``links/0/<offsets>`` array as global numbers, endpoints in recorded order."""
    meta = tree.attrs(path)
    width = int(meta.get("link_width", 2))
    offsets = [tuple(int(v) for v in o) for o in meta.get("offsets", [])]
    if len(offsets) != width - 1:
        raise CorruptPayloadError(f"{tree.name}/{path}: {len(offsets)} offsets for width {width}")
    where = f"{tree.name}/{path}"
    parts: list[IntArray] = []
    for owner, raw in sorted(_grid(tree, path).items()):
        recs = decode_neighbour_links(raw, width, bool(meta.get("has_perm")), where)
        ends = [owner] + [tuple(a + b for a, b in zip(owner, o, strict=False)) for o in offsets]
        stored = np.stack(
            [data.global_rows(ends[k], recs[:, 1 + k], where) for k in range(width)], axis=1
        )
        out = np.empty_like(stored)
        for code in np.unique(recs[:, 0]).tolist():
            pick = recs[:, 0] == code
            # stored endpoint i is endpoint perm[i] of the link
            out[np.ix_(pick, list(permutation(int(code), width, where)))] = stored[pick]
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros((0, width), np.int64)


def _link_values(tree: Tree, path: str) -> npt.NDArray[Any]:
    meta = tree.attrs(path)
    dtype = _dtype(meta)
    shape = tuple(meta.get("row_shape") or ())
    parts = [
        np.frombuffer(raw, dtype).astype(dtype.newbyteorder("=")).reshape((-1, *shape))
        for _, raw in sorted(_grid(tree, path).items())
    ]
    return np.concatenate(parts) if parts else np.zeros((0, *shape), dtype)


def _links(tree: Tree, base: str, data: LevelData) -> LinkSet:
    families = tree.children(f"{base}/links/0")
    width = int(tree.attrs(f"{base}/links/0").get("link_width", 2))
    rows = [_family(tree, f"{base}/links/0/{f}", data) for f in families]
    merged = np.concatenate(rows) if rows else np.zeros((0, width), np.int64)
    attrs: dict[str, npt.NDArray[Any]] = {}
    for name in tree.children(f"{base}/link_attributes"):
        path = f"{base}/link_attributes/{name}/0"
        have = set(tree.children(path))
        if have != set(families):
            continue
        attrs[name] = np.concatenate([_link_values(tree, f"{path}/{f}") for f in families])
    directed = bool(tree.attrs(f"{base}/links/0").get("directed", False))
    return LinkSet(merged, {n: v for n, v in attrs.items() if len(v) == len(merged)}, directed)


def load_level(tree: Tree, level: int, ndim: int, with_links: bool) -> tuple[LevelData, list[str]]:
    """Decode level ``level``; also return the link attribute names dropped on the way."""
    base = str(level)
    vertices = _per_chunk(tree, f"{base}/vertices", ndim)
    attributes = {}
    for n in tree.children(f"{base}/vertex_attributes"):
        meta = tree.attrs(f"{base}/vertex_attributes/{n}")
        values = _per_chunk(tree, f"{base}/vertex_attributes/{n}", ndim)
        attributes[meta.get("name", n)] = (values, meta)
    where = f"{tree.name}/{base}/vertex_fragments"
    fragments = (
        {
            c: decode_fragments(raw, where)
            for c, raw in _grid(tree, f"{base}/vertex_fragments").items()
        }
        if tree.exists(f"{base}/vertex_fragments")
        else {}
    )
    data = level_data(ndim, vertices, attributes, fragments, _tables(tree, base))
    if not with_links or not tree.exists(f"{base}/links/0"):
        return data, []
    links = _links(tree, base, data)
    dropped = [
        f"link attribute {n!r}: its arrays do not cover every link array; not copied"
        for n in tree.children(f"{base}/link_attributes")
        if n not in links.attributes
    ]
    return replace(data, links=links), dropped
