"""One triangle surface <-> ``mesh`` store, vertex and face order kept (GIFTI, FreeSurfer).

Surface formats index per-vertex data files by vertex number, so a surface must come back with
its vertices (and, for an exact file, its faces) in file order.  A mesh store groups vertices
by connected surface and returns faces as a set, so :func:`write_surface` stores the file
position of every vertex and face as the ``input_index`` attribute (uint32) and
:func:`read_surface` puts them back in that order and drops it.  A store written otherwise
(no ``input_index``) is read in storage order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats.registry import WriteOptions
from zarr_vectors.spec.conventions import WindingOrder
from zarr_vectors.types.meshes import as_meshes, read_mesh, write_mesh

__all__ = ["ORDER", "Surface", "read_surface", "write_surface"]

ORDER = "input_index"
"""Vertex and face attribute holding the file position of each element."""


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
    """Write ``surface`` as a new ``mesh`` store (one object per connected part), order kept.

    Raises
    ------
    InvalidInputError
        An attribute is named ``input_index`` (reserved here), or the surface is malformed.
    """
    if ORDER in surface.attributes or ORDER in surface.face_attributes:
        raise InvalidInputError(f"attribute name {ORDER!r} is reserved for the element order")
    n, f = len(surface.vertices), len(surface.faces)
    order_dtype = np.uint32 if max(n, f) < 2**32 else np.uint64
    meshes = as_meshes(
        surface.vertices,
        np.asarray(surface.faces, dtype=np.int64),
        attributes={**surface.attributes, ORDER: np.arange(n, dtype=order_dtype)},
        face_attributes={**surface.face_attributes, ORDER: np.arange(f, dtype=order_dtype)},
    )
    return write_mesh(
        store,
        meshes,
        **options.store_kwargs,
        source_description=source_description,
        custom_metadata=dict(custom_metadata),
    )


def read_surface(store: StoreLike, *, level: int = 0) -> Surface:
    """Read one level of a ``mesh`` store as one surface, in file order when it was kept."""
    m = read_mesh(store, level=level)
    attrs, face_attrs = dict(m.attributes), dict(m.face_attributes)
    faces = np.asarray(m.faces, dtype=np.int64)
    if m.winding_order is WindingOrder.CW:
        faces = faces[:, ::-1]
    vertices = np.asarray(m.vertices)
    vkey, fkey = attrs.pop(ORDER, None), face_attrs.pop(ORDER, None)
    if vkey is not None:
        vperm = np.argsort(vkey, kind="stable")
        rank = np.empty_like(vperm)
        rank[vperm] = np.arange(len(vperm))
        vertices = vertices[vperm]
        attrs = {k: np.asarray(v)[vperm] for k, v in attrs.items()}
        faces = rank[faces]
    if fkey is not None:
        fperm = np.argsort(fkey, kind="stable")
        faces = faces[fperm]
        face_attrs = {k: np.asarray(v)[fperm] for k, v in face_attrs.items()}
    return Surface(vertices, faces, attrs, face_attrs)
