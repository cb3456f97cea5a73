"""Hostile stores: foreign codecs are refused before decoding, and decoding is bounded.

* a v2 store naming numcodecs' ``pickle`` codec runs no code on read, validate, rechunk or
  CLI export, even where numcodecs would unpickle (its opt-in switched on here);
* a small crafted zstd chunk declaring (or streaming) gigabytes is refused without the
  allocation; a declared size of 2**40 bytes is a ``CorruptPayloadError``, not MemoryError;
* ``vertex_counts`` edited to 2**31 - 1 is named, without allocating what it claims.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import resource
from pathlib import Path
from typing import Any

import numcodecs
import numcodecs.pickles
import numpy as np
import pytest
import zarr
import zstandard
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.core.checksums import append_crc32c
from zarr_vectors.core.codec_policy import check_codecs, foreign_codecs
from zarr_vectors.core.gather import ELEMENT_HEADER
from zarr_vectors.errors import CorruptPayloadError, ZarrVectorsError

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")

MARKER_NAME = "pwned"


class _Trap:
    """Unpickling this writes a marker file: proof that code ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path(self.path).write_text, ("ran",))


def _pickle_store(tmp_path: Path) -> tuple[Path, Path]:
    """A v2 point store whose ``vertices`` name the pickle codec, with a trap in a chunk."""
    store = tmp_path / "p.zv"
    pts = np.random.default_rng(0).uniform(0, 10, (200, 3))
    zv.write_points(store, pts, chunk_shape=(10, 10, 10), zarr_format=2)
    marker = tmp_path / MARKER_NAME
    meta_path = store / "0" / "vertices" / ".zarray"
    meta = json.loads(meta_path.read_text())
    meta["filters"] = [{"id": "vlen-bytes"}, {"id": "pickle", "protocol": 5}]
    meta["compressor"] = None
    meta_path.write_text(json.dumps(meta))
    for chunk in (store / "0" / "vertices").iterdir():
        if not chunk.name.startswith("."):
            chunk.write_bytes(pickle.dumps(_Trap(str(marker))))
    return store, marker


@pytest.fixture
def unsafe_numcodecs(monkeypatch: pytest.MonkeyPatch) -> None:
    """numcodecs as 0.16.0-0.16.5 behave, or with NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1."""
    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True)


@pytest.mark.usefixtures("unsafe_numcodecs")
def test_pickle_codec_is_refused_everywhere(tmp_path: Path) -> None:
    store, marker = _pickle_store(tmp_path)
    array = zarr.open_array(store / "0" / "vertices", mode="r")
    assert "pickle" in foreign_codecs(array)
    with pytest.raises(CorruptPayloadError, match="'pickle' is not one zarr-vectors decodes"):
        check_codecs(array)
    with pytest.raises(CorruptPayloadError, match="pickle"):
        zv.read_points(store)
    report = zv.validate(store, level=5)  # never raises: reports
    assert not report.ok
    assert any("pickle" in str(f) for f in report.errors)
    with pytest.raises(ZarrVectorsError):
        zv.rechunk(store, tmp_path / "r.zv", chunk_shape=(5, 5, 5))
    out = CliRunner().invoke(app, ["export", str(store), str(tmp_path / "x.ply")])
    assert out.exit_code != 0
    assert not marker.exists()  # the trap never ran
    # the same bytes decoded by plain zarr with the unsafe switch on do run it: a real trap
    with contextlib.suppress(Exception):
        zarr.open_array(store / "0" / "vertices", mode="r")[...]
    assert marker.exists()


def test_standard_and_zvf_codecs_are_allowed(tmp_path: Path) -> None:
    for fmt in (2, 3):
        for preset in ("default", "zstd", "none"):
            store = tmp_path / f"s{fmt}{preset}.zv"
            zv.write_points(store, np.zeros((5, 3)), chunk_shape=(1, 1, 1), zarr_format=fmt,
                            compressor=preset)  # fmt: skip
            group = zarr.open_group(store / "0", mode="r")
            for _, node in group.members(max_depth=None):
                if isinstance(node, zarr.Array):
                    assert foreign_codecs(node) == ()


def _zstd_points(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "z.zv"
    pts = np.random.default_rng(1).uniform(0, 10, (300, 3))
    zv.write_points(store, pts, chunk_shape=(10, 10, 10), compressor="zstd")
    chunk = next(p for p in (store / "0" / "vertices" / "c").rglob("*") if p.is_file())
    return store, chunk


def _bomb(decoded: int, content_size: bool) -> bytes:
    """A zstd frame of ``decoded`` zero bytes behind a valid vlen header (~decoded / 32,000)."""
    comp = zstandard.ZstdCompressor(level=1, write_content_size=content_size)
    head = ELEMENT_HEADER.pack(1, decoded - ELEMENT_HEADER.size)
    block = bytes(64 << 20)
    obj = comp.compressobj(size=decoded if content_size else -1)
    parts = [obj.compress(head)]
    left = decoded - len(head)
    while left:
        n = min(left, len(block))
        parts.append(obj.compress(block[:n]))
        left -= n
    parts.append(obj.flush())
    return b"".join(parts)


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("content_size", [True, False], ids=["declared", "streamed"])
def test_small_zstd_chunk_cannot_drive_a_read_to_gigabytes(
    tmp_path: Path, content_size: bool
) -> None:
    store, chunk = _zstd_points(tmp_path)
    bomb = _bomb(1 << 30, content_size)
    assert len(bomb) < 131_000
    chunk.write_bytes(append_crc32c(bomb))  # a checksum that matches: the decoder must cope
    before = _max_rss_mb()
    with pytest.raises(CorruptPayloadError, match=str(chunk.name) + "|vertex_counts|accepted"):
        zv.read_points(store)
    with pytest.raises(CorruptPayloadError):
        zv.open(store).read(bbox=([0, 0, 0], [10, 10, 10]))
    assert _max_rss_mb() - before < 400  # honest chunk: a few KB; never the bomb's 1 GiB


def test_declared_size_of_2_to_the_40_is_corrupt_not_memory_error(tmp_path: Path) -> None:
    store, chunk = _zstd_points(tmp_path)
    # a zstd frame by hand: magic, descriptor (8-byte content size), window, size, one raw block
    body = ELEMENT_HEADER.pack(1, 92) + b"x" * 92
    block = ((len(body) << 3) | 1).to_bytes(3, "little")  # last block, raw, 100 bytes
    fake = b"\x28\xb5\x2f\xfd" + bytes([0xC0, 0x58]) + (1 << 40).to_bytes(8, "little")
    fake += block + body
    assert zstandard.frame_content_size(fake) == 1 << 40
    chunk.write_bytes(append_crc32c(fake))
    with pytest.raises(CorruptPayloadError):
        zv.read_points(store)
    group = zarr.open_group(store / "0", mode="r")
    from zarr_vectors.core.payload.rows import PayloadArray  # the element decoder itself

    arr = PayloadArray(group["vertices"])  # type: ignore[arg-type]
    flat = int(np.flatnonzero(np.asarray(group["vertex_counts"][...]).ravel())[0])
    with pytest.raises(CorruptPayloadError):
        arr.read(np.array([flat]))


@pytest.mark.parametrize("preset", ["default", "zstd", "none"])
def test_vertex_counts_of_2_to_the_31_allocate_nothing_of_it(tmp_path: Path, preset: str) -> None:
    store = tmp_path / "c.zv"
    pts = np.random.default_rng(2).uniform(0, 10, (300, 3))
    zv.write_points(store, pts, chunk_shape=(10, 10, 10), compressor=preset)
    counts = zarr.open_array(store / "0" / "vertex_counts", mode="r+")
    value = np.asarray(counts[...])
    value[value > 0] = 2**31 - 1
    counts[...] = value
    before = _max_rss_mb()
    with pytest.raises(CorruptPayloadError, match="vertex_counts"):
        zv.read_points(store)
    assert _max_rss_mb() - before < 400
