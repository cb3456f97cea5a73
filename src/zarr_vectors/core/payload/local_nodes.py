"""Opening Zarr v3 hierarchies in local directories without zarr-python's per-node cost."""

from __future__ import annotations

import json
import os
from typing import Any

import zarr
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.storage import LocalStore

from zarr_vectors.core.payload.caches import ARRAYS, METADATA
from zarr_vectors.core.payload.store_io import local_dir
from zarr_vectors.core.zarr_adapter import ArrayV3Metadata, GroupMetadata, array_at, group_at, sync

__all__ = [
    "local_group",
    "local_members",
    "malformed_documents",
]


def _parsed(path: str, raw: bytes) -> Any:
    """Metadata object of a ``zarr.json`` document, reused while its bytes are unchanged."""
    hit = METADATA.get(path)
    if hit is not None and hit[0] == raw:
        return hit[1]
    doc = json.loads(raw)
    if not isinstance(doc, dict):  # a malformed document, like invalid JSON
        raise ValueError(f"{path}: metadata document is not a JSON object")  # noqa: TRY004
    kind = doc.get("node_type")
    if kind == "array":
        meta: Any = ArrayV3Metadata.from_dict(doc)
    elif kind == "group":
        meta = GroupMetadata.from_dict(doc)
    else:
        raise ValueError(f"{path}: unknown node_type {kind!r}")
    METADATA.put(path, (raw, meta))
    return meta


def _local_array(store: Store, meta_path: str, path: str, meta: Any) -> zarr.Array[Any]:
    """Return a ``zarr.Array`` over ``meta``, reusing the one built for the same object."""
    key = (meta_path, store.read_only)
    hit = ARRAYS.get(key)
    if hit is not None and hit[0] is meta:
        return hit[1]  # type: ignore[no-any-return]
    array = array_at(store, path, meta)
    ARRAYS.put(key, (meta, array))
    return array


def local_members(group: zarr.Group) -> dict[str, zarr.Array[Any] | zarr.Group] | None:
    """Every node below a Zarr v3 group in a local directory, as ``group.members()`` gives.

    zarr-python opens a hierarchy node by node through its event loop; this reads the ``zarr.json``
    documents directly (arrays are not descended into) and reuses parsed metadata while a
    document's bytes are unchanged.  Returns None for other stores and for Zarr v2.

    Raises
    ------
    ValueError
        A metadata document is malformed.
    """
    store = group.store_path.store
    root = local_dir(store)
    if root is None or group.metadata.zarr_format != 3:
        return None
    out: dict[str, zarr.Array[Any] | zarr.Group] = {}
    base = group.store_path.path
    pending = [""]
    while pending:
        rel = pending.pop()
        directory = os.path.join(str(root), base, rel)
        try:
            names = sorted(os.listdir(directory))
        except FileNotFoundError:
            continue
        for name in names:
            child = f"{rel}/{name}" if rel else name
            meta_path = os.path.join(directory, name, "zarr.json")
            try:
                with open(meta_path, "rb") as f:
                    raw = f.read()
            except (FileNotFoundError, NotADirectoryError):
                continue
            meta = _parsed(meta_path, raw)
            path = f"{base}/{child}" if base else child
            if isinstance(meta, ArrayV3Metadata):
                out[child] = _local_array(store, meta_path, path, meta)
            else:
                out[child] = group_at(store, path, meta)
                pending.append(child)
    return out


def local_group(store: Any, path: str, *, read_only: bool) -> zarr.Group | None:
    """Open the Zarr v3 group at ``path`` of a local directory store, quickly.

    Skips zarr-python's per-node overhead; returns None when that does not apply (other
    stores, Zarr v2, no group there).

    Raises
    ------
    ValueError
        The group's metadata document is malformed.
    """
    if not isinstance(store, LocalStore):
        return None
    meta_path = os.path.join(str(store.root), path, "zarr.json")
    try:
        with open(meta_path, "rb") as f:
            raw = f.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    meta = _parsed(meta_path, raw)
    if not isinstance(meta, GroupMetadata):
        return None
    if read_only and not store.read_only:
        store = store.with_read_only(True)
    return group_at(store, path, meta)


_METADATA_KEYS = ("zarr.json", ".zarray", ".zattrs", ".zgroup")


def malformed_documents(group: zarr.Group) -> list[str]:
    """Keys of the Zarr metadata documents below ``group`` that are not JSON objects.

    For error messages only: this lists and reads every metadata document of the hierarchy.
    """
    store = group.store_path.store
    prefix = group.store_path.path
    proto = default_buffer_prototype()

    async def scan() -> list[str]:
        bad = []
        async for key in store.list_prefix(f"{prefix}/" if prefix else ""):
            if key.rsplit("/", 1)[-1] not in _METADATA_KEYS:
                continue
            buf = await store.get(key, proto)
            if buf is None:
                continue
            try:
                doc = json.loads(buf.to_bytes())
            except ValueError:  # json.JSONDecodeError, UnicodeDecodeError
                doc = None
            if not isinstance(doc, dict):
                bad.append(key)
        return sorted(bad)

    return sync(scan())
