"""CSV and Parquet tables of points <-> ``point_cloud`` stores (pyarrow).

One row is one point.  The coordinate columns are named by ``columns`` (default: ``x``, ``y``
and, when present, ``z``, in any letter case); every other column becomes a per-point attribute:
integers, floats and booleans keep their type (an integer column with nulls becomes float64 with
NaN), strings and dictionary columns become categorical attributes (nulls as ``""``), and columns
of other types (timestamps, lists, structs) are skipped with a warning.  Column names are made
identifiers; the original names, the coordinate column names and the Arrow types go to
``custom_metadata["csv" | "parquet"]`` so :func:`store_to_csv` and :func:`store_to_parquet` write
the same columns back (integer columns get their nulls back).  A (N, K) attribute is written as
columns ``name_0 .. name_K-1``.  ``convert`` keeps the row order (``keep_order``: the reserved
``_input_index`` attribute, docs/spec.md §8.8) and export writes the rows back in it; a store
written without it (``--no-keep-order``) is exported in storage order, streaming chunk batches
through a pyarrow writer.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.csv as pa_csv  # type: ignore[import-untyped, unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats._arrow import column_array
from zarr_vectors.formats._common import begin
from zarr_vectors.formats.registry import (
    Extent,
    NullProgress,
    PathLike,
    PointBatch,
    Progress,
    Source,
    WriteOptions,
    custom_section,
    identifier,
    iter_point_batches,
    store_metadata,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.points import write_points

__all__ = [
    "PointTable",
    "TableColumn",
    "TableMetadata",
    "TableSource",
    "open_csv",
    "open_parquet",
    "store_to_csv",
    "store_to_parquet",
    "table_points",
]

_AXES = ("x", "y", "z")


class TableColumn(TypedDict):
    """One attribute column: original name, attribute name, Arrow type."""

    name: str
    attribute: str
    type: str


class TableMetadata(TypedDict):
    """Column mapping kept in ``custom_metadata["csv" | "parquet"]``."""

    positions: list[str]
    position_types: list[str]
    columns: list[TableColumn]


@dataclass(frozen=True)
class PointTable:
    """Points read from a table: positions, attributes and the column mapping."""

    positions: npt.NDArray[np.floating]
    """(N, D) coordinates."""
    attributes: dict[str, npt.NDArray[Any]]
    """Per-point values by attribute name."""
    metadata: TableMetadata
    """Coordinate columns and the attribute column mapping."""

    def __len__(self) -> int:
        return len(self.positions)


def _position_columns(names: Sequence[str], columns: Sequence[str] | None) -> list[str]:
    if columns is not None:
        missing = [c for c in columns if c not in names]
        if missing or not 1 <= len(columns) <= 4:
            raise InvalidInputError(
                f"coordinate columns {list(columns)}: not in the table {missing or ''}; "
                f"columns are {list(names)}"
            )
        return list(columns)
    lower = {n.lower(): n for n in names}
    found = [lower[a] for a in _AXES if a in lower]
    if found[:2] != [lower.get("x"), lower.get("y")] or len(found) < 2:
        raise InvalidInputError(
            f"no x/y coordinate columns among {list(names)}; name them with columns=(...)"
        )
    return found


def _numpy(column: Any, name: str) -> npt.NDArray[Any] | None:
    """Convert a table column to an array an attribute can hold (None: skip it)."""
    values = column_array(column)
    if values is None:
        warnings.warn(f"skipping column {name!r} of type {column.type}", ZVUserWarning, 4)
    return values


def table_points(table: Any, columns: Sequence[str] | None = None) -> PointTable:
    """Split a ``pyarrow.Table`` into positions and attributes.

    Parameters
    ----------
    table
        One row per point.
    columns
        Coordinate column names, in axis order; default ``x``, ``y`` (, ``z``), any case.

    Returns
    -------
    PointTable
        Positions (float32 when every coordinate column is float32, else float64),
        attributes, and the column mapping.

    Raises
    ------
    InvalidInputError
        No coordinate columns, or a null coordinate.

    Examples
    --------
    >>> t = pa.table({"X": [1.0, 2.0], "Y": [3.0, 4.0], "class": ["a", "b"]})
    >>> pts = table_points(t)
    >>> pts.positions.tolist(), pts.attributes["class"].tolist()
    ([[1.0, 3.0], [2.0, 4.0]], ['a', 'b'])
    """
    names = list(table.column_names)
    axes = _position_columns(names, columns)
    cols = [table.column(a) for a in axes]
    for a, c in zip(axes, cols, strict=True):
        if c.null_count:
            raise InvalidInputError(f"coordinate column {a!r} has {c.null_count} null values")
    f32 = all(pa.types.is_float32(c.type) for c in cols)
    dtype = np.float32 if f32 else np.float64
    positions = np.stack(
        [np.asarray(c.to_numpy(zero_copy_only=False), dtype=dtype) for c in cols], axis=1
    ).reshape(table.num_rows, len(axes))
    taken: set[str] = set()
    attrs: dict[str, npt.NDArray[Any]] = {}
    mapping: list[TableColumn] = []
    for name in names:
        if name in axes:
            continue
        values = _numpy(table.column(name), name)
        if values is None:
            continue
        attr = identifier(name, taken)
        attrs[attr] = values
        mapping.append(TableColumn(name=name, attribute=attr, type=str(table.column(name).type)))
    meta = TableMetadata(
        positions=axes, position_types=[str(c.type) for c in cols], columns=mapping
    )
    return PointTable(positions, attrs, meta)


class TableSource(Source):
    """A CSV or Parquet file opened for conversion (the table is read here)."""

    geometry_type = GeometryTypeName.POINT_CLOUD

    def __init__(self, path: PathLike, kind: str, columns: Sequence[str] | None = None) -> None:
        super().__init__(path)
        self.kind = kind
        try:
            table = pa_csv.read_csv(self.path) if kind == "csv" else pq.read_table(self.path)
        except pa.ArrowInvalid as exc:
            raise InvalidInputError(f"{self.path}: not a valid {kind} table: {exc}") from exc
        self.points = table_points(table, columns)

    def extent(self) -> Extent:
        """Return the row count and bounding box."""
        return Extent.of(self.points.positions)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the rows to a new store."""
        begin(progress, "writing store")
        return write_points(
            store,
            self.points.positions,
            attributes=self.points.attributes,
            keep_order=options.keep_order,
            **options.store(
                custom_metadata={self.kind: cast(dict[str, Any], self.points.metadata)},
                source_description=f"{self.kind} table: {self.path.name}",
            ),
        )


def open_csv(path: PathLike, columns: Sequence[str] | None = None) -> TableSource:
    """Open a CSV file (header row, comma-separated) for conversion."""
    return TableSource(path, "csv", columns)


def open_parquet(path: PathLike, columns: Sequence[str] | None = None) -> TableSource:
    """Open a Parquet file for conversion."""
    return TableSource(path, "parquet", columns)


# -- export ---------------------------------------------------------------------------------


def _arrow_column(values: npt.NDArray[Any], type_name: str | None) -> Any:
    """Values as an Arrow array, restoring the imported type (and integer nulls) when safe."""
    if values.dtype.kind in "OU" and not (type_name or "").startswith("dictionary<"):
        return pa.array(values.astype(str).tolist(), pa.string())
    if type_name is None:
        return pa.array(values)
    if type_name.startswith("dictionary<"):
        return pa.array(values.astype(str).tolist(), pa.string()).dictionary_encode()
    target = pa.type_for_alias(type_name) if _is_alias(type_name) else None
    if target is None:
        return pa.array(values)
    mask = np.isnan(values) if values.dtype.kind == "f" and pa.types.is_integer(target) else None
    try:
        # float -> float casts only round (the store may have widened float32 to float64)
        return pa.array(values, mask=mask).cast(target, safe=not pa.types.is_floating(target))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array(values)


def _is_alias(name: str) -> bool:
    try:
        pa.type_for_alias(name)
    except ValueError:
        return False
    return True


def _batch_table(batch: PointBatch, meta: Mapping[str, Any] | None) -> Any:
    d = batch.positions.shape[1]
    stored_axes = list((meta or {}).get("positions", ()))
    axes = (
        stored_axes
        if len(stored_axes) == d
        else list(_AXES[:d]) + [f"axis_{i}" for i in range(3, d)]
    )
    types = list((meta or {}).get("position_types", ()))
    arrays: dict[str, Any] = {
        a: _arrow_column(batch.positions[:, i], types[i] if len(types) == d else None)
        for i, a in enumerate(axes)
    }
    mapping = {c["attribute"]: c for c in (meta or {}).get("columns", ())}
    order = [a for a in mapping if a in batch.attributes]
    order += [a for a in batch.attributes if a not in mapping]
    for attr in order:
        values = batch.attributes[attr]
        col = mapping.get(attr)
        if values.ndim == 1:
            name = col["name"] if col else attr
            arrays[name] = _arrow_column(values, col["type"] if col else None)
        else:
            flat = values.reshape(len(values), -1)
            for k in range(flat.shape[1]):
                arrays[f"{attr}_{k}"] = pa.array(flat[:, k])
    return pa.table(arrays)


def _tables(store: StoreLike, level: int, meta: Mapping[str, Any] | None) -> Iterator[Any]:
    for batch in iter_point_batches(store, level=level):
        yield _batch_table(batch, meta)


def _export(
    store: StoreLike, path: PathLike, kind: str, level: int, progress: Progress | None
) -> None:
    report = progress or NullProgress()
    root = store_metadata(store)
    meta = custom_section(root, kind) or custom_section(root, "parquet" if kind == "csv" else "csv")
    report.start(f"writing {path}", None)
    writer: Any = None
    schema: Any = None
    try:
        for table in _tables(store, level, meta):
            if writer is None:
                schema = table.schema
                writer = (
                    pa_csv.CSVWriter(str(path), schema)
                    if kind == "csv"
                    else pq.ParquetWriter(str(path), schema)
                )
            writer.write_table(table.cast(schema))
            report.advance(table.num_rows)
        if writer is None:  # an empty store: the coordinate columns only
            d = root.spatial_dims
            empty = _batch_table(PointBatch(np.zeros((0, d)), {}), meta)
            if kind == "csv":
                pa_csv.write_csv(empty, str(path))
            else:
                pq.write_table(empty, str(path))
    finally:
        if writer is not None:
            writer.close()


def store_to_csv(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``point_cloud`` store as a CSV table, one row per point.

    Parameters
    ----------
    store
        A ``point_cloud`` store.
    path
        Output ``.csv`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    _export(store, path, "csv", level, progress)


def store_to_parquet(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``point_cloud`` store as a Parquet table, one row per point."""
    _export(store, path, "parquet", level, progress)
