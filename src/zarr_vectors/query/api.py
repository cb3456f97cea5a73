"""Public query verbs: ``count``, ``explain``, ``iter_levels``, ``to_dask``, ``to_dask_objects``.

Each takes a store (path, URL, zarr store) or an open :class:`~zarr_vectors.Reader`; pass a
reader to reuse its cached metadata and ``vertex_counts`` across many queries.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zarr_vectors.api import Reader
from zarr_vectors.core.reader import BBoxLike, parse_bbox
from zarr_vectors.core.store import StoreLike
from zarr_vectors.errors import MissingDependencyError
from zarr_vectors.query.count import CountUnit, count_level, default_unit
from zarr_vectors.query.execute import SphereLike, WhereLike, selection
from zarr_vectors.query.explain import QueryPlan, explain_level
from zarr_vectors.query.lod import budget_level, level_counts
from zarr_vectors.spec import layout as L
from zarr_vectors.types._base import attribute_selection

__all__ = [
    "LevelResult",
    "count",
    "explain",
    "iter_levels",
    "to_dask",
    "to_dask_objects",
]


def _reader(store: StoreLike | Reader, storage_options: Mapping[str, Any] | None) -> Reader:
    return store if isinstance(store, Reader) else Reader(store, storage_options=storage_options)


def count(
    store: StoreLike | Reader,
    *,
    bbox: BBoxLike | None = None,
    sphere: SphereLike | None = None,
    where: WhereLike | None = None,
    level: int = 0,
    max_vertices: int | None = None,
    unit: CountUnit | str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Count what a read with these arguments returns, decoding as little as possible.

    Parameters
    ----------
    store
        Store or open :class:`~zarr_vectors.Reader`.
    bbox, sphere, where, level, max_vertices
        As in the ``read_*`` functions (``max_vertices`` counts at the level a read with that
        budget picks).
    unit
        ``"vertices"`` or ``"objects"``; default: what a read returns (vertices for point
        clouds, graphs and meshes, objects for lines, polylines, streamlines, skeletons).

    Returns
    -------
    int
        Number of vertices (or objects) matching.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> s = MemoryStore()
    >>> _ = zv.write_points(s, np.array([[1.0, 1.0], [5.0, 5.0], [6.0, 1.0]]), chunk_shape=(4, 4),
    ...                     attributes={"v": np.array([0.1, 0.7, 0.9])})
    >>> zv.count(s, bbox=([0, 0], [8, 8])), zv.count(s, where={"v": (0.5, None)})
    (3, 2)
    """
    r = _reader(store, storage_options)
    reader = r.level(budget_level(r.root, level, bbox, sphere, max_vertices))
    box = None if bbox is None else parse_bbox(bbox, reader.layout.ndim)
    sel = selection(reader, where, sphere, None)
    chosen = default_unit(r.geometry_type) if unit is None else CountUnit(unit)
    return count_level(reader, box, sel, chosen)


def explain(
    store: StoreLike | Reader,
    *,
    bbox: BBoxLike | None = None,
    sphere: SphereLike | None = None,
    where: WhereLike | None = None,
    level: int = 0,
    attributes: bool | str | Sequence[str] = True,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> QueryPlan:
    """Describe the levels, chunks and bytes a read with these arguments touches.

    Reads only dense arrays (``vertex_counts``, statistics), never a payload.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> s = MemoryStore()
    >>> _ = zv.write_points(s, np.array([[1.0, 1.0], [5.0, 5.0]]), chunk_shape=(4, 4),
    ...                     attributes={"v": np.array([0.1, 0.7])})
    >>> plan = zv.explain(s, where={"v": (0.5, None)})
    >>> plan.chunks_total, plan.chunks_read, plan.pruned_by
    (2, 1, ('v',))
    """
    r = _reader(store, storage_options)
    counts = tuple(level_counts(r.root, bbox, sphere))
    reader = r.level(budget_level(r.root, level, bbox, sphere, max_vertices))
    box = None if bbox is None else parse_bbox(bbox, reader.layout.ndim)
    sel = selection(reader, where, sphere, None)
    names = attribute_selection(reader.names(L.ATTRIBUTES), attributes)
    return explain_level(reader, box, sel, names, counts)


@dataclass(frozen=True)
class LevelResult:
    """One step of :func:`iter_levels`."""

    level: int
    result: Any
    """The typed read result (``Points``, ``Polylines``, ...) of that level."""


def iter_levels(
    store: StoreLike | Reader,
    bbox: BBoxLike | None = None,
    *,
    level: int = 0,
    max_vertices: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    **read_kwargs: Any,
) -> Iterator[LevelResult]:
    """Yield read results from the coarsest level down to ``level`` (progressive display).

    With ``max_vertices``, levels whose vertex count over the shape exceeds the budget are not
    read (the per-level counts come from ``vertex_counts``, see :mod:`zarr_vectors.query.lod`).
    Other keywords (``where``, ``sphere``, ``attributes``, ...) go to each read.
    """
    r = _reader(store, storage_options)
    counts = {c.level: c.vertices for c in level_counts(r.root, bbox, read_kwargs.get("sphere"))}
    for n in sorted((n for n in counts if n >= level), reverse=True):
        if max_vertices is not None and counts[n] > max_vertices:
            return
        yield LevelResult(n, r.read(level=n, bbox=bbox, **read_kwargs))


def _dask_module() -> Any:
    try:
        return importlib.import_module("zarr_vectors.query.dask")
    except ImportError as exc:  # dask is an optional extra
        raise MissingDependencyError(
            f"to_dask needs dask[dataframe]: pip install 'zarr-vectors[dask]' ({exc})"
        ) from exc


def to_dask(store: StoreLike, **kwargs: Any) -> Any:
    """Lazy ``dask.dataframe`` of vertices; see :func:`zarr_vectors.query.dask.to_dask`."""
    return _dask_module().to_dask(store, **kwargs)


def to_dask_objects(store: StoreLike, **kwargs: Any) -> Any:
    """Lazy ``dask.bag`` of whole objects; see :func:`zarr_vectors.query.dask.to_dask_objects`."""
    return _dask_module().to_dask_objects(store, **kwargs)
