"""Errors of store edits (appends, attribute edits, deletions, compaction)."""

from __future__ import annotations

from zarr_vectors.errors import ZarrVectorsError

__all__ = ["ReadOnlyStoreError", "StoreLockedError", "UnsupportedEditError"]


class StoreLockedError(ZarrVectorsError, TimeoutError):
    """Another writer holds the store's edit lock and did not release it in time."""


class ReadOnlyStoreError(ZarrVectorsError, PermissionError):
    """The store was opened read-only or its location cannot be written."""


class UnsupportedEditError(ZarrVectorsError, NotImplementedError):
    """The store's kind or encoding cannot be edited by this version of the library."""
