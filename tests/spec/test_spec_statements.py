"""docs/spec.md says what the writers write: §7.4 / §10 dense codecs and frames, §15 metadata.

Each test reads the files and JSON documents of a store written with a new user's defaults (or
the option the statement names) and checks the statement literally.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zstandard

import zarr_vectors as zv
from zarr_vectors.testing.examples import random_walk_paths

DENSE = ("vertex_counts", "object_index/offsets", "object_index/manifest")


def _write(path: Path, fmt: int, **kw: Any) -> None:
    pos, off = random_walk_paths(3000, seed=3, min_length=20, max_length=60)
    zv.write_streamlines(path, pos, offsets=off, chunk_shape=(30.0,) * 3, zarr_format=fmt, **kw)


def _meta(array_dir: Path) -> dict[str, Any]:
    name = "zarr.json" if (array_dir / "zarr.json").exists() else ".zarray"
    return json.loads((array_dir / name).read_text())  # type: ignore[no-any-return]


def _chunk_files(array_dir: Path) -> list[Path]:
    skip = {"zarr.json", ".zarray", ".zattrs"}
    return [f for f in array_dir.rglob("*") if f.is_file() and f.name not in skip]


def _zstd_frames(data: bytes) -> int:
    """Number of zstd frames that make up ``data`` exactly."""
    frames = 0
    while data:
        rest = zstandard.ZstdDecompressor().decompressobj()
        rest.decompress(data)
        data = rest.unused_data
        frames += 1
    return frames


@pytest.mark.parametrize("frame_bytes", ["auto", None, 4096])
@pytest.mark.parametrize("preset", ["default", "zstd"])
def test_dense_chunks_are_one_standard_stream_v3(
    tmp_path: Path, preset: str, frame_bytes: str | int | None
) -> None:
    """§7.4: each dense chunk is one zstd frame or one Blosc buffer, whatever frame_bytes."""
    path = tmp_path / "s.zv"
    kw = {} if frame_bytes == "auto" else {"frame_bytes": frame_bytes}
    _write(path, 3, compressor=preset, **kw)
    for name in DENSE:
        codecs = [c["name"] for c in _meta(path / "0" / name)["codecs"]]
        blosc_index = preset == "default" and name.startswith("object_index")
        assert codecs == ["bytes", "blosc" if blosc_index else "zstd", "crc32c"], name
        files = _chunk_files(path / "0" / name)
        assert files
        for f in files:
            body = f.read_bytes()[:-4]  # the crc32c
            if blosc_index:
                # one Blosc 1 buffer: its header's compressed size is the whole value
                assert int.from_bytes(body[12:16], "little") == len(body), f
            else:
                assert _zstd_frames(body) == 1, f
                # so the plain one-shot decoder returns every byte (it stops after one frame)
                zstandard.ZstdDecompressor().decompress(body)


@pytest.mark.parametrize("preset", ["default", "zstd", "none"])
def test_dense_chunks_are_zlib_v2(tmp_path: Path, preset: str) -> None:
    """§7.4: v2 dense arrays are zlib level 1 without filters, whatever the preset."""
    path = tmp_path / "s.zv"
    _write(path, 2, compressor=preset)
    for name in DENSE:
        meta = _meta(path / "0" / name)
        assert meta["compressor"] == {"id": "zlib", "level": 1}
        assert not meta["filters"]
        for f in _chunk_files(path / "0" / name):
            zlib.decompress(f.read_bytes())  # one zlib stream, Adler-32 verified


def test_metadata_decisions_of_section_15(tmp_path: Path) -> None:
    """§15: default axis_units, units copied to axes, vertex_counts width 1."""
    plain = tmp_path / "plain.zv"
    zv.write_points(plain, np.zeros((4, 3)), chunk_shape=(1.0,) * 3)
    root = json.loads((plain / "zarr.json").read_text())["attributes"]
    assert root["axis_units"] == "unknown"
    assert all("unit" not in axis for axis in root["multiscales"][0]["axes"])
    assert root["coordinate_system"] == "unknown"

    with_units = tmp_path / "units.zv"
    _write(with_units, 3, axis_units="micrometer")
    root = json.loads((with_units / "zarr.json").read_text())["attributes"]
    assert root["axis_units"] == "micrometer"
    assert [a["unit"] for a in root["multiscales"][0]["axes"]] == ["micrometer"] * 3
    counts = json.loads((with_units / "0" / "vertex_counts" / "zarr.json").read_text())
    assert len(counts["shape"]) == 3
    assert counts["attributes"]["width"] == 1  # not the product of the trailing dimensions
