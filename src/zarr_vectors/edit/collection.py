"""Collections: several ZVF stores (any geometry types) as children of one Zarr group.

A collection is a local Zarr group whose attribute ``zarr_vectors_collection`` lists its
children: ``{"version": "1.0", "children": {name: {"geometry_type": ...}}}``.  Each child is a
complete ZVF store (its own root metadata) in the sub-directory ``name``, written and read with
the ordinary functions: ``zv.write_meshes(coll.child("cells"), ...)``, then
:meth:`Collection.refresh` lists it.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zarr

from zarr_vectors.core.store import (
    list_resolution_levels,
    open_store,
    read_level_metadata,
    read_root_metadata,
)
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT, store_lock
from zarr_vectors.errors import (
    InvalidInputError,
    MetadataValidationError,
    StoreExistsError,
    StoreNotFoundError,
)
from zarr_vectors.validate import ValidationReport, validate
from zarr_vectors.validate._collection import COLLECTION_KEY

__all__ = [
    "COLLECTION_KEY",
    "ChildSummary",
    "Collection",
    "CollectionMode",
    "is_collection",
    "open_collection",
]

VERSION = "1.0"


@dataclass(frozen=True)
class ChildSummary:
    """One child of a collection, as ``zarr-vectors info`` shows it."""

    name: str
    geometry_type: str
    """As stored in the child's root metadata (the listing's type if the child is unreadable)."""
    vertex_count: int | None
    """Level-0 vertices (None: the child cannot be read)."""
    object_count: int | None
    """Level-0 objects (None: the child cannot be read)."""
    levels: int | None
    """Resolution levels present."""
    problem: str | None = None
    """Why the child could not be read, if it could not."""


def _child_summary(name: str, listed: str, path: Path) -> ChildSummary:
    try:
        root = open_store(str(path))
        meta = read_root_metadata(root)
        level0 = read_level_metadata(root, 0)
        levels = len(list_resolution_levels(root))
    except (StoreNotFoundError, MetadataValidationError) as exc:
        return ChildSummary(name, listed, None, None, None, str(exc))
    return ChildSummary(
        name, str(meta.geometry_type), level0.vertex_count, level0.object_count, levels
    )


class CollectionMode(enum.StrEnum):
    """How :func:`open_collection` opens a collection."""

    READ = "r"
    APPEND = "a"
    CREATE = "w-"


@dataclass(frozen=True)
class Collection:
    """A collection of ZVF stores at a local directory."""

    path: Path

    def _group(self, read_only: bool = True) -> zarr.Group:
        return zarr.open_group(str(self.path), mode="r" if read_only else "r+")

    def children(self) -> dict[str, str]:
        """Return ``{child name: geometry type}`` as listed in the collection's attributes."""
        listing = self._group().attrs.get(COLLECTION_KEY, {})
        kids: Mapping[str, Any] = listing.get("children", {}) if isinstance(listing, dict) else {}
        return {str(k): str(v["geometry_type"]) for k, v in sorted(kids.items())}

    def child(self, name: str) -> str:
        """Return the path of child ``name`` (for ``write_*`` / ``read_*``)."""
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidInputError(f"child name {name!r} must be an identifier")
        return os.fspath(self.path / name)

    def refresh(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
        """List every child store found in the directory (under the collection's lock)."""
        with store_lock(self.path, None, timeout):
            found: dict[str, dict[str, str]] = {}
            for sub in sorted(p for p in self.path.iterdir() if p.is_dir()):
                if sub.name.startswith(".") or not (sub / "zarr.json").exists():
                    continue
                try:
                    meta = read_root_metadata(open_store(str(sub)))
                except StoreNotFoundError:
                    continue  # an unfinished child write: not listed until it completes
                found[sub.name] = {"geometry_type": str(meta.geometry_type)}
            self._group(read_only=False).attrs[COLLECTION_KEY] = {
                "version": VERSION,
                "children": found,
            }
        return self.children()

    def validate(self) -> dict[str, ValidationReport]:
        """Validate every listed child."""
        return {name: validate(self.child(name)) for name in self.children()}

    def summary(self) -> list[ChildSummary]:
        """Return each listed child's geometry type and level-0 counts, by name."""
        return [
            _child_summary(name, listed, self.path / name)
            for name, listed in self.children().items()
        ]


def is_collection(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a local directory holding a collection (not a ZVF store)."""
    where = Path(path)
    if "://" in os.fspath(path) or not (where / "zarr.json").is_file():
        return False
    try:
        attrs = zarr.open_group(str(where), mode="r").attrs
    except (ValueError, KeyError, OSError):
        return False
    return COLLECTION_KEY in attrs and "zarr_vectors_version" not in attrs


def open_collection(path: str | os.PathLike[str], mode: CollectionMode | str = "r") -> Collection:
    """Open (or with ``"a"`` / ``"w-"`` create) the collection at local directory ``path``.

    Raises
    ------
    StoreNotFoundError
        ``"r"``: nothing there, or a group that is not a collection.
    StoreExistsError
        ``"w-"``: something is already there; ``"a"``: a ZVF store (not a collection) is.

    Examples
    --------
    >>> import tempfile, numpy as np, zarr_vectors as zv
    >>> coll = zv.open_collection(tempfile.mkdtemp() + "/scene.zarrvectors", "a")
    >>> _ = zv.write_points(coll.child("cells"), np.zeros((2, 3)), chunk_shape=(8, 8, 8))
    >>> coll.refresh()
    {'cells': 'point_cloud'}
    """
    how = CollectionMode(mode)
    where = Path(path)
    exists = (where / "zarr.json").exists() or (where / ".zgroup").exists()
    if how is CollectionMode.CREATE and where.exists() and any(where.iterdir()):
        raise StoreExistsError(f"{where} already holds data")
    if exists:
        attrs = zarr.open_group(str(where), mode="r").attrs
        if COLLECTION_KEY not in attrs:
            if "zarr_vectors_version" in attrs:
                raise StoreExistsError(f"{where} is a ZVF store, not a collection")
            raise StoreNotFoundError(f"{where} is a Zarr group without a collection listing")
        return Collection(where)
    if how is CollectionMode.READ:
        raise StoreNotFoundError(f"no collection at {where}")
    group = zarr.open_group(str(where), mode="w-")
    group.attrs[COLLECTION_KEY] = {"version": VERSION, "children": {}}
    return Collection(where)
