"""Read a level of an upstream 0.2.0 store (format 0.7.0): one tiny Zarr array per chunk.

Every logical array is a group whose attributes describe it; its chunks are 1-D uint8 arrays
named by dotted chunk coordinates (``0/vertices/0.1.2``).  Global tables (object attributes,
groups, cross-chunk links) are one such byte array called ``data``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.migrate.blobs import decode_cross_records, decode_fragments, decode_manifest
from zarr_vectors.migrate.build import chunk_key, level_data, parse_chunk_key
from zarr_vectors.migrate.level import Chunk, IntArray, LevelData, LinkSet
from zarr_vectors.migrate.tree import Tree

__all__ = ["load_level"]


def _dtype(meta: dict[str, Any], default: str = "float32") -> np.dtype[Any]:
    return np.dtype(str(meta.get("dtype", default))).newbyteorder("<")


def _chunked(tree: Tree, path: str, ndim: int) -> dict[Chunk, bytes]:
    """Read the per-chunk byte arrays under ``path``."""
    out: dict[Chunk, bytes] = {}
    for name in tree.children(path):
        if name.startswith("__shard_"):
            raise InvalidInputError(
                f"{tree.name}/{path} is packed into upstream shards (__shard_*), which the "
                "migration does not read; unshard it with upstream first"
            )
        chunk = parse_chunk_key(name, ndim, path)
        if chunk is None:
            raise CorruptPayloadError(
                f"{tree.name}/{path}/{name}: not a chunk key of {ndim} axes (attribute-chunked "
                "upstream stores are not supported)"
            )
        out[chunk] = tree.blob(f"{path}/{name}")
    return out


def _vertices(tree: Tree, base: str, ndim: int) -> dict[Chunk, npt.NDArray[Any]]:
    meta = tree.attrs(f"{base}/vertices")
    if meta.get("encoding", "raw") != "raw":
        raise InvalidInputError(
            f"{tree.name}/{base}/vertices: encoding {meta.get('encoding')!r} (Draco) is not "
            "supported by the migration; rewrite the store with encoding='raw' upstream first"
        )
    dtype = _dtype(meta)
    return {
        c: np.frombuffer(raw, dtype).reshape(-1, ndim).astype(dtype.newbyteorder("="))
        for c, raw in _chunked(tree, f"{base}/vertices", ndim).items()
    }


def _vertex_attributes(
    tree: Tree, base: str, ndim: int
) -> dict[str, tuple[dict[Chunk, npt.NDArray[Any]], dict[str, Any]]]:
    out: dict[str, tuple[dict[Chunk, npt.NDArray[Any]], dict[str, Any]]] = {}
    for name in tree.children(f"{base}/vertex_attributes"):
        path = f"{base}/vertex_attributes/{name}"
        meta = tree.attrs(path)
        dtype = _dtype(meta)
        channels = len(meta.get("channel_names") or []) or 1
        per: dict[Chunk, npt.NDArray[Any]] = {}
        for c, raw in _chunked(tree, path, ndim).items():
            values = np.frombuffer(raw, dtype).astype(dtype.newbyteorder("="))
            per[c] = values.reshape(-1, channels) if channels > 1 else values
        out[meta.get("name", name)] = (per, meta)
    return out


def _table(tree: Tree, path: str) -> npt.NDArray[Any]:
    """Read a 0.2.0 global table (object or group attribute): ``data`` bytes with dtype and shape."""
    meta = tree.attrs(path)
    dtype = _dtype(meta)
    values = np.frombuffer(tree.blob(f"{path}/data"), dtype).astype(dtype.newbyteorder("="))
    shape = meta.get("shape")
    values = values.reshape(shape) if shape else values
    if meta.get("has_present_mask") and tree.exists(f"{path}/present_mask"):
        mask = np.frombuffer(tree.blob(f"{path}/present_mask"), np.uint8).astype(bool)
        values = np.where(mask.reshape((-1,) + (1,) * (values.ndim - 1)), values, 0)
    return values


def _tables(tree: Tree, base: str) -> dict[str, Any]:
    tables: dict[str, Any] = {}
    if tree.exists(f"{base}/object_index"):
        meta = tree.attrs(f"{base}/object_index")
        sid = int(meta.get("sid_ndim", 0))
        raw = tree.array(f"{base}/object_index/manifests")
        where = f"{tree.name}/{base}/object_index"
        tables["manifests"] = [decode_manifest(bytes(b), sid, where) for b in raw]
    tables["object_attributes"] = {
        n: _table(tree, f"{base}/object_attributes/{n}")
        for n in tree.children(f"{base}/object_attributes")
    }
    if tree.exists(f"{base}/groups"):
        data = tree.blob(f"{base}/groups/data")
        offsets = np.frombuffer(tree.blob(f"{base}/groups/offsets"), "<i8").tolist()
        ends = [*offsets[1:], len(data)]
        tables["groups"] = [
            np.frombuffer(data[a:b], "<i8").astype(np.int64)
            for a, b in zip(offsets, ends, strict=False)
        ]
    tables["group_attributes"] = {
        n: _table(tree, f"{base}/group_attributes/{n}")
        for n in tree.children(f"{base}/group_attributes")
    }
    return tables


def _links(tree: Tree, base: str, data: LevelData) -> tuple[LinkSet, dict[str, int]]:
    """Intra-chunk ``links/0`` plus ``cross_chunk_links/0``, in global numbers.

    Also returns how many values each link attribute holds (0.2.0 writes them for links
    inside one chunk only, so an attribute can be shorter than the links).
    """
    width = int(tree.attrs(f"{base}/links/0").get("link_width", 2))
    rows: list[IntArray] = []
    names = tree.children(f"{base}/link_attributes")
    values: dict[str, list[npt.NDArray[Any]]] = {n: [] for n in names}
    for chunk, raw in sorted(_chunked(tree, f"{base}/links/0", data.ndim).items()):
        local = np.frombuffer(raw, "<i8").reshape(-1, width).astype(np.int64)
        rows.append(data.global_rows(chunk, local, f"{tree.name}/{base}/links/0"))
        for n in names:
            path = f"{base}/link_attributes/{n}/0"
            dtype = _dtype(tree.attrs(path))
            values[n].append(np.frombuffer(tree.blob(f"{path}/{chunk_key(chunk)}"), dtype))
    ccl = f"{base}/cross_chunk_links/0"
    if tree.exists(f"{ccl}/data"):
        meta = tree.attrs(ccl)
        cwidth = int(meta.get("link_width", 2))
        if cwidth != width and rows:
            raise CorruptPayloadError(f"{tree.name}/{ccl}: link width {cwidth} != {width}")
        width = cwidth
        recs = decode_cross_records(tree.blob(f"{ccl}/data"), data.ndim, width, ccl)
        rows.append(_records_to_global(recs, data, f"{tree.name}/{ccl}"))
        for n in names:
            path = f"{base}/cross_chunk_link_attributes/{n}/0"
            if tree.exists(f"{path}/data"):
                values[n].append(_table(tree, path))
    merged = np.concatenate(rows) if rows else np.zeros((0, width), np.int64)
    attrs = {n: np.concatenate(v) for n, v in values.items() if v}
    return LinkSet(merged, {n: v for n, v in attrs.items() if len(v) == len(merged)}), {
        n: len(attrs.get(n, ())) for n in names
    }


def _records_to_global(recs: IntArray, data: LevelData, where: str) -> IntArray:
    """``(n, width, D + 1)`` cross-chunk records -> ``(n, width)`` global vertex numbers."""
    out = np.empty(recs.shape[:2], np.int64)
    for k in range(recs.shape[1]):
        out[:, k] = data.endpoints_to_global(recs[:, k, :-1], recs[:, k, -1], where)
    return out


def load_level(tree: Tree, level: int, ndim: int, with_links: bool) -> tuple[LevelData, list[str]]:
    """Decode level ``level``; also return the link attribute names dropped on the way."""
    base = str(level)
    vertices = _vertices(tree, base, ndim)
    fragments = {
        c: decode_fragments(raw, f"{tree.name}/{base}/vertex_fragments/{chunk_key(c)}")
        for c, raw in _chunked(tree, f"{base}/vertex_fragments", ndim).items()
    }
    data = level_data(
        ndim, vertices, _vertex_attributes(tree, base, ndim), fragments, _tables(tree, base)
    )
    if not with_links:
        return data, []
    links, counts = _links(tree, base, data)
    dropped = [
        f"link attribute {n!r}: upstream stored {k} value(s) for {len(links.rows)} links "
        "(it keeps values only for links inside one chunk); not copied"
        for n, k in counts.items()
        if n not in links.attributes
    ]
    return replace(data, links=links), dropped
