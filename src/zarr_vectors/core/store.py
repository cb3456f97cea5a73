"""Open, create and inspect ZVF stores; manage resolution-level groups (seed, FORMAT.md §1, §5).

A store is any zarr ``StoreLike``: a local path, a ``.zip`` path, a URL such as ``s3://bucket/x``
(with ``storage_options``), or a :class:`zarr.abc.store.Store` instance (``MemoryStore``,
``ZipStore``, an icechunk session store, ...).  :func:`open_store` returns the root
:class:`zarr.Group`, whose ``attrs`` support ``asdict()`` and item assignment as the seed shows.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import zarr
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.errors import ContainsArrayError, GroupNotFoundError, NodeNotFoundError
from zarr.storage import FsspecStore, LocalStore, MemoryStore, StorePath, ZipStore

from zarr_vectors.core.chunking import MAX_GRID_CHUNKS, grid_for_bounds
from zarr_vectors.core.payload.create import create_dense_array, create_payload_array
from zarr_vectors.core.payload.local_nodes import local_group
from zarr_vectors.core.placement import (
    Occupant,
    classify_dir,
    commit_new,
    leftovers,
    overlapping,
    remove_abandoned,
    swap_in,
)
from zarr_vectors.core.zarr_adapter import GroupMetadata, quiet_vlen, sync
from zarr_vectors.errors import (
    InvalidInputError,
    LevelNotFoundError,
    MetadataValidationError,
    ReadOnlyStoreError,
    StoreExistsError,
    StoreNotFoundError,
)
from zarr_vectors.spec.conventions import ArrayKind
from zarr_vectors.spec.layout import (
    DENSE_CHUNK_ROWS,
    OBJECT_MANIFEST,
    OBJECT_OFFSETS,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
    array_attributes,
    level_path,
)
from zarr_vectors.spec.metadata import ChunkGrid, LevelMetadata, RootMetadata
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.spec.upstream import raise_if_upstream

__all__ = [
    "OpenMode",
    "StoreLike",
    "StoreHandle",
    "check_replaceable_dir",
    "create_store",
    "derive_chunk_grid",
    "local_dir_of",
    "has_data",
    "init_root",
    "list_resolution_levels",
    "open_level",
    "open_store",
    "place_staged",
    "refuse_overlap",
    "read_level_metadata",
    "read_root_metadata",
    "resolve_store",
]

StoreLike: TypeAlias = str | os.PathLike[str] | Store | StorePath | zarr.Group
"""Anything a ZVF store can live in: a path, a URL, a zarr Store, or an open root group."""

OpenMode = Literal["r", "r+", "a", "w", "w-"]


@dataclass(frozen=True)
class StoreHandle:
    """A resolved store plus whether this library opened it (and so must close it)."""

    store: Store | StorePath
    """What zarr opens."""
    owned: bool
    """True when the store was built here from a path and should be closed after use."""
    local_path: Path | None
    """The directory of a local store, when there is one."""
    zip_path: Path | None = None
    """The file of a ``.zip`` path store (written whole by writers)."""

    def close(self) -> None:
        """Close the store if it was opened here (flushes ``.zip`` files)."""
        if self.owned and isinstance(self.store, ZipStore):
            self.store.close()


def resolve_store(
    store: StoreLike,
    *,
    mode: OpenMode = "r",
    storage_options: Mapping[str, Any] | None = None,
) -> StoreHandle:
    """Turn a ``StoreLike`` into something zarr can open.

    ``.zip`` paths become a :class:`~zarr.storage.ZipStore`; other strings are left to zarr
    (local directories and fsspec URLs, with ``storage_options``).
    """
    if isinstance(store, zarr.Group):
        store = store.store_path
    if isinstance(store, Store | StorePath):
        inner = store.store if isinstance(store, StorePath) else store
        if mode != "r" and inner.read_only:
            raise ReadOnlyStoreError(
                f"{_describe(store)} was opened read-only; writes need a writable store"
            )
        sub = store.path if isinstance(store, StorePath) else ""
        local = _local_dir(inner)
        return StoreHandle(store, owned=False, local_path=local / sub if local and sub else local)
    text = os.fspath(store)
    if "://" in text and not text.startswith("file://"):
        remote = FsspecStore.from_url(
            text, storage_options=dict(storage_options or {}), read_only=(mode == "r")
        )
        return StoreHandle(remote, owned=True, local_path=None)
    if storage_options:
        raise InvalidInputError("storage_options only apply to URLs such as s3://bucket/path")
    path = Path(text.removeprefix("file://")).expanduser()
    if path.suffix == ".zip":
        zmode: Literal["r", "w", "a"] = "r" if mode == "r" else ("w" if mode == "w" else "a")
        if zmode == "r" and not path.exists():
            raise StoreNotFoundError(f"no store at {path}")
        return StoreHandle(ZipStore(path, mode=zmode), owned=True, local_path=None, zip_path=path)
    return StoreHandle(LocalStore(path, read_only=(mode == "r")), owned=True, local_path=path)


def _local_dir(store: Store) -> Path | None:
    return Path(store.root) if isinstance(store, LocalStore) else None


def _describe(store: StoreLike) -> str:
    if isinstance(store, MemoryStore):
        return "memory store"
    if isinstance(store, zarr.Group):
        return f"group {store.store_path}"
    return str(store)


def open_store(
    path: StoreLike,
    mode: OpenMode = "r",
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> zarr.Group:
    """Open the root group of an existing ZVF store.

    Parameters
    ----------
    path
        Local path, ``.zip`` path, URL or zarr store.
    mode
        ``"r"`` read-only, ``"r+"`` read/write (attributes may be assigned).
    storage_options
        Options for fsspec URLs (credentials, endpoint, ...).

    Returns
    -------
    zarr.Group
        The root group; ``root.attrs.asdict()`` gives the root metadata.

    Raises
    ------
    StoreNotFoundError
        Nothing is there, or it is a Zarr hierarchy without ZVF root metadata (for example a
        write that did not finish).

    Examples
    --------
    >>> import zarr_vectors as zv, numpy as np
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.zeros((1, 3)), chunk_shape=(10, 10, 10))
    >>> open_store(store).attrs["geometry_type"]
    'point_cloud'
    """
    if mode not in ("r", "r+", "a"):
        raise InvalidInputError(f"open_store mode must be 'r', 'r+' or 'a', got {mode!r}")
    handle = resolve_store(path, mode=mode, storage_options=storage_options)
    if handle.zip_path is not None and mode != "r":
        raise InvalidInputError(
            f"{handle.zip_path} is a zip store: zip entries cannot be rewritten, so it opens "
            "read-only; edit a directory store and zip it again"
        )
    try:
        with quiet_vlen():
            zmode = _zarr_mode(handle, mode)
            root = local_group(handle.store, "", read_only=zmode == "r")
            if root is None:  # not a local v3 directory: let zarr-python open it
                root = zarr.open_group(handle.store, mode=zmode)
    except (GroupNotFoundError, NodeNotFoundError, FileNotFoundError):
        raise StoreNotFoundError(f"no Zarr group at {_describe(path)}") from None
    except ContainsArrayError:
        raise StoreNotFoundError(f"{_describe(path)} is a Zarr array, not a ZVF store") from None
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # bad JSON, deep nesting
        raise MetadataValidationError(
            f"{_describe(path)}: the root Zarr metadata document is malformed ({exc}); "
            "run `zarr-vectors validate` for details"
        ) from exc
    if "zarr_vectors_version" not in root.attrs:
        raise_if_upstream(root.attrs.asdict(), _describe(path))
        raise StoreNotFoundError(
            f"{_describe(path)} is a Zarr group without ZVF root metadata "
            "(not a zarr-vectors store, or a write that did not finish)"
        )
    return root


def _zarr_mode(handle: StoreHandle, mode: OpenMode) -> Literal["r", "r+"]:
    """Read-only opening needs a read-only store or one that can make a read-only copy."""
    if mode != "r":
        return "r+"
    store = handle.store.store if isinstance(handle.store, StorePath) else handle.store
    can_copy = type(store).with_read_only is not Store.with_read_only
    return "r" if store.read_only or can_copy else "r+"


_ROOTS: dict[int, tuple[Any, RootMetadata]] = {}
"""Parsed root metadata of each group metadata object (kept alive here, so that its id stays
its own); local stores reopen to the same object while ``zarr.json`` is unchanged."""


def read_root_metadata(root: zarr.Group) -> RootMetadata:
    """Parse and validate the root attributes of an open store."""
    meta = root.metadata
    hit = _ROOTS.get(id(meta))
    if hit is not None and hit[0] is meta:
        return hit[1]
    parsed = RootMetadata.from_dict(root.attrs.asdict())
    if parsed.chunk_grid is None:  # recommended, not required: the seed does not define it
        parsed = replace(parsed, chunk_grid=derive_chunk_grid(root, parsed.spatial_dims))
    if len(_ROOTS) >= 256:
        _ROOTS.clear()
    _ROOTS[id(meta)] = (meta, parsed)
    return parsed


def local_dir_of(store: StoreLike | str | os.PathLike[str]) -> Path | None:
    """Return the local path a store or file argument names, or None (URLs, memory stores)."""
    if isinstance(store, str | os.PathLike):
        text = os.fspath(store)
        if "://" in text and not text.startswith("file://"):
            return None
        return Path(text.removeprefix("file://")).expanduser()
    return resolve_store(store, mode="r").local_path


def refuse_overlap(source: StoreLike | str | os.PathLike[str], out: StoreLike, what: str) -> None:
    """Refuse an ``out`` that is ``source``, lies inside it, or holds it (local paths).

    Raises
    ------
    InvalidInputError
        They overlap: writing (or replacing) ``out`` could destroy ``source`` mid-read.
    """
    a, b = local_dir_of(source), local_dir_of(out)
    if a is not None and b is not None and overlapping(a, b):
        raise InvalidInputError(
            f"{what}: source {a} and destination {b} overlap (one is inside the other); "
            "write to a separate location"
        )


def derive_chunk_grid(root: zarr.Group, spatial_dims: int) -> ChunkGrid:
    """Derive the chunk grid of a root without ``chunk_grid``: origin 0, level 0's array shape.

    Raises
    ------
    MetadataValidationError
        Level 0 has no ``vertex_counts`` array of ``spatial_dims`` dimensions to take it from.
    """
    try:
        node = open_level(root, 0)[VERTEX_COUNTS]
    except (KeyError, StoreNotFoundError) as exc:
        raise MetadataValidationError(
            "root metadata has no chunk_grid and level 0 has no vertex_counts array to derive "
            "it from"
        ) from exc
    shape = tuple(int(n) for n in node.shape) if isinstance(node, zarr.Array) else ()
    if len(shape) != spatial_dims or min(shape) < 1:
        raise MetadataValidationError(
            f"root metadata has no chunk_grid and level 0's vertex_counts (shape {list(shape)}) "
            f"does not give a {spatial_dims}-dimensional grid"
        )
    return ChunkGrid(origin=(0,) * spatial_dims, shape=shape)


def create_store(
    path: StoreLike,
    metadata: RootMetadata,
    *,
    zarr_format: Literal[2, 3] = 3,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> zarr.Group:
    """Create an empty ZVF store with root metadata and an empty level-0 group.

    Raises
    ------
    StoreExistsError
        The location already holds data and ``overwrite`` is False.
    """
    handle = resolve_store(path, mode="w" if overwrite else "w-", storage_options=storage_options)
    root = init_root(handle, zarr_format=zarr_format, overwrite=overwrite, where=_describe(path))
    d = metadata.spatial_dims
    if metadata.chunk_grid is None:
        grid = ChunkGrid(origin=(0,) * d, shape=(1,) * d)
        if metadata.bounding_box is not None:
            box = metadata.bounding_box
            grid = grid_for_bounds(box.min, box.max, metadata.chunk_shape)
        metadata = replace(metadata, chunk_grid=grid)
    elif math.prod(metadata.chunk_grid.shape) > MAX_GRID_CHUNKS:
        raise InvalidInputError(f"chunk_grid {list(metadata.chunk_grid.shape)} is too large")
    assert metadata.chunk_grid is not None
    ds = metadata.multiscales.datasets[0]
    lvl = LevelMetadata(level=0, bin_ratio=ds.bin_ratio, bin_shape=ds.bin_shape)
    group = root.create_group(level_path(0), attributes=lvl.to_dict())
    _empty_level(group, metadata)
    root.attrs.put(metadata.to_dict())
    return root


def _empty_level(group: zarr.Group, metadata: RootMetadata) -> None:
    """Create the required arrays of an empty level 0 (no vertices yet)."""
    assert metadata.chunk_grid is not None
    shape = metadata.chunk_grid.shape
    d = metadata.spatial_dims
    create_payload_array(
        group, VERTICES, shape, attributes=array_attributes(ArrayKind.VERTICES, "<f4", d)
    )
    create_payload_array(
        group,
        VERTEX_FRAGMENTS,
        shape,
        attributes=array_attributes(ArrayKind.VERTEX_FRAGMENTS, "<i8", 4),
    )
    create_dense_array(
        group,
        VERTEX_COUNTS,
        np.zeros(shape, dtype=np.int64),
        attributes=array_attributes(ArrayKind.VERTEX_COUNTS, "<i8", 1),
        chunks=shape,
    )
    if type_spec(metadata.geometry_type).has_objects:
        create_dense_array(
            group,
            OBJECT_OFFSETS,
            np.zeros(1, dtype=np.int64),
            attributes=array_attributes(ArrayKind.OBJECT_OFFSETS, "<i8", 1),
            chunks=(DENSE_CHUNK_ROWS,),
        )
        create_dense_array(
            group,
            OBJECT_MANIFEST,
            np.zeros((0, d + 2), dtype=np.int64),
            attributes=array_attributes(ArrayKind.OBJECT_MANIFEST, "<i8", d + 2),
            chunks=(DENSE_CHUNK_ROWS, d + 2),
        )


def init_root(
    handle: StoreHandle, *, zarr_format: Literal[2, 3], overwrite: bool, where: str
) -> zarr.Group:
    """Create an empty root group (no ZVF metadata yet), refusing to clobber existing data."""
    if zarr_format not in (2, 3):
        raise InvalidInputError(f"zarr_format must be 2 or 3, got {zarr_format!r}")
    occupied = _has_data(handle)
    if occupied and not overwrite:
        raise StoreExistsError(f"{where} already holds data; pass overwrite=True to replace it")
    if occupied:
        if not _holds_zvf(handle):
            raise StoreExistsError(
                f"{where} holds data that is not a ZVF store; overwrite=True replaces only a "
                "ZVF store or an empty location, so nothing was changed"
            )
        return zarr.open_group(handle.store, mode="w", zarr_format=zarr_format)
    _claim_root(handle, zarr_format, where)
    return zarr.open_group(handle.store, mode="r+", zarr_format=zarr_format)


def _split(handle: StoreHandle) -> tuple[Store, str]:
    if isinstance(handle.store, StorePath):
        return handle.store.store, handle.store.path
    return handle.store, ""


def _holds_zvf(handle: StoreHandle) -> bool:
    """Whether the root documents of ``handle`` carry ZVF root attributes."""
    store, prefix = _split(handle)
    for name, nested in (("zarr.json", True), (".zattrs", False)):
        key = f"{prefix}/{name}" if prefix else name
        buf = sync(store.get(key, prototype=default_buffer_prototype()))
        if buf is None:
            continue
        try:
            doc = json.loads(buf.to_bytes())
        except (ValueError, RecursionError):
            continue
        attrs = doc.get("attributes") if nested and isinstance(doc, dict) else doc
        if isinstance(attrs, dict) and "zarr_vectors_version" in attrs:
            return True
    return False


def _claim_root(handle: StoreHandle, zarr_format: Literal[2, 3], where: str) -> None:
    """Write the empty root group document only if no writer has yet (an exclusive create).

    Local files are opened with ``O_EXCL``; S3 (and any fsspec filesystem whose ``pipe_file``
    takes ``mode="create"``) uses a conditional write (``If-None-Match: *``); other stores are
    checked and written within this one call.
    """
    store, prefix = _split(handle)
    docs = GroupMetadata(zarr_format=zarr_format).to_buffer_dict(default_buffer_prototype())
    first, *rest = docs  # zarr.json (v3) or .zgroup (v2): the claim
    key = f"{prefix}/{first}" if prefix else first
    if not sync(_put_exclusive(store, key, docs[first].to_bytes())):
        raise StoreExistsError(
            f"{where} already holds data (another writer created it first); "
            "pass overwrite=True to replace it"
        )
    for name in rest:
        sync(store.set(f"{prefix}/{name}" if prefix else name, docs[name]))


async def _put_exclusive(store: Store, key: str, data: bytes) -> bool:
    """Create ``key`` holding ``data`` unless it exists; return whether this call created it."""
    if isinstance(store, LocalStore):
        path = Path(store.root) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with path.open("xb") as f:
                f.write(data)
        except FileExistsError:
            return False
        return True
    if isinstance(store, FsspecStore):
        pipe = getattr(store.fs, "_pipe_file", None)
        if pipe is not None and "mode" in inspect.signature(pipe).parameters:
            try:
                await pipe(f"{store.path}/{key}", data, mode="create")
            except FileExistsError:
                return False
            return True
    if await store.exists(key):
        return False
    await store.set(key, default_buffer_prototype().buffer.from_bytes(data))
    return True


def check_replaceable_dir(path: Path, *, overwrite: bool, where: str) -> None:
    """Refuse to write at ``path`` unless it is empty, or a ZVF store and ``overwrite``.

    Leftovers of killed writers next to ``path`` are removed first.
    """
    remove_abandoned(leftovers(path))
    occupant = classify_dir(path)
    if occupant is Occupant.NOTHING:
        return
    if not overwrite:
        raise StoreExistsError(f"{where} already holds data; pass overwrite=True to replace it")
    if occupant is Occupant.OTHER:
        raise StoreExistsError(
            f"{where} is not a ZVF store (or is a file or symbolic link); overwrite=True "
            "replaces only a ZVF store or an empty directory, so nothing was changed"
        )


def place_staged(staged: Path, final: Path, *, overwrite: bool, where: str) -> None:
    """Put the complete store built in ``staged`` at ``final`` (exclusive or swapped in)."""
    occupant = classify_dir(final)
    if occupant is Occupant.ZVF and overwrite:
        swap_in(staged, final)
        return
    if occupant is Occupant.OTHER and overwrite:
        shutil.rmtree(staged, ignore_errors=True)
        raise StoreExistsError(
            f"{where} is not a ZVF store (another process put data there); nothing was changed"
        )
    commit_new(staged, final, where)


def has_data(handle: StoreHandle) -> bool:
    """Whether the location of ``handle`` already holds anything."""
    return _has_data(handle)


def _has_data(handle: StoreHandle) -> bool:
    store = handle.store.store if isinstance(handle.store, StorePath) else handle.store
    prefix = handle.store.path if isinstance(handle.store, StorePath) else ""
    if handle.local_path is not None:
        return handle.local_path.exists() and any(handle.local_path.iterdir())
    if handle.zip_path is not None:
        return handle.zip_path.exists() and handle.zip_path.stat().st_size > 0
    sync(store._ensure_open())  # a ZipStore passed in unopened cannot list yet

    async def first() -> bool:
        async for _ in store.list_prefix(prefix):
            return True
        return False

    try:
        return bool(sync(first()))
    except Exception as exc:
        # an Icechunk session lists only prefixes that are nodes: no node there, no store
        if not prefix or type(exc).__name__ != "IcechunkError":
            raise
        return bool(sync(store.exists(f"{prefix}/zarr.json")))


def list_resolution_levels(root: zarr.Group) -> list[int]:
    """Return the level numbers of the level groups present, ascending."""
    return sorted(int(name) for name, _ in root.groups() if name.isdigit())


def read_level_metadata(root: zarr.Group, level: int) -> LevelMetadata:
    """Parse the attributes of level group ``level``."""
    return LevelMetadata.from_dict(open_level(root, level).attrs.asdict())


def open_level(root: zarr.Group, level: int) -> zarr.Group:
    """Return the group of resolution level ``level``."""
    if isinstance(level, bool | np.bool_) or not isinstance(level, int | np.integer) or level < 0:
        raise InvalidInputError(f"level must be an integer >= 0, got {level!r}")
    try:
        node: zarr.Array[Any] | zarr.Group | None = local_group(
            root.store_path.store,
            f"{root.path}/{level_path(level)}" if root.path else level_path(level),
            read_only=root.read_only,
        )
        if node is None:  # (a Group's truth value would list its members)
            node = root[level_path(level)]
    except KeyError:
        levels = list_resolution_levels(root)
        raise LevelNotFoundError(f"level {level} is not in the store (levels: {levels})") from None
    except (ValueError, TypeError, RecursionError) as exc:  # bad JSON, deep nesting
        raise MetadataValidationError(
            f"{level_path(level)}: the level group's Zarr metadata document is malformed ({exc})"
        ) from exc
    if not isinstance(node, zarr.Group):
        raise MetadataValidationError(f"{level_path(level)} is an array, expected a level group")
    return node
