"""Geometry types: each converts user data to flat parts and builds typed results.

The plug-in interface: a new type subclasses :class:`GeometryType`, gives it a
:class:`~zarr_vectors.spec.typespec.TypeSpec` and registers it with
:func:`register_geometry_type` (or through the ``zarr_vectors.geometry_types`` entry-point
group, loaded on the first lookup of its name).
"""

from __future__ import annotations

from zarr_vectors.spec.typespec import TypeSpec, type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    Query,
    get_geometry_type,
    register_geometry_type,
)

__all__ = [
    "Batch",
    "GeometryType",
    "Query",
    "TypeSpec",
    "get_geometry_type",
    "register_geometry_type",
    "type_spec",
]
