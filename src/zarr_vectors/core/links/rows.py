"""A query on a graph-like level as vertices plus the edges among them (FORMAT.md §6–§8).

Box reads number every stored vertex of the level (:class:`~zarr_vectors.core.links.keys.
KeySpace`) and keep the edges between the vertices inside (or touching) the box; object reads
fetch whole objects and every edge among them (:func:`~zarr_vectors.core.links.read.
read_with_links`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.links.keys import (
    KeySpace,
    edge_keys,
    edges_between,
    first_appearance,
    sorted_edges,
    sorted_unique,
    take_column,
    take_rows,
)
from zarr_vectors.core.links.read import (
    OVERLAP_ROWS,
    Finished,
    link_blocks,
    linked_edges,
    read_with_links,
)
from zarr_vectors.core.reader import LevelReader, ObjectRanges, RowBlock
from zarr_vectors.core.scratch import SCRATCH
from zarr_vectors.core.select import Query, in_box, select_objects, user_ids
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import BoundingBox

__all__ = [
    "GraphRows",
    "boundary_chunks",
    "gather_graph",
    "is_big",
    "read_box",
    "read_whole_objects",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]


@dataclass(frozen=True)
class GraphRows:
    """Vertices and edges gathered from one level (shared by graphs and skeletons)."""

    positions: FloatArray
    """(N, D) returned vertices."""
    vertex_object: IntArray
    """(N,) dense object id of each vertex."""
    attributes: dict[str, Column]
    """Per-vertex attributes."""
    edges: IntArray
    """(E, 2) edges as indices into ``positions``, in storage orientation, sorted by
    ``(source, target)``."""
    edge_attributes: dict[str, Column]
    """Per-edge attributes."""
    offsets: IntArray | None = None
    """CSR offsets per requested object when vertices are whole objects in order, else None."""

    def take(self, keep: npt.NDArray[np.bool_], edge_keep: npt.NDArray[np.bool_]) -> GraphRows:
        """Restrict to vertices ``keep`` and edges ``edge_keep`` (whose ends must be kept)."""
        new = np.cumsum(keep) - 1
        rows, erows = np.flatnonzero(keep), np.flatnonzero(edge_keep)
        return GraphRows(
            take_rows(self.positions, rows),
            self.vertex_object[rows],
            {k: take_column(c, rows) for k, c in self.attributes.items()},
            np.take(new, take_rows(self.edges, erows)),
            {k: take_column(c, erows) for k, c in self.edge_attributes.items()},
        )

    def restrict(self, inside: npt.NDArray[np.bool_], boundary: bool) -> GraphRows:
        """Keep vertices ``inside`` and edges between them (or, with ``boundary``, touching them)."""
        ends = np.take(inside, self.edges)
        edge_keep = (ends[:, 0] | ends[:, 1]) if boundary else (ends[:, 0] & ends[:, 1])
        keep = inside.copy()
        if boundary:
            keep[take_rows(self.edges, np.flatnonzero(edge_keep)).ravel()] = True
        return self.take(keep, edge_keep)


def read_whole_objects(
    reader: LevelReader,
    dense: IntArray,
    names: Sequence[str],
    edge_names: Sequence[str],
    early: tuple[IntArray, Future[dict[str, RowBlock]]] | None = None,
) -> GraphRows:
    """Fetch objects ``dense`` whole (global order) and every edge between their vertices.

    ``early``: chunks whose link rows are being fetched already (:func:`link_blocks`), used
    when they are the chunks of ``dense``.
    """

    def edges(where: ObjectRanges, index: IntArray) -> Finished[tuple[IntArray, dict[str, Column]]]:
        fetched = None
        if early is not None and np.array_equal(early[0], where.chunks):
            fetched = early[1].result()
        return Finished(
            linked_edges(reader, where.chunks, index, edge_names, where.n_rows, fetched)
        )

    got, (edges_sorted, eattrs) = read_with_links(reader, dense, names, edges)
    obj = np.repeat(dense, np.diff(got.offsets))
    return GraphRows(got.positions, obj, got.attributes, edges_sorted, eattrs, got.offsets)


def boundary_chunks(reader: LevelReader, flats: IntArray, inside: IntArray) -> IntArray:
    """Chunks that may own an edge leaving the box: those of every object touching it."""
    if user_ids(reader) is not None:  # user objects: an edge may join two objects, scan all
        return reader.chunks()
    touching = sorted_unique(reader.vertex_object_ids(flats)[inside])
    return sorted_unique(np.concatenate([flats, reader.gather_objects(touching).chunks]))


def read_box(
    reader: LevelReader,
    box: BoundingBox,
    names: Sequence[str],
    edge_names: Sequence[str],
    boundary: bool,
) -> GraphRows:
    """Vertices in ``box`` (storage order) and the edges between them (or touching them).

    ``boundary``: also the edges with one end in the box, and their outside vertices.
    """
    ks = KeySpace.of(reader)
    f0 = reader.chunks(box)
    inside_rows = np.flatnonzero(in_box(reader.rows(L.VERTICES, f0).values, box))
    inside = ks.keys_of(f0)[inside_rows]
    cross = boundary_chunks(reader, f0, inside_rows) if boundary else f0
    keys, attrs = edge_keys(reader, ks, f0, cross, edge_names)
    wanted = inside
    if boundary:
        on = np.isin(keys, inside)
        touch = np.flatnonzero(on[:, 0] | on[:, 1])
        keys, attrs = take_rows(keys, touch), {k: take_column(c, touch) for k, c in attrs.items()}
        wanted = sorted_unique(np.concatenate([inside, keys.ravel()]))
    flats = sorted_unique(ks.flat_of(wanted))
    rows = np.searchsorted(ks.keys_of(flats), wanted)
    edges, eattrs = sorted_edges(*edges_between(keys, attrs, wanted), len(wanted))
    got = GraphRows(
        take_rows(reader.rows(L.VERTICES, flats).values, rows),
        reader.vertex_object_ids(flats)[rows],
        {n: take_column(reader.column(f"{L.ATTRIBUTES}/{n}", flats), rows) for n in names},
        edges,
        eattrs,
    )
    return got.restrict(np.isin(wanted, inside), boundary)


def gather_graph(
    reader: LevelReader, query: Query, edge_names: Sequence[str], boundary: bool = False
) -> GraphRows:
    """Run a query on a graph or skeleton level and return the raw rows (edges sorted)."""
    names = query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))
    with reader.caching():
        if query.object_ids is None and query.bbox is not None:
            return read_box(reader, query.bbox, names, edge_names, boundary)
        # the links fetched early live only until the edges are out
        with SCRATCH.lease() as lease, ThreadPoolExecutor(max_workers=1) as pool:
            early = None
            if query.object_ids is None and query.bbox is None and is_big(reader):
                # every chunk's links are needed: fetch them while the objects are located
                flats = reader.chunks()
                early = (flats, pool.submit(link_blocks, reader, flats, lease))
            # a boundary edge may reach a named object lying wholly outside the box: keep all
            dense = first_appearance(
                select_objects(reader, replace(query, bbox=None) if boundary else query)
            )
            rows = read_whole_objects(reader, dense, names, edge_names, early)
    if query.bbox is not None:
        rows = rows.restrict(in_box(rows.positions, query.bbox), boundary)
    return rows


def is_big(reader: LevelReader) -> bool:
    """Whether a full read is big enough to fetch links in a second thread (metadata read)."""
    big = int(reader.vertex_counts.sum()) >= OVERLAP_ROWS
    if big:  # the node listing, before two threads want it
        reader.has(L.LINKS)
    return big
