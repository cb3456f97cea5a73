"""Store keywords: one typed set (StoreKwargs), checked into one StoreOptions by every writer."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.options import STORE_KEYWORDS, FrameBytes, StoreOptions
from zarr_vectors.distributed import write_distributed
from zarr_vectors.errors import InvalidInputError

P2 = np.array([[0.0, 0.0], [15.0, 1.0], [3.0, 12.0]])

Writer = Callable[..., Any]
WRITERS: dict[str, Writer] = {
    "points": lambda s, **kw: zv.write_points(s, P2, **kw),
    "lines": lambda s, **kw: zv.write_lines(s, P2[None, :2], **kw),
    "polylines": lambda s, **kw: zv.write_polylines(s, [P2], **kw),
    "streamlines": lambda s, **kw: zv.write_streamlines(s, [P2], step_size=1.0, **kw),
    "graph": lambda s, **kw: zv.write_graph(s, P2, [[0, 1], [1, 2]], **kw),
    "skeleton": lambda s, **kw: zv.write_skeletons(s, P2, [-1, 0, 1], **kw),
    "mesh": lambda s, **kw: zv.write_meshes(s, P2, [[0, 1, 2]], **kw),
    "open_writer": lambda s, **kw: _streamed(s, **kw),
}


def _streamed(store: Any, **kw: Any) -> zv.WriteSummary:
    with zv.open_writer(store, "point_cloud", **kw) as w:
        w.append(P2)
    assert isinstance(w, zv.Writer)
    assert w.summary is not None
    return w.summary


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_misspelt_keyword_is_named_and_nothing_written(name: str, tmp_path: Path) -> None:
    out = tmp_path / "s.zarr"
    with pytest.raises(InvalidInputError, match=r"'chunk_shap' \(did you mean 'chunk_shape'\?\)"):
        WRITERS[name](str(out), chunk_shap=(10, 10))
    with pytest.raises(InvalidInputError, match=r"'compresor'.*'compressor'"):
        WRITERS[name](str(out), chunk_shape=(10, 10), compresor="zstd")
    assert not out.exists()


def test_write_distributed_refuses_misspelt_keyword_before_connecting() -> None:
    with pytest.raises(InvalidInputError, match="'bin_shap'"):
        write_distributed(MemoryStore(), "point_cloud", [], chunk_shape=(1, 1), bin_shap=(1, 1))


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_misspelt_keyword_leaves_existing_store_untouched(name: str, tmp_path: Path) -> None:
    out = tmp_path / "s.zarr"
    WRITERS[name](str(out), chunk_shape=(10, 10))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(InvalidInputError, match="'overwrit'"):
        WRITERS[name](str(out), chunk_shape=(5, 5), overwrit=True)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def _contents(store: MemoryStore) -> dict[str, Any]:
    """Every key's bytes, the root metadata without its creation time."""
    out: dict[str, Any] = {}
    for key, buf in store._store_dict.items():
        raw = buf.to_bytes()
        if key == "zarr.json":
            doc = json.loads(raw)
            doc["attributes"].pop("creation_timestamp", None)
            out[key] = doc
        else:
            out[key] = raw
    return out


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_options_object_writes_the_same_store_as_keywords(name: str) -> None:
    kw: dict[str, Any] = {
        "chunk_shape": (10, 10),
        "bin_shape": (5, 5),
        "compressor": "zstd",
        "axis_names": ("u", "v"),
        "axis_units": "um",
        "notes": "n",
        "custom_metadata": {"k": [1, 2]},
        "bounds": ([-10, -10], [40, 40]),
    }
    a, b = MemoryStore(), MemoryStore()
    WRITERS[name](a, **kw)
    WRITERS[name](b, options=StoreOptions.from_kwargs(**kw))
    assert _contents(a) == _contents(b)


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_options_and_keywords_together_are_refused(name: str) -> None:
    opts = StoreOptions.from_kwargs(chunk_shape=(10, 10))
    with pytest.raises(InvalidInputError, match=r"options= and the store keywords \['overwrite'\]"):
        WRITERS[name](MemoryStore(), options=opts, overwrite=True)


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"overwrite": "yes"}, "overwrite"),
        ({"zarr_format": 4}, "zarr_format"),
        ({"zarr_format": True}, "zarr_format"),
        ({"frame_bytes": "big"}, "frame_bytes"),
        ({"frame_bytes": 8}, "frame_bytes"),
        ({"coordinate_system": 5}, "coordinate_system"),
        ({"coordinate_system": None}, "coordinate_system"),  # once written as an unreadable null
        ({"storage_options": [("anon", True)]}, "storage_options"),
        ({"axis_names": "uv"}, "axis_names"),
        ({"axis_names": ["u"]}, "axis_names"),
        ({"notes": 3}, "notes"),
        ({"compressor": "brotli"}, "brotli"),
        ({"options": {"chunk_shape": (1, 1)}}, "options must be a StoreOptions"),
    ],
)
@pytest.mark.parametrize("name", ["points", "mesh", "open_writer"])
def test_mistyped_value_names_the_keyword(name: str, kw: dict[str, Any], named: str) -> None:
    full = kw if "options" in kw else {"chunk_shape": (10, 10), **kw}
    with pytest.raises(InvalidInputError, match=named):
        WRITERS[name](MemoryStore(), **full)


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_chunk_shape_is_required(name: str) -> None:
    with pytest.raises(InvalidInputError, match="chunk_shape is required"):
        WRITERS[name](MemoryStore(), compressor="zstd")


def test_store_options_are_frozen_and_typed() -> None:
    opts = StoreOptions.from_kwargs(chunk_shape=[10, 20], shards=[2, 2], frame_bytes="auto")
    assert opts.chunk_shape == (10.0, 20.0)
    assert opts.shards == (2, 2)
    assert opts.frame_bytes is FrameBytes.AUTO
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.overwrite = True  # type: ignore[misc]
    assert opts.resolve(2, "point_cloud").frame_bytes is None
    assert opts.resolve(2, "polyline").frame_bytes == 1024
    assert opts.resolve(2, "streamline").frame_bytes == 1024
    assert opts.resolve(2, "line").frame_bytes == 4096
    assert opts.resolve(2, "mesh").frame_bytes == 4096
    assert opts.resolve(2, "skeleton").frame_bytes == 1 << 16
    with pytest.raises(InvalidInputError, match="options= is already a StoreOptions"):
        StoreOptions.from_kwargs(options=opts)


def test_options_axes_must_match_the_data() -> None:
    opts = StoreOptions.from_kwargs(chunk_shape=(10, 10, 10), axis_names=("a", "b", "c"))
    with pytest.raises(InvalidInputError, match="axis_names has 3 names, expected 2"):
        zv.write_points(MemoryStore(), P2, options=opts)


def test_store_keywords_are_the_documented_set() -> None:
    assert {
        "chunk_shape", "bin_shape", "bounds", "zarr_format", "overwrite", "compressor",
        "shards", "frame_bytes", "storage_options", "coordinate_system", "axis_units",
        "axis_names", "source_description", "notes", "custom_metadata", "options",
    } == STORE_KEYWORDS  # fmt: skip


def test_append_mode_refuses_store_keywords(tmp_path: Path) -> None:
    out = tmp_path / "s.zarr"
    zv.write_points(str(out), P2, chunk_shape=(10, 10))
    with pytest.raises(InvalidInputError, match=r"mode='a'.*\['chunk_shape'\]"):
        zv.open_writer(str(out), "point_cloud", mode="a", chunk_shape=(10, 10))


def test_rechunk_checks_its_store_keywords() -> None:
    src = MemoryStore()
    zv.write_points(src, P2, chunk_shape=(10, 10))
    with pytest.raises(InvalidInputError, match="overwrite must be True or False"):
        zv.rechunk(src, MemoryStore(), chunk_shape=(5, 5), overwrite="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="frame_bytes"):
        zv.rechunk(src, MemoryStore(), chunk_shape=(5, 5), frame_bytes=8)
    assert zv.rechunk(src, MemoryStore(), chunk_shape=(5, 5), shards=(2, 2)).vertex_count == 3
