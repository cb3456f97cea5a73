"""Living stores: append to, edit and compact existing stores, committed at one point."""

from __future__ import annotations

from zarr_vectors.edit.append import (
    append_graph,
    append_lines,
    append_mesh,
    append_points,
    append_polylines,
    append_skeleton,
    append_streamlines,
)
from zarr_vectors.edit.errors import ReadOnlyStoreError, StoreLockedError, UnsupportedEditError

__all__ = [
    "ReadOnlyStoreError",
    "StoreLockedError",
    "UnsupportedEditError",
    "append_graph",
    "append_lines",
    "append_mesh",
    "append_points",
    "append_polylines",
    "append_skeleton",
    "append_streamlines",
]
