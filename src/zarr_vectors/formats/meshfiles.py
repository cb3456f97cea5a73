"""OBJ and STL mesh files <-> ``mesh`` stores, through trimesh (the ``formats`` extra).

A file is read as one triangle mesh and stored one connected surface per object
(:func:`~zarr_vectors.formats.trimesh_io.from_trimesh`); numeric vertex and face attributes and
vertex colours come along.  OBJ vertices keep their file order.  STL files list three vertices
per triangle: coincident ones are merged on reading (else every triangle would be a surface
of its own).  With ``convert``'s default ``keep_order`` the file's vertex and face order is
stored and export writes it back, so every face keeps its position (data indexed by face in
other tools still lines up).  Exporting writes every object of a level into one file, the
format from the extension.  OBJ normals, texture coordinates, materials, names, smoothing
groups and polygons (split into triangles by trimesh) are not carried: ``convert`` lists what
a file had (:func:`obj_extras`).
"""

from __future__ import annotations

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.formats._common import begin
from zarr_vectors.formats.ply_points import has_input_order
from zarr_vectors.formats.registry import (
    Extent,
    PathLike,
    Progress,
    Source,
    WriteOptions,
)
from zarr_vectors.formats.trimesh_io import load_trimesh, read_trimesh, write_trimesh
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types._order import ElementOrder

__all__ = ["MeshSource", "obj_extras", "open_mesh", "store_to_mesh"]

_MERGED = {".stl"}
"""Formats whose triangles list their own copies of shared vertices."""
_OBJ_EXTRAS = {
    "vn": "vertex normals (vn)",
    "vt": "texture coordinates (vt)",
    "mtllib": "material libraries (mtllib)",
    "usemtl": "materials (usemtl)",
    "o": "object names (o)",
    "g": "group names (g)",
    "s": "smoothing groups (s)",
    "l": "line elements (l)",
    "p": "point elements (p)",
}
"""OBJ statements a ``mesh`` store does not carry."""


def obj_extras(path: PathLike) -> list[str]:
    """Describe what of an OBJ file a ``mesh`` store does not carry, one line each.

    Counts the statements of :data:`_OBJ_EXTRAS` and the faces with more than three vertices
    (trimesh splits them into triangles, so face count and order change).
    """
    counts: dict[str, int] = {}
    polygons = 0
    with open(path, "rb") as f:
        for raw in f:
            words = raw.split(maxsplit=4)
            if not words:
                continue
            key = words[0].decode("latin1")
            if key in _OBJ_EXTRAS:
                counts[key] = counts.get(key, 0) + 1
            elif key == "f" and len(words) > 4:
                polygons += 1
    out = [f"{n:,} {_OBJ_EXTRAS[k]}" for k, n in counts.items()]
    if polygons:
        out.append(f"{polygons:,} polygons with more than 3 vertices (split into triangles)")
    return out


class MeshSource(Source):
    """An OBJ or STL file opened for conversion (the mesh is read here)."""

    geometry_type = GeometryTypeName.MESH

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.mesh = load_trimesh(str(self.path), merge=self.path.suffix.lower() in _MERGED)

    def extent(self) -> Extent:
        """Return the vertex count and bounding box."""
        return Extent.of(self.mesh.vertices)

    def dropped(self) -> list[str]:
        """OBJ statements other than vertices and triangles (see :func:`obj_extras`)."""
        return obj_extras(self.path) if self.path.suffix.lower() == ".obj" else []

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the mesh to a new store, one connected surface per object."""
        begin(progress, "writing store")
        return write_trimesh(
            store,
            self.mesh,
            keep_order=options.keep_order,
            **options.store(
                source_description=f"{self.path.suffix[1:].upper()} mesh: {self.path.name}"
            ),
        )


def open_mesh(path: PathLike) -> MeshSource:
    """Open an OBJ or STL file for conversion (see :class:`MeshSource`)."""
    return MeshSource(path)


def store_to_mesh(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``mesh`` store to an OBJ or STL file (all objects, one mesh).

    Parameters
    ----------
    store
        A ``mesh`` store.
    path
        Output ``.obj`` or ``.stl`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    begin(progress, "reading store")
    order = ElementOrder.INPUT if has_input_order(store, level) else ElementOrder.STORAGE
    read_trimesh(store, level=level, order=order).export(str(path))
