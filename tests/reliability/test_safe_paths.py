"""Writes stay where they may go (issue 25, item 3): read-only stores, overwrite targets,
rechunk source/destination overlap, symbolic links in and out of a store."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

import zarr_vectors as zv
from zarr_vectors.core.store import open_store
from zarr_vectors.errors import (
    CorruptPayloadError,
    InvalidInputError,
    ReadOnlyStoreError,
    StoreExistsError,
)
from zarr_vectors.formats.registry import convert

CHUNK = (25.0, 25.0, 25.0)


def _pts(seed: int = 0, n: int = 500) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 100, (n, 3)).astype(np.float32)


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "a.zarrvectors"
    zv.write_points(path, _pts(), chunk_shape=CHUNK, bin_shape=(12.5, 12.5, 12.5))
    return path


def test_read_only_local_store_refuses_overwrite(store: Path) -> None:
    before = _tree(store)
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        zv.write_points(
            LocalStore(store, read_only=True), _pts(1), chunk_shape=CHUNK, overwrite=True
        )
    assert _tree(store) == before


def test_group_opened_read_only_refuses_every_write(store: Path) -> None:
    before = _tree(store)
    root = open_store(store, mode="r")
    with pytest.raises(ReadOnlyStoreError):
        zv.write_points(root, _pts(1), chunk_shape=CHUNK, overwrite=True)
    with pytest.raises(ReadOnlyStoreError):
        zv.build_pyramid(LocalStore(store, read_only=True), [(2, 2, 2)])
    with pytest.raises(ReadOnlyStoreError):
        open_store(LocalStore(store, read_only=True), mode="r+")
    assert _tree(store) == before


def test_overwrite_refuses_a_directory_of_user_files(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    with pytest.raises(StoreExistsError, match="not a ZVF store"):
        zv.write_points(target, _pts(), chunk_shape=CHUNK, overwrite=True)
    assert (target / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_overwrite_refuses_a_plain_zarr_group_and_a_file(tmp_path: Path) -> None:
    plain = tmp_path / "plain.zarr"
    zarr.open_group(plain, mode="w").create_array("x", shape=(3,), dtype="i4")
    before = _tree(plain)
    with pytest.raises(StoreExistsError, match="not a ZVF store"):
        zv.write_points(plain, _pts(), chunk_shape=CHUNK, overwrite=True)
    assert _tree(plain) == before
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep")
    with pytest.raises(StoreExistsError):
        zv.write_points(a_file, _pts(), chunk_shape=CHUNK, overwrite=True)
    assert a_file.read_text() == "keep"


def test_overwrite_refuses_non_zvf_memory_store() -> None:
    mem = zarr.storage.MemoryStore()
    zarr.open_group(mem, mode="w").attrs["mine"] = 1
    before = dict(mem._store_dict)
    with pytest.raises(StoreExistsError, match="not a ZVF store"):
        zv.write_points(mem, _pts(), chunk_shape=CHUNK, overwrite=True)
    assert dict(mem._store_dict) == before


def test_overwrite_of_zvf_store_and_empty_directory_still_works(
    store: Path, tmp_path: Path
) -> None:
    zv.write_points(store, _pts(3), chunk_shape=CHUNK, overwrite=True)
    np.testing.assert_array_equal(
        np.sort(zv.read_points(store).positions, axis=0), np.sort(_pts(3), axis=0)
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    zv.write_points(empty, _pts(4), chunk_shape=CHUNK, overwrite=True)
    assert len(zv.read_points(empty).positions) == 500


@pytest.mark.parametrize(
    "dest",
    [
        lambda src: src.parent,  # the parent of the source (issue: deleted its own source)
        lambda src: src,
        lambda src: src / "0" / "..",
        lambda src: src / "copy.zarrvectors",  # a folder inside the source
        lambda src: src / "0" / "copy",
    ],
    ids=["parent", "same", "dotdot", "inside", "inside-level"],
)
def test_rechunk_refuses_overlapping_destination(store: Path, dest: object) -> None:
    assert callable(dest)
    before = _tree(store)
    with pytest.raises(InvalidInputError, match=r"overlap|differ"):
        zv.rechunk(str(store), str(dest(store)), chunk_shape=(50, 50, 50), overwrite=True)
    assert _tree(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["a.zarrvectors"]


def test_rechunk_refuses_a_symlink_to_the_source(store: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.zarrvectors"
    link.symlink_to(store)
    with pytest.raises(InvalidInputError, match="overlap"):
        zv.rechunk(store, link, chunk_shape=(50, 50, 50), overwrite=True)


def test_build_pyramid_does_not_write_through_a_symlinked_level(
    store: Path, tmp_path: Path
) -> None:
    zv.build_pyramid(store, [(2, 2, 2)])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep")
    os.rename(store / "1", outside / "level1")
    (store / "1").symlink_to(outside / "level1", target_is_directory=True)
    before = _tree(outside)
    zv.build_pyramid(store, [(2, 2, 2)], overwrite=True)
    assert _tree(outside) == before
    assert not (store / "1").is_symlink()
    assert zv.validate(store, level=5).ok


def test_symlinked_chunk_file_is_not_read_as_data(store: Path, tmp_path: Path) -> None:
    chunk = next(
        p
        for p in sorted((store / "0" / "vertices").rglob("*"))
        if p.is_file() and p.name != "zarr.json"
    )
    outside = tmp_path / "secret.bin"
    outside.write_bytes(chunk.read_bytes())  # even identical bytes: never followed
    chunk.unlink()
    chunk.symlink_to(outside)
    with pytest.raises(CorruptPayloadError, match="symbolic link"):
        zv.read_points(store)


def test_convert_refuses_a_source_inside_the_destination(store: Path) -> None:
    source = store / "points.csv"
    source.write_text("x,y,z\n1,2,3\n")
    with pytest.raises(InvalidInputError, match="overlap"):
        convert(source, store, overwrite=True)
    assert source.read_text() == "x,y,z\n1,2,3\n"


def test_writes_and_edits_refuse_a_read_only_store_with_one_error_class(store: Path) -> None:
    """``zv.ReadOnlyStoreError`` catches the writers' refusal and the editors' alike."""
    before = _tree(store)
    with pytest.raises(zv.ReadOnlyStoreError):
        zv.write_points(
            LocalStore(store, read_only=True), _pts(1), chunk_shape=CHUNK, overwrite=True
        )
    with pytest.raises(zv.ReadOnlyStoreError):
        zv.append_points(LocalStore(store, read_only=True), _pts(1))
    assert _tree(store) == before
