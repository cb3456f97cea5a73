"""The context-manager protocol every batch writer follows."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

from zarr_vectors.core.writer import WriteSummary

__all__ = ["ClosesOnExit"]


class ClosesOnExit(abc.ABC):
    """A writer used as ``with``: leaving the block closes it, or aborts it on an exception.

    An exception inside the block must not leave a half-written store behind, so it aborts
    (discarding the batches) instead of closing; the exception still propagates.
    """

    @abc.abstractmethod
    def close(self) -> WriteSummary:
        """Write what was added and finish."""

    @abc.abstractmethod
    def abort(self) -> None:
        """Discard what was added; nothing is written."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
