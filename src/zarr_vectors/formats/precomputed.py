"""Neuroglancer *precomputed* skeletons and legacy meshes <-> ``skeleton``/``graph``/``mesh`` stores.

The reading half of :func:`zarr_vectors.viz.export_neuroglancer` (which writes these), from the
format documents in the Neuroglancer repository (``src/datasource/precomputed/skeletons.md``,
``meshes.md``, ``segment_properties.md``).  A data source is a directory with an ``info`` file:

* ``neuroglancer_skeletons``: one file per segment (named by its decimal id): ``uint32``
  vertex and edge counts, ``float32`` xyz vertices, ``uint32`` edge pairs, then each
  ``vertex_attributes`` entry; ``transform`` maps the stored coordinates to nanometres;
* ``neuroglancer_legacy_mesh``: a manifest ``<segment>:0`` listing fragment files, each a
  ``uint32`` vertex count, ``float32`` xyz vertices (nanometres) and ``uint32`` triangles.

Mapping: each segment is one object.  Object ids are the segment ids, except when the
``segment_properties`` ``label`` of every segment is an integer (what
:func:`~zarr_vectors.viz.export_neuroglancer` writes, as segment ids are object id + 1): then
the labels.  Other numeric and string segment properties become object attributes, vertex
attributes per-vertex attributes.  Skeletons whose edges form a forest (``[child, parent]``
pairs, what the exporter writes) become ``skeleton`` stores, others ``graph`` stores.
Skeleton coordinates stay in stored units, with ``axis_units`` read from a diagonal
``transform`` of 1, 1e3, 1e6 or 1e9 nanometres per unit; mesh coordinates are nanometres.
Sharded sources and multi-resolution (Draco) meshes are refused with a clear error.

Export writes the data source itself at the given path (a directory, conventionally ending in
``.precomputed``), through :func:`~zarr_vectors.viz.export_neuroglancer`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.formats.registry import (
    Extent,
    NullProgress,
    PathLike,
    Progress,
    Source,
    WriteOptions,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.graphs import write_graph
from zarr_vectors.types.meshes import write_meshes
from zarr_vectors.types.skeletons import write_skeletons
from zarr_vectors.viz.neuroglancer import export_neuroglancer

__all__ = ["PrecomputedSource", "is_precomputed", "open_precomputed", "store_to_precomputed"]

KEY = "precomputed"
"""``custom_metadata`` key of the source's ``info``."""
SKELETONS = "neuroglancer_skeletons"
LEGACY_MESH = "neuroglancer_legacy_mesh"
_UNITS = {1.0: "nanometer", 1e3: "micrometer", 1e6: "millimeter", 1e9: "meter"}
_DTYPES = {
    "float32": "<f4",
    "uint32": "<u4",
    "int32": "<i4",
    "uint16": "<u2",
    "int16": "<i2",
    "uint8": "u1",
    "int8": "i1",
}
FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


def _json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(doc, dict):
        raise InvalidInputError(f"{path}: expected a JSON object")
    return doc


def is_precomputed(path: PathLike) -> bool:
    """Whether ``path`` is a directory holding a precomputed ``info`` file."""
    p = Path(path)
    return p.is_dir() and (p / "info").is_file()


def _buffer(data: bytes, offset: int, dtype: str, count: int, where: str) -> npt.NDArray[Any]:
    size = np.dtype(dtype).itemsize * count
    if offset + size > len(data):
        raise CorruptPayloadError(f"{where}: file ends after {len(data)} bytes, needs more")
    return np.frombuffer(data, dtype=dtype, count=count, offset=offset)


def _decode_skeleton(
    data: bytes, attrs: list[Mapping[str, Any]], where: str
) -> tuple[FloatArray, IntArray, dict[str, npt.NDArray[Any]]]:
    nv, ne = (int(v) for v in _buffer(data, 0, "<u4", 2, where))
    pos = _buffer(data, 8, "<f4", nv * 3, where).reshape(nv, 3)
    offset = 8 + 12 * nv
    edges = _buffer(data, offset, "<u4", ne * 2, where).reshape(ne, 2).astype(np.int64)
    offset += 8 * ne
    if edges.size and int(edges.max()) >= nv:
        raise CorruptPayloadError(f"{where}: an edge names vertex {int(edges.max())} of {nv}")
    values: dict[str, npt.NDArray[Any]] = {}
    for a in attrs:
        dtype = _DTYPES.get(str(a.get("data_type")))
        if dtype is None:
            raise InvalidInputError(
                f"{where}: unknown vertex attribute type {a.get('data_type')!r}"
            )
        k = int(a.get("num_components", 1))
        arr = _buffer(data, offset, dtype, nv * k, where)
        offset += arr.nbytes
        native = arr.astype(np.dtype(dtype).newbyteorder("="))
        values[str(a["id"])] = native if k == 1 else native.reshape(nv, k)
    return pos.astype(np.float32), edges, values


def _decode_fragment(data: bytes, where: str) -> tuple[FloatArray, IntArray]:
    nv = int(_buffer(data, 0, "<u4", 1, where)[0])
    pos = _buffer(data, 4, "<f4", nv * 3, where).reshape(nv, 3)
    rest = len(data) - 4 - 12 * nv
    if rest % 12:
        raise CorruptPayloadError(f"{where}: {rest} bytes of triangles is not a whole number")
    faces = _buffer(data, 4 + 12 * nv, "<u4", rest // 4, where).reshape(-1, 3).astype(np.int64)
    if faces.size and int(faces.max()) >= nv:
        raise CorruptPayloadError(f"{where}: a triangle names vertex {int(faces.max())} of {nv}")
    return pos.astype(np.float32), faces


def _segment_ids(root: Path, kind: str) -> list[int]:
    ids = []
    for p in root.iterdir():
        name = p.name[:-2] if kind == LEGACY_MESH and p.name.endswith(":0") else p.name
        if name.isdigit() and (kind != LEGACY_MESH or p.name.endswith(":0")):
            ids.append(int(name))
    return sorted(ids)


def _segment_properties(root: Path, info: Mapping[str, Any], segs: list[int]) -> dict[str, Any]:
    """Object ids and attributes from the ``segment_properties`` sub-source, if any."""
    rel = info.get("segment_properties")
    if not isinstance(rel, str) or not (root / rel / "info").is_file():
        return {"ids": np.asarray(segs, dtype=np.uint64), "attributes": {}}
    inline = _json(root / rel / "info").get("inline", {})
    where = {int(s): i for i, s in enumerate(inline.get("ids", []))}
    rows = [where.get(s) for s in segs]
    ids: npt.NDArray[Any] = np.asarray(segs, dtype=np.uint64)
    attrs: dict[str, npt.NDArray[Any]] = {}
    for prop in inline.get("properties", []):
        if any(r is None for r in rows):
            break  # properties must cover every segment to be attributes
        values = [prop["values"][r] for r in rows]
        if prop.get("type") == "label" and prop.get("id") == "label":
            if all(str(v).lstrip("-").isdigit() for v in values):
                ids = np.asarray([int(v) for v in values], dtype=np.int64)
            else:
                attrs["label"] = np.asarray(values, dtype=str)
        elif prop.get("type") == "number":
            attrs[str(prop["id"])] = np.asarray(values, dtype=prop.get("data_type", "float32"))
        elif prop.get("type") in ("string", "label", "description"):
            attrs[str(prop["id"])] = np.asarray(values, dtype=str)
    return {"ids": ids, "attributes": attrs}


def _units(info: Mapping[str, Any]) -> str | None:
    t = info.get("transform")
    if not isinstance(t, list) or len(t) != 12:
        return None
    m = np.asarray(t, dtype=np.float64).reshape(3, 4)
    diag = np.diag(m[:, :3])
    if np.any(m[:, 3]) or np.any(m[:, :3] - np.diag(diag)) or not np.all(diag == diag[0]):
        return None
    # the exporter writes 1e-6 / 1e-9 = 999.9999999999999 for micrometres: compare loosely
    return next(
        (u for s, u in _UNITS.items() if math.isclose(float(diag[0]), s, rel_tol=1e-9)), None
    )


def _forest_parents(n: int, edges: IntArray) -> IntArray | None:
    """Parent of each vertex when ``edges`` are ``[child, parent]`` pairs of a forest."""
    parents = np.full(n, -1, dtype=np.int64)
    if len(np.unique(edges[:, 0])) != len(edges):
        return None
    parents[edges[:, 0]] = edges[:, 1]
    state = np.zeros(n, dtype=np.int8)  # 0 unseen, 1 on the current path, 2 done
    for start in range(n):
        path = []
        v = start
        while v != -1 and state[v] == 0:
            state[v] = 1
            path.append(v)
            v = int(parents[v])
        if v != -1 and state[v] == 1:
            return None  # a cycle
        state[path] = 2
    return parents


class PrecomputedSource(Source):
    """A precomputed skeleton or legacy mesh data source opened for conversion (read whole)."""

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        if not is_precomputed(self.path):
            raise InvalidInputError(f"{self.path}: not a precomputed data source (no info file)")
        self.info = _json(self.path / "info")
        kind = self.info.get("@type")
        if "sharding" in self.info and self.info["sharding"] is not None:
            raise InvalidInputError(f"{self.path}: sharded precomputed sources are not supported")
        if kind == SKELETONS:
            self._read_skeletons()
        elif kind == LEGACY_MESH:
            self._read_meshes()
        else:
            raise InvalidInputError(
                f"{self.path}: precomputed @type {kind!r} is not supported "
                f"(only {SKELETONS!r} and {LEGACY_MESH!r})"
            )

    def _read_skeletons(self) -> None:
        segs = _segment_ids(self.path, SKELETONS)
        attrs = list(self.info.get("vertex_attributes", []))
        parts = [
            _decode_skeleton((self.path / str(s)).read_bytes(), attrs, f"segment {s}") for s in segs
        ]
        self._segments(segs, [p[0] for p in parts], [p[1] for p in parts])
        names = [str(a["id"]) for a in attrs]
        self.attributes = {
            n: np.concatenate([p[2][n] for p in parts]) if parts else np.zeros(0) for n in names
        }
        local = [_forest_parents(len(p[0]), p[1]) for p in parts]
        self.tree = all(par is not None for par in local)
        self.geometry_type = GeometryTypeName.SKELETON if self.tree else GeometryTypeName.GRAPH
        self.units = _units(self.info)

    def _read_meshes(self) -> None:
        segs = _segment_ids(self.path, LEGACY_MESH)
        vertices, faces = [], []
        for s in segs:
            manifest = _json(self.path / f"{s}:0")
            vs, fs, base = [], [], 0
            for frag in manifest.get("fragments", []):
                v, f = _decode_fragment((self.path / str(frag)).read_bytes(), f"fragment {frag}")
                vs.append(v)
                fs.append(f + base)
                base += len(v)
            vertices.append(np.concatenate(vs) if vs else np.zeros((0, 3), np.float32))
            faces.append(np.concatenate(fs) if fs else np.zeros((0, 3), np.int64))
        self._segments(segs, vertices, faces)
        self.attributes = {}
        self.geometry_type = GeometryTypeName.MESH
        self.units = "nanometer"

    def _segments(
        self, segs: list[int], positions: list[FloatArray], links: list[IntArray]
    ) -> None:
        props = _segment_properties(self.path, self.info, segs)
        self.ids = props["ids"]
        self.object_attributes = props["attributes"]
        self.positions = positions
        self.links = links

    def extent(self) -> Extent:
        """Return the vertex count and bounding box."""
        if not self.positions:
            return Extent.of(np.zeros((0, 3)))
        return Extent.of(np.concatenate(self.positions))

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write one object per segment (skeleton, graph or mesh store)."""
        (progress or NullProgress()).start("writing store", None)
        kind = self.info.get("@type")
        common: dict[str, Any] = {
            **options.store(
                axis_units=self.units,
                source_description=f"Neuroglancer precomputed {kind}: {self.path.name}",
                custom_metadata={KEY: {"info": self.info}},
            ),
            "object_attributes": self.object_attributes,
        }
        if self.geometry_type is GeometryTypeName.MESH:
            pairs = list(zip(self.positions, self.links, strict=True))
            return write_meshes(store, pairs, object_ids=self.ids, **common)
        counts = [len(p) for p in self.positions]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        pos = np.concatenate(self.positions) if self.positions else np.zeros((0, 3), np.float32)
        edges = (
            np.concatenate([e + o for e, o in zip(self.links, offsets[:-1], strict=True)])
            if self.links
            else np.zeros((0, 2), np.int64)
        )
        if self.geometry_type is GeometryTypeName.SKELETON:
            attrs = dict(self.attributes)
            radius = attrs.pop("radius", None)
            return write_skeletons(
                store,
                pos,
                edges,
                offsets=offsets,
                object_ids=self.ids,
                radius=radius,
                attributes=attrs,
                **common,
            )
        owner = np.repeat(self.ids, counts)
        return write_graph(
            store, pos, edges, vertex_object_ids=owner, attributes=self.attributes, **common
        )


def open_precomputed(path: PathLike) -> PrecomputedSource:
    """Open a precomputed skeleton or legacy mesh directory (see :class:`PrecomputedSource`)."""
    return PrecomputedSource(path)


def store_to_precomputed(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a skeleton, graph or mesh store as a precomputed data source.

    Parameters
    ----------
    store
        A ``skeleton``, ``graph`` or ``mesh`` store.
    path
        Directory of the data source (its ``info`` file goes directly in it); an existing
        precomputed directory there is replaced, any other existing path is refused.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    (progress or NullProgress()).start("writing precomputed", None)
    out = Path(path)
    if out.exists() and not is_precomputed(out):
        raise InvalidInputError(f"{out} exists and is not a precomputed data source")
    work = out.with_name(f".{out.name}.zv-{uuid.uuid4().hex[:8]}")
    try:
        done = export_neuroglancer(store, work, level=level)
        if out.exists():
            shutil.rmtree(out)
        os.replace(done.source_path, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
