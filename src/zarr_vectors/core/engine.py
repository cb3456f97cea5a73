"""One read pipeline: the engine that gathers a query's rows on one level, for every type.

A read is two steps.  :func:`gather` (here) fetches what a :class:`~zarr_vectors.core.select.
Query` selects — box, objects, groups, level — with the engine the type's
:attr:`~zarr_vectors.spec.typespec.TypeSpec.topology` calls for, links and cross-chunk links
resolved by :mod:`zarr_vectors.core.links`; the geometry type's ``assemble`` hook
(:class:`zarr_vectors.types.GeometryType`) then turns the gathered rows into its result.

=============  ==============================================  =================================
topology       engine                                          rows
=============  ==============================================  =================================
``none``       rows in the box or of the objects, in storage   :class:`PointRows`
               order
``paths``      whole objects in traversal order                :class:`PathRows`
``graph``      vertices plus the edges among them              :class:`~zarr_vectors.core.links.
                                                               rows.GraphRows`
``forest``     whole trees plus each node's parent             :class:`~zarr_vectors.core.links.
                                                               parents.TreeRows`
``surface``    vertices plus the faces among them              :class:`~zarr_vectors.core.links.
                                                               faces.FaceRows`
=============  ==============================================  =================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.links.faces import FaceRows, gather_faces
from zarr_vectors.core.links.parents import TreeRows, read_trees
from zarr_vectors.core.links.rows import GraphRows, gather_graph
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.select import ObjectVertices, Query, read_objects, select_objects
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Topology
from zarr_vectors.spec.typespec import TypeSpec

__all__ = [
    "LINKED_TOPOLOGIES",
    "Gathered",
    "PathRows",
    "PointRows",
    "gather",
    "gather_paths",
    "gather_points",
    "rows_as",
]

IntArray = npt.NDArray[np.int64]
_R = TypeVar("_R")


@dataclass(frozen=True)
class PointRows:
    """Rows a query selects on a level without links, in storage order."""

    positions: npt.NDArray[np.floating]
    """(N, D) selected rows."""
    vertex_object: IntArray | None
    """(N,) dense object of each row, or None when the level has no objects."""
    attributes: dict[str, Column]
    """Per-row attributes aligned with ``positions``."""


@dataclass(frozen=True)
class PathRows:
    """Whole objects a query selects, vertices in traversal order."""

    objects: IntArray
    """Dense ids of the returned objects, in result order."""
    vertices: ObjectVertices
    """Their vertices, concatenated, with CSR offsets per object."""


LINKED_TOPOLOGIES = frozenset({Topology.GRAPH, Topology.SURFACE})
"""Topologies whose reads return link attributes and boundary links (edges, faces)."""

Gathered = PointRows | PathRows | GraphRows | TreeRows | FaceRows
"""What :func:`gather` returns, by topology."""


def rows_as(rows: object, kind: type[_R], spec: TypeSpec) -> _R:
    """Return ``rows`` as ``kind``: what ``spec``'s assemble hook needs from :func:`gather`.

    Raises
    ------
    InvalidInputError
        The rows came from another topology's engine.
    """
    if not isinstance(rows, kind):
        raise InvalidInputError(
            f"{spec.name} results are built from {kind.__name__}, got {type(rows).__name__}"
        )
    return rows


def _names(reader: LevelReader, query: Query) -> tuple[str, ...]:
    """Per-vertex attributes the query asks for (None: all)."""
    return query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))


def gather_points(reader: LevelReader, query: Query) -> PointRows:
    """Rows in the box and of the objects ``query`` names (all rows by default)."""
    has_objects = reader.has(L.OBJECT_OFFSETS)
    if query.object_ids is not None:
        objs = reader.gather_objects(query.object_ids)
        flats, rows = objs.chunks, objs.rows
    else:
        flats = reader.chunks(query.bbox)
        rows = None
        if has_objects and query.bbox is None:
            # a whole-level read costs O(refs) anyway; it must agree with what an
            # object_ids= read would return, so the index it skips is checked here
            reader.check_object_index()
    pos = reader.rows(L.VERTICES, flats).values
    obj = reader.vertex_object_ids(flats) if has_objects else None
    if rows is not None:
        pos = pos[rows]
        obj = None if obj is None else obj[rows]
    keep = None
    if query.bbox is not None:
        lo, hi = np.asarray(query.bbox.min), np.asarray(query.bbox.max)
        keep = np.flatnonzero(np.all((pos >= lo) & (pos < hi), axis=1))
        pos = pos[keep]
        obj = None if obj is None else obj[keep]
    attrs: dict[str, Column] = {}
    for name in _names(reader, query):
        col = reader.column(f"{L.ATTRIBUTES}/{name}", flats)
        if rows is not None:
            col = col.take(rows)
        if keep is not None:
            col = col.take(keep)
        attrs[name] = col
    return PointRows(pos, obj, attrs)


def gather_paths(reader: LevelReader, query: Query) -> PathRows:
    """Whole objects named by ``query`` or touching its box (all objects by default)."""
    with reader.caching():
        dense = select_objects(reader, query)
        got = read_objects(reader, dense, _names(reader, query))
    return PathRows(dense, got)


def gather(
    reader: LevelReader,
    query: Query,
    spec: TypeSpec,
    link_attributes: Sequence[str] = (),
    boundary: bool = False,
) -> Gathered:
    """Gather what ``query`` selects on one level with the engine of ``spec.topology``.

    Parameters
    ----------
    reader
        The level.
    query
        Box, objects (dense ids) and per-vertex attributes.
    spec
        The type whose result is built (a graph read of a skeleton store gathers as a graph).
    link_attributes
        Edge or face attributes to gather (graphs, meshes).
    boundary
        With a box: also the links with one end in it, and their outside vertices (graphs,
        meshes).

    Raises
    ------
    InvalidInputError
        ``boundary`` for a type whose links do not reach outside the box.
    """
    topology = spec.topology
    if boundary and topology not in LINKED_TOPOLOGIES:
        raise InvalidInputError(f"{spec.name} reads have no boundary links")
    if topology is Topology.NONE:
        return gather_points(reader, query)
    if topology is Topology.PATHS:
        return gather_paths(reader, query)
    if topology is Topology.GRAPH:
        return gather_graph(reader, query, link_attributes, boundary)
    if topology is Topology.FOREST:
        return read_trees(reader, query)
    if topology is Topology.SURFACE:
        return gather_faces(reader, query, link_attributes, boundary)
    raise InvalidInputError(f"{spec.name}: no read engine for topology {topology.value!r}")
