"""Small random inputs of every geometry type, their concatenation, and comparable reads.

Each :class:`Case` knows how to write an input, append one, concatenate two inputs into the
input of one fresh write, and read a store back as plain comparable values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

import numpy as np

import zarr_vectors as zv
from zarr_vectors.edit import (
    append_graph,
    append_lines,
    append_meshes,
    append_points,
    append_polylines,
    append_skeletons,
    append_streamlines,
)

CHUNK2 = (8.0, 8.0)
CHUNK3 = (8.0, 8.0, 8.0)
Data = dict[str, Any]


def _pos(rng: np.random.Generator, n: int, d: int, shift: float) -> np.ndarray:
    return np.round(rng.uniform(-12, 12, size=(n, d)) + shift, 2)


def plain(value: Any) -> Any:
    """A read result as nested builtins/arrays for equality checks."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str if value.dtype.kind != "O" else "O", value.tolist())
    if hasattr(value, "value") and not isinstance(value, int | float | str):
        return value.value
    return value


@dataclass(frozen=True)
class Case:
    """One geometry type's write, append, concatenation and read."""

    name: str
    make: Callable[[np.random.Generator, int, float], Data]
    write: Callable[..., Any]
    append: Callable[..., Any]
    concat: Callable[[Data, Data], Data]
    read: Callable[..., Any]
    chunk: tuple[float, ...]

    def write_data(self, store: Any, data: Data) -> None:
        self.write(store, chunk_shape=self.chunk, **data)


def _points(rng: np.random.Generator, n: int, shift: float) -> Data:
    return {"positions": _pos(rng, n, 2, shift), "attributes": {"w": rng.normal(size=n)}}


def _points_cat(a: Data, b: Data) -> Data:
    return {
        "positions": np.concatenate([a["positions"], b["positions"]]),
        "attributes": {"w": np.concatenate([a["attributes"]["w"], b["attributes"]["w"]])},
    }


def _paths(rng: np.random.Generator, n: int, shift: float) -> Data:
    lens = rng.integers(1, 5, size=max(n, 1))
    paths = [_pos(rng, int(k), 2, shift) for k in lens]
    return {
        "paths": paths,
        "attributes": {"w": [rng.normal(size=len(p)).astype(np.float32) for p in paths]},
        "object_attributes": {"s": rng.integers(0, 9, size=len(paths)).astype(np.int16)},
    }


def _paths_cat(a: Data, b: Data) -> Data:
    return {
        "paths": a["paths"] + b["paths"],
        "attributes": {"w": a["attributes"]["w"] + b["attributes"]["w"]},
        "object_attributes": {
            "s": np.concatenate([a["object_attributes"]["s"], b["object_attributes"]["s"]])
        },
    }


def _lines(rng: np.random.Generator, n: int, shift: float) -> Data:
    m = max(n, 1)
    return {
        "endpoints": _pos(rng, 2 * m, 2, shift).reshape(m, 2, 2),
        "object_attributes": {"s": rng.normal(size=m)},
    }


def _lines_cat(a: Data, b: Data) -> Data:
    return {
        "endpoints": np.concatenate([a["endpoints"], b["endpoints"]]),
        "object_attributes": {
            "s": np.concatenate([a["object_attributes"]["s"], b["object_attributes"]["s"]])
        },
    }


def _graph(rng: np.random.Generator, n: int, shift: float) -> Data:
    n = max(n, 2)
    pairs = {(int(i), int(j)) for i, j in rng.integers(0, n, size=(n, 2)) if i < j}
    edges = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return {
        "positions": _pos(rng, n, 3, shift),
        "edges": edges,
        "attributes": {"w": rng.normal(size=n)},
        "edge_attributes": {"e": rng.integers(0, 5, size=len(edges)).astype(np.int32)},
    }


def _graph_cat(a: Data, b: Data) -> Data:
    n = len(a["positions"])
    return {
        "positions": np.concatenate([a["positions"], b["positions"]]),
        "edges": np.concatenate([a["edges"], b["edges"] + n]),
        "attributes": {"w": np.concatenate([a["attributes"]["w"], b["attributes"]["w"]])},
        "edge_attributes": {
            "e": np.concatenate([a["edge_attributes"]["e"], b["edge_attributes"]["e"]])
        },
    }


def _append_graph(store: Any, **data: Any) -> Any:
    """``append_graph`` of a whole new graph: its edges shifted past the stored nodes."""
    stored = zv.read_graph(store).n_vertices
    return append_graph(store, **{**data, "edges": np.asarray(data["edges"]) + stored})


def _skeleton(rng: np.random.Generator, n: int, shift: float) -> Data:
    sizes = rng.integers(1, 5, size=max(1, n // 2))
    parents, offsets = [], [0]
    for k in sizes:
        base = offsets[-1]
        par = [-1] + [base + int(rng.integers(0, i)) for i in range(1, int(k))]
        parents.append(np.array(par, np.int64))
        offsets.append(offsets[-1] + int(k))
    total = offsets[-1]
    return {
        "positions": _pos(rng, total, 3, shift),
        "parents": np.concatenate(parents),
        "offsets": np.array(offsets),
        "radius": np.round(rng.uniform(0.5, 2, size=total), 3),
    }


def _skeleton_cat(a: Data, b: Data) -> Data:
    return {
        "positions": np.concatenate([a["positions"], b["positions"]]),
        "parents": np.concatenate(
            [a["parents"], np.where(b["parents"] < 0, -1, b["parents"] + a["offsets"][-1])]
        ),
        "offsets": np.concatenate([a["offsets"], b["offsets"][1:] + a["offsets"][-1]]),
        "radius": np.concatenate([a["radius"], b["radius"]]),
    }


def _mesh(rng: np.random.Generator, n: int, shift: float) -> Data:
    k = max(1, n // 2)
    verts = _pos(rng, 3 * k, 3, shift)
    faces = np.arange(3 * k, dtype=np.int64).reshape(k, 3)
    return {
        "vertices": verts,
        "faces": faces,
        "face_attributes": {"q": rng.normal(size=k)},
    }


def _mesh_cat(a: Data, b: Data) -> Data:
    n = len(a["vertices"])
    return {
        "vertices": np.concatenate([a["vertices"], b["vertices"]]),
        "faces": np.concatenate([a["faces"], b["faces"] + n]),
        "face_attributes": {
            "q": np.concatenate([a["face_attributes"]["q"], b["face_attributes"]["q"]])
        },
    }


def _path_writer(fn: Callable[..., Any]) -> Callable[..., Any]:
    def write(store: Any, paths: Any, **kw: Any) -> Any:
        return fn(store, paths, **kw)

    return write


def _lines_append(store: Any, endpoints: Any, **kw: Any) -> Any:
    return append_lines(store, endpoints, **kw)


CASES = (
    Case(
        "point_cloud", _points, zv.write_points, append_points, _points_cat, zv.read_points, CHUNK2
    ),
    Case(
        "polyline",
        _paths,
        _path_writer(zv.write_polylines),
        _path_writer(append_polylines),
        _paths_cat,
        zv.read_polylines,
        CHUNK2,
    ),
    Case(
        "streamline",
        _paths,
        _path_writer(zv.write_streamlines),
        _path_writer(append_streamlines),
        _paths_cat,
        zv.read_streamlines,
        CHUNK2,
    ),
    Case("line", _lines, zv.write_lines, _lines_append, _lines_cat, zv.read_lines, CHUNK2),
    Case("graph", _graph, zv.write_graph, _append_graph, _graph_cat, zv.read_graph, CHUNK3),
    Case(
        "skeleton",
        _skeleton,
        zv.write_skeletons,
        append_skeletons,
        _skeleton_cat,
        zv.read_skeletons,
        CHUNK3,
    ),
    Case("mesh", _mesh, zv.write_meshes, append_meshes, _mesh_cat, zv.read_meshes, CHUNK3),
)
CASE_IDS = [c.name for c in CASES]


def reads(case: Case, store: Any) -> list[Any]:
    """Whole, box and by-id reads of level 0 as comparable values."""
    n_objects = int(zv.open_store(store)["0"].attrs["object_count"])
    d = len(case.chunk)
    box = ([-6.0] * d, [7.0] * d)
    out = [plain(case.read(store)), plain(case.read(store, bbox=box))]
    if case.name != "point_cloud" and n_objects:
        ids = np.arange(0, n_objects, 2)
        out.append(plain(case.read(store, object_ids=ids)))
    return out
