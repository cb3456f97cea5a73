"""One triangle surface <-> ``mesh`` store, vertex and face order kept (GIFTI, FreeSurfer).

Surface formats index per-vertex data files by vertex number, so a surface must come back with
its vertices (and, for an exact file, its faces) in file order.  A mesh store groups vertices
by connected surface and returns faces as a set, so :func:`write_surface` keeps the input
order as every writer does (``keep_order``: the reserved ``_input_index`` attribute,
docs/spec.md §8.8) and :func:`read_surface` reads the store in input order.  A store written
without it (``--no-keep-order``) is read in storage order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.formats._common import begin
from zarr_vectors.formats.registry import Extent, Progress, Source, WriteOptions, export_order
from zarr_vectors.spec.conventions import GeometryTypeName, WindingOrder
from zarr_vectors.types.meshes import read_meshes, write_meshes

__all__ = ["Surface", "SurfaceSource", "read_surface", "write_surface"]


@dataclass(frozen=True)
class Surface:
    """One triangle surface in file order."""

    vertices: npt.NDArray[np.floating]
    """(N, 3) vertex coordinates."""
    faces: npt.NDArray[np.integer[Any]]
    """(F, 3) vertex indices, counter-clockwise."""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """Per-vertex values by name, aligned with ``vertices`` (arrays, or categorical columns
    on writing)."""
    face_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-face values by name, aligned with ``faces``."""


def write_surface(
    store: StoreLike,
    surface: Surface,
    options: WriteOptions,
    *,
    source_description: str,
    custom_metadata: Mapping[str, Any],
) -> WriteSummary:
    """Write ``surface`` as a new ``mesh`` store (one object per connected part).

    The file order of vertices and faces is kept unless ``options.keep_order`` is False.

    Raises
    ------
    InvalidInputError
        An attribute is named ``_input_index`` (reserved), or the surface is malformed.
    """
    return write_meshes(
        store,
        surface.vertices,
        np.asarray(surface.faces, dtype=np.int64),
        attributes=dict(surface.attributes),
        face_attributes=dict(surface.face_attributes),
        keep_order=options.keep_order,
        **options.store(
            source_description=source_description, custom_metadata=dict(custom_metadata)
        ),
    )


class SurfaceSource(Source):
    """A triangle surface file opened for conversion to a ``mesh`` store.

    Subclasses set :attr:`label` and :attr:`key` and fill :attr:`vertices`, :attr:`faces`,
    :attr:`attributes` and :attr:`header` in ``__init__``.
    """

    geometry_type = GeometryTypeName.MESH
    label: ClassVar[str]
    """Kind of file, named in the store's ``source_description``."""
    key: ClassVar[str]
    """``custom_metadata`` key the :attr:`header` is stored under."""
    vertices: npt.NDArray[Any]
    """(N, 3) vertex coordinates, in file order."""
    faces: npt.NDArray[Any]
    """(F, 3) vertex indices, in file order."""
    attributes: dict[str, Any]
    """Per-vertex values by name (arrays or categorical columns)."""
    header: dict[str, Any]
    """What the store keeps of the file to write it back."""

    def extent(self) -> Extent:
        """Return the vertex count and bounding box."""
        return Extent.of(self.vertices)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the surface (one object per connected part), its vertex data as attributes."""
        begin(progress, "writing store")
        return write_surface(
            store,
            Surface(self.vertices, self.faces, self.attributes),
            options,
            source_description=f"{self.label}: {self.path.name}",
            custom_metadata={self.key: self.header},
        )


def read_surface(store: StoreLike, *, level: int = 0) -> Surface:
    """Read one level of a ``mesh`` store as one surface, in file order when it was kept."""
    m = read_meshes(store, level=level, order=export_order(store, level))
    faces = np.asarray(m.faces, dtype=np.int64)
    if m.winding_order is WindingOrder.CW:
        faces = faces[:, ::-1]
    return Surface(np.asarray(m.vertices), faces, dict(m.attributes), dict(m.face_attributes))
