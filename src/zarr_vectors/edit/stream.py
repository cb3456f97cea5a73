"""Streamed appends: ``open_writer(store, ..., mode="a")``.

Batches stream into a scratch store beside the target through the ordinary streaming writer
(spilled to disk, bounded memory while batches arrive); at ``close`` the scratch store is
appended to the target with :func:`~zarr_vectors.edit.append.append_store` (one commit point,
under the target's edit lock) and removed.  The scratch store's name
(``.<name>.zv-append-<8 hex>``) is not one the lock holder's clean-up removes, so a concurrent
edit of the target cannot delete it.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Protocol

from zarr_vectors.core.closing import ClosesOnExit
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.edit.append import append_store
from zarr_vectors.edit.commit import resolve_target
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT

__all__ = ["AppendingWriter", "BatchWriter", "scratch_for"]


class BatchWriter(Protocol):
    """What :class:`AppendingWriter` needs of a streaming writer."""

    def append(self, data: Any, **kwargs: Any) -> None: ...  # noqa: D102

    def close(self) -> WriteSummary: ...  # noqa: D102

    def abort(self) -> None: ...  # noqa: D102


def scratch_for(store: StoreLike) -> Path:
    """Return a new scratch location for batches appended to ``store`` (refused stores raise)."""
    target = resolve_target(store)
    tag = uuid.uuid4().hex[:8]
    if target.location is None:
        return Path(tempfile.mkdtemp(prefix="zv-append-")) / "batches.zarr"
    return target.location.with_name(f".{target.location.name}.zv-append-{tag}")


class AppendingWriter(ClosesOnExit):
    """Streams batches aside and appends them to a store when closed."""

    def __init__(
        self,
        scratch_writer: BatchWriter,
        store: StoreLike,
        scratch: Path,
        geometry_type: str,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._writer = scratch_writer
        self._store = store
        self._scratch = scratch
        self._timeout = timeout
        self.geometry_type = geometry_type
        self.summary: WriteSummary | None = None

    def append(self, data: Any, **kwargs: Any) -> None:
        """Add a batch; arguments are those of the matching ``write_*`` function."""
        self._writer.append(data, **kwargs)

    def close(self) -> WriteSummary:
        """Append every batch to the store at one commit point; returns the store's counts."""
        try:
            self._writer.close()
            self.summary = append_store(self._store, str(self._scratch), timeout=self._timeout)
        finally:
            self._remove()
        return self.summary

    def abort(self) -> None:
        """Discard all batches; the store is untouched."""
        try:
            self._writer.abort()
        finally:
            self._remove()

    def _remove(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)
        if self._scratch.parent.name.startswith("zv-append-"):
            shutil.rmtree(self._scratch.parent, ignore_errors=True)
