"""Writers of small stores of every geometry type, shared by the viewer tests.

Every store keeps its data inside the lower-left part of ``VIEW_BOX`` (x, y < ``DATA_MAX``), so a
rendering of the whole box must show colour there and nothing in the upper-right quarter.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import zarr_vectors as zv
from zarr_vectors.types.graphs import write_graph
from zarr_vectors.types.meshes import write_meshes
from zarr_vectors.types.skeletons import write_skeletons

DATA_MAX = 40.0
VIEW_BOX = [0.0, 0.0, 0.0, 100.0, 100.0, 100.0]
CHUNK = (50.0, 50.0, 50.0)
UNITS = "micrometer"


def _rng() -> np.random.Generator:
    return np.random.default_rng(42)


def _points(path: str) -> None:
    rng = _rng()
    pos = rng.uniform(2, DATA_MAX, (400, 3))
    zv.write_points(
        path,
        pos,
        chunk_shape=CHUNK,
        attributes={
            "intensity": pos[:, 0] + pos[:, 1],
            "label": np.where(pos[:, 2] > 20, "high", "low"),
            "count": rng.integers(0, 1000, 400).astype(np.int64),
        },
        vertex_object_ids=rng.integers(0, 5, 400),
        axis_units=UNITS,
    )


def _walks(rng: np.random.Generator, n: int, length: int) -> list[np.ndarray]:
    out = []
    for _ in range(n):
        start = rng.uniform(10, 30, 3)
        out.append(np.clip(start + np.cumsum(rng.normal(0, 1.5, (length, 3)), axis=0), 2, DATA_MAX))
    return out


def _polylines(path: str) -> None:
    rng = _rng()
    paths = _walks(rng, 12, 30)
    zv.write_polylines(
        path,
        paths,
        chunk_shape=CHUNK,
        attributes={"speed": [rng.random(len(p)) for p in paths]},
        object_attributes={"weight": np.arange(12, dtype=np.float32)},
        axis_units=UNITS,
    )


def _streamlines(path: str) -> None:
    rng = _rng()
    zv.write_streamlines(path, _walks(rng, 8, 25), chunk_shape=CHUNK, axis_units=UNITS)


def _lines(path: str) -> None:
    rng = _rng()
    ends = rng.uniform(2, DATA_MAX, (40, 2, 3))
    zv.write_lines(
        path,
        ends,
        chunk_shape=CHUNK,
        object_attributes={"strength": rng.random(40)},
        axis_units=UNITS,
    )


def _graph(path: str) -> None:
    rng = _rng()
    pos = rng.uniform(2, DATA_MAX, (30, 3))
    edges = [[i, i + 1] for i in range(14)] + [[i, i + 1] for i in range(15, 29)] + [[0, 7]]
    write_graph(
        path,
        pos,
        edges,
        chunk_shape=CHUNK,
        attributes={"degree": rng.integers(1, 4, 30).astype(np.int32)},
        edge_attributes={"w": rng.random(len(edges))},
        axis_units=UNITS,
    )


def _skeleton(path: str) -> None:
    rng = _rng()
    pos = rng.uniform(2, DATA_MAX, (12, 3))
    parents = [-1, 0, 1, 2, 1, 4, -1, 6, 7, 7, 9, 10]
    write_skeletons(
        path,
        pos,
        parents,
        offsets=[0, 6, 12],
        object_ids=[10, 20],
        radius=np.linspace(0.5, 3.0, 12),
        chunk_shape=CHUNK,
        axis_units=UNITS,
    )


def _mesh(path: str) -> None:
    # two closed octahedra, one per object
    base = np.array(
        [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float
    )
    faces = np.array(
        [[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]]
    )
    verts = np.concatenate([base * 12 + 15, base * 8 + [30, 28, 20]])
    write_meshes(
        path,
        verts,
        np.concatenate([faces, faces + 6]),
        chunk_shape=CHUNK,
        vertex_object_ids=np.repeat([3, 8], 6),
        attributes={"height": verts[:, 2]},
        axis_units=UNITS,
    )


WRITERS: dict[str, Callable[[str], None]] = {
    "point_cloud": _points,
    "line": _lines,
    "polyline": _polylines,
    "streamline": _streamlines,
    "graph": _graph,
    "skeleton": _skeleton,
    "mesh": _mesh,
}
