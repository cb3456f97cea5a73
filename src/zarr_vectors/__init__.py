"""zarr-vectors: chunked, multiscale, cloud-native vector geometry on Zarr (ZVF 1.0)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

from zarr_vectors.api import Reader, open
from zarr_vectors.core.columns import Column
from zarr_vectors.core.multiscale import (
    add_resolution_level,
    remove_resolution_level,
    write_multiscale_metadata,
)
from zarr_vectors.core.options import FrameBytes, StoreKwargs, StoreOptions
from zarr_vectors.core.store import create_store, list_resolution_levels, open_store
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.edit import (
    Collection,
    ReadOnlyStoreError,
    StoreLockedError,
    UnsupportedEditError,
    add_attribute,
    append_graph,
    append_lines,
    append_meshes,
    append_points,
    append_polylines,
    append_skeletons,
    append_streamlines,
    compact,
    delete_objects,
    drop_attribute,
    icechunk_transaction,
    open_collection,
    update_object_attributes,
)
from zarr_vectors.edit import (
    append_mesh as append_mesh,  # deprecated alias of append_meshes
)
from zarr_vectors.edit import (
    append_skeleton as append_skeleton,  # deprecated alias of append_skeletons
)
from zarr_vectors.errors import (
    CorruptPayloadError,
    GeometryError,
    InvalidInputError,
    MetadataValidationError,
    MissingDependencyError,
    OutOfBoundsError,
    StoreExistsError,
    StoreNotFoundError,
    UpstreamStoreError,
    ZarrVectorsError,
    ZVDeprecationWarning,
)
from zarr_vectors.migrate.run import MigrationReport, migrate
from zarr_vectors.multiscale import PyramidLevel, build_pyramid, choose_level
from zarr_vectors.query.api import (
    LevelResult,
    count,
    explain,
    iter_levels,
    to_dask,
    to_dask_objects,
)
from zarr_vectors.query.count import CountUnit
from zarr_vectors.query.explain import QueryPlan
from zarr_vectors.query.shapes import Sphere
from zarr_vectors.rechunk import rechunk
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.metadata import BoundingBox, RootMetadata
from zarr_vectors.streaming import Writer, open_writer
from zarr_vectors.types._order import ElementOrder
from zarr_vectors.types.graphs import Graph, read_graph, write_graph
from zarr_vectors.types.lines import Lines, read_lines, write_lines
from zarr_vectors.types.meshes import Mesh, Meshes, read_meshes, write_meshes
from zarr_vectors.types.meshes import read_mesh as read_mesh  # deprecated alias
from zarr_vectors.types.meshes import write_mesh as write_mesh  # deprecated alias
from zarr_vectors.types.points import Points, read_points, write_points
from zarr_vectors.types.polylines import (
    Polylines,
    read_polylines,
    read_streamlines,
    write_polylines,
    write_streamlines,
)
from zarr_vectors.types.skeletons import Skeleton, Skeletons, read_skeletons, write_skeletons
from zarr_vectors.types.skeletons import read_skeleton as read_skeleton  # deprecated alias
from zarr_vectors.types.skeletons import write_skeleton as write_skeleton  # deprecated alias
from zarr_vectors.validate import Finding, ValidationReport, validate

try:
    __version__ = _distribution_version("zarr-vectors")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "BoundingBox",
    "Column",
    "CountUnit",
    "CorruptPayloadError",
    "ElementOrder",
    "Finding",
    "GeometryError",
    "GeometryTypeName",
    "Graph",
    "InvalidInputError",
    "LevelResult",
    "Lines",
    "Mesh",
    "Meshes",
    "MetadataValidationError",
    "MigrationReport",
    "MissingDependencyError",
    "OutOfBoundsError",
    "Points",
    "Polylines",
    "PyramidLevel",
    "QueryPlan",
    "Reader",
    "RootMetadata",
    "Skeleton",
    "Skeletons",
    "Sphere",
    "StoreExistsError",
    "StoreKwargs",
    "StoreOptions",
    "StoreNotFoundError",
    "UpstreamStoreError",
    "WriteSummary",
    "ValidationReport",
    "ZVDeprecationWarning",
    "Writer",
    "FrameBytes",
    "ZarrVectorsError",
    "__version__",
    "add_resolution_level",
    "build_pyramid",
    "choose_level",
    "count",
    "create_store",
    "explain",
    "iter_levels",
    "list_resolution_levels",
    "migrate",
    "open",
    "open_store",
    "open_writer",
    "read_lines",
    "write_skeletons",
    "write_graph",
    "read_skeletons",
    "read_graph",
    "read_meshes",
    "read_points",
    "read_polylines",
    "read_streamlines",
    "rechunk",
    "to_dask",
    "to_dask_objects",
    "remove_resolution_level",
    "validate",
    "write_lines",
    "write_meshes",
    "write_multiscale_metadata",
    "write_points",
    "write_polylines",
    "write_streamlines",
    "ReadOnlyStoreError",
    "StoreLockedError",
    "UnsupportedEditError",
    "add_attribute",
    "append_graph",
    "append_lines",
    "append_meshes",
    "append_points",
    "append_polylines",
    "append_skeletons",
    "append_streamlines",
    "compact",
    "delete_objects",
    "drop_attribute",
    "update_object_attributes",
    "open_collection",
    "icechunk_transaction",
    "Collection",
]
