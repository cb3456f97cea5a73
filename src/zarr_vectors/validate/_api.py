"""The :func:`validate` entry point (FORMAT.md §11)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zarr.errors import BaseZarrError
from zarr.storage import StorePath

from zarr_vectors.core.store import StoreLike, resolve_store
from zarr_vectors.errors import InvalidInputError, StoreNotFoundError, ZarrVectorsError
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.spec.upstream import upstream_message
from zarr_vectors.validate._checks import CHECKS, MAX_LEVEL, Check
from zarr_vectors.validate._collection import is_collection_root, validate_collection
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._report import Finding, ValidationReport
from zarr_vectors.validate._scan import scan

__all__ = ["validate"]


def validate(
    store: StoreLike,
    level: int = 2,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> ValidationReport:
    """Check a store against ZVF 1.0 and return every finding.

    Problems in the store never raise: each becomes a :class:`Finding` with a stable check id,
    and the run continues (checks whose prerequisites failed are skipped).  A store that does not
    exist at all gives a single ``L1.store.missing`` error.

    A collection (a root listing ``zarr_vectors_collection`` children) is validated child by
    child: each finding's path starts with ``/<child>`` and its message names the child.

    Parameters
    ----------
    store
        Local path, ``.zip`` path, URL (with ``storage_options``), zarr store or open root group.
    level
        Depth of checks, 1..5: 1 structure, 2 metadata (the seed's rules 1–7 and level-group
        rules), 3 consistency (every payload decoded and cross-checked, streamed chunk batch by
        chunk batch), 4 geometry (trees, faces, path continuity), 5 pyramid (levels agree).
        Each level includes the ones below it.
    storage_options
        fsspec options for URL stores.

    Returns
    -------
    ValidationReport
        All findings; ``report.ok`` is True when none is an error.

    Raises
    ------
    InvalidInputError
        ``level`` is not an integer in 1..5, or ``storage_options`` were given for a local path.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.zeros((1, 3)), chunk_shape=(10, 10, 10))
    >>> validate(store).ok
    True
    >>> report = validate(MemoryStore())  # empty: not a Zarr group
    >>> report.ok, [f.check for f in report.errors]
    (False, ['L1.root.not_group'])
    """
    depth = _parse_level(level)
    try:
        handle = resolve_store(store, mode="r", storage_options=storage_options)
    except (StoreNotFoundError, FileNotFoundError) as exc:
        return _missing(depth, str(exc))
    if handle.local_path is not None and not handle.local_path.is_dir():
        what = "does not exist" if not handle.local_path.exists() else "is not a directory"
        return _missing(depth, f"{handle.local_path} {what}")
    sp = handle.store if isinstance(handle.store, StorePath) else StorePath(handle.store)
    try:
        scanned = scan(sp)
    except (StoreNotFoundError, FileNotFoundError) as exc:
        handle.close()
        return _missing(depth, str(exc))
    except _CHECK_FAILURES as exc:
        handle.close()
        return _missing(depth, f"the store cannot be read ({type(exc).__name__}: {exc})")
    root = scanned.nodes.get("")
    attrs = root.attrs(3) if root else None
    if is_collection_root(attrs):
        handle.close()
        assert attrs is not None
        return validate_collection(sp, attrs, depth, validate)
    upstream = upstream_message(attrs or {}, str(store))
    if upstream is not None:  # another format: one finding instead of dozens
        handle.close()
        return _missing(depth, upstream)
    ctx = ValidationContext(store_path=sp, scan=scanned)
    try:
        for n in range(1, depth + 1):
            for check in CHECKS[n]:
                _run(check, ctx)
    finally:
        handle.close()
    ctx.flush_suppressed()
    return ValidationReport(findings=tuple(ctx.findings), level=depth)


_CHECK_FAILURES = (
    ZarrVectorsError,
    BaseZarrError,
    ArithmeticError,
    LookupError,
    OSError,
    RecursionError,
    MemoryError,
    TypeError,
    ValueError,
)
"""What a hostile store can make a check raise; each becomes a finding, never an exception."""


def _run(check: Check, ctx: ValidationContext) -> None:
    """Run one check; a failure it did not anticipate becomes an ``L1.check.incomplete`` error."""
    try:
        check(ctx)
    except _CHECK_FAILURES as exc:
        ctx.error(
            "L1.check.incomplete",
            "",
            f"check {check.__name__} stopped on this store ({type(exc).__name__}: {exc}); "
            "the store is damaged in a way the other findings may not name",
        )


def _parse_level(level: object) -> int:
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= MAX_LEVEL:
        raise InvalidInputError(f"level must be an integer from 1 to {MAX_LEVEL}, got {level!r}")
    return level


def _missing(depth: int, detail: str) -> ValidationReport:
    finding = Finding(
        check="L1.store.missing",
        severity=Severity.ERROR,
        path="/",
        message=f"no store found: {detail}",
    )
    return ValidationReport(findings=(finding,), level=depth)
