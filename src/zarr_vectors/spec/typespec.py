"""Every fact about a geometry type, as one frozen :class:`TypeSpec`, and the registry by name.

Layers that need to know something about a type — which arrays it holds, how its root keys
default, how a pyramid merges its vertices, how it is drawn — look its spec up here instead of
switching on the name.  The seven built-in specs are registered at import; a plug-in adds one
with :func:`register_type_spec` (``zarr_vectors.types.register_geometry_type`` does it for a
plug-in class) or through the ``zarr_vectors.geometry_types`` entry-point group, loaded on the
first lookup of an unknown name (the numcodecs registry model).  This module holds data only.

Examples
--------
>>> type_spec("skeleton").merge_rule
<MergeRule.TREE: 'tree'>
>>> type_spec("mesh").link_arity, type_spec("polyline").cross_chunk_endpoints
(3, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from zarr_vectors.errors import InvalidInputError, UnknownGeometryTypeError
from zarr_vectors.spec.conventions import (
    FramePolicy,
    GeometryTypeName,
    MergeRule,
    SceneKind,
    Topology,
)

__all__ = [
    "BUILTIN_TYPE_SPECS",
    "ENTRY_POINT_GROUP",
    "TypeSpec",
    "load_geometry_entry_point",
    "parse_geometry_type",
    "register_type_spec",
    "registered_type_names",
    "type_spec",
]

ENTRY_POINT_GROUP = "zarr_vectors.geometry_types"
"""Entry points named by a geometry type; each loads a plug-in class (with a ``spec``) or a
:class:`TypeSpec`."""


@dataclass(frozen=True, kw_only=True)
class TypeSpec:
    """What the format and every layer of the library know about one geometry type."""

    name: str
    """Spec name, written to the root key ``geometry_type``."""
    family: str | None = None
    """A built-in type whose store layout this type's stores also satisfy, so that type's
    readers, file formats and tools accept them (a plug-in reusing built-in machinery), or
    None (the type is its own family)."""
    has_objects: bool = True
    """Every vertex belongs to an object (false: point clouds, whose objects are optional)."""
    link_arity: int = 0
    """Vertices per stored ``links`` row; 0: no links array (connectivity implicit or none)."""
    cross_chunk_endpoints: int = 0
    """Endpoints per ``cross_chunk_links`` record; 0: the type has no cross-chunk links."""
    sequential: bool = False
    """Consecutive vertices of an object are connected (paths): row order is connectivity."""
    ordered: bool = True
    """Rows of an object keep input (traversal) order."""
    topology: Topology = Topology.NONE
    """What the connectivity of objects must satisfy (checked by the validator)."""
    object_vertices: int | None = None
    """Vertices every level-0 object has (lines: 2), or None for any number."""
    always_directed: bool = False
    """Links are directed whatever ``is_directed`` says (skeletons: child → parent)."""
    root_keys: tuple[str, ...] = ()
    """Optional type-specific root keys a store may carry (FORMAT.md §3)."""
    root_defaults: tuple[tuple[str, Any], ...] = ()
    """Root keys the type's writers always write, with their default values."""
    merge_rule: MergeRule = MergeRule.BIN
    """Which vertices of a coarse bin merge into one metavertex."""
    frame_policy: FramePolicy = FramePolicy.OBJECT
    """Default seekable-frame size of the type's zstd payloads."""
    scene: SceneKind = SceneKind.POINTS
    """How a read result of this type flattens into a drawable scene."""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise InvalidInputError(f"geometry type name {self.name!r} is not an identifier")
        if self.link_arity < 0 or self.cross_chunk_endpoints < 0:
            raise InvalidInputError(f"{self.name}: link widths must be >= 0")
        if self.link_arity and not self.has_objects:
            raise InvalidInputError(f"{self.name}: links need objects")
        stray = sorted({k for k, _ in self.root_defaults} - set(self.root_keys))
        if stray:
            raise InvalidInputError(f"{self.name}: root_defaults {stray} are not root_keys")

    @property
    def defaults(self) -> dict[str, Any]:
        """:attr:`root_defaults` as a new dict."""
        return dict(self.root_defaults)

    @property
    def family_name(self) -> str:
        """:attr:`family`, or the type's own name when it has none."""
        return self.name if self.family is None else self.family

    @property
    def linked(self) -> bool:
        """Whether stores hold a ``links`` array (and link attributes)."""
        return self.link_arity > 0

    @property
    def exact_partitions(self) -> bool:
        """Whether level partitions derive coarse levels exactly (no ``links`` array).

        Without stored links no link can join objects of different partitions.
        """
        return self.link_arity == 0

    @property
    def directed_default(self) -> bool:
        """Whether links count as directed when a store has no ``is_directed`` key."""
        return bool(self.defaults.get("is_directed", False))


_STREAMLINE_KEYS = (
    "step_size",
    "step_size_unit",
    "seeding_strategy",
    "propagation_algorithm",
    "reference_image",
    "tractography_software",
)

BUILTIN_TYPE_SPECS: tuple[TypeSpec, ...] = (
    TypeSpec(
        name=GeometryTypeName.POINT_CLOUD,
        has_objects=False,
        ordered=False,
        frame_policy=FramePolicy.WHOLE_CHUNK,
    ),
    TypeSpec(
        name=GeometryTypeName.LINE,
        topology=Topology.PATHS,
        object_vertices=2,
        cross_chunk_endpoints=2,
        sequential=True,
        merge_rule=MergeRule.RUN,
        scene=SceneKind.SEGMENTS,
    ),
    TypeSpec(
        name=GeometryTypeName.POLYLINE,
        topology=Topology.PATHS,
        cross_chunk_endpoints=2,
        sequential=True,
        merge_rule=MergeRule.RUN,
        scene=SceneKind.PATHS,
        frame_policy=FramePolicy.PATH,
    ),
    TypeSpec(
        name=GeometryTypeName.STREAMLINE,
        topology=Topology.PATHS,
        cross_chunk_endpoints=2,
        sequential=True,
        root_keys=_STREAMLINE_KEYS,
        merge_rule=MergeRule.RUN,
        scene=SceneKind.PATHS,
        frame_policy=FramePolicy.PATH,
    ),
    TypeSpec(
        name=GeometryTypeName.GRAPH,
        topology=Topology.GRAPH,
        link_arity=2,
        cross_chunk_endpoints=2,
        root_keys=("is_directed",),
        root_defaults=(("is_directed", False),),
        scene=SceneKind.GRAPH,
    ),
    TypeSpec(
        name=GeometryTypeName.SKELETON,
        topology=Topology.FOREST,
        link_arity=2,
        cross_chunk_endpoints=2,
        always_directed=True,
        root_keys=("swc_compatible", "is_directed"),
        root_defaults=(("swc_compatible", True), ("is_directed", True)),
        merge_rule=MergeRule.TREE,
        frame_policy=FramePolicy.TREE,
        scene=SceneKind.TREE,
    ),
    TypeSpec(
        name=GeometryTypeName.MESH,
        topology=Topology.SURFACE,
        link_arity=3,
        cross_chunk_endpoints=3,
        root_keys=("winding_order", "closed_surface"),
        root_defaults=(("winding_order", "ccw"),),
        scene=SceneKind.MESH,
    ),
)
"""The seven geometry types of ZVF 1.0."""

_SPECS: dict[str, TypeSpec] = {}
_ENTRY_POINTS: dict[str, EntryPoint] | None = None
_LOADED: dict[str, object] = {}


def register_type_spec(spec: TypeSpec, *, replace: bool = False) -> TypeSpec:
    """Register ``spec`` under its name; a different spec for a taken name needs ``replace``."""
    old = _SPECS.get(spec.name)
    if old is not None and old != spec and not replace:
        raise InvalidInputError(f"geometry type {spec.name!r} is already registered")
    _SPECS[spec.name] = spec
    return spec


def _entry_points(rescan: bool = False) -> dict[str, EntryPoint]:
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None or rescan:
        _ENTRY_POINTS = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return _ENTRY_POINTS


def load_geometry_entry_point(name: str) -> object | None:
    """Load (once) and return the object the entry point ``name`` names, or None if none.

    A :class:`TypeSpec`, or an object with a ``spec`` attribute holding one, registers that
    spec unless importing it already did.
    """
    if name in _LOADED:
        return _LOADED[name]
    # a name missing from the cached scan triggers one rescan: distributions installed (or
    # put on sys.path) after the first lookup become visible
    ep = _entry_points().get(name) or _entry_points(rescan=True).get(name)
    if ep is None:
        return None
    obj: object = ep.load()
    _LOADED[name] = obj
    spec = obj if isinstance(obj, TypeSpec) else getattr(obj, "spec", None)
    if isinstance(spec, TypeSpec) and spec.name not in _SPECS:
        register_type_spec(spec)
    return obj


def type_spec(name: str) -> TypeSpec:
    """Return the spec registered for ``name``, loading its entry point on first miss.

    Raises
    ------
    UnknownGeometryTypeError
        No spec is registered and no entry point provides one.
    """
    key = str(name)
    spec = _SPECS.get(key)
    if spec is None:
        load_geometry_entry_point(key)
        spec = _SPECS.get(key)
    if spec is None:
        valid = ", ".join(repr(str(n)) for n in registered_type_names())
        raise UnknownGeometryTypeError(f"geometry_type: {key!r} is not one of {valid}")
    return spec


def parse_geometry_type(value: str) -> str:
    """Return the registered name of ``value`` (a built-in name as its enum member)."""
    if not isinstance(value, str):
        raise UnknownGeometryTypeError(f"geometry_type must be a string, got {value!r}")
    return type_spec(value).name


def registered_type_names() -> tuple[str, ...]:
    """Names of every registered type (entry points not yet loaded are included)."""
    return tuple(dict.fromkeys([*_SPECS, *_entry_points()]))


for _spec in BUILTIN_TYPE_SPECS:
    register_type_spec(_spec)
