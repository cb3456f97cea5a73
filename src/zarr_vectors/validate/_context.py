"""Shared state of a validation run: the scanned store, derived facts, and the findings so far.

Facts such as :attr:`ValidationContext.spatial_dims` are ``None`` when the underlying key is
missing or malformed, which is how a check whose prerequisite failed knows to skip: the check
that owns the key reports it, every other check stays silent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import zarr
from zarr.storage import StorePath

from zarr_vectors.errors import UnknownGeometryTypeError, ZarrVectorsError
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.spec.layout import VERTEX_COUNTS, ArraySpec, level_path
from zarr_vectors.spec.metadata import BoundingBox, ChunkGrid
from zarr_vectors.spec.typespec import parse_geometry_type
from zarr_vectors.validate._report import Finding
from zarr_vectors.validate._scan import (
    JSON,
    ZARR_JSON,
    RawNode,
    Scan,
    ZarrFormat,
    display_path,
    join,
)

__all__ = [
    "MAX_REPEATS",
    "REQUIRED_ROOT_KEYS",
    "ArrayInfo",
    "SEED_TOLERANCE",
    "ValidationContext",
    "divides",
    "integers",
    "numbers",
]

REQUIRED_ROOT_KEYS = (
    "zarr_vectors_version",
    "geometry_type",
    "spatial_dims",
    "base_bin_shape",
    "chunk_shape",
    "multiscales",
)
"""Root keys whose absence is an error (seed *Required keys*)."""

MAX_REPEATS = 10
"""Findings kept per (check id, array) by :meth:`ValidationContext.capped`; a corrupt store can
have millions of bad chunks, and the rest are summarised in one finding."""


@dataclass
class ArrayInfo:
    """An array of a level group matched against the layout table."""

    path: str
    """Store path of the array."""
    spec: ArraySpec
    """The row of ``ARRAY_SPECS`` it matches."""
    attrs: Mapping[str, JSON]
    """Its attributes."""
    array: zarr.Array[Any] | None = None
    """The array opened by zarr-python, or None when that failed."""


@dataclass
class ValidationContext:
    """Shared state of one validation run: the scanned store, facts, and the findings so far."""

    store_path: StorePath
    """The opened store (and path prefix) being validated."""
    scan: Scan
    """Raw metadata of every node."""
    findings: list[Finding] = field(default_factory=list)
    """Findings emitted so far."""
    arrays: dict[str, ArrayInfo] = field(default_factory=dict)
    """Arrays of level groups that L1 matched to the layout table, by store path."""
    reported: set[str] = field(default_factory=set)
    """Node paths already reported as missing, so later checks do not repeat it."""
    memo: dict[str, object] = field(default_factory=dict)
    """Values shared between checks of one run (e.g. an opened level), keyed by their owner."""
    suppressed: dict[tuple[str, str], tuple[Severity, int]] = field(default_factory=dict)
    """Findings left out by :meth:`capped`, counted per (check id, node)."""

    def add(self, check: str, severity: Severity, path: str, message: str) -> None:
        """Record a finding about node ``path`` (store path, ``""`` for the root)."""
        self.findings.append(
            Finding(check=check, severity=severity, path=display_path(path), message=message)
        )

    def error(self, check: str, path: str, message: str) -> None:
        """Record an error."""
        self.add(check, Severity.ERROR, path, message)

    def warning(self, check: str, path: str, message: str) -> None:
        """Record a warning."""
        self.add(check, Severity.WARNING, path, message)

    def capped(
        self, check: str, severity: Severity, node: str, message: str, *, where: str = ""
    ) -> None:
        """Record a finding about ``node`` at most :data:`MAX_REPEATS` times per check.

        ``where`` is appended to the finding's path (a chunk, ``"[1,0,2]"``); findings beyond
        the limit are only counted, and :meth:`flush_suppressed` reports the count.
        """
        key = (check, node)
        sev, n = self.suppressed.get(key, (severity, 0))
        self.suppressed[key] = (sev, n + 1)
        if n < MAX_REPEATS:
            self.add(check, severity, node + where, message)

    def flush_suppressed(self) -> None:
        """Add one finding per (check, node) that :meth:`capped` cut short, giving the count."""
        for (check, node), (severity, n) in self.suppressed.items():
            if n > MAX_REPEATS:
                self.add(
                    check,
                    severity,
                    node,
                    f"{n - MAX_REPEATS} more {check} findings in this array were not listed "
                    f"({n} in all)",
                )
        self.suppressed.clear()

    # -- hierarchy ------------------------------------------------------------------------------

    def node(self, path: str) -> RawNode | None:
        """Return the node at ``path``, or None."""
        return self.scan.nodes.get(path)

    @cached_property
    def zarr_format(self) -> ZarrFormat | None:
        """Zarr format of the store, from the root documents (v3 wins when both exist)."""
        root = self.node("")
        if root is None:
            return None
        if ZARR_JSON in root.present:
            return 3
        return 2 if root.present & {".zgroup", ".zarray", ".zattrs"} else None

    def kind(self, path: str) -> Literal["group", "array"] | None:
        """Return the node type at ``path`` in the store's format, or None if absent."""
        node = self.node(path)
        return None if node is None else node.kind(self.zarr_format)

    def attrs(self, path: str) -> Mapping[str, JSON] | None:
        """Return the attributes of the node at ``path`` (None when absent or malformed)."""
        node = self.node(path)
        return None if node is None else node.attrs(self.zarr_format)

    def descendants(self, path: str) -> list[RawNode]:
        """Return every node below ``path`` that is a group or array in the store's format."""
        start = f"{path}/"
        return [
            n
            for p, n in sorted(self.scan.nodes.items())
            if p.startswith(start) and n.kind(self.zarr_format) is not None
        ]

    @cached_property
    def root_is_group(self) -> bool:
        """True when the root is a Zarr group in the store's format."""
        return self.kind("") == "group"

    @cached_property
    def root_attrs(self) -> Mapping[str, JSON]:
        """Root attributes (empty when the root is not a readable group)."""
        attrs = self.attrs("") if self.root_is_group else None
        return attrs or {}

    @cached_property
    def has_zvf_metadata(self) -> bool:
        """True when the root is a group carrying at least one required ZVF key."""
        return any(key in self.root_attrs for key in REQUIRED_ROOT_KEYS)

    @cached_property
    def level_paths(self) -> list[str]:
        """Paths of the level groups present (root children whose name is all digits)."""
        return sorted(
            (
                p
                for p in self.scan.nodes
                if "/" not in p and p.isdigit() and self.kind(p) == "group"
            ),
            key=lambda p: (int(p), p),
        )

    # -- root facts (None when missing or malformed; the owning check reports why) ------------

    @cached_property
    def spatial_dims(self) -> int | None:
        """``spatial_dims`` when it is an integer >= 1."""
        value = self.root_attrs.get("spatial_dims")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        return None

    @cached_property
    def geometry_type(self) -> str | None:
        """``geometry_type`` when it names a registered type."""
        value = self.root_attrs.get("geometry_type")
        try:
            return parse_geometry_type(value) if isinstance(value, str) else None
        except UnknownGeometryTypeError:
            return None

    @cached_property
    def chunk_shape(self) -> tuple[float, ...] | None:
        """``chunk_shape`` when it is a list of finite numbers."""
        return numbers(self.root_attrs.get("chunk_shape"))

    @cached_property
    def base_bin_shape(self) -> tuple[float, ...] | None:
        """``base_bin_shape`` when it is a list of finite numbers."""
        return numbers(self.root_attrs.get("base_bin_shape"))

    @cached_property
    def shapes_ok(self) -> bool:
        """True when chunk and base bin shapes are valid D-tuples of positive numbers."""
        d, c, b = self.spatial_dims, self.chunk_shape, self.base_bin_shape
        if d is None or c is None or b is None or len(c) != d or len(b) != d:
            return False
        return all(v > 0 for v in (*c, *b))

    @cached_property
    def base_bins_ok(self) -> bool:
        """True when the shapes are valid and ``base_bin_shape`` divides ``chunk_shape`` (rule 3).

        Checks that derive a level's expected bin shape from ``base_bin_shape`` skip when this is
        False: the seed rule already reported the root, and every level would repeat it.
        """
        if not self.shapes_ok or self.chunk_shape is None or self.base_bin_shape is None:
            return False
        return all(
            divides(c, b) for c, b in zip(self.chunk_shape, self.base_bin_shape, strict=True)
        )

    @cached_property
    def chunk_grid(self) -> ChunkGrid | None:
        """``chunk_grid`` when it parses (with ``spatial_dims`` dimensions, when that is known)."""
        value = self.root_attrs.get("chunk_grid")
        if value is None and "chunk_grid" not in self.root_attrs:
            return self._derived_grid()
        if not isinstance(value, Mapping):
            return None
        try:
            grid = ChunkGrid.from_dict(value)
        except (ZarrVectorsError, ValueError, TypeError, KeyError):
            return None
        d = self.spatial_dims
        return grid if d is None or len(grid.shape) == d else None

    def _derived_grid(self) -> ChunkGrid | None:
        """Derive the readers' grid without ``chunk_grid``: origin 0, level 0's counts' shape."""
        node, d = self.node(join(level_path(0), VERTEX_COUNTS)), self.spatial_dims
        doc = (
            None
            if node is None
            else node.docs.get(ZARR_JSON if self.zarr_format == 3 else ".zarray")
        )
        shape = doc.get("shape") if isinstance(doc, Mapping) else None
        if d is None or not isinstance(shape, list) or len(shape) != d:
            return None
        try:
            return ChunkGrid(origin=(0,) * d, shape=tuple(shape))
        except (ZarrVectorsError, ValueError, TypeError):
            return None

    @cached_property
    def bounding_box(self) -> BoundingBox | None:
        """``bounding_box`` when it parses (with ``spatial_dims`` dimensions, when known)."""
        value = self.root_attrs.get("bounding_box")
        if not isinstance(value, Mapping):
            return None
        try:
            box = BoundingBox.from_dict(value)
        except (ZarrVectorsError, ValueError, TypeError, KeyError):
            return None
        d = self.spatial_dims
        return box if d is None or box.ndim == d else None

    @cached_property
    def multiscale(self) -> Mapping[str, JSON] | None:
        """``multiscales[0]`` when ``multiscales`` is a non-empty list starting with an object."""
        ms = self.root_attrs.get("multiscales")
        if isinstance(ms, list) and ms and isinstance(ms[0], Mapping):
            return ms[0]
        return None

    @cached_property
    def datasets(self) -> list[Mapping[str, JSON]]:
        """The object entries of ``multiscales[0].datasets`` (empty when malformed)."""
        ds = (self.multiscale or {}).get("datasets")
        return [d for d in ds if isinstance(d, Mapping)] if isinstance(ds, list) else []

    @cached_property
    def dataset_by_level(self) -> dict[int, Mapping[str, JSON]]:
        """Datasets entries by their integer ``level`` (first entry wins on duplicates)."""
        out: dict[int, Mapping[str, JSON]] = {}
        for d in self.datasets:
            level = d.get("level")
            if isinstance(level, int) and not isinstance(level, bool):
                out.setdefault(level, d)
        return out


def numbers(value: object) -> tuple[float, ...] | None:
    """Return ``value`` as floats when it is a list of finite JSON numbers, else None.

    Examples
    --------
    >>> numbers([1, 2.5]), numbers([1, "2"]), numbers(3)
    ((1.0, 2.5), None, None)
    """
    if not isinstance(value, list):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    out = tuple(float(v) for v in value)
    return out if all(math.isfinite(v) for v in out) else None


def integers(value: object) -> tuple[int, ...] | None:
    """Return ``value`` as ints when it is a list of integral JSON numbers, else None.

    Examples
    --------
    >>> integers([1, 2.0]), integers([1.5])
    ((1, 2), None)
    """
    floats = numbers(value)
    if floats is None or any(f != int(f) for f in floats):
        return None
    return tuple(int(f) for f in floats)


SEED_TOLERANCE = 1e-6
"""Relative tolerance of the seed's divisibility rule 3 (times ``chunk_shape[i]``)."""


def divides(chunk: float, bin_: float) -> bool:
    """Return whether ``chunk % bin_ == 0`` within ``1e-6 × chunk`` (seed rule 3).

    Both values must be positive.  A remainder just below ``bin_`` is float rounding of an exact
    multiple, so it counts as zero too.

    Examples
    --------
    >>> divides(200.0, 50.0), divides(0.3, 0.1), divides(200.0, 30.0)
    (True, True, False)
    """
    remainder = chunk % bin_
    tolerance = SEED_TOLERANCE * chunk
    return remainder <= tolerance or bin_ - remainder <= tolerance
