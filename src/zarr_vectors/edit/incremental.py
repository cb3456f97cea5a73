"""Appending as an append segment of level 0 (copy-on-write, one commit).

For a local directory store without sharding (Zarr v2 or v3, any geometry type),
:func:`zarr_vectors.edit.splice.plan_append` computes the new rows of the chunks the new data
lands in (an append segment, :mod:`zarr_vectors.core.segments`, docs/spec.md §13.2) and the
merged level's dense arrays; no stored chunk is decoded.  Then:

1. the store is copied next to itself as a tree of hard links (metadata documents are copied,
   so rewriting them leaves the old store's alone); no payload byte is copied;
2. when the chunk grid grows (on either side, also into negative chunk coordinates) the chunk
   files of the copy are renamed to their indices in the new grid and the payload arrays'
   shapes are rewritten;
3. the new rows are written as segment ``0/segments/<n>`` of the copy, the dense arrays
   (``vertex_counts``, object index, object attributes, groups, statistics, value sets) are
   removed from the copy and written whole, and the level metadata (listing the segment) and
   root metadata are rewritten;
4. coarse levels, if any, are rebuilt in the copy from its new level 0 with the stored pyramid
   plan (ratios, sparsities, aggregations): every edit refreshes them (docs/spec.md §13.1);
5. the copy is swapped with the store at one commit point
   (:func:`zarr_vectors.edit.commit.commit_directory`).

No file of the committed store is ever written.  Every other append takes the full rebuild of
:mod:`zarr_vectors.edit.rewrite`.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.segments import SEGMENTS, segment_path
from zarr_vectors.core.writer import LevelWriter, StoreOptions, WriteSummary, write_dense_arrays
from zarr_vectors.edit.commit import STAGING_TAG, EditTarget, TargetKind, commit_directory
from zarr_vectors.edit.splice import AppendPlan, as_rows, payload_kind, plan_append
from zarr_vectors.spec import layout as L

__all__ = ["AppendPath", "LAST_PATH", "append_chunks"]

_METADATA = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})


class AppendPath(enum.Enum):
    """How the last append of this process was carried out (for tests and benchmarks)."""

    CHUNKS = "chunks"
    """Only the touched chunks were rewritten."""
    REBUILD = "rebuild"
    """The whole store was rebuilt."""


LAST_PATH: list[AppendPath] = []
"""The path each append of this process took, most recent last (kept short)."""


def record(path: AppendPath) -> None:
    """Remember the path an append took."""
    LAST_PATH.append(path)
    del LAST_PATH[:-16]


def _payload_paths(reader: LevelReader, *, segments: bool = False) -> list[str]:
    """Per-chunk array paths of the level's base (and, with ``segments``, its segments')."""
    fixed = [L.VERTICES, L.VERTEX_FRAGMENTS, L.LINKS, L.CROSS_CHUNK_LINKS]
    out: list[str] = []
    for part in ["", *(segment_path(s, "") for s in reader.segments if segments)]:
        names = list(fixed)
        for prefix in (L.ATTRIBUTES, L.LINK_ATTRIBUTES, L.CROSS_CHUNK_LINK_ATTRIBUTES):
            names += [f"{prefix}/{n}" for n in reader.names(prefix)]
        out += [part + p for p in names if reader.has_own(part + p)]
    return out


def _dense_paths(reader: LevelReader) -> list[str]:
    fixed = [L.VERTEX_COUNTS, L.OBJECT_OFFSETS, L.OBJECT_MANIFEST, L.GROUP_OFFSETS, L.GROUP_MEMBERS]
    out = [p for p in fixed if reader.has(p)]
    for prefix in (L.OBJECT_ATTRIBUTES, L.GROUPINGS_ATTRIBUTES, L.STATISTICS, L.VALUE_SETS):
        out += [f"{prefix}/{n}" for n in reader.names(prefix)]
    return out


def _link_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst``: payload files as hard links, metadata documents as copies."""
    base = len(str(src))
    top = str(dst)
    for root, _dirs, files in os.walk(src):
        here = top + root[base:]
        os.makedirs(here, exist_ok=True)
        for name in files:
            if name in _METADATA:
                shutil.copyfile(os.path.join(root, name), os.path.join(here, name))
            else:
                os.link(os.path.join(root, name), os.path.join(here, name))


def _key(node: zarr.Array[Any], index: tuple[int, ...]) -> str:
    return str(node.metadata.encode_chunk_key(index))


def _regrid(level0: Path, reader: LevelReader, plan: AppendPlan) -> None:
    """Rename the copy's chunk files to their indices in the grown grid; reshape its arrays."""
    old, new = reader.layout.grid, plan.layout.grid
    if old == new:
        return
    shift = np.asarray(old.origin, dtype=np.int64) - np.asarray(new.origin, dtype=np.int64)
    stored = reader.chunks()
    before = np.stack(np.unravel_index(stored, old.shape), axis=1).astype(np.int64)
    after = before + shift
    for path in _payload_paths(reader, segments=True):
        node = reader.node(path)
        folder = level0 / path
        aside = folder / f".zv-regrid-{uuid.uuid4().hex[:8]}"
        aside.mkdir()
        moved: list[tuple[Path, Path]] = []
        for i, (a, b) in enumerate(zip(before.tolist(), after.tolist(), strict=True)):
            src = folder / _key(node, tuple(a))
            if src.is_file():
                os.rename(src, aside / str(i))
                moved.append((aside / str(i), folder / _key(node, tuple(b))))
        for src, dst in moved:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, dst)
        shutil.rmtree(aside)
        _set_shape(folder, list(new.shape))


def _set_shape(folder: Path, shape: list[int]) -> None:
    doc = folder / ("zarr.json" if (folder / "zarr.json").exists() else ".zarray")
    meta = json.loads(doc.read_text())
    meta["shape"] = shape
    tmp = doc.with_name(f".{doc.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, doc)


def _clear(level0: Path, reader: LevelReader, plan: AppendPlan) -> None:
    """Unlink the copy's touched chunk files and dense arrays (they are written anew)."""
    coords = np.stack(np.unravel_index(plan.touched, plan.layout.grid.shape), axis=1).tolist()
    for path in [] if plan.segment else plan.payloads:
        if not reader.has(path):
            continue
        node = reader.node(path)
        folder = str(level0 / path)
        for index in coords:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, _key(node, tuple(index))))
    for path in _dense_paths(reader):
        shutil.rmtree(level0 / path)
    for group in (L.STATISTICS, L.VALUE_SETS):
        shutil.rmtree(level0 / group, ignore_errors=True)


def _redeclare(w: LevelWriter, staged: Path, path: str, reader: LevelReader) -> None:
    """Create a stored v2 payload array again in the copy, keeping its chunk files.

    Zarr v2 metadata does not record Blosc's typesize: an array opened from its metadata
    would compress new chunks with another typesize than a fresh write's array.
    """
    folder = staged / L.level_path(0) / path
    aside = staged / f".zv-aside-{uuid.uuid4().hex[:8]}"
    aside.mkdir()
    kept = [p for p in folder.iterdir() if p.name not in _METADATA]
    for item in kept:
        os.rename(item, aside / item.name)
    attrs = reader.payload(path).attrs
    w.declare(path, payload_kind(path), str(attrs["dtype"]), int(attrs["width"]), attrs)
    for item in kept:
        os.rename(aside / item.name, folder / item.name)
    aside.rmdir()


def _write_segment(
    group: zarr.Group, reader: LevelReader, plan: AppendPlan, opts: StoreOptions
) -> int:
    """Write the plan's payloads as a new append segment of ``group``; return its number."""
    number = max(reader.segments, default=0) + 1
    seg = group.create_group(segment_path(number, "").rstrip("/"), overwrite=True)
    seg.attrs.put({"zv_segment": number, "vertex_count": plan.payload_rows()})
    grid = plan.layout.grid.shape
    w = LevelWriter(seg, grid, opts.compressor, None, frame_bytes=opts.frame_size())
    try:
        for path, blk in plan.payloads.items():
            rows = np.ascontiguousarray(as_rows(blk.values))
            kind = payload_kind(path)
            attrs = dict(reader.payload(path).attrs) if reader.has(path) else dict(blk.extra)
            w.declare(path, kind, rows.dtype.str, rows.shape[1], attrs)
            keep = np.diff(blk.offsets) > 0
            offsets = np.append(blk.offsets[:-1][keep], blk.offsets[-1]).astype(np.int64)
            w.payload_chunks(path, kind, rows, plan.touched[keep], offsets)
    except BaseException:
        w.abort()
        raise
    w.finish()
    return number


def _write(staged: Path, reader: LevelReader, plan: AppendPlan, opts: StoreOptions) -> None:
    root = zarr.open_group(str(staged), mode="r+")
    group = root[L.level_path(0)]
    assert isinstance(group, zarr.Group)
    level = plan.level.to_dict()
    if plan.segment:
        level[SEGMENTS] = [*reader.segments, _write_segment(group, reader, plan, opts)]
    w = LevelWriter(
        group,
        plan.layout.grid.shape,
        opts.compressor,
        None,
        existing=True,
        frame_bytes=opts.frame_size(),
    )
    try:
        for path, blk in {} if plan.segment else plan.payloads.items():
            rows = np.ascontiguousarray(as_rows(blk.values))
            kind = payload_kind(path)
            if not reader.has(path):
                w.declare(path, kind, rows.dtype.str, rows.shape[1], blk.extra)
            elif group.metadata.zarr_format == 2:
                _redeclare(w, staged, path, reader)
            keep = np.diff(blk.offsets) > 0
            offsets = np.append(blk.offsets[:-1][keep], blk.offsets[-1]).astype(np.int64)
            w.payload_chunks(path, kind, rows, plan.touched[keep], offsets)
        write_dense_arrays(
            w,
            plan.vertex_counts,
            plan.manifest,
            plan.object_offsets,
            plan.object_attributes,
            plan.groups,
        )
        for arr in plan.statistics:
            w.dense(arr.path, arr.kind, arr.data, arr.extra)
    except BaseException:
        w.abort()
        raise
    w.finish()
    group.attrs.put(level)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = replace(
        reader.meta,
        bounding_box=plan.box,
        chunk_grid=plan.layout.grid,
        creation_timestamp=stamp,
    )
    root.attrs.put(meta.to_dict())


def append_chunks(
    target: EditTarget,
    reader: LevelReader,
    opts: StoreOptions,
    new: GeometryParts,
    *,
    ids_given: bool,
    pyramid: Callable[[str], None] | None = None,
) -> WriteSummary | None:
    """Append ``new`` rewriting only the chunks it lands in; None when that does not apply.

    ``pyramid`` rebuilds the coarse levels of the staged copy (given the copy's path) once
    its level 0 is complete, before the commit.  Must run under the store's edit lock.
    Refusals (schema, dimensions, ids) raise before any file is written.
    """
    if target.kind is not TargetKind.DIRECTORY or opts.shards is not None:
        return None
    plan = plan_append(reader, new, ids_given=ids_given, segment=True)
    if plan is None:
        return None
    final = target.location
    assert final is not None
    staged = final.with_name(f".{final.name}{STAGING_TAG}{uuid.uuid4().hex[:8]}")
    try:
        _link_tree(final, staged)
        level0 = staged / L.level_path(0)
        _regrid(level0, reader, plan)
        _clear(level0, reader, plan)
        _write(staged, reader, plan, opts)
        if pyramid is not None:
            pyramid(str(staged))
        commit_directory(staged, final)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    lv = plan.level
    return WriteSummary(
        reader.meta.geometry_type,
        lv.vertex_count,
        lv.object_count,
        lv.chunk_count,
        plan.layout.grid,
    )
