"""Fixtures for the validator tests: real stores written with ``write_points`` and a toolkit
that damages them by editing the raw Zarr metadata documents."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
import zarr
from zarr.abc.store import Store
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import LocalStore, MemoryStore, ZipStore

import zarr_vectors as zv
from zarr_vectors.core.multiscale import write_multiscale_metadata
from zarr_vectors.core.store import open_store

StoreKind = Literal["memory", "local", "zip"]

CHUNK = (25.0, 25.0, 25.0)
BINS = (5.0, 5.0, 5.0)


def sample_points(n: int = 120, d: int = 3, seed: int = 0) -> dict[str, Any]:
    """Deterministic points in [0, 50)^d (2×2×2 chunks) with attributes and 10 objects."""
    rng = np.random.default_rng(seed)
    return {
        "positions": rng.uniform(0, 50, (n, d)),
        "attributes": {"intensity": rng.random(n).astype("f4")},
        "vertex_object_ids": rng.integers(0, 10, n),
        "object_attributes": {"label": np.arange(10, dtype="i4")},
    }


@dataclass
class Kit:
    """A writable store plus helpers that edit its metadata documents in place."""

    store: Store
    fmt: Literal[2, 3]

    # raw documents ---------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        buf = sync(self.store.get(key, default_buffer_prototype()))
        return None if buf is None else json.loads(buf.to_bytes())

    def put_raw(self, key: str, data: bytes) -> None:
        sync(self.store.set(key, default_buffer_prototype().buffer.from_bytes(data)))

    def put(self, key: str, doc: Any) -> None:
        self.put_raw(key, json.dumps(doc).encode())

    def delete(self, prefix: str) -> None:
        sync(self.store.delete_dir(prefix))

    def keys(self, prefix: str) -> list[str]:
        async def collect() -> list[str]:
            return [k async for k in self.store.list_prefix(prefix)]

        return sync(collect())

    # attributes ------------------------------------------------------------------------------

    def edit_attrs(self, node: str, fn: Callable[[dict[str, Any]], None]) -> None:
        """Apply ``fn`` to the attributes of ``node`` ("" for the root) and save them."""
        prefix = f"{node}/" if node else ""
        if self.fmt == 3:
            doc = self.get(prefix + "zarr.json")
            assert doc is not None, node
            fn(doc.setdefault("attributes", {}))
            self.put(prefix + "zarr.json", doc)
        else:
            attrs = self.get(prefix + ".zattrs") or {}
            fn(attrs)
            self.put(prefix + ".zattrs", attrs)

    def set_attr(self, node: str, key: str, value: Any) -> None:
        self.edit_attrs(node, lambda a: a.__setitem__(key, value))

    def del_attr(self, node: str, key: str) -> None:
        self.edit_attrs(node, lambda a: a.pop(key))

    def edit_datasets(self, fn: Callable[[list[dict[str, Any]]], None]) -> None:
        self.edit_attrs("", lambda a: fn(a["multiscales"][0]["datasets"]))

    def edit_dataset(self, level: int, fn: Callable[[dict[str, Any]], None]) -> None:
        def apply(datasets: list[dict[str, Any]]) -> None:
            fn(next(d for d in datasets if d["level"] == level))

        self.edit_datasets(apply)

    # hierarchy -------------------------------------------------------------------------------

    def root(self) -> zarr.Group:
        return open_store(self.store, mode="r+")

    def add_level(self, n: int, ratio: tuple[int, ...], *, rebuild: bool = True) -> None:
        """Copy level 0 to level ``n`` with ``bin_ratio`` ``ratio`` (a structurally valid level)."""
        for key in self.keys("0/"):
            buf = sync(self.store.get(key, default_buffer_prototype()))
            assert buf is not None
            sync(self.store.set(f"{n}/" + key.removeprefix("0/"), buf))
        bins = [b * r for b, r in zip(BINS, ratio, strict=True)]

        def update(a: dict[str, Any]) -> None:
            a.update(level=n, bin_ratio=list(ratio), bin_shape=bins)

        self.edit_attrs(str(n), update)
        if rebuild:
            write_multiscale_metadata(self.root())


def make_store(kind: StoreKind, tmp_path: Path, name: str = "s.zarrvectors") -> Store:
    """A fresh writable store (zip stores are built from a local directory, see ``to_zip``)."""
    if kind == "memory":
        return MemoryStore()
    return LocalStore(tmp_path / name)


def to_zip(store: Store, tmp_path: Path) -> ZipStore:
    """Pack a local store directory into a .zip and return a read-only ZipStore on it."""
    assert isinstance(store, LocalStore)
    src = Path(store.root)
    dest = tmp_path / f"{src.name}.zip"
    with zipfile.ZipFile(dest, "w") as zf:
        for file in sorted(src.rglob("*")):
            if file.is_file():
                zf.write(file, file.relative_to(src).as_posix())
    return ZipStore(dest, mode="r")


def write_sample(store: Store | str | Path, fmt: Literal[2, 3] = 3, **kwargs: Any) -> None:
    data = sample_points()
    data.update(kwargs)
    zv.write_points(store, chunk_shape=CHUNK, bin_shape=BINS, zarr_format=fmt, **data)


@pytest.fixture(params=[3, 2], ids=["v3", "v2"])
def zarr_format(request: pytest.FixtureRequest) -> Literal[2, 3]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["memory", "local", "zip"])
def store_kind(request: pytest.FixtureRequest) -> StoreKind:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Store]:
    """Pristine sample stores, written once per session and copied by ``kit_factory``."""
    out: dict[tuple[str, int], Store] = {}
    for fmt in (2, 3):
        memory = MemoryStore()
        write_sample(memory, fmt)  # type: ignore[arg-type]
        out["memory", fmt] = memory
        local = LocalStore(tmp_path_factory.mktemp(f"template-v{fmt}") / "s.zarrvectors")
        write_sample(local, fmt)  # type: ignore[arg-type]
        out["local", fmt] = local
    return out


@pytest.fixture
def kit_factory(
    tmp_path: Path, templates: dict[tuple[str, int], Store]
) -> Callable[[StoreKind, Literal[2, 3]], Kit]:
    """Return a function giving a fresh, writable copy of the sample store."""

    def build(kind: StoreKind, fmt: Literal[2, 3]) -> Kit:
        template = templates["memory" if kind == "memory" else "local", fmt]
        if isinstance(template, MemoryStore):
            return Kit(MemoryStore(dict(template._store_dict)), fmt)
        assert isinstance(template, LocalStore)
        dest = tmp_path / "s.zarrvectors"
        shutil.copytree(template.root, dest)
        return Kit(LocalStore(dest), fmt)

    return build


@pytest.fixture
def zipped(tmp_path: Path) -> Callable[[Store], ZipStore]:
    """Return a function packing a LocalStore directory into a read-only ZipStore."""
    return lambda store: to_zip(store, tmp_path)


@pytest.fixture
def sample() -> Callable[..., None]:
    """Return :func:`write_sample`: write the standard point cloud into a store."""
    return write_sample
