"""L2 checks of ``multiscales`` datasets and of the level groups (FORMAT.md §4, §5, §6).

* ``L2.multiscales.dataset`` — a datasets entry does not parse (level, bin_ratio, bin_shape,
  object_sparsity) or has the wrong dimensionality.
* ``L2.multiscales.path`` — ``path`` is not ``str(level)``.
* ``L2.multiscales.order`` — entries are not listed ascending by level, or a level repeats.
* ``L2.multiscales.bin_shape`` — ``bin_shape`` is not ``base_bin_shape × bin_ratio``.
* ``L2.multiscales.transform`` (warning) — ``scale`` is not ``bin_ratio`` or ``translation``
  not ``bin_shape / 2``.
* ``L2.multiscales.unlisted_level`` — a level group exists that ``multiscales`` does not list.
* ``L2.level.number`` / ``L2.level.bin_ratio`` / ``L2.level.bin_shape`` /
  ``L2.level.bin_divides`` / ``L2.level.object_sparsity`` / ``L2.level.attrs`` — level-group
  attributes agree with the group name, the datasets entry, ``base_bin_shape`` and
  ``chunk_shape``, and parse as :class:`~zarr_vectors.spec.metadata.LevelMetadata`.
* ``L2.attributes.name`` / ``L2.attributes.levels`` — attribute arrays have identifier names and
  every level holds the same set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import DatasetMetadata, LevelMetadata
from zarr_vectors.validate._context import ValidationContext, divides, integers, numbers
from zarr_vectors.validate._scan import JSON

__all__ = ["check_attribute_names", "check_datasets", "check_level_attrs"]


def _close(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=1e-9) for x, y in zip(a, b, strict=True)
    )


def _fmt(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _expected_bin_shape(ctx: ValidationContext, ratio: Sequence[int]) -> tuple[float, ...] | None:
    base = ctx.base_bin_shape
    if not ctx.base_bins_ok or base is None or len(ratio) != len(base):
        return None
    return tuple(b * r for b, r in zip(base, ratio, strict=True))


# ---------------------------------------------------------------------------------------------
# multiscales datasets


def check_datasets(ctx: ValidationContext) -> None:
    """Check every ``multiscales[0].datasets`` entry and that every level group is listed."""
    raw = (ctx.multiscale or {}).get("datasets")
    if not ctx.root_is_group or not isinstance(raw, list):
        return
    levels: list[int] = []
    for i, entry in enumerate(raw):
        where = f"multiscales[0].datasets[{i}]"
        parsed = _parse_dataset(ctx, entry, where)
        if parsed is None:
            continue
        levels.append(parsed.level)
        path = entry.get("path")
        if isinstance(path, str) and path != parsed.path:
            ctx.error(
                "L2.multiscales.path",
                "",
                f"{where}.path is {path!r}, must be str(level) = {parsed.path!r}",
            )
        _check_dataset_shapes(ctx, parsed, entry, where)
    if levels != sorted(set(levels)):
        ctx.error(
            "L2.multiscales.order",
            "",
            f"datasets must be listed ascending by level without repeats, got {levels}",
        )
    listed = {str(lv) for lv in ctx.dataset_by_level}  # parsed or not: listed is listed
    for path in ctx.level_paths:
        if path not in listed:
            ctx.error(
                "L2.multiscales.unlisted_level",
                path,
                f"level group {path!r} is not listed in multiscales[0].datasets; rebuild the "
                "block with write_multiscale_metadata(root)",
            )


def _parse_dataset(ctx: ValidationContext, entry: JSON, where: str) -> DatasetMetadata | None:
    if not isinstance(entry, Mapping):
        ctx.error("L2.multiscales.dataset", "", f"{where} must be an object, got {entry!r}")
        return None
    missing = [k for k in ("level", "bin_ratio", "bin_shape", "object_sparsity") if k not in entry]
    if missing:
        ctx.error("L2.multiscales.dataset", "", f"{where} lacks {', '.join(missing)}")
        return None
    if "path" not in entry:
        return None  # L2.seed.5 reports it (the reader refuses such an entry too)
    try:  # the reader's parser (path is checked separately, as L2.multiscales.path)
        parsed = DatasetMetadata.from_dict({**entry, "path": str(entry["level"])})
    except (ZarrVectorsError, ValueError, TypeError, KeyError) as exc:
        ctx.error("L2.multiscales.dataset", "", f"{where}: {exc}")
        return None
    d = ctx.spatial_dims
    if d is not None and len(parsed.bin_ratio) != d:
        ctx.error(
            "L2.multiscales.dataset",
            "",
            f"{where}.bin_ratio has {len(parsed.bin_ratio)} values, spatial_dims is {d}",
        )
        return None
    return parsed


def _check_dataset_shapes(
    ctx: ValidationContext, ds: DatasetMetadata, entry: Mapping[str, JSON], where: str
) -> None:
    expected = _expected_bin_shape(ctx, ds.bin_ratio)
    if expected is not None and not _close(ds.bin_shape, expected):
        ctx.error(
            "L2.multiscales.bin_shape",
            "",
            f"{where}.bin_shape is {_fmt(ds.bin_shape)}, must be base_bin_shape × bin_ratio = "
            f"{_fmt(expected)}",
        )
    transforms = entry.get("coordinateTransformations")
    by_type: dict[str, JSON] = {}
    if isinstance(transforms, list):
        by_type = {str(t.get("type")): t for t in transforms if isinstance(t, Mapping)}
    scale = numbers(by_type.get("scale", {}).get("scale"))
    translation = numbers(by_type.get("translation", {}).get("translation"))
    want_scale = [float(r) for r in ds.bin_ratio]
    want_translation = [b / 2 for b in ds.bin_shape]
    # warnings: readers never apply the transforms (FORMAT.md §4) and read such a store
    if scale is None or not _close(scale, want_scale):
        ctx.warning(
            "L2.multiscales.transform",
            "",
            f"{where} scale transform must be bin_ratio {_fmt(want_scale)}, got "
            f"{by_type.get('scale', {}).get('scale')!r}",
        )
    if translation is None or not _close(translation, want_translation):
        ctx.warning(
            "L2.multiscales.transform",
            "",
            f"{where} translation transform must be bin_shape / 2 = "
            f"{_fmt(want_translation)}, got "
            f"{by_type.get('translation', {}).get('translation')!r}",
        )


# ---------------------------------------------------------------------------------------------
# level groups


def check_level_attrs(ctx: ValidationContext) -> None:
    """Check each level group's attributes against its name, ``multiscales`` and the root."""
    for path in ctx.level_paths:
        attrs = ctx.attrs(path)
        if attrs is None:
            continue  # malformed document: reported by L1
        before = len(ctx.findings)
        _check_level_number(ctx, path, attrs)
        ratio = _check_level_ratio(ctx, path, attrs)
        _check_level_bins(ctx, path, attrs, ratio)
        _check_level_sparsity(ctx, path, attrs)
        if len(ctx.findings) > before:
            continue  # the parse below would repeat what was just reported
        try:
            LevelMetadata.from_dict(attrs)
        except (ZarrVectorsError, ValueError, TypeError, KeyError) as exc:
            ctx.error("L2.level.attrs", path, f"level attributes do not parse: {exc}")


def _check_level_number(ctx: ValidationContext, path: str, attrs: Mapping[str, JSON]) -> None:
    level = attrs.get("level")
    if isinstance(level, bool) or not isinstance(level, int) or str(level) != path:
        ctx.error(
            "L2.level.number",
            path,
            f"level attribute is {level!r}, must be the integer {int(path)} "
            f"matching the group name {path!r}",
        )


def _check_level_ratio(
    ctx: ValidationContext, path: str, attrs: Mapping[str, JSON]
) -> tuple[int, ...] | None:
    raw, d = attrs.get("bin_ratio"), ctx.spatial_dims
    ratio = integers(raw)
    if ratio is None or any(r < 1 for r in ratio) or (d is not None and len(ratio) != d):
        ctx.error(
            "L2.level.bin_ratio",
            path,
            f"bin_ratio must be a list of spatial_dims integers >= 1, got {raw!r}",
        )
        return None
    entry = ctx.dataset_by_level.get(int(path), {})
    listed = integers(entry.get("bin_ratio"))
    if listed is not None and listed != ratio:
        ctx.error(
            "L2.level.bin_ratio",
            path,
            f"bin_ratio {list(ratio)} differs from multiscales datasets entry {list(listed)}",
        )
    return ratio


def _check_level_bins(
    ctx: ValidationContext, path: str, attrs: Mapping[str, JSON], ratio: tuple[int, ...] | None
) -> None:
    raw, d = attrs.get("bin_shape"), ctx.spatial_dims
    shape = numbers(raw)
    if shape is None or any(b <= 0 for b in shape) or (d is not None and len(shape) != d):
        ctx.error(
            "L2.level.bin_shape",
            path,
            f"bin_shape must be a list of spatial_dims positive numbers, got {raw!r}",
        )
        return
    expected = None if ratio is None else _expected_bin_shape(ctx, ratio)
    if expected is not None and not _close(shape, expected):
        ctx.error(
            "L2.level.bin_shape",
            path,
            f"bin_shape {_fmt(shape)} must be base_bin_shape × bin_ratio = {_fmt(expected)}",
        )
    listed = numbers(ctx.dataset_by_level.get(int(path), {}).get("bin_shape"))
    if listed is not None and not _close(listed, shape):
        ctx.error(
            "L2.level.bin_shape",
            path,
            f"bin_shape {_fmt(shape)} differs from multiscales datasets entry {_fmt(listed)}",
        )
    chunk = ctx.chunk_shape
    if chunk is None or not ctx.shapes_ok or len(chunk) != len(shape):
        return
    bad = [i for i, (c, b) in enumerate(zip(chunk, shape, strict=True)) if not divides(c, b)]
    if bad:
        ctx.error(
            "L2.level.bin_divides",
            path,
            f"bin_shape {_fmt(shape)} does not evenly divide chunk_shape {_fmt(chunk)} "
            f"on axes {bad}",
        )


def _check_level_sparsity(ctx: ValidationContext, path: str, attrs: Mapping[str, JSON]) -> None:
    value = attrs.get("object_sparsity", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        ctx.error(
            "L2.level.object_sparsity",
            path,
            f"object_sparsity must be a number in [0, 1], got {value!r}",
        )
        return
    listed = ctx.dataset_by_level.get(int(path), {}).get("object_sparsity")
    if isinstance(listed, int | float) and not math.isclose(listed, value, rel_tol=1e-9):
        ctx.error(
            "L2.level.object_sparsity",
            path,
            f"object_sparsity {value} differs from multiscales datasets entry {listed}",
        )


# ---------------------------------------------------------------------------------------------
# attribute arrays


_NAMED_PREFIXES = (
    L.ATTRIBUTES,
    L.LINK_ATTRIBUTES,
    L.CROSS_CHUNK_LINK_ATTRIBUTES,
    L.OBJECT_ATTRIBUTES,
    L.GROUPINGS_ATTRIBUTES,
)
_SAME_AT_EVERY_LEVEL = (L.ATTRIBUTES, L.OBJECT_ATTRIBUTES)


def check_attribute_names(ctx: ValidationContext) -> None:
    """Check attribute array names are identifiers and each level holds the same set."""
    names: dict[str, dict[str, set[str]]] = {p: {} for p in _SAME_AT_EVERY_LEVEL}
    for level in ctx.level_paths:
        for prefix in _SAME_AT_EVERY_LEVEL:
            names[prefix][level] = set()
    for info in ctx.arrays.values():
        level, _, rel = info.path.partition("/")
        prefix, _, name = rel.rpartition("/")
        if prefix not in _NAMED_PREFIXES:
            continue
        if not name.isidentifier():
            ctx.error(
                "L2.attributes.name",
                info.path,
                f"attribute name {name!r} is not an identifier (letters, digits, "
                "underscore; not starting with a digit)",
            )
        if prefix in names and level in names[prefix]:
            names[prefix][level].add(name)
    for prefix, by_level in names.items():
        if len(by_level) < 2:
            continue
        first, *rest = by_level
        for level in rest:
            missing = sorted(by_level[first] - by_level[level])
            extra = sorted(by_level[level] - by_level[first])
            if missing or extra:
                ctx.error(
                    "L2.attributes.levels",
                    level,
                    f"{prefix} differ from level {first}: missing {missing}, extra {extra}; "
                    "every level must hold the same attribute names",
                )
