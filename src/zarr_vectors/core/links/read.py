"""Whole-object reads with their links (FORMAT.md §6–§8).

:func:`read_with_links` fetches objects whole and, beside the vertex decoding, runs the link
work of the caller (edges for graphs, parents for skeletons); the helpers here map stored
``links`` and ``cross_chunk_links`` rows to returned positions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.links.keys import KeySpace, sorted_by_key, take_column
from zarr_vectors.core.payload.concurrency import decode_threads
from zarr_vectors.core.ragged import concat_ranges, offsets_from_counts
from zarr_vectors.core.reader import (
    LevelReader,
    ObjectRanges,
    ObjectRows,
    RowBlock,
)
from zarr_vectors.core.scratch import SCRATCH, Lease
from zarr_vectors.core.select import ObjectVertices, object_vertices
from zarr_vectors.errors import CorruptPayloadError
from zarr_vectors.spec import layout as L

__all__ = [
    "CHUNK_LINKS",
    "DECODE_EACH_ROWS",
    "OVERLAP_ROWS",
    "Finished",
    "LinkPiece",
    "LinkWork",
    "Tasks",
    "WholeObjects",
    "checked_link_rows",
    "cross_link_piece",
    "link_blocks",
    "linked_edges",
    "links_among",
    "local_link_keys",
    "local_link_parents",
    "map_chunk_links",
    "mapped_chunk_links",
    "mapped_links",
    "read_with_links",
    "returned",
    "returned_links",
    "row_index",
    "whole_objects",
]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.floating]
_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


@dataclass(frozen=True)
class WholeObjects:
    """Vertices of whole objects in global order, and the chunks they were stored in."""

    positions: FloatArray
    """(N, D) vertices of all objects, concatenated."""
    attributes: dict[str, Column]
    """Per-vertex attributes aligned with ``positions``."""
    offsets: IntArray
    """(n + 1,) CSR offsets of each requested object's vertices."""
    chunks: IntArray
    """Flat indices of the chunks fetched, ascending."""


OVERLAP_ROWS = 1 << 16
"""Vertices from which a whole-object read fetches the links in a second thread."""


class LinkWork(Protocol[_T_co]):
    """The link half of a whole-object read (:func:`read_with_links`)."""

    def share(self) -> None:
        """Do what no other thread has taken; called by one or more threads at once."""

    def result(self) -> _T_co:
        """Return the result, once every :meth:`share` call has returned."""


@dataclass(frozen=True)
class Finished(Generic[_T]):
    """Link work done when it was started: nothing left to share."""

    value: _T

    def share(self) -> None:
        """Do nothing."""

    def result(self) -> _T:
        """Return the value."""
        return self.value


class Tasks:
    """Independent tasks, each run once by whichever thread claims it first.

    :meth:`run` claims tasks in order until none is left: a thread that comes late
    (the vertex thread of :func:`read_with_links`, once its own part is done) takes the
    ones the first has not reached.
    """

    def __init__(self, *tasks: Callable[[], None]) -> None:
        self._tasks = tasks
        self._next = count()  # next() on it is atomic: no task is claimed twice

    def run(self) -> None:
        """Run the tasks no other thread has claimed."""
        tasks = self._tasks
        for k in self._next:
            if k >= len(tasks):
                # every task claimed: let go of them.  Bound methods of the work that owns
                # this object form a reference cycle, which would keep the work's result
                # arrays alive until a garbage collection (and out of the recycling pool)
                self._tasks = ()
                return
            tasks[k]()


def read_with_links(
    reader: LevelReader,
    dense: IntArray,
    names: Sequence[str],
    links: Callable[[ObjectRanges, IntArray], LinkWork[_T]],
) -> tuple[WholeObjects, _T]:
    """Fetch objects ``dense`` whole (global order) and the link work ``links`` of them.

    ``links(where, index)`` starts the work: ``where`` locates the objects' rows
    (:meth:`LevelReader.locate_objects`) and ``index`` maps each row of their chunks to its
    returned position (-1: not returned).  Big reads start it in a second thread beside the
    vertex decoding (reads, decompression and numpy release the GIL, and the two touch
    different arrays); the calling thread, once its vertices are out, shares what is left
    of it.
    """
    with SCRATCH.lease() as lease:  # row maps live only until vertices and links are out
        located = reader.locate_objects(dense)
        rows = located.expand(lease)  # once, for the vertices and the row map

        def start() -> LinkWork[_T]:
            size = int(reader.vertex_counts[located.chunks].sum())
            return links(located, row_index(rows, size, lease))

        if located.n_rows < OVERLAP_ROWS:
            got = object_vertices(reader, rows, names)
            work = start()
            work.share()
            return whole_objects(got, located), work.result()
        started: Future[LinkWork[_T]] = Future()

        def linked() -> None:
            try:
                work = start()
            except BaseException as exc:  # the calling thread waits for the work: tell it
                started.set_exception(exc)
                raise
            started.set_result(work)
            work.share()

        with ThreadPoolExecutor(max_workers=2) as pool:
            future = pool.submit(linked)
            # big vertex decodes queue in parts behind the links: the worker that is
            # done with the links takes the parts that are left
            with decode_threads(8, pool):
                got = object_vertices(reader, rows, names)
            work = started.result()
            work.share()
            future.result()
        return whole_objects(got, located), work.result()


def whole_objects(got: ObjectVertices, located: ObjectRanges) -> WholeObjects:
    """Return the vertices ``got`` of the objects ``located`` as :class:`WholeObjects`."""
    return WholeObjects(got.positions, got.attributes, located.offsets, located.chunks)


def row_index(where: ObjectRanges, size: int, lease: Lease | None = None) -> IntArray:
    """Map each of the ``size`` fetched rows to its returned position (-1: not returned).

    With a ``lease`` the map may be in its buffers.  ``where`` expanded already
    (:class:`ObjectRows`) is not expanded again.
    """
    starts, counts = where.ranges.starts, where.ranges.counts
    if 0 < 32 * len(starts) <= size:  # refs of 32+ rows (skeletons): sort the refs, not the rows
        order = np.argsort(starts, kind="stable")
        first, n = starts[order], counts[order]
        ends = first + n
        if first[0] == 0 and ends[-1] == size and np.array_equal(first[1:], ends[:-1]):
            # the refs tile every row (full reads): one sequential pass instead of a scatter
            out = None if lease is None else lease.array(size, np.int64)
            return concat_ranges(offsets_from_counts(counts)[:-1][order], n, out)
    rows = where.rows if isinstance(where, ObjectRows) else where.expand().rows
    index = np.full(size, -1, dtype=np.int64)
    index[rows] = np.arange(where.n_rows, dtype=np.int64)
    return index


@dataclass(frozen=True)
class LinkPiece:
    """Edges between returned vertices, as output indices, from one links array."""

    ends: IntArray
    """(2, E) endpoint 0 and endpoint 1 of each edge (``[min, max]`` or ``[source, target]``)."""
    attributes: dict[str, Column]
    """Edge attributes aligned with the edges."""

    def __len__(self) -> int:
        return int(self.ends.shape[1])

    @property
    def source(self) -> IntArray:
        """(E,) endpoint 0 of each edge."""
        src: IntArray = self.ends[0]
        return src

    @property
    def target(self) -> IntArray:
        """(E,) endpoint 1 of each edge."""
        tgt: IntArray = self.ends[1]
        return tgt


def checked_link_rows(block: RowBlock, counts: IntArray) -> IntArray:
    """``links`` rows of some chunks, checked to name rows inside their chunk (``counts``)."""
    rows = block.values if block.values.dtype.kind == "i" else block.values.astype(np.int64)
    if rows.shape[1] != 2:
        raise CorruptPayloadError(f"{L.LINKS} rows have width {rows.shape[1]}, expected 2")
    if not _rows_inside(rows, block.offsets, counts):
        raise CorruptPayloadError(f"{L.LINKS}: a link names a row outside its chunk")
    return rows


def _rows_inside(rows: IntArray, offsets: IntArray, counts: IntArray) -> bool:
    """Whether every chunk's link ``rows`` (CSR ``offsets``) lie in ``0..counts - 1``.

    As :func:`~zarr_vectors.core.reader.check_link_rows`, in one reduction: read as unsigned,
    a negative row is bigger than any count.
    """
    if not len(rows):
        return True
    flat = np.ascontiguousarray(rows).reshape(-1).view(f"u{rows.dtype.itemsize}")
    if len(counts) == 1:
        return int(flat.max()) < int(counts[0])
    full = np.flatnonzero(np.diff(offsets) > 0)
    top = np.maximum.reduceat(flat, rows.shape[1] * offsets[full])
    return bool((top < counts[full].astype(flat.dtype)).all())


CHUNK_LINKS = 256
"""Mean links per chunk from which :func:`mapped_links` maps the links chunk by chunk."""

DECODE_EACH_ROWS = 8192
"""Mean rows per chunk from which skeleton links are decoded chunk by chunk, each just before
it is mapped (its rows still in cache); below it one read of every chunk's links costs less
than a read per chunk, whose fixed cost the few rows do not repay."""


def mapped_links(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray
) -> Iterator[tuple[int, IntArray, IntArray]]:
    """Yield the ``links`` rows of chunks ``flats`` as returned positions, a batch at a time.

    A batch is its first link row and the positions of its two ends (``index`` of each row,
    -1: not returned), in buffers the next batch reuses: no (2, E) array of a million links.
    """
    rows = checked_link_rows(block, reader.vertex_counts[flats])
    if not len(rows):
        return
    base = offsets_from_counts(reader.vertex_counts[flats])
    if len(rows) < CHUNK_LINKS * len(flats):  # short chunks: one batch, vectorised
        ends = np.ascontiguousarray(rows.T, dtype=np.int64)
        ends += np.repeat(base[:-1], np.diff(block.offsets))
        # in place: take reads each key before writing its slot; keys are checked above,
        # so "clip" never clips
        np.take(index, ends, out=ends, mode="clip")
        yield 0, ends[0], ends[1]
        return
    # chunk by chunk: each gather reads one chunk's slice of ``index`` (cache resident) with
    # the stored local rows, no offset rows added.  The rows are first widened into their
    # buffer: np.take converting narrow or strided indices itself is slower
    buf = np.empty((2, int(np.diff(block.offsets).max())), dtype=np.int64)
    first, off = base.tolist(), block.offsets.tolist()
    for i in range(len(flats)):
        a, b = off[i], off[i + 1]
        if b > a:
            yield a, *map_chunk_links(rows[a:b], index[first[i] : first[i + 1]], buf)


def mapped_chunk_links(
    reader: LevelReader, flats: IntArray, index: IntArray
) -> Iterator[tuple[int, IntArray, IntArray]]:
    """:func:`mapped_links` of long chunks, each decoded, checked and mapped in turn.

    The chunks' links are never decoded all at once (:meth:`LevelReader.chunk_rows`): each
    chunk's stay in cache from decoding to mapping.
    """
    counts = reader.vertex_counts[flats]
    first = offsets_from_counts(counts).tolist()
    buf = np.empty((2, 0), dtype=np.int64)
    a = 0
    for i, stored in reader.chunk_rows(L.LINKS, flats):
        block = RowBlock(stored, np.array([0, len(stored)], dtype=np.int64))
        rows = checked_link_rows(block, counts[i : i + 1])
        if buf.shape[1] < len(rows):
            buf = np.empty((2, len(rows)), dtype=np.int64)
        yield a, *map_chunk_links(rows, index[first[i] : first[i + 1]], buf)
        a += len(rows)


def map_chunk_links(rows: IntArray, part: IntArray, buf: IntArray) -> tuple[IntArray, IntArray]:
    """Positions (``part`` of each local row) of the two ends of one chunk's checked links.

    The rows are first widened into ``buf``: np.take converting narrow or strided indices
    itself is slower (int32 indices especially).  The result views ``buf``.
    """
    n = len(rows)
    for j in (0, 1):
        slot = buf[j, :n]
        slot[...] = rows[:, j]
        np.take(part, slot, out=slot, mode="clip")  # rows checked: "clip" never clips
    return buf[0, :n], buf[1, :n]


def returned_links(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray
) -> Iterator[tuple[IntArray | None, IntArray, IntArray]]:
    """:func:`mapped_links` without the links that have an end not returned.

    Yields the link rows kept by each batch (None when the batch keeps all: every row of the
    chunks is returned, as in full reads) and the positions of their two ends.
    """
    return returned(mapped_links(reader, flats, block, index), index)


def returned(
    batches: Iterator[tuple[int, IntArray, IntArray]], index: IntArray
) -> Iterator[tuple[IntArray | None, IntArray, IntArray]]:
    """Batches of mapped links without the links that have an end not returned."""
    every = not len(index) or bool(index.min() >= 0)
    for a, source, target in batches:
        if every:
            yield None, source, target
        else:
            keep = np.flatnonzero((source >= 0) & (target >= 0))
            yield keep + a, source[keep], target[keep]


def links_among(ends: IntArray, attrs: dict[str, Column]) -> LinkPiece:
    """Keep the edges whose two ends are returned (``ends`` >= 0)."""
    if ends.size == 0 or ends.min() >= 0:  # every end returned (full reads): no copy
        return LinkPiece(ends, attrs)
    keep = np.flatnonzero((ends[0] >= 0) & (ends[1] >= 0))
    return LinkPiece(
        np.take(ends, keep, axis=1), {k: take_column(c, keep) for k, c in attrs.items()}
    )


def link_blocks(
    reader: LevelReader, flats: IntArray, lease: Lease | None = None
) -> dict[str, RowBlock]:
    """Return the ``links`` and ``cross_chunk_links`` rows of chunks ``flats`` (if stored).

    With a ``lease`` the rows may be in its buffers (valid while it lasts).
    """
    paths = (L.LINKS, L.CROSS_CHUNK_LINKS)
    return {p: reader.rows(p, flats, lease) for p in paths if reader.has(p)}


def cross_link_piece(
    reader: LevelReader, flats: IntArray, index: IntArray, names: Sequence[str], block: RowBlock
) -> LinkPiece:
    """Return the ``cross_chunk_links`` rows ``block`` of chunks ``flats`` as a piece.

    ``index`` maps each row of the chunks' concatenation to its returned position (-1: not
    returned), as in :func:`read_with_links`; links with an end not returned are left out.
    """
    keys = KeySpace.fetched(reader, flats).cross_keys(reader, flats, block)
    path = L.CROSS_CHUNK_LINK_ATTRIBUTES
    attrs = {n: reader.aligned_column(f"{path}/{n}", flats, block) for n in names}
    ends = np.take(index, keys.T, mode="clip")
    ends[keys.T < 0] = -1  # an endpoint in a chunk not fetched
    return links_among(ends, attrs)


def local_link_parents(
    reader: LevelReader, flats: IntArray, index: IntArray, parents: IntArray
) -> int:
    """Set ``parents[child] = parent`` from the ``links`` rows of chunks ``flats``.

    ``[child, parent]`` rows map to returned positions through ``index`` (as in
    :func:`cross_link_piece`; links with an end not returned are skipped).  Returns the
    number of links set.  Big chunks are decoded, checked and mapped one at a time
    (:func:`mapped_chunk_links`); smaller ones are read together, then mapped.
    """
    if int(reader.vertex_counts[flats].sum()) < DECODE_EACH_ROWS * len(flats):
        batches = mapped_links(reader, flats, reader.rows(L.LINKS, flats), index)
    else:
        batches = mapped_chunk_links(reader, flats, index)
    done = 0
    for _, child, parent in returned(batches, index):
        parents[child] = parent
        done += len(child)
    return done


def local_link_keys(
    reader: LevelReader, flats: IntArray, block: RowBlock, index: IntArray, bits: int, out: IntArray
) -> tuple[int, IntArray | None]:
    """Write the sort keys ``source << bits | target`` of the ``links`` rows ``block`` to ``out``.

    Links with an end not returned are skipped: returns the number of keys written and the
    link rows kept (None: all of them).
    """
    done = 0
    kept: list[IntArray] = []
    for keep, source, target in returned_links(reader, flats, block, index):
        if keep is not None:
            kept.append(keep)
        part = out[done : done + len(source)]
        np.left_shift(source, bits, out=part)
        part |= target
        done += len(source)
    return done, np.concatenate(kept) if kept else None


def linked_edges(
    reader: LevelReader,
    flats: IntArray,
    index: IntArray,
    names: Sequence[str],
    n_vertices: int,
    fetched: Mapping[str, RowBlock] | None = None,
) -> tuple[IntArray, dict[str, Column]]:
    """Every stored edge between returned rows of chunks ``flats``, sorted, attributes along.

    ``index`` maps each row of the chunks' concatenation to its returned position (-1: not
    returned), as in :func:`read_with_links`; ``fetched`` holds link rows of ``flats``
    fetched already (:func:`link_blocks`).  Edges are (E, 2) returned positions (below
    ``n_vertices``) sorted by ``(source, target)``; each goes straight to its sort key.
    """
    fetched = fetched or {}
    # also with no chunks: empty columns keep their dtype
    blocks = {
        p: fetched[p] if p in fetched else reader.rows(p, flats)
        for p in (L.LINKS, L.CROSS_CHUNK_LINKS)
        if reader.has(p)
    }
    cross = None
    if L.CROSS_CHUNK_LINKS in blocks:
        cross = cross_link_piece(reader, flats, index, names, blocks[L.CROSS_CHUNK_LINKS])
    local = blocks.get(L.LINKS)
    bits = max(n_vertices - 1, 1).bit_length()
    key = np.empty((0 if local is None else len(local.values)) + len(cross or ()), np.int64)
    cols: dict[str, list[Column]] = {n: [] for n in names}
    done = 0
    if local is not None:
        done, keep = local_link_keys(reader, flats, local, index, bits, key)
        for n in names:
            col = reader.aligned_column(f"{L.LINK_ATTRIBUTES}/{n}", flats, local)
            cols[n].append(col if keep is None else take_column(col, keep))
    if cross is not None:
        part = key[done : done + len(cross)]
        np.left_shift(cross.source, bits, out=part)
        part |= cross.target
        done += len(cross)
        for n in names:
            cols[n].append(cross.attributes[n])
    attrs = {
        n: Column(np.concatenate([c.values for c in cs]), cs[0].categories)
        for n, cs in cols.items()
        if cs
    }
    if done == 0:
        return np.zeros((0, 2), dtype=np.int64), attrs
    return sorted_by_key(key[:done], bits, attrs)
