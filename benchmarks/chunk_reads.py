"""Which chunk files a read opens: spy on our payload I/O, map keys back to chunk coordinates.

Our reads fetch per-chunk payloads through two functions of :mod:`zarr_vectors.core.payload`:
``store_io.get_many(store, keys)`` (batched fetch) and ``PayloadArray.decode_rows_local`` (local files
read in place).  :func:`payload_reads` patches both for the duration of one call (the pattern of
``tests/types/conftest.py``'s ``payload_reads``) and returns every key fetched.  Keys of the
level's dense index arrays (``vertex_counts``, ``object_index/...``) are not chunk payloads;
:func:`split_keys` separates them and turns payload keys (``0/vertices/c/2/0/1``) into chunk
coordinates (grid index + the store's ``chunk_grid.origin``).

:func:`object_chunks` gives the chunks an object *occupies*: ``floor(p / chunk_shape)`` of its
vertices (FORMAT.md §2, float64).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar
from unittest import mock

import numpy as np
import numpy.typing as npt

T = TypeVar("T")
Chunk = tuple[int, ...]

__all__ = ["ChunkReads", "chunk_origin", "object_chunks", "payload_reads", "split_keys"]

_V3_KEY = re.compile(r"^(?P<array>.+)/c/(?P<idx>\d+(?:/\d+)*)$")
_V2_KEY = re.compile(r"^(?P<array>.+)/(?P<idx>\d+(?:\.\d+)*)$")
INDEX_ARRAYS = ("vertex_counts", "object_index")
"""Array names whose keys are dense index reads, not spatial chunk payloads."""


@dataclass(frozen=True)
class ChunkReads:
    """Keys fetched by one read, split into spatial payloads and index arrays."""

    payload_keys: tuple[str, ...]
    """Every per-chunk payload key fetched (repeats kept)."""
    index_keys: tuple[str, ...]
    """Keys of dense index arrays (``vertex_counts``, ``object_index/...``)."""
    chunks: frozenset[Chunk]
    """Distinct chunk coordinates (absolute, origin added) of the payload keys."""
    unparsed: tuple[str, ...] = ()
    """Keys that matched neither key layout (e.g. shard keys); not counted in ``chunks``."""

    @property
    def n_files(self) -> int:
        """Number of payload files fetched (repeats counted)."""
        return len(self.payload_keys)


def payload_reads(read: Callable[[], T]) -> tuple[T, list[str]] | tuple[T, None]:
    """Run ``read`` and return its result and every key fetched through our payload I/O.

    Returns ``(result, None)`` (after an unpatched call) if the library no longer has the two
    spied functions.
    """
    from zarr_vectors.core.payload import rows as zv_rows
    from zarr_vectors.core.payload import store_io as zv_store_io

    payload_cls = getattr(zv_rows, "PayloadArray", None)
    if not hasattr(zv_store_io, "get_many") or not hasattr(payload_cls, "decode_rows_local"):
        return read(), None
    seen: list[str] = []
    original = zv_store_io.get_many
    original_local = payload_cls.decode_rows_local  # type: ignore[union-attr]

    def spy(store: Any, keys: Sequence[str], *rest: Any) -> Any:
        seen.extend(keys)
        return original(store, keys, *rest)

    def spy_local(self: Any, flat: int, *args: Any, **kwargs: Any) -> Any:
        seen.append(self._key(flat))
        return original_local(self, flat, *args, **kwargs)

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(zv_store_io, "get_many", spy))
        stack.enter_context(mock.patch.object(payload_cls, "decode_rows_local", spy_local))
        result = read()
    return result, seen


def chunk_origin(store: str) -> npt.NDArray[np.int64]:
    """The ``chunk_grid.origin`` of a store (chunk coordinates of grid index 0)."""
    import zarr

    root = zarr.open_group(store, mode="r")
    grid = root.attrs.get("chunk_grid", {})
    origin = grid.get("origin", None) if isinstance(grid, dict) else None
    if origin is None:
        raise KeyError(f"{store}: no chunk_grid.origin in the root attributes")
    return np.asarray(origin, dtype=np.int64)


def split_keys(keys: Sequence[str], origin: npt.ArrayLike) -> ChunkReads:
    """Split fetched keys into payloads / index reads and map payloads to chunk coordinates."""
    org = np.asarray(origin, dtype=np.int64)
    payload: list[str] = []
    index: list[str] = []
    unparsed: list[str] = []
    chunks: set[Chunk] = set()
    for key in keys:
        parts = key.split("/")
        if any(name in parts for name in INDEX_ARRAYS):
            index.append(key)
            continue
        m = _V3_KEY.match(key)
        sep = "/"
        if m is None:
            m = _V2_KEY.match(key)
            sep = "."
        if m is None:
            unparsed.append(key)
            continue
        idx = np.array([int(x) for x in m.group("idx").split(sep)], dtype=np.int64)
        if idx.shape != org.shape:
            unparsed.append(key)
            continue
        payload.append(key)
        chunks.add(tuple(int(x) for x in idx + org))
    return ChunkReads(tuple(payload), tuple(index), frozenset(chunks), tuple(unparsed))


def object_chunks(positions: npt.ArrayLike, chunk_shape: Sequence[float]) -> frozenset[Chunk]:
    """Chunks holding at least one of ``positions``: distinct ``floor(p / chunk_shape)``."""
    p = np.asarray(positions, dtype=np.float64)
    if p.size == 0:
        return frozenset()
    cells = np.floor(p / np.asarray(chunk_shape, dtype=np.float64)).astype(np.int64)
    return frozenset(tuple(int(x) for x in row) for row in np.unique(cells, axis=0))
