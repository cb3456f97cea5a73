"""Small steps every format converter takes: progress reports and its metadata section."""

from __future__ import annotations

from typing import Any

from zarr_vectors.core.store import StoreLike
from zarr_vectors.formats.registry import NullProgress, Progress, custom_section, store_metadata

__all__ = ["begin", "section"]


def begin(progress: Progress | None, step: str) -> Progress:
    """Report the start of ``step`` (no known total) and return the receiver to use.

    Parameters
    ----------
    progress
        Receiver of progress reports; None reports nowhere.
    step
        What starts, e.g. ``"reading store"``.
    """
    report = progress or NullProgress()
    report.start(step, None)
    return report


def section(store: StoreLike, key: str) -> dict[str, Any]:
    """Return a copy of the store's ``custom_metadata[key]`` (empty when it is absent)."""
    return dict(custom_section(store_metadata(store), key) or {})
