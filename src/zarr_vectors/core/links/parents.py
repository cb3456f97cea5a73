"""Parents of tree nodes from stored ``[child, parent]`` links (FORMAT.md §6–§8, forests).

A whole-tree read (:func:`read_trees`) fetches objects whole and, beside the vertex decoding,
sets each returned node's parent from the local and cross-chunk links of their chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.links.keys import first_appearance
from zarr_vectors.core.links.read import (
    Tasks,
    WholeObjects,
    cross_link_piece,
    local_link_parents,
    read_with_links,
)
from zarr_vectors.core.reader import LevelReader, ObjectRanges
from zarr_vectors.core.recycle import RESULTS
from zarr_vectors.core.select import Query, select_objects
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.spec import layout as L

__all__ = ["ParentWork", "TreeRows", "read_trees"]

IntArray = npt.NDArray[np.int64]


class ParentWork:
    """Parent of each returned node from the stored ``[child, parent]`` links (-1: a root).

    Two tasks (:class:`~zarr_vectors.core.links.read.Tasks`): the local links, then the
    cross-chunk links, the latter for whichever thread of the read is free first.
    ``index`` maps each row of the chunks ``where.chunks`` to its returned position.
    """

    def __init__(self, reader: LevelReader, where: ObjectRanges, index: IntArray) -> None:
        self._reader, self._where, self._index = reader, where, index
        self.parents = RESULTS.empty(where.n_rows, np.int64)
        self.parents.fill(-1)
        self._n_local = self._n_cross = 0
        self._tasks = Tasks(self._local, self._cross)

    def share(self) -> None:
        """Set the parents of the tasks no other thread has taken."""
        self._tasks.run()

    def _local(self) -> None:
        if self._reader.has(L.LINKS):
            where = self._where
            self._n_local = local_link_parents(
                self._reader, where.chunks, self._index, self.parents
            )

    def _cross(self) -> None:
        if self._reader.has(L.CROSS_CHUNK_LINKS):
            reader, flats = self._reader, self._where.chunks
            block = reader.rows(L.CROSS_CHUNK_LINKS, flats)
            piece = cross_link_piece(reader, flats, self._index, (), block)
            self.parents[piece.source] = piece.target
            self._n_cross = len(piece)

    def result(self) -> IntArray:
        """Return the parents, checked to set each node once."""
        if np.count_nonzero(self.parents >= 0) != self._n_local + self._n_cross:
            # a child written twice
            raise CorruptPayloadError(f"{self._reader.group.path}: a skeleton node has two parents")
        return self.parents


@dataclass(frozen=True)
class TreeRows:
    """Whole trees gathered in traversal order, with the parent of each node."""

    objects: IntArray
    """Dense ids of the returned trees, in result order."""
    vertices: WholeObjects
    """Their nodes, concatenated, and the chunks fetched."""
    parents: IntArray
    """(N,) parent of each node as an index into the nodes (-1: a root)."""


def read_trees(reader: LevelReader, query: Query) -> TreeRows:
    """Return the whole trees ``query`` selects and the parent of each of their nodes."""
    names = query.attributes if query.attributes is not None else tuple(reader.names(L.ATTRIBUTES))
    with reader.caching():
        dense = first_appearance(select_objects(reader, query))
        got, parents = read_with_links(reader, dense, names, partial(ParentWork, reader))
    return TreeRows(dense, got, parents)
