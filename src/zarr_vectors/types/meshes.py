"""Triangle meshes (``mesh``, FORMAT.md §6–§9).

A mesh store holds vertices and triangles.  Each object is one connected surface (connected
components over the faces, computed on write) unless the caller names the objects.  Vertices of
an object keep their input order (traversal order); a face whose three vertices share a chunk is
a ``links`` row of that chunk, a face spanning chunks is a ``cross_chunk_links`` record (L = 3)
stored in the chunk of its first vertex.  Face attributes follow ``links`` and
``cross_chunk_links`` row for row.  Root keys: ``winding_order`` (``"ccw"``/``"cw"``), optional
``closed_surface``, and ``draco_compressed`` when vertices are Draco-encoded (lossy, order kept).

Decisions (documented in ``docs/spec.md``):

* **Degenerate faces** (a vertex repeated in one face) and duplicate faces are **kept**: level 0
  is lossless.  Coarser levels drop them (FORMAT.md §10).
* **Faces come back as a set per object**, sorted by their vertex indices ``(v0, v1, v2)`` in
  the returned vertex order; each face keeps its vertex rotation (so its winding) and its
  attributes.  With ``keep_order=True`` the writer stores the input position of every vertex
  and face (reserved attribute ``_input_index``), and ``read_meshes(order="input")`` returns
  vertices and faces in input order.
* A face may not join vertices of different objects (:class:`~zarr_vectors.errors.GeometryError`).
* A vertex used by no face is an object of its own when objects are computed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.components import connected_components
from zarr_vectors.core.deprecation import deprecated_function, rename_keywords, warn_renamed
from zarr_vectors.core.engine import Gathered, rows_as
from zarr_vectors.core.links.faces import FaceRows, sorted_faces
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import offsets_from_counts
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, write_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, no_boundary, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Encoding, GeometryTypeName, WindingOrder
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    Query,
    attribute_selection,
    batch_ids,
    build_query,
    decode_columns,
    register_geometry_type,
    take_batch_args,
    write_options,
)
from zarr_vectors.types._mesh_input import (
    MeshLike,
    draco_options,
    input_order,
    input_parts,
    input_rows,
    mesh_metadata,
    result_input,
)
from zarr_vectors.types._objects import group_members_out
from zarr_vectors.types._order import (
    INPUT_INDEX,
    ElementOrder,
    missing_order,
    visible,
    with_input_index,
)

__all__ = [
    "Mesh",
    "MeshLike",
    "Meshes",
    "as_meshes",
    "mesh_parts",
    "connected_components",
    "read_meshes",
    "write_meshes",
]

IntArray = npt.NDArray[np.int64]
AnyArray = npt.NDArray[Any]


@dataclass(frozen=True, kw_only=True)
class Mesh:
    """One object of a :class:`Meshes` result, with faces indexing its own vertices."""

    vertices: npt.NDArray[np.floating]
    """(n, D) vertices in traversal (input) order."""
    faces: IntArray
    """(f, 3) indices into ``vertices``."""
    object_id: Any
    """Object id (user id when given at write time)."""
    attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-vertex attributes."""
    face_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-face attributes, aligned with ``faces``."""
    object_attributes: Mapping[str, Any] = field(default_factory=dict)
    """This object's values of the per-object attributes."""
    winding_order: WindingOrder = WindingOrder.CCW
    """Triangle winding of the store."""

    @property
    def id(self) -> Any:
        """Deprecated name of :attr:`object_id`."""
        warn_renamed("Mesh.id", "Mesh.object_id")
        return self.object_id


@dataclass(frozen=True, kw_only=True)
class Meshes:
    """A set of triangle meshes: the result of :func:`read_meshes` and :func:`as_meshes`.

    Vertices are grouped by object (objects in ``object_ids`` order, each in traversal order);
    faces
    index ``vertices`` and are grouped the same way.  ``len`` and indexing work per object.

    Examples
    --------
    >>> m = as_meshes(np.eye(3), [[0, 1, 2]])
    >>> len(m), m.faces.tolist(), m[0].vertices.shape
    (1, [[0, 1, 2]], (3, 3))
    >>> len(as_meshes(np.zeros((0, 3)), np.zeros((0, 3), int)))
    0
    """

    vertices: npt.NDArray[np.floating]
    """(N, D) vertices, physical units."""
    faces: IntArray
    """(F, 3) indices into ``vertices``."""
    vertex_object_ids: AnyArray
    """(N,) object id of each vertex (user ids when given at write time)."""
    object_ids: AnyArray
    """(n,) id of each returned object, in result order."""
    offsets: IntArray
    """(n + 1,) object ``i`` owns ``vertices[offsets[i]:offsets[i + 1]]``."""
    face_offsets: IntArray
    """(n + 1,) object ``i`` owns ``faces[face_offsets[i]:face_offsets[i + 1]]``."""
    attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-vertex attributes, aligned with ``vertices``."""
    face_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-face attributes, aligned with ``faces``."""
    object_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-object attributes, aligned with ``object_ids``."""
    groups: Mapping[str, AnyArray] = field(default_factory=dict)
    """Group name -> ids of the returned objects that belong to it."""
    group_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-group attributes, in group order."""
    winding_order: WindingOrder = WindingOrder.CCW
    """Triangle winding of the store."""
    input_order: bool = False
    """Vertices and faces are in the writer's input order (``read_meshes(order="input")``):
    objects may interleave, so ``offsets`` and ``face_offsets`` give each object's counts
    (as CSR) but not its position; indexing selects by object."""

    def __len__(self) -> int:
        return len(self.object_ids)

    @property
    def ids(self) -> AnyArray:
        """Deprecated name of :attr:`object_ids` (one id per object)."""
        warn_renamed("Meshes.ids", "Meshes.object_ids")
        return self.object_ids

    def __getitem__(self, i: int) -> Mesh:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"mesh {i} out of range ({n} meshes)")
        i %= n
        if self.input_order:
            return self._select(i)
        v0, v1 = int(self.offsets[i]), int(self.offsets[i + 1])
        f0, f1 = int(self.face_offsets[i]), int(self.face_offsets[i + 1])
        return Mesh(
            vertices=self.vertices[v0:v1],
            faces=self.faces[f0:f1] - v0,
            object_id=self.object_ids[i],
            attributes={k: v[v0:v1] for k, v in self.attributes.items()},
            face_attributes={k: v[f0:f1] for k, v in self.face_attributes.items()},
            object_attributes={k: v[i] for k, v in self.object_attributes.items()},
            winding_order=self.winding_order,
        )

    def _select(self, i: int) -> Mesh:
        """Object ``i`` picked by mask (input order: its rows need not be contiguous)."""
        vmask = np.asarray(self.vertex_object_ids == self.object_ids[i])
        local = np.cumsum(vmask, dtype=np.int64) - 1
        fmask = vmask[self.faces[:, 0]] if len(self.faces) else np.zeros(0, dtype=bool)
        return Mesh(
            vertices=self.vertices[vmask],
            faces=local[self.faces[fmask]],
            object_id=self.object_ids[i],
            attributes={k: v[vmask] for k, v in self.attributes.items()},
            face_attributes={k: v[fmask] for k, v in self.face_attributes.items()},
            object_attributes={k: v[i] for k, v in self.object_attributes.items()},
            winding_order=self.winding_order,
        )

    def __iter__(self) -> Iterator[Mesh]:
        for i in range(len(self)):
            yield self[i]


MeshInput = npt.ArrayLike | MeshLike | Meshes | Sequence[Any]
"""Accepted mesh data: (N, D) vertices (with ``faces``), a mesh-like object, a list of
``(vertices, faces)`` pairs or mesh-like objects, or a :class:`Meshes` result."""


# -- input -----------------------------------------------------------------------------------


def mesh_parts(data: MeshInput, faces: Any, *, for_write: bool = False, **kw: Any) -> GeometryParts:
    """Normalise every accepted input form to :class:`GeometryParts`.

    ``for_write``: the parts go straight to the writer (see :func:`input_parts`).
    """
    if isinstance(data, Meshes):
        if faces is not None or any(v is not None for v in kw.values()):
            raise InvalidInputError("a Meshes input carries its own faces, ids and attributes")
        kw = result_input(vars(data))  # the result's fields
        data, faces = kw.pop("vertices"), kw.pop("faces")
    return input_parts(data, faces, for_write=for_write, **kw)


# -- write -----------------------------------------------------------------------------------


def write_meshes(
    store: StoreLike,
    vertices: MeshInput,
    faces: npt.ArrayLike | None = None,
    *,
    vertex_object_ids: npt.ArrayLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    attributes: Mapping[str, Any] | None = None,
    face_attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    winding_order: Literal["ccw", "cw"] | WindingOrder = "ccw",
    closed_surface: bool | None = None,
    encoding: Literal["raw", "draco"] | Encoding = "raw",
    quantization_bits: int = 16,
    compression_level: int = 7,
    keep_order: bool = False,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Write triangle meshes to a new ZVF store.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL or zarr store.
    vertices
        (N, D) vertex positions (physical units) with ``faces``; or one mesh-like object
        (``trimesh.Trimesh``: same as its arrays); or a list of ``(vertices, faces)`` pairs or
        mesh-like objects, each list item one object; or a :class:`Meshes` result.
    faces
        (F, 3) integer vertex indices (array input only).  Degenerate faces are kept.
    vertex_object_ids
        Array input: (N,) object of each vertex (any integers, e.g. uint64 segment ids); by
        default each connected surface is an object, numbered by first vertex.
    object_ids
        List input: one unique id per mesh.  (With array input, ``object_ids=`` is the
        deprecated name of ``vertex_object_ids=``.)
    attributes
        Per-vertex values: (N, ...) arrays, or (list input) one array per mesh.
    face_attributes
        Per-face values: (F, ...) arrays, or (list input) one array per mesh.
    object_attributes
        Per-object values, one row per object in object order: list order (list input),
        ascending id (``vertex_object_ids``) or first-vertex order (computed surfaces).
    groups, group_attributes
        Named groups of objects ``{name: ids}`` and per-group values.
    winding_order, closed_surface
        Root metadata: triangle winding (``"ccw"``/``"cw"``) and, optionally, whether every
        surface is closed.
    encoding
        ``"raw"`` (exact) or ``"draco"`` (lossy, needs the ``draco`` extra, D <= 3).
    quantization_bits, compression_level
        Draco settings: 1..30 bits per coordinate over each chunk's extent, level 0..10.
    keep_order
        Also store the input position of every vertex and face (reserved attribute
        ``_input_index``, smallest unsigned dtype) so that ``read_meshes(order="input")``
        gives back the input order; input order is the concatenation order for list input.

    Other Parameters
    ----------------
    **store_kwargs
        Store keywords (``chunk_shape`` required, ``bin_shape``, ``compressor``,
        ``overwrite``, ...) or ``options=``: see :class:`~zarr_vectors.StoreKwargs`.

    Returns
    -------
    WriteSummary
        Counts and chunk grid of what was written.

    Raises
    ------
    GeometryError
        A face that is not a triangle, indexes a missing vertex or joins two objects (the
        message names the face row).
    InvalidInputError
        NaN/inf vertices (naming the row), bad shapes or attribute lengths.
    MissingDependencyError
        ``encoding="draco"`` without DracoPy.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> from zarr_vectors.types.meshes import read_meshes, write_meshes
    >>> store = MemoryStore()
    >>> verts = np.array([[0.0, 0, 0], [15, 0, 0], [0, 5, 0], [30, 30, 30], [31, 30, 30],
    ...                   [30, 31, 30]])
    >>> write_meshes(store, verts, [[0, 1, 2], [3, 4, 5]], chunk_shape=(10, 10, 10)).object_count
    2
    >>> m = read_meshes(store, object_ids=[0])
    >>> m.faces.tolist(), m[0].vertices[1].tolist()
    ([[0, 1, 2]], [15.0, 0.0, 0.0])
    >>> len(read_meshes(store, bbox=([90, 90, 90], [99, 99, 99])))
    0
    """
    parts = mesh_parts(
        vertices,
        faces,
        vertex_object_ids=vertex_object_ids,
        object_ids=object_ids,
        attributes=attributes,
        face_attributes=face_attributes,
        object_attributes=object_attributes,
        groups=groups,
        group_attributes=group_attributes,
        for_write=True,
    )
    if keep_order:
        parts = with_input_index(parts)
    meta = mesh_metadata(winding_order, closed_surface)
    opts = write_options(GeometryTypeName.MESH, parts, store_kwargs, meta)
    n_dims = parts.positions.shape[1]
    opts = draco_options(opts, encoding, quantization_bits, compression_level, n_dims)
    return write_store(store, GeometryTypeName.MESH, parts, opts)


def as_meshes(
    vertices: MeshInput,
    faces: npt.ArrayLike | None = None,
    *,
    vertex_object_ids: npt.ArrayLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    attributes: Mapping[str, Any] | None = None,
    face_attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    winding_order: Literal["ccw", "cw"] | WindingOrder = "ccw",
) -> Meshes:
    """Build in memory the :class:`Meshes` that writing then reading everything returns.

    Arguments mean what they mean in :func:`write_meshes`.

    Examples
    --------
    >>> m = as_meshes([(np.eye(3), [[0, 1, 2]]), (np.ones((3, 3)), [[2, 1, 0]])],
    ...               object_ids=[7, 3])
    >>> m.object_ids.tolist(), m[1].faces.tolist()
    ([7, 3], [[2, 1, 0]])
    """
    got = input_rows(
        mesh_parts(
            vertices,
            faces,
            vertex_object_ids=vertex_object_ids,
            object_ids=object_ids,
            attributes=attributes,
            face_attributes=face_attributes,
            object_attributes=object_attributes,
            groups=groups,
            group_attributes=group_attributes,
        )
    )
    return _assemble(
        got.rows,
        got.ids,
        decode_columns(got.object_attributes),
        got.groups,
        decode_columns(got.group_attributes),
        WindingOrder.parse(winding_order, field="winding_order"),
    )


def _assemble(
    picked: FaceRows,
    ids: AnyArray,
    obj_attrs: dict[str, AnyArray],
    groups: dict[str, AnyArray],
    group_attrs: dict[str, AnyArray],
    winding: WindingOrder,
) -> Meshes:
    """Sort faces by vertex indices (grouping them by object) and build the result."""
    attrs, face_attrs = decode_columns(picked.attributes), decode_columns(picked.face_attributes)
    f, order = sorted_faces(picked.faces, max(len(picked.positions), 1), bool(face_attrs))
    face_obj = picked.objpos[f[:, 0]] if len(f) else np.zeros(0, dtype=np.int64)
    return Meshes(
        vertices=picked.positions,
        faces=f,
        vertex_object_ids=ids[picked.objpos],
        object_ids=ids,
        offsets=offsets_from_counts(np.bincount(picked.objpos, minlength=len(picked.objects))),
        face_offsets=offsets_from_counts(np.bincount(face_obj, minlength=len(picked.objects))),
        attributes=attrs,
        face_attributes={k: np.take(v, order, axis=0) for k, v in face_attrs.items()}
        if order is not None
        else {},
        object_attributes=obj_attrs,
        groups=groups,
        group_attributes=group_attrs,
        winding_order=winding,
    )


# -- read ------------------------------------------------------------------------------------


def _meshes_of(reader: LevelReader, rows: FaceRows) -> Meshes:
    """Build the :class:`Meshes` of gathered vertices and faces."""
    objs = rows.objects
    stored = reader.object_attributes(objs)
    id_col = stored.pop("id", None)  # user ids: read once with the other attributes
    groups, group_attrs = group_members_out(reader, objs)
    return _assemble(
        rows,
        objs if id_col is None else id_col.values,
        decode_columns(stored),
        groups,
        group_attrs,
        WindingOrder.parse(
            str(reader.meta.type_metadata.get("winding_order", "ccw")), field="winding_order"
        ),
    )


_BATCH_KEYWORDS = (
    "attributes",
    "face_attributes",
    "object_attributes",
    "groups",
    "group_attributes",
)
"""Keywords of a streaming batch that pass through to :func:`mesh_parts`."""


@register_geometry_type
class MeshType(GeometryType[Meshes]):
    """Plug-in for ``mesh`` stores."""

    spec = type_spec(GeometryTypeName.MESH)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> Meshes:
        """Build the :class:`Meshes` of gathered vertices and faces."""
        return _meshes_of(reader, rows_as(rows, FaceRows, cls.spec))

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        rename_keywords(kw, "Writer.append", {"ids": "object_ids"}, stacklevel=6)
        faces, ids, *rest = take_batch_args(kw, "faces", "object_ids", *_BATCH_KEYWORDS)
        given = dict(zip(_BATCH_KEYWORDS, rest, strict=True))
        parts = mesh_parts(data, faces, vertex_object_ids=None, object_ids=None, **given)
        return Batch(parts, object_ids=batch_ids(ids))


def read_meshes(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    attributes: bool | str | Sequence[str] = True,
    face_attributes: bool | str | Sequence[str] = True,
    include_boundary_faces: bool = False,
    order: str | ElementOrder = ElementOrder.STORAGE,
    where: WhereLike | None = None,
    sphere: SphereLike | None = None,
    limit: int | None = None,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Meshes:
    """Read triangle meshes from a ``mesh`` store.

    Parameters
    ----------
    store
        Path, URL or zarr store.
    level
        Resolution level.
    bbox
        ``(min, max)``: return the vertices with ``min <= p < max`` and the faces whose three
        vertices are returned.  Without a box, objects come back whole.
    object_ids
        Objects to read, by id (user ids when the store has them), in the order given
        (repeated ids are read once).
    group
        Read the objects of one group (name or index).
    attributes, face_attributes
        True for all per-vertex / per-face attributes, False for none, or names.
    include_boundary_faces
        With ``bbox``: also return faces with at least one vertex in the box, together with
        their vertices outside it.
    order
        ``"storage"`` (default): vertices grouped by object, faces as a set per object;
        ``"input"``: vertices and faces in the writer's input order (needs a store written
        with ``keep_order=True``; the result has ``input_order=True``).
    where, sphere, limit, max_vertices
        Attribute conditions (``{"intensity": (0.5, None), "label": {3, 7}}``), a ball
        ``(center, radius)``, the first N items, a vertex budget choosing the finest level
        that fits; see :mod:`zarr_vectors.query.execute` and :mod:`zarr_vectors.query.lod`.
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    Meshes
        Vertices grouped by object (traversal order within each), faces as a set per object;
        or both in input order.

    Raises
    ------
    InvalidInputError
        The store is not a mesh store, an unknown object id, group or attribute, or
        ``order="input"`` on a store written without input order.
    MissingDependencyError
        The store is Draco-encoded and DracoPy is missing.

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    >>> _ = write_meshes(store, square, [[0, 1, 2], [0, 2, 3]], chunk_shape=(1, 1))
    >>> read_meshes(store, bbox=([0, 0], [1.5, 0.5])).faces.shape
    (0, 3)
    >>> m = read_meshes(store, bbox=([0, 0], [1.5, 0.5]), include_boundary_faces=True)
    >>> len(m.vertices), m.faces.tolist()
    (4, [[0, 1, 2], [0, 2, 3]])
    """
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, budget_level(root, level, bbox, sphere, max_vertices))
    if reader.meta.geometry_type is not GeometryTypeName.MESH:
        raise InvalidInputError(
            f"store holds {str(reader.meta.geometry_type)!r}; read_meshes needs 'mesh'"
        )
    query = build_query(
        reader, bbox=bbox, object_ids=object_ids, group=group, attributes=attributes
    )
    names = attribute_selection(visible(reader.names(L.LINK_ATTRIBUTES)), face_attributes)
    sel = selection(reader, where, sphere, limit)
    how = ElementOrder.parse(order)
    if how is ElementOrder.INPUT:
        if INPUT_INDEX not in reader.names(L.ATTRIBUTES) or INPUT_INDEX not in reader.names(
            L.LINK_ATTRIBUTES
        ):
            raise missing_order("this mesh store")
        query = replace(query, attributes=(*(query.attributes or ()), INPUT_INDEX))
        names = (*names, INPUT_INDEX)
    if sel:  # vertices and faces filtered like a box (zarr_vectors.query.execute)
        got = run(reader, MeshType, no_boundary(query, include_boundary_faces), sel, names)
    else:
        got = MeshType.read_with(reader, query, names, include_boundary_faces)
    return got if how is ElementOrder.STORAGE else _in_input_order(got)


def _in_input_order(m: Meshes) -> Meshes:
    """Reorder a result read with the input indexes to input order, dropping the indexes."""
    fields = input_order(m.vertices, m.faces, m.vertex_object_ids, m.attributes, m.face_attributes)
    return replace(m, **fields, input_order=True)


# Deprecated singular names (removed in the next release): function nouns are plural.
write_mesh = deprecated_function(write_meshes, "write_mesh")
read_mesh = deprecated_function(read_meshes, "read_mesh")
