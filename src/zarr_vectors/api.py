"""Thin top-level verbs: :func:`open` a store once and query it many times.

``zv.open(store)`` returns a :class:`Reader` that caches metadata, per-chunk vertex counts and
array handles, so each further query costs only the payload reads it needs.  ``Reader.read``
dispatches on the store's geometry type and returns that type's typed result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import numpy.typing as npt
import zarr

from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.store import StoreLike, list_resolution_levels, open_store
from zarr_vectors.query.execute import SphereLike, WhereLike, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.types._base import build_query, get_geometry_type

__all__ = ["Reader", "open"]


class Reader:
    """An open ZVF store for repeated queries (a context manager).

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.array([[1.0, 1.0], [5.0, 5.0]]), chunk_shape=(4, 4))
    >>> with zv.open(store) as r:
    ...     str(r.geometry_type), len(r.read(bbox=([0, 0], [4, 4])))
    ('point_cloud', 1)
    """

    def __init__(
        self, store: StoreLike, *, storage_options: Mapping[str, Any] | None = None
    ) -> None:
        self.root: zarr.Group = open_store(store, mode="r", storage_options=storage_options)
        self._levels: dict[int, LevelReader] = {}
        self.metadata: RootMetadata = self.level(0).meta

    @property
    def geometry_type(self) -> str:
        """Geometry type of the store (a built-in one as its :class:`GeometryTypeName`)."""
        return self.metadata.geometry_type

    @property
    def levels(self) -> list[int]:
        """Resolution levels present, ascending."""
        return list_resolution_levels(self.root)

    def level(self, n: int = 0) -> LevelReader:
        """Return the (cached) low-level reader of level ``n``."""
        if n not in self._levels:
            self._levels[n] = LevelReader(self.root, n)
        return self._levels[n]

    def read(
        self,
        *,
        level: int = 0,
        bbox: BBoxLike | None = None,
        object_ids: npt.ArrayLike | None = None,
        group: str | int | None = None,
        attributes: bool | str | Sequence[str] = True,
        clip: bool = False,
        where: WhereLike | None = None,
        sphere: SphereLike | None = None,
        limit: int | None = None,
        max_vertices: int | None = None,
    ) -> Any:
        """Query one level; the result type depends on the geometry type (``Points``...).

        Arguments mean what they mean in :func:`~zarr_vectors.read_points` and
        :func:`~zarr_vectors.read_polylines`.
        """
        reader = self.level(budget_level(self.root, level, bbox, sphere, max_vertices))
        query = build_query(
            reader, bbox=bbox, object_ids=object_ids, group=group, attributes=attributes, clip=clip
        )
        cls = get_geometry_type(self.geometry_type)
        return run(reader, cls, query, selection(reader, where, sphere, limit))

    def close(self) -> None:
        """Drop cached readers."""
        self._levels.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open(store: StoreLike, *, storage_options: Mapping[str, Any] | None = None) -> Reader:
    """Open an existing store for reading and return a :class:`Reader`."""
    return Reader(store, storage_options=storage_options)
