"""Fault injection: a write interrupted after k store operations never leaves a store that
validates clean with data missing (FORMAT.md §13, docs/spec.md §13).

* Overwriting a local directory is staged: the previous store survives intact.
* Everywhere else the root ZVF attributes are written last, so an interrupted location fails
  ``open_store`` (and the validator reports it) until a write completes.
"""

from __future__ import annotations

import asyncio
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr.storage
from zarr.core.buffer import Buffer
from zarr.storage import LocalStore, MemoryStore

import zarr_vectors as zv
from reliability._damage import write_kind
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.errors import StoreNotFoundError
from zarr_vectors.validate import validate


class Interrupted(OSError):
    """The injected failure (an I/O error, as a full disk or a lost connection raises)."""


class FailingStore(MemoryStore):
    """A memory store whose ``set`` fails from the (k+1)-th call on."""

    def __init__(self, fail_after: int | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_after = fail_after
        self.sets = 0

    async def set(self, key: str, value: Buffer, byte_range: tuple[int, int] | None = None) -> None:
        if self.fail_after is not None and self.sets >= self.fail_after:
            raise Interrupted(f"injected failure writing {key}")
        self.sets += 1
        await super().set(key, value)


WRITERS: dict[str, Callable[..., Any]] = {
    "points": lambda store, **kw: write_kind("points", store, **kw),
    "polylines": lambda store, **kw: write_kind("polylines", store, **kw),
    "mesh": lambda store, **kw: write_kind("mesh", store, **kw),
}


def _count_sets(kind: str) -> int:
    store = FailingStore(None)
    WRITERS[kind](store)
    return store.sets


def _sample(total: int, n: int = 12) -> list[int]:
    """k values spread over the whole write, always including the first and the last."""
    return sorted({0, total - 1, *np.linspace(0, total - 1, n).astype(int).tolist()})


def assert_not_a_clean_store(store: Any) -> None:
    """The location is refused by ``open_store`` or flagged by the validator."""
    try:
        zv.open_store(store)
    except StoreNotFoundError:
        report = validate(store, level=5)
        assert not report.ok, str(report)
        return
    report = validate(store, level=5)
    assert not report.ok, f"an interrupted write validates clean:\n{report}"


# ---------------------------------------------------------------------------------------------
# memory stores (no staging: the completion marker is all there is)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_interrupted_memory_write_is_never_clean(kind: str) -> None:
    total = _count_sets(kind)
    for k in _sample(total):
        store = FailingStore(k)
        with pytest.raises(Interrupted):
            WRITERS[kind](store)
        assert_not_a_clean_store(MemoryStore(dict(store._store_dict)))
    complete = FailingStore(total)
    WRITERS[kind](complete)
    assert validate(complete, level=5).findings == ()


def test_interrupted_memory_overwrite_is_never_clean() -> None:
    total = _count_sets("polylines")
    for k in _sample(total, 6):
        store = FailingStore(None)
        write_kind("points", store)
        store.fail_after, store.sets = k, 0
        with pytest.raises(Interrupted):
            write_kind("polylines", store, overwrite=True)
        assert_not_a_clean_store(MemoryStore(dict(store._store_dict)))


def test_interrupted_payload_batch_is_never_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail inside the batched payload writer itself (``core.payload.store_io._set_many``)."""
    original = zv_store_io._set_many
    for k in range(3):
        calls = iter(range(10**6))

        def failing(store: Any, items: Any, _k: int = k, _calls: Iterator[int] = calls) -> None:
            if next(_calls) >= _k:
                raise Interrupted("injected failure in _set_many")
            original(store, items)

        monkeypatch.setattr(zv_store_io, "_set_many", failing)
        store = MemoryStore()
        with pytest.raises(Interrupted):
            write_kind("polylines", store)
        monkeypatch.setattr(zv_store_io, "_set_many", original)
        assert_not_a_clean_store(store)


def test_interrupted_streaming_write_is_never_clean() -> None:
    def stream(store: Any) -> None:
        rng = np.random.default_rng(0)
        with zv.open_writer(store, "polyline", chunk_shape=(25.0,) * 3) as w:
            for _ in range(2):
                w.append([rng.uniform(0, 100, (6, 3)) for _ in range(3)])

    probe = FailingStore(None)
    stream(probe)
    for k in _sample(probe.sets, 6):
        store = FailingStore(k)
        with pytest.raises(Interrupted):
            stream(store)
        assert_not_a_clean_store(MemoryStore(dict(store._store_dict)))


# ---------------------------------------------------------------------------------------------
# local directories


def _files(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def fail_local_sets(monkeypatch: pytest.MonkeyPatch) -> Callable[[int | None], None]:
    """Make every ``LocalStore.set`` (and batched payload write) fail after k successes."""
    state: dict[str, int | None] = {"left": None}
    original_set = LocalStore.set
    original_many = zv_store_io._set_many

    def tick() -> None:
        left = state["left"]
        if left is not None:
            if left <= 0:
                raise Interrupted("injected failure")
            state["left"] = left - 1

    async def set_(self: LocalStore, key: str, value: Buffer, **kw: Any) -> None:
        tick()
        await original_set(self, key, value, **kw)

    def many(store: Any, items: Any) -> None:
        tick()
        original_many(store, items)

    monkeypatch.setattr(LocalStore, "set", set_)
    monkeypatch.setattr(zv_store_io, "_set_many", many)

    def arm(k: int | None) -> None:
        state["left"] = k

    return arm


def test_interrupted_local_overwrite_keeps_the_old_store(
    tmp_path: Path, fail_local_sets: Callable[[int | None], None]
) -> None:
    path = tmp_path / "s.zarrvectors"
    write_kind("points", str(path))
    before = _files(path)
    old = zv.read_points(str(path))
    for k in (0, 1, 2, 5, 10, 20, 40, 60):
        fail_local_sets(k)
        try:
            write_kind("polylines", str(path), overwrite=True)
        except Interrupted:
            pass
        else:
            break  # k is past the last write: the overwrite completed
        finally:
            fail_local_sets(None)
        assert _files(path) == before, f"interrupted after {k} writes changed the old store"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarrvectors"]
        assert validate(str(path), level=5).findings == ()
        np.testing.assert_array_equal(zv.read_points(str(path)).positions, old.positions)
    assert validate(str(path), level=5).findings == ()


def test_interrupted_overwrite_outlived_by_sibling_writes_leaves_no_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write of a zarr-python batch fails while its siblings are still running.

    ``asyncio.gather`` reports the failure at once; the sibling ``LocalStore`` writes finish
    later and would recreate a staging directory removed too early.
    """
    path = tmp_path / "s.zarrvectors"
    write_kind("points", str(path), 2)  # Zarr v2: metadata documents are written in batches
    before = _files(path)
    original_set = LocalStore.set
    failed: list[str] = []

    async def set_(self: LocalStore, key: str, value: Buffer, **kw: Any) -> None:
        if not failed and key.endswith(".zattrs"):
            failed.append(key)
            raise Interrupted(f"injected failure writing {key}")
        await asyncio.sleep(0.2)  # the siblings finish well after the failure is reported
        await original_set(self, key, value, **kw)

    monkeypatch.setattr(LocalStore, "set", set_)
    with pytest.raises(Interrupted):
        write_kind("polylines", str(path), 2, overwrite=True)
    monkeypatch.setattr(LocalStore, "set", original_set)
    assert failed
    time.sleep(0.5)  # nothing still running may bring the staging directory back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarrvectors"]
    assert _files(path) == before


def test_interrupted_local_fresh_write_is_never_clean(
    tmp_path: Path, fail_local_sets: Callable[[int | None], None]
) -> None:
    for k in (0, 1, 3, 8, 20, 40):
        path = tmp_path / f"s{k}.zarrvectors"
        fail_local_sets(k)
        try:
            write_kind("polylines", str(path))
        except Interrupted:
            fail_local_sets(None)
            if path.exists():
                assert_not_a_clean_store(str(path))
        else:
            fail_local_sets(None)
            assert validate(str(path), level=5).findings == ()


def test_interrupted_zip_overwrite_keeps_the_old_zip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.zip"
    write_kind("points", str(path))
    before = path.read_bytes()
    original = zv_store_io._set_many

    def failing(store: Any, items: Any) -> None:
        if isinstance(store, zarr.storage.ZipStore):
            raise Interrupted("injected failure while packing the zip")
        original(store, items)

    monkeypatch.setattr(zv_store_io, "_set_many", failing)
    with pytest.raises(Interrupted):
        write_kind("polylines", str(path), overwrite=True)
    monkeypatch.setattr(zv_store_io, "_set_many", original)
    assert path.read_bytes() == before
    with zipfile.ZipFile(path) as zf:
        assert zf.testzip() is None
    assert validate(str(path), level=5).findings == ()
