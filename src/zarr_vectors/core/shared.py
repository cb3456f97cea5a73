"""Process-wide settings of other libraries, held while any of our callers needs them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["SharedSetting"]


class SharedSetting:
    """A process-wide setting held while any caller, in any thread, is inside :meth:`held`.

    The first caller in applies it (``apply`` returns what ``restore`` needs) and the last one
    out restores it: a plain save/restore per call would let one thread's exit undo the
    setting under another thread that still relies on it.

    Examples
    --------
    >>> state = {"mode": "a"}
    >>> def apply() -> str:
    ...     saved, state["mode"] = state["mode"], "b"
    ...     return saved
    >>> setting = SharedSetting(apply, lambda saved: state.update(mode=saved))
    >>> with setting.held():
    ...     with setting.held():
    ...         pass
    ...     state["mode"]
    'b'
    >>> state["mode"]
    'a'
    """

    def __init__(self, apply: Callable[[], Any], restore: Callable[[Any], None]) -> None:
        self._apply, self._restore = apply, restore
        self._lock = threading.Lock()
        self._users = 0
        self._saved: Any = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the setting for the duration of the block."""
        with self._lock:
            if self._users == 0:
                self._saved = self._apply()
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    saved, self._saved = self._saved, None
                    self._restore(saved)
