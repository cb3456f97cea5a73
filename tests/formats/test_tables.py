"""CSV and Parquet tables written by pyarrow survive import -> store -> export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.csv as pa_csv  # type: ignore[import-untyped, unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
import pytest
import zarr

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats.registry import convert, export
from zarr_vectors.formats.tables import open_csv, open_parquet, table_points

N = 800


def sample_table(n: int = N) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table(
        {
            "X": rng.uniform(0, 100, n),
            "Y": rng.uniform(0, 100, n),
            "Z": rng.uniform(0, 5, n).astype(np.float32),
            "intensity": rng.integers(0, 1000, n).astype(np.uint16),
            "species": pa.array(rng.choice(["oak", "pine", "birch"], n)).dictionary_encode(),
            "count": pa.array([None if i % 7 == 0 else i for i in range(n)], pa.int32()),
            "flag": rng.random(n) > 0.5,
            "height m": rng.random(n),
            "name": pa.array([f"p{i}" for i in range(n)]),
        }
    )


def rows_sorted(t: pa.Table) -> pa.Table:
    return t.take(np.lexsort((t["Y"].to_numpy(), t["X"].to_numpy())))


def test_parquet_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "points.parquet"
    table = sample_table()
    pq.write_table(table, src)
    store = str(tmp_path / "p.zarrvectors")
    convert(src, store, chunk_shape=(50, 50, 50))
    pts = zv.read_points(store)
    assert pts.positions.dtype == np.float64
    assert pts.attributes["height_m"].dtype == np.float64
    assert pts.attributes["count"].dtype == np.float64  # nulls became NaN
    assert set(pts.attributes["species"].tolist()) == {"oak", "pine", "birch"}
    out = tmp_path / "back.parquet"
    export(store, out)
    back = pq.read_table(out)
    assert back.schema == table.schema
    assert back["name"].to_pylist() == table["name"].to_pylist()  # rows in file order
    a, b = rows_sorted(table), rows_sorted(back)
    for name in table.column_names:  # dictionaries may list their values in another order
        assert a[name].to_pylist() == b[name].to_pylist(), name


def test_csv_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "points.csv"
    table = sample_table(200).drop_columns(["species"])
    pa_csv.write_csv(table, src)
    store = str(tmp_path / "c.zarrvectors")
    convert(src, store, chunk_shape=(50, 50, 50))
    out = tmp_path / "back.csv"
    export(store, out)
    a, b = rows_sorted(pa_csv.read_csv(src)), rows_sorted(pa_csv.read_csv(out))
    assert a.column_names == b.column_names
    for name in a.column_names:
        assert a[name].equals(b[name]), name
    assert b["count"].null_count == a["count"].null_count > 0


def test_coordinate_column_mapping(tmp_path: Path) -> None:
    src = tmp_path / "geo.parquet"
    pq.write_table(pa.table({"lon": [1.0, 2.0], "lat": [3.0, 4.0], "x": [9, 8]}), src)
    with open_parquet(src, columns=["lon", "lat"]) as source:
        assert source.points.positions.tolist() == [[1.0, 3.0], [2.0, 4.0]]
        assert source.points.attributes["x"].tolist() == [9, 8]
    store = str(tmp_path / "g.zarrvectors")
    convert(src, store, columns=["lon", "lat"], chunk_shape=(10, 10))
    export(store, tmp_path / "g.csv")
    assert pa_csv.read_csv(tmp_path / "g.csv").column_names == ["lon", "lat", "x"]


def test_unsupported_columns_are_skipped_with_a_warning() -> None:
    t = pa.table({"x": [0.0], "y": [1.0], "when": pa.array([0], pa.timestamp("s"))})
    with pytest.warns(UserWarning, match="skipping column 'when'"):
        pts = table_points(t)
    assert pts.attributes == {}


@pytest.mark.parametrize(
    ("table", "columns", "match"),
    [
        (pa.table({"a": [1.0], "b": [2.0]}), None, "no x/y coordinate columns"),
        (
            pa.table(
                {"x": [1.0], "y": [None]},
                schema=pa.schema([("x", pa.float64()), ("y", pa.float64())]),
            ),
            None,
            "null",
        ),
        (pa.table({"x": [1.0], "y": [2.0]}), ["x", "q"], "not in the table"),
    ],
)
def test_bad_tables(table: pa.Table, columns: list[str] | None, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        table_points(table, columns)


def test_empty_csv_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "empty.csv"
    src.write_text("x,y,z\n")
    with open_csv(src) as source:
        assert len(source.points) == 0


@pytest.mark.parametrize("keep_order", [True, False])
def test_shuffled_csv_round_trips_in_row_order(keep_order: bool, tmp_path: Path) -> None:
    """Rows come back in file order (keep_order, the default), else in storage order."""
    rng = np.random.default_rng(3)
    n = 500
    src = tmp_path / "shuffled.csv"
    table = pa.table(
        {
            "x": rng.permutation(n).astype(np.float64) * 0.25,  # rows in no spatial order
            "y": rng.uniform(0, 100, n),
            "z": rng.uniform(0, 100, n),
            "row": np.arange(n, dtype=np.int64),
            "name": pa.array([f"p{i}" for i in range(n)]),
        }
    )
    pa_csv.write_csv(table, src)
    store = str(tmp_path / "s.zarrvectors")
    convert(src, store, chunk_shape=(25, 25, 25), keep_order=keep_order)
    assert ("_input_index" in zarr.open_group(store, mode="r")["0/attributes"]) is keep_order
    out = tmp_path / "back.csv"
    export(store, out)
    back = pa_csv.read_csv(out)
    original = pa_csv.read_csv(src)
    assert back.column_names == original.column_names
    if keep_order:
        assert back.equals(original)
        assert out.read_bytes() == src.read_bytes()
    else:
        assert back["row"].to_pylist() != list(range(n))  # storage order differs here
        assert rows_sorted(back.rename_columns(["X", "Y", "z", "row", "name"])).equals(
            rows_sorted(original.rename_columns(["X", "Y", "z", "row", "name"]))
        )
