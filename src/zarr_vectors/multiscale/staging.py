"""Coarse levels are built aside and swapped in, so a failed or killed rebuild keeps the old ones.

New levels are written into a hidden group of the root, ``.zv-staging-HOST-PID-RANDOM/<N>``.
When every level is complete they replace the old level groups: on a local directory by
renaming (old level ``N`` to ``.zv-old-HOST-PID-RANDOM-N``, the staged one to ``N``, then the old
one removed); on other stores by copying the staged keys over.  Root ``multiscales`` is
rewritten last.  Hidden groups left by a killed build are removed by the next build and named
by ``validate`` until then (docs/spec.md §13).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import zarr
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.storage import LocalStore

from zarr_vectors.core.placement import OLD, STAGING, abandoned_name, run_tag
from zarr_vectors.core.zarr_adapter import sync
from zarr_vectors.spec import layout as L

__all__ = ["begin_staging", "drop_staging", "hidden_leftovers", "swap_levels"]


def _prefix(root: zarr.Group, name: str) -> str:
    return f"{root.path}/{name}" if root.path else name


def _local_base(root: zarr.Group) -> Path | None:
    store = root.store_path.store
    if not isinstance(store, LocalStore):
        return None
    return Path(store.root) / root.path if root.path else Path(store.root)


def hidden_leftovers(root: zarr.Group) -> list[str]:
    """Names of staging and old-level members of ``root`` (work of a build, or its leftovers)."""
    store = root.store_path.store

    async def names() -> list[str]:
        return [n async for n in store.list_dir(root.path)]

    return sorted(n for n in sync(names()) if n.startswith((STAGING, OLD)))


def begin_staging(root: zarr.Group) -> zarr.Group:
    """Remove hidden groups of killed builds, then create this build's staging group."""
    for name in hidden_leftovers(root):
        if abandoned_name(name):
            _delete(root, name)
    return root.create_group(f"{STAGING}{run_tag()}")


def drop_staging(root: zarr.Group, stage: zarr.Group) -> None:
    """Remove the staging group of a failed build."""
    _delete(root, stage.basename)


def swap_levels(root: zarr.Group, stage: zarr.Group, new: list[int], old: list[int]) -> None:
    """Replace the old coarse levels ``old`` by the staged levels ``new``."""
    base = _local_base(root)
    if base is not None:
        _swap_local(base, base / stage.basename, new, old)
        return
    store = root.store_path.store
    for lv in sorted(set(old) | set(new)):
        sync(store.delete_dir(_prefix(root, L.level_path(lv))))
    for lv in new:
        _copy_prefix(
            store,
            _prefix(root, f"{stage.basename}/{L.level_path(lv)}"),
            _prefix(root, L.level_path(lv)),
        )
    _delete(root, stage.basename)


def _swap_local(base: Path, staged: Path, new: list[int], old: list[int]) -> None:
    trash = base / f"{OLD}{run_tag()}"
    trash.mkdir()
    for lv in sorted(set(old) | set(new)):
        final = base / L.level_path(lv)
        if final.exists() or final.is_symlink():  # a symbolic link is moved, never followed
            os.rename(final, trash / final.name)
        if lv in new:
            os.rename(staged / L.level_path(lv), final)
    _remove_tree(trash)
    _remove_tree(staged)


def _remove_tree(path: Path) -> None:
    """Remove a directory tree without following symbolic links out of it."""
    if path.is_symlink():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _copy_prefix(store: Store, src: str, dst: str) -> None:
    proto = default_buffer_prototype()

    async def copy() -> None:
        async for key in store.list_prefix(src + "/"):
            buf = await store.get(key, proto)
            if buf is not None:
                await store.set(dst + key[len(src) :], buf)

    sync(copy())


def _delete(root: zarr.Group, name: str) -> None:
    base = _local_base(root)
    if base is not None:
        _remove_tree(base / name)
        return
    sync(root.store_path.store.delete_dir(_prefix(root, name)))
