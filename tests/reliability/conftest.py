"""Fixtures of the reliability suite: pristine stores of every geometry type, written once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from zarr.storage import MemoryStore

from reliability._damage import KINDS, Damage, Fmt, write_kind


@pytest.fixture(scope="session")
def templates() -> dict[tuple[str, int], MemoryStore]:
    """One written memory store per (kind, Zarr format)."""
    out: dict[tuple[str, int], MemoryStore] = {}
    formats: tuple[Fmt, ...] = (2, 3)
    for fmt in formats:
        for kind in KINDS:
            store = MemoryStore()
            write_kind(kind, store, fmt)
            out[kind, fmt] = store
    return out


@pytest.fixture
def pristine(templates: dict[tuple[str, int], MemoryStore]) -> Callable[[str, Fmt], Damage]:
    """Return a function giving a fresh copy of a template store."""

    def build(kind: str, fmt: Fmt = 3) -> Damage:
        return Damage(MemoryStore(dict(templates[kind, fmt]._store_dict)))

    return build
