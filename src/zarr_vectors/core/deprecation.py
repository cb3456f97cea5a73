"""Deprecated names kept for one release: each use works and warns once.

The naming rule (docs/api/index.md): ``object_ids`` always holds one id per object,
``vertex_object_ids`` one per vertex; function nouns are plural like their result classes
(``read_skeletons`` returns :class:`~zarr_vectors.Skeletons`).  Old names of keywords, functions
and result attributes stay as aliases that emit :class:`~zarr_vectors.errors.ZVDeprecationWarning`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

from zarr_vectors.errors import InvalidInputError, ZVDeprecationWarning

__all__ = ["deprecated_function", "rename_keywords", "renamed_keywords", "warn_renamed"]

F = TypeVar("F", bound=Callable[..., Any])

_STACK = 3
"""``warnings.warn`` stack level naming the caller's line: the helper, the alias, the caller."""


def warn_renamed(old: str, new: str, *, stacklevel: int = _STACK) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (call from the alias itself)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        ZVDeprecationWarning,
        stacklevel=stacklevel,
    )


def rename_keywords(
    kwargs: dict[str, Any], where: str, renames: dict[str, str], *, stacklevel: int = _STACK + 1
) -> None:
    """Move each deprecated keyword of ``kwargs`` to its new name in place, warning once each.

    Raises
    ------
    InvalidInputError
        Both the old and the new name were given.
    """
    for old, new in renames.items():
        if old in kwargs:
            if new in kwargs:
                raise InvalidInputError(
                    f"{where}: pass {new}= only ({old}= is its deprecated name)"
                )
            warn_renamed(f"{where}({old}=...)", f"{new}=", stacklevel=stacklevel)
            kwargs[new] = kwargs.pop(old)


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Accept each old keyword (argument name) under its new name (argument value), warning once.

    Passing both the old and the new name raises :class:`InvalidInputError`.

    Examples
    --------
    >>> @renamed_keywords(ids="object_ids")
    ... def f(*, object_ids=None):
    ...     return object_ids
    >>> f(object_ids=[1])
    [1]
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rename_keywords(kwargs, func.__name__, renames)
            return func(*args, **kwargs)

        return cast(F, wrapper)

    return decorate


def deprecated_function(func: F, old: str) -> F:
    """Return ``func`` under its deprecated name ``old``: same call, plus one warning per call."""

    def alias(*args: Any, **kwargs: Any) -> Any:
        warn_renamed(f"{old}()", f"{func.__name__}()")
        return func(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__module__ = func.__module__
    alias.__doc__ = f"Deprecated name of :func:`{func.__name__}` (removed in the next release)."
    alias.__wrapped__ = func  # type: ignore[attr-defined]
    return cast(F, alias)
