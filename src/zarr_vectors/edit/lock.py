"""The edit lock of a store: at most one writer edits a store at a time.

A local directory or ``.zip`` store is locked by a sibling file ``.<name>.zv-lock`` created with
``O_CREAT | O_EXCL`` (atomic on local file systems), holding the owner's host and process id.
The lock lives next to the store, not inside it, so it survives the directory swap that commits
an edit and never shows up in the store's own listing.  A lock whose owner process is gone
(same host) is stale and is broken.  Stores without a local path (memory stores, open zarr
stores) are locked by an in-process lock per store object: they cannot be shared between
processes anyway.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zarr_vectors.errors import StoreLockedError

__all__ = ["DEFAULT_TIMEOUT", "lock_path", "store_lock"]

DEFAULT_TIMEOUT = 30.0
"""Seconds a writer waits for the lock of a store before :class:`StoreLockedError`."""

_POLL = 0.05
"""Seconds between attempts while waiting (short: appends are usually quick)."""

_MEMORY_LOCKS: dict[int, threading.Lock] = {}
_MEMORY_GUARD = threading.Lock()


def lock_path(location: Path) -> Path:
    """Return the lock file of the store at ``location`` (a directory or ``.zip`` file)."""
    return location.parent / f".{location.name}.zv-lock"


def _owner_alive(raw: bytes) -> bool:
    """Whether the lock's owner may still run (unknown owners and other hosts count as alive)."""
    try:
        owner = json.loads(raw)
        host, pid = owner["host"], int(owner["pid"])
    except (ValueError, KeyError, TypeError):
        return True  # being written right now, or not ours to judge
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _try_acquire(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        json.dump({"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}, f)
    return True


def _break_if_stale(path: Path) -> None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return
    if raw and not _owner_alive(raw):
        # rename first: of two processes breaking the same stale lock only one succeeds
        grave = path.with_name(f"{path.name}.stale-{os.getpid()}")
        try:
            os.rename(path, grave)
        except FileNotFoundError:
            return
        grave.unlink(missing_ok=True)


@contextmanager
def _file_lock(location: Path, timeout: float) -> Iterator[None]:
    path = lock_path(location)
    deadline = time.monotonic() + timeout
    while not _try_acquire(path):
        _break_if_stale(path)
        if time.monotonic() >= deadline:
            raise StoreLockedError(
                f"{location} is being edited by another writer (lock file {path}); "
                f"waited {timeout:g} s. Retry later, or remove the lock file if its owner "
                "is known to be gone"
            )
        time.sleep(_POLL)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


@contextmanager
def _memory_lock(store: Any, timeout: float) -> Iterator[None]:
    with _MEMORY_GUARD:
        lock = _MEMORY_LOCKS.setdefault(id(store), threading.Lock())
    if not lock.acquire(timeout=max(timeout, 0.0)):
        raise StoreLockedError(f"the store {store!r} is being edited by another thread")
    try:
        yield
    finally:
        lock.release()


@contextmanager
def store_lock(
    location: Path | None, store: Any, timeout: float = DEFAULT_TIMEOUT
) -> Iterator[None]:
    """Hold the edit lock of a store for the duration of the block.

    Parameters
    ----------
    location
        Directory or ``.zip`` file of a local store, or None for an in-memory store object.
    store
        The store object (keys the in-process lock when ``location`` is None).
    timeout
        Seconds to wait for another writer to finish.

    Raises
    ------
    StoreLockedError
        The lock stayed taken for ``timeout`` seconds.
    """
    if location is None:
        with _memory_lock(store, timeout):
            yield
        return
    with _file_lock(location, timeout):
        yield
