"""Exceptions and warnings raised by :mod:`zarr_vectors`.

Every error derives from :class:`ZarrVectorsError` and also from the built-in exception a caller
would expect (a missing store is a :class:`FileNotFoundError`, bad metadata a :class:`ValueError`),
so generic ``except`` clauses keep working.
"""

from __future__ import annotations

__all__ = [
    "CorruptPayloadError",
    "GeometryError",
    "InvalidInputError",
    "LevelNotFoundError",
    "MetadataValidationError",
    "MissingDependencyError",
    "OutOfBoundsError",
    "ReadOnlyStoreError",
    "StoreExistsError",
    "StoreLockedError",
    "StoreNotFoundError",
    "UnknownGeometryTypeError",
    "UnsupportedEditError",
    "UpstreamStoreError",
    "ZVDeprecationWarning",
    "ZVFutureWarning",
    "ZVUserWarning",
    "ZarrVectorsError",
]


class ZarrVectorsError(Exception):
    """Base class of every error raised by zarr_vectors."""


class MetadataValidationError(ZarrVectorsError, ValueError):
    """Metadata is missing a field or holds a value the format forbids."""


class InvalidInputError(ZarrVectorsError, ValueError):
    """User input to a writer or reader is malformed (the message names the row or field)."""


class GeometryError(InvalidInputError):
    """Geometry violates its type's rules (a cycle in a skeleton, a face index out of range)."""


class OutOfBoundsError(InvalidInputError):
    """Data lies outside the chunk grid a store was created with."""


class StoreExistsError(ZarrVectorsError, FileExistsError):
    """A write would replace existing data and ``overwrite`` was not requested."""


class ReadOnlyStoreError(ZarrVectorsError, PermissionError):
    """A write or edit was asked of a store that is read-only (mode, flag or permissions)."""


class StoreLockedError(ZarrVectorsError, TimeoutError):
    """Another writer holds the store's edit lock and did not release it in time."""


class UnsupportedEditError(ZarrVectorsError, NotImplementedError):
    """The store's kind or encoding cannot be edited by this version of the library."""


class StoreNotFoundError(ZarrVectorsError, FileNotFoundError):
    """The store, or a node inside it, does not exist or is not a ZVF store."""


class UpstreamStoreError(StoreNotFoundError):
    """The store was written by the upstream ``zarr-vectors`` package (another format).

    ``zarr-vectors convert OLD NEW`` or :func:`zarr_vectors.migrate` copies it into a ZVF store.
    """


class LevelNotFoundError(StoreNotFoundError, KeyError):
    """The requested resolution level is not in the store."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownGeometryTypeError(MetadataValidationError, KeyError):
    """A geometry type name is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CorruptPayloadError(ZarrVectorsError, ValueError):
    """A stored payload cannot be decoded (the message names the array and chunk)."""


class MissingDependencyError(ZarrVectorsError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""


class ZVUserWarning(UserWarning):
    """Something is unusual but the operation could continue."""


class ZVFutureWarning(FutureWarning):
    """Behaviour will change in a future release."""


class ZVDeprecationWarning(FutureWarning):
    """A name or argument is deprecated and goes in the next release.

    A :class:`FutureWarning`, not a :class:`DeprecationWarning`: Python shows it by default
    wherever the old name is used (scripts, notebooks, modules of an analysis package), while a
    ``DeprecationWarning`` is hidden unless raised from ``__main__``.  Our users call the library
    from their own code rather than through an intermediate library, and the old names stop
    working after one release, so they must see the warning before then.
    """
