"""Pyramid levels and rechunked copies are stored as the source store is (codecs, shards)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.codecs import GzipCodec

import zarr_vectors as zv
from zarr_vectors.core.payload.compression import compressor_spec
from zarr_vectors.testing import assert_geometry_equal
from zarr_vectors.testing.examples import random_walk_trees


def _codecs(store: Path, level: int, path: str) -> list[str]:
    """Codec names of an array, without the chunk checksum every new array ends with."""
    doc = json.loads((store / str(level) / path / "zarr.json").read_text())
    names = [c["name"] for c in doc["codecs"]]
    if names != ["sharding_indexed"]:
        assert names[-1] == "crc32c", names
        names = names[:-1]
    return names


def _points(store: Path, compressor: Any) -> None:
    rng = np.random.default_rng(0)
    zv.write_points(
        store,
        rng.random((5_000, 3)) * 10,
        chunk_shape=(5.0, 5.0, 5.0),
        bin_shape=(1.25, 1.25, 1.25),
        attributes={"a": rng.random(5_000).astype(np.float32)},
        compressor=compressor,
    )


@pytest.mark.parametrize(
    ("compressor", "vertices", "attribute"),
    [
        ("default", ["vlen-bytes", "blosc"], ["vlen-bytes", "blosc"]),
        ("zstd", ["vlen-bytes", "zstd"], ["vlen-bytes", "zstd"]),
        ("lz4", ["vlen-bytes", "blosc"], ["vlen-bytes", "blosc"]),
        ("none", ["vlen-bytes"], ["vlen-bytes"]),
        (GzipCodec(level=4), ["vlen-bytes", "gzip"], ["vlen-bytes", "gzip"]),
        ({"vertices": None, "*": "lz4"}, ["vlen-bytes"], ["vlen-bytes", "blosc"]),
    ],
    ids=["default", "zstd", "lz4", "none", "gzip", "mapping"],
)
def test_pyramid_levels_keep_the_stores_compressors(
    tmp_path: Path, compressor: Any, vertices: list[str], attribute: list[str]
) -> None:
    store = tmp_path / "p.zarrvectors"
    _points(store, compressor)
    assert _codecs(store, 0, "vertices") == vertices
    assert _codecs(store, 0, "attributes/a") == attribute
    zv.build_pyramid(store, [(2, 2, 2), (4, 4, 4)])
    for level in (1, 2):
        assert _codecs(store, level, "vertices") == vertices
        assert _codecs(store, level, "attributes/a") == attribute
    # the same levels as from a zstd store, whatever the compression
    plain = tmp_path / "plain.zarrvectors"
    _points(plain, "default")
    zv.build_pyramid(plain, [(2, 2, 2), (4, 4, 4)])
    for level in (1, 2):
        assert_geometry_equal(
            zv.read_points(store, level=level), zv.read_points(plain, level=level)
        )
    # an explicit compressor still decides
    zv.build_pyramid(store, [(2, 2, 2)], overwrite=True, compressor="zstd")
    assert _codecs(store, 1, "vertices") == ["vlen-bytes", "zstd"]


def test_skeleton_pyramid_and_rechunk_keep_lz4_links(tmp_path: Path) -> None:
    pos, par, off = random_walk_trees(6, 200, seed=2)
    store, copy = tmp_path / "s.zarrvectors", tmp_path / "c.zarrvectors"
    zv.write_skeletons(
        store, pos, par, offsets=off, chunk_shape=(24, 24, 24), bin_shape=(6, 6, 6),
        compressor="lz4",
    )  # fmt: skip
    links = json.loads((store / "0" / "links" / "zarr.json").read_text())["codecs"][1]
    zv.build_pyramid(store, [(2, 2, 2)])
    again = json.loads((store / "1" / "links" / "zarr.json").read_text())["codecs"][1]
    assert again == links  # the preset's 64 KiB unsplit blocks, not plain Blosc
    zv.rechunk(store, copy, chunk_shape=(12, 12, 12))
    assert json.loads((copy / "0" / "links" / "zarr.json").read_text())["codecs"][1] == links
    assert_geometry_equal(zv.read_skeletons(copy), zv.read_skeletons(store))


@pytest.mark.parametrize("compressor", ["default", "lz4", "none"])
def test_rechunk_keeps_the_compressors(tmp_path: Path, compressor: str) -> None:
    store, copy = tmp_path / "p.zarrvectors", tmp_path / "c.zarrvectors"
    _points(store, compressor)
    zv.rechunk(store, copy, chunk_shape=(2.5, 2.5, 2.5))
    for path in ("vertices", "attributes/a"):
        assert _codecs(copy, 0, path) == _codecs(store, 0, path)
    other = tmp_path / "o.zarrvectors"
    zv.rechunk(store, other, chunk_shape=(2.5, 2.5, 2.5), compressor="none")
    assert _codecs(other, 0, "vertices") == ["vlen-bytes"]


def test_compressor_spec_names_the_presets(tmp_path: Path) -> None:
    root = zarr.open_group(tmp_path / "g", mode="w", zarr_format=2)
    cases: list[tuple[Any, Any]] = [
        (numcodecs.Zstd(level=3), "zstd"),
        (numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE), "lz4"),
        (None, None),
    ]
    for k, (codec, want) in enumerate(cases):
        arr = root.create_array(f"a{k}", shape=(4,), dtype="f4", compressors=codec)
        assert compressor_spec(arr) == want
    odd = numcodecs.Zstd(level=9)
    arr = root.create_array("odd", shape=(4,), dtype="f4", compressors=odd)
    assert compressor_spec(arr) == odd


def test_sharded_grids_are_aligned_to_shards(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for lo, origin in ((30.0, 0), (-25.0, -4), (55.0, 4)):
        store = tmp_path / f"s{lo}.zarrvectors"
        zv.write_points(store, rng.uniform(lo, lo + 40, (500, 3)), chunk_shape=(10, 10, 10),
                        shards=(4, 4, 4))  # fmt: skip
        reader = zv.open(store).level(0)
        assert reader.layout.grid.origin == (origin,) * 3
        assert reader.aligned_shards() == (4, 4, 4)
        plain = tmp_path / f"p{lo}.zarrvectors"
        zv.write_points(plain, rng.uniform(lo, lo + 40, (500, 3)), chunk_shape=(10, 10, 10))
        assert zv.open(plain).level(0).aligned_shards() is None


@pytest.mark.slow
def test_pyramid_of_a_sharded_store_is_sharded(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    pos = rng.uniform(-13, 50, (8_000, 3))
    opts: dict[str, Any] = {"chunk_shape": (8.0, 8.0, 8.0), "bin_shape": (2.0, 2.0, 2.0)}
    sharded, plain = tmp_path / "s.zarrvectors", tmp_path / "p.zarrvectors"
    zv.write_points(sharded, pos, shards=(2, 2, 2), **opts)
    zv.write_points(plain, pos, **opts)
    for store in (sharded, plain):
        zv.build_pyramid(store, [(2, 2, 2), (4, 4, 4)])
    for level in (1, 2):
        assert _codecs(sharded, level, "vertices") == ["sharding_indexed"]
        assert_geometry_equal(
            zv.read_points(sharded, level=level), zv.read_points(plain, level=level)
        )
    assert zv.validate(sharded, level=2).ok


def test_rechunk_into_another_zarr_format_keeps_presets(tmp_path: Path) -> None:
    """Codec classes differ between Zarr v2 and v3: presets carry over, others the default."""
    rng = np.random.default_rng(8)
    pos = rng.random((2_000, 3)) * 10
    odd, lz4 = tmp_path / "odd.zarrvectors", tmp_path / "lz4.zarrvectors"
    zv.write_points(odd, pos, chunk_shape=(5, 5, 5), zarr_format=2,
                    compressor=numcodecs.Zstd(level=9))  # fmt: skip
    zv.write_points(lz4, pos, chunk_shape=(5, 5, 5), zarr_format=2, compressor="lz4")
    for src, want in ((odd, ["vlen-bytes", "blosc"]), (lz4, ["vlen-bytes", "blosc"])):
        out = tmp_path / f"v3-{src.name}"
        zv.rechunk(src, out, chunk_shape=(2.5, 2.5, 2.5), zarr_format=3)
        assert _codecs(out, 0, "vertices") == want
        assert len(zv.read_points(out)) == len(pos)
    same = tmp_path / "v2-odd.zarrvectors"
    zv.rechunk(odd, same, chunk_shape=(2.5, 2.5, 2.5))
    meta = json.loads((same / "0" / "vertices" / ".zarray").read_text())
    assert meta["compressor"] == {"id": "zstd", "level": 9}
