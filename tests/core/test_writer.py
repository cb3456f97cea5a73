"""Write pipeline internals: batched gathers, the column extent, early row writes."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core import gather, writer
from zarr_vectors.core.chunking import axis_bounds
from zarr_vectors.core.payload import codec as zv_codec
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.core.plan import plan_level
from zarr_vectors.errors import InvalidInputError


def _naive_payloads(rows: np.ndarray, order: np.ndarray | None, bounds: list[int]) -> list[bytes]:
    data = rows if order is None else rows[order]
    return [data[a:b].tobytes() for a, b in pairwise(bounds)]


def _payloads(rows: np.ndarray, order: np.ndarray | None, bounds: Any, **kw: Any) -> list[Any]:
    """Every chunk's payload from :func:`gather.payload_batches`, in chunk order."""
    return [p for b in gather.payload_batches(rows, order, bounds, **kw) for p in b.payloads]


@pytest.mark.parametrize("batch", [1, 3, 1 << 18])
@pytest.mark.parametrize("width", [1, 3])
def test_payload_batches_gather_whole_chunks(
    monkeypatch: pytest.MonkeyPatch, batch: int, width: int
) -> None:
    rng = np.random.default_rng(width)
    rows = rng.random((40, width)).astype(np.float32)
    monkeypatch.setattr(gather, "GATHER_BYTES", batch * rows[:1].nbytes)  # `batch` rows
    order = rng.permutation(40)
    bounds = [0, 1, 2, 9, 10, 30, 40]
    b = np.array(bounds, dtype=np.int64)
    batches = list(gather.payload_batches(rows, order, b))
    assert [x.first for x in batches] == [0, *[x.last for x in batches[:-1]]]
    assert batches[-1].last == len(bounds) - 1
    for x in batches:  # whole chunks, more than one only while under `batch` rows
        assert len(x.payloads) == x.last - x.first
        assert x.last - x.first == 1 or bounds[x.last - 1] - bounds[x.first] < batch
    assert all(x.headed for x in batches)  # gathered straight into elements
    for rows_order in (order, None):
        headed = [bytes(p) for p in _payloads(rows, rows_order, b)]
        expected = _naive_payloads(rows, rows_order, bounds)
        assert headed == [gather.ELEMENT_HEADER.pack(1, len(p)) + p for p in expected]
    sizes = _payloads(rows, order, b, encode=lambda part: bytes([len(part)]))
    assert sizes == [bytes([n]) for n in np.diff(bounds).tolist()]
    assert _payloads(rows[:0], order[:0], np.zeros(1, dtype=np.int64)) == []


def test_chunk_range_check_names_the_row() -> None:
    pos = np.zeros((5, 2))
    pos[3, 1] = 3e17
    extent = axis_bounds(pos)
    writer._check_chunk_range(pos, (1.0, 100.0), extent)  # 3e15 chunks: representable
    with pytest.raises(InvalidInputError, match=r"coordinate 3e\+17 at row 3, column 1"):
        writer._check_chunk_range(pos, (1.0, 1.0), extent)


def _dump(store: MemoryStore) -> dict[str, bytes]:
    out = {}
    for key, buf in store._store_dict.items():
        raw = buf.to_bytes()
        if key.endswith("zarr.json"):
            doc = json.loads(raw)
            doc.get("attributes", doc).pop("creation_timestamp", None)
            raw = json.dumps(doc, sort_keys=True).encode()
        out[key] = raw
    return out


@pytest.mark.parametrize("kind", ["points", "streamlines"])
def test_early_rows_write_what_the_writer_writes(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    rng = np.random.default_rng(5)
    kw: dict[str, Any] = {"chunk_shape": (4, 4, 4), "bin_shape": (2, 2, 2)}
    stores = []
    for early in (True, False):
        if not early:  # no hooks: the rows and fragments are queued after planning
            monkeypatch.setattr(
                writer, "plan_level", lambda parts, layout, **_: plan_level(parts, layout)
            )
        store = MemoryStore()
        if kind == "points":
            pos = rng.uniform(0, 20, (3000, 3)).astype(np.float32)
            zv.write_points(store, pos, attributes={"a": rng.random((3000, 2))}, **kw)
        else:
            pos = np.cumsum(rng.normal(0, 0.7, (3000, 3)), axis=0).astype(np.float32)
            offsets = np.array([0, 1000, 1001, 2500, 3000])
            zv.write_streamlines(store, pos, offsets=offsets, attributes={"fa": pos[:, 0]}, **kw)
        stores.append(_dump(store))
        rng = np.random.default_rng(5)
    assert stores[0] == stores[1]


@pytest.mark.parametrize("frame", [64, 4096])
def test_batched_frames_are_the_bytes_of_one_by_one_encoding(frame: int) -> None:
    codec = zv_codec.ElementCodec(numcodecs.Zstd(level=3), frame_bytes=frame)
    rng = np.random.default_rng(frame)
    sizes = [0, 1, frame - 9, frame - 8, frame - 7, frame, 3 * frame + 5, 40_000]
    payloads: list[bytes | memoryview] = [
        rng.integers(0, 50, n).astype(np.uint8).tobytes() for n in sizes
    ]
    payloads.append(memoryview(rng.random((700, 3)).astype(np.float32)).cast("B"))
    assert codec.encode_many(payloads) == [codec.encode(p) for p in payloads]
    elements = [gather.ELEMENT_HEADER.pack(1, len(p)) + bytes(p) for p in payloads]
    assert codec.encode_many(elements, headed=True) == codec.encode_many(payloads)


@pytest.mark.parametrize("compressor", [None, "lz4", numcodecs.Zstd(level=3)])
def test_headed_elements_encode_like_bare_payloads(compressor: Any) -> None:
    """Payloads gathered behind their header (no copy) are stored as the same bytes."""
    codec = zv_codec.ElementCodec(None)
    if compressor == "lz4":
        codec = zv_codec.ElementCodec(numcodecs.Blosc("lz4"), lz4_blocks=(4, 4096))
    elif compressor is not None:
        codec = zv_codec.ElementCodec(compressor)
    rng = np.random.default_rng(1)
    payloads = [rng.random(n).astype(np.float32).tobytes() for n in (1, 100, 5000)]
    elements = [gather.ELEMENT_HEADER.pack(1, len(p)) + p for p in payloads]
    assert codec.encode_many(elements, headed=True) == codec.encode_many(payloads)
    for p, e in zip(payloads, elements, strict=True):
        assert bytes(codec.encode(e, headed=True)) == bytes(codec.encode(p))


def test_payloads_are_views_and_written_whole(tmp_path: Any) -> None:
    rows = np.arange(30, dtype=np.int32).reshape(10, 3)
    out = _payloads(rows, None, np.array([0, 4, 10]))
    assert all(isinstance(p, memoryview) for p in out)
    zv_store_io.write_file((str(tmp_path / "f"), out[1]))
    element = gather.ELEMENT_HEADER.pack(1, rows[4:].nbytes) + rows[4:].tobytes()
    assert (tmp_path / "f").read_bytes() == element


def test_failed_new_local_write_leaves_nothing(tmp_path: Path) -> None:
    """A write that fails after the store was started (here: inside planning) removes the
    new store, keeps a directory that was empty empty, and never touches an existing store."""
    from unittest import mock

    paths = [np.arange(30, dtype=np.float32).reshape(10, 3)]

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("planning failed")

    new = tmp_path / "new.zarrvectors"
    empty = tmp_path / "empty.zarrvectors"
    empty.mkdir()
    for target in (new, empty):
        with mock.patch.object(writer, "plan_level", boom), pytest.raises(RuntimeError):
            zv.write_polylines(target, paths, chunk_shape=(4, 4, 4))
    assert not new.exists()
    assert empty.is_dir()
    assert not any(empty.iterdir())
    zv.write_polylines(new, paths, chunk_shape=(4, 4, 4))  # nothing left in the way
    before = sorted(p.relative_to(new) for p in new.rglob("*"))
    with pytest.raises(zv.StoreExistsError):
        zv.write_polylines(new, paths, chunk_shape=(4, 4, 4))
    assert sorted(p.relative_to(new) for p in new.rglob("*")) == before
    assert zv.validate(new).ok
