"""An independent reader of Neuroglancer precomputed data, written from the format documents.

Shares no code with ``zarr_vectors.viz``: it parses ``info`` files and decodes the binary
single/multiple annotation encodings, encoded skeletons and legacy mesh fragments with
``struct``, following ``src/datasource/precomputed/{annotations,skeletons,meshes}.md`` of the
Neuroglancer repository.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# numeric property types: struct code, size, alignment group (4-byte first, then 2, then 1)
PROPERTY_CODES = {
    "float32": ("f", 4, 0),
    "uint32": ("I", 4, 0),
    "int32": ("i", 4, 0),
    "uint16": ("H", 2, 1),
    "int16": ("h", 2, 1),
    "uint8": ("B", 1, 2),
    "int8": ("b", 1, 2),
}


@dataclass
class Annotation:
    geometry: tuple[float, ...]
    properties: dict[str, float | int] = field(default_factory=dict)
    related: list[list[int]] = field(default_factory=list)


@dataclass
class AnnotationSource:
    info: dict[str, Any]
    rank: int
    kind: str

    @property
    def geometry_floats(self) -> int:
        return self.rank * (1 if self.kind == "POINT" else 2)

    def record_size(self) -> int:
        size = 4 * self.geometry_floats
        size += sum(PROPERTY_CODES[p["type"]][1] for p in self.info["properties"])
        return size + (-size % 4)

    def decode_record(self, buf: bytes, at: int) -> tuple[Annotation, int]:
        n = self.geometry_floats
        geometry = struct.unpack_from(f"<{n}f", buf, at)
        pos = at + 4 * n
        props: dict[str, float | int] = {}
        ordered = sorted(self.info["properties"], key=lambda p: PROPERTY_CODES[p["type"]][2])
        for p in ordered:
            code, size, _ = PROPERTY_CODES[p["type"]]
            props[p["id"]] = struct.unpack_from("<" + code, buf, pos)[0]
            pos += size
        pos += -(pos - at) % 4
        assert pos - at == self.record_size()
        return Annotation(geometry, props), pos


def open_annotations(root: Path) -> AnnotationSource:
    info = json.loads((root / "info").read_text())
    assert info["@type"] == "neuroglancer_annotations_v1"
    return AnnotationSource(info, len(info["dimensions"]), info["annotation_type"])


def decode_single(src: AnnotationSource, buf: bytes) -> Annotation:
    ann, pos = src.decode_record(buf, 0)
    for _ in src.info["relationships"]:
        (count,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        ann.related.append(list(struct.unpack_from(f"<{count}Q", buf, pos)))
        pos += 8 * count
    assert pos == len(buf), "trailing bytes in a single-annotation file"
    return ann


def decode_multiple(src: AnnotationSource, buf: bytes) -> dict[int, Annotation]:
    (count,) = struct.unpack_from("<Q", buf, 0)
    pos = 8
    records = []
    for _ in range(count):
        ann, pos = src.decode_record(buf, pos)
        records.append(ann)
    ids = struct.unpack_from(f"<{count}Q", buf, pos)
    assert pos + 8 * count == len(buf), "trailing bytes in a multiple-annotation file"
    return dict(zip(ids, records, strict=True))


@dataclass
class SpatialCell:
    level: int
    cell: tuple[int, ...]
    lower: np.ndarray
    upper: np.ndarray
    annotations: dict[int, Annotation]


def spatial_cells(root: Path, src: AnnotationSource) -> list[SpatialCell]:
    lower = np.asarray(src.info["lower_bound"], dtype=float)
    out = []
    for n, level in enumerate(src.info["spatial"]):
        chunk = np.asarray(level["chunk_size"], dtype=float)
        for path in sorted((root / level["key"]).iterdir()):
            cell = tuple(int(v) for v in path.name.split("_"))
            assert len(cell) == src.rank
            assert all(0 <= c < g for c, g in zip(cell, level["grid_shape"], strict=True))
            lo = lower + np.asarray(cell) * chunk
            out.append(
                SpatialCell(n, cell, lo, lo + chunk, decode_multiple(src, path.read_bytes()))
            )
    return out


# -- skeletons ----------------------------------------------------------------------------------

SKELETON_DTYPES = {
    "float32": "<f4",
    "uint32": "<u4",
    "int32": "<i4",
    "uint16": "<u2",
    "int16": "<i2",
    "uint8": "u1",
    "int8": "i1",
}


@dataclass
class DecodedSkeleton:
    positions: np.ndarray  # model (nanometre) coordinates
    edges: np.ndarray
    attributes: dict[str, np.ndarray]


def read_skeletons(root: Path) -> tuple[dict[str, Any], dict[int, DecodedSkeleton]]:
    info = json.loads((root / "info").read_text())
    assert info["@type"] == "neuroglancer_skeletons"
    transform = np.asarray(info["transform"], dtype=float).reshape(3, 4)
    out = {}
    for path in root.iterdir():
        if not path.name.isdigit():
            continue
        buf = path.read_bytes()
        nv, ne = struct.unpack_from("<II", buf, 0)
        pos = 8
        stored = np.frombuffer(buf, "<f4", 3 * nv, pos).reshape(nv, 3).astype(float)
        pos += 12 * nv
        edges = np.frombuffer(buf, "<u4", 2 * ne, pos).reshape(ne, 2).astype(np.int64)
        pos += 8 * ne
        attrs = {}
        for a in info["vertex_attributes"]:
            dt = np.dtype(SKELETON_DTYPES[a["data_type"]])
            k = a["num_components"]
            attrs[a["id"]] = np.frombuffer(buf, dt, nv * k, pos).reshape(nv, k)
            pos += dt.itemsize * nv * k
        assert pos == len(buf)
        model = stored @ transform[:, :3].T + transform[:, 3]
        out[int(path.name)] = DecodedSkeleton(model, edges, attrs)
    return info, out


# -- legacy meshes ------------------------------------------------------------------------------


def read_legacy_meshes(root: Path) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    info = json.loads((root / "info").read_text())
    assert info["@type"] == "neuroglancer_legacy_mesh"
    out = {}
    for manifest in root.glob("*:0"):
        seg = int(manifest.name.split(":")[0])
        verts, faces = [], []
        offset = 0
        for name in json.loads(manifest.read_text())["fragments"]:
            buf = (root / name).read_bytes()
            (nv,) = struct.unpack_from("<I", buf, 0)
            v = np.frombuffer(buf, "<f4", 3 * nv, 4).reshape(nv, 3).astype(float)
            rest = len(buf) - 4 - 12 * nv
            assert rest % 12 == 0
            f = np.frombuffer(buf, "<u4", rest // 4, 4 + 12 * nv).reshape(-1, 3).astype(np.int64)
            verts.append(v)
            faces.append(f + offset)
            offset += nv
        out[seg] = (np.concatenate(verts), np.concatenate(faces))
    return out


def read_segment_properties(root: Path) -> dict[str, Any]:
    doc = json.loads((root / "info").read_text())
    assert doc["@type"] == "neuroglancer_segment_properties"
    inline = doc["inline"]
    for prop in inline["properties"]:
        assert len(prop["values"]) == len(inline["ids"])
    return dict(inline)
