r"""PLY vertices <-> ``point_cloud`` stores, with every vertex property (numpy only).

The ``vertex`` element of an ASCII, binary little-endian or binary big-endian PLY file is read
into a numpy structured array: ``x``, ``y`` (and ``z``) are the positions (their PLY type kept:
``float`` stays float32, ``double`` float64), every other scalar property — normals, colours,
intensity, scalar fields — a per-point attribute of the same type.  The property names and types,
the file format and the ``comment``/``obj_info`` lines go to ``custom_metadata["ply"]``, so
:func:`store_to_ply` writes the properties back in their original order and types (as binary
little-endian, or ASCII when the source was).  Other elements (faces, edges) are not read; list
properties in the vertex element, or a list element before it in a binary file, are rejected.
Use :mod:`zarr_vectors.formats.trimesh_io` for meshes.

Examples
--------
>>> import io
>>> text = b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
>>> text += b"property float z\nproperty uchar red\nend_header\n0 0 0 255\n1 2 3 7\n"
>>> ply = parse_ply(io.BytesIO(text))
>>> ply.positions.tolist(), ply.attributes["red"].tolist(), ply.metadata["format"]
([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], [255, 7], 'ascii')
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any, TypedDict, cast

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats.registry import (
    Extent,
    NullProgress,
    PathLike,
    Progress,
    Source,
    WriteOptions,
    custom_section,
    identifier,
    iter_point_batches,
    store_metadata,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.points import write_points

__all__ = [
    "KEY",
    "PlyMetadata",
    "PlyPoints",
    "PlySource",
    "open_ply",
    "parse_ply",
    "read_ply",
    "store_to_ply",
    "write_ply",
]

KEY = "ply"
"""Key of the PLY header in the root ``custom_metadata``."""
PLY_TYPES: Mapping[str, str] = {
    "char": "i1",
    "int8": "i1",
    "uchar": "u1",
    "uint8": "u1",
    "short": "i2",
    "int16": "i2",
    "ushort": "u2",
    "uint16": "u2",
    "int": "i4",
    "int32": "i4",
    "uint": "u4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}
"""PLY scalar type names -> numpy type codes (without byte order)."""
_NAMES = {"i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort", "i4": "int", "u4": "uint"}
_NAMES |= {"f4": "float", "f8": "double"}
_ORDER = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": "<"}
_AXES = ("x", "y", "z")
_ASCII_FORMATS = {"float": "%.9g", "double": "%.17g"}


class PlyMetadata(TypedDict):
    """The PLY header kept in ``custom_metadata["ply"]``."""

    format: str
    properties: list[list[str]]
    attributes: dict[str, str]
    comments: list[str]
    obj_info: list[str]


@dataclass(frozen=True)
class PlyPoints:
    """The vertices of a PLY file."""

    positions: npt.NDArray[np.floating]
    """(N, D) ``x``, ``y`` (, ``z``) in their PLY type."""
    attributes: dict[str, npt.NDArray[Any]]
    """Every other vertex property by attribute name."""
    metadata: PlyMetadata
    """Format, property names and types, comments."""

    def __len__(self) -> int:
        return len(self.positions)


@dataclass
class _Element:
    name: str
    count: int
    properties: list[tuple[str, str]]  # (name, PLY type); list props have type "list ..."


def _header(stream: IO[bytes]) -> tuple[str, list[_Element], list[str], list[str]]:
    if stream.readline().strip() != b"ply":
        raise InvalidInputError("not a PLY file (no 'ply' magic line)")
    fmt, elements, comments, info = "", [], [], []
    while True:
        raw = stream.readline()
        if not raw:
            raise InvalidInputError("PLY header has no end_header line")
        words = raw.decode("latin1").split()
        if not words:
            continue
        key = words[0]
        if key == "end_header":
            break
        if key == "format":
            fmt = words[1]
        elif key == "comment":
            comments.append(raw.decode("latin1").rstrip("\r\n")[len("comment ") :])
        elif key == "obj_info":
            info.append(raw.decode("latin1").rstrip("\r\n")[len("obj_info ") :])
        elif key == "element":
            elements.append(_Element(words[1], int(words[2]), []))
        elif key == "property" and elements:
            ptype = " ".join(words[1:-1])
            elements[-1].properties.append((words[-1], ptype))
    if fmt not in _ORDER:
        raise InvalidInputError(f"unsupported PLY format {fmt!r}")
    return fmt, elements, comments, info


def _dtype(element: _Element, order: str) -> np.dtype[Any]:
    fields = []
    for name, ptype in element.properties:
        if ptype not in PLY_TYPES:
            raise InvalidInputError(
                f"PLY element {element.name!r} property {name!r} has type {ptype!r}; "
                "only scalar properties are read before and in the vertex element"
            )
        fields.append((name, order + PLY_TYPES[ptype]))
    return np.dtype(fields)


def _vertices(stream: IO[bytes], fmt: str, elements: list[_Element]) -> npt.NDArray[Any]:
    order = _ORDER[fmt]
    for element in elements:
        if element.name == "vertex":
            dtype = _dtype(element, order)
            if fmt == "ascii":
                rows = [stream.readline() for _ in range(element.count)]
                table = np.loadtxt(rows, dtype=np.float64, ndmin=2) if rows else None
                out = np.zeros(element.count, dtype=dtype)
                for i, name in enumerate(dtype.names or ()):
                    if table is not None:
                        out[name] = table[:, i]
                return out
            data = stream.read(dtype.itemsize * element.count)
            if len(data) < dtype.itemsize * element.count:
                raise InvalidInputError("PLY vertex data is truncated")
            return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("<"))
        if fmt == "ascii":
            for _ in range(element.count):
                stream.readline()
        else:
            stream.read(_dtype(element, order).itemsize * element.count)
    raise InvalidInputError("PLY file has no vertex element")


def parse_ply(stream: IO[bytes]) -> PlyPoints:
    """Read the vertex element of a PLY file from an open binary stream.

    Raises
    ------
    InvalidInputError
        Not a PLY file, no ``x``/``y`` properties, a list property in or before the vertex
        element, or truncated data.
    """
    fmt, elements, comments, info = _header(stream)
    table = _vertices(stream, fmt, elements)
    names = list(table.dtype.names or ())
    axes = [a for a in _AXES if a in names]
    if axes[:2] != ["x", "y"]:
        raise InvalidInputError(f"PLY vertices need x and y properties, found {names}")
    kinds = {table.dtype[a] for a in axes}
    pos_dtype = np.float32 if kinds == {np.dtype("<f4")} else np.float64
    positions = np.stack([table[a].astype(pos_dtype) for a in axes], axis=1)
    taken: set[str] = set(_AXES)
    attrs: dict[str, npt.NDArray[Any]] = {}
    mapping: dict[str, str] = {}
    for name in names:
        if name in axes:
            continue
        attr = identifier(name, taken)
        attrs[attr] = np.ascontiguousarray(table[name])
        mapping[attr] = name
    vertex = next(e for e in elements if e.name == "vertex")
    meta = PlyMetadata(
        format=fmt,
        properties=[[n, t] for n, t in vertex.properties],
        attributes=mapping,
        comments=comments,
        obj_info=info,
    )
    return PlyPoints(positions, attrs, meta)


def read_ply(path: PathLike) -> PlyPoints:
    """Read the vertices of a PLY file (see :func:`parse_ply`)."""
    with open(path, "rb") as f:
        return parse_ply(f)


def _ply_type(dtype: np.dtype[Any]) -> str:
    code = dtype.str.lstrip("<>|=")
    if code == "b1":
        return "uchar"
    if code in _NAMES:
        return _NAMES[code]
    return "double" if dtype.kind == "f" else ("int" if dtype.kind == "i" else "uint")


def _layout(
    positions: npt.NDArray[Any], attributes: Mapping[str, npt.NDArray[Any]], meta: Mapping[str, Any]
) -> list[tuple[str, str, npt.NDArray[Any]]]:
    """Columns to write: (PLY name, PLY type, values), in the stored property order."""
    names = dict(meta.get("attributes", {}))
    types = dict(meta.get("properties", ()))
    cols: dict[str, tuple[str, npt.NDArray[Any]]] = {}
    for i in range(positions.shape[1]):
        axis = _AXES[i]
        cols[axis] = (types.get(axis, _ply_type(positions.dtype)), positions[:, i])
    for attr, values in attributes.items():
        if values.dtype.kind not in "biuf":
            warnings.warn(f"PLY export skips attribute {attr!r} ({values.dtype})", ZVUserWarning, 3)
            continue
        flat = values.reshape(len(values), -1)
        for k in range(flat.shape[1]):
            name = names.get(attr, attr) if flat.shape[1] == 1 else f"{attr}_{k}"
            cols[name] = (types.get(name, _ply_type(values.dtype)), flat[:, k])
    order = [n for n, _ in meta.get("properties", ()) if n in cols]
    order += [n for n in cols if n not in order]
    return [(n, cols[n][0], cols[n][1]) for n in order]


def write_ply(
    path: PathLike,
    positions: npt.ArrayLike,
    attributes: Mapping[str, npt.ArrayLike] | None = None,
    *,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Write points as the vertex element of a PLY file.

    Parameters
    ----------
    path
        Output ``.ply`` file.
    positions
        (N, 2) or (N, 3) coordinates.
    attributes
        Per-point numeric values; (N, K) arrays become properties ``name_0 .. name_K-1``.
    metadata
        Stored :class:`PlyMetadata` (property order and types, comments, ASCII or binary).
    """
    pos = np.asarray(positions)
    meta = metadata or {}
    attrs = {k: np.asarray(v) for k, v in (attributes or {}).items()}
    columns = _layout(pos, attrs, meta)
    dtype = np.dtype([(n, "<" + PLY_TYPES[t]) for n, t, _ in columns])
    table = np.zeros(len(pos), dtype=dtype)
    for name, _, values in columns:
        table[name] = values
    ascii_out = meta.get("format") == "ascii"
    lines = ["ply", f"format {'ascii' if ascii_out else 'binary_little_endian'} 1.0"]
    lines += [f"comment {c}" for c in meta.get("comments", ())]
    lines += [f"obj_info {c}" for c in meta.get("obj_info", ())]
    lines.append(f"element vertex {len(pos)}")
    lines += [f"property {t} {n}" for n, t, _ in columns]
    lines.append("end_header\n")
    with open(path, "wb") as f:
        f.write("\n".join(lines).encode("latin1"))
        if ascii_out:
            text = io.StringIO()
            fmts = [_ASCII_FORMATS.get(t, "%d") for _, t, _ in columns]
            rows = table.tolist() if len(table) else np.zeros((0, len(columns)))
            np.savetxt(text, rows, fmt=fmts)
            f.write(text.getvalue().encode("latin1"))
        else:
            f.write(table.tobytes())


class PlySource(Source):
    """A PLY file opened for conversion (its vertices are read here)."""

    geometry_type = GeometryTypeName.POINT_CLOUD

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.points = read_ply(self.path)

    def extent(self) -> Extent:
        """Return the vertex count and bounding box."""
        return Extent.of(self.points.positions)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the vertices to a new store."""
        (progress or NullProgress()).start("writing store", None)
        return write_points(
            store,
            self.points.positions,
            attributes=self.points.attributes,
            **options.store_kwargs,
            custom_metadata={KEY: cast(dict[str, Any], self.points.metadata)},
            source_description=f"PLY vertices: {self.path.name}",
        )


def open_ply(path: PathLike) -> PlySource:
    """Open a PLY file for conversion (see :class:`PlySource`)."""
    return PlySource(path)


def store_to_ply(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``point_cloud`` store as the vertices of a PLY file.

    Parameters
    ----------
    store
        A ``point_cloud`` store.
    path
        Output ``.ply`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    (progress or NullProgress()).start("reading store", None)
    meta = store_metadata(store)
    batches = list(iter_point_batches(store, level=level))
    d = meta.spatial_dims
    pos = (
        np.concatenate([b.positions for b in batches]) if batches else np.zeros((0, d), np.float32)
    )
    names = batches[0].attributes if batches else {}
    attrs = {k: np.concatenate([b.attributes[k] for b in batches]) for k in names}
    if d not in (2, 3):
        raise InvalidInputError(f"PLY export needs 2-D or 3-D points, the store has {d}-D")
    write_ply(path, pos, attrs, metadata=custom_section(meta, KEY))
