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
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.columns import normalize_columns
from zarr_vectors.core.components import connected_components
from zarr_vectors.core.deprecation import deprecated_function, rename_keywords, warn_renamed
from zarr_vectors.core.draco import MAX_DIMS, DracoSettings, require_dracopy
from zarr_vectors.core.engine import Gathered, rows_as
from zarr_vectors.core.links.faces import FaceRows
from zarr_vectors.core.links.keys import sorted_unique
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import (
    change_mask,
    concat_ranges,
    offsets_from_counts,
    sort_keys,
    sort_order,
)
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, check_positions, write_store
from zarr_vectors.errors import GeometryError, InvalidInputError
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
    dense_object_ids,
    register_geometry_type,
    take_batch_args,
    write_options,
)
from zarr_vectors.types._objects import (
    UserIdMap,
    flatten_ragged,
    group_members_out,
    groups_table,
    output_ids,
    ragged_columns,
)
from zarr_vectors.types._order import (
    INPUT_INDEX,
    ElementOrder,
    input_permutation,
    inverse_permutation,
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


class MeshLike(Protocol):
    """Anything with ``vertices`` (N, D) and ``faces`` (F, 3), e.g. a ``trimesh.Trimesh``."""

    @property
    def vertices(self) -> Any:
        """(N, D) vertex positions."""

    @property
    def faces(self) -> Any:
        """(F, 3) vertex indices."""


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


def _face_array(faces: Any, what: str) -> npt.NDArray[Any]:
    """Return faces as an (F, 3) integer array (not yet range-checked); name a bad row."""
    try:
        arr = np.asarray(faces)
    except ValueError:  # ragged rows: polygons of mixed sizes
        sizes = np.array([len(f) for f in faces])
        row = int(np.argmax(sizes != 3))
        raise GeometryError(
            f"{what}: face {row} has {sizes[row]} vertices; only triangles are supported"
        ) from None
    if arr.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        got = f"{arr.shape[1]} vertices" if arr.ndim == 2 else f"shape {arr.shape}"
        raise GeometryError(f"{what}: face 0 has {got}; faces must be (F, 3) triangles")
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{what} must be integer vertex indices, got dtype {arr.dtype}")
    return arr


def _check_range(arr: npt.NDArray[Any], low: Any, high: Any, n_vertices: int, what: str) -> None:
    """Raise for the first face outside ``0..n_vertices-1``, given the faces' extremes."""
    if low < 0 or high >= n_vertices:  # rows only on failure
        row = int(np.argmax(np.any((arr < 0) | (arr >= n_vertices), axis=1)))
        raise GeometryError(
            f"{what}: face {row} = {arr[row].tolist()} refers to a vertex outside "
            f"0..{n_vertices - 1}"
        )


def _check_faces(faces: Any, n_vertices: int, what: str) -> IntArray:
    """Validate (F, 3) integer faces indexing ``n_vertices`` vertices; name the bad row."""
    arr = _face_array(faces, what)
    if arr.size:
        _check_range(arr, arr.min(), arr.max(), n_vertices, what)
    return np.ascontiguousarray(arr, dtype=np.int64)


_FACE_SPAN = 1024
"""Consecutive faces summarised by their smallest and largest vertex (see :class:`_Spans`)."""


@dataclass(frozen=True)
class _Spans:
    """Smallest and largest vertex of each ``_FACE_SPAN`` consecutive faces (last: the rest)."""

    low: IntArray
    high: IntArray


def _checked_faces(faces: Any, n_vertices: int, what: str) -> tuple[IntArray, _Spans]:
    """:func:`_check_faces`, also returning the faces' :class:`_Spans`.

    The spans cost the range check's two reductions (row-wise, over the same faces).
    """
    arr = _face_array(faces, what)
    full = len(arr) - len(arr) % _FACE_SPAN
    rows = [arr[:full].reshape(-1, _FACE_SPAN * 3)]
    if full < len(arr):
        rows.append(arr[full:].reshape(1, -1))
    low = np.concatenate([r.min(axis=1) for r in rows])
    high = np.concatenate([r.max(axis=1) for r in rows])
    if arr.size:
        _check_range(arr, low.min(), high.max(), n_vertices, what)
    spans = _Spans(low.astype(np.int64, copy=False), high.astype(np.int64, copy=False))
    return np.ascontiguousarray(arr, dtype=np.int64), spans


def _is_mesh_like(obj: Any) -> bool:
    return hasattr(obj, "vertices") and hasattr(obj, "faces")


def _split_list(
    items: Sequence[Any],
) -> tuple[npt.NDArray[np.floating], IntArray, IntArray, IntArray]:
    """Concatenate a list of meshes; return vertices, global faces and both CSR offsets."""
    pairs = [(m.vertices, m.faces) if _is_mesh_like(m) else tuple(m) for m in items]
    if any(len(p) != 2 for p in pairs):
        raise InvalidInputError(
            "faces are required with vertex positions; a list input holds "
            "(vertices, faces) pairs or mesh objects"
        )
    arrays = [np.asarray(v) for v, _ in pairs]
    dims = {a.shape[1] for a in arrays if a.ndim == 2}
    if len(dims) > 1:
        raise InvalidInputError(f"meshes: vertices have mixed dimensions {sorted(dims)}")
    pos, v_off = flatten_ragged(arrays, None, "meshes")
    faces = [
        _check_faces(f, int(n), f"mesh {i} faces")
        for i, ((_, f), n) in enumerate(zip(pairs, np.diff(v_off), strict=True))
    ]
    f_off = offsets_from_counts([len(f) for f in faces])
    flat = np.concatenate(faces) + np.repeat(v_off[:-1], np.diff(f_off))[:, None]
    return pos, flat.astype(np.int64).reshape(-1, 3), v_off, f_off


@dataclass(frozen=True)
class _Objects:
    """Dense object of every vertex plus the user-id map."""

    dense: IntArray
    n: int
    idmap: UserIdMap


def _vertex_objects(
    vertex_object_ids: Any, faces: IntArray, n_vertices: int, spans: _Spans | None = None
) -> _Objects:
    """Objects from per-vertex user ids, or connected components when none are given.

    ``spans`` (of ``faces``) speed up the check that no face joins two objects.
    """
    if vertex_object_ids is None:
        dense, n = connected_components(n_vertices, faces)
        return _Objects(dense, n, UserIdMap(None))
    arr = np.asarray(vertex_object_ids)
    if arr.shape != (n_vertices,):
        raise InvalidInputError(
            f"vertex_object_ids must have one entry per vertex ({n_vertices}), "
            f"got shape {arr.shape}"
        )
    dense, distinct, identity, ordered = _dense_ids(arr)
    _check_face_objects(faces, dense, arr, spans if ordered else None)
    return _Objects(dense, len(distinct), UserIdMap(None if identity else distinct))


def _dense_ids(ids: npt.NDArray[Any]) -> tuple[IntArray, npt.NDArray[Any], bool, bool]:
    """:func:`~zarr_vectors.types._base.dense_object_ids`, in one pass when ids are sorted.

    Vertices usually come object after object: then the dense id is a running count of id
    changes (no sort).  The last value tells whether the dense ids are known to be sorted.
    """
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or not len(ids):
        return (*dense_object_ids(ids), False)
    if not bool(np.all(ids[1:] >= ids[:-1])):
        return (*dense_object_ids(ids), False)
    change = change_mask(ids)
    distinct = ids[change]
    dense = np.cumsum(change, dtype=np.int64)
    dense -= 1
    identity = bool(distinct[0] == 0 and distinct[-1] == distinct.size - 1)
    return dense, distinct, identity, True


_FACE_BLOCK = 1 << 16
"""Faces checked at once by :func:`_check_face_objects` (the temporaries stay in cache)."""


def _check_face_objects(
    faces: IntArray, dense: IntArray, user: npt.NDArray[Any], spans: _Spans | None = None
) -> None:
    """Raise for the first face joining vertices of different objects.

    ``faces`` index ``dense`` (checked by :func:`_check_faces`).  ``spans`` may be given when
    ``dense`` is non-decreasing: then every vertex of a span whose smallest and largest
    vertex share an object is in that object, and only the other spans' faces are looked up.
    """
    rows = None
    if spans is not None:
        mixed = np.flatnonzero(dense[spans.low] != dense[spans.high])
        if len(mixed) * 4 <= len(spans.low):
            first = mixed * _FACE_SPAN
            rows = concat_ranges(first, np.minimum(len(faces) - first, _FACE_SPAN))
    looked = faces if rows is None else np.take(faces, rows, axis=0)
    table = dense
    if rows is None and len(dense) < 2**31:
        table = dense.astype(np.int32)  # halves the gather of every face
    buf = np.empty((min(len(looked), _FACE_BLOCK), 3), dtype=table.dtype)
    for a in range(0, len(looked), _FACE_BLOCK):
        block = looked[a : a + _FACE_BLOCK]
        f_obj = buf[: len(block)]
        np.take(table, block, out=f_obj, mode="clip")  # indices are valid: no bounds check
        joins = f_obj[:, 0] != f_obj[:, 1]
        joins |= f_obj[:, 0] != f_obj[:, 2]
        if not joins.any():
            continue
        row = a + int(np.argmax(joins))
        row = row if rows is None else int(rows[row])
        raise GeometryError(
            f"faces: face {row} = {faces[row].tolist()} joins vertices of "
            f"objects {user[faces[row]].tolist()}"
        )


def _result_input(m: Meshes) -> dict[str, Any]:
    """Array-form arguments equivalent to a :class:`Meshes` (object attributes re-ordered)."""
    order = np.argsort(m.object_ids, kind="stable")
    if len(sorted_unique(np.asarray(m.vertex_object_ids))) != len(m.object_ids):
        raise InvalidInputError("Meshes input: every object needs at least one vertex")
    return {
        "vertices": m.vertices,
        "faces": m.faces,
        "object_ids": None,
        "vertex_object_ids": m.vertex_object_ids,
        "attributes": m.attributes,
        "face_attributes": m.face_attributes,
        "object_attributes": {k: v[order] for k, v in m.object_attributes.items()},
        "groups": m.groups,
        "group_attributes": m.group_attributes,
    }


def mesh_parts(data: MeshInput, faces: Any, **kw: Any) -> GeometryParts:
    """Normalise every accepted input form to :class:`GeometryParts`."""
    if isinstance(data, Meshes):
        if faces is not None or any(v is not None for v in kw.values()):
            raise InvalidInputError("a Meshes input carries its own faces, ids and attributes")
        kw = _result_input(data)
        data, faces = kw.pop("vertices"), kw.pop("faces")
    elif faces is None and _is_mesh_like(data):
        data, faces = data.vertices, data.faces  # type: ignore[union-attr]
    if faces is None:
        if isinstance(data, np.ndarray):
            raise InvalidInputError("faces are required with a vertex array")
        if kw["vertex_object_ids"] is not None:
            raise InvalidInputError(
                "vertex_object_ids applies to array input; a list of meshes takes "
                "object_ids= (one per mesh)"
            )
        pos, flat, v_off, f_off = _split_list(data)  # type: ignore[arg-type]
        n = len(v_off) - 1
        objs = _Objects(
            np.repeat(np.arange(n, dtype=np.int64), np.diff(v_off)),
            n,
            UserIdMap.from_user(kw["object_ids"], n),
        )
        attrs = ragged_columns(kw["attributes"], v_off, "attribute")
        f_attrs = ragged_columns(kw["face_attributes"], f_off, "face attribute")
    else:
        pos = check_positions(data)
        flat, spans = _checked_faces(faces, len(pos), "faces")
        objs = _vertex_objects(_per_vertex_ids(kw), flat, len(pos), spans)
        attrs = normalize_columns(kw["attributes"], len(pos), "attribute")
        f_attrs = normalize_columns(kw["face_attributes"], len(flat), "face attribute")
    obj_attrs = normalize_columns(kw["object_attributes"], objs.n, "object attribute")
    if "id" in obj_attrs:
        raise InvalidInputError(
            "object attribute 'id' is reserved; pass user ids as object_ids or vertex_object_ids"
        )
    obj_attrs.update(objs.idmap.columns())
    return GeometryParts(
        positions=pos,
        vertex_object=objs.dense,
        n_objects=objs.n,
        ordered=True,
        vertex_attributes=attrs,
        links=flat,
        link_attributes=f_attrs,
        object_attributes=obj_attrs,
        groups=groups_table(kw["groups"], kw["group_attributes"], objs.idmap, objs.n),
    )


def _per_vertex_ids(kw: dict[str, Any]) -> Any:
    """Per-vertex ids of array input; ``object_ids=`` there is their deprecated name."""
    if kw["object_ids"] is None:
        return kw["vertex_object_ids"]
    if kw["vertex_object_ids"] is not None:
        raise InvalidInputError("pass vertex_object_ids= only (object_ids= is its old name)")
    warn_renamed(
        "object_ids= with vertex-array mesh input",
        "vertex_object_ids= (one per vertex)",
        stacklevel=5,
    )
    return kw["object_ids"]


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
    )
    if keep_order:
        parts = with_input_index(parts)
    meta = {
        "winding_order": WindingOrder.parse(winding_order, field="winding_order").value,
        "closed_surface": None if closed_surface is None else bool(closed_surface),
    }
    opts = write_options(GeometryTypeName.MESH, parts, store_kwargs, meta)
    if Encoding.parse(encoding, field="encoding") is Encoding.DRACO:
        settings = DracoSettings(
            quantization_bits=quantization_bits, compression_level=compression_level
        )
        require_dracopy()
        if parts.positions.shape[1] > MAX_DIMS:
            raise InvalidInputError(f"Draco encodes at most {MAX_DIMS} dimensions")
        opts = replace(opts, draco=settings)
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
    )
    assert parts.vertex_objects is not None
    assert parts.links is not None
    obj = parts.vertex_objects.astype(np.int64, copy=False)
    order = np.argsort(obj, kind="stable")
    where = np.empty(len(order), dtype=np.int64)
    where[order] = np.arange(len(order), dtype=np.int64)
    cols = dict(parts.object_attributes)
    ids = cols.pop("id").values if "id" in cols else np.arange(parts.n_objects)
    groups_out: dict[str, AnyArray] = {}
    if parts.groups is not None:
        groups_out = {
            name: ids[parts.groups.members_of(i)] for i, name in enumerate(parts.groups.names)
        }
    rows = FaceRows(
        parts.positions[order], obj[order], np.arange(parts.n_objects), where[parts.links], {}, {}
    )
    return _assemble(
        rows,
        ids,
        {k: c.take(order).decoded() for k, c in parts.vertex_attributes.items()},
        decode_columns(parts.link_attributes),
        decode_columns(cols),
        groups_out,
        {} if parts.groups is None else decode_columns(parts.groups.attributes),
        WindingOrder.parse(winding_order, field="winding_order"),
    )


def _sorted_faces(faces: IntArray, n: int, with_order: bool) -> tuple[IntArray, IntArray | None]:
    """Return the faces sorted by vertex indices (all below ``n``) and the permutation.

    The stable permutation is computed only ``with_order`` (face attributes follow it);
    otherwise the sorted faces are unpacked from sorted keys, which is cheaper.
    """
    k = faces.shape[1] if faces.ndim == 2 else 0
    if len(faces) == 0 or n**k >= 2**62:
        order = sort_order([faces[:, j] for j in range(k)], [n] * k)
        return faces[order], order
    key = faces[:, 0].astype(np.int64)  # packed: one int64 per face
    for j in range(1, k):
        key *= n
        key += faces[:, j]
    runs = int(np.count_nonzero(key[1:] < key[:-1])) + 1
    key, perm = sort_keys(key, with_order, runs)
    if perm is not None:
        return np.take(faces, perm, axis=0), perm
    out = np.empty((len(key), k), dtype=np.int64)  # unpacked from the sorted keys
    for j in range(k - 1, 0, -1):
        np.remainder(key, n, out=out[:, j])
        key //= n
    out[:, 0] = key
    return out, None


def _assemble(
    picked: FaceRows,
    ids: AnyArray,
    attrs: dict[str, AnyArray],
    face_attrs: dict[str, AnyArray],
    obj_attrs: dict[str, AnyArray],
    groups: dict[str, AnyArray],
    group_attrs: dict[str, AnyArray],
    winding: WindingOrder,
) -> Meshes:
    """Sort faces by vertex indices (grouping them by object) and build the result."""
    f, order = _sorted_faces(picked.faces, max(len(picked.positions), 1), bool(face_attrs))
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
    obj_attrs = decode_columns(reader.object_attributes(objs))
    obj_attrs.pop("id", None)
    groups, group_attrs = group_members_out(reader, objs)
    return _assemble(
        rows,
        output_ids(reader, objs),
        {n: c.decoded() for n, c in rows.attributes.items()},
        decode_columns(rows.face_attributes),
        obj_attrs,
        groups,
        group_attrs,
        _winding(reader),
    )


def _winding(reader: LevelReader) -> WindingOrder:
    value = reader.meta.type_metadata.get("winding_order", WindingOrder.CCW.value)
    return WindingOrder.parse(str(value), field="winding_order")


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
        faces, ids, attrs, f_attrs, o_attrs, groups, g_attrs = take_batch_args(
            kw,
            "faces",
            "object_ids",
            "attributes",
            "face_attributes",
            "object_attributes",
            "groups",
            "group_attributes",
        )
        parts = mesh_parts(
            data,
            faces,
            vertex_object_ids=None,
            object_ids=None,
            attributes=attrs,
            face_attributes=f_attrs,
            object_attributes=o_attrs,
            groups=groups,
            group_attributes=g_attrs,
        )
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
    attrs, face_attrs = dict(m.attributes), dict(m.face_attributes)
    vperm = input_permutation(attrs.pop(INPUT_INDEX), "mesh vertices")
    fperm = input_permutation(face_attrs.pop(INPUT_INDEX), "mesh faces")
    where = inverse_permutation(vperm)
    return replace(
        m,
        vertices=m.vertices[vperm],
        faces=where[m.faces[fperm]].reshape(-1, 3),
        vertex_object_ids=m.vertex_object_ids[vperm],
        attributes={k: v[vperm] for k, v in attrs.items()},
        face_attributes={k: v[fperm] for k, v in face_attrs.items()},
        input_order=True,
    )


_mesh_parts = mesh_parts  # the name zarr_vectors.edit.append imports

# Deprecated singular names (removed in the next release): function nouns are plural.
write_mesh = deprecated_function(write_meshes, "write_mesh")
read_mesh = deprecated_function(read_meshes, "read_mesh")
