"""L1 warnings for the temporary files of writes that did not finish (docs/spec.md §13).

* ``L1.leftover.staging`` (warning) — a staging or old-swap directory of a killed write: next to
  a local store (``.NAME.zv-staging-*``, ``.NAME.zv-old-*``) or inside the root (a pyramid
  rebuild's ``.zv-staging-*``/``.zv-old-*``).  The next write to the same store removes it.
"""

from __future__ import annotations

from pathlib import Path

from zarr.storage import LocalStore

from zarr_vectors.core.placement import OLD, STAGING, leftovers
from zarr_vectors.validate._context import ValidationContext

__all__ = ["check_leftovers"]


def check_leftovers(ctx: ValidationContext) -> None:
    """Name staging and old-swap directories left by interrupted writes."""
    inside = sorted(
        {path.split("/", 1)[0] for path in ctx.scan.nodes if path.startswith((STAGING, OLD))}
    )
    for name in inside:
        ctx.warning(
            "L1.leftover.staging",
            name,
            f"{name!r} is the temporary group of a pyramid build that did not finish (or is "
            "still running); the next build_pyramid on this store removes it",
        )
    store = ctx.store_path.store
    if not isinstance(store, LocalStore):
        return
    base = Path(store.root) / ctx.store_path.path if ctx.store_path.path else Path(store.root)
    for path in leftovers(base):
        ctx.warning(
            "L1.leftover.staging",
            "",
            f"{path} is the staging or old-swap directory of a write that did not finish (or "
            "is still running); the next write to this store removes it",
        )
