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

from zarr_vectors.core.store import open_store, read_root_metadata
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT, store_lock
from zarr_vectors.errors import InvalidInputError, StoreExistsError, StoreNotFoundError
from zarr_vectors.validate import ValidationReport, validate

__all__ = ["COLLECTION_KEY", "Collection", "CollectionMode", "open_collection"]

COLLECTION_KEY = "zarr_vectors_collection"
VERSION = "1.0"


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
