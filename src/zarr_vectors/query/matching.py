"""Which stored rows of some chunks a point query keeps, decoding as little as possible.

Vertex conditions are evaluated on the stored columns (category labels as their integer
codes), one chunk at a time in a reused buffer: no array of every row's values is built, and
each further condition decodes only the chunks where the earlier ones kept a row.  Positions
and attributes are then decoded for the kept rows only
(:meth:`~zarr_vectors.core.reader.LevelReader.rows_at`; payloads stored in blocks decode only
the blocks holding them).  Float values and coordinates are compared in their stored type
against bounds that compare exactly like the float64 ones (:func:`stored_bound`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.ragged import offsets_from_counts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.query.predicates import Clause
from zarr_vectors.query.shapes import box_sides_inside, stored_bound
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.metadata import BoundingBox

__all__ = [
    "VertexMask",
    "box_count",
    "column_rows",
    "gather_rows",
    "position_rows",
    "vertex_mask",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Test = Callable[[npt.NDArray[Any]], BoolArray]


def _categories(attrs: Mapping[str, Any], where: str) -> tuple[str, ...] | None:
    cats = attrs.get("categories")
    if cats is None:
        return None
    if not isinstance(cats, list) or not all(isinstance(c, str) for c in cats):
        raise CorruptPayloadError(f"{where}: the categories attribute is not a list of strings")
    return tuple(cats)


def _code_test(clause: Clause, categories: tuple[str, ...]) -> Test:
    """Set test on category codes: a lookup table (codes outside the labels match nothing)."""
    if clause.values is None:
        raise InvalidInputError(
            f"where: {clause.name!r} is categorical; use a set of labels, not a range"
        )
    n = len(categories)
    table = np.zeros(n + 1, dtype=bool)  # table[n] (and table[-1]): codes outside 0..n-1
    index = {c: i for i, c in enumerate(categories)}
    table[[index[v] for v in clause.values if isinstance(v, str) and v in index]] = True
    return lambda v: table.take(np.clip(v, -1, n))


def _float_range_test(clause: Clause, dtype: np.dtype[Any]) -> Test:
    """Range test in the stored float type (NaN fails every comparison: never kept)."""
    low = None if clause.low is None else stored_bound(float(clause.low), dtype)
    high = None if clause.high is None else stored_bound(float(clause.high), dtype)
    if low is not None and high is not None:
        return lambda v: (v >= low) & (v < high)
    if low is not None:
        return lambda v: v >= low
    if high is not None:
        return lambda v: v < high
    return lambda v: ~np.isnan(v)


def _test(clause: Clause, categories: tuple[str, ...] | None, dtype: np.dtype[Any]) -> Test:
    if categories is not None:
        return _code_test(clause, categories)
    if clause.values is None and dtype.kind == "f":
        return _float_range_test(clause, dtype)
    return clause.mask


def _single(rows: npt.NDArray[Any], clause: Clause) -> npt.NDArray[Any]:
    if rows.shape[1] != 1:
        raise InvalidInputError(
            f"where: {clause.name!r} holds {rows.shape[1]} values per vertex; conditions "
            "apply to attributes of one value per vertex"
        )
    return rows[:, 0]


@dataclass(frozen=True)
class VertexMask:
    """Rows satisfying vertex conditions, and values decoded on the way."""

    keep: BoolArray
    """Per row of the chunks (concatenated, chunk order): every condition holds."""
    captured: dict[str, tuple[IntArray, npt.NDArray[Any]]]
    """Per attribute asked for: rows kept right after its condition (ascending; a superset
    of ``keep``'s) and that attribute's stored rows there."""

    def take(self, name: str, rows: IntArray) -> npt.NDArray[Any] | None:
        """Return the stored rows of attribute ``name`` at kept ``rows``, if captured."""
        got = self.captured.get(name)
        if got is None:
            return None
        at, values = got
        return values[np.searchsorted(at, rows)]


def vertex_mask(
    reader: LevelReader,
    flats: IntArray,
    clauses: tuple[Clause, ...],
    capture: frozenset[str] = frozenset(),
) -> VertexMask:
    """Which rows of chunks ``flats`` (concatenated, chunk order) satisfy every clause.

    Clauses are vertex clauses resolved against ``reader``'s level.  The kept rows of the
    attributes in ``capture`` are kept as decoded (a read returning them decodes them once).
    """
    counts = reader.vertex_counts[flats]
    off = offsets_from_counts(counts).tolist()
    keep = np.ones(off[-1], dtype=bool)
    live = counts > 0  # chunks where a row is still kept
    captured: dict[str, tuple[IntArray, npt.NDArray[Any]]] = {}
    for clause in clauses:
        path = f"{L.ATTRIBUTES}/{clause.name}"
        arr = reader.payload(path)
        test = _test(clause, _categories(arr.attrs, arr.name), np.dtype(arr.attrs["dtype"]))
        idx = np.flatnonzero(live)
        seen = np.zeros(len(idx), dtype=bool)
        parts: list[npt.NDArray[Any]] | None = [] if clause.name in capture else None
        for j, rows in reader.chunk_rows(path, flats[idx]):
            i = int(idx[j])
            seg = keep[off[i] : off[i + 1]]
            if len(rows) != len(seg):
                raise _row_count_error(reader, arr.name, flats[i], len(rows), len(seg))
            seg &= test(_single(rows, clause))
            live[i] = seg.any()
            seen[j] = True
            if parts is not None and live[i]:
                parts.append(rows[seg])  # a copy: the buffer is reused for the next chunk
        if not seen.all():
            i = int(idx[np.argmin(seen)])
            raise _row_count_error(reader, arr.name, flats[i], 0, int(counts[i]))
        if parts and clause.name not in captured:
            captured[clause.name] = (np.flatnonzero(keep), np.concatenate(parts))
    return VertexMask(keep, captured)


def _row_count_error(
    reader: LevelReader, name: str, flat: int, got: int, expected: int
) -> CorruptPayloadError:
    coords = reader.layout.coords_of_flat(np.array([flat], dtype=np.int64))[0].tolist()
    return CorruptPayloadError(f"{name} chunk {coords}: {got} rows, vertex_counts says {expected}")


def gather_rows(reader: LevelReader, path: str, flats: IntArray, rows: IntArray) -> Any:
    """Rows ``rows`` (ascending, of the chunks' concatenated rows) of a vertex-aligned array.

    Only chunks holding one of them are decoded, each on its own into a reused buffer, and
    only those rows are copied out: no array of every row of the chunks is built.
    """
    counts = reader.vertex_counts[flats]
    ends = np.cumsum(counts)
    chunk = np.searchsorted(ends, rows, side="right")
    cut = np.searchsorted(chunk, np.arange(len(flats) + 1)).tolist()
    busy = np.flatnonzero(np.diff(cut) > 0)
    local = rows - (ends - counts)[chunk]
    out: npt.NDArray[Any] | None = None
    seen = 0
    for j, data in reader.chunk_rows(path, flats[busy]):
        i = int(busy[j])
        if len(data) != counts[i]:
            raise _row_count_error(reader, path, flats[i], len(data), int(counts[i]))
        if out is None:
            out = np.empty((len(rows), data.shape[1]), dtype=data.dtype)
        np.take(data, local[cut[i] : cut[i + 1]], axis=0, out=out[cut[i] : cut[i + 1]])
        seen += 1
    if out is None or seen != len(busy):
        raise CorruptPayloadError(f"{reader.group.path}/{path}: a chunk's rows are missing")
    return out


def position_rows(reader: LevelReader, flats: IntArray, rows: IntArray) -> npt.NDArray[Any]:
    """Positions of ``rows`` (non-empty, ascending, of the chunks' concatenated rows)."""
    out: npt.NDArray[Any] = gather_rows(reader, L.VERTICES, flats, rows)
    return out


def column_rows(
    reader: LevelReader,
    name: str,
    flats: IntArray,
    rows: IntArray,
    mask: VertexMask | None = None,
) -> Column:
    """Attribute ``name`` at ``rows`` (as :func:`position_rows`), as a stored column.

    Taken from ``mask`` when it captured the attribute, else decoded.
    """
    path = f"{L.ATTRIBUTES}/{name}"
    attrs = reader.payload(path).attrs
    where = f"{reader.group.path}/{path}"
    values = None if mask is None else mask.take(name, rows)
    if values is None:
        values = gather_rows(reader, path, flats, rows)
    try:
        shape = tuple(int(s) for s in attrs.get("shape", values.shape[1:2]))
        values = values.reshape((len(values), *shape))
    except (TypeError, ValueError) as exc:
        raise CorruptPayloadError(f"{where}: bad shape attribute ({exc})") from exc
    return Column(values, _categories(attrs, where))


def _box_bounds(box: BoundingBox, dtype: np.dtype[Any]) -> tuple[list[Any], list[Any]]:
    """Box ends that compare with coordinates of ``dtype`` exactly as in float64."""
    if dtype.kind != "f":
        return [np.float64(v) for v in box.min], [np.float64(v) for v in box.max]
    return [stored_bound(v, dtype) for v in box.min], [stored_bound(v, dtype) for v in box.max]


def box_count(reader: LevelReader, flats: IntArray, box: BoundingBox) -> int:
    """Vertices of chunks ``flats`` inside ``box`` (``min <= p < max``).

    Each chunk is decoded on its own into a reused buffer, and only the box sides that cut
    it (:func:`~zarr_vectors.query.shapes.box_sides_inside`) are tested.
    """
    if len(flats) == 0:
        return 0
    dtype = np.dtype(str(reader.node(L.VERTICES).attrs.get("dtype", "<f8")))
    lower, upper = box_sides_inside(box, reader.layout, flats, dtype)
    lo, hi = _box_bounds(box, dtype)
    counts = reader.vertex_counts[flats].tolist()
    total = 0
    seen = 0
    for i, pos in reader.chunk_rows(L.VERTICES, flats):
        if len(pos) != counts[i]:
            raise _row_count_error(reader, L.VERTICES, flats[i], len(pos), counts[i])
        seen += 1
        keep: BoolArray | None = None
        for d in np.flatnonzero(~lower[i]).tolist():
            m = pos[:, d] >= lo[d]
            keep = m if keep is None else np.logical_and(keep, m, out=keep)
        for d in np.flatnonzero(~upper[i]).tolist():
            m = pos[:, d] < hi[d]
            keep = m if keep is None else np.logical_and(keep, m, out=keep)
        total += len(pos) if keep is None else int(np.count_nonzero(keep))
    if seen != int(np.count_nonzero(reader.vertex_counts[flats])):
        raise CorruptPayloadError(f"{reader.group.path}/{L.VERTICES}: a chunk's rows are missing")
    return total
