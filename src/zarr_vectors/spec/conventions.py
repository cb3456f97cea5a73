"""Enumerations for every string-valued option of the format and the library (FORMAT.md §3–§10).

Public functions accept either the enum or its string value; :meth:`ParamEnum.parse` converts once,
at the API boundary, and lists the valid values when the input is wrong.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from zarr_vectors.errors import InvalidInputError, UnknownGeometryTypeError

__all__ = [
    "Aggregation",
    "ArrayKind",
    "Compression",
    "Encoding",
    "FramePolicy",
    "GeometryTypeName",
    "MergeRule",
    "ParamEnum",
    "SceneKind",
    "Topology",
    "Severity",
    "SparsityStrategy",
    "WindingOrder",
]


class ParamEnum(StrEnum):
    """String enum whose :meth:`parse` gives a friendly error listing valid values."""

    @classmethod
    def parse(cls, value: str | Self, *, field: str | None = None) -> Self:
        """Convert ``value`` to a member, raising ``InvalidInputError`` naming the valid values.

        Examples
        --------
        >>> Encoding.parse("raw")
        <Encoding.RAW: 'raw'>
        """
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(repr(m.value) for m in cls)
            name = field or cls.__name__
            raise InvalidInputError(f"{name}: {value!r} is not one of {valid}") from None


class GeometryTypeName(ParamEnum):
    """The seven built-in geometry type names (``geometry_type`` root key).

    The set of names a store may carry is open: every fact about a type, built-in or
    registered by a plug-in, is its :class:`~zarr_vectors.spec.typespec.TypeSpec`.
    """

    POINT_CLOUD = "point_cloud"
    LINE = "line"
    POLYLINE = "polyline"
    STREAMLINE = "streamline"
    GRAPH = "graph"
    SKELETON = "skeleton"
    MESH = "mesh"

    @classmethod
    def parse(cls, value: str | Self, *, field: str | None = None) -> Self:
        """Convert ``value`` to a built-in name, raising ``UnknownGeometryTypeError`` if unknown.

        Registered plug-in names are not members: parse those with
        :func:`~zarr_vectors.spec.typespec.parse_geometry_type`.
        """
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(repr(m.value) for m in cls)
            raise UnknownGeometryTypeError(
                f"{field or 'geometry_type'}: {value!r} is not one of {valid}"
            ) from None


class ArrayKind(StrEnum):
    """Kinds of array inside a level group (``zv_array`` attribute, FORMAT.md §6)."""

    VERTICES = "vertices"
    VERTEX_FRAGMENTS = "vertex_fragments"
    ATTRIBUTE = "attribute"
    LINKS = "links"
    LINK_ATTRIBUTE = "link_attribute"
    CROSS_CHUNK_LINKS = "cross_chunk_links"
    CROSS_CHUNK_LINK_ATTRIBUTE = "cross_chunk_link_attribute"
    VERTEX_COUNTS = "vertex_counts"
    OBJECT_OFFSETS = "object_offsets"
    OBJECT_MANIFEST = "object_manifest"
    OBJECT_ATTRIBUTE = "object_attribute"
    GROUP_OFFSETS = "group_offsets"
    GROUP_MEMBERS = "group_members"
    GROUP_ATTRIBUTE = "group_attribute"
    STATISTICS = "statistics"
    VALUE_SET = "value_set"


class Compression(ParamEnum):
    """Compressor presets of the writers' ``compressor=`` (besides a codec or None)."""

    ZSTD = "zstd"
    """zstd level 3 on every array, one frame per chunk."""
    LZ4 = "lz4"
    """Blosc-LZ4 with byte shuffle in fixed blocks on payload arrays and the object index
    (the default)."""
    NONE = "none"
    """No compression on any array (as ``compressor=None``): the largest stores, the fastest
    local reads (payload files are read straight into the result)."""


class Encoding(ParamEnum):
    """Encoding of the rows inside a per-chunk payload."""

    RAW = "raw"
    DRACO = "draco"


class Severity(ParamEnum):
    """Severity of a validation finding."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class SparsityStrategy(ParamEnum):
    """How coarse levels choose which objects to keep (FORMAT.md §10)."""

    SPATIAL_COVERAGE = "spatial_coverage"
    LENGTH = "length"
    ATTRIBUTE = "attribute"
    RANDOM = "random"


class Aggregation(ParamEnum):
    """How vertex attributes merge into a metavertex."""

    MEAN = "mean"
    MODE = "mode"
    MIN = "min"
    MAX = "max"
    FIRST = "first"
    SUM = "sum"


class WindingOrder(ParamEnum):
    """Triangle winding order of a mesh store."""

    CCW = "ccw"
    CW = "cw"


class MergeRule(ParamEnum):
    """Which vertices of one coarse bin become one metavertex (FORMAT.md §10)."""

    BIN = "bin"
    """All vertices of the bin (per object when vertices have objects)."""
    RUN = "run"
    """Consecutive vertices of one object in the bin (paths)."""
    TREE = "tree"
    """Vertices of the bin connected by edges inside the bin (trees)."""


class FramePolicy(ParamEnum):
    """Default seekable-frame size of a type's zstd payloads (writers' ``frame_bytes="auto"``)."""

    WHOLE_CHUNK = "whole_chunk"
    """One frame per chunk (box queries read whole chunks anyway)."""
    OBJECT = "object"
    """Small frames, so reading one object decodes a few frames per chunk."""
    PATH = "path"
    """Smaller frames still, for paths: a box read returns every touching path whole, and
    each path's run of rows in a chunk is only tens of vertices."""
    TREE = "tree"
    """Larger frames for types read whole object by object (trees)."""


class SceneKind(ParamEnum):
    """How a typed read result flattens into a drawable scene (viz)."""

    POINTS = "points"
    """Vertices only."""
    SEGMENTS = "segments"
    """Two-vertex objects (``Lines``)."""
    PATHS = "paths"
    """Consecutive vertices of an object joined (``Polylines``)."""
    GRAPH = "graph"
    """Vertices plus an edge list, vertices drawn as nodes (``Graph``)."""
    TREE = "tree"
    """Child→parent edges (``Skeletons``)."""
    MESH = "mesh"
    """Triangles (``Meshes``)."""


class Topology(ParamEnum):
    """What the connectivity of a type's objects must satisfy (validation, FORMAT.md §8)."""

    NONE = "none"
    """No connectivity (points)."""
    PATHS = "paths"
    """Consecutive rows of an object are joined; chunk crossings carry join records."""
    GRAPH = "graph"
    """Links form a simple graph (no self loops at level 0)."""
    FOREST = "forest"
    """Links form one tree per object."""
    SURFACE = "surface"
    """Links are triangles inside one object."""
