"""One flat view of any read result, shared by the renderer and the Neuroglancer exporter.

Every geometry type reduces to the same three index arrays over one vertex table: ``edges``
(lines, polylines, streamlines, graphs, skeletons), ``faces`` (meshes), or neither (point
clouds).  :func:`load_scene` opens a store, reads one level through
:meth:`zarr_vectors.Reader.read` (which dispatches on the geometry type) and flattens the typed
result into a :class:`Scene`; consumers never branch on result classes themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

# The type modules register their readers with the geometry-type registry on import; the
# package root does not import every one of them, so the viewer does it here.
import zarr_vectors.types.graphs
import zarr_vectors.types.lines
import zarr_vectors.types.meshes
import zarr_vectors.types.points
import zarr_vectors.types.polylines
import zarr_vectors.types.skeletons  # noqa: F401
from zarr_vectors.api import Reader
from zarr_vectors.core.reader import BBoxLike, parse_bbox
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.multiscale.select import choose_level
from zarr_vectors.spec.conventions import SceneKind
from zarr_vectors.spec.metadata import BoundingBox, RootMetadata
from zarr_vectors.spec.typespec import parse_geometry_type, type_spec
from zarr_vectors.types._base import get_geometry_type

__all__ = ["Scene", "axis_labels", "load_scene", "scene_from_result"]

AnyArray = npt.NDArray[Any]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class Scene:
    """Geometry of one level as a vertex table plus connectivity."""

    geometry_type: str
    """Geometry type of the store."""
    positions: FloatArray
    """(N, D) vertex positions, physical units."""
    edges: IntArray
    """(M, 2) pairs of indices into ``positions`` (empty for points and meshes)."""
    faces: IntArray
    """(F, 3) triangles as indices into ``positions`` (empty unless a mesh)."""
    vertex_object: IntArray | None
    """(N,) index into ``object_ids`` of each vertex, or None when there are no objects."""
    object_ids: AnyArray
    """(n,) user ids of the objects, in result order."""
    attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-vertex attributes, aligned with ``positions``."""
    object_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-object attributes, aligned with ``object_ids``."""
    edge_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-edge attributes, aligned with ``edges`` (graphs)."""
    face_attributes: Mapping[str, AnyArray] = field(default_factory=dict)
    """Per-face attributes, aligned with ``faces`` (meshes)."""

    @property
    def kind(self) -> SceneKind:
        """How the scene is drawn (the geometry type's ``TypeSpec.scene``)."""
        return type_spec(self.geometry_type).scene

    @property
    def ndim(self) -> int:
        """Spatial dimensions D."""
        return int(self.positions.shape[1])

    @property
    def n_objects(self) -> int:
        """Objects in the scene (0 for a point cloud without objects)."""
        return len(self.object_ids)

    def object_vertices(self, i: int) -> IntArray:
        """Return the indices of the vertices of object ``i`` (result order)."""
        if self.vertex_object is None:
            raise InvalidInputError("this scene has no objects")
        return np.flatnonzero(self.vertex_object == i).astype(np.int64)


def _csr_object(offsets: npt.ArrayLike) -> IntArray:
    off = np.asarray(offsets, dtype=np.int64)
    return np.repeat(np.arange(len(off) - 1, dtype=np.int64), np.diff(off))


def _path_edges(offsets: npt.ArrayLike) -> IntArray:
    off = np.asarray(offsets, dtype=np.int64)
    n = int(off[-1]) if off.size else 0
    starts = np.arange(max(n - 1, 0), dtype=np.int64)
    # a vertex starts an edge unless it is the last of its path
    is_last = np.zeros(n, dtype=bool)
    ends = off[1:] - 1
    is_last[ends[ends >= 0]] = True
    keep = ~is_last[:-1] if n else np.zeros(0, dtype=bool)
    a = starts[keep]
    return np.stack([a, a + 1], axis=1).astype(np.int64)


def _dense_objects(per_vertex: AnyArray) -> tuple[IntArray, AnyArray]:
    """Objects in order of first appearance and each vertex's index among them."""
    uniq, first, inverse = np.unique(per_vertex, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse].astype(np.int64), uniq[order]


def _no_index(width: int) -> IntArray:
    return np.zeros((0, width), dtype=np.int64)


def _floats(a: Any) -> FloatArray:
    return np.asarray(a, dtype=np.float64)


def _points_scene(r: Any, gtype: str) -> Scene:
    pos = _floats(r.positions)
    obj, ids = (None, np.zeros(0, dtype=np.int64))
    if getattr(r, "vertex_object_ids", None) is not None:
        obj, ids = _dense_objects(np.asarray(r.vertex_object_ids))
    return Scene(
        geometry_type=gtype,
        positions=pos,
        edges=_no_index(2),
        faces=_no_index(3),
        vertex_object=obj,
        object_ids=ids,
        attributes=dict(r.attributes),
    )


def _lines_scene(r: Any, gtype: str) -> Scene:
    ends = _floats(r.endpoints)
    m = len(ends)
    d = ends.shape[2] if ends.ndim == 3 else 0
    attrs = {k: np.asarray(v).reshape((2 * m, *np.shape(v)[2:])) for k, v in r.attributes.items()}
    return Scene(
        geometry_type=gtype,
        positions=ends.reshape(2 * m, d),
        edges=np.arange(2 * m, dtype=np.int64).reshape(m, 2),
        faces=_no_index(3),
        vertex_object=np.repeat(np.arange(m, dtype=np.int64), 2),
        object_ids=np.asarray(r.object_ids),
        attributes=attrs,
        object_attributes=dict(r.object_attributes),
    )


def _paths_scene(r: Any, gtype: str) -> Scene:
    return Scene(
        geometry_type=gtype,
        positions=_floats(r.positions),
        edges=_path_edges(r.offsets),
        faces=_no_index(3),
        vertex_object=_csr_object(r.offsets),
        object_ids=np.asarray(r.object_ids),
        attributes=dict(r.attributes),
        object_attributes=dict(r.object_attributes),
    )


def _graph_scene(r: Any, gtype: str) -> Scene:
    obj, ids = _dense_objects(np.asarray(r.vertex_object_ids))
    objects = np.asarray(r.object_ids)
    obj_attrs = dict(r.object_attributes)
    if obj_attrs and not np.array_equal(objects, ids):
        # object attributes follow ``r.object_ids``; realign them with first-appearance order
        where = {v: i for i, v in enumerate(objects.tolist())}
        take = np.array([where[v] for v in ids.tolist()], dtype=np.int64)
        obj_attrs = {k: np.asarray(v)[take] for k, v in obj_attrs.items()}
    return Scene(
        geometry_type=gtype,
        positions=_floats(r.positions),
        edges=np.asarray(r.edges, dtype=np.int64).reshape(-1, 2),
        faces=_no_index(3),
        vertex_object=obj,
        object_ids=ids,
        attributes=dict(r.attributes),
        object_attributes=obj_attrs,
        edge_attributes=dict(r.edge_attributes),
    )


def _skeleton_scene(r: Any, gtype: str) -> Scene:
    parents = np.asarray(r.parents, dtype=np.int64)
    child = np.flatnonzero(parents >= 0)
    return Scene(
        geometry_type=gtype,
        positions=_floats(r.positions),
        edges=np.stack([child, parents[child]], axis=1).astype(np.int64),
        faces=_no_index(3),
        vertex_object=_csr_object(r.offsets),
        object_ids=np.asarray(r.object_ids),
        attributes=dict(r.attributes),
        object_attributes=dict(r.object_attributes),
    )


def _mesh_scene(r: Any, gtype: str) -> Scene:
    return Scene(
        geometry_type=gtype,
        positions=_floats(r.vertices),
        edges=_no_index(2),
        faces=np.asarray(r.faces, dtype=np.int64).reshape(-1, 3),
        vertex_object=_csr_object(r.offsets),
        object_ids=np.asarray(r.object_ids),
        attributes=dict(r.attributes),
        object_attributes=dict(r.object_attributes),
        face_attributes=dict(r.face_attributes),
    )


_FLATTEN: Mapping[SceneKind, Callable[[Any, str], Scene]] = {
    SceneKind.POINTS: _points_scene,
    SceneKind.SEGMENTS: _lines_scene,
    SceneKind.PATHS: _paths_scene,
    SceneKind.GRAPH: _graph_scene,
    SceneKind.TREE: _skeleton_scene,
    SceneKind.MESH: _mesh_scene,
}
"""How each scene kind flattens (a type picks one through ``TypeSpec.scene``)."""


def scene_from_result(result: Any, geometry_type: str) -> Scene:
    """Flatten a typed read result (``Points``, ``Polylines``, ``Graph``...) into a Scene.

    Parameters
    ----------
    result
        What :meth:`zarr_vectors.Reader.read` returned for a store of ``geometry_type``.
    geometry_type
        The store's geometry type.

    Returns
    -------
    Scene
        Vertex table plus edges or faces.

    Examples
    --------
    >>> from zarr_vectors import Polylines
    >>> pl = Polylines(np.arange(10.0).reshape(5, 2), np.array([0, 2, 5]), np.array([4, 9]))
    >>> scene_from_result(pl, "polyline").edges.tolist()
    [[0, 1], [2, 3], [3, 4]]
    """
    gtype = parse_geometry_type(geometry_type)
    flatten = _FLATTEN[type_spec(gtype).scene]
    return flatten(get_geometry_type(gtype).scene_result(result), gtype)


@dataclass(frozen=True, kw_only=True)
class LoadedScene:
    """A :class:`Scene` plus where it came from."""

    scene: Scene
    """The geometry read."""
    level: int
    """Resolution level read."""
    metadata: RootMetadata
    """Root metadata of the store."""
    bbox: BoundingBox | None
    """The query box, if any."""


def load_scene(
    reader: Reader,
    *,
    level: int | None,
    bbox: BBoxLike | None,
    max_vertices: int | None,
) -> LoadedScene:
    """Read one level of an open store as a :class:`Scene`.

    Parameters
    ----------
    reader
        An open store.
    level
        Level to read; None picks the finest level whose estimated vertex count in ``bbox``
        is at most ``max_vertices`` (:func:`zarr_vectors.choose_level`).
    bbox
        ``(min, max)`` region, physical units; objects touching it are read whole.
    max_vertices
        Vertex budget for the automatic level choice (None: level 0).

    Returns
    -------
    LoadedScene
        The scene, the level read and the root metadata.
    """
    meta = reader.metadata
    box = None if bbox is None else parse_bbox(bbox, meta.spatial_dims)
    if level is None:
        level = (
            0
            if max_vertices is None
            else choose_level(reader.root, bbox=box, max_vertices=max_vertices)
        )
    if level not in reader.levels:
        raise InvalidInputError(f"level {level} is not in the store (levels {reader.levels})")
    result = reader.read(level=level, bbox=box)
    scene = scene_from_result(result, meta.geometry_type)
    return LoadedScene(scene=scene, level=level, metadata=meta, bbox=box)


def axis_labels(meta: RootMetadata) -> list[str]:
    """Return ``"name (unit)"`` per axis, units from root ``axis_units`` (else the axes).

    Examples
    --------
    >>> m = RootMetadata.create(geometry_type="point_cloud", chunk_shape=(1.0, 1.0),
    ...                         base_bin_shape=(1.0, 1.0), axis_units="micrometer")
    >>> axis_labels(m)
    ['x (micrometer)', 'y (micrometer)']
    """
    names = [a.name for a in meta.multiscales.axes]
    units = axis_units(meta)
    return [n if u is None else f"{n} ({u})" for n, u in zip(names, units, strict=True)]


def axis_units(meta: RootMetadata) -> list[str | None]:
    """Return the unit of each axis: root ``axis_units`` first, then ``multiscales`` axes.

    ``"unknown"`` (the writers' default) and empty strings count as no unit.
    """
    axes = meta.multiscales.axes
    if isinstance(meta.axis_units, tuple):
        units: list[str | None] = list(meta.axis_units)
    elif isinstance(meta.axis_units, str):
        units = [meta.axis_units] * len(axes)
    else:
        units = [a.unit for a in axes]
    return [None if u is None or u.strip() in ("", "unknown") else u for u in units]
