"""Where an edited store is rebuilt and how the new state becomes visible at one point.

Every edit builds the complete new state of the store aside (a staging directory next to a
local store, a fresh memory store for a memory store) and then makes it visible at once:

- a local directory store is swapped with its staging directory by one
  ``renameat2(RENAME_EXCHANGE)`` (Linux): a reader opening the path sees the old or the new
  store, never a mix.  Where the exchange is not available the swap is two renames (old store
  moved to ``.<name>.zv-old-*``, staging moved in); a crash between them leaves no store at the
  path, and the next editor (under the lock) moves the old store back;
- a ``.zip`` store is repacked into a temporary file and ``os.replace``-d over the old file;
- a memory store's contents are replaced in one step under the process's lock;
- an S3 store is staged under a sibling prefix and published with its root document written
  last, under a lease lock object (:mod:`zarr_vectors.edit.s3`);
- an Icechunk session store gets the new keys inside the session, whose commit is the user's
  (:mod:`zarr_vectors.edit.transaction`).

Leftovers of a killed edit (staging directories, the old tree after an exchange, temporary
zips) are removed by the next editor while it holds the lock; the store at the path is always
a complete committed state.  A reader that opened the store before the commit and keeps
reading chunks afterwards reads them by path, so it may see the new chunks: long-lived readers
reopen after an edit (the level metadata it holds is then stale).
"""

from __future__ import annotations

import enum
import os
import shutil
import uuid
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zarr
from zarr.abc.store import Store
from zarr.core.sync import sync
from zarr.storage import FsspecStore, LocalStore, MemoryStore, StorePath, ZipStore

from zarr_vectors.core.placement import OLD, STAGING, swap_in
from zarr_vectors.core.store import StoreLike
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT, remote_lock, store_lock
from zarr_vectors.edit.s3 import commit_s3, is_s3, live_path, lock_object, recover_s3
from zarr_vectors.edit.transaction import commit_in_session, is_session_store
from zarr_vectors.errors import ReadOnlyStoreError, StoreNotFoundError, UnsupportedEditError

__all__ = [
    "STAGING_TAG",
    "EditTarget",
    "TargetKind",
    "commit",
    "commit_directory",
    "editing",
    "resolve_target",
]

STAGING_TAG = STAGING
_OLD = OLD
_TMPZIP = ".zv-tmpzip-"


class TargetKind(enum.Enum):
    """How an edited store is rebuilt and committed."""

    DIRECTORY = "directory"
    ZIP = "zip"
    MEMORY = "memory"
    S3 = "s3"
    """An fsspec store on S3: staged beside it, published with the root document last."""
    SESSION = "session"
    """An Icechunk session store: the session is the transaction."""


@dataclass(frozen=True)
class EditTarget:
    """A store about to be edited."""

    kind: TargetKind
    location: Path | None
    """The directory or ``.zip`` file (None for memory stores)."""
    store: Any
    """The memory, S3 or session store object (None for local stores)."""
    prefix: str = ""
    """The store's path inside a session store (empty: its root)."""

    def source(self) -> StoreLike:
        """Return what to open to read the committed state."""
        if self.prefix:
            return StorePath(self.store, self.prefix)
        return self.store if self.location is None else str(self.location)


def _inner(store: Any) -> Any:
    if isinstance(store, zarr.Group):
        store = store.store_path
    return store.store if isinstance(store, StorePath) else store


def resolve_target(store: StoreLike) -> EditTarget:
    """Classify ``store`` for editing; refuse read-only and unsupported stores.

    Raises
    ------
    ReadOnlyStoreError
        A read-only store object, or a location this process cannot write.
    UnsupportedEditError
        Remote stores other than S3, open zip store objects, stores inside a prefix of a
        store object (other than Icechunk sessions).
    """
    if isinstance(store, str) and store.startswith(("s3://", "s3a://")):
        store = FsspecStore.from_url(store, read_only=False)
    inner = _inner(store)
    if isinstance(inner, Store) and inner.read_only:
        raise ReadOnlyStoreError(f"{inner!r} was opened read-only; reopen it writable to edit")
    remote = _remote_target(store, inner)
    if remote is not None:
        return remote
    if isinstance(inner, MemoryStore):
        return EditTarget(TargetKind.MEMORY, None, inner)
    if isinstance(inner, ZipStore):
        raise UnsupportedEditError("open ZipStore objects cannot be edited; pass the .zip path")
    if isinstance(inner, LocalStore):
        location = Path(inner.root)
    elif isinstance(inner, Store):
        raise UnsupportedEditError(
            f"{type(inner).__name__} stores cannot be edited yet (local directories, .zip "
            "files, memory, S3 and Icechunk session stores can)"
        )
    else:
        text = os.fspath(store)  # type: ignore[arg-type]
        if "://" in text and not text.startswith("file://"):
            raise UnsupportedEditError(
                f"{text}: remote stores cannot be edited yet (local directories, .zip files "
                "and memory stores can)"
            )
        location = Path(text.removeprefix("file://")).expanduser()
    if not location.exists() and not _siblings(location.absolute(), _OLD):
        raise StoreNotFoundError(f"no store at {location}")
    location = location.absolute()
    writable = os.access(location.parent, os.W_OK) and (
        location.is_file() or not location.exists() or os.access(location, os.W_OK)
    )
    if not writable:
        raise ReadOnlyStoreError(f"{location} is read-only for this process; nothing changed")
    kind = TargetKind.ZIP if location.suffix == ".zip" else TargetKind.DIRECTORY
    return EditTarget(kind, location, None)


def _remote_target(store: StoreLike, inner: Any) -> EditTarget | None:
    """Return the S3 or Icechunk session target of ``store``, or None for other stores."""
    where = _prefix(store) if isinstance(store, StorePath | zarr.Group) else ""
    if is_session_store(inner):
        return EditTarget(TargetKind.SESSION, None, inner, where.strip("/"))
    if is_s3(inner):
        if where:
            raise UnsupportedEditError("pass the S3 store itself (FsspecStore), not a sub-path")
        _require_s3_store(inner)
        return EditTarget(TargetKind.S3, None, inner)
    return None


def _require_s3_store(store: FsspecStore) -> None:
    """Refuse a bucket root, an unreachable S3 store, or a prefix holding no Zarr group."""
    where = f"s3://{live_path(store)}"
    try:
        present = sync(store.exists("zarr.json")) or sync(store.exists(".zgroup"))
    except Exception as exc:  # credentials, network, bucket: the S3 stack raises many types
        raise StoreNotFoundError(
            f"{where}: cannot reach the remote store ({type(exc).__name__}: {exc})"
        ) from exc
    if not present:
        raise StoreNotFoundError(f"no store at {where} (remote store)")


def _prefix(store: StorePath | zarr.Group) -> str:
    return str(store.store_path.path if isinstance(store, zarr.Group) else store.path)


def _siblings(location: Path, tag: str) -> list[Path]:
    return sorted(location.parent.glob(f".{location.name}{tag}*"))


def recover(target: EditTarget) -> None:
    """Bring a store back to its last committed state after a killed edit (lock held)."""
    loc = target.location
    if loc is None:
        return
    olds = _siblings(loc, _OLD)
    if not loc.exists() and olds:
        # killed between the two renames of the fallback swap: the old store is complete
        os.rename(olds[-1], loc)
        olds = olds[:-1]
    # the writer that builds an edit's staging directory stages that one in turn
    # (``..NAME.zv-staging-*``, core/placement.py): its leftovers are this edit's too
    nested = sorted(loc.parent.glob(f"..{loc.name}{STAGING_TAG}*"))
    for left in [*olds, *_siblings(loc, STAGING_TAG), *nested, *_siblings(loc, _TMPZIP)]:
        if left.is_dir():
            shutil.rmtree(left, ignore_errors=True)
        else:
            left.unlink(missing_ok=True)


@contextmanager
def editing(target: EditTarget, timeout: float = DEFAULT_TIMEOUT) -> Iterator[None]:
    """Hold the store's edit lock, after cleaning up any killed edit."""
    if target.kind is TargetKind.S3:
        with remote_lock(target.store.fs, lock_object(live_path(target.store)), timeout):
            recover_s3(target.store)
            yield
        return
    with store_lock(target.location, target.store, timeout):
        recover(target)
        yield


def commit_directory(staged: Path, final: Path) -> None:
    """Make the complete directory ``staged`` the store at ``final`` (old one removed).

    The same swap as overwrites use (:func:`zarr_vectors.core.placement.swap_in`); a crash
    between its two fallback renames leaves ``.NAME.zv-old-*``, which :func:`recover` puts back.
    """
    swap_in(staged, final)


def _commit_zip(staged: Path, final: Path) -> None:
    tmp = final.with_name(f".{final.name}{_TMPZIP}{uuid.uuid4().hex[:8]}")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as packed:
        for path in sorted(p for p in staged.rglob("*") if p.is_file()):
            packed.writestr(path.relative_to(staged).as_posix(), path.read_bytes())
    os.replace(tmp, final)
    shutil.rmtree(staged)


def commit(target: EditTarget, build: Callable[[StoreLike], None]) -> None:
    """Build the new state with ``build(staging)`` and make it the store's state at once.

    ``build`` receives an empty place (a directory path or a memory store) and writes the
    complete new store there.  If it raises, the store is untouched and the staging removed.
    """
    if target.kind is TargetKind.S3:
        commit_s3(target.store, build)
        return
    if target.kind is TargetKind.SESSION:
        commit_in_session(target.store, target.prefix, build)
        return
    if target.kind is TargetKind.MEMORY:
        staging = MemoryStore()
        build(staging)
        live = target.store._store_dict
        fresh = dict(staging._store_dict)
        live.clear()
        live.update(fresh)
        return
    final = target.location
    assert final is not None
    staged = final.with_name(f".{final.name}{STAGING_TAG}{uuid.uuid4().hex[:8]}")
    try:
        build(str(staged))
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    if target.kind is TargetKind.ZIP:
        _commit_zip(staged, final)
    else:
        commit_directory(staged, final)
