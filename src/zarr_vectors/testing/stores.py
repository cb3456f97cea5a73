"""Fresh stores of every kind a user can hand to ``write_*``, for round-trip tests.

Kinds: ``memory`` (``MemoryStore``), ``local`` (``LocalStore`` of a directory), ``zip`` (an open
``ZipStore``), ``local_path`` (a directory path string) and ``zip_path`` (a ``.zip`` path
string).  A ``ZipStore`` handed in by the user stays open after a write; read it back through
:meth:`StoreFactory.for_reading`, which closes the writer and reopens the file read-only.

Examples
--------
>>> import tempfile, numpy as np, zarr_vectors as zv
>>> factory = StoreFactory("local", Path(tempfile.mkdtemp()))
>>> store = factory()
>>> _ = zv.write_points(store, np.zeros((1, 2)), chunk_shape=(1.0, 1.0))
>>> len(zv.read_points(factory.for_reading(store)))
1
>>> factory.close()
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from zarr.storage import LocalStore, MemoryStore, ZipStore

__all__ = ["STORE_KINDS", "ZIP_DUPLICATE_NAMES", "StoreFactory", "open_zip"]

STORE_KINDS: tuple[str, ...] = ("memory", "local", "zip", "local_path", "zip_path")
"""Every store kind :class:`StoreFactory` makes."""

ZIP_DUPLICATE_NAMES = "ignore:Duplicate name:UserWarning"
"""pytest ``filterwarnings`` entry for zip stores: zip entries cannot be replaced, so when a
metadata document is rewritten ``zipfile`` appends a second entry and warns (readers see the
newest entry)."""


def open_zip(path: Path, mode: Literal["r", "w", "a"]) -> ZipStore:
    """Return an opened ``ZipStore`` (``ZipStore(...)`` alone is opened lazily by zarr)."""
    return asyncio.run(ZipStore.open(path, mode=mode))


@dataclass
class StoreFactory:
    """Make fresh, empty stores of one kind in numbered directories under ``root``."""

    kind: str
    """One of :data:`STORE_KINDS`."""
    root: Path
    """Directory holding the stores (a pytest ``tmp_path``)."""
    _zips: list[ZipStore] = field(default_factory=list)
    _count: int = 0

    def __call__(self) -> Any:
        """Return a new, empty store of this factory's kind."""
        self._count += 1
        base = self.root / f"{self._count:04d}"
        base.mkdir(parents=True)
        if self.kind == "memory":
            return MemoryStore()
        if self.kind == "local":
            return LocalStore(base / "s.zarrvectors")
        if self.kind == "zip":
            store = open_zip(base / "s.zip", "w")
            self._zips.append(store)
            return store
        if self.kind == "local_path":
            return str(base / "s.zarrvectors")
        if self.kind == "zip_path":
            return str(base / "s.zip")
        raise ValueError(f"unknown store kind {self.kind!r}; kinds: {STORE_KINDS}")

    def path(self, store: Any) -> Path | None:
        """Return the file or directory behind ``store`` (None for memory stores)."""
        if isinstance(store, str):
            return Path(store)
        if isinstance(store, LocalStore):
            return Path(store.root)
        if isinstance(store, ZipStore):
            return Path(store.path)
        return None

    def for_reading(self, store: Any) -> Any:
        """Return ``store`` ready to read: a writable zip is closed and reopened read-only."""
        if isinstance(store, ZipStore) and not store.read_only:
            store.close()
            reader = open_zip(Path(store.path), "r")
            self._zips.append(reader)
            return reader
        return store

    def close(self) -> None:
        """Close every zip store this factory opened."""
        for z in self._zips:
            z.close()
