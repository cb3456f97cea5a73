"""Living stores: append to, edit and compact existing stores, committed at one point."""

from __future__ import annotations

from zarr_vectors.edit.append import (
    append_graph,
    append_lines,
    append_meshes,
    append_points,
    append_polylines,
    append_skeletons,
    append_store,
    append_streamlines,
)
from zarr_vectors.edit.append import (
    append_mesh as append_mesh,  # deprecated alias of append_meshes
)
from zarr_vectors.edit.append import (
    append_skeleton as append_skeleton,  # deprecated alias of append_skeletons
)
from zarr_vectors.edit.attributes import (
    AttributeKind,
    add_attribute,
    drop_attribute,
    update_object_attributes,
)
from zarr_vectors.edit.collection import Collection, open_collection
from zarr_vectors.edit.objects import compact, delete_objects
from zarr_vectors.edit.transaction import Transaction, icechunk_transaction
from zarr_vectors.errors import ReadOnlyStoreError, StoreLockedError, UnsupportedEditError

__all__ = [
    "Collection",
    "AttributeKind",
    "ReadOnlyStoreError",
    "StoreLockedError",
    "Transaction",
    "UnsupportedEditError",
    "add_attribute",
    "append_graph",
    "append_lines",
    "append_meshes",
    "append_points",
    "append_polylines",
    "append_skeletons",
    "append_store",
    "append_streamlines",
    "compact",
    "delete_objects",
    "drop_attribute",
    "icechunk_transaction",
    "open_collection",
    "update_object_attributes",
]
