"""Line segments (``line``): each object is one two-vertex segment (FORMAT.md §7).

A segment whose endpoints fall in different chunks is stored as one row in each chunk plus a
``cross_chunk_links`` record, exactly like a two-vertex polyline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from zarr_vectors.core.deprecation import rename_keywords, renamed_keywords
from zarr_vectors.core.engine import Gathered, PathRows, rows_as
from zarr_vectors.core.reader import BBoxLike, LevelReader
from zarr_vectors.core.store import StoreLike, open_store
from zarr_vectors.core.writer import StoreKwargs, WriteSummary, write_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.query.execute import SphereLike, WhereLike, run, selection
from zarr_vectors.query.lod import budget_level
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import (
    Batch,
    GeometryType,
    Query,
    batch_ids,
    register_geometry_type,
    take_batch_args,
    write_options,
)
from zarr_vectors.types.polylines import path_parts, path_query, paths_result

__all__ = ["Lines", "read_lines", "write_lines"]


@dataclass(frozen=True)
class Lines:
    """Result of :func:`read_lines`.

    Examples
    --------
    >>> seg = Lines(np.zeros((1, 2, 3)), np.array([0]))
    >>> len(seg)
    1
    """

    endpoints: npt.NDArray[np.floating]
    """(M, 2, D) segment endpoints, physical units."""
    object_ids: npt.NDArray[Any]
    """(M,) segment ids."""
    attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-endpoint attributes, (M, 2, ...)."""
    object_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-segment attributes, (M, ...)."""
    groups: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Group name -> ids of returned segments in the group."""
    group_attributes: Mapping[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-group attributes, in group order."""

    def __len__(self) -> int:
        return len(self.endpoints)


@renamed_keywords(ids="object_ids")
def write_lines(
    store: StoreLike,
    endpoints: npt.ArrayLike,
    *,
    attributes: Mapping[str, npt.ArrayLike] | None = None,
    object_attributes: Mapping[str, npt.ArrayLike] | None = None,
    object_ids: npt.ArrayLike | None = None,
    groups: Mapping[str, npt.ArrayLike] | None = None,
    group_attributes: Mapping[str, npt.ArrayLike] | None = None,
    **store_kwargs: Unpack[StoreKwargs],
) -> WriteSummary:
    """Write line segments to a new ZVF store.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL or zarr store.
    endpoints
        (M, 2, D) segment endpoints, physical units.
    attributes
        Per-endpoint values, (M, 2) or (M, 2, K).
    object_attributes
        Per-segment values, (M, ...).
    object_ids, groups, group_attributes
        Segment user ids (``ids=`` is the deprecated name), named groups of segments,
        per-group values.

    Other Parameters
    ----------------
    **store_kwargs
        Store keywords (``chunk_shape`` required, ``bin_shape``, ``compressor``,
        ``overwrite``, ...) or ``options=``: see :class:`~zarr_vectors.StoreKwargs`.

    Returns
    -------
    WriteSummary
        What was written.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> seg = np.array([[[0.0, 0.0], [12.0, 3.0]]])
    >>> zv.write_lines(store, seg, chunk_shape=(10, 10)).chunk_count
    2
    >>> zv.read_lines(store).endpoints.tolist()
    [[[0.0, 0.0], [12.0, 3.0]]]
    """
    ends = np.asarray(endpoints)
    if ends.ndim != 3 or ends.shape[1] != 2:
        raise InvalidInputError(f"endpoints must have shape (M, 2, D), got {ends.shape}")
    m, _, d = ends.shape
    flat_attrs: dict[str, Any] = {}
    for name, values in (attributes or {}).items():
        arr = np.asarray(values)
        if arr.ndim < 2 or arr.shape[:2] != (m, 2):
            raise InvalidInputError(
                f"attribute {name!r} must have shape (M, 2, ...) with M={m}, got {arr.shape}"
            )
        flat_attrs[name] = arr.reshape(2 * m, *arr.shape[2:])
    offsets = np.arange(0, 2 * m + 1, 2, dtype=np.int64)
    parts = path_parts(
        ends.reshape(2 * m, d),
        offsets,
        flat_attrs,
        object_attributes,
        object_ids,
        groups,
        group_attributes,
    )
    opts = write_options(GeometryTypeName.LINE, parts, store_kwargs, None)
    return write_store(store, GeometryTypeName.LINE, parts, opts)


@register_geometry_type
class LineType(GeometryType[Lines]):
    """Plug-in for ``line`` stores."""

    spec = type_spec(GeometryTypeName.LINE)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> Lines:
        """Build the :class:`Lines` of gathered whole segments."""
        pl = paths_result(reader, query, rows_as(rows, PathRows, cls.spec))
        sizes = np.diff(pl.offsets)
        merged = (sizes == 1) & (reader.level_meta.level > 0)  # only coarse levels merge ends
        if not np.all((sizes == 2) | merged):
            raise InvalidInputError(
                "a line store holds an object that is not two vertices; read it with read_polylines"
            )
        # a coarse level merges a short segment's two ends into one metavertex: that segment
        # reads as zero-length (both ends the metavertex) so every level reads as lines
        reps = np.ones(len(pl.positions), dtype=np.int64)
        reps[pl.offsets[:-1][sizes == 1]] = 2
        m, d = len(pl), reader.layout.ndim
        return Lines(
            np.repeat(pl.positions, reps, axis=0).reshape(m, 2, d),
            pl.object_ids,
            {
                k: np.repeat(v, reps, axis=0).reshape(m, 2, *v.shape[1:])
                for k, v in pl.attributes.items()
            },
            pl.object_attributes,
            pl.groups,
            pl.group_attributes,
        )

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        rename_keywords(kw, "Writer.append", {"ids": "object_ids"}, stacklevel=6)
        attributes, obj_attrs, ids = take_batch_args(
            kw, "attributes", "object_attributes", "object_ids"
        )
        ends = np.asarray(data)
        if ends.ndim != 3 or ends.shape[1] != 2:
            raise InvalidInputError(f"endpoints must have shape (M, 2, D), got {ends.shape}")
        m, _, d = ends.shape
        flat = {
            k: np.asarray(v).reshape(2 * m, *np.asarray(v).shape[2:])
            for k, v in (attributes or {}).items()
        }
        parts = path_parts(
            ends.reshape(2 * m, d), np.arange(0, 2 * m + 1, 2), flat, obj_attrs, None, None, None
        )
        return Batch(parts, object_ids=batch_ids(ids))


def read_lines(
    store: StoreLike,
    *,
    level: int = 0,
    bbox: BBoxLike | None = None,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    attributes: bool | str | Sequence[str] = True,
    where: WhereLike | None = None,
    sphere: SphereLike | None = None,
    limit: int | None = None,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Lines:
    """Read segments from a ``line`` store (a segment with an endpoint in ``bbox`` comes whole).

    Parameters
    ----------
    where, sphere, limit, max_vertices
        Attribute conditions (``{"intensity": (0.5, None), "label": {3, 7}}``), a ball
        ``(center, radius)``, the first N items, a vertex budget choosing the finest level
        that fits; see :mod:`zarr_vectors.query.execute` and :mod:`zarr_vectors.query.lod`.

    Returns
    -------
    Lines
        Endpoints, ids and attributes of the selected segments.  At a pyramid level a segment
        whose two ends were merged into one metavertex is returned zero-length: both endpoints
        (and their attributes) are that metavertex.
    """
    root = open_store(store, mode="r", storage_options=storage_options)
    reader = LevelReader(root, budget_level(root, level, bbox, sphere, max_vertices))
    query = path_query(reader, (GeometryTypeName.LINE,), bbox, object_ids, group, attributes)
    return run(reader, LineType, query, selection(reader, where, sphere, limit))
