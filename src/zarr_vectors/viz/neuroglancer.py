"""Export one level of a ZVF store as Neuroglancer *precomputed* data, and the viewer state.

What each geometry type becomes (format documents: Neuroglancer repository,
``src/datasource/precomputed/{annotations,skeletons,meshes,segment_properties}.md``):

* ``point_cloud`` -> ``annotations/``: a ``POINT`` annotation collection;
* ``line``, ``polyline``, ``streamline`` -> ``annotations/``: one ``LINE`` annotation per
  segment between consecutive vertices;
* ``graph``, ``skeleton`` -> ``skeletons/``: one precomputed skeleton per object, with vertex
  attributes (``radius`` keeps its special meaning);
* ``mesh`` -> ``meshes/``: legacy single-resolution meshes, one fragment per object.

Annotation collections carry an unsharded ``by_id`` index, a multi-level spatial index
(``spatial0``, ``spatial1``...), numeric and categorical properties, and an ``object``
relationship indexed in ``by_object`` when the data has objects.  Skeletons and meshes are
segments of a segmentation layer whose id is the object id **plus one**, because Neuroglancer
treats segment 0 as background; ``segment_properties/`` labels each segment with the object id.
Neuroglancer models skeletons and meshes in nanometres: coordinates in a known unit are scaled,
and coordinates without a known unit are taken as nanometres.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.api import Reader
from zarr_vectors.core.reader import BBoxLike
from zarr_vectors.core.store import StoreLike
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import ParamEnum, SceneKind
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.viz._precomputed import (
    AnnotationKind,
    AnnotationProperty,
    annotation_properties,
    encode_legacy_mesh,
    encode_multiple,
    encode_records,
    encode_single,
    encode_skeleton,
    skeleton_attribute_type,
    spatial_index,
    unit_to_metres,
)
from zarr_vectors.viz._scene import Scene, axis_units, load_scene

__all__ = ["ExportKind", "NeuroglancerExport", "export_neuroglancer", "viewer_state"]

AnyArray = npt.NDArray[Any]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_NM = 1e-9
_MAX_STATE_SEGMENTS = 5000
_POINT_SHADER = "void main() {\n  setColor(defaultColor());\n  setPointMarkerSize(5.0);\n}\n"


class ExportKind(ParamEnum):
    """Which precomputed representation an export wrote."""

    ANNOTATIONS = "annotations"
    SKELETONS = "skeletons"
    MESHES = "meshes"


@dataclass(frozen=True, kw_only=True)
class Dimension:
    """One axis of the exported coordinate space."""

    name: str
    """Axis name (``x``, ``y``...)."""
    scale: float
    """Size of one stored coordinate unit in ``unit``."""
    unit: str
    """``"m"``, ``"s"`` or ``""`` (unitless)."""


@dataclass(frozen=True, kw_only=True)
class NeuroglancerExport:
    """What :func:`export_neuroglancer` wrote."""

    path: Path
    """The output directory."""
    kind: ExportKind
    """Annotations, skeletons or meshes."""
    source: str
    """Sub-directory of ``path`` holding the precomputed data source."""
    level: int
    """Resolution level exported."""
    geometry_type: str
    """Geometry type of the store."""
    count: int
    """Annotations, skeletons or meshes written."""
    segment_ids: tuple[int, ...]
    """Segment ids written (object id + 1), for skeletons and meshes."""
    dimensions: tuple[Dimension, ...]
    """Coordinate space of the store's coordinates."""
    lower_bound: tuple[float, ...]
    """Lower corner of the exported geometry, store coordinates."""
    upper_bound: tuple[float, ...]
    """Upper corner of the exported geometry, store coordinates."""

    @property
    def source_path(self) -> Path:
        """Directory of the data source (``path / source``)."""
        return self.path / self.source


# -- coordinate space ---------------------------------------------------------------------------


def _dimensions(meta: RootMetadata) -> tuple[Dimension, ...]:
    out = []
    for axis, unit in zip(meta.multiscales.axes, axis_units(meta), strict=True):
        parsed = unit_to_metres(unit)
        scale, base = parsed if parsed is not None else (1.0, "")
        out.append(Dimension(name=axis.name, scale=scale, unit=base))
    return tuple(out)


def _nm_factors(dims: tuple[Dimension, ...]) -> FloatArray:
    """Nanometres per stored unit on x, y, z (unitless axes count as nanometres)."""
    return np.array([d.scale / _NM if d.unit == "m" else 1.0 for d in dims[:3]])


def _bounds(positions: FloatArray, ndim: int) -> tuple[FloatArray, FloatArray]:
    if not len(positions):
        return np.zeros(ndim), np.ones(ndim)
    # whole numbers, and an upper bound strictly above every coordinate (it is exclusive)
    return np.floor(positions.min(axis=0)), np.floor(positions.max(axis=0)) + 1


def _xyz(scene: Scene) -> FloatArray:
    """Vertices as (N, 3): 2-D stores get z = 0; Neuroglancer segments are 3-D."""
    if scene.ndim > 3:
        raise InvalidInputError(
            f"Neuroglancer skeletons and meshes are 3-D; this store has {scene.ndim} dimensions"
        )
    pad = np.zeros((len(scene.positions), 3 - scene.ndim))
    return np.concatenate([scene.positions, pad], axis=1)


def _write_json(path: Path, doc: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=1, allow_nan=False))


# -- annotations --------------------------------------------------------------------------------


def _annotation_columns(scene: Scene) -> dict[str, AnyArray]:
    """Per-annotation attribute columns: points take vertex rows, segments average ends."""
    if scene.kind is SceneKind.POINTS:
        return {k: np.asarray(v) for k, v in scene.attributes.items()}
    a, b = scene.edges[:, 0], scene.edges[:, 1]
    cols: dict[str, AnyArray] = {}
    for name, values in scene.attributes.items():
        arr = np.asarray(values)
        numeric = arr.dtype.kind in "biuf"
        cols[name] = (arr[a].astype(np.float64) + arr[b]) / 2 if numeric else arr[a]
    if scene.vertex_object is not None:
        owner = scene.vertex_object[a]
        for name, values in scene.object_attributes.items():
            key = name if name not in cols else f"object_{name}"
            cols[key] = np.asarray(values)[owner]
    return cols


def _annotation_objects(scene: Scene) -> IntArray | None:
    """Object id of each annotation for the ``object`` relationship (None if not possible)."""
    if scene.vertex_object is None or scene.object_ids.dtype.kind not in "iu":
        return None
    ids = np.asarray(scene.object_ids)
    if ids.size and ids.min() < 0:
        return None
    owner = scene.vertex_object
    if scene.kind is not SceneKind.POINTS:
        owner = owner[scene.edges[:, 0]]
    return ids[owner].astype(np.int64)


def _write_id_index(root: Path, records: AnyArray, objects: IntArray | None) -> None:
    by_id = root / "by_id"
    by_id.mkdir()
    for i in range(len(records)):
        related = [] if objects is None else [objects[i : i + 1]]
        (by_id / str(i)).write_bytes(encode_single(records[i], related))


def _write_object_index(root: Path, records: AnyArray, objects: IntArray) -> None:
    folder = root / "by_object"
    folder.mkdir()
    order = np.argsort(objects, kind="stable")
    uniq, starts = np.unique(objects[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    for obj, s, e in zip(uniq.tolist(), starts.tolist(), ends.tolist(), strict=True):
        members = order[s:e]
        (folder / str(obj)).write_bytes(encode_multiple(records[members], members))


def _write_annotations(
    scene: Scene, root: Path, dims: tuple[Dimension, ...], limit: int
) -> tuple[int, FloatArray, FloatArray]:
    kind: AnnotationKind = "POINT"
    geometry = scene.positions
    if scene.kind is not SceneKind.POINTS:
        kind = "LINE"
        geometry = scene.positions[scene.edges].reshape(len(scene.edges), -1)
    lower, upper = _bounds(scene.positions, scene.ndim)
    props: list[AnnotationProperty] = annotation_properties(_annotation_columns(scene))
    objects = _annotation_objects(scene)
    records = encode_records(geometry, props)
    root.mkdir(parents=True)
    _write_id_index(root, records, objects)
    if objects is not None:
        _write_object_index(root, records, objects)
    levels = spatial_index(geometry, kind, lower, upper, limit=limit)
    spatial = []
    for n, level in enumerate(levels):
        folder = root / f"spatial{n}"
        folder.mkdir()
        for cell, members in level.cells.items():
            name = "_".join(str(c) for c in cell)
            (folder / name).write_bytes(encode_multiple(records[members], members))
        spatial.append(
            {
                "key": f"spatial{n}",
                "grid_shape": list(level.grid_shape),
                "chunk_size": list(level.chunk_size),
                "limit": limit,
            }
        )
    info = {
        "@type": "neuroglancer_annotations_v1",
        "dimensions": {d.name: [d.scale, d.unit] for d in dims},
        "lower_bound": lower.tolist(),
        "upper_bound": upper.tolist(),
        "annotation_type": kind,
        "properties": [p.to_info() for p in props],
        "relationships": [] if objects is None else [{"id": "object", "key": "by_object"}],
        "by_id": {"key": "by_id"},
        "spatial": spatial,
    }
    _write_json(root / "info", info)
    return len(records), lower, upper


# -- segments: skeletons and meshes -------------------------------------------------------------


@dataclass(frozen=True)
class _Grouped:
    """Vertices grouped by object, with each vertex's index inside its object."""

    vertex_object: IntArray
    """Object of each vertex."""
    order: IntArray
    """Vertex indices sorted by object."""
    starts: IntArray
    """(n + 1,) object ``i`` owns ``order[starts[i]:starts[i + 1]]``."""
    local: IntArray
    """Index of each vertex among its object's vertices."""

    def vertices(self, i: int) -> IntArray:
        return self.order[self.starts[i] : self.starts[i + 1]]


def _group(scene: Scene) -> _Grouped:
    obj = scene.vertex_object
    if obj is None:
        raise InvalidInputError("skeleton and mesh export needs objects")
    order = np.argsort(obj, kind="stable").astype(np.int64)
    starts = np.searchsorted(obj[order], np.arange(scene.n_objects + 1)).astype(np.int64)
    local = np.empty(len(obj), dtype=np.int64)
    local[order] = np.arange(len(obj)) - np.repeat(starts[:-1], np.diff(starts))
    return _Grouped(obj, order, starts, local)


def _by_owner(index: IntArray, owner: IntArray, n: int) -> tuple[IntArray, IntArray]:
    order = np.argsort(owner, kind="stable")
    starts = np.searchsorted(owner[order], np.arange(n + 1))
    return index[order], starts.astype(np.int64)


def _segment_ids(scene: Scene) -> list[int]:
    ids = np.asarray(scene.object_ids)
    if ids.dtype.kind not in "iu" or (ids.size and ids.min() < 0):
        raise InvalidInputError("Neuroglancer segment ids need non-negative integer object ids")
    out = [int(v) + 1 for v in ids.tolist()]
    if out and max(out) > np.iinfo(np.uint64).max:
        raise InvalidInputError("object id too large for a Neuroglancer segment id (id + 1)")
    return out


def _skeleton_attributes(scene: Scene) -> list[tuple[str, str, AnyArray]]:
    out = []
    for name, values in scene.attributes.items():
        arr = np.asarray(values)
        data_type = "float32" if name == "radius" else skeleton_attribute_type(arr)
        if data_type is not None:
            out.append((name, data_type, arr.reshape(len(arr), -1)))
    return out


def _write_skeletons(scene: Scene, root: Path, dims: tuple[Dimension, ...]) -> list[int]:
    xyz = _xyz(scene)
    grouped = _group(scene)
    owner = grouped.vertex_object[scene.edges[:, 0]]
    edges, edge_starts = _by_owner(scene.edges, owner, scene.n_objects)
    attrs = _skeleton_attributes(scene)
    root.mkdir(parents=True)
    seg_ids = _segment_ids(scene)
    for i, seg in enumerate(seg_ids):
        verts = grouped.vertices(i)
        local_edges = grouped.local[edges[edge_starts[i] : edge_starts[i + 1]]]
        values = [(t, a[verts]) for _, t, a in attrs]
        (root / str(seg)).write_bytes(encode_skeleton(xyz[verts], local_edges, values))
    s = _nm_factors(dims)
    s = np.concatenate([s, np.ones(3 - len(s))])
    info = {
        "@type": "neuroglancer_skeletons",
        "transform": [s[0], 0, 0, 0, 0, s[1], 0, 0, 0, 0, s[2], 0],
        "vertex_attributes": [
            {"id": name, "data_type": t, "num_components": int(a.shape[1])} for name, t, a in attrs
        ],
        "segment_properties": "segment_properties",
    }
    _write_json(root / "info", info)
    _write_segment_properties(scene, root / "segment_properties", seg_ids)
    return seg_ids


def _write_meshes(scene: Scene, root: Path, dims: tuple[Dimension, ...]) -> list[int]:
    s = _nm_factors(dims)
    nm = _xyz(scene) * np.concatenate([s, np.ones(3 - len(s))])
    grouped = _group(scene)
    owner = grouped.vertex_object[scene.faces[:, 0]]
    faces, face_starts = _by_owner(scene.faces, owner, scene.n_objects)
    root.mkdir(parents=True)
    written = []
    seg_ids = _segment_ids(scene)
    for i, seg in enumerate(seg_ids):
        if face_starts[i] == face_starts[i + 1]:
            continue  # nothing to draw for an object without triangles
        verts = grouped.vertices(i)
        local_faces = grouped.local[faces[face_starts[i] : face_starts[i + 1]]]
        (root / f"{seg}.frag").write_bytes(encode_legacy_mesh(nm[verts], local_faces))
        _write_json(root / f"{seg}:0", {"fragments": [f"{seg}.frag"]})
        written.append(seg)
    _write_json(
        root / "info",
        {"@type": "neuroglancer_legacy_mesh", "segment_properties": "segment_properties"},
    )
    _write_segment_properties(scene, root / "segment_properties", seg_ids)
    return written


def _segment_property_columns(scene: Scene) -> list[dict[str, Any]]:
    props: list[dict[str, Any]] = [
        {"id": "label", "type": "label", "values": [str(v) for v in scene.object_ids.tolist()]}
    ]
    for name, values in scene.object_attributes.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            continue
        if arr.dtype.kind in "OUSaT":
            props.append({"id": name, "type": "string", "values": arr.astype(str).tolist()})
        elif arr.dtype.kind in "biuf" and np.isfinite(arr.astype(np.float64)).all():
            data_type = "float32" if arr.dtype.kind == "f" else skeleton_attribute_type(arr)
            props.append(
                {"id": name, "type": "number", "data_type": data_type, "values": arr.tolist()}
            )
    return props


def _write_segment_properties(scene: Scene, folder: Path, seg_ids: list[int]) -> None:
    folder.mkdir()
    doc = {
        "@type": "neuroglancer_segment_properties",
        "inline": {
            "ids": [str(v) for v in seg_ids],
            "properties": _segment_property_columns(scene),
        },
    }
    _write_json(folder / "info", doc)


# -- public -------------------------------------------------------------------------------------


def export_neuroglancer(
    store: StoreLike | Reader,
    out_dir: str | os.PathLike[str],
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    limit: int = 10_000,
) -> NeuroglancerExport:
    """Write one level of a store as a Neuroglancer precomputed data source.

    Parameters
    ----------
    store
        Path, URL, zarr store or open :class:`~zarr_vectors.Reader`.
    out_dir
        Directory to write; created if missing and must not already hold the data source.
    level
        Resolution level to export.
    bbox
        ``(min, max)`` region, physical units: objects touching it are exported whole.
    limit
        Annotations per spatial-index cell (annotation exports only).

    Returns
    -------
    NeuroglancerExport
        The kind, sub-directory, counts, segment ids and coordinate space written.

    Raises
    ------
    InvalidInputError
        A level not in the store, a bad ``bbox``, or skeletons/meshes of more than 3-D.
    FileExistsError
        ``out_dir`` already holds the sub-directory to write.

    Examples
    --------
    >>> import tempfile, numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
    ...                     chunk_shape=(10, 10, 10), axis_units="micrometer")
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = export_neuroglancer(store, d)
    ...     sorted(p.name for p in out.source_path.iterdir())
    ['by_id', 'info', 'spatial0']
    >>> out.kind.value, out.count, out.dimensions[0].scale
    ('annotations', 2, 1e-06)
    """
    reader = store if isinstance(store, Reader) else Reader(store)
    loaded = load_scene(reader, level=level, bbox=bbox, max_vertices=None)
    scene, meta = loaded.scene, loaded.metadata
    dims = _dimensions(meta)
    out = Path(out_dir)
    segment_ids: list[int] = []
    if scene.kind in (SceneKind.GRAPH, SceneKind.TREE):
        kind = ExportKind.SKELETONS
        segment_ids = _write_skeletons(scene, out / kind.value, dims)
        count = len(segment_ids)
    elif scene.kind is SceneKind.MESH:
        kind = ExportKind.MESHES
        segment_ids = _write_meshes(scene, out / kind.value, dims)
        count = len(segment_ids)
    else:
        kind = ExportKind.ANNOTATIONS
        count, _, _ = _write_annotations(scene, out / kind.value, dims, limit)
    lower, upper = _bounds(scene.positions, scene.ndim)
    return NeuroglancerExport(
        path=out,
        kind=kind,
        source=kind.value,
        level=loaded.level,
        geometry_type=meta.geometry_type,
        count=count,
        segment_ids=tuple(segment_ids),
        dimensions=dims,
        lower_bound=tuple(lower.tolist()),
        upper_bound=tuple(upper.tolist()),
    )


def _state_dimension(d: Dimension, segments: bool) -> list[float | str]:
    # skeletons and meshes live in nanometres; unitless coordinates were exported as such
    return [_NM, "m"] if segments and d.unit == "" else [d.scale, d.unit]


def viewer_state(export: NeuroglancerExport, base_url: str) -> dict[str, Any]:
    """Return a Neuroglancer state showing an export served at ``base_url``.

    Parameters
    ----------
    export
        What :func:`export_neuroglancer` returned.
    base_url
        URL at which ``export.path`` is served, e.g. ``http://127.0.0.1:8000``.

    Returns
    -------
    dict
        JSON-ready state: coordinate space, position at the data's centre, a zoom that fits
        it, and one layer (annotation or segmentation with every segment visible, up to 5000).

    Examples
    --------
    >>> exp = NeuroglancerExport(path=Path("."), kind=ExportKind.MESHES, source="meshes",
    ...     level=0, geometry_type="mesh", count=1, segment_ids=(1,),
    ...     dimensions=(Dimension(name="x", scale=1e-9, unit="m"),) * 3,
    ...     lower_bound=(0.0, 0.0, 0.0), upper_bound=(10.0, 10.0, 10.0))
    >>> state = viewer_state(exp, "http://127.0.0.1:8000")
    >>> state["layers"][0]["source"], state["layers"][0]["segments"]
    ('precomputed://http://127.0.0.1:8000/meshes', ['1'])
    """
    url = f"precomputed://{base_url.rstrip('/')}/{export.source}"
    layer: dict[str, Any] = {"type": "annotation", "source": url, "name": export.source}
    if export.kind is ExportKind.ANNOTATIONS:
        layer["annotationColor"] = "#ffcc00"
        layer["shader"] = _POINT_SHADER
    else:
        layer["type"] = "segmentation"
        layer["segments"] = [str(s) for s in export.segment_ids[:_MAX_STATE_SEGMENTS]]
    names = [d.name for d in export.dimensions]
    if len(names) == 2:  # the skeleton/mesh space of a 2-D store is still x, y, z
        names = [*names, "z"] if export.kind is not ExportKind.ANNOTATIONS else names
    segments = export.kind is not ExportKind.ANNOTATIONS
    dims = {d.name: _state_dimension(d, segments) for d in export.dimensions}
    if "z" in names and "z" not in dims:
        dims["z"] = list(dims[names[0]])
    lo = np.asarray(export.lower_bound, dtype=np.float64)
    hi = np.asarray(export.upper_bound, dtype=np.float64)
    centre = ((lo + hi) / 2).tolist() + [0.0] * (len(names) - len(lo))
    extent = float(np.max(hi - lo)) if len(lo) else 1.0
    return {
        "dimensions": dims,
        "position": centre,
        "crossSectionScale": max(extent / 500.0, 1e-6),
        "projectionScale": extent * 1.6,
        "layers": [layer],
        "selectedLayer": {"layer": export.source},
        "layout": "3d" if len(names) >= 3 else "xy",
    }
