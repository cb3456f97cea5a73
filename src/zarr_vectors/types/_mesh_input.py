"""Mesh write input as :class:`~zarr_vectors.core.plan.GeometryParts` (FORMAT.md §6–§7).

Accepted forms: (N, D) vertices with (F, 3) faces, one mesh-like object (``vertices`` and
``faces``, e.g. a ``trimesh.Trimesh``), or a list of ``(vertices, faces)`` pairs or mesh-like
objects (one object each).  Faces are checked to be triangles indexing the vertices (the bad row
is named); objects are per-vertex ids or the connected components of the faces, and no face may
join two objects.  The Draco options of a write are checked here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column, normalize_columns
from zarr_vectors.core.components import connected_components
from zarr_vectors.core.deprecation import warn_renamed
from zarr_vectors.core.draco import MAX_DIMS, DracoSettings, require_dracopy
from zarr_vectors.core.links.faces import FaceRows
from zarr_vectors.core.links.keys import sorted_unique
from zarr_vectors.core.links.spans import LINK_SPAN, LinkSpans
from zarr_vectors.core.options import StoreOptions
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.ragged import change_mask, concat_ranges, offsets_from_counts
from zarr_vectors.core.writer import check_positions
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.spec.conventions import Encoding, WindingOrder
from zarr_vectors.types._base import dense_object_ids
from zarr_vectors.types._objects import UserIdMap, flatten_ragged, groups_table, ragged_columns
from zarr_vectors.types._order import INPUT_INDEX, input_permutation, inverse_permutation

__all__ = [
    "InputRows",
    "MeshLike",
    "draco_options",
    "input_order",
    "input_parts",
    "input_rows",
    "is_mesh_like",
    "mesh_metadata",
    "result_input",
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


@dataclass(frozen=True)
class InputRows:
    """Write input laid out as a read gathers it: what writing then reading everything returns."""

    rows: FaceRows
    """Vertices in object then input order, faces remapped to them (stored order)."""
    ids: AnyArray
    """Id of each object (user ids when given)."""
    object_attributes: dict[str, Column]
    """Per-object attributes, by dense object."""
    groups: dict[str, AnyArray]
    """Group name -> ids of its objects."""
    group_attributes: dict[str, Column]
    """Per-group attributes, in group order."""


def input_rows(parts: GeometryParts) -> InputRows:
    """Lay out normalised mesh input (:func:`input_parts`) as a whole-store read gathers it."""
    assert parts.vertex_objects is not None
    assert parts.links is not None
    obj = parts.vertex_objects.astype(np.int64, copy=False)
    order = np.argsort(obj, kind="stable")
    where = np.empty(len(order), dtype=np.int64)
    where[order] = np.arange(len(order), dtype=np.int64)
    cols = dict(parts.object_attributes)
    ids = cols.pop("id").values if "id" in cols else np.arange(parts.n_objects)
    groups: dict[str, AnyArray] = {}
    if parts.groups is not None:
        groups = {
            name: ids[parts.groups.members_of(i)] for i, name in enumerate(parts.groups.names)
        }
    rows = FaceRows(
        parts.positions[order],
        obj[order],
        np.arange(parts.n_objects),
        where[parts.links],
        {k: c.take(order) for k, c in parts.vertex_attributes.items()},
        dict(parts.link_attributes),
    )
    group_attrs = {} if parts.groups is None else dict(parts.groups.attributes)
    return InputRows(rows, ids, cols, groups, group_attrs)


def result_input(m: Mapping[str, Any]) -> dict[str, Any]:
    """Return the array-form arguments equivalent to a ``Meshes`` result's fields ``m``.

    Object attributes are put in ascending id order, as the objects of the parts are.
    """
    order = np.argsort(m["object_ids"], kind="stable")
    if len(sorted_unique(np.asarray(m["vertex_object_ids"]))) != len(m["object_ids"]):
        raise InvalidInputError("Meshes input: every object needs at least one vertex")
    return {
        "vertices": m["vertices"],
        "faces": m["faces"],
        "object_ids": None,
        "vertex_object_ids": m["vertex_object_ids"],
        "attributes": m["attributes"],
        "face_attributes": m["face_attributes"],
        "object_attributes": {k: v[order] for k, v in m["object_attributes"].items()},
        "groups": m["groups"],
        "group_attributes": m["group_attributes"],
    }


def input_parts(data: Any, faces: Any, *, for_write: bool = False, **kw: Any) -> GeometryParts:
    """Normalise array, mesh-like or list input (``kw``: the ``write_meshes`` keywords).

    ``for_write``: the parts go straight to :func:`~zarr_vectors.core.writer.write_store`,
    which refuses NaN and infinite coordinates in its extent scan (not scanned here), and
    objects whose vertices come object after object are given as ranges
    (``object_offsets``) instead of an id per vertex.
    """
    if faces is None and is_mesh_like(data):
        data, faces = data.vertices, data.faces
    if faces is None:
        if isinstance(data, np.ndarray):
            raise InvalidInputError("faces are required with a vertex array")
        if kw["vertex_object_ids"] is not None:
            raise InvalidInputError(
                "vertex_object_ids applies to array input; a list of meshes takes "
                "object_ids= (one per mesh)"
            )
        pos, flat, v_off, f_off = _split_list(data, finite=not for_write)
        link_spans = None
        n = len(v_off) - 1
        objs = _Objects.ranges(v_off, UserIdMap.from_user(kw["object_ids"], n), for_write)
        attrs = ragged_columns(kw["attributes"], v_off, "attribute")
        f_attrs = ragged_columns(kw["face_attributes"], f_off, "face attribute")
    else:
        pos = check_positions(data, finite=not for_write)
        flat, spans = _checked_faces(faces, len(pos), "faces")
        link_spans = spans
        objs = _vertex_objects(_per_vertex_ids(kw), flat, len(pos), spans, for_write)
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
        object_offsets=objs.offsets,
        n_objects=objs.n,
        ordered=True,
        vertex_attributes=attrs,
        links=flat,
        link_spans=link_spans,
        link_attributes=f_attrs,
        object_attributes=obj_attrs,
        groups=groups_table(kw["groups"], kw["group_attributes"], objs.idmap, objs.n),
    )


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


def _checked_faces(faces: Any, n_vertices: int, what: str) -> tuple[IntArray, LinkSpans]:
    """:func:`_check_faces`, also returning the faces' :class:`LinkSpans`.

    The spans cost the range check's two reductions (row-wise, over the same faces); the
    planner uses them too.
    """
    arr = _face_array(faces, what)
    low, high = LinkSpans.extremes(arr)
    if arr.size:
        _check_range(arr, low.min(), high.max(), n_vertices, what)
    flat = np.ascontiguousarray(arr, dtype=np.int64)
    spans = LinkSpans(flat, LINK_SPAN, low.astype(np.int64), high.astype(np.int64))
    return flat, spans


def is_mesh_like(obj: Any) -> bool:
    """Whether ``obj`` has ``vertices`` and ``faces`` (a mesh-like object, e.g. trimesh's)."""
    return hasattr(obj, "vertices") and hasattr(obj, "faces")


def _split_list(
    items: Sequence[Any], *, finite: bool = True
) -> tuple[npt.NDArray[np.floating], IntArray, IntArray, IntArray]:
    """Concatenate a list of meshes; return vertices, global faces and both CSR offsets.

    ``finite=False`` leaves the NaN/inf scan to the writer (see :func:`input_parts`).
    """
    pairs = [(m.vertices, m.faces) if is_mesh_like(m) else tuple(m) for m in items]
    if any(len(p) != 2 for p in pairs):
        raise InvalidInputError(
            "faces are required with vertex positions; a list input holds "
            "(vertices, faces) pairs or mesh objects"
        )
    arrays = [np.asarray(v) for v, _ in pairs]
    dims = {a.shape[1] for a in arrays if a.ndim == 2}
    if len(dims) > 1:
        raise InvalidInputError(f"meshes: vertices have mixed dimensions {sorted(dims)}")
    pos, v_off = flatten_ragged(arrays, None, "meshes", finite=finite)
    faces = [
        _check_faces(f, int(n), f"mesh {i} faces")
        for i, ((_, f), n) in enumerate(zip(pairs, np.diff(v_off), strict=True))
    ]
    f_off = offsets_from_counts([len(f) for f in faces])
    flat = np.concatenate(faces) + np.repeat(v_off[:-1], np.diff(f_off))[:, None]
    return pos, flat.astype(np.int64).reshape(-1, 3), v_off, f_off


@dataclass(frozen=True)
class _Objects:
    """Dense object of every vertex (or their ranges) plus the user-id map."""

    dense: IntArray | None
    """Dense object id per vertex; None when ``offsets`` gives the objects."""
    offsets: IntArray | None
    """(n + 1,) CSR offsets when each object is one range of vertices, in order."""
    n: int
    idmap: UserIdMap

    @classmethod
    def ranges(cls, offsets: IntArray, idmap: UserIdMap, as_ranges: bool) -> _Objects:
        """Objects that are consecutive ranges of vertices (``offsets``, CSR).

        ``as_ranges``: keep the offsets (planning needs no id per vertex), else expand them.
        """
        n = len(offsets) - 1
        if as_ranges:
            return cls(None, offsets.astype(np.int64, copy=False), n, idmap)
        dense = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        return cls(dense, None, n, idmap)


def _vertex_objects(
    vertex_object_ids: Any,
    faces: IntArray,
    n_vertices: int,
    spans: LinkSpans | None = None,
    as_ranges: bool = False,
) -> _Objects:
    """Objects from per-vertex user ids, or connected components when none are given.

    ``spans`` (of ``faces``) speed up the check that no face joins two objects.  With
    ``as_ranges``, ids that come object after object are returned as ranges (offsets).
    """
    if vertex_object_ids is None:
        dense, n = connected_components(n_vertices, faces)
        return _Objects(dense, None, n, UserIdMap(None))
    arr = np.asarray(vertex_object_ids)
    if arr.shape != (n_vertices,):
        raise InvalidInputError(
            f"vertex_object_ids must have one entry per vertex ({n_vertices}), "
            f"got shape {arr.shape}"
        )
    offsets = _sorted_runs(arr)
    if offsets is None:  # ids in any order: rank them
        dense, distinct, identity = dense_object_ids(arr)
        _check_face_objects(faces, _narrow(dense, len(distinct)), arr)
        return _Objects(dense, None, len(distinct), UserIdMap(None if identity else distinct))
    distinct = arr[offsets[:-1]]
    n = len(distinct)
    # a narrow id per vertex for the face check only: a fraction of an int64 table's traffic
    table = np.repeat(np.arange(n, dtype=_narrow_dtype(n)), np.diff(offsets))
    _check_face_objects(faces, table, arr, spans)
    identity = bool(distinct[0] == 0 and distinct[-1] == n - 1)
    idmap = UserIdMap(None if identity else distinct)
    return _Objects.ranges(offsets, idmap, as_ranges)


def _sorted_runs(ids: npt.NDArray[Any]) -> IntArray | None:
    """CSR offsets of the runs of equal ids when integer ``ids`` never decrease, else None.

    Vertices usually come object after object.  One pass finds where the id changes; the
    ids never decrease exactly when every change is an increase, so only the run starts
    are compared then.
    """
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or not len(ids):
        return None
    starts = np.flatnonzero(change_mask(ids))
    first = ids[starts]
    if not bool(np.all(first[1:] > first[:-1])):
        return None
    return np.append(starts, len(ids)).astype(np.int64, copy=False)


def _narrow_dtype(n: int) -> type[np.integer[Any]]:
    """Narrowest integer type holding ``0 .. n - 1`` (dense object ids)."""
    if n <= 2**8:
        return np.uint8
    if n <= 2**16:
        return np.uint16
    return np.int32 if n <= 2**31 else np.int64


def _narrow(dense: IntArray, n: int) -> npt.NDArray[Any]:
    """``dense`` (ids below ``n``) in :func:`_narrow_dtype`."""
    return dense.astype(_narrow_dtype(n), copy=False)


_FACE_BLOCK = 1 << 16
"""Faces checked at once by :func:`_check_face_objects` (the temporaries stay in cache)."""


def _check_face_objects(
    faces: IntArray,
    table: npt.NDArray[Any],
    user: npt.NDArray[Any],
    spans: LinkSpans | None = None,
) -> None:
    """Raise for the first face joining vertices of different objects.

    ``faces`` index ``table``, the dense object of each vertex in any integer type (checked
    by :func:`_check_faces`).  ``spans`` may be given when ``table`` is non-decreasing: then
    every vertex of a span whose smallest and largest vertex share an object is in that
    object, and only the other spans' faces are looked up.
    """
    rows = None
    if spans is not None:
        mixed = np.flatnonzero(table[spans.low] != table[spans.high])
        if len(mixed) * 4 <= len(spans.low):
            first = mixed * spans.size
            rows = concat_ranges(first, np.minimum(len(faces) - first, spans.size))
    looked = faces if rows is None else np.take(faces, rows, axis=0)
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


def _per_vertex_ids(kw: dict[str, Any]) -> Any:
    """Per-vertex ids of array input; ``object_ids=`` there is their deprecated name."""
    if kw["object_ids"] is None:
        return kw["vertex_object_ids"]
    if kw["vertex_object_ids"] is not None:
        raise InvalidInputError("pass vertex_object_ids= only (object_ids= is its old name)")
    warn_renamed(
        "object_ids= with vertex-array mesh input",
        "vertex_object_ids= (one per vertex)",
        stacklevel=6,
    )
    return kw["object_ids"]


def draco_options(
    opts: StoreOptions, encoding: Any, quantization_bits: int, compression_level: int, ndim: int
) -> StoreOptions:
    """``opts`` with the Draco settings of ``encoding="draco"`` (checked), else unchanged."""
    if Encoding.parse(encoding, field="encoding") is not Encoding.DRACO:
        return opts
    settings = DracoSettings(
        quantization_bits=quantization_bits, compression_level=compression_level
    )
    require_dracopy()
    if ndim > MAX_DIMS:
        raise InvalidInputError(f"Draco encodes at most {MAX_DIMS} dimensions")
    return replace(opts, draco=settings)


def mesh_metadata(winding_order: Any, closed_surface: bool | None) -> dict[str, Any]:
    """Return the ``mesh`` root keys of a write: winding order (checked), closed surface."""
    return {
        "winding_order": WindingOrder.parse(winding_order, field="winding_order").value,
        "closed_surface": None if closed_surface is None else bool(closed_surface),
    }


def input_order(
    vertices: AnyArray,
    faces: IntArray,
    vertex_object_ids: AnyArray,
    attributes: Mapping[str, AnyArray],
    face_attributes: Mapping[str, AnyArray],
) -> dict[str, Any]:
    """Return result fields put back in input order by the stored input indexes.

    ``attributes`` and ``face_attributes`` hold the reserved input-index attribute (written
    with ``keep_order=True``); it is used and dropped.
    """
    attrs, face_attrs = dict(attributes), dict(face_attributes)
    vperm = input_permutation(attrs.pop(INPUT_INDEX), "mesh vertices")
    fperm = input_permutation(face_attrs.pop(INPUT_INDEX), "mesh faces")
    where = inverse_permutation(vperm)
    return {
        "vertices": vertices[vperm],
        "faces": where[faces[fperm]].reshape(-1, 3),
        "vertex_object_ids": vertex_object_ids[vperm],
        "attributes": {k: v[vperm] for k, v in attrs.items()},
        "face_attributes": {k: v[fperm] for k, v in face_attrs.items()},
    }
