"""One level opened for the deep checks (L3–L5): layout, dense index, and batched payload reads.

:func:`level_view` builds a :class:`LevelView` once per level and run (cached in the context) from
facts L1/L2 already established; it is None when a prerequisite is missing (no usable
``chunk_grid``, ``chunk_shape`` or ``spatial_dims``), which those levels reported.

Memory: payloads are decoded through :mod:`zarr_vectors.core.payload` in batches of at most
:data:`BATCH_CHUNKS` chunks and about :data:`BATCH_ROWS` rows, so a level of any size streams;
what stays in memory is O(chunks) (``vertex_counts``, the list of occupied chunks) and
O(manifest refs) (the object index), the same bound the streaming writer has.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.errors import BaseZarrError

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.codec_policy import check_codecs
from zarr_vectors.core.draco import decode_vertices
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.ragged import offsets_from_counts, unique_sorted
from zarr_vectors.core.segments import is_segment_path, merge_rows, segment_path
from zarr_vectors.core.zarr_adapter import ArrayV3Metadata, sync
from zarr_vectors.errors import (
    CorruptPayloadError,
    MissingDependencyError,
    ZarrVectorsError,
)
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import ArrayKind, Encoding, Severity
from zarr_vectors.spec.metadata import ChunkGrid
from zarr_vectors.validate._context import ArrayInfo, ValidationContext, integers, numbers
from zarr_vectors.validate._scan import join
from zarr_vectors.validate._segments import level_segments

__all__ = [
    "BATCH_CHUNKS",
    "BATCH_ROWS",
    "PAYLOAD_ERRORS",
    "LevelView",
    "PayloadInfo",
    "RefTable",
    "Rows",
    "chunk_where",
    "first_per_group",
    "level_ints",
    "level_view",
    "segment_sums",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Element = bytes | memoryview
"""One decoded payload element, as :meth:`PayloadArray.read` returns it."""

BATCH_CHUNKS = 2048
"""Most chunks decoded at once."""
BATCH_ROWS = 1 << 19
"""Rows (by ``vertex_counts``) after which a batch is closed."""

PAYLOAD_ERRORS: tuple[type[BaseException], ...] = (
    CorruptPayloadError,  # the fast vlen-bytes(+zstd) path, shards, Draco
    BaseZarrError,
    # zarr-python decodes other codec chains itself and lets codec errors through unwrapped:
    # numcodecs raises RuntimeError (blosc), ValueError, zlib.error, gzip.BadGzipFile (an
    # OSError) or EOFError; a corrupt vlen header makes numcodecs size an absurd array
    # (MemoryError) or pass a negative length to CPython (SystemError).
    RuntimeError,
    ValueError,
    TypeError,
    OSError,
    EOFError,
    zlib.error,
    MemoryError,
    SystemError,
)
"""What reading a corrupt payload or dense array can raise; each becomes a finding."""


def chunk_where(coords: npt.ArrayLike) -> str:
    """Return the path suffix naming a chunk by its absolute coordinates.

    Examples
    --------
    >>> chunk_where([-1, 0, 2])
    '[-1,0,2]'
    """
    return "[" + ",".join(str(int(c)) for c in np.asarray(coords).ravel()) + "]"


def segment_sums(values: npt.NDArray[Any], offsets: IntArray) -> IntArray:
    """Return the sum of ``values`` over each CSR segment (wrapping on int64 overflow).

    Examples
    --------
    >>> segment_sums(np.array([1, 2, 3]), np.array([0, 2, 2, 3])).tolist()
    [3, 0, 3]
    """
    acc = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values.astype(np.int64, copy=False), out=acc[1:])
    out: IntArray = acc[offsets[1:]] - acc[offsets[:-1]]
    return out


def first_per_group(groups: IntArray, mask: BoolArray) -> tuple[IntArray, IntArray]:
    """Return the distinct ``groups[mask]`` and the index of the first masked item of each.

    Examples
    --------
    >>> g, i = first_per_group(np.array([0, 0, 1, 1]), np.array([False, True, True, True]))
    >>> g.tolist(), i.tolist()
    ([0, 1], [1, 2])
    """
    idx = np.flatnonzero(mask)
    uniq, first = np.unique(groups[idx], return_index=True)
    return uniq.astype(np.int64), idx[first].astype(np.int64)


@dataclass(frozen=True)
class Rows:
    """Decoded rows of one per-chunk array over a batch of chunks."""

    values: npt.NDArray[Any]
    """(M, K) rows of the chunks that decoded, concatenated in batch order."""
    offsets: IntArray
    """(n + 1,) CSR offsets of each chunk's rows (0 rows where ``ok`` is False)."""
    ok: BoolArray
    """(n,) True where the chunk decoded into whole rows (an absent element is 0 rows)."""

    @property
    def counts(self) -> IntArray:
        """Rows per chunk."""
        return np.diff(self.offsets)

    def owner(self) -> IntArray:
        """Batch position of the chunk of every row."""
        return np.repeat(np.arange(len(self.ok), dtype=np.int64), self.counts)


@dataclass
class PayloadInfo:
    """A per-chunk array of the level, with the row format its attributes declare."""

    rel: str
    """Path inside the level group (``"attributes/intensity"``)."""
    path: str
    """Store path (``"0/attributes/intensity"``)."""
    kind: ArrayKind
    """Its layout kind."""
    payload: PayloadArray
    """Reader of its elements."""
    dtype: np.dtype[Any] | None
    """Row value type, or None when the ``dtype`` attribute is unusable (reported by L1/L2)."""
    width: int | None
    """Values per row, or None when the ``width`` attribute is unusable."""
    draco: bool = False
    """True for Draco-encoded ``vertices`` (row count from ``vertex_counts``)."""
    present: IntArray | None = None
    """Flat indices of the chunks whose element key exists (None: not listable / sharded)."""

    @property
    def usable(self) -> bool:
        """Whether rows can be decoded."""
        return self.draco or (self.dtype is not None and self.width is not None)


@dataclass
class RefTable:
    """The object manifest, parsed once per level.

    Refs keep manifest order; ``valid`` marks those whose chunk lies in the grid and whose rows
    lie inside the chunk's ``vertex_counts`` (the others are reported by ``L3.manifest.range``).
    """

    flat: IntArray
    """Flat grid index of each ref's chunk (-1 outside the grid)."""
    start: IntArray
    """First row of each ref."""
    count: IntArray
    """Rows of each ref."""
    obj: IntArray
    """Dense object id of each ref (from the offsets)."""
    valid: BoolArray
    """Ref is in range."""
    n_objects: int
    """Number of object ids (``len(offsets) - 1``)."""

    @property
    def all_valid(self) -> bool:
        """True when every ref is in range."""
        return bool(self.valid.all())

    def by_chunk(self) -> IntArray:
        """Return the indices of the valid refs, sorted by (chunk, start)."""
        idx = np.flatnonzero(self.valid)
        flat, start = self.flat[idx], self.start[idx]
        span = int(start.max()) + 1 if len(idx) else 1
        if len(idx) and int(flat.max()) < (1 << 62) // span:  # one sort of a combined key
            order = np.argsort(flat * span + start, kind="stable")
        else:
            order = np.lexsort((start, flat))
        return idx[order].astype(np.int64)

    def present(self) -> BoolArray:
        """Per object id: whether it has at least one ref (objects with vertices)."""
        out = np.zeros(self.n_objects, dtype=bool)
        out[self.obj[self.count > 0]] = True
        return out


@dataclass
class LevelView:
    """Everything the deep checks need about one level."""

    path: str
    """Level group path (``"0"``)."""
    ndim: int
    """D."""
    gtype: str | None
    """Geometry type, when known."""
    chunks: ChunkLayout
    """Chunk arithmetic of the grid (bins of one chunk: only chunk coordinates are used)."""
    bins: ChunkLayout | None
    """Chunk plus this level's bins, or None when ``bin_shape`` is unusable."""
    counts: IntArray | None
    """``vertex_counts`` flat over the grid, or None when absent or unreadable."""
    payloads: dict[str, PayloadInfo] = field(default_factory=dict)
    """Per-chunk arrays by path inside the level."""
    dense: dict[str, zarr.Array[Any]] = field(default_factory=dict)
    """Dense arrays zarr-python opened, by path inside the level."""
    refs: RefTable | None = None
    """Parsed manifest, once ``L3`` (or a later level) loaded it."""
    totals: dict[str, int] = field(default_factory=dict)
    """Counts gathered by the chunk scan (``vertex_count``, ``chunk_count``)."""
    counts_verified: bool = False
    """True once the chunk scan found ``vertex_counts`` equal to every chunk's decoded rows, so
    later checks may size arrays by it (a corrupt count could ask for terabytes)."""
    notes: set[str] = field(default_factory=set)
    """Once-per-level notes already emitted (e.g. Draco unavailable)."""
    segments: tuple[int, ...] = ()
    """Append segments the level lists (their arrays are in ``parts``)."""
    parts: dict[str, PayloadInfo] = field(default_factory=dict)
    """Per-chunk arrays of the segments, by path inside the level."""
    segment_only: set[str] = field(default_factory=set)
    """Arrays only segments hold (``payloads`` lists them with a segment's array)."""

    @property
    def grid(self) -> ChunkGrid:
        """The chunk grid."""
        return self.chunks.grid

    def node(self, rel: str) -> str:
        """Store path of ``rel`` inside this level."""
        return join(self.path, rel)

    def base(self) -> IntArray | None:
        """Global index of each chunk's first vertex (flat order), from ``vertex_counts``."""
        if self.counts is None:
            return None
        return offsets_from_counts(np.maximum(self.counts, 0))[:-1]

    # -- which chunks to visit ----------------------------------------------------------------

    def occupied(self) -> IntArray:
        """Flat indices of chunks that hold data: ``vertex_counts > 0`` or a stored element."""
        parts = [np.zeros(0, dtype=np.int64)]
        if self.counts is not None:
            parts.append(np.flatnonzero(self.counts != 0).astype(np.int64))
        parts.extend(info.present for info in self.payloads.values() if info.present is not None)
        return unique_sorted(np.concatenate(parts))

    def batches(self, flats: IntArray) -> Iterator[IntArray]:
        """Split sorted flat indices into batches of bounded size."""
        if len(flats) == 0:
            return
        rows = (
            np.ones(len(flats), dtype=np.int64)
            if self.counts is None
            else np.maximum(self.counts[flats], 1)
        )
        cum = np.cumsum(rows)
        start = 0
        while start < len(flats):
            limit = (cum[start - 1] if start else 0) + BATCH_ROWS
            stop = max(start + 1, int(np.searchsorted(cum, limit, side="right")))
            stop = min(stop, start + BATCH_CHUNKS, len(flats))
            yield flats[start:stop]
            start = stop

    # -- decoding -----------------------------------------------------------------------------

    def read(
        self, ctx: ValidationContext, rel: str, flats: IntArray, *, report: bool = True
    ) -> Rows | None:
        """Decode the rows of array ``rel`` in chunks ``flats``; None if it cannot be read.

        Undecodable elements (``L3.payload.decode``) and lengths that are not whole rows
        (``L3.payload.rows``) are reported when ``report`` is true and give ``ok = False``.
        """
        if self.segments and not is_segment_path(rel):
            return self._merged(ctx, rel, flats, report)
        return self._read_own(ctx, self.payloads.get(rel) or self.parts.get(rel), flats, report)

    def _merged(
        self, ctx: ValidationContext, rel: str, flats: IntArray, report: bool
    ) -> Rows | None:
        """Rows of ``rel`` merged with its segments' (core/segments.py); None if unreadable."""
        names = [segment_path(s, rel) for s in self.segments]
        if rel not in self.payloads and not any(n in self.parts for n in names):
            return None
        ok = np.ones(len(flats), dtype=bool)

        def read(part: str) -> tuple[npt.NDArray[Any], IntArray] | None:
            if part in self.segment_only:
                return None
            got = self._read_own(
                ctx, self.payloads.get(part) or self.parts.get(part), flats, report
            )
            if got is None:
                return None
            ok[:] &= got.ok
            return got.values, got.offsets

        by_bin = self.gtype == "point_cloud" and L.OBJECT_OFFSETS not in self.dense
        try:
            values, offsets = merge_rows(rel, self.segments, read, None, by_bin)
        except (CorruptPayloadError, ValueError, IndexError) as exc:
            if report:
                ctx.error(
                    "L3.segments.merge",
                    self.node(rel),
                    f"the rows of the base and the append segments do not merge ({exc})",
                )
            return None
        return Rows(values, offsets, ok)

    def _read_own(
        self, ctx: ValidationContext, info: PayloadInfo | None, flats: IntArray, report: bool
    ) -> Rows | None:
        if info is None or not info.usable:
            return None
        raw = self._fetch(ctx, info, flats, report)
        if info.draco:
            return self._draco_rows(ctx, info, flats, raw, report)
        assert info.dtype is not None
        assert info.width is not None
        row_bytes = info.dtype.itemsize * info.width
        ok = np.array([r is not None and len(r) % row_bytes == 0 for r in raw], dtype=bool)
        counts = np.array(
            [
                len(r) // row_bytes if r is not None and k else 0
                for r, k in zip(raw, ok, strict=True)
            ],
            dtype=np.int64,
        )
        if report:
            for i in np.flatnonzero(~ok & np.array([r is not None for r in raw], dtype=bool)):
                n = len(raw[i] or b"")
                ctx.capped(
                    "L3.payload.rows",
                    Severity.ERROR,
                    info.path,
                    f"chunk {self._coords(flats[i])}: {n} bytes is not a whole number of rows "
                    f"of {info.width} × {info.dtype.str} ({row_bytes} bytes each); the payload "
                    "is truncated or the dtype/width attributes are wrong",
                    where=chunk_where(self._coords(flats[i])),
                )
        data = b"".join(r for r, k in zip(raw, ok, strict=True) if k and r is not None)
        values = np.frombuffer(data, dtype=info.dtype).reshape(-1, info.width)
        return Rows(values, offsets_from_counts(counts), ok)

    def _coords(self, flat: int | np.integer[Any]) -> list[int]:
        coords: list[int] = self.chunks.coords_of_flat(np.array([flat], dtype=np.int64))[0].tolist()
        return coords

    def _fetch(
        self, ctx: ValidationContext, info: PayloadInfo, flats: IntArray, report: bool
    ) -> list[Element | None]:
        try:
            return list(info.payload.read(flats))
        except PAYLOAD_ERRORS:
            pass  # find the bad chunks one by one
        out: list[Element | None] = []
        for flat in flats.tolist():
            try:
                out.append(info.payload.read(np.array([flat], dtype=np.int64))[0])
            except PAYLOAD_ERRORS as exc:
                out.append(None)
                if report:
                    coords = self._coords(flat)
                    ctx.capped(
                        "L3.payload.decode",
                        Severity.ERROR,
                        info.path,
                        f"chunk {coords}: the stored element cannot be decoded "
                        f"({type(exc).__name__}: {exc}); rewrite the store or restore the chunk",
                        where=chunk_where(coords),
                    )
        return out

    def _draco_rows(
        self,
        ctx: ValidationContext,
        info: PayloadInfo,
        flats: IntArray,
        raw: list[Element | None],
        report: bool,
    ) -> Rows | None:
        if self.counts is None:
            return None
        parts: list[npt.NDArray[np.float32]] = []
        ok = np.zeros(len(flats), dtype=bool)
        for i, (flat, data) in enumerate(zip(flats.tolist(), raw, strict=True)):
            if data is None:
                continue
            try:
                parts.append(decode_vertices(bytes(data), int(self.counts[flat]), self.ndim))
            except MissingDependencyError as exc:
                if report and "draco" not in self.notes:
                    self.notes.add("draco")
                    ctx.add("L3.vertices.draco", Severity.INFO, info.path, f"not checked: {exc}")
                return None
            except CorruptPayloadError as exc:
                if report:
                    coords = self._coords(flat)
                    ctx.capped(
                        "L3.payload.decode",
                        Severity.ERROR,
                        info.path,
                        f"chunk {coords}: Draco payload does not decode ({exc})",
                        where=chunk_where(coords),
                    )
                continue
            ok[i] = True
        counts = np.array([len(p) for p in parts], dtype=np.int64)
        full = np.zeros(len(flats), dtype=np.int64)
        full[ok] = counts
        values = np.concatenate(parts) if parts else np.zeros((0, self.ndim), np.float32)
        return Rows(values, offsets_from_counts(full), ok)

    # -- dense arrays -------------------------------------------------------------------------

    def read_dense(self, ctx: ValidationContext, rel: str) -> npt.NDArray[Any] | None:
        """Read a dense array whole; None when absent, reporting ``L3.dense.decode`` if corrupt."""
        arr = self.dense.get(rel)
        if arr is None:
            return None
        try:
            check_codecs(arr)
            return np.asarray(arr[...])
        except PAYLOAD_ERRORS as exc:
            ctx.error(
                "L3.dense.decode",
                self.node(rel),
                f"the array cannot be read ({type(exc).__name__}: {exc})",
            )
            return None


def level_view(ctx: ValidationContext, level: str) -> LevelView | None:
    """Return the (cached) :class:`LevelView` of level group ``level``, or None."""
    key = f"levelview:{level}"
    if key not in ctx.memo:
        ctx.memo[key] = _build(ctx, level)
    view = ctx.memo[key]
    return view if isinstance(view, LevelView) else None


def _build(ctx: ValidationContext, level: str) -> LevelView | None:
    d, grid, chunk = ctx.spatial_dims, ctx.chunk_grid, ctx.chunk_shape
    if d is None or grid is None or chunk is None or not ctx.shapes_ok:
        return None
    try:
        chunks = ChunkLayout(chunk, chunk, grid)
    except ZarrVectorsError:
        return None
    view = LevelView(level, d, ctx.geometry_type, chunks, _bins(ctx, level, chunk, grid), None)
    infos = [i for p, i in ctx.arrays.items() if p.startswith(level + "/") and i.array is not None]
    for info in infos:
        rel = info.path.removeprefix(level + "/")
        assert info.array is not None
        if info.spec.per_chunk:
            if info.array.shape == grid.shape:
                where = view.parts if is_segment_path(rel) else view.payloads
                where[rel] = _payload_info(ctx, info, rel, info.array)
        else:
            view.dense[rel] = info.array
    view.segments = level_segments(ctx, level)
    for rel in sorted(view.parts):
        name = rel.split("/", 2)[2]
        if name not in view.payloads:
            view.payloads[name] = view.parts[rel]
            view.segment_only.add(name)
    counts = view.read_dense(ctx, L.VERTEX_COUNTS)
    if counts is not None and counts.shape == grid.shape and counts.dtype.kind in "iu":
        view.counts = counts.astype(np.int64).ravel()
    return view


def _bins(
    ctx: ValidationContext, level: str, chunk: tuple[float, ...], grid: ChunkGrid
) -> ChunkLayout | None:
    shape = numbers((ctx.attrs(level) or {}).get("bin_shape"))
    if shape is None or len(shape) != len(chunk) or any(b <= 0 for b in shape):
        return None
    try:
        return ChunkLayout(chunk, shape, grid)
    except ZarrVectorsError:
        return None


def _payload_info(
    ctx: ValidationContext, info: ArrayInfo, rel: str, array: zarr.Array[Any]
) -> PayloadInfo:
    attrs = info.attrs
    dtype: np.dtype[Any] | None = None
    try:
        text = attrs.get("dtype")
        parsed = np.dtype(text) if isinstance(text, str) else None
        if parsed is not None and parsed.kind in "biuf" and parsed.byteorder != ">":
            dtype = parsed
    except TypeError:
        dtype = None
    raw_width = attrs.get("width")
    width = raw_width if isinstance(raw_width, int) and not isinstance(raw_width, bool) else None
    if width is not None and width < 1:
        width = None
    draco = info.spec.kind is ArrayKind.VERTICES and attrs.get("encoding") == Encoding.DRACO
    if info.spec.kind is ArrayKind.VERTICES and not draco and width != ctx.spatial_dims:
        width = None  # L2.array.width reported it; rows of another width mean nothing
    if info.spec.kind is ArrayKind.VERTEX_FRAGMENTS and width != L.FRAGMENT_WIDTH:
        width = None  # likewise: fragments are [bin_flat, object_id, start, count] rows
    return PayloadInfo(
        rel,
        info.path,
        info.spec.kind,
        PayloadArray(array),
        dtype,
        width,
        draco,
        _present(ctx, info.path, array),
    )


def _present(ctx: ValidationContext, path: str, array: zarr.Array[Any]) -> IntArray | None:
    """List the element keys of a non-sharded payload array as flat grid indices."""
    if not ctx.scan.listing:
        return None
    decode = _key_decoder(array)
    if decode is None:
        return None
    store = ctx.store_path.store
    prefix = join(ctx.store_path.path, path) + "/"

    async def collect() -> list[str]:
        return [k async for k in store.list_prefix(prefix)]

    try:
        keys = sync(collect())
    except (OSError, NotImplementedError):
        return None
    shape = array.shape
    coords = [decode(k[len(prefix) :]) for k in keys]
    idx = np.array(
        [c for c in coords if c is not None and len(c) == len(shape)], dtype=np.int64
    ).reshape(-1, len(shape))
    inside = np.all((idx >= 0) & (idx < np.asarray(shape, dtype=np.int64)), axis=1)
    if not inside.any():
        return np.zeros(0, dtype=np.int64)
    flat = np.ravel_multi_index(tuple(idx[inside].T), shape)
    return unique_sorted(np.asarray(flat, dtype=np.int64))


def _key_decoder(array: zarr.Array[Any]) -> Any:
    """Return ``key -> chunk index tuple or None`` for the array's key encoding (None: sharded)."""
    meta = array.metadata
    if isinstance(meta, ArrayV3Metadata):
        if array.shards is not None:
            return None
        enc = meta.chunk_key_encoding
        sep = str(getattr(enc, "separator", "/"))
        prefix = "c" + sep if enc.name == "default" else ""
    else:
        sep, prefix = str(meta.dimension_separator), ""

    def decode(key: str) -> tuple[int, ...] | None:
        if not key.startswith(prefix) or key.rsplit("/", 1)[-1] in _DOCS:
            return None
        try:
            return tuple(int(p) for p in key[len(prefix) :].split(sep))
        except ValueError:
            return None

    return decode


_DOCS = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})


def level_ints(ctx: ValidationContext, level: str) -> Mapping[str, int]:
    """Return the integer count attributes of a level group that are well-formed."""
    attrs = ctx.attrs(level) or {}
    out: dict[str, int] = {}
    for key in ("vertex_count", "object_count", "chunk_count"):
        value = integers([attrs.get(key)]) if key in attrs else None
        if value is not None and not isinstance(attrs.get(key), bool):
            out[key] = value[0]
    return out
