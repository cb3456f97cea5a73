"""docs/spec.md §7.3: a reader without zarr decodes every element with the recipe given there.

The recipe is followed literally from the files on disk and the JSON metadata: verify and
drop the v3 ``crc32c``, decompress the whole value (Blosc 1 buffer, or every zstd frame),
verify and drop the v2 ``crc32`` filter's checksum, check and drop the 8-byte header.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import google_crc32c
import numcodecs
import numpy as np
import pytest
import zstandard

import zarr_vectors as zv
from zarr_vectors.testing.examples import random_walk_paths


def _decode(stored: bytes, v3_codecs: list[str], v2_filters: list[str], compressor: str) -> bytes:
    data = stored
    if v3_codecs and v3_codecs[-1] == "crc32c":  # step 1
        body, crc = data[:-4], data[-4:]
        assert google_crc32c.value(body) == int.from_bytes(crc, "little")
        data = body
    if compressor == "blosc":  # step 2
        data = bytes(numcodecs.Blosc().decode(data))
    elif compressor == "zstd":
        with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as r:
            data = r.read()
    if "crc32" in v2_filters:  # step 3
        body, crc = data[:-4], data[-4:]
        assert zlib.crc32(body) == int.from_bytes(crc, "little")
        data = body
    count, length = struct.unpack_from("<II", data)  # step 4
    assert count == 1
    assert length == len(data) - 8
    return data[8:]


def _chain(array_dir: Path) -> tuple[list[str], list[str], str, str]:
    """(v3 codec names, v2 filter ids, compressor name, chunk-key separator)."""
    if (array_dir / "zarr.json").exists():
        codecs = [c["name"] for c in json.loads((array_dir / "zarr.json").read_text())["codecs"]]
        comp = next((c for c in codecs if c in ("blosc", "zstd")), "")
        return codecs, [], comp, "/"
    meta = json.loads((array_dir / ".zarray").read_text())
    filters = [f["id"] for f in meta["filters"] or []]
    comp = (meta["compressor"] or {}).get("id", "")
    return [], filters, comp, "."


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("preset", ["default", "zstd", "none"])
def test_spec_recipe_decodes_every_vertex_chunk(tmp_path: Path, fmt: int, preset: str) -> None:
    pos, off = random_walk_paths(120, seed=9, min_length=50, max_length=300)
    store = tmp_path / "s.zv"
    zv.write_streamlines(store, pos, offsets=off, chunk_shape=(5, 5, 5), zarr_format=fmt,
                         compressor=preset)  # fmt: skip
    array_dir = store / "0" / "vertices"
    v3, v2, comp, sep = _chain(array_dir)
    counts = zv.open_store(store)["0/vertex_counts"][...]
    rows = []
    big = 0
    for flat in np.flatnonzero(np.asarray(counts).ravel()):
        idx = np.unravel_index(flat, np.asarray(counts).shape)
        key = ("c/" + "/".join(map(str, idx))) if sep == "/" else ".".join(map(str, idx))
        payload = _decode((array_dir / key).read_bytes(), v3, v2, comp)
        rows.append(np.frombuffer(payload, "<f4").reshape(-1, 3))
        big = max(big, len(payload))
    got = np.concatenate(rows)
    assert big > 4 * 4096  # elements of several Blosc blocks
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, pos.tolist()))
