"""Frozen metadata documents of a ZVF store and their JSON round trip (FORMAT.md §3–§6).

Each class is built with validated values: the ``parse_*`` helpers normalise input and raise
:class:`~zarr_vectors.errors.MetadataValidationError` naming the field.  ``to_dict`` and
``from_dict`` are symmetric: ``Cls.from_dict(x.to_dict()) == x`` for every valid ``x``.

Unknown keys: root and level documents keep keys they do not know in ``extra`` and write them back
unchanged, so a newer writer's metadata survives a rewrite by this library.  An unknown
``zarr_vectors_version`` gives a :class:`~zarr_vectors.errors.ZVUserWarning`, not an error (seed).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NotRequired, TypedDict

import numpy as np

from zarr_vectors.errors import MetadataValidationError, ZVUserWarning
from zarr_vectors.spec.conventions import GeometryTypeName, SparsityStrategy
from zarr_vectors.spec.jsonvalue import parse_json, parse_json_object
from zarr_vectors.spec.typespec import parse_geometry_type, type_spec

__all__ = [
    "CONVENTION_UUID",
    "FORMAT_VERSION",
    "SPEC_URL",
    "CONVENTIONS_KEY",
    "ZVF_CONVENTION",
    "MULTISCALE_TYPE",
    "MULTISCALE_VERSION",
    "Axis",
    "BoundingBox",
    "ChunkGrid",
    "DatasetMetadata",
    "LevelMetadata",
    "MultiscaleMetadata",
    "RootMetadata",
    "check_divides",
    "default_axis_names",
    "parse_float_tuple",
    "parse_int_tuple",
    "parse_axis_units",
    "parse_json",
    "parse_type_keys",
]

FORMAT_VERSION = "1.0"
"""The ZVF version this library writes."""
CONVENTION_UUID = "022a2c1f-903f-4aec-b3bd-8dfefa29b68b"
"""Permanent identifier of ZVF in the ``zarr_conventions`` list (zarr-conventions spec)."""
SPEC_URL = "https://github.com/AllenInstitute/zarr-vectors-py/blob/main/docs/spec/index.md"
"""The published specification of the format (the convention's ``spec_url``): the upstream
project's spec, whose *Root metadata* page is the seed this library implements; this library's
own additions (``chunk_grid``, payload layout, checksums) are in its ``docs/spec.md``."""
ZVF_CONVENTION: dict[str, str] = {
    "uuid": CONVENTION_UUID,
    "spec_url": SPEC_URL,
    "name": "zarr_vectors",
    "description": f"Zarr Vectors Format {FORMAT_VERSION}: chunked, multiscale vector geometry "
    "(points, lines, graphs, skeletons, meshes); version in zarr_vectors_version",
}
"""The Convention Metadata Object a ZVF root lists in ``zarr_conventions``, so generic Zarr
tools can tell a ZVF store from other groups without knowing its keys."""
MULTISCALE_VERSION = "0.5"
MULTISCALE_TYPE = "zarr_vectors_multiscale"
_DIVISIBILITY_RTOL = 1e-6
_MAX_INT = 2**63 - 1
"""Integer fields must fit int64 (they become numpy integers)."""
_MAX_EXACT_INT = 2**53
"""Integer tuples pass through floats, exact up to 2**53."""

JSON = Any
"""A JSON value as returned by ``json.loads``."""

_BOOL_TYPE_KEYS = frozenset({"is_directed", "swc_compatible", "closed_surface"})


def parse_type_keys(doc: Mapping[str, JSON]) -> dict[str, JSON]:
    """Check the values of type-specific root keys.

    They must be strict JSON, ``step_size`` a positive finite number and the flags booleans.
    """
    out = parse_json_object(doc, "type_metadata")
    step = out.get("step_size")
    if step is not None and (
        isinstance(step, bool) or not isinstance(step, int | float) or step <= 0
    ):
        raise _fail("step_size", f"must be a positive finite number, got {step!r}")
    for key in _BOOL_TYPE_KEYS & set(out):
        if not isinstance(out[key], bool):
            raise _fail(key, f"expected true or false, got {out[key]!r}")
    return out


# --------------------------------------------------------------------------------------------
# parse helpers


def _fail(field_name: str, message: str) -> MetadataValidationError:
    return MetadataValidationError(f"{field_name}: {message}")


def parse_float_tuple(
    value: object, field_name: str, *, length: int | None = None, positive: bool = False
) -> tuple[float, ...]:
    """Normalise a sequence of finite numbers to a tuple of floats.

    Examples
    --------
    >>> parse_float_tuple([1, 2.5], "chunk_shape", positive=True)
    (1.0, 2.5)
    """
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | tuple):
        if hasattr(value, "tolist"):
            value = value.tolist()
        else:
            raise _fail(field_name, f"expected a list of numbers, got {value!r}")
    assert isinstance(value, Sequence)
    out: list[float] = []
    for i, v in enumerate(value):
        if isinstance(v, bool | np.bool_):
            raise _fail(field_name, f"element {i} is a boolean, not a number: {v!r}")
        if not isinstance(v, int | float | np.integer | np.floating):  # strings are not numbers
            raise _fail(field_name, f"element {i} is not a number: {v!r}")
        try:
            f = float(v)
        except OverflowError:  # an integer beyond the float range, e.g. 10**400 from JSON
            raise _fail(field_name, f"element {i} is too large") from None
        if not math.isfinite(f):
            raise _fail(field_name, f"element {i} is not finite: {v!r}")
        if positive and f <= 0:
            raise _fail(field_name, f"element {i} must be strictly positive, got {v!r}")
        out.append(f)
    if length is not None and len(out) != length:
        raise _fail(field_name, f"expected {length} values (spatial_dims), got {len(out)}")
    if not out:
        raise _fail(field_name, "must not be empty")
    return tuple(out)


def parse_int_tuple(
    value: object, field_name: str, *, length: int | None = None, minimum: int | None = None
) -> tuple[int, ...]:
    """Normalise a sequence of integers (integral floats accepted) to a tuple of ints.

    Examples
    --------
    >>> parse_int_tuple([2, 2.0], "bin_ratio", minimum=1)
    (2, 2)
    """
    floats = parse_float_tuple(value, field_name, length=length)
    out = []
    for i, f in enumerate(floats):
        if abs(f) > _MAX_EXACT_INT:
            raise _fail(field_name, f"element {i} is too large: {f!r}")
        if f != int(f):
            raise _fail(field_name, f"element {i} must be an integer, got {f!r}")
        if minimum is not None and f < minimum:
            raise _fail(field_name, f"element {i} must be >= {minimum}, got {int(f)}")
        out.append(int(f))
    return tuple(out)


def _parse_str(value: object, field_name: str) -> str:
    if not isinstance(value, str):
        raise _fail(field_name, f"expected a string, got {value!r}")
    return value


def _parse_int(
    value: object, field_name: str, *, minimum: int | None = None, strict: bool = False
) -> int:
    """Parse an integer; ``strict`` (JSON documents) refuses integral floats such as ``3.0``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if not strict and isinstance(value, float) and math.isfinite(value) and value == int(value):
            value = int(value)
        else:
            raise _fail(field_name, f"expected an integer, got {value!r}")
    if abs(value) > _MAX_INT:
        raise _fail(field_name, "does not fit a 64-bit integer")
    if minimum is not None and value < minimum:
        raise _fail(field_name, f"must be >= {minimum}, got {value}")
    return value


def _json_ints(value: JSON, field_name: str) -> JSON:
    """Refuse a JSON list of integers that holds anything else (``2.0``, ``"2"``)."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, int):
                raise _fail(field_name, f"element {i} must be a JSON integer, got {v!r}")
    return value


def _parse_fraction(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(field_name, f"expected a number in (0, 1], got {value!r}")
    try:
        f = float(value)
    except OverflowError:  # an integer beyond the float range
        raise _fail(field_name, "must be in [0, 1], got a huge integer") from None
    if not (0.0 <= f <= 1.0):
        raise _fail(field_name, f"must be in [0, 1], got {f}")
    return f


def _check_bin_shape(ds: DatasetMetadata, base: tuple[float, ...]) -> None:
    """Refuse a level whose ``bin_shape`` is not ``base_bin_shape × bin_ratio`` (FORMAT.md §2)."""
    want = [b * r for b, r in zip(base, ds.bin_ratio, strict=True)]
    if not all(math.isclose(x, y, rel_tol=1e-9) for x, y in zip(ds.bin_shape, want, strict=True)):
        raise _fail(
            f"multiscales level {ds.level} bin_shape",
            f"{list(ds.bin_shape)} is not base_bin_shape × bin_ratio = {want}",
        )


def _parse_object(doc: object, field_name: str) -> Mapping[str, JSON]:
    if not isinstance(doc, Mapping):
        raise _fail(field_name, f"expected an object, got {doc!r}")
    return doc


def _require(doc: Mapping[str, JSON], key: str, where: str) -> JSON:
    if key not in doc:
        raise MetadataValidationError(f"{where}: required key {key!r} is missing")
    return doc[key]


def default_axis_names(spatial_dims: int) -> tuple[str, ...]:
    """Return the default axis names for ``spatial_dims`` dimensions (FORMAT.md §2).

    Examples
    --------
    >>> default_axis_names(2)
    ('x', 'y')
    """
    names = {1: ("x",), 2: ("x", "y"), 3: ("x", "y", "z"), 4: ("x", "y", "z", "t")}
    if spatial_dims in names:
        return names[spatial_dims]
    return tuple(f"d{i}" for i in range(spatial_dims))


def check_divides(
    chunk_shape: Sequence[float], bin_shape: Sequence[float], field_name: str
) -> None:
    """Raise if ``bin_shape`` does not evenly divide ``chunk_shape`` (seed rule 3).

    Examples
    --------
    >>> check_divides([200.0], [50.0], "bin_shape")
    >>> check_divides([200.0], [30.0], "bin_shape")
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.MetadataValidationError: bin_shape: 30.0 does not divide chunk_shape 200.0 on axis 0
    """
    for axis, (c, b) in enumerate(zip(chunk_shape, bin_shape, strict=True)):
        ratio = c / b
        if not math.isfinite(ratio):  # a tiny bin in a huge chunk: too many bins anyway
            raise _fail(field_name, f"{b!r} is too small for chunk_shape {c!r} on axis {axis}")
        if abs(ratio - round(ratio)) * b > _DIVISIBILITY_RTOL * c or round(ratio) < 1:
            raise _fail(field_name, f"{b!r} does not divide chunk_shape {c!r} on axis {axis}")


# --------------------------------------------------------------------------------------------
# small documents


class AxisDict(TypedDict):
    name: str
    type: str
    unit: NotRequired[str]


@dataclass(frozen=True, kw_only=True)
class Axis:
    """One axis of ``multiscales[0].axes``."""

    name: str
    """Axis name, e.g. ``"x"``."""
    type: str = "space"
    """``"space"`` or ``"time"``."""
    unit: str | None = None
    """Physical unit of coordinates on this axis, e.g. ``"micrometer"``."""

    def __post_init__(self) -> None:
        _parse_str(self.name, "axes.name")
        if self.type not in ("space", "time"):
            raise _fail("axes.type", f"must be 'space' or 'time', got {self.type!r}")

    def to_dict(self) -> AxisDict:
        """Return the JSON form."""
        out: AxisDict = {"name": self.name, "type": self.type}
        if self.unit is not None:
            out["unit"] = self.unit
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> Axis:
        """Build from the JSON form."""
        doc = _parse_object(doc, "axes")
        unit = doc.get("unit")
        return cls(
            name=_parse_str(_require(doc, "name", "axes"), "axes.name"),
            type=_parse_str(doc.get("type", "space"), "axes.type"),
            unit=None if unit is None else _parse_str(unit, "axes.unit"),
        )


class BoundingBoxDict(TypedDict):
    min: list[float]
    max: list[float]


@dataclass(frozen=True, kw_only=True)
class BoundingBox:
    """Axis-aligned box ``min <= p < max`` (queries) or the data extent ``min..max`` (root)."""

    min: tuple[float, ...]
    """Lower corner, physical units."""
    max: tuple[float, ...]
    """Upper corner, physical units."""

    def __post_init__(self) -> None:
        lo = parse_float_tuple(self.min, "bounding_box.min")
        hi = parse_float_tuple(self.max, "bounding_box.max", length=len(lo))
        object.__setattr__(self, "min", lo)
        object.__setattr__(self, "max", hi)
        for axis, (a, b) in enumerate(zip(lo, hi, strict=True)):
            if a > b:
                raise _fail("bounding_box", f"min {a} > max {b} on axis {axis}")

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.min)

    def to_dict(self) -> BoundingBoxDict:
        """Return the JSON form."""
        return {"min": list(self.min), "max": list(self.max)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> BoundingBox:
        """Build from the JSON form."""
        doc = _parse_object(doc, "bounding_box")
        return cls(
            min=_require(doc, "min", "bounding_box"), max=_require(doc, "max", "bounding_box")
        )


class ChunkGridDict(TypedDict):
    origin: list[int]
    shape: list[int]


@dataclass(frozen=True, kw_only=True)
class ChunkGrid:
    """The chunk coordinates a store covers: ``origin`` up to ``origin + shape`` (exclusive)."""

    origin: tuple[int, ...]
    """Chunk coordinate stored at index 0 of every per-chunk array."""
    shape: tuple[int, ...]
    """Number of chunks per axis (shape of per-chunk arrays)."""

    def __post_init__(self) -> None:
        origin = parse_int_tuple(self.origin, "chunk_grid.origin")
        shape = parse_int_tuple(self.shape, "chunk_grid.shape", length=len(origin), minimum=1)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "shape", shape)

    def to_dict(self) -> ChunkGridDict:
        """Return the JSON form."""
        return {"origin": list(self.origin), "shape": list(self.shape)}

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> ChunkGrid:
        """Build from the JSON form."""
        doc = _parse_object(doc, "chunk_grid")
        return cls(
            origin=_require(doc, "origin", "chunk_grid"), shape=_require(doc, "shape", "chunk_grid")
        )


# --------------------------------------------------------------------------------------------
# multiscales


class DatasetDict(TypedDict):
    path: str
    level: int
    bin_ratio: list[int]
    bin_shape: list[float]
    object_sparsity: float
    coordinateTransformations: list[dict[str, JSON]]


@dataclass(frozen=True, kw_only=True)
class DatasetMetadata:
    """One entry of ``multiscales[0].datasets``: a resolution level (FORMAT.md §4)."""

    level: int
    """Level number N; the group path is ``str(N)``."""
    bin_ratio: tuple[int, ...]
    """Bin size of this level relative to level 0, per axis."""
    bin_shape: tuple[float, ...]
    """Bin extent at this level, physical units."""
    object_sparsity: float = 1.0
    """Fraction of level-0 objects kept at this level."""

    def __post_init__(self) -> None:
        _parse_int(self.level, "datasets.level", minimum=0)
        ratio = parse_int_tuple(self.bin_ratio, "datasets.bin_ratio", minimum=1)
        shape = parse_float_tuple(
            self.bin_shape, "datasets.bin_shape", length=len(ratio), positive=True
        )
        object.__setattr__(self, "bin_ratio", ratio)
        object.__setattr__(self, "bin_shape", shape)
        object.__setattr__(
            self, "object_sparsity", _parse_fraction(self.object_sparsity, "object_sparsity")
        )

    @property
    def path(self) -> str:
        """Group path of the level."""
        return str(self.level)

    def to_dict(self) -> DatasetDict:
        """Return the JSON form, with the seed's scale and translation transforms."""
        return {
            "path": self.path,
            "level": self.level,
            "bin_ratio": list(self.bin_ratio),
            "bin_shape": list(self.bin_shape),
            "object_sparsity": self.object_sparsity,
            "coordinateTransformations": [
                {"type": "scale", "scale": [float(r) for r in self.bin_ratio]},
                {"type": "translation", "translation": [b / 2 for b in self.bin_shape]},
            ],
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> DatasetMetadata:
        """Build from the JSON form; ``path`` must equal ``str(level)``."""
        where = "multiscales.datasets"
        doc = _parse_object(doc, where)
        level = _parse_int(_require(doc, "level", where), f"{where}.level", minimum=0, strict=True)
        path = _require(doc, "path", where)  # seed rule 5: every entry names its group
        if path != str(level):
            raise _fail(f"{where}.path", f"{path!r} does not match level {level}")
        if "object_sparsity" not in doc:
            raise MetadataValidationError(f"{where}: required key 'object_sparsity' is missing")
        return cls(
            level=level,
            bin_ratio=_json_ints(_require(doc, "bin_ratio", where), f"{where}.bin_ratio"),
            bin_shape=_require(doc, "bin_shape", where),
            object_sparsity=doc.get("object_sparsity", 1.0),
        )


class MultiscaleDict(TypedDict):
    version: str
    name: NotRequired[str]
    axes: list[AxisDict]
    datasets: list[DatasetDict]
    type: str


@dataclass(frozen=True, kw_only=True)
class MultiscaleMetadata:
    """The single object of the ``multiscales`` list (FORMAT.md §4)."""

    axes: tuple[Axis, ...]
    """One axis per spatial dimension, in vertex column order."""
    datasets: tuple[DatasetMetadata, ...]
    """One entry per level group present, ascending by level."""
    name: str | None = None
    """Optional name of the multiscale."""
    version: str = MULTISCALE_VERSION
    """Version of the multiscale block."""

    def __post_init__(self) -> None:
        if not self.datasets:
            raise _fail("multiscales.datasets", "must list at least one level")
        names = [a.name for a in self.axes]
        if len(set(names)) != len(names):
            raise _fail("multiscales.axes", f"axis names must be unique, got {names}")
        levels = [d.level for d in self.datasets]
        if levels != sorted(set(levels)):
            raise _fail("multiscales.datasets", f"levels must be ascending and unique: {levels}")
        for d in self.datasets:
            if len(d.bin_ratio) != len(self.axes):
                raise _fail("multiscales.datasets", f"level {d.level} has wrong dimensionality")
        for a, b in itertools.pairwise(self.datasets):  # seed rule 7
            if any(y < x for x, y in zip(a.bin_ratio, b.bin_ratio, strict=True)):
                raise _fail(
                    "multiscales.datasets",
                    f"bin_ratio decreases from level {a.level} {list(a.bin_ratio)} to level "
                    f"{b.level} {list(b.bin_ratio)}",
                )

    def to_dict(self) -> MultiscaleDict:
        """Return the JSON form."""
        out: MultiscaleDict = {
            "version": self.version,
            "axes": [a.to_dict() for a in self.axes],
            "datasets": [d.to_dict() for d in self.datasets],
            "type": MULTISCALE_TYPE,
        }
        if self.name is not None:
            out = {"version": self.version, "name": self.name, **out}
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> MultiscaleMetadata:
        """Build from the JSON form."""
        doc = _parse_object(doc, "multiscales")
        axes = _require(doc, "axes", "multiscales")
        datasets = _require(doc, "datasets", "multiscales")
        if not isinstance(axes, list) or not isinstance(datasets, list):
            raise _fail("multiscales", "axes and datasets must be lists")
        name = doc.get("name")
        return cls(
            axes=tuple(Axis.from_dict(a) for a in axes),
            datasets=tuple(DatasetMetadata.from_dict(d) for d in datasets),
            name=None if name is None else _parse_str(name, "multiscales.name"),
            version=_parse_str(doc.get("version", MULTISCALE_VERSION), "multiscales.version"),
        )


# --------------------------------------------------------------------------------------------
# root


_ROOT_KEYS = (
    "zarr_vectors_version",
    "geometry_type",
    "spatial_dims",
    "base_bin_shape",
    "chunk_shape",
    "multiscales",
    "coordinate_system",
    "axis_units",
    "bounding_box",
    "creation_timestamp",
    "chunk_grid",
    "source_description",
    "notes",
    "custom_metadata",
    "draco_compressed",
)


@dataclass(frozen=True, kw_only=True)
class RootMetadata:
    """Root attributes of a ZVF store (seed page *Root metadata*, FORMAT.md §3).

    Examples
    --------
    >>> meta = RootMetadata.create(
    ...     geometry_type="point_cloud", chunk_shape=(200.0, 200.0), base_bin_shape=(50.0, 50.0)
    ... )
    >>> RootMetadata.from_dict(meta.to_dict()) == meta
    True
    >>> meta.multiscales.datasets[0].bin_ratio
    (1, 1)
    """

    geometry_type: str
    """Registered geometry type name (a built-in one as its :class:`GeometryTypeName`)."""
    spatial_dims: int
    """Number of spatial dimensions D."""
    base_bin_shape: tuple[float, ...]
    """Bin extent at level 0, physical units."""
    chunk_shape: tuple[float, ...]
    """Chunk extent at every level, physical units."""
    multiscales: MultiscaleMetadata
    """The multiscale block."""
    zarr_vectors_version: str = FORMAT_VERSION
    """Format version string."""
    coordinate_system: str = "unknown"
    """Informational coordinate system name, e.g. ``"RAS"``."""
    axis_units: str | tuple[str, ...] | None = None
    """Unit of all axes, or one per axis."""
    bounding_box: BoundingBox | None = None
    """Extent of level-0 vertices."""
    creation_timestamp: str | None = None
    """ISO-8601 UTC creation time."""
    chunk_grid: ChunkGrid | None = None
    """Chunk coordinates covered by the per-chunk arrays."""
    source_description: str | None = None
    """Free text describing the data's origin."""
    notes: str | None = None
    """Free text for human readers."""
    custom_metadata: Mapping[str, JSON] | None = None
    """Application metadata, never interpreted."""
    draco_compressed: bool | None = None
    """True when any payload is Draco-encoded."""
    type_metadata: Mapping[str, JSON] = field(default_factory=dict)
    """Type-specific optional keys (:attr:`~zarr_vectors.spec.typespec.TypeSpec.root_keys`)."""
    extra: Mapping[str, JSON] = field(default_factory=dict)
    """Keys this library does not know; preserved on rewrite."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "geometry_type", parse_geometry_type(self.geometry_type))
        d = _parse_int(self.spatial_dims, "spatial_dims", minimum=1)
        chunk = parse_float_tuple(self.chunk_shape, "chunk_shape", length=d, positive=True)
        bins = parse_float_tuple(self.base_bin_shape, "base_bin_shape", length=d, positive=True)
        check_divides(chunk, bins, "base_bin_shape")
        object.__setattr__(self, "chunk_shape", chunk)
        object.__setattr__(self, "base_bin_shape", bins)
        if len(self.multiscales.axes) != d:
            raise _fail(
                "multiscales.axes",
                f"expected {d} axes (spatial_dims), got {len(self.multiscales.axes)}",
            )
        if self.multiscales.datasets[0].level != 0 or any(
            r != 1 for r in self.multiscales.datasets[0].bin_ratio
        ):
            raise _fail("multiscales.datasets", "level 0 with bin_ratio [1, ...] must be listed")
        for ds in self.multiscales.datasets:
            check_divides(chunk, ds.bin_shape, f"multiscales level {ds.level} bin_shape")
            _check_bin_shape(ds, bins)
        allowed = type_spec(self.geometry_type).root_keys
        self._parse_free_json()
        stray = sorted(set(self.type_metadata) - set(allowed))
        if stray:
            raise _fail(
                "type_metadata",
                f"keys {stray} do not belong to geometry type "
                f"{str(self.geometry_type)!r} (allowed: {list(allowed)})",
            )
        shadow = sorted(set(self.extra) & (set(_ROOT_KEYS) | set(allowed)))
        if shadow:
            raise _fail("extra", f"keys {shadow} are ZVF keys, not extra keys")
        for box, name in ((self.bounding_box, "bounding_box"),):
            if box is not None and box.ndim != d:
                raise _fail(name, f"expected {d} dimensions, got {box.ndim}")
        if self.chunk_grid is not None and len(self.chunk_grid.shape) != d:
            raise _fail("chunk_grid", f"expected {d} dimensions")
        if isinstance(self.axis_units, list | tuple):
            units = tuple(_parse_str(u, "axis_units") for u in self.axis_units)
            if len(units) != d:
                raise _fail("axis_units", f"expected {d} units, got {len(units)}")
            object.__setattr__(self, "axis_units", units)
        elif self.axis_units is not None:
            _parse_str(self.axis_units, "axis_units")

    def _parse_free_json(self) -> None:
        """Make type keys, unknown keys and custom metadata strict JSON (or refuse them)."""
        object.__setattr__(self, "type_metadata", parse_type_keys(self.type_metadata))
        object.__setattr__(self, "extra", parse_json_object(self.extra, "root attributes"))
        if self.custom_metadata is not None:
            custom = parse_json_object(self.custom_metadata, "custom_metadata")
            object.__setattr__(self, "custom_metadata", custom)

    @classmethod
    def create(
        cls,
        *,
        geometry_type: GeometryTypeName | str,
        chunk_shape: Sequence[float],
        base_bin_shape: Sequence[float] | None = None,
        axes: Sequence[Axis] | None = None,
        axis_units: str | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> RootMetadata:
        """Build metadata for a new single-level store with default axes and ``multiscales``."""
        chunk = parse_float_tuple(chunk_shape, "chunk_shape", positive=True)
        d = len(chunk)
        bins = (
            chunk
            if base_bin_shape is None
            else parse_float_tuple(base_bin_shape, "base_bin_shape", length=d, positive=True)
        )
        units = (
            axis_units if axis_units is None or isinstance(axis_units, str) else tuple(axis_units)
        )
        if axes is None:
            per_axis = units if isinstance(units, tuple) else (units,) * d
            axes = tuple(
                Axis(
                    name=n,
                    type="time" if n == "t" else "space",
                    unit=None if u == "unknown" else u,
                )
                for n, u in zip(default_axis_names(d), per_axis, strict=True)
            )
        ms = MultiscaleMetadata(
            axes=tuple(axes),
            datasets=(DatasetMetadata(level=0, bin_ratio=(1,) * d, bin_shape=bins),),
        )
        return cls(
            geometry_type=parse_geometry_type(geometry_type),
            spatial_dims=d,
            chunk_shape=chunk,
            base_bin_shape=bins,
            multiscales=ms,
            axis_units=units,
            **kwargs,
        )

    def with_updates(self, **changes: Any) -> RootMetadata:
        """Return a copy with fields replaced."""
        return replace(self, **changes)

    def check_level(self, level: LevelMetadata, where: str) -> None:
        """Refuse a level group whose bin ratio, shape or sparsity contradicts its datasets entry.

        Raises
        ------
        MetadataValidationError
            Naming the first field that differs; levels not listed pass.
        """
        listed = {d.level: d for d in self.multiscales.datasets}.get(level.level)
        if listed is None:
            return
        if listed.bin_ratio != level.bin_ratio:
            raise MetadataValidationError(
                f"{where}: bin_ratio {list(level.bin_ratio)} differs from the root's "
                f"multiscales datasets entry {list(listed.bin_ratio)}"
            )
        if not all(
            math.isclose(a, b, rel_tol=1e-9)
            for a, b in zip(listed.bin_shape, level.bin_shape, strict=True)
        ):
            raise MetadataValidationError(
                f"{where}: bin_shape {list(level.bin_shape)} differs from the root's "
                f"multiscales datasets entry {list(listed.bin_shape)}"
            )
        if not math.isclose(listed.object_sparsity, level.object_sparsity, rel_tol=1e-9):
            raise MetadataValidationError(
                f"{where}: object_sparsity {level.object_sparsity} differs from the root's "
                f"multiscales datasets entry {listed.object_sparsity}"
            )

    def bin_shape_for(self, bin_ratio: Sequence[int]) -> tuple[float, ...]:
        """Return the bin shape of a level with ``bin_ratio`` (``base_bin_shape × ratio``)."""
        return tuple(b * r for b, r in zip(self.base_bin_shape, bin_ratio, strict=True))

    def to_dict(self) -> dict[str, JSON]:
        """Return the flat root-attribute JSON (FORMAT.md §3), unknown keys included."""
        out: dict[str, JSON] = dict(self.extra)
        out.update(
            {
                "zarr_vectors_version": self.zarr_vectors_version,
                "geometry_type": str(self.geometry_type),
                "spatial_dims": self.spatial_dims,
                "base_bin_shape": list(self.base_bin_shape),
                "chunk_shape": list(self.chunk_shape),
                "coordinate_system": self.coordinate_system,
            }
        )
        optional: dict[str, JSON] = {
            "axis_units": list(self.axis_units)
            if isinstance(self.axis_units, tuple)
            else self.axis_units,
            "bounding_box": None if self.bounding_box is None else self.bounding_box.to_dict(),
            "creation_timestamp": self.creation_timestamp,
            "chunk_grid": None if self.chunk_grid is None else self.chunk_grid.to_dict(),
            "source_description": self.source_description,
            "notes": self.notes,
            "custom_metadata": None if self.custom_metadata is None else dict(self.custom_metadata),
            "draco_compressed": self.draco_compressed,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        out.update(self.type_metadata)
        out["multiscales"] = [self.multiscales.to_dict()]
        out[CONVENTIONS_KEY] = [
            *_other_conventions(self.extra.get(CONVENTIONS_KEY)),
            ZVF_CONVENTION,
        ]
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> RootMetadata:
        """Build from root attributes; warns on an unknown ``zarr_vectors_version``."""
        where = "root attributes"
        doc = _parse_object(doc, where)
        version = _parse_str(_require(doc, "zarr_vectors_version", where), "zarr_vectors_version")
        if version != FORMAT_VERSION:
            warnings.warn(
                f"zarr_vectors_version {version!r} is not {FORMAT_VERSION!r}; reading anyway",
                ZVUserWarning,
                stacklevel=3,
            )
        gtype = parse_geometry_type(
            _parse_str(_require(doc, "geometry_type", where), "geometry_type")
        )
        ms = _require(doc, "multiscales", where)
        if not isinstance(ms, list) or len(ms) == 0 or not isinstance(ms[0], Mapping):
            raise _fail("multiscales", "must be a non-empty list of objects")
        if len(ms) > 1:  # which block a reader should follow would be a guess
            raise _fail("multiscales", f"must hold exactly one object, got {len(ms)}")
        type_keys = type_spec(gtype).root_keys
        known = set(_ROOT_KEYS) | set(type_keys)
        bbox, grid = doc.get("bounding_box"), doc.get("chunk_grid")
        return cls(
            zarr_vectors_version=version,
            geometry_type=gtype,
            spatial_dims=_parse_int(
                _require(doc, "spatial_dims", where), "spatial_dims", strict=True
            ),
            base_bin_shape=_require(doc, "base_bin_shape", where),
            chunk_shape=_require(doc, "chunk_shape", where),
            multiscales=MultiscaleMetadata.from_dict(ms[0]),
            coordinate_system=_parse_str(
                doc.get("coordinate_system", "unknown"), "coordinate_system"
            ),
            axis_units=_parse_units(doc.get("axis_units")),
            bounding_box=None if bbox is None else BoundingBox.from_dict(bbox),
            creation_timestamp=_opt_str(doc, "creation_timestamp"),
            chunk_grid=None if grid is None else ChunkGrid.from_dict(grid),
            source_description=_opt_str(doc, "source_description"),
            notes=_opt_str(doc, "notes"),
            custom_metadata=_opt_mapping(doc, "custom_metadata"),
            draco_compressed=_opt_bool(doc, "draco_compressed"),
            type_metadata={k: doc[k] for k in type_keys if k in doc},
            extra=_without_own_convention({k: v for k, v in doc.items() if k not in known}),
        )


CONVENTIONS_KEY = "zarr_conventions"


def _other_conventions(value: JSON) -> list[JSON]:
    """Entries of a ``zarr_conventions`` list other than ZVF's own."""
    if not isinstance(value, list):
        return []
    return [c for c in value if not (isinstance(c, Mapping) and c.get("uuid") == CONVENTION_UUID)]


def _without_own_convention(extra: dict[str, JSON]) -> dict[str, JSON]:
    """Drop ZVF's declaration from unknown keys (``to_dict`` writes it afresh)."""
    if CONVENTIONS_KEY not in extra:
        return extra
    if not isinstance(extra[CONVENTIONS_KEY], list):  # to_dict could not give it back
        raise _fail(CONVENTIONS_KEY, "must be a list of convention objects")
    others = _other_conventions(extra[CONVENTIONS_KEY])
    if not others:
        return {k: v for k, v in extra.items() if k != CONVENTIONS_KEY}
    return {**extra, CONVENTIONS_KEY: others}


def _parse_strategy(value: str | SparsityStrategy) -> SparsityStrategy:
    if isinstance(value, SparsityStrategy):
        return value
    try:
        return SparsityStrategy(value)
    except ValueError:
        valid = ", ".join(repr(m.value) for m in SparsityStrategy)
        raise _fail("sparsity_strategy", f"{value!r} is not one of {valid}") from None


def parse_axis_units(value: object, spatial_dims: int) -> str | tuple[str, ...] | None:
    """Normalise user ``axis_units``: None, one unit for all axes, or one per axis.

    Examples
    --------
    >>> parse_axis_units(["um", "um"], 2)
    ('um', 'um')
    """
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, Sequence) or isinstance(value, bytes):
        raise _fail("axis_units", f"expected a string or a list of strings, got {value!r}")
    units = tuple(_parse_str(u, "axis_units") for u in value)
    if len(units) != spatial_dims:
        raise _fail("axis_units", f"expected {spatial_dims} units (one per axis), got {len(units)}")
    return units


def _parse_units(value: JSON) -> str | tuple[str, ...] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return tuple(_parse_str(v, "axis_units") for v in value)
    raise _fail("axis_units", f"expected a string or list of strings, got {value!r}")


def _opt_str(doc: Mapping[str, JSON], key: str) -> str | None:
    v = doc.get(key)
    return None if v is None else _parse_str(v, key)


def _opt_bool(doc: Mapping[str, JSON], key: str) -> bool | None:
    v = doc.get(key)
    if v is None or isinstance(v, bool):
        return v
    raise _fail(key, f"expected true or false, got {v!r}")


def _opt_mapping(doc: Mapping[str, JSON], key: str) -> Mapping[str, JSON] | None:
    v = doc.get(key)
    if v is None or isinstance(v, Mapping):
        return v
    raise _fail(key, f"expected an object, got {v!r}")


# --------------------------------------------------------------------------------------------
# level groups


_LEVEL_KEYS = (
    "level",
    "bin_ratio",
    "bin_shape",
    "object_sparsity",
    "sparsity_strategy",
    "vertex_count",
    "object_count",
    "chunk_count",
    "coarsening",
)


@dataclass(frozen=True, kw_only=True)
class LevelMetadata:
    """Attributes of a level group ``N`` (FORMAT.md §5)."""

    level: int
    """Level number."""
    bin_ratio: tuple[int, ...]
    """Bin size relative to level 0, per axis."""
    bin_shape: tuple[float, ...]
    """Bin extent, physical units."""
    vertex_count: int = 0
    """Vertices stored at this level."""
    object_count: int = 0
    """Objects with at least one vertex at this level (0 for point clouds without objects)."""
    chunk_count: int = 0
    """Non-empty chunks."""
    object_sparsity: float = 1.0
    """Fraction of level-0 objects kept."""
    sparsity_strategy: SparsityStrategy | None = None
    """How objects were chosen (levels > 0 of object types)."""
    coarsening: Mapping[str, JSON] | None = None
    """Method and attribute aggregation used to build this level (levels > 0)."""
    extra: Mapping[str, JSON] = field(default_factory=dict)
    """Unknown keys, preserved."""

    def __post_init__(self) -> None:
        _parse_int(self.level, "level", minimum=0)
        ratio = parse_int_tuple(self.bin_ratio, "bin_ratio", minimum=1)
        object.__setattr__(self, "bin_ratio", ratio)
        object.__setattr__(
            self,
            "bin_shape",
            parse_float_tuple(self.bin_shape, "bin_shape", length=len(ratio), positive=True),
        )
        for name in ("vertex_count", "object_count", "chunk_count"):
            _parse_int(getattr(self, name), name, minimum=0)
        object.__setattr__(
            self, "object_sparsity", _parse_fraction(self.object_sparsity, "object_sparsity")
        )
        if self.sparsity_strategy is not None:
            object.__setattr__(self, "sparsity_strategy", _parse_strategy(self.sparsity_strategy))
        object.__setattr__(self, "extra", parse_json_object(self.extra, "level attributes"))
        if self.coarsening is not None:
            object.__setattr__(self, "coarsening", parse_json_object(self.coarsening, "coarsening"))

    def to_dict(self) -> dict[str, JSON]:
        """Return the JSON form, unknown keys included."""
        out: dict[str, JSON] = dict(self.extra)
        out.update(
            level=self.level,
            bin_ratio=list(self.bin_ratio),
            bin_shape=list(self.bin_shape),
            object_sparsity=self.object_sparsity,
            vertex_count=self.vertex_count,
            object_count=self.object_count,
            chunk_count=self.chunk_count,
        )
        if self.sparsity_strategy is not None:
            out["sparsity_strategy"] = self.sparsity_strategy.value
        if self.coarsening is not None:
            out["coarsening"] = dict(self.coarsening)
        return out

    @classmethod
    def from_dict(cls, doc: Mapping[str, JSON]) -> LevelMetadata:
        """Build from level-group attributes."""
        where = "level attributes"
        doc = _parse_object(doc, where)
        strategy = doc.get("sparsity_strategy")
        coarsening = doc.get("coarsening")
        if coarsening is not None and not isinstance(coarsening, Mapping):
            raise _fail("coarsening", f"expected an object, got {coarsening!r}")
        return cls(
            level=_parse_int(_require(doc, "level", where), "level", minimum=0, strict=True),
            bin_ratio=_json_ints(_require(doc, "bin_ratio", where), "bin_ratio"),
            bin_shape=_require(doc, "bin_shape", where),
            vertex_count=_parse_int(
                doc.get("vertex_count", 0), "vertex_count", minimum=0, strict=True
            ),
            object_count=_parse_int(
                doc.get("object_count", 0), "object_count", minimum=0, strict=True
            ),
            chunk_count=_parse_int(
                doc.get("chunk_count", 0), "chunk_count", minimum=0, strict=True
            ),
            object_sparsity=doc.get("object_sparsity", 1.0),
            sparsity_strategy=None
            if strategy is None
            else _parse_strategy(_parse_str(strategy, "sparsity_strategy")),
            coarsening=coarsening,
            extra={k: v for k, v in doc.items() if k not in _LEVEL_KEYS},
        )
