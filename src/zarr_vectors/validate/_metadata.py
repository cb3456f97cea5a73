"""L2 checks of the root metadata: the seed's rules 1–7 and the other root keys (FORMAT.md §3, §4).

Seed rules, verbatim ids:

* ``L2.seed.1`` — ``geometry_type`` is one of the seven constants.
* ``L2.seed.2`` — ``len(base_bin_shape) == spatial_dims`` and ``len(chunk_shape) == spatial_dims``.
* ``L2.seed.3`` — ``chunk_shape[i] % base_bin_shape[i] == 0`` within ``1e-6 × chunk_shape[i]``.
* ``L2.seed.4`` — every element of ``base_bin_shape`` and ``chunk_shape`` is strictly positive.
* ``L2.seed.5`` — ``multiscales`` is a non-empty list; each entry's path exists as a group.
* ``L2.seed.6`` — level 0 is in ``multiscales`` with ``bin_ratio == [1, …, 1]``.
* ``L2.seed.7`` — ``bin_ratio`` is non-decreasing (per axis) from level to level.

Other root checks: ``L2.root.version`` (warning: unknown ``zarr_vectors_version``),
``L2.root.chunk_grid``, ``L2.root.bounding_box``, ``L2.root.bbox_outside_grid``,
``L2.root.optional_key``, ``L2.multiscales.structure``, ``L2.multiscales.axes``,
``L2.multiscales.type`` and ``L2.multiscales.version`` (warning).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.spec.metadata import (
    CONVENTIONS_KEY,
    FORMAT_VERSION,
    MULTISCALE_TYPE,
    MULTISCALE_VERSION,
    BoundingBox,
    ChunkGrid,
    parse_type_keys,
)
from zarr_vectors.spec.typespec import registered_type_names, type_spec
from zarr_vectors.validate._context import SEED_TOLERANCE, ValidationContext, divides, integers
from zarr_vectors.validate._scan import JSON, join

__all__ = [
    "check_multiscales_block",
    "check_root_extras",
    "check_seed_rules",
]


def check_seed_rules(ctx: ValidationContext) -> None:
    """Run the seed's L2 rules 1–7 on the root attributes."""
    if not ctx.root_is_group:
        return
    _rule_1(ctx)
    _rules_2_to_4(ctx)
    _rule_5(ctx)
    _rule_6(ctx)
    _rule_7(ctx)


def _rule_1(ctx: ValidationContext) -> None:
    value = ctx.root_attrs.get("geometry_type")
    if isinstance(value, str) and ctx.geometry_type is None:
        valid = ", ".join(repr(str(g)) for g in registered_type_names())
        ctx.error("L2.seed.1", "", f"geometry_type {value!r} is not one of {valid}")


def _rules_2_to_4(ctx: ValidationContext) -> None:
    d = ctx.spatial_dims
    attrs = ctx.root_attrs
    for key in ("base_bin_shape", "chunk_shape"):
        value = attrs.get(key)
        if d is not None and isinstance(value, list) and len(value) != d:
            ctx.error("L2.seed.2", "", f"len({key}) is {len(value)}, must equal spatial_dims={d}")
    chunk, bins = ctx.chunk_shape, ctx.base_bin_shape
    if chunk is not None and bins is not None:
        for i, (c, b) in enumerate(zip(chunk, bins, strict=False)):
            if c > 0 and b > 0 and not divides(c, b):
                ctx.error(
                    "L2.seed.3",
                    "",
                    f"base_bin_shape[{i}]={b:g} does not evenly divide chunk_shape[{i}]={c:g} "
                    f"(remainder {c % b:g}, tolerance {SEED_TOLERANCE * c:g})",
                )
    for key, values in (("base_bin_shape", bins), ("chunk_shape", chunk)):
        bad = [f"{key}[{i}]={v:g}" for i, v in enumerate(values or ()) if v <= 0]
        if bad:
            ctx.error("L2.seed.4", "", f"must be strictly positive: {', '.join(bad)}")


def _rule_5(ctx: ValidationContext) -> None:
    ms = ctx.root_attrs.get("multiscales")
    if not isinstance(ms, list):
        return  # missing or wrong type: reported by L1
    if not ms:
        ctx.error("L2.seed.5", "", "multiscales is an empty list; it must list level 0 at least")
        return
    datasets = (ctx.multiscale or {}).get("datasets")
    if isinstance(datasets, list) and not datasets:
        ctx.error("L2.seed.5", "", "multiscales[0].datasets is empty; it must list level 0")
    for i, entry in enumerate(ctx.datasets):
        path = entry.get("path")
        if not isinstance(path, str) or not path:
            ctx.error("L2.seed.5", "", f"multiscales[0].datasets[{i}] has no string 'path'")
            continue
        node = join(path)
        if node in ctx.reported or ctx.kind(node) == "group":
            continue
        ctx.reported.add(node)
        ctx.error(
            "L2.seed.5",
            node,
            f"multiscales[0].datasets[{i}].path={path!r} does not exist as a group; create "
            "the level or rebuild multiscales with write_multiscale_metadata(root)",
        )


def _rule_6(ctx: ValidationContext) -> None:
    if not ctx.datasets:
        return  # rule 5 or the multiscales block check reported it
    entry = ctx.dataset_by_level.get(0)
    if entry is None:
        ctx.error("L2.seed.6", "", "level 0 is not listed in multiscales[0].datasets")
        return
    ratio = entry.get("bin_ratio")
    d = ctx.spatial_dims or (len(ratio) if isinstance(ratio, list) else 0)
    if integers(ratio) != (1,) * d or d == 0:
        ctx.error("L2.seed.6", "", f"level 0 must have bin_ratio {[1] * d}, got {ratio!r}")


def _rule_7(ctx: ValidationContext) -> None:
    ratios = sorted(
        (level, r)
        for level, entry in ctx.dataset_by_level.items()
        if (r := integers(entry.get("bin_ratio"))) is not None
    )
    for (lo, r_lo), (hi, r_hi) in itertools.pairwise(ratios):
        if len(r_lo) == len(r_hi) and any(b < a for a, b in zip(r_lo, r_hi, strict=True)):
            ctx.error(
                "L2.seed.7",
                "",
                f"bin_ratio decreases from level {lo} {list(r_lo)} to level {hi} {list(r_hi)}; "
                "coarser levels must have bin ratios >= the previous level on every axis",
            )


# ---------------------------------------------------------------------------------------------
# other root keys


_OPTIONAL_STR = ("coordinate_system", "creation_timestamp", "source_description", "notes")


def check_root_extras(ctx: ValidationContext) -> None:
    """Check the version, chunk grid, bounding box and the types of optional root keys."""
    if not ctx.has_zvf_metadata:
        return
    attrs = ctx.root_attrs
    version = attrs.get("zarr_vectors_version")
    if isinstance(version, str) and version != FORMAT_VERSION:
        ctx.warning(
            "L2.root.version",
            "",
            f"zarr_vectors_version {version!r} is unknown (this library reads "
            f"{FORMAT_VERSION!r}); checks assume {FORMAT_VERSION!r}",
        )
    _check_grid_and_box(ctx, attrs)
    for key in _OPTIONAL_STR:
        if key in attrs and not isinstance(attrs[key], str):
            ctx.error("L2.root.optional_key", "", f"{key!r} must be a string, got {attrs[key]!r}")
    if "custom_metadata" in attrs and not isinstance(attrs["custom_metadata"], Mapping):
        ctx.error(
            "L2.root.optional_key",
            "",
            f"'custom_metadata' must be an object, got {attrs['custom_metadata']!r}",
        )
    if "draco_compressed" in attrs and not isinstance(attrs["draco_compressed"], bool):
        ctx.error(
            "L2.root.optional_key",
            "",
            f"'draco_compressed' must be true or false, got {attrs['draco_compressed']!r}",
        )
    _check_type_keys(ctx, attrs)
    conventions = attrs.get(CONVENTIONS_KEY, [])
    if not isinstance(conventions, list):
        ctx.error(
            "L2.root.optional_key",
            "",
            f"{CONVENTIONS_KEY!r} must be a list of convention objects, got {conventions!r}",
        )
    if "axis_units" in attrs and not _units_ok(attrs["axis_units"], ctx.spatial_dims):
        ctx.error(
            "L2.root.optional_key",
            "",
            "'axis_units' must be a string or a list of spatial_dims strings, got "
            f"{attrs['axis_units']!r}",
        )


def _check_type_keys(ctx: ValidationContext, attrs: Mapping[str, JSON]) -> None:
    """Type-specific keys of the store's type, checked by the reader's own parser."""
    gtype = ctx.geometry_type
    if gtype is None:
        return
    keys = type_spec(gtype).root_keys
    try:
        parse_type_keys({k: attrs[k] for k in keys if k in attrs})
    except ZarrVectorsError as exc:
        ctx.error("L2.root.optional_key", "", f"type-specific key: {exc}")


def _units_ok(value: JSON, d: int | None) -> bool:
    if isinstance(value, str):
        return True
    return (
        isinstance(value, list)
        and all(isinstance(u, str) for u in value)
        and (d is None or len(value) == d)
    )


def _check_grid_and_box(ctx: ValidationContext, attrs: Mapping[str, JSON]) -> None:
    d = ctx.spatial_dims
    if "chunk_grid" not in attrs:
        ctx.warning(
            "L2.root.chunk_grid",
            "",
            "root key 'chunk_grid' {origin, shape} is missing (recommended): readers take "
            "origin 0 and the shape of level 0's vertex_counts",
        )
    elif ctx.chunk_grid is None:
        ctx.error("L2.root.chunk_grid", "", _parse_problem(ChunkGrid, attrs["chunk_grid"], d))
    if "bounding_box" in attrs and ctx.bounding_box is None:
        ctx.error("L2.root.bounding_box", "", _parse_problem(BoundingBox, attrs["bounding_box"], d))
    grid, box, chunk = ctx.chunk_grid, ctx.bounding_box, ctx.chunk_shape
    if grid is None or box is None or chunk is None or not ctx.shapes_ok:
        return
    for name, corner in (("min", box.min), ("max", box.max)):
        coords = [math.floor(p / c) for p, c in zip(corner, chunk, strict=True)]
        outside = [
            i
            for i, (k, o, n) in enumerate(zip(coords, grid.origin, grid.shape, strict=True))
            if not o <= k < o + n
        ]
        if outside:
            ctx.error(
                "L2.root.bbox_outside_grid",
                "",
                f"bounding_box.{name} {list(corner)} lies in chunk {coords}, outside "
                f"chunk_grid (origin {list(grid.origin)}, shape {list(grid.shape)}) on axes "
                f"{outside}",
            )


def _parse_problem(cls: type[ChunkGrid | BoundingBox], value: JSON, d: int | None) -> str:
    key = "chunk_grid" if cls is ChunkGrid else "bounding_box"
    if not isinstance(value, Mapping):
        return f"{key} must be an object, got {value!r}"
    try:
        parsed = cls.from_dict(value)
    except (ZarrVectorsError, ValueError, TypeError, KeyError) as exc:
        return f"{key} is malformed: {exc}"
    dims = len(parsed.shape) if isinstance(parsed, ChunkGrid) else parsed.ndim
    return f"{key} has {dims} dimensions, spatial_dims is {d}"


# ---------------------------------------------------------------------------------------------
# multiscales block


def check_multiscales_block(ctx: ValidationContext) -> None:
    """Check the shape of the ``multiscales`` block: one object with axes, datasets and type."""
    ms = ctx.root_attrs.get("multiscales")
    if not ctx.root_is_group or not isinstance(ms, list) or not ms:
        return
    if len(ms) > 1:
        ctx.error(
            "L2.multiscales.structure",
            "",
            f"multiscales must hold exactly one object, got {len(ms)}",
        )
    block = ctx.multiscale
    if block is None:
        return  # L1 reported the element type
    if not isinstance(block.get("datasets"), list):
        ctx.error(
            "L2.multiscales.structure",
            "",
            f"multiscales[0].datasets must be a list, got {block.get('datasets')!r}",
        )
    if block.get("type") != MULTISCALE_TYPE:
        # a warning: readers do not need the key to read the store (and do not refuse it)
        ctx.warning(
            "L2.multiscales.type",
            "",
            f"multiscales[0].type should be {MULTISCALE_TYPE!r}, got {block.get('type')!r}",
        )
    for key in ("name", "version"):
        if key in block and not isinstance(block[key], str):
            ctx.error(
                "L2.multiscales.structure",
                "",
                f"multiscales[0].{key} must be a string, got {block[key]!r}",
            )
    version = block.get("version")
    if (version is None or isinstance(version, str)) and version != MULTISCALE_VERSION:
        ctx.warning(
            "L2.multiscales.version",
            "",
            f"multiscales[0].version is {block.get('version')!r}, expected {MULTISCALE_VERSION!r}",
        )
    _check_axes(ctx, block.get("axes"))


def _check_axes(ctx: ValidationContext, axes: JSON) -> None:
    d = ctx.spatial_dims
    if not isinstance(axes, list):
        ctx.error("L2.multiscales.axes", "", f"multiscales[0].axes must be a list, got {axes!r}")
        return
    if d is not None and len(axes) != d:
        ctx.error(
            "L2.multiscales.axes",
            "",
            f"multiscales[0].axes has {len(axes)} entries, spatial_dims is {d}",
        )
    for i, axis in enumerate(axes):
        problem = _axis_problem(axis)
        if problem:
            ctx.error("L2.multiscales.axes", "", f"multiscales[0].axes[{i}]: {problem}")
    names = [a.get("name") for a in axes if isinstance(a, Mapping)]
    if len(set(map(str, names))) != len(names):
        ctx.error("L2.multiscales.axes", "", f"axis names must be unique, got {names}")


def _axis_problem(axis: JSON) -> str | None:
    if not isinstance(axis, Mapping):
        return f"must be an object, got {axis!r}"
    if not isinstance(axis.get("name"), str):
        return f"'name' must be a string, got {axis.get('name')!r}"
    if axis.get("type", "space") not in ("space", "time"):
        return f"'type' must be 'space' or 'time', got {axis.get('type')!r}"
    if "unit" in axis and not isinstance(axis["unit"], str):
        return f"'unit' must be a string, got {axis['unit']!r}"
    return None
