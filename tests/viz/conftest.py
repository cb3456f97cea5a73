"""Fixtures of the viewer tests: one store per geometry type (see ``viz_stores``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from viz_stores import WRITERS


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One local store per geometry type, written once per session."""
    root = tmp_path_factory.mktemp("viz-stores")
    out = {}
    for name, write in WRITERS.items():
        path = str(root / f"{name}.zarrvectors")
        write(path)
        out[name] = path
    return out


@pytest.fixture
def make_store(tmp_path: Path) -> Callable[..., str]:
    """Write a store with ``writer(path, ...)`` under a fresh path and return the path."""

    def make(writer: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
        path = str(tmp_path / f"s{len(list(tmp_path.iterdir()))}.zarrvectors")
        writer(path, *args, **kwargs)
        return path

    return make
