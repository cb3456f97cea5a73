"""OBJ and STL mesh files <-> ``mesh`` stores, through trimesh (the ``formats`` extra).

A file is read as one triangle mesh and stored one connected surface per object
(:func:`~zarr_vectors.formats.trimesh_io.from_trimesh`); numeric vertex and face attributes and
vertex colours come along.  OBJ vertices keep their file order.  STL files list three vertices
per triangle: coincident ones are merged on reading (else every triangle would be a surface
of its own).  With ``convert``'s default ``keep_order`` the file's vertex and face order is
stored and export writes it back, so every face keeps its position (data indexed by face in
other tools still lines up).  Exporting writes every object of a level into one file, the
format from the extension.
"""

from __future__ import annotations

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.formats.ply_points import has_input_order
from zarr_vectors.formats.registry import (
    Extent,
    NullProgress,
    PathLike,
    Progress,
    Source,
    WriteOptions,
)
from zarr_vectors.formats.trimesh_io import load_trimesh, read_trimesh, write_trimesh
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types._order import ElementOrder

__all__ = ["MeshSource", "open_mesh", "store_to_mesh"]

_MERGED = {".stl"}
"""Formats whose triangles list their own copies of shared vertices."""


class MeshSource(Source):
    """An OBJ or STL file opened for conversion (the mesh is read here)."""

    geometry_type = GeometryTypeName.MESH

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.mesh = load_trimesh(str(self.path), merge=self.path.suffix.lower() in _MERGED)

    def extent(self) -> Extent:
        """Return the vertex count and bounding box."""
        return Extent.of(self.mesh.vertices)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the mesh to a new store, one connected surface per object."""
        (progress or NullProgress()).start("writing store", None)
        return write_trimesh(
            store,
            self.mesh,
            keep_order=options.keep_order,
            **options.store_kwargs,
            source_description=f"{self.path.suffix[1:].upper()} mesh: {self.path.name}",
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
    (progress or NullProgress()).start("reading store", None)
    order = ElementOrder.INPUT if has_input_order(store, level) else ElementOrder.STORAGE
    read_trimesh(store, level=level, order=order).export(str(path))
