"""Fixtures: the committed upstream stores and what upstream read back from them."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "upstream"
VERSIONS = ("0.2.0", "0.9.2")


class Expected:
    """``expected.npz`` of one upstream version: ``read(store, key)`` and ``input(...)``."""

    def __init__(self, version: str) -> None:
        self.version = version
        with np.load(DATA / version / "expected.npz") as npz:
            self._values = {k: npz[k] for k in npz.files}

    def read(self, store: str, key: str) -> np.ndarray:
        return self._values[f"{store}/read/{key}"]

    def input(self, store: str, key: str) -> np.ndarray:
        return self._values[f"{store}/input/{key}"]


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def expected(version: str) -> Expected:
    return Expected(version)


@pytest.fixture
def upstream(version: str, tmp_path: Path):
    """Copy an upstream fixture store into tmp_path (the committed one stays untouched)."""

    def copy(name: str) -> Path:
        dst = tmp_path / f"{name}.zv"
        shutil.copytree(DATA / version / f"{name}.zv", dst)
        return dst

    return copy
