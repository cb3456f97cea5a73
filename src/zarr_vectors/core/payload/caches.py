"""The payload layer's process-wide memo tables, in one place.

Each table maps a key to what was derived from stored bytes or metadata (parsed documents,
opened arrays, element codecs, seek tables) and is emptied whole when full: entries are small,
and a table that keeps growing belongs to a process reading very many arrays, where clearing
costs one re-derivation per array.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

__all__ = ["ARRAYS", "ELEMENT_CODECS", "METADATA", "SEEK_TABLES", "Memo"]

K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A dict of at most ``limit`` entries, cleared whole before it would grow past that."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        """Return the entry of ``key``, or None."""
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        """Store ``value`` under ``key`` (clearing the table first when it is full)."""
        if len(self._items) >= self.limit:
            self._items.clear()
        self._items[key] = value

    def clear(self) -> None:
        """Forget every entry."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


METADATA: Memo[str, tuple[bytes, Any]] = Memo(4096)
"""Parsed ``zarr.json`` documents of local hierarchies, by file path, with the bytes parsed."""

ARRAYS: Memo[tuple[str, bool], tuple[Any, Any]] = Memo(4096)
"""Arrays opened over a parsed document, by metadata file and read-only flag, with the
metadata object they were built on (reused while the document's bytes are unchanged)."""

ELEMENT_CODECS: Memo[int, tuple[Any, Any]] = Memo(4096)
"""Element codec (and shard format) of each array metadata object, by ``id``, with the object
itself (kept alive here, so its id stays its own)."""

SEEK_TABLES: Memo[str, tuple[tuple[int, int], Any]] = Memo(16384)
"""Seek tables (zstd frames, Blosc blocks) of local payload files, by path, with the file's
``(size, mtime_ns)`` when read: a later read of the unchanged file skips re-reading its table.
A table is a few hundred bytes to a few KiB."""
