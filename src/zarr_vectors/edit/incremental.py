"""Appending points by rewriting only the chunks they land in (copy-on-write, one commit).

For a point cloud without objects, without coarse levels, unsharded, Zarr v3, whose chunk grid
the new points do not grow, an append touches only the chunks the new points fall into:

1. the stored rows of those chunks are read and merged with the new rows, and the ordinary
   write pipeline writes exactly those chunks into a scratch store on the same chunk grid
   (so each chunk's rows are ordered and encoded as a fresh write orders and encodes them,
   with the stored arrays' own codecs);
2. the store is copied as a tree of hard links next to itself (no payload bytes copied), the
   rewritten chunk files are renamed over their links in the copy (the old store's files are
   untouched), and ``vertex_counts`` and the level and root metadata are rewritten in the copy
   (after detaching those files from the old store's);
3. the copy is swapped with the store at one commit point
   (:func:`zarr_vectors.edit.commit.commit_directory`).

Every other append takes the full rebuild of :mod:`zarr_vectors.edit.rewrite`.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import zarr
from zarr.storage import LocalStore

from zarr_vectors.core.chunking import axis_bounds, grid_for_bounds
from zarr_vectors.core.columns import Column
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.writer import StoreOptions, WriteSummary, write_store
from zarr_vectors.edit.commit import STAGING_TAG, EditTarget, TargetKind, commit_directory
from zarr_vectors.edit.merge import merge_parts
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.metadata import BoundingBox, LevelMetadata, RootMetadata

__all__ = ["append_chunks"]


def _applies(
    target: EditTarget, reader: LevelReader, opts: StoreOptions, new: GeometryParts
) -> bool:
    return (
        target.kind is TargetKind.DIRECTORY
        and reader.meta.geometry_type == GeometryTypeName.POINT_CLOUD
        and not new.has_objects
        and not reader.has(L.OBJECT_OFFSETS)
        and opts.shards is None
        and opts.zarr_format == 3
        and len(new.positions) > 0
        and new.positions.shape[1] == reader.meta.spatial_dims
    )


def _old_rows(reader: LevelReader, flats: np.ndarray) -> GeometryParts:
    """Return the stored rows of the chunks ``flats`` (flat order, rows of a chunk in order)."""
    pos = reader.rows(L.VERTICES, flats).values
    attrs: dict[str, Column] = {
        n: reader.column(f"{L.ATTRIBUTES}/{n}", flats) for n in reader.names(L.ATTRIBUTES)
    }
    return GeometryParts(
        positions=np.ascontiguousarray(pos), ordered=False, vertex_attributes=attrs
    )


def _union(box: BoundingBox | None, pos: np.ndarray) -> BoundingBox:
    lo, hi = axis_bounds(pos)
    if box is not None:
        lo, hi = np.minimum(lo, box.min), np.maximum(hi, box.max)
    return BoundingBox(min=tuple(float(v) for v in lo), max=tuple(float(v) for v in hi))


def _grid_box(reader: LevelReader) -> BoundingBox:
    """Bounds whose grid is the store's: lower corners of its first and last chunks."""
    grid = reader.layout.grid
    c = np.asarray(reader.meta.chunk_shape, dtype=np.float64)
    first = np.asarray(grid.origin, dtype=np.float64)
    last = first + np.asarray(grid.shape, dtype=np.float64) - 1
    return BoundingBox(min=tuple((first * c).tolist()), max=tuple((last * c).tolist()))


def _hardlink_tree(src: Path, dst: Path) -> None:
    for root, _dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(Path(root) / name, dst / rel / name)


def _detach(path: Path) -> None:
    """Give ``path`` its own inode, so writing it leaves the old store's file alone."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    shutil.copyfile(path, tmp)
    os.replace(tmp, path)


def _codecs(path: Path) -> object:
    meta = json.loads(path.read_text())
    return (meta.get("codecs"), meta.get("data_type"))


def _move_chunks(scratch: Path, staged: Path) -> bool:
    """Rename every chunk file of the scratch level's payload arrays into the staged level."""
    for meta in sorted(scratch.rglob("zarr.json")):
        array_dir = meta.parent
        rel = array_dir.relative_to(scratch)
        if str(rel) == L.VERTEX_COUNTS or json.loads(meta.read_text()).get("node_type") != "array":
            continue
        target = staged / rel
        if not (target / "zarr.json").exists() or _codecs(meta) != _codecs(target / "zarr.json"):
            return False
    for chunk in sorted(p for p in scratch.rglob("*") if p.is_file() and "c" in p.parts):
        rel = chunk.relative_to(scratch)
        if rel.parts[0] == L.VERTEX_COUNTS:
            continue
        (staged / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(chunk, staged / rel)
    return True


def append_chunks(
    target: EditTarget, reader: LevelReader, opts: StoreOptions, new: GeometryParts
) -> WriteSummary | None:
    """Append ``new`` rewriting only the chunks it lands in; None when that does not apply.

    Must run under the store's edit lock.  Refusals (schema, dimensions) raise before any
    file is written.
    """
    if not _applies(target, reader, opts, new):
        return None
    meta: RootMetadata = reader.meta
    box = _union(meta.bounding_box, new.positions)
    grid = reader.layout.grid
    if grid_for_bounds(box.min, box.max, meta.chunk_shape) != grid:
        return None  # the grid grows: every per-chunk array is reshaped
    flats = np.unique(reader.layout.flat_index(reader.layout.chunk_coords(new.positions)))
    merged = merge_parts(_old_rows(reader, flats), new, ids_given=False, sort_ids=False)
    final = target.location
    assert final is not None
    tag = uuid.uuid4().hex[:8]
    scratch = final.with_name(f".{final.name}{STAGING_TAG}{tag}-chunks")
    staged = final.with_name(f".{final.name}{STAGING_TAG}{tag}")
    try:
        part = write_store(
            str(scratch), meta.geometry_type, merged, replace(opts, bounds=_grid_box(reader))
        )
        if part.chunk_grid != grid:
            return None
        _hardlink_tree(final, staged)
        if not _move_chunks(scratch / L.level_path(0), staged / L.level_path(0)):
            return None
        counts = reader.vertex_counts.copy()
        counts[flats] = LevelReader(zarr.open_group(str(scratch), mode="r"), 0).vertex_counts[flats]
        return _finish(staged, final, reader, counts, box)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(staged, ignore_errors=True)


def _finish(
    staged: Path, final: Path, reader: LevelReader, counts: np.ndarray, box: BoundingBox
) -> WriteSummary:
    level0 = staged / L.level_path(0)
    for path in [
        staged / "zarr.json",
        level0 / "zarr.json",
        *(level0 / L.VERTEX_COUNTS).rglob("*"),
    ]:
        if path.is_file():
            _detach(path)
    root = zarr.open_group(LocalStore(staged), mode="r+")
    grid = reader.layout.grid
    arr = root[f"{L.level_path(0)}/{L.VERTEX_COUNTS}"]
    assert isinstance(arr, zarr.Array)
    arr[...] = counts.reshape(grid.shape).astype(arr.dtype)
    level = replace(
        reader.level_meta,
        vertex_count=int(counts.sum()),
        chunk_count=int(np.count_nonzero(counts)),
    )
    group = root[L.level_path(0)]
    assert isinstance(group, zarr.Group)
    group.attrs.put(LevelMetadata.to_dict(level))
    meta = replace(reader.meta, bounding_box=box)
    root.attrs.put(meta.to_dict())
    commit_directory(staged, final)
    return WriteSummary(meta.geometry_type, level.vertex_count, 0, level.chunk_count, grid)
