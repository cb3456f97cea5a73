"""Turn a decoded upstream level into the arguments of this library's public writers.

Each function returns keyword arguments for one ``zv.write_*`` call plus the defects found.
Coordinates and attribute values are copied as stored; objects keep upstream's object ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.migrate.level import IntArray, LevelData

__all__ = [
    "objects_per_chunk",
    "shared_fragments",
    "graph_args",
    "line_args",
    "mesh_args",
    "path_args",
    "point_args",
    "skeleton_args",
    "vertex_object_ids",
]


def shared_fragments(data: LevelData) -> bool:
    """Whether two objects name the same fragment, so vertex membership is not recorded.

    Upstream 0.2.0 meshes store one fragment per chunk and point every object at it.
    """
    seen: set[tuple[tuple[int, ...], int]] = set()
    for blocks in data.manifests:
        mine = {(chunk, f) for chunk, frags in blocks for f in frags}
        if mine & seen:
            return True
        seen |= mine
    return False


def objects_per_chunk(data: LevelData) -> dict[tuple[int, ...], set[int]]:
    """Map each chunk to the objects with vertices in it."""
    out: dict[tuple[int, ...], set[int]] = {}
    for oid, blocks in zip(data.object_ids.tolist(), data.manifests, strict=True):
        for chunk, _ in blocks:
            out.setdefault(chunk, set()).add(oid)
    return out


def vertex_object_ids(data: LevelData, where: str) -> IntArray | None:
    """Return the object id of every vertex, or None when the level records none.

    None also when objects share fragments (see :func:`shared_fragments`).
    """
    if not data.manifests or shared_fragments(data):
        return None
    out = np.full(len(data.positions), -1, np.int64)
    for i, oid in enumerate(data.object_ids):
        out[data.object_rows(i, where)] = oid
    return out


def _tables(data: LevelData) -> dict[str, Any]:
    """Object attributes, groups (named by their upstream number) and group attributes."""
    out: dict[str, Any] = {}
    if data.object_attributes:
        out["object_attributes"] = dict(data.object_attributes)
    if data.groups:
        out["groups"] = {str(g): members for g, members in enumerate(data.groups)}
        if data.group_attributes:
            out["group_attributes"] = dict(data.group_attributes)
    return out


def point_args(data: LevelData, where: str) -> dict[str, Any]:
    """``write_points`` arguments: vertices in upstream's read order."""
    args: dict[str, Any] = {"positions": data.positions, "attributes": dict(data.attributes)}
    oids = vertex_object_ids(data, where)
    if oids is not None and (oids >= 0).all():
        args["vertex_object_ids"] = oids
        args.update(_tables(data))
    return args


def _object_order(data: LevelData, where: str) -> tuple[IntArray, IntArray]:
    """Vertex rows object after object (manifest order) and the CSR offsets of the objects."""
    rows = [data.object_rows(i, where) for i in range(len(data.manifests))]
    offsets = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    flat = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return flat, offsets


def path_args(data: LevelData, where: str) -> dict[str, Any]:
    """``write_polylines`` arguments: each object's rows in manifest order are its path."""
    rows, offsets = _object_order(data, where)
    return {
        "positions": data.positions[rows],
        "offsets": offsets,
        "object_ids": data.object_ids,
        "attributes": {n: v[rows] for n, v in data.attributes.items()},
        **_tables(data),
    }


def line_args(data: LevelData, where: str) -> dict[str, Any]:
    """``write_lines`` arguments: every object is one segment of two vertices."""
    rows, offsets = _object_order(data, where)
    if not (np.diff(offsets) == 2).all():
        raise ValueError(f"{where}: an upstream line object does not hold exactly two vertices")
    args: dict[str, Any] = {
        "endpoints": data.positions[rows].reshape(-1, 2, data.ndim),
        "object_ids": data.object_ids,
        "attributes": {n: v[rows].reshape(-1, 2, *v.shape[1:]) for n, v in data.attributes.items()},
        **_tables(data),
    }
    return args


def graph_args(data: LevelData, where: str) -> dict[str, Any]:
    """``write_graph`` arguments: vertices in upstream's read order, edges as recorded."""
    args: dict[str, Any] = {
        "positions": data.positions,
        "edges": data.links.rows,
        "attributes": dict(data.attributes),
        "edge_attributes": dict(data.links.attributes),
    }
    if data.links.directed:
        args["directed"] = True
    oids = vertex_object_ids(data, where)
    if oids is not None and (oids >= 0).all():
        args["vertex_object_ids"] = oids
        args.update(_tables(data))
    return args


def mesh_args(data: LevelData, where: str) -> dict[str, Any]:
    """``write_meshes`` arguments: vertices in upstream's read order, faces as recorded."""
    args = graph_args(data, where)
    args["vertices"] = args.pop("positions")
    args["faces"] = args.pop("edges")
    args["face_attributes"] = args.pop("edge_attributes")
    args.pop("directed", None)
    return args


def skeleton_parents(data: LevelData, where: str) -> tuple[IntArray, list[IntArray]]:
    """Parent of every vertex (global numbers, -1 for roots) and each object's fragments.

    Upstream records a parent explicitly (a branch link or a cross-chunk link, child first)
    only where it is not the previous row of the same fragment; a fragment's first row without
    an explicit parent is a root.
    """
    parents = np.full(len(data.positions), -2, np.int64)
    explicit = data.links.rows
    parents[explicit[:, 0]] = explicit[:, 1]
    frags = [f for i in range(len(data.manifests)) for f in data.object_fragments(i, where)]
    if not data.manifests:
        frags = [data.global_rows(c, f, where) for c in data.chunks for f in data.fragments[c]]
    for rows in frags:
        if len(rows) == 0:
            continue
        implicit = parents[rows[1:]] == -2
        parents[rows[1:][implicit]] = rows[:-1][implicit]
        if parents[rows[0]] == -2:
            parents[rows[0]] = -1
    return parents, frags


def sequential_reading(data: LevelData) -> IntArray:
    """Return the parents upstream 0.2.0's reader gives: the previous vertex in global order, always.

    Its reader joins every vertex without an explicit parent to the vertex read just before
    it, across objects and chunks; only vertex 0 is a root.
    """
    parents = np.arange(-1, len(data.positions) - 1, dtype=np.int64)
    explicit = data.links.rows
    parents[explicit[:, 0]] = explicit[:, 1]
    return parents


def skeleton_args(data: LevelData, where: str, parents: npt.NDArray[np.int64]) -> dict[str, Any]:
    """``write_skeletons`` arguments, one skeleton per upstream object (tree order kept)."""
    if data.manifests:
        rows, offsets = _object_order(data, where)
    else:
        rows, offsets = np.arange(len(data.positions)), np.array([0, len(data.positions)])
    new_index = np.full(len(data.positions), -1, np.int64)
    new_index[rows] = np.arange(len(rows))
    old_parent = parents[rows]
    new_parent = np.where(old_parent >= 0, new_index[np.maximum(old_parent, 0)], -1)
    attrs = {n: v[rows] for n, v in data.attributes.items()}
    args: dict[str, Any] = {
        "positions": data.positions[rows],
        "parents": new_parent,
        "offsets": offsets,
        "attributes": {n: v for n, v in attrs.items() if n != "radius"},
        **_tables(data),
    }
    if data.manifests:
        args["object_ids"] = data.object_ids
    if "radius" in attrs:
        args["radius"] = attrs["radius"]
    return args
