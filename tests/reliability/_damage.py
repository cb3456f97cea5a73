"""Write real stores of every geometry type and damage them in place, at the byte level.

Shared by the corruption suite, the fault-injection tests and the deep validator tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.types.graphs import read_graph, write_graph
from zarr_vectors.types.meshes import read_meshes, write_meshes
from zarr_vectors.types.skeletons import read_skeletons, write_skeletons

Fmt = Literal[2, 3]
CHUNK = (25.0, 25.0, 25.0)
BINS = (5.0, 5.0, 5.0)


def _pts(rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
    return rng.uniform(0, 100, (n, 3))


def _walks(rng: np.random.Generator, n_paths: int, n: int) -> list[npt.NDArray[np.float64]]:
    """Paths with steps of up to ~half a chunk, so they cross chunks often."""
    out = []
    for _ in range(n_paths):
        start = rng.uniform(10, 90, 3)
        steps = rng.uniform(-12, 12, (n - 1, 3))
        out.append(np.clip(np.vstack([start, start + np.cumsum(steps, axis=0)]), 0, 99.9))
    return out


def _grid_mesh() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Two separate triangulated 6×6 sheets (two objects), spacing 7: most faces chunk-local."""
    i, j = np.meshgrid(np.arange(6), np.arange(6), indexing="ij")
    sheet = np.c_[i.ravel() * 7.0 + 3, j.ravel() * 7.0 + 3, np.full(36, 10.0)]
    pos = np.vstack([sheet, sheet + np.array([0.0, 0.0, 50.0])])
    a = (i[:-1, :-1] * 6 + j[:-1, :-1]).ravel()
    tri = np.vstack([np.c_[a, a + 6, a + 1], np.c_[a + 1, a + 6, a + 7]])
    return pos, np.vstack([tri, tri + 36])


def write_kind(kind: str, store: Any, fmt: Fmt = 3, **kw: Any) -> None:
    """Write a small deterministic store of geometry ``kind`` (a ``WRITERS`` key)."""
    rng = np.random.default_rng(11)
    opts: dict[str, Any] = {"chunk_shape": CHUNK, "bin_shape": BINS, "zarr_format": fmt, **kw}
    if kind == "points":
        zv.write_points(
            store,
            _pts(rng, 120),
            attributes={"intensity": rng.random(120).astype("f4")},
            vertex_object_ids=rng.integers(0, 10, 120),
            **opts,
        )
    elif kind == "points_plain":
        zv.write_points(store, _pts(rng, 120), **opts)
    elif kind == "lines":
        zv.write_lines(store, _pts(rng, 40).reshape(20, 2, 3), **opts)
    elif kind == "polylines":
        zv.write_polylines(
            store,
            _walks(rng, 6, 12),
            attributes={"t": [np.arange(12, dtype="f4")] * 6},
            object_attributes={"length": np.arange(6, dtype="f4")},
            groups={"a": [0, 1], "b": [2]},
            group_attributes={"g": [1.0, 2.0]},
            **opts,
        )
    elif kind == "graph":
        pos = np.vstack(_walks(rng, 2, 30))
        edges = np.vstack([np.c_[np.arange(29), np.arange(1, 30)] + 30 * i for i in range(2)])
        write_graph(store, pos, edges, edge_attributes={"w": np.arange(58, dtype="f8")}, **opts)
    elif kind == "skeleton":
        pos = np.vstack(_walks(rng, 2, 15))
        parents = np.r_[-1, np.arange(14), -1, np.arange(15, 29)]
        write_skeletons(store, pos, parents, radius=np.ones(30), **opts)
    elif kind == "mesh":
        write_meshes(store, *_grid_mesh(), **opts)
    else:  # pragma: no cover
        raise KeyError(kind)


KINDS = ("points", "points_plain", "lines", "polylines", "graph", "skeleton", "mesh")

READERS: dict[str, Callable[[Any], Any]] = {
    "points": zv.read_points,
    "points_plain": zv.read_points,
    "lines": zv.read_lines,
    "polylines": zv.read_polylines,
    "graph": read_graph,
    "skeleton": read_skeletons,
    "mesh": read_meshes,
}


@dataclass
class Damage:
    """Byte-level access to a written store."""

    store: Store

    # raw keys ------------------------------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        buf = sync(self.store.get(key, default_buffer_prototype()))
        return None if buf is None else buf.to_bytes()

    def put(self, key: str, data: bytes) -> None:
        sync(self.store.set(key, default_buffer_prototype().buffer.from_bytes(data)))

    def delete(self, key: str) -> None:
        sync(self.store.delete(key))

    def delete_dir(self, prefix: str) -> None:
        sync(self.store.delete_dir(prefix))

    def keys(self, prefix: str = "") -> list[str]:
        async def collect() -> list[str]:
            return [k async for k in self.store.list_prefix(prefix)]

        return sorted(sync(collect()))

    def doc(self, key: str) -> Any:
        raw = self.get(key)
        assert raw is not None, key
        return json.loads(raw)

    def put_doc(self, key: str, doc: Any) -> None:
        self.put(key, json.dumps(doc).encode())

    # arrays --------------------------------------------------------------------------------

    def root(self) -> zarr.Group:
        with quiet_vlen():
            return zarr.open_group(self.store, mode="r+")

    def payload(self, path: str) -> PayloadArray:
        with quiet_vlen():
            node = self.root()[path]
        assert isinstance(node, zarr.Array)
        return PayloadArray(node)

    def chunk_key(self, path: str, flat: int) -> str:
        return self.payload(path)._key(flat)

    def array(self, path: str) -> zarr.Array[Any]:
        node = self.root()[path]
        assert isinstance(node, zarr.Array), path
        return node

    def occupied(self, level: str = "0") -> list[int]:
        counts = np.asarray(self.array(f"{level}/vertex_counts")[...]).ravel()
        flats: list[int] = np.flatnonzero(counts).tolist()
        return flats

    def rows(self, path: str, flat: int) -> npt.NDArray[Any]:
        arr = self.payload(path)
        attrs = arr.attrs
        raw = arr.read(np.array([flat]))[0]
        return np.frombuffer(raw, dtype=attrs["dtype"]).reshape(-1, attrs["width"]).copy()

    def set_rows(self, path: str, flat: int, rows: npt.NDArray[Any] | bytes | memoryview) -> None:
        arr = self.payload(path)
        data = bytes(rows) if not isinstance(rows, np.ndarray) else rows.tobytes()
        if not data:
            self.delete(self.chunk_key(path, flat))
            return
        arr.write(np.array([flat], dtype=np.int64), [data])

    def dense(self, path: str) -> npt.NDArray[Any]:
        return np.asarray(self.array(path)[...])

    def set_dense(self, path: str, data: npt.ArrayLike) -> None:
        """Replace a dense array (shape may change) keeping its attributes."""
        root = self.root()
        old = root[path]
        assert isinstance(old, zarr.Array)
        attrs = old.attrs.asdict()
        arr = np.asarray(data)
        new = root.create_array(
            path, shape=arr.shape, dtype=arr.dtype, attributes=attrs, overwrite=True
        )
        if arr.size:
            new[...] = arr

    def edit_attrs(self, node: str, fn: Callable[[dict[str, Any]], None]) -> None:
        with quiet_vlen():
            target = self.root()[node] if node else self.root()
            attrs = target.attrs.asdict()
            fn(attrs)
            target.attrs.put(attrs)


def fresh(kind: str, fmt: Fmt = 3, **kw: Any) -> Damage:
    """A new memory store holding a ``kind`` store."""
    store = MemoryStore()
    write_kind(kind, store, fmt, **kw)
    return Damage(store)
