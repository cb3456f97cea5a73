"""Walk an upstream store through its zarr ``Store``: listings, node attributes and arrays.

Upstream leaves intermediate groups without a ``zarr.json`` (implicit groups), which
zarr-python's group API does not list, so listings go to the store itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype

from zarr_vectors.core.zarr_adapter import quiet_vlen, sync
from zarr_vectors.errors import CorruptPayloadError

__all__ = ["Tree"]


@dataclass(frozen=True)
class Tree:
    """Read-only access to the nodes of one upstream store."""

    store: Store
    """The store holding the upstream hierarchy."""
    name: str
    """How to name the store in messages."""

    def children(self, path: str) -> list[str]:
        """Names directly under ``path`` (metadata documents excluded), sorted."""

        async def listing() -> list[str]:
            return [name async for name in self.store.list_dir(path.rstrip("/") + "/")]

        return sorted(n for n in sync(listing()) if n != "zarr.json")

    def attrs(self, path: str) -> dict[str, Any]:
        """Read the attributes of the node at ``path``; an implicit group has none."""
        key = f"{path}/zarr.json" if path else "zarr.json"
        raw = sync(self.store.get(key, prototype=default_buffer_prototype()))
        if raw is None:
            return {}
        try:
            doc = json.loads(raw.to_bytes())
        except ValueError as exc:
            raise CorruptPayloadError(f"{self.name}/{key} is not valid JSON ({exc})") from exc
        found = doc.get("attributes", {}) if isinstance(doc, dict) else {}
        return found if isinstance(found, dict) else {}

    def exists(self, path: str) -> bool:
        """Whether anything is stored under ``path``."""
        return bool(self.children(path)) or bool(self.attrs(path))

    def array(self, path: str) -> npt.NDArray[Any]:
        """Read the whole array at ``path``."""
        try:
            with quiet_vlen():
                return np.asarray(zarr.open_array(self.store, path=path, mode="r")[...])
        except (KeyError, FileNotFoundError, ValueError, RuntimeError) as exc:  # codec errors
            raise CorruptPayloadError(f"{self.name}/{path}: cannot read ({exc})") from exc

    def points(self, path: str, index: list[tuple[int, ...]]) -> npt.NDArray[Any]:
        """Read the elements at grid positions ``index`` of the array at ``path`` in one call."""
        if not index:
            return np.zeros(0, object)
        coords = tuple(np.asarray(axis, np.int64) for axis in zip(*index, strict=True))
        try:
            with quiet_vlen():
                found = zarr.open_array(self.store, path=path, mode="r").vindex[coords]
        except (KeyError, FileNotFoundError, ValueError, IndexError, RuntimeError) as exc:
            raise CorruptPayloadError(f"{self.name}/{path}: cannot read ({exc})") from exc
        return np.asarray(found)

    def blob(self, path: str) -> bytes:
        """Read a 0.2.0 per-chunk byte array at ``path`` as bytes."""
        return bytes(self.array(path).astype(np.uint8, copy=False).tobytes())
