"""LAS/LAZ <-> point_cloud stores: files written by laspy survive import -> store -> export."""

from __future__ import annotations

import datetime
import uuid
from pathlib import Path
from typing import Any

import laspy  # type: ignore[import-untyped, unused-ignore]
import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats.las import KEY, las_to_store, open_las, read_las, store_to_las
from zarr_vectors.formats.registry import convert, export

N = 3000
WKT = 'PROJCS["WGS 84 / UTM zone 33N",GEOGCS["WGS 84"]]'


def make_laz(path: Path, n: int = N, point_format: int = 3) -> Any:
    """A LAZ written by laspy with colours, GPS time, returns, extra bytes and a VLR."""
    rng = np.random.default_rng(42)
    header = laspy.LasHeader(
        version="1.4" if point_format >= 6 else "1.2", point_format=point_format
    )
    header.add_extra_dim(laspy.ExtraBytesParams("range m", "f4", description="range"))
    header.add_extra_dim(
        laspy.ExtraBytesParams("scaled", "i2", scales=np.array([0.1]), offsets=np.array([5.0]))
    )
    header.scales = np.array([0.01, 0.01, 0.001])
    header.offsets = np.array([500_000.0, 4_000_000.0, 100.0])
    header.system_identifier = "zv test rig"
    header.generating_software = "ScannerSoft 9"
    header.creation_date = datetime.date(2021, 3, 14)
    header.file_source_id = 77
    header.uuid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    header.vlrs.append(laspy.VLR("my_user", 4242, "custom record", b"\x00\x01payload"))
    las = laspy.LasData(header)
    las.x = rng.uniform(500_000, 500_800, n)
    las.y = rng.uniform(4_000_000, 4_000_600, n)
    las.z = rng.uniform(100, 140, n)
    las.intensity = rng.integers(0, 65535, n)
    las.classification = rng.integers(0, 20, n)
    las.return_number = rng.integers(1, 4, n)
    las.number_of_returns = np.full(n, 3)
    las.gps_time = rng.uniform(0, 1e6, n)
    las.red = rng.integers(0, 65535, n)
    las.green = rng.integers(0, 65535, n)
    las.blue = rng.integers(0, 65535, n)
    las["range m"] = rng.random(n).astype(np.float32)
    las["scaled"] = np.round(rng.uniform(-3, 3, n), 1)
    las.write(path)
    return laspy.read(path)


@pytest.fixture
def laz(tmp_path: Path) -> Path:
    path = tmp_path / "scan.laz"
    make_laz(path)
    return path


def sorted_points(las: Any) -> dict[str, np.ndarray]:
    order = np.lexsort((las.gps_time, las.X, las.Y, las.Z))
    return {n: np.asarray(las[n])[order] for n in las.point_format.dimension_names}


def assert_same_store(a: Any, b: Any) -> None:
    """Every array of two stores holds the same values; root attributes agree."""
    ga, gb = zarr.open_group(a, mode="r"), zarr.open_group(b, mode="r")
    attrs_a, attrs_b = ga.attrs.asdict(), gb.attrs.asdict()
    attrs_a.pop("creation_timestamp"), attrs_b.pop("creation_timestamp")
    assert attrs_a == attrs_b
    with quiet_vlen():
        arrays_a = dict(ga.members(max_depth=None))
        arrays_b = dict(gb.members(max_depth=None))
        names = sorted(k for k, v in arrays_a.items() if isinstance(v, zarr.Array))
        assert names == sorted(k for k, v in arrays_b.items() if isinstance(v, zarr.Array))
        for name in names:
            va, vb = arrays_a[name][...], arrays_b[name][...]
            assert va.dtype == vb.dtype, name
            assert np.array_equal(va, vb), name
            assert arrays_a[name].attrs.asdict() == arrays_b[name].attrs.asdict(), name


def test_read_las_keeps_every_dimension(laz: Path) -> None:
    las = laspy.read(laz)
    pts = read_las(laz)
    assert np.array_equal(pts.positions, np.stack([las.x, las.y, las.z], axis=1))
    assert pts.attributes["range_m"].dtype == np.float32
    for dim in pts.metadata["dimensions"]:
        assert np.array_equal(pts.attributes[dim["attribute"]], np.asarray(las[dim["name"]]))
    assert {"intensity", "classification", "return_number", "gps_time", "red"} <= set(
        pts.attributes
    )


def test_round_trip_laz(laz: Path, tmp_path: Path) -> None:
    store = tmp_path / "scan.zarrvectors"
    summary = las_to_store(laz, str(store), chunk_shape=(200, 200, 200))
    assert summary.vertex_count == N
    meta = zv.open_store(str(store)).attrs["custom_metadata"][KEY]
    assert meta["scales"] == [0.01, 0.01, 0.001]
    assert meta["offsets"] == [500_000.0, 4_000_000.0, 100.0]
    out = tmp_path / "back.laz"
    store_to_las(str(store), out)
    a, b = laspy.read(laz), laspy.read(out)
    for field in ("version", "system_identifier", "generating_software", "creation_date"):
        assert getattr(a.header, field) == getattr(b.header, field), field
    assert a.header.point_format.id == b.header.point_format.id
    assert a.header.file_source_id == b.header.file_source_id
    assert a.header.uuid == b.header.uuid
    assert a.header.global_encoding.value == b.header.global_encoding.value
    assert np.array_equal(a.header.scales, b.header.scales)
    assert np.array_equal(a.header.offsets, b.header.offsets)
    custom = [v for v in b.header.vlrs if v.user_id == "my_user"]
    assert len(custom) == 1
    assert custom[0].record_data_bytes() == b"\x00\x01payload"
    assert list(a.point_format.dimension_names) == list(b.point_format.dimension_names)
    pa_, pb = sorted_points(a), sorted_points(b)
    for name, values in pa_.items():  # integer X/Y/Z and every attribute exactly
        assert np.array_equal(values, pb[name]), name


@pytest.mark.slow
def test_streaming_gives_the_same_store(laz: Path, tmp_path: Path) -> None:
    kw: dict[str, Any] = {"chunk_shape": (200, 200, 50), "bin_shape": (50, 50, 12.5)}
    in_memory, streamed = str(tmp_path / "a.zarrvectors"), str(tmp_path / "b.zarrvectors")
    las_to_store(laz, in_memory, streaming=False, **kw)
    las_to_store(laz, streamed, streaming=True, chunk_size=257, **kw)
    assert_same_store(in_memory, streamed)


def test_extent_from_header(laz: Path) -> None:
    las = laspy.read(laz)
    with open_las(laz) as src:
        ext = src.extent()
    assert ext.n_vertices == N
    assert np.allclose(ext.min, [las.x.min(), las.y.min(), las.z.min()])
    assert np.allclose(ext.max, [las.x.max(), las.y.max(), las.z.max()])


def test_convert_picks_chunk_shape(laz: Path, tmp_path: Path) -> None:
    report = convert(laz, str(tmp_path / "s.zarrvectors"), pyramid=[(2, 2, 2)])
    assert report.chunk_shape_chosen
    assert len(set(report.chunk_shape)) == 1
    ratio = [c / b for c, b in zip(report.chunk_shape, report.bin_shape, strict=True)]
    assert all(r % 4 == 0 for r in ratio)  # the bin is chosen from the data (formats/bins.py)
    assert N // 100 <= report.pyramid[0].vertex_count < N


def test_export_store_without_las_header(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 400
    pos = rng.uniform(-50, 50, (n, 3))
    attrs = {
        "intensity": rng.integers(0, 1000, n).astype(np.uint16),
        "classification": rng.integers(0, 10, n).astype(np.uint8),
        "gps_time": rng.uniform(0, 10, n),
        "red": rng.integers(0, 255, n).astype(np.uint16),
        "green": rng.integers(0, 255, n).astype(np.uint16),
        "blue": rng.integers(0, 255, n).astype(np.uint16),
        "temperature": rng.normal(20, 3, n).astype(np.float32),
        "normal": rng.normal(size=(n, 3)),
    }
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(50, 50, 50), attributes=attrs)
    out = tmp_path / "plain.las"
    export(store, out)
    las = laspy.read(out)
    assert las.header.point_format.id == 3
    assert {"temperature", "normal"} <= set(las.point_format.extra_dimension_names)
    back = zv.read_points(store)
    order_a = np.lexsort(back.positions.T)
    order_b = np.lexsort((las.x, las.y, las.z))
    assert np.allclose(
        np.stack([las.x, las.y, las.z], 1)[order_b], back.positions[order_a], atol=5e-4
    )
    for name in ("intensity", "classification", "gps_time", "red", "temperature"):
        assert np.array_equal(np.asarray(las[name])[order_b], back.attributes[name][order_a])


def test_export_rejects_4d_points(tmp_path: Path) -> None:
    store = MemoryStore()
    zv.write_points(store, np.zeros((2, 4)), chunk_shape=(1, 1, 1, 1))
    with pytest.raises(InvalidInputError, match="4-D"):
        store_to_las(store, tmp_path / "x.las")
