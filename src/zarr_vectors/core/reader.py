"""The one read pipeline: plan which chunks a query needs, fetch them in a batch, decode rows.

:class:`LevelReader` caches everything small (root and level metadata, ``vertex_counts``,
array attributes) so repeated queries on one open store cost only payload reads.  Geometry
types build their results from the primitives here: :meth:`LevelReader.rows` (decoded
payloads of many chunks), :meth:`LevelReader.object_refs` (manifest rows of some objects) and
:meth:`LevelReader.gather_objects` (whole objects in traversal order).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.codec_policy import check_codecs
from zarr_vectors.core.columns import Column, GroupTable
from zarr_vectors.core.draco import decode_payloads
from zarr_vectors.core.payload.compression import (
    SOURCE_COMPRESSOR,
    Compressor,
    CompressorSpec,
    compressor_spec,
)
from zarr_vectors.core.payload.dense import (
    dense_chunk_count,
    dense_chunks,
    read_dense_rows,
    read_dense_whole,
)
from zarr_vectors.core.payload.element import Blob
from zarr_vectors.core.payload.local_nodes import local_members, malformed_documents
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.ragged import concat_ranges, offsets_from_counts, unique_sorted
from zarr_vectors.core.recycle import take_result
from zarr_vectors.core.scratch import SCRATCH, Lease
from zarr_vectors.core.segments import (
    is_segment_path,
    listed_segments,
    merge_rows,
    segment_path,
)
from zarr_vectors.core.store import open_level, read_root_metadata
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.errors import (
    CorruptPayloadError,
    InvalidInputError,
    MetadataValidationError,
    StoreNotFoundError,
)
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Encoding
from zarr_vectors.spec.metadata import BoundingBox, LevelMetadata, RootMetadata

__all__ = [
    "BBoxLike",
    "LevelReader",
    "ObjectRanges",
    "ObjectRows",
    "RowBlock",
    "RowRanges",
    "check_link_rows",
    "parse_bbox",
]

IntArray = npt.NDArray[np.int64]
BBoxLike = BoundingBox | Sequence[Sequence[float]] | npt.NDArray[np.floating]
"""A query box: ``BoundingBox``, ``(min, max)`` pair of D-sequences, or a (2, D) array."""


def parse_bbox(bbox: BBoxLike, ndim: int) -> BoundingBox:
    """Normalise a query box to :class:`BoundingBox` (half-open ``min <= p < max``)."""
    if isinstance(bbox, BoundingBox):
        box = bbox
    else:
        try:
            arr = np.asarray(bbox, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            raise InvalidInputError(f"bbox must be (min, max) numbers: {exc}") from exc
        if arr.shape != (2, ndim):
            raise InvalidInputError(
                f"bbox must be (min, max) with {ndim} values each, got shape {arr.shape}"
            )
        box = BoundingBox(min=tuple(arr[0].tolist()), max=tuple(arr[1].tolist()))
    if box.ndim != ndim:
        raise InvalidInputError(f"bbox has {box.ndim} dimensions, the store has {ndim}")
    return box


def _categories(attrs: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    """Return the ``categories`` attribute of an array (a list of strings), or None."""
    cats = attrs.get("categories")
    if cats is None:
        return None
    if not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
        raise CorruptPayloadError(f"{name}: the categories attribute is not a list of strings")
    return tuple(cats)


def check_link_rows(
    values: npt.NDArray[Any], offsets: IntArray, counts: IntArray, where: str
) -> None:
    """Raise unless every chunk's stored link rows lie inside that chunk.

    ``values`` (L, k) are the ``links`` rows of consecutive chunks (CSR ``offsets``);
    ``counts`` the rows of each chunk.  One reduction per chunk, no (L, k) temporaries.
    """
    if not len(values):
        return
    if len(counts) == 1:  # one chunk (read chunk by chunk): no per-chunk reduction
        if values.min() < 0 or values.max() >= counts[0]:
            raise CorruptPayloadError(f"{where}: a link names a row outside its chunk")
        return
    full = np.diff(offsets) > 0
    top = np.maximum.reduceat(values, offsets[:-1][full], axis=0).max(axis=1)
    if values.min() < 0 or (top >= counts[full]).any():
        raise CorruptPayloadError(f"{where}: a link names a row outside its chunk")


def _every_row_in_order(starts: IntArray, ends: IntArray, n_rows: int) -> bool:
    """Whether the row ranges ``starts[i]:ends[i]`` tile rows ``0..n_rows-1`` in order."""
    return (
        len(starts) > 0
        and int((ends - starts).sum()) == n_rows
        and starts[0] == 0
        and bool((starts[1:] == ends[:-1]).all())
    )


_PARALLEL_REF_CHUNKS = 8
"""Manifest chunks (16,384 refs each) from which a whole-index read decodes in two threads."""

_REF_BLOCK = 1 << 16
"""Manifest refs checked per pass (their columns stay in cache)."""


def _chunk_starts(ref_chunks: IntArray, bound: int, counts: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct ``ref_chunks`` (ascending, in ``[0, bound)``) and each ref's chunk's first row.

    First rows count in the concatenation of the distinct chunks (``counts``: rows of every
    chunk).  A table over ``[0, bound)`` when that is small next to ``ref_chunks`` (no sort, one
    gather); sort + binary search otherwise.
    """
    if ref_chunks.size and bound <= 4 * ref_chunks.size + 4096:
        present = np.zeros(bound, dtype=bool)
        present[ref_chunks] = True
        chunks = np.flatnonzero(present).astype(np.int64)
        table = np.zeros(bound, dtype=np.int64)
        table[chunks] = offsets_from_counts(counts[chunks])[:-1]
        return chunks, table[ref_chunks]
    chunks = unique_sorted(ref_chunks)
    first = offsets_from_counts(counts[chunks])[:-1]
    return chunks, first[np.searchsorted(chunks, ref_chunks)]


@dataclass(frozen=True)
class RowBlock:
    """Decoded rows of one per-chunk array over several chunks, concatenated in chunk order."""

    values: npt.NDArray[Any]
    """(M, K) rows."""
    offsets: IntArray
    """(n_chunks + 1,) CSR offsets of each requested chunk's rows."""


@dataclass(frozen=True)
class RowRanges:
    """Row ranges ``[starts, starts + counts)`` in a :class:`RowBlock`'s concatenated rows."""

    starts: IntArray
    """First row of each range."""
    counts: IntArray
    """Rows in each range."""


@dataclass(frozen=True)
class ObjectRanges:
    """Where the vertices of some objects are, as row ranges, in traversal order."""

    object_ids: IntArray
    """Dense ids of the objects, in the requested order."""
    offsets: IntArray
    """(n + 1,) CSR offsets of each object's vertices in the ranges' rows."""
    chunks: IntArray
    """Flat indices of the chunks fetched, ascending."""
    ranges: RowRanges
    """The rows, in order, as ranges (one per manifest ref) of the chunks' concatenated rows
    (``RowBlock`` order)."""

    @property
    def n_rows(self) -> int:
        """Number of vertices of all the objects."""
        return int(self.offsets[-1])

    def expand(self, lease: Lease | None = None) -> ObjectRows:
        """Return the rows one by one (in ``lease`` buffers, when given)."""
        starts, counts = self.ranges.starts, self.ranges.counts
        if bool((counts == 1).all()):  # refs of one vertex each: the rows are the starts
            rows = starts
        else:
            out = None if lease is None else lease.array(self.n_rows, np.int64)
            rows = concat_ranges(starts, counts, out)
        return ObjectRows(self.object_ids, self.offsets, self.chunks, self.ranges, rows)


@dataclass(frozen=True)
class ObjectRows(ObjectRanges):
    """:class:`ObjectRanges` with the rows one by one."""

    rows: IntArray
    """Indices into the concatenated rows of ``chunks`` (``RowBlock`` order)."""


def _vertex_aligned(path: str) -> bool:
    """Whether the payload array ``path`` has one row per vertex (``vertex_counts`` rows)."""
    return path == L.VERTICES or path.startswith(L.ATTRIBUTES + "/")


class LevelReader:
    """Read access to one resolution level of an open store."""

    def __init__(self, root: zarr.Group, level: int = 0) -> None:
        self.root = root
        self.meta: RootMetadata = read_root_metadata(root)
        self.group = open_level(root, level)
        attrs = self.group.attrs.asdict()
        self.level_meta: LevelMetadata = LevelMetadata.from_dict(attrs)
        self.meta.check_level(self.level_meta, self.group.path)
        self._declares_vertices = attrs.get("vertex_count") is not None
        self.segments = listed_segments(attrs, self.group.path)
        self._merge_memo: dict[str, object] = {}
        """Append segments merged into this level's per-chunk arrays (core/segments.py)."""
        grid = self.meta.chunk_grid
        if grid is None:
            raise StoreNotFoundError("root metadata has no chunk_grid; cannot locate chunks")
        self.layout = ChunkLayout(self.meta.chunk_shape, self.level_meta.bin_shape, grid)
        self._arrays: dict[str, PayloadArray] = {}
        self._cache: dict[tuple[str, int], bytes | memoryview] | None = None
        self._stored_cache: dict[tuple[str, int], Blob | None] | None = None
        self._dense_cache: dict[tuple[str, int], Any] = {}

    @classmethod
    def for_payloads(
        cls, group: zarr.Group, layout: ChunkLayout, vertex_counts: IntArray
    ) -> LevelReader:
        """Return a reader of a level's payloads before its metadata is written.

        For the finishing step of writers (statistics from the written rows): only payload
        reads (:meth:`rows`, :meth:`column`, :meth:`names`) work; ``meta`` and ``level_meta``
        are unset.
        """
        self = cls.__new__(cls)
        self.root = group
        self.group = group
        self.layout = layout
        self._arrays = {}
        self._cache = None
        self._stored_cache = None
        self._dense_cache = {}
        self.segments = ()
        self._merge_memo = {}
        self.__dict__["vertex_counts"] = np.asarray(vertex_counts, dtype=np.int64).ravel()
        return self

    # -- metadata -----------------------------------------------------------------------------

    @cached_property
    def vertex_counts(self) -> IntArray:
        """Vertices per chunk, flat over the grid."""
        counts = read_dense_whole(self.node(L.VERTEX_COUNTS)).astype(np.int64).ravel()
        if counts.size != self.layout.n_chunks:
            raise CorruptPayloadError(
                f"{self.group.path}/{L.VERTEX_COUNTS} has {counts.size} entries, the chunk grid "
                f"has {self.layout.n_chunks}"
            )
        negative = np.flatnonzero(counts < 0)
        if negative.size:
            flat = negative[:1]
            raise CorruptPayloadError(
                f"{self.group.path}/{L.VERTEX_COUNTS}: chunk "
                f"{self.layout.coords_of_flat(flat)[0].tolist()} has a negative count "
                f"({counts[flat[0]]})"
            )
        if self._declares_vertices and int(counts.sum()) != self.level_meta.vertex_count:
            raise CorruptPayloadError(
                f"{self.group.path}/{L.VERTEX_COUNTS} sums to {int(counts.sum())} vertices, the "
                f"level attributes say vertex_count {self.level_meta.vertex_count} (a chunk of "
                "vertex_counts is missing or was changed)"
            )
        return counts

    @cached_property
    def _nodes(self) -> dict[str, zarr.Array[Any] | zarr.Group]:
        # one listing plus concurrent metadata reads for the whole level
        try:
            with quiet_vlen():
                local = local_members(self.group)
                return dict(self.group.members(max_depth=None)) if local is None else local
        except (ValueError, TypeError, KeyError, RecursionError) as exc:  # bad or deep JSON
            bad = ", ".join(malformed_documents(self.group)) or "a Zarr metadata document"
            raise MetadataValidationError(
                f"level {self.group.path}: {bad} is malformed ({exc}); run `zarr-vectors "
                "validate` for details"
            ) from exc

    def has(self, path: str) -> bool:
        """Whether a node exists at ``path`` in the level group (or in one of its segments)."""
        return path in self._nodes or self._in_segment(path) is not None

    def has_own(self, path: str) -> bool:
        """Whether the level group itself (not a segment) holds a node at ``path``."""
        return path in self._nodes

    def _in_segment(self, path: str) -> str | None:
        """Path of ``path`` in the first segment holding it (None: none does)."""
        if not self.segments or is_segment_path(path):
            return None
        return next((p for s in self.segments if (p := segment_path(s, path)) in self._nodes), None)

    def node(self, path: str) -> zarr.Array[Any]:
        """Return the array at ``path``, raising ``StoreNotFoundError`` if absent."""
        node = self._nodes.get(path)
        if not isinstance(node, zarr.Array):
            raise StoreNotFoundError(f"array {self.group.path}/{path} does not exist")
        check_codecs(node)  # no chunk of an array with a foreign codec is ever decoded
        return node

    def names(self, prefix: str) -> list[str]:
        """Names of the arrays under ``prefix`` (``attributes``, ``object_attributes``, ...)."""
        heads = [prefix + "/"]
        if not is_segment_path(prefix):
            heads += [segment_path(s, prefix) + "/" for s in self.segments]
        return sorted(
            {
                k[len(head) :]
                for head in heads
                for k, v in self._nodes.items()
                if k.startswith(head) and "/" not in k[len(head) :] and isinstance(v, zarr.Array)
            }
        )

    def payload(self, path: str) -> PayloadArray:
        """Return (and cache) the payload array at ``path``."""
        if path not in self._arrays:
            node = self.node(path if path in self._nodes else self._in_segment(path) or path)
            if tuple(node.shape) != tuple(self.layout.grid.shape):
                raise CorruptPayloadError(
                    f"{node.name}: shape {list(node.shape)} differs from the chunk grid "
                    f"{list(self.layout.grid.shape)} (the array's metadata was changed)"
                )
            self._arrays[path] = PayloadArray(node)
        return self._arrays[path]

    # -- chunks -------------------------------------------------------------------------------

    def chunks(self, bbox: BoundingBox | None = None) -> IntArray:
        """Flat indices of non-empty chunks, all or those intersecting ``bbox``."""
        if bbox is None:
            return np.flatnonzero(self.vertex_counts).astype(np.int64)
        touching = self.layout.chunks_touching(bbox)
        return np.sort(touching[self.vertex_counts[touching] > 0])

    def compressors(self) -> dict[str, Compressor | str]:
        """Return a ``compressor=`` mapping compressing each array as this level's own is.

        Keyed by array path (``"vertices"``, ``"attributes/fa"``, ...; see
        :func:`~zarr_vectors.core.payload.compression.compressor_spec`), with ``"*"`` (arrays this level
        lacks) as ``vertices``.
        """
        with quiet_vlen():
            members = self.group.members(max_depth=None)
        out = {
            name: compressor_spec(node) for name, node in members if isinstance(node, zarr.Array)
        }
        out["*"] = out.get(L.VERTICES, "default")
        return out

    def shards(self) -> tuple[int, ...] | None:
        """Chunks per shard of this level's payload arrays (as ``vertices``), or None."""
        with quiet_vlen():
            shards = self.payload(L.VERTICES).array.shards
        return None if shards is None else tuple(int(s) for s in shards)

    def aligned_shards(self) -> tuple[int, ...] | None:
        """Return :meth:`shards` when the grid origin is a multiple of them, else None.

        Stores written by this version align sharded grids so (see
        :func:`~zarr_vectors.core.chunking.grid_for_bounds`); older ones may not be.
        """
        shards = self.shards()
        origin = self.layout.grid.origin
        if shards is None or any(o % s for o, s in zip(origin, shards, strict=True)):
            return None
        return shards

    def compressor_for(
        self, spec: CompressorSpec, zarr_format: int | None = None
    ) -> CompressorSpec:
        """Return ``spec``, or :meth:`compressors` when it is ``"source"``.

        For a store of another ``zarr_format`` than this one, codecs other than the presets
        (whose classes differ between Zarr v2 and v3) become the default compressor.
        """
        if not (isinstance(spec, str) and spec == SOURCE_COMPRESSOR):
            return spec
        own = self.compressors()
        if zarr_format is None or zarr_format == self.group.metadata.zarr_format:
            return own
        return {k: v if v is None or isinstance(v, str) else "default" for k, v in own.items()}

    @contextmanager
    def caching(self) -> Iterator[None]:
        """Keep fetched payloads for the duration of the block (multi-phase queries)."""
        self._cache = {}
        self._stored_cache = {}
        try:
            yield
        finally:
            self._cache = None
            self._stored_cache = None

    def _payloads(self, path: str, flats: IntArray) -> Sequence[bytes | memoryview]:
        arr = self.payload(path)
        if self._cache is None:
            return arr.read(flats)
        cache = self._cache
        missing = np.array([f for f in flats.tolist() if (path, f) not in cache], np.int64)
        for f, p in zip(missing.tolist(), arr.read(missing), strict=True):
            cache[(path, f)] = p
        return [cache[(path, f)] for f in flats.tolist()]

    def rows(self, path: str, flats: IntArray, lease: Lease | None = None) -> RowBlock:
        """Fetch and decode the rows of ``path`` for the chunks ``flats``.

        With a ``lease`` the rows may be in its buffers (valid while it lasts; not cached):
        for callers that only read them into results of their own.  To decode only some
        rows of vertex-aligned arrays, use :meth:`rows_at`.  A level with append segments
        returns the merged rows of its base and segments.
        """
        if self.segments and not is_segment_path(path):
            return self._merged_rows(path, flats)
        return self._own_rows(path, flats, lease)

    def _own_rows(self, path: str, flats: IntArray, lease: Lease | None) -> RowBlock:
        """Return the rows of the array ``path`` itself (no segment merge)."""
        arr = self.payload(path)
        dtype, width = self._dtype_width(arr)
        encoding = arr.attrs.get("encoding", Encoding.RAW.value)
        if encoding == Encoding.RAW.value:
            block = self._concat_rows(arr, path, flats, dtype, width, lease)
            if block is not None:
                return block
        payloads = self._payloads(path, flats)
        if encoding == Encoding.DRACO.value:  # vertices only: row counts from vertex_counts
            counts = self.vertex_counts[flats]
            values = decode_payloads(payloads, counts, width, arr.name).astype(dtype, copy=False)
            return RowBlock(values, offsets_from_counts(counts))
        if encoding != Encoding.RAW.value:
            raise CorruptPayloadError(f"{arr.name}: unknown encoding {encoding!r}")
        data = np.frombuffer(b"".join(payloads), dtype=np.uint8)
        return self._raw_block(
            arr.name, path, flats, dtype, width, data, [len(p) for p in payloads]
        )

    def _merged_rows(self, path: str, flats: IntArray) -> RowBlock:
        def read(part: str) -> tuple[npt.NDArray[Any], IntArray] | None:
            if part not in self._nodes:
                return None
            block = self._own_rows(part, flats, None)
            return block.values, block.offsets

        by_bin = not self.has(L.OBJECT_OFFSETS)  # point clouds without objects
        key = flats.tobytes()
        if self._merge_memo.get("key") != key:
            self._merge_memo = {"key": key}  # the arrays of one query share the merge plan
        counts = self.vertex_counts[flats]
        values, offsets = merge_rows(path, self.segments, read, counts, by_bin, self._merge_memo)
        return RowBlock(values, offsets)

    def chunk_rows(self, path: str, flats: IntArray) -> Iterator[tuple[int, npt.NDArray[Any]]]:
        """Yield ``(i, rows of chunk flats[i])`` for the chunks holding rows, in order.

        Blosc payloads are decoded one chunk at a time into a buffer reused for the next
        chunk (use or copy the rows before advancing): a consumer working chunk by chunk
        keeps its data in cache.  Other payloads are decoded whole first.
        """
        arr = self.payload(path)
        dtype, width = self._dtype_width(arr)
        raw = arr.attrs.get("encoding", Encoding.RAW.value) == Encoding.RAW.value
        with SCRATCH.lease() as lease:
            fresh = raw and not self._any_cached(path, flats) and not self.segments
            chunks = arr.iter_decoded(flats, lease) if fresh else None
            if chunks is None:
                block = self.rows(path, flats)
                off = block.offsets.tolist()
                for i in range(len(flats)):
                    if off[i + 1] > off[i]:
                        yield i, block.values[off[i] : off[i + 1]]
                return
            row_bytes = dtype.itemsize * width
            for i, data in chunks:
                if len(data) % row_bytes:
                    raise self._not_whole_rows(arr.name, flats[i], len(data), width, dtype)
                if len(data):
                    yield i, data.view(dtype).reshape(-1, width)

    def _concat_rows(
        self,
        arr: PayloadArray,
        path: str,
        flats: IntArray,
        dtype: np.dtype[Any],
        width: int,
        lease: Lease | None,
    ) -> RowBlock | None:
        """Decode whole chunks straight into one array (Blosc, zstd, none); else None."""
        if self._any_cached(path, flats):
            return None
        expected = None
        if (
            _vertex_aligned(path) and not self.segments
        ):  # their row counts are known: so are their sizes
            expected = (self.vertex_counts[flats] * (dtype.itemsize * width)).tolist()
        joined = arr.read_concat(flats, lease, expected)
        if joined is None:
            return None
        data, sizes = joined
        cache = self._cache
        if cache is not None and lease is None:  # later phases of this query reuse the rows
            ends = list(accumulate(sizes))
            for f, a, b in zip(flats.tolist(), [0, *ends], ends, strict=False):
                cache[(path, f)] = data[a:b].data
        return self._raw_block(arr.name, path, flats, dtype, width, data, sizes)

    def _raw_block(
        self,
        name: str,
        path: str,
        flats: IntArray,
        dtype: np.dtype[Any],
        width: int,
        data: npt.NDArray[np.uint8],
        sizes: Sequence[int],
    ) -> RowBlock:
        """Rows of raw payloads already concatenated (``sizes``: bytes per chunk)."""
        row_bytes = dtype.itemsize * width
        counts = np.asarray(sizes, dtype=np.int64)
        bad = np.flatnonzero(counts % row_bytes)
        if bad.size:
            i = int(bad[0])
            raise self._not_whole_rows(name, flats[i], int(counts[i]), width, dtype)
        counts //= row_bytes
        if _vertex_aligned(path) and not self.segments:  # segments: checked merged
            self._check_row_counts(name, flats, counts)
        values = data.view(dtype).reshape(-1, width)
        return RowBlock(values, offsets_from_counts(counts))

    def _any_cached(self, path: str, flats: IntArray) -> bool:
        """Whether an earlier phase of this query holds decoded rows of ``path`` in ``flats``."""
        cache = self._cache
        return cache is not None and any((path, f) in cache for f in flats.tolist())

    def _not_whole_rows(
        self, name: str, flat: int, nbytes: int, width: int, dtype: np.dtype[Any]
    ) -> CorruptPayloadError:
        """Return the error for a chunk whose ``nbytes`` are not whole rows."""
        coords = self.layout.coords_of_flat(np.array([flat], dtype=np.int64))[0].tolist()
        return CorruptPayloadError(
            f"{name} chunk {coords}: {nbytes} bytes is not a whole number of {width}x{dtype} rows"
        )

    def _check_row_counts(self, name: str, flats: IntArray, counts: IntArray) -> None:
        """Raise unless each chunk of a vertex-aligned array holds ``vertex_counts`` rows."""
        expected = self.vertex_counts[flats]
        bad = np.flatnonzero(counts != expected)
        if bad.size:
            i = int(bad[0])
            raise CorruptPayloadError(
                f"{name} chunk {self.layout.coords_of_flat(flats[i : i + 1])[0].tolist()}: "
                f"{counts[i]} rows, vertex_counts says {expected[i]}"
            )

    def rows_at(
        self, path: str, flats: IntArray, want: RowRanges, rows: IntArray
    ) -> npt.NDArray[Any]:
        """Return ``self.rows(path, flats).values[rows]`` decoding only the ``want`` ranges.

        ``rows`` index the concatenated rows of ``flats`` and must lie inside ``want``
        (vertex-aligned arrays only: ``vertices``, ``attributes/*``).  Seekable payloads
        decode only the frames (blocks) holding the ranges, and the rows are gathered into
        an array of just the wanted rows, never one spanning every row of the chunks.
        """
        arr = self.payload(path)
        if arr.attrs.get("encoding", Encoding.RAW.value) == Encoding.RAW.value:
            got = self._compact_rows(arr, path, flats, want)
            if got is not None:
                values, starts, first = got
                k = np.searchsorted(starts, rows, side="right") - 1
                return take_result(values, first[k] + (rows - starts[k]))
        with SCRATCH.lease() as lease:  # the decoded chunks live only until gathered
            block = self.rows(path, flats, lease)
            return take_result(block.values, rows)  # np.take: faster than fancy indexing

    def column_at(self, path: str, flats: IntArray, want: RowRanges, rows: IntArray) -> Column:
        """Like :meth:`rows_at` for an attribute array, as a :class:`Column`."""
        values = self.rows_at(path, flats, want, rows)
        return self._as_column(values, self.payload(path).attrs, f"{self.group.path}/{path}")

    def _compact_rows(
        self, arr: PayloadArray, path: str, flats: IntArray, want: RowRanges
    ) -> tuple[npt.NDArray[Any], IntArray, IntArray] | None:
        """Decode the ``want`` ranges into one array of just those rows.

        Returns the rows (ranges in ascending start order, concatenated), the sorted range
        starts and each range's first row in the result; None when partial decoding does not
        apply (then the caller decodes whole chunks).
        """
        cache = self._cache
        if self.segments or (cache is not None and all((path, f) in cache for f in flats.tolist())):
            return None  # merged from segments, or decoded whole by an earlier phase
        counts = self.vertex_counts[flats]
        if 2 * int(want.counts.sum()) > int(counts.sum()):
            return None  # most rows wanted: whole chunks decode faster than frame by frame
        local = arr.local_root is not None
        stored = None if local else self._stored(arr, path, flats)
        if stored is None and not local:
            return None
        dtype, width = self._dtype_width(arr)
        row_bytes = dtype.itemsize * width
        offsets = offsets_from_counts(counts)
        order = np.argsort(want.starts, kind="stable")
        starts, n = want.starts[order], want.counts[order]
        first = offsets_from_counts(n)
        chunk = np.searchsorted(offsets, starts, side="right") - 1
        cut = np.searchsorted(chunk, np.arange(len(flats) + 1)).tolist()
        local_starts = starts - offsets[chunk]
        byte_starts = local_starts * row_bytes
        byte_stops = byte_starts + n * row_bytes
        out = np.empty(int(first[-1]), dtype=np.dtype((np.void, row_bytes)))
        busy = [i for i in range(len(flats)) if cut[i + 1] > cut[i]]
        flat_list, count_list, first_list = flats.tolist(), counts.tolist(), first.tolist()
        # byte offset of each wanted row from its range's start, range by range
        step = (np.arange(int(first[-1]), dtype=np.int64) - np.repeat(first[:-1], n)) * row_bytes
        if stored is None:  # chunks decoded together are gathered at once
            ranges = (byte_starts, byte_stops, n, first)
            busy = _gather_many(arr, busy, flat_list, count_list, cut, ranges, step, out)
        scratch = np.empty(int(counts[busy].max()) * row_bytes if busy else 0, dtype=np.uint8)
        for i in busy:
            a, b = cut[i], cut[i + 1]
            view = scratch[: count_list[i] * row_bytes]
            lo, hi = byte_starts[a:b], byte_stops[a:b]
            if stored is None:
                buf, pos = arr.decode_rows_local(flat_list[i], view, lo, hi)
            else:
                arr.decode_rows(flat_list[i], stored[i], view, lo, hi)
                buf, pos = view, lo
            fa, fb = first_list[a], first_list[b]
            out[fa:fb] = _rows_from(buf, row_bytes)[np.repeat(pos, n[a:b]) + step[fa:fb]]
        values = out.view(dtype).reshape(-1, width)
        return values, starts, first[:-1]

    def _dtype_width(self, arr: PayloadArray) -> tuple[np.dtype[Any], int]:
        """Row dtype and width of a payload array, from its attributes."""
        attrs = arr.attrs
        try:
            dtype = np.dtype(attrs["dtype"])
            width = int(attrs["width"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptPayloadError(f"{arr.name}: bad dtype/width attributes ({exc})") from exc
        if dtype.kind not in "biufc" or dtype.itemsize == 0 or width < 1:
            raise CorruptPayloadError(f"{arr.name}: bad dtype/width attributes ({dtype}, {width})")
        return dtype, width

    def _stored(
        self, arr: PayloadArray, path: str, flats: IntArray
    ) -> Sequence[Blob | None] | None:
        """Return the stored (encoded) payloads of ``flats``, cached like decoded ones."""
        cache = self._stored_cache
        if cache is None:
            return arr.fetch(flats)
        missing = np.array([f for f in flats.tolist() if (path, f) not in cache], np.int64)
        got = arr.fetch(missing)
        if got is None:
            return None
        for f, data in zip(missing.tolist(), got, strict=True):
            cache[(path, f)] = data
        return [cache[(path, f)] for f in flats.tolist()]

    def column(self, path: str, flats: IntArray) -> Column:
        """Fetch an attribute payload as a :class:`Column` (shape and categories restored)."""
        block = self.rows(path, flats)
        return self._as_column(block.values, self.payload(path).attrs, f"{self.group.path}/{path}")

    @staticmethod
    def _as_column(values: npt.NDArray[Any], attrs: Mapping[str, Any], name: str = "") -> Column:
        try:
            shape = tuple(int(s) for s in attrs.get("shape", values.shape[1:2]))
            vals = values.reshape((len(values), *shape))
        except (TypeError, ValueError) as exc:
            raise CorruptPayloadError(f"{name}: bad shape attribute ({exc})") from exc
        return Column(vals, _categories(attrs, name))

    # -- objects ------------------------------------------------------------------------------

    @cached_property
    def object_offsets(self) -> IntArray:
        """CSR offsets of the object manifest (n_objects + 1,)."""
        off = self._dense(L.OBJECT_OFFSETS).astype(np.int64)
        n_refs = int(self.node(L.OBJECT_MANIFEST).shape[0])
        if (
            off.ndim != 1
            or not len(off)
            or off[0] != 0
            or off[-1] != n_refs
            or (np.diff(off) < 0).any()
        ):
            raise CorruptPayloadError(
                f"{self.group.path}/{L.OBJECT_OFFSETS} are not CSR offsets over {n_refs} "
                "manifest refs (they must start at 0, never decrease and end at the ref count)"
            )
        return off

    @property
    def n_objects(self) -> int:
        """Number of object ids at this level (0 when the level has no object index)."""
        if not self.has(L.OBJECT_OFFSETS):
            return 0
        return max(int(self.node(L.OBJECT_OFFSETS).shape[0]) - 1, 0)

    def _offsets_of(self, ids: IntArray) -> tuple[IntArray, IntArray]:
        """Manifest ranges ``[starts, ends)`` of ``ids`` (reads only their offsets).

        Many ids, or a large share of them, read all offsets at once (row lookups decode
        block by block, which costs more than one whole read once most blocks are needed).
        """
        if "object_offsets" in self.__dict__ or len(ids) > 4096 or 4 * len(ids) > self.n_objects:
            offsets = self.object_offsets
            return offsets[ids], offsets[ids + 1]
        node = self.node(L.OBJECT_OFFSETS)
        if node.ndim != 1:
            raise CorruptPayloadError(f"{node.path} has shape {list(node.shape)}, expected 1-D")
        pair = read_dense_rows(node, np.concatenate([ids, ids + 1]), self._dense_cache)
        pair = pair.astype(np.int64)
        starts, ends = pair[: len(ids)], pair[len(ids) :]
        n_refs = int(self.node(L.OBJECT_MANIFEST).shape[0])
        if len(ids) and ((starts < 0).any() or (ends < starts).any() or (ends > n_refs).any()):
            raise CorruptPayloadError(
                f"{self.group.path}/{L.OBJECT_OFFSETS} are not CSR offsets over {n_refs} "
                "manifest refs"
            )
        return starts, ends

    def dense_ids(self, ids: npt.ArrayLike) -> IntArray:
        """Validate dense object ids."""
        arr = np.asarray(ids, dtype=np.int64).ravel()
        n = self.n_objects
        bad = (arr < 0) | (arr >= n)
        if bad.any():
            raise InvalidInputError(
                f"object id {int(arr[np.argmax(bad)])} out of range (store has {n} objects)"
            )
        return arr

    def object_refs(self, ids: IntArray) -> tuple[IntArray, IntArray]:
        """Return manifest rows of ``ids`` in order, and the number of refs of each id."""
        refs, counts, _ = self._refs_and_chunks(ids)
        return refs, counts

    def _refs_and_chunks(self, ids: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """Manifest rows of ``ids``, refs per id, and (3, n_refs) chunk, start, count of each.

        The refs are checked (:meth:`_check_refs`).
        """
        return self._refs_between(*self._offsets_of(ids))

    def _refs_between(
        self, starts: IntArray, ends: IntArray
    ) -> tuple[IntArray, IntArray, IntArray]:
        """:meth:`_refs_and_chunks` of the manifest rows ``starts[i]:ends[i]``."""
        counts = ends - starts
        if int(counts.sum()) == 0:
            empty = np.zeros((3, 0), dtype=np.int64)
            return np.zeros((0, self.layout.ndim + 2), dtype=np.int64), counts, empty
        manifest = self.node(L.OBJECT_MANIFEST)
        take: IntArray | None = None  # manifest rows read; None: all of them, in order
        if _every_row_in_order(starts, ends, manifest.shape[0]):
            refs = read_dense_whole(manifest)  # every ref, in order: one whole read
        else:
            if len(self._dense_cache) > 256:  # bound the decoded-chunk cache (~40 MB)
                self._dense_cache.clear()
            take = concat_ranges(starts, counts)
            refs = read_dense_rows(manifest, take, self._dense_cache)
        refs = refs.astype(np.int64, copy=False)
        return refs, counts, self._check_refs(refs, take)

    def _ref_locations(self, ids: IntArray) -> tuple[IntArray, IntArray]:
        """Refs per id and the (3, n_refs) chunk, first row and row count of each, checked.

        :meth:`_refs_and_chunks` without the manifest rows: when ``ids`` name every ref in
        order, the manifest is decoded and checked chunk by chunk (cache resident), never
        held whole (40 MB for a million refs).
        """
        starts, ends = self._offsets_of(ids)
        manifest = self.node(L.OBJECT_MANIFEST)
        shape = tuple(manifest.shape)
        n_chunks = None
        well_formed = len(shape) == 2 and shape[1] == self.layout.ndim + 2  # else: raised below
        if well_formed and shape[0] and _every_row_in_order(starts, ends, shape[0]):
            n_chunks = dense_chunk_count(manifest)
        if n_chunks is None:
            _, counts, located = self._refs_between(starts, ends)
            return counts, located
        out = np.zeros((3, shape[0]), dtype=np.int64)

        def check_chunks(chunks: range) -> None:
            blocks = dense_chunks(manifest, chunks)
            assert blocks is not None  # dense_chunk_count said so
            for lo, refs in blocks:
                hi = lo + len(refs)
                self._check_ref_block(refs.astype(np.int64, copy=False), out[:, lo:hi], lo, None)

        if n_chunks < _PARALLEL_REF_CHUNKS:
            check_chunks(range(n_chunks))
        else:  # decoding releases the GIL: the halves run side by side
            half = n_chunks // 2
            with ThreadPoolExecutor(max_workers=1) as pool:
                upper = pool.submit(check_chunks, range(half, n_chunks))
                check_chunks(range(half))
                upper.result()
        return ends - starts, out

    def _check_refs(self, refs: IntArray, rows: IntArray | None) -> IntArray:
        """(3, n_refs) flat chunk, first row and row count of each ref, checked.

        Raises unless every ref (manifest rows ``rows``, or all) lies inside its chunk.  Checked
        block by block, so that the passes over one block's columns hit the cache (whole-column
        passes over many refs do not).
        """
        d = self.layout.ndim
        if refs.ndim != 2 or refs.shape[1] != d + 2:
            raise CorruptPayloadError(
                f"{self.group.path}/{L.OBJECT_MANIFEST} has shape {list(refs.shape)}, expected "
                f"(n_refs, {d + 2})"
            )
        out = np.zeros((3, len(refs)), dtype=np.int64)
        for lo in range(0, len(refs), _REF_BLOCK):
            hi = lo + _REF_BLOCK
            self._check_ref_block(refs[lo:hi], out[:, lo:hi], lo, rows)
        return out

    def _check_ref_block(
        self, refs: IntArray, out: IntArray, first: int, rows: IntArray | None
    ) -> None:
        """Fill ``out`` (zeros) with the chunk, start and count of refs; raise for one outside.

        A negative value wraps to a huge unsigned one: each bound is one unsigned comparison.
        """
        d = self.layout.ndim
        where = f"{self.group.path}/{L.OBJECT_MANIFEST}"
        grid = self.layout.grid
        flat, start, count = out
        outside = np.zeros(len(refs), dtype=bool)
        for axis, (lo, n) in enumerate(zip(grid.origin, grid.shape, strict=True)):
            idx = refs[:, axis] - int(lo)
            outside |= idx.view(np.uint64) >= int(n)
            flat *= int(n)
            flat += idx
        if outside.any():
            k = int(np.argmax(outside))
            raise CorruptPayloadError(
                f"{where}: ref {first + k if rows is None else int(rows[first + k])} "
                f"{refs[k].tolist()} names a chunk outside the chunk grid (origin "
                f"{list(grid.origin)}, shape {list(grid.shape)})"
            )
        have = self.vertex_counts[flat]
        start[:] = refs[:, d]
        count[:] = refs[:, d + 1]
        room = have - start
        # start < 0 | start > have | count < 0 | count > have - start, as unsigned compares
        bad = start.view(np.uint64) > have.view(np.uint64)
        bad |= count.view(np.uint64) > room.view(np.uint64)
        if bad.any():
            k = int(np.argmax(bad))
            raise CorruptPayloadError(
                f"{where}: ref {first + k if rows is None else int(rows[first + k])} "
                f"{refs[k].tolist()} names rows outside its chunk, which holds {have[k]} rows"
            )

    def check_object_index(self) -> None:
        """Check the whole object index, if any (reads every manifest ref: O(refs)).

        Raises
        ------
        CorruptPayloadError
            The offsets are not CSR over the manifest, or a ref lies outside its chunk.
        """
        if self.has(L.OBJECT_OFFSETS):
            _ = self.object_offsets  # validated (CSR over the manifest) when loaded
            self._check_refs(self._dense(L.OBJECT_MANIFEST).astype(np.int64), None)

    def gather_objects(self, ids: IntArray, lease: Lease | None = None) -> ObjectRows:
        """Locate the vertices of ``ids`` (traversal order) and the chunks holding them.

        With a ``lease`` the returned rows (:attr:`ObjectRows.rows`) may be in its buffers.
        """
        return self.locate_objects(ids).expand(lease)

    def locate_objects(self, ids: IntArray) -> ObjectRanges:
        """:meth:`gather_objects` with the rows left as ranges."""
        per_object, (ref_flat, first, n) = self._ref_locations(ids)
        bound = int(np.prod(self.layout.grid.shape, dtype=np.int64))
        chunks, starts = _chunk_starts(ref_flat, bound, self.vertex_counts)
        starts += first
        # objects' refs are consecutive: their vertex offsets are the ref offsets' row totals
        offsets = offsets_from_counts(n)[offsets_from_counts(per_object)]
        return ObjectRanges(ids, offsets, chunks, RowRanges(starts, n))

    def object_attributes(self, ids: IntArray | None) -> dict[str, Column]:
        """Per-object attributes for ``ids`` (all objects when None)."""
        out: dict[str, Column] = {}
        for name in self.names(L.OBJECT_ATTRIBUTES):
            path = f"{L.OBJECT_ATTRIBUTES}/{name}"
            arr = self.node(path)
            if not arr.ndim or arr.shape[0] != self.n_objects:
                raise CorruptPayloadError(
                    f"{arr.path} has shape {list(arr.shape)}, expected {self.n_objects} rows "
                    "(one per object)"
                )
            values = self._dense(path)
            out[name] = Column(values if ids is None else values[ids], _categories(arr.attrs, path))
        return out

    def _dense(self, path: str) -> npt.NDArray[Any]:
        """Read the whole dense array at ``path``, naming it when it cannot be decoded."""
        node = self.node(path)
        try:
            return read_dense_whole(node)  # zarr's own path: one call for the whole array
        except CorruptPayloadError:
            raise
        except Exception as exc:  # any codec error on untrusted bytes
            raise CorruptPayloadError(f"{node.path}: cannot decode ({exc!r})") from exc

    @cached_property
    def groups(self) -> GroupTable | None:
        """Named groups of objects, or None."""
        if not self.has(L.GROUP_OFFSETS):
            return None
        names = self._nodes[L.GROUPINGS].attrs.get("names", [])
        attrs: dict[str, Column] = {}
        for name in self.names(L.GROUPINGS_ATTRIBUTES):
            path = f"{L.GROUPINGS_ATTRIBUTES}/{name}"
            attrs[name] = Column(self._dense(path), _categories(self.node(path).attrs, path))
        offsets = self._dense(L.GROUP_OFFSETS).astype(np.int64)
        members = self._dense(L.GROUP_MEMBERS).astype(np.int64)
        if (
            not isinstance(names, list)
            or offsets.shape != (len(names) + 1,)
            or offsets[0] != 0
            or offsets[-1] != len(members)
            or (np.diff(offsets) < 0).any()
            or ((members < 0) | (members >= self.n_objects)).any()
        ):
            raise CorruptPayloadError(
                f"{self.group.path}/{L.GROUPINGS}: group names, offsets and members do not form "
                f"CSR groups of object ids below {self.n_objects}"
            )
        return GroupTable(tuple(str(n) for n in names), offsets, members, attrs)

    def aligned_column(self, path: str, flats: IntArray, like: RowBlock) -> Column:
        """Fetch an attribute whose rows align one for one with ``like`` (link attributes)."""
        got = self.rows(path, flats)
        wrong = np.flatnonzero(got.offsets[1:] != like.offsets[1:])
        if wrong.size:
            i = int(wrong[0])
            raise CorruptPayloadError(
                f"{self.group.path}/{path} chunk "
                f"{self.layout.coords_of_flat(flats[i : i + 1])[0].tolist()}: rows do not align "
                "with the links they describe"
            )
        return self._as_column(got.values, self.payload(path).attrs, f"{self.group.path}/{path}")

    def vertex_object_ids(self, flats: IntArray) -> IntArray:
        """Object id of every row of ``flats`` (from fragments; -1 where there is none)."""
        block = self.rows(L.VERTEX_FRAGMENTS, flats)
        frags = block.values.astype(np.int64, copy=False)
        self._check_fragments(frags, block.offsets, flats)
        return np.repeat(frags[:, 1], frags[:, 3])

    def _check_fragments(self, frags: IntArray, offsets: IntArray, flats: IntArray) -> None:
        """Raise unless fragments have counts >= 1 tiling each chunk and name known objects."""
        where = f"{self.group.path}/{L.VERTEX_FRAGMENTS}"
        if frags.shape[1] != 4:
            raise CorruptPayloadError(f"{where}: rows have width {frags.shape[1]}, expected 4")
        have = self.vertex_counts[flats]
        owner = np.repeat(np.arange(len(flats)), np.diff(offsets))
        obj, count = frags[:, 1], frags[:, 3]
        # object ids are 0..n_objects-1, or all -1 in a level without an object index
        lo, hi = (0, self.n_objects) if self.has(L.OBJECT_OFFSETS) else (-1, 0)
        bad = (obj < lo) | (obj >= hi) | (count < 1) | (count > have[owner])
        if bad.any():
            k = int(np.argmax(bad))
            i = int(owner[k])
            raise CorruptPayloadError(
                f"{where} chunk {self.layout.coords_of_flat(flats[i : i + 1])[0].tolist()}: "
                f"fragment {k - int(offsets[i])} {frags[k].tolist()} names an unknown object "
                f"or a row count outside 1..{have[i]}"
            )
        total = np.concatenate([[0], np.cumsum(count)])  # no overflow: counts <= max row count
        wrong = np.flatnonzero(total[offsets[1:]] - total[offsets[:-1]] != have)
        if wrong.size:
            i = int(wrong[0])
            raise CorruptPayloadError(
                f"{where} chunk {self.layout.coords_of_flat(flats[i : i + 1])[0].tolist()}: "
                f"fragments cover {int(total[offsets[i + 1]] - total[offsets[i]])} rows, "
                f"vertex_counts says {have[i]}"
            )


def _gather_many(
    arr: PayloadArray,
    busy: list[int],
    flats: list[int],
    counts: list[int],
    cut: list[int],
    ranges: tuple[IntArray, IntArray, IntArray, IntArray],
    step: IntArray,
    out: npt.NDArray[np.void],
) -> list[int]:
    """Decode and gather the rows of the chunks ``busy`` that decode together (local files).

    ``ranges``: byte starts and stops of the wanted ranges in their chunk, their row counts
    and first rows in ``out`` (one more entry), ranges of chunk ``i`` from ``cut[i]`` to
    ``cut[i + 1]``; ``step``: byte offset of each wanted row from its range's start.
    Returns the chunks of ``busy`` left to decode one by one.
    """
    byte_starts, byte_stops, n, first = ranges
    row_bytes = out.dtype.itemsize
    sizes = [counts[i] * row_bytes for i in busy]
    bounds = [(cut[i], cut[i + 1]) for i in busy]
    with SCRATCH.lease() as lease:  # the decoded blocks live only until gathered
        done, raw, pos = arr.decode_rows_local_many(
            [flats[i] for i in busy], sizes, byte_starts, byte_stops, bounds, lease
        )
        if not done:
            return busy
        chunks = [busy[j] for j in done]
        lo = np.asarray([cut[i] for i in chunks], dtype=np.int64)
        which = concat_ranges(lo, np.asarray([cut[i + 1] for i in chunks], dtype=np.int64) - lo)
        rows = concat_ranges(first[which], n[which])
        src = np.repeat(pos, n[which]) + step[rows]
        if len(rows) == len(out):  # every range: no scatter
            out[...] = _rows_from(raw, row_bytes)[src]
        else:
            out[rows] = _rows_from(raw, row_bytes)[src]
    left = set(chunks)
    return [i for i in busy if i not in left]


def _rows_from(buf: npt.NDArray[np.uint8], row_bytes: int) -> npt.NDArray[np.void]:
    """Every ``row_bytes``-byte row starting at any byte of ``buf`` (a view: stride 1 byte).

    Indexing it with byte offsets gathers rows that need not be aligned to ``row_bytes``,
    such as rows in decoded Blosc blocks cut out of a chunk.
    """
    n = max(len(buf) - row_bytes + 1, 0)
    return np.ndarray((n,), np.dtype((np.void, row_bytes)), buffer=buf, strides=(1,))
