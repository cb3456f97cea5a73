"""Names and shapes of every node in a ZVF store, kept as data (FORMAT.md §5–§7).

The table :data:`ARRAY_SPECS` is the single source for writers, readers, the validator and the
docs: which arrays a level may hold, whether they are per-chunk (one variable-length payload per
spatial chunk) or dense, their dtype and row width, and which geometry types use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import ArrayKind
from zarr_vectors.spec.typespec import TypeSpec, type_spec

__all__ = [
    "MAX_NAME_BYTES",
    "check_name_length",
    "ARRAY_SPECS",
    "ATTRIBUTES",
    "CROSS_CHUNK_LINKS",
    "CROSS_CHUNK_LINK_ATTRIBUTES",
    "DENSE_CHUNK_ROWS",
    "GROUPINGS",
    "GROUPINGS_ATTRIBUTES",
    "GROUP_MEMBERS",
    "GROUP_OFFSETS",
    "INPUT_INDEX",
    "LINKS",
    "LINK_ATTRIBUTES",
    "OBJECT_ATTRIBUTES",
    "OBJECT_INDEX",
    "OBJECT_MANIFEST",
    "OBJECT_OFFSETS",
    "VERTEX_COUNTS",
    "VERTEX_FRAGMENTS",
    "VERTICES",
    "STATISTICS",
    "VALUE_SETS",
    "SPEC_BY_KIND",
    "ArraySpec",
    "Holders",
    "array_attributes",
    "FRAGMENT_WIDTH",
    "attribute_path",
    "level_path",
]

VERTICES = "vertices"
VERTEX_FRAGMENTS = "vertex_fragments"
ATTRIBUTES = "attributes"
LINKS = "links"
LINK_ATTRIBUTES = "link_attributes"
CROSS_CHUNK_LINKS = "cross_chunk_links"
CROSS_CHUNK_LINK_ATTRIBUTES = "cross_chunk_link_attributes"
VERTEX_COUNTS = "vertex_counts"
OBJECT_INDEX = "object_index"
OBJECT_OFFSETS = "object_index/offsets"
OBJECT_MANIFEST = "object_index/manifest"
OBJECT_ATTRIBUTES = "object_attributes"
GROUPINGS = "groupings"
GROUP_OFFSETS = "groupings/offsets"
GROUP_MEMBERS = "groupings/members"
GROUPINGS_ATTRIBUTES = "groupings_attributes"
STATISTICS = "statistics"
VALUE_SETS = "value_sets"
INPUT_INDEX = "_input_index"
"""Reserved attribute name (vertices, links, cross-chunk links): each element's position in
the writer's input (docs/spec.md §8.8)."""

FRAGMENT_WIDTH = 4
"""Columns of a ``vertex_fragments`` row: ``[bin_flat, object_id, start, count]``."""

DENSE_CHUNK_ROWS = 16384
"""Rows per Zarr chunk of dense arrays: small enough that fetching one object's index entry
decodes little, large enough that a full read is a few chunk reads."""


class Holders(Enum):
    """Which geometry types may hold (or must hold) an array, as a test on their spec."""

    NONE = "none"
    ALL = "all"
    OBJECTS = "objects"
    """Types whose every vertex belongs to an object."""
    LINKED = "linked"
    """Types with a ``links`` array."""
    CROSSING = "crossing"
    """Types with cross-chunk link records."""

    def test(self, spec: TypeSpec) -> bool:
        """Whether a type with ``spec`` is one of these holders."""
        if self is Holders.NONE or self is Holders.ALL:
            return self is Holders.ALL
        if self is Holders.OBJECTS:
            return spec.has_objects
        if self is Holders.LINKED:
            return spec.linked
        return spec.cross_chunk_endpoints > 0


_ALL, _OBJECTS, _LINKED, _CROSSING = Holders.ALL, Holders.OBJECTS, Holders.LINKED, Holders.CROSSING


@dataclass(frozen=True)
class ArraySpec:
    """One row of the array table."""

    kind: ArrayKind
    """Value of the ``zv_array`` attribute."""
    path: str
    """Path inside the level group; ``{name}`` stands for a user-chosen identifier."""
    per_chunk: bool
    """True for per-chunk payload arrays, False for dense numeric arrays."""
    dtype: str | None
    """Fixed little-endian dtype, or None when any numeric/bool dtype is allowed."""
    width: str
    """Row width: a number, ``"D"`` (spatial dims), ``"L(D+1)"`` or ``"K"`` (any)."""
    types: Holders
    """Geometry types that may hold this array."""
    required: Holders
    """Geometry types for which the array must exist in every level."""

    def allows(self, geometry_type: str) -> bool:
        """Whether stores of ``geometry_type`` may hold this array."""
        return self.types.test(type_spec(geometry_type))

    def requires(self, geometry_type: str) -> bool:
        """Whether every level of a ``geometry_type`` store must hold this array."""
        return self.required.test(type_spec(geometry_type))


ARRAY_SPECS: tuple[ArraySpec, ...] = (
    ArraySpec(ArrayKind.VERTICES, VERTICES, True, None, "D", _ALL, _ALL),
    ArraySpec(ArrayKind.VERTEX_FRAGMENTS, VERTEX_FRAGMENTS, True, "<i8", "4", _ALL, _ALL),
    ArraySpec(ArrayKind.ATTRIBUTE, ATTRIBUTES + "/{name}", True, None, "K", _ALL, Holders.NONE),
    ArraySpec(ArrayKind.LINKS, LINKS, True, "<i4", "arity", _LINKED, Holders.NONE),
    ArraySpec(
        ArrayKind.LINK_ATTRIBUTE,
        LINK_ATTRIBUTES + "/{name}",
        True,
        None,
        "K",
        _LINKED,
        Holders.NONE,
    ),
    ArraySpec(
        ArrayKind.CROSS_CHUNK_LINKS,
        CROSS_CHUNK_LINKS,
        True,
        "<i8",
        "L(D+1)",
        _CROSSING,
        Holders.NONE,
    ),
    ArraySpec(
        ArrayKind.CROSS_CHUNK_LINK_ATTRIBUTE,
        CROSS_CHUNK_LINK_ATTRIBUTES + "/{name}",
        True,
        None,
        "K",
        _LINKED,
        Holders.NONE,
    ),
    ArraySpec(ArrayKind.VERTEX_COUNTS, VERTEX_COUNTS, False, "<i8", "grid", _ALL, _ALL),
    ArraySpec(ArrayKind.OBJECT_OFFSETS, OBJECT_OFFSETS, False, "<i8", "1", _ALL, _OBJECTS),
    ArraySpec(ArrayKind.OBJECT_MANIFEST, OBJECT_MANIFEST, False, "<i8", "D+2", _ALL, _OBJECTS),
    ArraySpec(
        ArrayKind.OBJECT_ATTRIBUTE,
        OBJECT_ATTRIBUTES + "/{name}",
        False,
        None,
        "K",
        _ALL,
        Holders.NONE,
    ),
    ArraySpec(ArrayKind.GROUP_OFFSETS, GROUP_OFFSETS, False, "<i8", "1", _ALL, Holders.NONE),
    ArraySpec(ArrayKind.GROUP_MEMBERS, GROUP_MEMBERS, False, "<i8", "1", _ALL, Holders.NONE),
    ArraySpec(
        ArrayKind.GROUP_ATTRIBUTE,
        GROUPINGS_ATTRIBUTES + "/{name}",
        False,
        None,
        "K",
        _ALL,
        Holders.NONE,
    ),
    # per-chunk [min, max] and value sets of vertex attributes (docs/spec.md "Statistics")
    ArraySpec(ArrayKind.STATISTICS, STATISTICS + "/{name}", False, None, "2", _ALL, Holders.NONE),
    ArraySpec(ArrayKind.VALUE_SET, VALUE_SETS + "/{name}", False, "<u8", "1", _ALL, Holders.NONE),
)
"""Every array a level group may contain (FORMAT.md §6)."""

SPEC_BY_KIND: Mapping[ArrayKind, ArraySpec] = {s.kind: s for s in ARRAY_SPECS}


def array_attributes(
    kind: ArrayKind, dtype: str, width: int, extra: Mapping[str, object] | None = None
) -> dict[str, object]:
    """Return the attributes every ZVF array carries (FORMAT.md §6).

    Examples
    --------
    >>> array_attributes(ArrayKind.VERTICES, "<f4", 3)["zv_array"]
    'vertices'
    """
    attrs: dict[str, object] = {
        "zv_array": kind.value,
        "dtype": dtype,
        "width": int(width),
        "encoding": "raw",
    }
    attrs.update(extra or {})
    return attrs


def level_path(level: int) -> str:
    """Return the group path of resolution level ``level``.

    Examples
    --------
    >>> level_path(0)
    '0'
    """
    return str(int(level))


def attribute_path(prefix: str, name: str) -> str:
    """Return the path of a named attribute array, checking the name is an identifier.

    Examples
    --------
    >>> attribute_path(ATTRIBUTES, "intensity")
    'attributes/intensity'
    """
    if not name.isidentifier():
        raise InvalidInputError(
            f"attribute name {name!r} is not an identifier (letters, digits, underscore)"
        )
    check_name_length(name)
    return f"{prefix}/{name}"


MAX_NAME_BYTES = 255
"""Longest attribute name, in UTF-8 bytes: it becomes a directory or key name, and common
file systems cap those at 255 bytes."""


def check_name_length(name: str) -> None:
    """Refuse a name longer than :data:`MAX_NAME_BYTES` UTF-8 bytes."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise InvalidInputError(
            f"attribute name {name[:20]!r}... is {size} bytes long; names are limited to "
            f"{MAX_NAME_BYTES} UTF-8 bytes (a file name)"
        )
