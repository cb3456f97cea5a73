"""Checks of append segments (docs/spec.md, "Append segments").

* ``L1.level.segments`` — the level's ``segments`` attribute is not a list of ascending
  non-negative integers (error), or a listed segment group is missing (error).
* ``L1.level.segment_unlisted`` (warning) — a ``segments/<n>`` group the level does not list:
  readers ignore it.
* ``L2.level.segments`` (warning) — the level merges append segments: readers without the
  extension refuse its payloads (their rows disagree with ``vertex_counts``); ``compact`` folds
  them into the base arrays.

Segment arrays are checked like the base arrays of the same name (L1, L2), and the L3 and L4
checks read every per-chunk array merged with its segments.
"""

from __future__ import annotations

from zarr_vectors.core.segments import SEGMENTS, listed_segments
from zarr_vectors.errors import MetadataValidationError
from zarr_vectors.spec.layout import ArraySpec
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._scan import join

__all__ = ["level_segments", "segment_node", "check_segments"]


def level_segments(ctx: ValidationContext, level: str) -> tuple[int, ...]:
    """Return the segments level ``level`` lists (empty when none or malformed)."""
    try:
        return listed_segments(ctx.attrs(level) or {}, level)
    except MetadataValidationError:
        return ()


def segment_node(
    ctx: ValidationContext, level: str, rel: str, kind: str, inner_spec: ArraySpec | None
) -> ArraySpec | bool:
    """Classify node ``rel`` (inside ``level``) under ``segments/``.

    Returns the layout row of a listed segment's array (``inner_spec``), True for a container
    group (nothing to report) and False after reporting an unlisted or unknown node.
    """
    parts = rel.split("/", 2)
    if len(parts) == 1:
        return True
    listed = level_segments(ctx, level)
    number = parts[1]
    if not number.isdigit() or int(number) not in listed:
        if len(parts) == 2:
            ctx.warning(
                "L1.level.segment_unlisted",
                join(level, rel),
                f"group {rel!r} is not listed in the level's 'segments' attribute; readers "
                "ignore it",
            )
        return False
    if len(parts) == 2:
        return True
    if inner_spec is not None and inner_spec.per_chunk:
        return inner_spec
    return kind == "group"


def check_segments(ctx: ValidationContext) -> None:
    """Report malformed or missing segment lists and warn about levels with segments."""
    for level in ctx.level_paths:
        attrs = ctx.attrs(level) or {}
        try:
            listed = listed_segments(attrs, level)
        except MetadataValidationError as exc:
            ctx.error("L1.level.segments", level, str(exc))
            continue
        if not listed:
            continue
        for n in listed:
            if ctx.attrs(join(level, f"{SEGMENTS}/{n}")) is None:
                ctx.error(
                    "L1.level.segments",
                    join(level, f"{SEGMENTS}/{n}"),
                    f"level {level} lists append segment {n}, whose group is missing",
                )
        ctx.warning(
            "L2.level.segments",
            level,
            f"level {level} merges {len(listed)} append segment(s) {list(listed)}: readers "
            "without the append-segment extension refuse its payloads (their rows disagree "
            "with vertex_counts); `zarr-vectors compact` folds them into the base arrays",
        )
