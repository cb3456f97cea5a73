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
from zarr_vectors.multiscale.shards import coarse_level_shards
from zarr_vectors.testing import assert_geometry_equal
from zarr_vectors.testing.examples import random_walk_trees


def _chain(store: Path, level: int, path: str) -> list[dict[str, Any]]:
    """Codecs of an array's chunks: inside ``sharding_indexed`` when the array is sharded."""
    codecs = json.loads((store / str(level) / path / "zarr.json").read_text())["codecs"]
    if [c["name"] for c in codecs] == ["sharding_indexed"]:
        inner: list[dict[str, Any]] = codecs[0]["configuration"]["codecs"]
        return inner
    return list(codecs)


def _shards(store: Path, level: int, path: str) -> list[int] | None:
    """Chunks per shard of an array, or None when it is not sharded."""
    doc = json.loads((store / str(level) / path / "zarr.json").read_text())
    if doc["codecs"][0]["name"] != "sharding_indexed":
        return None
    return list(doc["chunk_grid"]["configuration"]["chunk_shape"])


def _codecs(store: Path, level: int, path: str) -> list[str]:
    """Codec names of an array's chunks, without the checksum every new chunk ends with."""
    names = [c["name"] for c in _chain(store, level, path)]
    assert names[-1] == "crc32c", names
    return names[:-1]


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
    links = _chain(store, 0, "links")[1]
    zv.build_pyramid(store, [(2, 2, 2)])
    again = _chain(store, 1, "links")[1]
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
        assert _shards(sharded, level, "vertices") == [2, 2, 2]
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


def _file_count(store: Path, level: int) -> int:
    return sum(1 for p in (store / str(level)).rglob("*") if p.is_file())


@pytest.mark.parametrize(("lo", "level2_shards"), [(0.0, [4, 4, 4]), (-20.0, [2, 2, 2])])
def test_coarse_levels_of_an_unsharded_v3_store_are_sharded_by_ratio(
    tmp_path: Path, lo: float, level2_shards: list[int]
) -> None:
    """Each coarse shard spans ``bin_ratio`` chunks (as far as the grid origin allows).

    Level 0 keeps one file per chunk; the levels read exactly as the same levels of a v2
    store, whose arrays cannot be sharded.
    """
    rng = np.random.default_rng(11)
    pos = rng.uniform(lo, lo + 80, (20_000, 3))
    attrs = {"a": rng.random(20_000).astype(np.float32)}
    opts: dict[str, Any] = {"chunk_shape": (10.0,) * 3, "bin_shape": (2.5,) * 3}
    v3, v2 = tmp_path / "v3.zarrvectors", tmp_path / "v2.zarrvectors"
    zv.write_points(v3, pos, attributes=attrs, **opts)
    zv.write_points(v2, pos, attributes=attrs, zarr_format=2, **opts)
    for store in (v3, v2):
        zv.build_pyramid(store, [(2, 2, 2), (4, 4, 4)])
    assert zv.open(v3).level(0).layout.grid.origin == (int(lo // 10),) * 3
    assert _shards(v3, 0, "vertices") is None
    for level, shards in ((1, [2, 2, 2]), (2, level2_shards)):
        for path in ("vertices", "vertex_fragments", "attributes/a"):
            assert _shards(v3, level, path) == shards
            assert _codecs(v3, level, path) == _codecs(v3, 0, path)
        assert_geometry_equal(zv.read_points(v3, level=level), zv.read_points(v2, level=level))
        box = (np.full(3, lo + 15.0), np.full(3, lo + 52.5))
        assert_geometry_equal(
            zv.read_points(v3, level=level, bbox=box), zv.read_points(v2, level=level, bbox=box)
        )
        assert _file_count(v3, level) < _file_count(v2, level) / 4
    assert zv.validate(v3, level=5).ok


def test_coarse_level_shards_follow_ratio_origin_and_format() -> None:
    ratios = [(2, 2, 2), (4, 4, 8)]
    assert coarse_level_shards(ratios, (0, 0, 0), (9, 9, 9), level0_shards=None,
                               zarr_format=3) == ((2, 2, 2), (4, 4, 8))  # fmt: skip
    # shard boundaries stay on multiples of the shard shape in chunk coordinates
    assert coarse_level_shards(ratios, (-3, -3, 4), (9, 9, 9), level0_shards=None,
                               zarr_format=3) == ((1, 1, 2), (1, 1, 4))  # fmt: skip
    assert coarse_level_shards(ratios, (-3, 5, 1), (9, 9, 9), level0_shards=None,
                               zarr_format=3) == (None, None)  # fmt: skip
    # never more than twice the grid along an axis (halving keeps the alignment)
    assert coarse_level_shards(ratios, (0, 0, 0), (1, 2, 3), level0_shards=None,
                               zarr_format=3) == ((1, 2, 2), (1, 2, 4))  # fmt: skip
    assert coarse_level_shards(ratios, (0, 0, 0), (9, 9, 9), level0_shards=None,
                               zarr_format=2) == (None, None)  # fmt: skip
    assert coarse_level_shards(ratios, (-4, 0, 0), (9, 9, 9), level0_shards=(4, 4, 4),
                               zarr_format=3) == ((4, 4, 4), (4, 4, 4))  # fmt: skip
