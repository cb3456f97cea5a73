"""Dense arrays: the direct chunk writer stores exactly the bytes zarr-python stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.codecs import GzipCodec, ZstdCodec
from zarr.storage import LocalStore, MemoryStore

from zarr_vectors.core.payload.create import create_dense_array, declare_dense_array
from zarr_vectors.core.payload.dense import write_dense

CODECS = {
    "default": ("default", "default"),
    "none": (None, None),
    "zstd_checksum": (ZstdCodec(level=1, checksum=True), numcodecs.Zstd(level=1, checksum=True)),
    "gzip_generic_path": (GzipCodec(level=1), numcodecs.GZip(level=1)),
}


def _data(kind: str) -> tuple[np.ndarray[Any, Any], tuple[int, ...]]:
    """(data, chunks): partial last chunks, all-zero chunks, -0.0 and NaN."""
    rng = np.random.default_rng(0)
    if kind == "int64_partial":
        data = rng.integers(-5, 5, 23).astype(np.int64)
        data[5:10] = 0  # the second chunk is all zeros: not stored
        return data, (5,)
    if kind == "manifest_2d":
        return rng.integers(0, 9, (37, 5)).astype(np.int64), (16, 5)
    if kind == "float_signed_zero":
        data = np.zeros(12, dtype=np.float64)
        data[4] = -0.0  # equal to the fill value 0, but stored: zarr compares floats bitwise
        data[9] = np.nan
        return data, (4,)
    if kind == "all_zero_float32":
        return np.zeros((9, 2), dtype=np.float32), (4, 2)
    if kind == "bool":
        return rng.random(30) > 0.7, (7,)
    if kind == "uint8_rgb":
        return rng.integers(0, 255, (10, 3)).astype(np.uint8), (3, 3)
    if kind == "big_endian":
        return np.arange(11, dtype=">i4"), (4,)
    if kind == "grid_3d":
        data = np.zeros((4, 3, 2), dtype=np.int64)
        data[3, 1, 1] = 7
        return data, (2, 3, 2)
    if kind == "grid_split_inner":  # chunked along several axes: zarr-python writes it
        return np.arange(24, dtype=np.int64).reshape(4, 6), (2, 3)
    if kind == "empty_rows":
        return np.zeros((0, 5), dtype=np.int64), (16, 5)
    raise AssertionError(kind)


KINDS = [
    "int64_partial",
    "manifest_2d",
    "float_signed_zero",
    "all_zero_float32",
    "bool",
    "uint8_rgb",
    "big_endian",
    "grid_3d",
    "grid_split_inner",
    "empty_rows",
]


def _store_bytes(store: Any) -> dict[str, bytes]:
    if isinstance(store, MemoryStore):
        return {k: v.to_bytes() for k, v in store._store_dict.items()}
    root = Path(store.root)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("zarr_format", [2, 3], ids=["v2", "v3"])
@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store_kind", ["memory", "local"])
def test_dense_write_equals_zarr_python(
    tmp_path: Path, zarr_format: int, codec: Any, kind: str, store_kind: str
) -> None:
    data, chunks = _data(kind)
    compressor = codec[3 - zarr_format]
    stores = []
    for name in ("direct", "zarr"):
        store: Any = MemoryStore() if store_kind == "memory" else LocalStore(tmp_path / name)
        root = zarr.open_group(store, mode="w", zarr_format=zarr_format)  # type: ignore[arg-type]
        group = root.create_group("level")
        array, values = declare_dense_array(
            group, "sub/x", data, attributes={"a": 1}, chunks=chunks, compressor=compressor
        )
        if name == "direct":
            write_dense(array, values)
        elif values.size:
            array[...] = values  # zarr-python's own chunk encoding
        stores.append(store)
    direct, reference = (_store_bytes(s) for s in stores)
    assert sorted(direct) == sorted(reference)
    if isinstance(compressor, GzipCodec | numcodecs.GZip):
        # zarr-python writes it (the generic path); gzip headers hold the time of writing
        direct = {k: v for k, v in direct.items() if k.endswith((".json", ".zarray", ".zattrs"))}
    assert [k for k in direct if direct[k] != reference[k]] == []
    back = zarr.open_group(stores[0], mode="r")["level/sub/x"]
    np.testing.assert_array_equal(np.asarray(back[...]), data)  # type: ignore[index]


def test_create_dense_array_skips_all_zero_chunks() -> None:
    store = MemoryStore()
    group = zarr.open_group(store, mode="w")
    data = np.zeros(40, dtype=np.int64)
    data[35] = 1
    create_dense_array(group, "c", data, attributes={}, chunks=(16,))
    assert sorted(k for k in store._store_dict if k.startswith("c/c/")) == ["c/c/2"]
