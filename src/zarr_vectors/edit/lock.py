"""The edit lock of a store: at most one writer edits a store at a time.

A local directory or ``.zip`` store is locked by a sibling file ``.<name>.zv-lock`` created with
``O_CREAT | O_EXCL`` (atomic on local file systems), holding the owner's host and process id.
The lock lives next to the store, not inside it, so it survives the directory swap that commits
an edit and never shows up in the store's own listing.  A lock whose owner process is gone
(same host) is stale and is broken.  Stores without a local path (memory stores, open zarr
stores) are locked by an in-process lock per store object: they cannot be shared between
processes anyway.

An S3 store is locked by the sibling object ``.<name>.zv-lock``, created with a conditional
write (``If-None-Match: *``): of two writers exactly one creates it, the other waits and then
fails with :class:`StoreLockedError`.  The object is a lease:
``{"host", "pid", "since", "expires"}`` (seconds since the epoch).  A lock whose ``expires``
has passed by the waiter's clock, or whose owner process is gone (same host), is stale; a
waiter takes it over with a conditional overwrite (``If-Match`` its ETag), so of several
waiters only one succeeds.  The holder renews its lease
(again ``If-Match`` its own ETag) right before it publishes an edit, and gives up with
:class:`StoreLockedError` if the lock is no longer its own; it releases the lock with a
conditional delete, so it never removes a lock another writer took over.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zarr.core.sync import sync

from zarr_vectors.errors import StoreLockedError

__all__ = [
    "DEFAULT_TIMEOUT",
    "LEASE_S",
    "RemoteLock",
    "held_remote_lock",
    "lock_path",
    "remote_lock",
    "renew",
    "store_lock",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds a writer waits for the lock of a store before :class:`StoreLockedError`."""

_POLL = 0.05
"""Seconds between attempts while waiting (short: appends are usually quick)."""

LEASE_S = 900.0
"""Seconds an S3 edit lock is leased for; renewed before the edit is published."""

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


@dataclass
class RemoteLock:
    """A held S3 edit lock: the object's bucket and key, and the ETag of our lease."""

    fs: Any
    """The ``s3fs.S3FileSystem`` (asynchronous) holding the store."""
    bucket: str
    key: str
    etag: str

    @property
    def path(self) -> str:
        """``bucket/key`` of the lock object."""
        return f"{self.bucket}/{self.key}"


_HELD: dict[str, RemoteLock] = {}
"""The S3 locks this process holds, by lock object path (looked up by the commit step)."""


def _lease() -> bytes:
    now = time.time()
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "since": now}
    return json.dumps({**owner, "expires": now + LEASE_S}).encode()


_REFUSED = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def _refused(exc: BaseException) -> bool:
    """Whether an S3 error (raw botocore, or as s3fs translates it) is a failed condition."""
    if isinstance(exc, FileExistsError):
        return True
    for err in (exc, exc.__cause__):
        response = getattr(err, "response", None)
        if isinstance(response, dict) and str(response.get("Error", {}).get("Code")) in _REFUSED:
            return True
    return False


async def _put(fs: Any, bucket: str, key: str, body: bytes, **cond: str) -> str | None:
    """PUT ``body`` under a condition; return the new ETag, or None if the condition failed."""
    try:
        out = await fs._call_s3("put_object", Bucket=bucket, Key=key, Body=body, **cond)
    except Exception as exc:
        if _refused(exc):
            return None
        raise
    return str(out["ETag"])


async def _head(fs: Any, bucket: str, key: str) -> tuple[bytes, str] | None:
    """Return the body and ETag of the lock object, or None if there is none."""
    try:
        out = await fs._call_s3("get_object", Bucket=bucket, Key=key)
    except FileNotFoundError:
        return None
    async with out["Body"] as body:
        data = await body.read()
    return bytes(data), str(out["ETag"])


def _expired(raw: bytes) -> bool:
    """Whether a lease has run out (unreadable leases count as live: never guess)."""
    try:
        return float(json.loads(raw)["expires"]) < time.time()
    except (ValueError, KeyError, TypeError):
        return False


async def _acquire_remote(fs: Any, bucket: str, key: str) -> str | None:
    etag = await _put(fs, bucket, key, _lease(), IfNoneMatch="*")
    if etag is not None:
        return etag
    found = await _head(fs, bucket, key)
    if found is not None and (_expired(found[0]) or not _owner_alive(found[0])):
        return await _put(fs, bucket, key, _lease(), IfMatch=found[1])
    return None


def renew(lock: RemoteLock) -> None:
    """Extend the lease of a held S3 lock.

    Raises
    ------
    StoreLockedError
        The lock is no longer ours (its lease ran out and another writer took it over).
    """
    etag = sync(_put(lock.fs, lock.bucket, lock.key, _lease(), IfMatch=lock.etag))
    if etag is None:
        raise StoreLockedError(
            f"the edit lock {lock.path} was taken over by another writer after its lease of "
            f"{LEASE_S:g} s ran out; this edit was not published"
        )
    lock.etag = etag


def held_remote_lock(path: str) -> RemoteLock | None:
    """Return the S3 lock ``bucket/key`` if this process holds it."""
    return _HELD.get(path)


async def _release(lock: RemoteLock) -> None:
    try:
        await lock.fs._call_s3("delete_object", Bucket=lock.bucket, Key=lock.key, IfMatch=lock.etag)
    except FileNotFoundError:
        return
    except Exception as exc:
        if not _refused(exc):
            raise  # a lock taken over by another writer is theirs: left alone


@contextmanager
def remote_lock(fs: Any, path: str, timeout: float = DEFAULT_TIMEOUT) -> Iterator[RemoteLock]:
    """Hold the S3 edit lock object ``path`` (``bucket/key``) for the duration of the block.

    Raises
    ------
    StoreLockedError
        Another writer's lease stayed live for ``timeout`` seconds.
    """
    bucket, _, key = path.partition("/")
    deadline = time.monotonic() + timeout
    while (etag := sync(_acquire_remote(fs, bucket, key))) is None:
        if time.monotonic() >= deadline:
            raise StoreLockedError(
                f"s3://{path}: the store is being edited by another writer; waited "
                f"{timeout:g} s. Retry later; a lock whose owner died expires after its lease "
                f"({LEASE_S:g} s from when it was taken)"
            )
        time.sleep(_POLL * 4)  # each attempt is a request
    lock = RemoteLock(fs, bucket, key, etag)
    _HELD[path] = lock
    try:
        yield lock
    finally:
        _HELD.pop(path, None)
        sync(_release(lock))
