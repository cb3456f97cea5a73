"""Shared fixtures: a store of every kind and both Zarr formats (STYLE §11).

``store`` is parametrised over the store kinds a user can hand to ``write_points``:

* ``memory``     — ``MemoryStore()``
* ``local``      — ``LocalStore(tmp_path / "s.zarrvectors")``
* ``zip``        — an open ``ZipStore(tmp_path / "s.zip", mode="w")``
* ``local_path`` — the string path of a directory
* ``zip_path``   — the string path of a ``.zip`` file

Tests that write several stores per test (hypothesis) use ``store_factory``
(:class:`zarr_vectors.testing.stores.StoreFactory`), which makes a fresh store per call.  A
``ZipStore`` handed in by the user stays open after ``write_points``; round-trip tests read it
back through ``store_factory.for_reading(store)``, which closes the writer and reopens the file
read-only (reading through the still-open writer is tested on its own in
``tests/core/test_store.py``).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from zarr_vectors.testing.stores import STORE_KINDS, StoreFactory

# When a property test fails, hypothesis' pytest plugin imports ``hypothesis.extra._patching``
# (libcst) to suggest an ``@example`` patch; that import warns (DeprecationWarning from
# mypy_extensions) and, under ``filterwarnings = error``, turns the report into an
# INTERNALERROR that hides the real failure.  Import it once here, where warnings are not errors.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    with contextlib.suppress(ImportError):
        import hypothesis.extra._patching  # noqa: F401

# test data folders hold generator scripts for other tools (run by hand, e.g. with anndata)
collect_ignore_glob = ["data/*"]

settings.register_profile("zarr_vectors", database=None, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "zarr_vectors"))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Do not collect ``conftest.py`` files as doctest modules (they hold no doctests).

    ``--doctest-modules`` imports each as a module named ``conftest``; when several test
    directories are given on the command line their conftests are all loaded first, and the
    import clashes ("import file mismatch").  They still load as conftests.
    """
    return True if collection_path.name == "conftest.py" else None


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Name of the store kind under test."""
    return str(request.param)


@pytest.fixture
def store_factory(store_kind: str, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of fresh stores of ``store_kind`` (for tests writing several stores)."""
    factory = StoreFactory(store_kind, tmp_path / "stores")
    yield factory
    factory.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> Any:
    """A fresh, empty store of every kind a user can pass to ``write_*``."""
    return store_factory()


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def zarr_format(request: pytest.FixtureRequest) -> int:
    """Zarr format version of the store under test."""
    return int(request.param)
