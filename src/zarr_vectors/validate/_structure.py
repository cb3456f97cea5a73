"""L1 structure checks of the root and the hierarchy (FORMAT.md §1, §3, §5, §11; seed L1 rule).

* ``L1.json.malformed`` — a metadata document is not a readable JSON object.
* ``L1.store.no_listing`` (warning) — the store cannot list keys; only predictable nodes were read.
* ``L1.root.not_group`` — the root is missing, not a group, or zarr-python cannot open it.
* ``L1.format.mixed`` — Zarr v2 and v3 metadata documents in one store.
* ``L1.root.required_key`` / ``L1.root.key_type`` — the seed's required root keys and their types.
* ``L1.level.missing`` / ``L1.level.not_group`` — the level-0 group, and level nodes being groups.
"""

from __future__ import annotations

import zarr
from zarr.errors import BaseZarrError

from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.spec.layout import level_path
from zarr_vectors.validate._context import REQUIRED_ROOT_KEYS, ValidationContext, numbers
from zarr_vectors.validate._scan import JSON, V2_DOCS, ZARR_JSON

__all__ = [
    "check_documents",
    "check_format_mixing",
    "check_level_groups",
    "check_root_group",
    "check_root_keys",
]


def check_documents(ctx: ValidationContext) -> None:
    """Report metadata documents that cannot be read or parsed, and stores without listing."""
    for bad in ctx.scan.bad:
        ctx.reported.add(bad.path)
        ctx.error("L1.json.malformed", bad.path, f"{bad.name} {bad.reason}")
    for node in ctx.scan.nodes.values():
        if node.docs and node.attrs(ctx.zarr_format) is None:
            where = ".zattrs" if ctx.zarr_format == 2 else "zarr.json 'attributes'"
            ctx.error("L1.json.malformed", node.path, f"{where} is not a JSON object")
    if not ctx.scan.listing:
        ctx.warning(
            "L1.store.no_listing",
            "",
            "the store cannot list its keys: only nodes the layout predicts were checked "
            "(named attribute arrays and unlisted levels were not)",
        )


def check_root_group(ctx: ValidationContext) -> None:
    """Check that the root is a Zarr group that zarr-python can open."""
    root = ctx.node("")
    if root is None or ctx.zarr_format is None:
        ctx.error(
            "L1.root.not_group",
            "",
            "no Zarr group metadata at the root (zarr.json for Zarr v3, .zgroup for v2); "
            "this is not a Zarr store",
        )
        return
    kind = root.kind(ctx.zarr_format)
    if kind is None and "" in ctx.reported:
        return  # its metadata document is malformed, reported by check_documents
    if kind != "group":
        doc = ZARR_JSON if ctx.zarr_format == 3 else ".zgroup"
        what = "a Zarr array" if kind == "array" else f"not a valid group ({doc} missing or bad)"
        ctx.error("L1.root.not_group", "", f"the root is {what}; a ZVF store root is a group")
        return
    try:
        with quiet_vlen():
            zarr.open_group(ctx.store_path, mode="r", zarr_format=ctx.zarr_format)
    except (BaseZarrError, ValueError, TypeError, KeyError) as exc:
        ctx.error("L1.root.not_group", "", f"zarr-python cannot open the root group: {exc}")


def check_format_mixing(ctx: ValidationContext) -> None:
    """Report nodes carrying metadata documents of the other Zarr format."""
    fmt = ctx.zarr_format
    if fmt is None:
        return
    for path, node in sorted(ctx.scan.nodes.items()):
        foreign = (
            sorted(node.present & set(V2_DOCS)) if fmt == 3 else sorted(node.present & {ZARR_JSON})
        )
        if foreign:
            other = 2 if fmt == 3 else 3
            ctx.error(
                "L1.format.mixed",
                path,
                f"Zarr v{other} document(s) {', '.join(foreign)} in a Zarr v{fmt} store; "
                f"delete them or convert the store to one format",
            )


_KEY_TYPES = {
    "zarr_vectors_version": "a string",
    "geometry_type": "a string",
    "spatial_dims": "a positive integer",
    "base_bin_shape": "a list of finite numbers",
    "chunk_shape": "a list of finite numbers",
    "multiscales": "a list of objects",
}


def _type_ok(key: str, value: JSON) -> bool:
    if key in ("zarr_vectors_version", "geometry_type"):
        return isinstance(value, str)
    if key == "spatial_dims":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if key in ("base_bin_shape", "chunk_shape"):
        return numbers(value) is not None
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def check_root_keys(ctx: ValidationContext) -> None:
    """Check the seed's required root keys are present with the right JSON types (seed L1)."""
    if not ctx.root_is_group:
        return
    attrs = ctx.root_attrs
    missing = [k for k in REQUIRED_ROOT_KEYS if k not in attrs]
    if len(missing) == len(REQUIRED_ROOT_KEYS):
        ctx.error(
            "L1.root.required_key",
            "",
            "the root group has no ZVF metadata (required keys "
            f"{', '.join(missing)} missing): not a zarr-vectors store, or a write that did "
            "not finish",
        )
        return
    for key in missing:
        ctx.error("L1.root.required_key", "", f"required root key {key!r} is missing")
    for key in REQUIRED_ROOT_KEYS:
        if key in attrs and not _type_ok(key, attrs[key]):
            ctx.error(
                "L1.root.key_type",
                "",
                f"root key {key!r} must be {_KEY_TYPES[key]}, got {attrs[key]!r}",
            )


def check_level_groups(ctx: ValidationContext) -> None:
    """Check level 0 exists and that every level node (a root child named N) is a group."""
    if not ctx.has_zvf_metadata:
        return
    for path, node in sorted(ctx.scan.nodes.items()):
        if "/" in path or not path.isdigit():
            continue
        kind = node.kind(ctx.zarr_format)
        if kind is None and path in ctx.reported:
            continue  # malformed metadata document, already reported
        if kind != "group":
            ctx.reported.add(path)
            ctx.error(
                "L1.level.not_group",
                path,
                f"level node {path!r} is {'an array' if kind == 'array' else 'not a group'}; "
                "resolution levels are groups",
            )
    zero = level_path(0)
    if ctx.node(zero) is None:
        ctx.reported.add(zero)
        ctx.error(
            "L1.level.missing",
            zero,
            "the level-0 group '0' (full-resolution data) is missing",
        )
