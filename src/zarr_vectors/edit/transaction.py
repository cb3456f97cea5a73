"""Writes and edits inside a transaction: an Icechunk session store.

An Icechunk session (``repo.writable_session(branch)``) is itself a transaction: nothing
written through ``session.store`` is visible to any other session until ``session.commit``
makes it one snapshot, and earlier snapshots stay readable (``repo.readonly_session(
snapshot_id=...)``).  So an edit of a store in a session needs no staging rename and no lock
object: the new state is built in a local scratch directory and then replaces the store's
keys inside the session; the user's commit is the commit point.  Two sessions editing the
same branch conflict at commit: the second commit fails and commits nothing.

:func:`icechunk_transaction` opens a session, yields its store, and commits it as one snapshot
when the block ends without an exception (nothing is committed otherwise).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import LocalStore

from zarr_vectors.errors import InvalidInputError, StoreLockedError

icechunk: Any
try:
    import icechunk
except ImportError:  # optional: pip install zarr-vectors[icechunk]
    icechunk = None

__all__ = ["Transaction", "commit_in_session", "icechunk_transaction", "is_session_store"]


def is_session_store(store: Any) -> bool:
    """Whether ``store`` is the store of an Icechunk session."""
    return icechunk is not None and isinstance(store, icechunk.IcechunkStore)


_DOCS = frozenset(("zarr.json", ".zarray", ".zgroup", ".zattrs"))


def _is_doc(key: str) -> bool:
    return key.rsplit("/", 1)[-1] in _DOCS


async def _replace(dst: Store, prefix: str, src: Store) -> None:
    """Make the keys of ``dst`` under ``prefix`` exactly those of ``src``.

    Icechunk keeps nodes, not keys: an array's chunks can be set only after its metadata
    document and deleted only while it exists.  So stale chunks go first, then stale
    documents (deepest first), then new documents (shallowest first), then new chunks.
    """
    lead = f"{prefix}/" if prefix else ""
    new = {k async for k in src.list()}
    old = {k[len(lead) :] async for k in dst.list_prefix(lead)}
    stale = sorted(old - new, key=lambda k: (_is_doc(k), -k.count("/"), k))
    for key in stale:
        await dst.delete(lead + key)
    proto = default_buffer_prototype()
    for key in sorted(new, key=lambda k: (not _is_doc(k), k.count("/"), k)):
        buf = await src.get(key, prototype=proto)
        assert buf is not None
        await dst.set(lead + key, buf)


def commit_in_session(store: Store, prefix: str, build: Callable[[str], None]) -> None:
    """Build the new state with ``build(scratch path)``; make it the content under ``prefix``.

    If ``build`` raises, the session's store is untouched.
    """
    with tempfile.TemporaryDirectory(prefix="zv-edit-") as tmp:
        scratch = Path(tmp) / "store.zarr"
        build(str(scratch))
        sync(_replace(store, prefix, LocalStore(scratch, read_only=True)))


class Transaction:
    """An open Icechunk session: write and edit through :attr:`store`; committed on exit."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.store: Store = session.store
        self.snapshot_id: str | None = None
        """The id of the committed snapshot (None until the block ends without error)."""


@contextmanager
def icechunk_transaction(
    repo: Any, branch: str = "main", message: str = "zarr-vectors edit"
) -> Iterator[Transaction]:
    """Write and edit ZVF stores in one Icechunk snapshot.

    Parameters
    ----------
    repo
        An ``icechunk.Repository``.
    branch
        The branch to commit to.
    message
        The snapshot's commit message.

    Yields
    ------
    Transaction
        ``.store`` takes any ``write_*``, ``append_*`` and edit function (a store inside it
        is addressed with ``zarr.storage.StorePath(tx.store, "name")``); ``.snapshot_id`` is
        set once the snapshot is committed.

    Raises
    ------
    StoreLockedError
        Another session committed to ``branch`` first with a conflicting change; nothing of
        this transaction was committed.

    Examples
    --------
    >>> import numpy as np, icechunk, zarr_vectors as zv
    >>> repo = icechunk.Repository.create(icechunk.in_memory_storage())
    >>> with zv.icechunk_transaction(repo, message="first points") as tx:
    ...     _ = zv.write_points(tx.store, np.zeros((2, 2)), chunk_shape=(4, 4))
    >>> len(zv.read_points(repo.readonly_session(snapshot_id=tx.snapshot_id).store))
    2
    """
    if icechunk is None:
        raise InvalidInputError("icechunk is not installed: pip install zarr-vectors[icechunk]")
    tx = Transaction(repo.writable_session(branch))
    yield tx
    try:
        tx.snapshot_id = tx.session.commit(message)
    except icechunk.ConflictError as exc:
        raise StoreLockedError(
            f"another writer committed to branch {branch!r} first; nothing of this "
            f"transaction was committed ({exc})"
        ) from exc
