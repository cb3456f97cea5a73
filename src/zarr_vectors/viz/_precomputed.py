"""Binary encoders of Neuroglancer's *precomputed* formats (no I/O, numpy only).

Implements, from the format documents in the Neuroglancer repository
(``src/datasource/precomputed/annotations.md``, ``skeletons.md``, ``meshes.md``):

* the single- and multiple-annotation encodings of ``neuroglancer_annotations_v1``, with
  properties packed 4-byte, then 2-byte, then 1-byte types and padded to 4 bytes;
* the multi-level spatial index: level 0 is one cell over the whole bounds, each finer level
  halves the longer cell edges, and every cell emits a uniform random subset of the annotations
  still remaining in it with probability ``min(1, limit / max_count)``;
* the encoded skeleton (vertices, edges, vertex attributes) and the legacy single-resolution
  mesh fragment (vertex count, vertices, triangles).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError

__all__ = [
    "AnnotationProperty",
    "SpatialLevel",
    "annotation_properties",
    "encode_legacy_mesh",
    "encode_multiple",
    "encode_records",
    "encode_single",
    "encode_skeleton",
    "skeleton_attribute_type",
    "spatial_index",
    "unit_to_metres",
]

AnyArray = npt.NDArray[Any]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
AnnotationKind = Literal["POINT", "LINE"]

_METRES = {
    "angstrom": 1e-10,
    "nanometer": 1e-9,
    "nanometre": 1e-9,
    "nm": 1e-9,
    "micrometer": 1e-6,
    "micrometre": 1e-6,
    "micron": 1e-6,
    "um": 1e-6,
    "µm": 1e-6,
    "μm": 1e-6,
    "millimeter": 1e-3,
    "millimetre": 1e-3,
    "mm": 1e-3,
    "centimeter": 1e-2,
    "centimetre": 1e-2,
    "cm": 1e-2,
    "meter": 1.0,
    "metre": 1.0,
    "m": 1.0,
    "kilometer": 1e3,
    "km": 1e3,
}
_SECONDS = {"second": 1.0, "s": 1.0, "millisecond": 1e-3, "ms": 1e-3, "microsecond": 1e-6}

# property type -> (numpy little-endian dtype, encoding group: 4-byte, then 2-byte, then 1-byte)
_PROPERTY_DTYPES = {
    "float32": ("<f4", 0),
    "uint32": ("<u4", 0),
    "int32": ("<i4", 0),
    "uint16": ("<u2", 1),
    "int16": ("<i2", 1),
    "uint8": ("u1", 2),
    "int8": ("i1", 2),
}
_MAX_COMPONENTS = 4
_MAX_SPATIAL_LEVELS = 24


def unit_to_metres(unit: str | None) -> tuple[float, str] | None:
    """Return ``(scale, base unit)`` of a unit name (``"micrometer"`` -> ``(1e-6, "m")``).

    Returns None for a missing or unknown unit.

    Examples
    --------
    >>> unit_to_metres("micrometer"), unit_to_metres("ms"), unit_to_metres("pixel")
    ((1e-06, 'm'), (0.001, 's'), None)
    """
    if unit is None:
        return None
    key = unit.strip().lower() if unit.strip() not in ("µm", "μm") else unit.strip()
    if key in _METRES:
        return _METRES[key], "m"
    if key in _SECONDS:
        return _SECONDS[key], "s"
    return None


# -- properties ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnnotationProperty:
    """One property of an annotation collection with its per-annotation values."""

    id: str
    """Identifier matching ``^[a-z][a-zA-Z0-9_]*$``."""
    type: str
    """Precomputed property type (``float32``, ``uint16``...)."""
    values: AnyArray
    """(n,) values, already of the encoded dtype."""
    enum_labels: tuple[str, ...] = field(default_factory=tuple)
    """Category names when the property encodes strings (value = index)."""
    description: str | None = None
    """Text shown in the Neuroglancer UI."""

    def to_info(self) -> dict[str, Any]:
        """Return the ``properties`` entry of the ``info`` file."""
        out: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.description:
            out["description"] = self.description
        if self.enum_labels:
            out["enum_values"] = list(range(len(self.enum_labels)))
            out["enum_labels"] = list(self.enum_labels)
        return out


def _property_id(name: str, taken: set[str]) -> str:
    pid = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    pid = pid[:1].lower() + pid[1:]
    if not re.match(r"^[a-z]", pid):
        pid = "p_" + pid
    base, i = pid, 1
    while pid in taken:
        pid, i = f"{base}_{i}", i + 1
    taken.add(pid)
    return pid


# integer property types, narrowest first: (name, itemsize, min, max)
_INT_TYPES = tuple(
    (name, np.dtype(name).itemsize, int(np.iinfo(name).min), int(np.iinfo(name).max))
    for name in ("uint8", "int8", "uint16", "int16", "uint32", "int32")
)


def _int_type(values: AnyArray) -> str:
    """Keep 8- to 32-bit integers as they are; 64-bit ones become 32-bit if they fit."""
    lo, hi = (int(values.min()), int(values.max())) if values.size else (0, 0)
    signed = values.dtype.kind == "i"
    # narrowest first; at equal width, the input's own signedness first
    order = sorted(_INT_TYPES, key=lambda t: (t[1], (t[2] < 0) != signed))
    for name, size, low, high in order:
        if (size >= values.dtype.itemsize or size == 4) and low <= lo and hi <= high:
            return name
    return "float32"


def _column_type(col: AnyArray) -> str:
    if col.dtype.kind == "b":
        return "uint8"
    return _int_type(col) if col.dtype.kind in "iu" else "float32"


def _typed_columns(
    name: str, values: AnyArray
) -> Iterator[tuple[str, str, AnyArray, tuple[str, ...]]]:
    """Split one attribute into ``(name, type, values, labels)`` property columns."""
    arr = np.asarray(values)
    if arr.dtype.kind in "OUSaT":
        cats, codes = np.unique(arr.astype(str).reshape(len(arr), -1)[:, 0], return_inverse=True)
        kind = "uint8" if len(cats) <= 256 else "uint16" if len(cats) <= 65536 else "uint32"
        yield name, kind, codes.astype(_PROPERTY_DTYPES[kind][0]), tuple(str(c) for c in cats)
        return
    if arr.dtype.kind not in "biuf":
        return
    flat = arr.reshape(len(arr), -1)
    if flat.shape[1] > _MAX_COMPONENTS:
        return
    for k in range(flat.shape[1]):
        col = flat[:, k]
        label = name if flat.shape[1] == 1 else f"{name}_{k}"
        kind = _column_type(col)
        yield label, kind, col.astype(_PROPERTY_DTYPES[kind][0]), ()


def annotation_properties(columns: Mapping[str, AnyArray]) -> list[AnnotationProperty]:
    """Turn per-annotation columns into properties (strings become enums).

    Numeric columns keep their integer type when it is one Neuroglancer has, 64-bit integers
    that do not fit 32 bits and all floats become ``float32``; columns of more than four
    components, and non-numeric, non-string ones, are left out.

    Examples
    --------
    >>> props = annotation_properties({"Intensity": np.array([1.5, 2.0]),
    ...                                "kind": np.array(["a", "b"])})
    >>> [(p.id, p.type, p.enum_labels) for p in props]
    [('intensity', 'float32', ()), ('kind', 'uint8', ('a', 'b'))]
    """
    taken: set[str] = set()
    out = []
    for name, values in columns.items():
        for label, kind, vals, labels in _typed_columns(name, values):
            pid = _property_id(label, taken)
            out.append(AnnotationProperty(pid, kind, vals, labels, description=label))
    return out


# -- annotation encodings -----------------------------------------------------------------------


def encode_records(geometry: FloatArray, properties: list[AnnotationProperty]) -> AnyArray:
    """Encode annotations without their relationships: one row of bytes per annotation.

    Parameters
    ----------
    geometry
        (n, k) coordinates: a position for points, both endpoints for lines.
    properties
        Properties in ``info`` order.

    Returns
    -------
    numpy.ndarray
        (n, record_bytes) ``uint8``, each row a multiple of 4 bytes long.
    """
    geo = np.ascontiguousarray(geometry, dtype="<f4")
    n = len(geo)
    ordered = sorted(properties, key=lambda p: _PROPERTY_DTYPES[p.type][1])  # stable
    widths = [np.dtype(_PROPERTY_DTYPES[p.type][0]).itemsize for p in ordered]
    size = geo.shape[1] * 4 + sum(widths)
    size += -size % 4
    out = np.zeros((n, size), dtype=np.uint8)
    out[:, : geo.shape[1] * 4] = geo.view(np.uint8).reshape(n, -1)
    at = geo.shape[1] * 4
    for p, width in zip(ordered, widths, strict=True):
        col = np.ascontiguousarray(p.values, dtype=_PROPERTY_DTYPES[p.type][0])
        out[:, at : at + width] = col.view(np.uint8).reshape(n, width)
        at += width
    return out


def encode_single(record: AnyArray, related: list[IntArray]) -> bytes:
    """Encode one annotation of the id index: its record plus each relationship's ids."""
    parts = [np.ascontiguousarray(record, dtype=np.uint8).tobytes()]
    for ids in related:
        parts.append(np.uint32(len(ids)).astype("<u4").tobytes())
        parts.append(np.asarray(ids, dtype="<u8").tobytes())
    return b"".join(parts)


def encode_multiple(records: AnyArray, ids: npt.ArrayLike) -> bytes:
    """Encode a list of annotations: count, their records, then their uint64 ids."""
    idx = np.asarray(ids, dtype="<u8")
    return b"".join(
        [
            np.uint64(len(idx)).astype("<u8").tobytes(),
            np.ascontiguousarray(records, dtype=np.uint8).tobytes(),
            idx.tobytes(),
        ]
    )


# -- spatial index ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpatialLevel:
    """One level of the spatial index."""

    grid_shape: tuple[int, ...]
    """Cells per dimension."""
    chunk_size: tuple[float, ...]
    """Cell extent per dimension, in the collection's coordinate units."""
    cells: dict[tuple[int, ...], IntArray]
    """Annotation indices emitted by each non-empty cell, in random order."""


def _segment_hits_box(p0: FloatArray, p1: FloatArray, lo: FloatArray, hi: FloatArray) -> Any:
    """Whether each segment ``p0 -> p1`` meets the closed box ``[lo, hi]`` (slab test)."""
    d = p1 - p0
    t0 = np.zeros(len(p0))
    t1 = np.ones(len(p0))
    ok = np.ones(len(p0), dtype=bool)
    for k in range(p0.shape[1]):
        flat = np.abs(d[:, k]) < 1e-300
        ok &= ~flat | ((p0[:, k] >= lo[:, k]) & (p0[:, k] <= hi[:, k]))
        with np.errstate(divide="ignore", invalid="ignore"):
            ta = np.where(flat, -np.inf, (lo[:, k] - p0[:, k]) / d[:, k])
            tb = np.where(flat, np.inf, (hi[:, k] - p0[:, k]) / d[:, k])
        t0 = np.maximum(t0, np.minimum(ta, tb))
        t1 = np.minimum(t1, np.maximum(ta, tb))
    return ok & (t0 <= t1)


def _child_pairs(
    ann: IntArray,
    cells: IntArray,
    factor: IntArray,
    geometry: FloatArray,
    kind: AnnotationKind,
    lower: FloatArray,
    chunk: FloatArray,
) -> tuple[IntArray, IntArray]:
    """Pairs (annotation, child cell) for the next level's cells inside each pair's cell."""
    d = len(lower)
    if kind == "POINT":
        pos = geometry[ann, :d]
        child = np.floor((pos - lower) / chunk).astype(np.int64)
        child = np.clip(child, cells * factor, cells * factor + factor - 1)
        return ann, child
    out_ann, out_cells = [], []
    for off in itertools.product(*[range(int(f)) for f in factor]):
        child = cells * factor + np.asarray(off, dtype=np.int64)
        lo = lower + child * chunk
        hit = _segment_hits_box(geometry[ann, :d], geometry[ann, d:], lo, lo + chunk)
        out_ann.append(ann[hit])
        out_cells.append(child[hit])
    return np.concatenate(out_ann), np.concatenate(out_cells, axis=0)


def _next_factor(chunk: FloatArray) -> IntArray:
    """Halve the cell edges longer than half the longest, keeping cells near isotropic."""
    return np.where(chunk * 2 > chunk.max(), 2, 1).astype(np.int64)


def spatial_index(
    geometry: FloatArray,
    kind: AnnotationKind,
    lower: FloatArray,
    upper: FloatArray,
    *,
    limit: int,
    seed: int = 0,
) -> list[SpatialLevel]:
    """Build the multi-level spatial index of a collection (coarse to fine).

    Parameters
    ----------
    geometry
        (n, D) points or (n, 2 D) line endpoints.
    kind
        ``"POINT"`` or ``"LINE"``; a line is listed in every cell its segment meets.
    lower, upper
        Bounds of the collection, which all geometry lies within.
    limit
        Target of annotations per cell of a level.
    seed
        Seed of the random subsampling (the index is reproducible).

    Returns
    -------
    list of SpatialLevel
        Levels until every annotation has been emitted once per cell it meets.
    """
    if limit < 1:
        raise InvalidInputError(f"limit must be positive, got {limit}")
    rng = np.random.default_rng(seed)
    lo = np.asarray(lower, dtype=np.float64)
    chunk = np.asarray(upper, dtype=np.float64) - lo
    grid = np.ones(len(lo), dtype=np.int64)
    ann = np.arange(len(geometry), dtype=np.int64)
    cells = np.zeros((len(ann), len(lo)), dtype=np.int64)
    levels: list[SpatialLevel] = []
    while ann.size:
        keys, inverse, counts = np.unique(cells, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        last = len(levels) == _MAX_SPATIAL_LEVELS - 1
        p = 1.0 if last else min(1.0, limit / int(counts.max()))
        emit = np.ones(len(ann), dtype=bool) if p >= 1.0 else rng.random(len(ann)) < p
        emitted: dict[tuple[int, ...], IntArray] = {}
        order = np.argsort(inverse[emit], kind="stable")
        starts = np.searchsorted(inverse[emit][order], np.arange(len(keys) + 1))
        chosen = ann[emit][order]
        for j, key in enumerate(keys):
            members = chosen[starts[j] : starts[j + 1]]
            if members.size:
                emitted[tuple(int(v) for v in key)] = rng.permutation(members)
        levels.append(SpatialLevel(tuple(grid.tolist()), tuple(chunk.tolist()), emitted))
        factor = _next_factor(chunk)
        grid, chunk = grid * factor, chunk / factor
        ann, cells = _child_pairs(ann[~emit], cells[~emit], factor, geometry, kind, lo, chunk)
    return levels


# -- skeletons and meshes -----------------------------------------------------------------------


def skeleton_attribute_type(values: AnyArray) -> str | None:
    """Return the skeleton ``data_type`` for numeric values (None when not exportable)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf":
        return None
    return _column_type(arr.reshape(-1))


def encode_skeleton(
    positions: FloatArray, edges: IntArray, attributes: list[tuple[str, AnyArray]]
) -> bytes:
    """Encode one skeleton: counts, float32 vertices, uint32 edges, then each attribute.

    Parameters
    ----------
    positions
        (n, 3) vertices in stored-model coordinates.
    edges
        (e, 2) local vertex indices.
    attributes
        ``(data_type, (n, components) values)`` in ``vertex_attributes`` order.

    Returns
    -------
    bytes
        The encoded skeleton file.
    """
    pos = np.ascontiguousarray(positions, dtype="<f4").reshape(-1, 3)
    e = np.ascontiguousarray(edges, dtype="<u4").reshape(-1, 2)
    parts = [np.array([len(pos), len(e)], dtype="<u4").tobytes(), pos.tobytes(), e.tobytes()]
    for data_type, values in attributes:
        parts.append(np.ascontiguousarray(values, dtype=_PROPERTY_DTYPES[data_type][0]).tobytes())
    return b"".join(parts)


def encode_legacy_mesh(vertices: FloatArray, faces: IntArray) -> bytes:
    """Encode one legacy mesh fragment: uint32 count, float32 xyz vertices, uint32 triangles."""
    v = np.ascontiguousarray(vertices, dtype="<f4").reshape(-1, 3)
    f = np.ascontiguousarray(faces, dtype="<u4").reshape(-1, 3)
    return bytes(np.uint32(len(v)).astype("<u4").tobytes() + v.tobytes() + f.tobytes())
