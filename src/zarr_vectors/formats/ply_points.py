r"""PLY files <-> ``point_cloud`` and ``mesh`` stores, with every vertex and face property.

A PLY file with a non-empty ``face`` element is a triangle mesh (a ``mesh`` store); any other
is a point cloud (its ``vertex`` element).  ``x``, ``y`` (and ``z``) are the positions (their
PLY type kept: ``float``/``float32`` stays float32, ``double``/``float64`` float64); every other
scalar vertex property — normals, colours, intensity, scalar fields — is a per-vertex
attribute of the same type, and every scalar face property (colours, labels) a per-face
attribute.  The header — format, element and property names with their type names as written,
``comment``/``obj_info`` lines and the header lines themselves, and the ASCII row style — goes
to ``custom_metadata["ply"]``, so :func:`store_to_ply` writes the same header and properties
back (in the file's format: ASCII, binary little- or big-endian; ASCII numbers printed as
``%g`` writers print them; stores from elsewhere as binary little-endian).  With ``convert``'s default ``keep_order`` the file's vertex and face order comes
back too, so VTK/pyvista, rply and trimesh files round-trip byte for byte.

Not carried, and reported by :meth:`PlySource.dropped`: elements other than ``vertex`` and
``face`` (e.g. ``edge``, ``material``).  Faces must be triangles; list properties in the vertex
element are rejected.

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

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, NotRequired, TypedDict, cast

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats import _ply
from zarr_vectors.formats._ply import PLY_TYPES, Column, Property
from zarr_vectors.formats.registry import (
    Extent,
    NullProgress,
    PathLike,
    Progress,
    Source,
    WriteOptions,
    custom_section,
    export_order,
    identifier,
    iter_point_batches,
    store_metadata,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types._order import ElementOrder
from zarr_vectors.types.meshes import Meshes, read_meshes, write_meshes
from zarr_vectors.types.points import write_points

__all__ = [
    "KEY",
    "PLY_TYPES",
    "PlyMetadata",
    "PlyPoints",
    "PlySource",
    "has_input_order",
    "open_ply",
    "parse_ply",
    "read_ply",
    "store_to_ply",
    "write_ply",
]

KEY = "ply"
"""Key of the PLY header in the root ``custom_metadata``."""
_NAMES = {"i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort", "i4": "int", "u4": "uint"}
_NAMES |= {"f4": "float", "f8": "double"}
_AXES = ("x", "y", "z")
_FACE_LIST = ("vertex_indices", "uchar", "int")
"""Face list property written for stores that were not read from PLY: name, count, item."""


class PlyMetadata(TypedDict):
    """The PLY header kept in ``custom_metadata["ply"]``."""

    format: str
    properties: list[list[str]]
    """Vertex properties ``[name, type]`` in file order."""
    attributes: dict[str, str]
    """Vertex attribute name -> property name."""
    comments: list[str]
    obj_info: list[str]
    header: NotRequired[list[str]]
    """Header lines between ``ply`` and ``end_header``, as written."""
    ascii_style: NotRequired[dict[str, Any]]
    face_properties: NotRequired[list[list[str]]]
    """Face properties ``[name, type]`` (lists: ``[name, "list <count> <item>"]``)."""
    face_attributes: NotRequired[dict[str, str]]
    """Face attribute name -> property name."""


@dataclass(frozen=True)
class PlyPoints:
    """The vertices (and triangles, if any) of a PLY file."""

    positions: npt.NDArray[np.floating]
    """(N, D) ``x``, ``y`` (, ``z``) in their PLY type."""
    attributes: dict[str, npt.NDArray[Any]]
    """Every other vertex property by attribute name."""
    metadata: PlyMetadata
    """Format, property names and types, comments."""
    faces: npt.NDArray[np.int64] | None = None
    """(F, 3) vertex indices of a non-empty ``face`` element, else None."""
    face_attributes: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Scalar face properties by attribute name."""
    skipped: tuple[str, ...] = ()
    """Elements not read (neither ``vertex`` nor ``face``), with their row counts."""

    def __len__(self) -> int:
        return len(self.positions)


def _scalars(
    table: npt.NDArray[Any], skip: Sequence[str], taken: set[str]
) -> tuple[dict[str, npt.NDArray[Any]], dict[str, str]]:
    """Scalar fields of a structured table as attributes (identifier names), and the names."""
    attrs: dict[str, npt.NDArray[Any]] = {}
    mapping: dict[str, str] = {}
    for name in table.dtype.names or ():
        if name in skip or "\0" in name:
            continue
        attr = identifier(name, taken)
        attrs[attr] = np.ascontiguousarray(table[name])
        mapping[attr] = name
    return attrs, mapping


def _faces(element: _ply.Element, table: npt.NDArray[Any]) -> tuple[str, npt.NDArray[np.int64]]:
    lists = [p for p in element.properties if p.count_type is not None]
    if len(lists) != 1:
        raise InvalidInputError(f"PLY face element needs one list property, found {len(lists)}")
    name = lists[0].name
    if len(table) and table[name].shape[1:] != (3,):
        raise InvalidInputError(
            f"PLY faces have {table[name].shape[1]} vertices; only triangles are stored"
        )
    return name, np.asarray(table[name], dtype=np.int64).reshape(-1, 3)


def _metadata(header: _ply.Header) -> PlyMetadata:
    vertex = header.element("vertex")
    assert vertex is not None
    meta = PlyMetadata(
        format=header.format,
        properties=[[p.name, p.type] for p in vertex.properties],
        attributes={},
        comments=list(header.comments),
        obj_info=list(header.obj_info),
        header=list(header.lines),
        ascii_style={
            "trailing_space": header.ascii_style.trailing_space,
            "newline": header.ascii_style.newline,
            "header_newline": header.ascii_style.header_newline,
        },
    )
    face = header.element("face")
    if face is not None and face.count:
        meta["face_properties"] = [
            [p.name, p.type if p.count_type is None else f"list {p.count_type} {p.type}"]
            for p in face.properties
        ]
    return meta


def parse_ply(stream: IO[bytes]) -> PlyPoints:
    """Read the vertices and triangles of a PLY file from an open binary stream.

    Raises
    ------
    InvalidInputError
        Not a PLY file, no ``x``/``y`` properties, a list property in the vertex element,
        faces that are not triangles, or truncated data.
    """
    header = _ply.parse_header(stream)
    vertex = header.element("vertex")
    if vertex is None:
        raise InvalidInputError("PLY file has no vertex element")
    if vertex.has_lists:
        raise InvalidInputError("PLY vertex element has a list property; only scalars are read")
    face = header.element("face")
    has_faces = face is not None and face.count > 0
    tables = _ply.read_elements(stream, header, ("vertex", "face") if has_faces else ("vertex",))
    table = tables["vertex"]
    names = list(table.dtype.names or ())
    axes = [a for a in _AXES if a in names]
    if axes[:2] != ["x", "y"]:
        raise InvalidInputError(f"PLY vertices need x and y properties, found {names}")
    kinds = {table.dtype[a] for a in axes}
    pos_dtype = np.float32 if kinds == {np.dtype("<f4")} else np.float64
    positions = np.stack([table[a].astype(pos_dtype) for a in axes], axis=1)
    attrs, mapping = _scalars(table, axes, set(_AXES))
    meta = _metadata(header)
    meta["attributes"] = mapping
    faces: npt.NDArray[np.int64] | None = None
    face_attrs: dict[str, npt.NDArray[Any]] = {}
    if has_faces:
        assert face is not None
        list_name, faces = _faces(face, tables["face"])
        face_attrs, face_map = _scalars(tables["face"], [list_name], set())
        meta["face_attributes"] = face_map
        if len(faces) and (faces.min() < 0 or faces.max() >= len(positions)):
            raise InvalidInputError("PLY face refers to a vertex outside the vertex element")
    skipped = tuple(
        f"PLY element {e.name!r} ({e.count} rows)"
        for e in header.elements
        if e.name not in ("vertex", "face")
    )
    return PlyPoints(positions, attrs, meta, faces, face_attrs, skipped)


def read_ply(path: PathLike) -> PlyPoints:
    """Read the vertices (and triangles) of a PLY file (see :func:`parse_ply`)."""
    with open(path, "rb") as f:
        return parse_ply(f)


# -- writing --------------------------------------------------------------------------------


def _ply_type(dtype: np.dtype[Any]) -> str:
    code = dtype.str.lstrip("<>|=")
    if code == "b1":
        return "uchar"
    if code in _NAMES:
        return _NAMES[code]
    return "double" if dtype.kind == "f" else ("int" if dtype.kind == "i" else "uint")


def _columns(
    fixed: Mapping[str, npt.NDArray[Any]],
    attributes: Mapping[str, npt.NDArray[Any]],
    properties: Sequence[Sequence[str]],
    names: Mapping[str, str],
    what: str,
) -> list[Column]:
    """Columns of one element in the stored property order (new ones after them)."""
    types = {str(n): str(t) for n, t in properties}
    cols: dict[str, tuple[str, npt.NDArray[Any]]] = {
        n: (types.get(n, _ply_type(v.dtype)), v) for n, v in fixed.items()
    }
    for attr, values in attributes.items():
        if values.dtype.kind not in "biuf":
            warnings.warn(f"PLY export skips {what} {attr!r} ({values.dtype})", ZVUserWarning, 4)
            continue
        flat = values.reshape(len(values), -1)
        for k in range(flat.shape[1]):
            name = names.get(attr, attr) if flat.shape[1] == 1 else f"{attr}_{k}"
            cols[name] = (types.get(name, _ply_type(values.dtype)), flat[:, k])
    order = [str(n) for n, _ in properties if n in cols]
    order += [n for n in cols if n not in order]
    out = []
    for name in order:
        ptype, values = cols[name]
        words = ptype.split()
        if words[0] == "list":
            out.append(Column(Property(name, words[2], words[1]), values))
        else:
            out.append(Column(Property(name, ptype), values))
    return out


def _vertex_columns(
    positions: npt.NDArray[Any], attributes: Mapping[str, npt.NDArray[Any]], meta: Mapping[str, Any]
) -> list[Column]:
    axes = {_AXES[i]: positions[:, i] for i in range(positions.shape[1])}
    return _columns(
        axes, attributes, meta.get("properties", ()), meta.get("attributes", {}), "attribute"
    )


def _face_columns(m: Meshes, meta: Mapping[str, Any]) -> list[Column]:
    props = list(meta.get("face_properties", ()))
    lists = [n for n, t in props if str(t).startswith("list ")]
    if not lists:
        name, count, item = _FACE_LIST
        props.insert(0, [name, f"list {count} {item}"])
        lists = [name]
    faces = {lists[0]: np.asarray(m.faces)}
    return _columns(
        faces,
        dict(m.face_attributes),
        props,
        meta.get("face_attributes", {}),
        "face attribute",
    )


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
        Stored :class:`PlyMetadata` (property order and type names, comments, ASCII or
        binary, header lines).
    """
    pos = np.asarray(positions)
    meta = metadata or {}
    attrs = {k: np.asarray(v) for k, v in (attributes or {}).items()}
    cols = _vertex_columns(pos, attrs, meta)
    _write(path, meta, [("vertex", len(pos), cols)])


def _write(
    path: PathLike, meta: Mapping[str, Any], elements: list[tuple[str, int, list[Column]]]
) -> None:
    fmt = str(meta.get("format"))
    fmt = fmt if fmt in _ply.ORDER else "binary_little_endian"
    _ply.write_file(
        path,
        fmt,
        elements,
        stored=_ply.header_from_json(meta),
        comments=list(meta.get("comments", ())),
    )


class PlySource(Source):
    """A PLY file opened for conversion (read here): a mesh if it has faces, else points."""

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.points = read_ply(self.path)
        self.geometry_type = (
            GeometryTypeName.POINT_CLOUD if self.points.faces is None else GeometryTypeName.MESH
        )

    def extent(self) -> Extent:
        """Return the vertex count and bounding box."""
        return Extent.of(self.points.positions)

    def dropped(self) -> list[str]:
        """Elements other than ``vertex`` and ``face``."""
        return list(self.points.skipped)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the vertices (and faces) to a new store."""
        (progress or NullProgress()).start("writing store", None)
        ply = self.points
        meta = {KEY: cast(dict[str, Any], ply.metadata)}
        if ply.faces is None:
            return write_points(
                store,
                ply.positions,
                attributes=ply.attributes,
                keep_order=options.keep_order,
                **options.store(
                    custom_metadata=meta, source_description=f"PLY vertices: {self.path.name}"
                ),
            )
        return write_meshes(
            store,
            ply.positions,
            ply.faces,
            attributes=ply.attributes,
            face_attributes=ply.face_attributes,
            keep_order=options.keep_order,
            **options.store(custom_metadata=meta, source_description=f"PLY mesh: {self.path.name}"),
        )


def open_ply(path: PathLike) -> PlySource:
    """Open a PLY file for conversion (see :class:`PlySource`)."""
    return PlySource(path)


def has_input_order(store: StoreLike, level: int = 0) -> bool:
    """Whether a level keeps its elements' input order (``keep_order``)."""
    return export_order(store, level) is ElementOrder.INPUT


def _mesh_elements(store: StoreLike, level: int, meta: Mapping[str, Any]) -> list[Any]:
    order = ElementOrder.INPUT if has_input_order(store, level) else ElementOrder.STORAGE
    m = read_meshes(store, level=level, order=order)
    return [
        ("vertex", len(m.vertices), _vertex_columns(np.asarray(m.vertices), m.attributes, meta)),
        ("face", len(m.faces), _face_columns(m, meta)),
    ]


def store_to_ply(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``point_cloud`` or ``mesh`` store as a PLY file.

    Elements come in input order when the store keeps it, else in storage order.

    Parameters
    ----------
    store
        A ``point_cloud`` or ``mesh`` store.
    path
        Output ``.ply`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.

    Raises
    ------
    InvalidInputError
        The store is not 2-D or 3-D.
    """
    (progress or NullProgress()).start("reading store", None)
    meta = store_metadata(store)
    d = meta.spatial_dims
    if d not in (2, 3):
        raise InvalidInputError(f"PLY export needs 2-D or 3-D data, the store has {d}-D")
    ply_meta = custom_section(meta, KEY) or {}
    if meta.geometry_type is GeometryTypeName.MESH:
        _write(path, ply_meta, _mesh_elements(store, level, ply_meta))
        return
    batches = list(iter_point_batches(store, level=level))
    pos = (
        np.concatenate([b.positions for b in batches]) if batches else np.zeros((0, d), np.float32)
    )
    names = batches[0].attributes if batches else {}
    attrs = {k: np.concatenate([b.attributes[k] for b in batches]) for k in names}
    write_ply(path, pos, attrs, metadata=ply_meta)
