"""Icechunk as a transactional backend: writes and edits in a session, snapshots, time travel.

Repositories on the local file system and on the moto S3 server (127.0.0.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore, StorePath

import zarr_vectors as zv
from _s3_server import moto_s3
from zarr_vectors.testing import assert_geometry_equal

icechunk = pytest.importorskip("icechunk")

CHUNKS = {"chunk_shape": (10, 10, 10), "bin_shape": (5, 5, 5)}


def _paths(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(0, 2, (15, 3)), axis=0) + 40 for _ in range(n)]


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    with moto_s3("zv-icechunk") as options:
        yield options


def _local_repo(tmp_path: Path) -> Any:
    return icechunk.Repository.create(icechunk.local_filesystem_storage(str(tmp_path / "repo")))


def _s3_repo(options: dict[str, Any], prefix: str) -> Any:
    storage = icechunk.s3_storage(
        bucket="zv-icechunk",
        prefix=prefix,
        region="us-east-1",
        endpoint_url=options["endpoint_url"],
        allow_http=True,
        force_path_style=True,
        access_key_id="test",
        secret_access_key="test",
    )
    return icechunk.Repository.create(storage)


def _edits(store: Any) -> None:
    """One of every kind of edit, in order (applied to the session and to a memory twin)."""
    zv.append_streamlines(store, _paths(1, 3), object_attributes={"q": np.arange(3.0)})
    zv.add_attribute(store, "w", np.arange(9, dtype=np.int16), kind="object")
    zv.delete_objects(store, [2, 7])
    zv.compact(store)


def _snapshots_and_time_travel(repo: Any) -> None:
    memory = MemoryStore()
    write = {"object_attributes": {"q": np.arange(6.0)}, **CHUNKS}
    with zv.icechunk_transaction(repo, message="six streamlines") as tx:
        zv.write_streamlines(tx.store, _paths(0, 6), **write)
        zv.build_pyramid(tx.store, [(2, 2, 2)])
    zv.write_streamlines(memory, _paths(0, 6), **write)
    zv.build_pyramid(memory, [(2, 2, 2)])
    first = tx.snapshot_id
    assert first is not None
    before = zv.read_polylines(memory)

    session = repo.writable_session("main")
    _edits(session.store)
    _edits(memory)
    # uncommitted: other sessions still see the first snapshot, the session its own edits
    assert_geometry_equal(zv.read_polylines(repo.readonly_session("main").store), before)
    assert_geometry_equal(zv.read_polylines(session.store), zv.read_polylines(memory))
    second = session.commit("append, attribute, delete, compact")

    head = repo.readonly_session("main").store
    for level in (0, 1):
        assert_geometry_equal(
            zv.read_polylines(head, level=level), zv.read_polylines(memory, level=level)
        )
    assert zv.read_polylines(head).object_ids.tolist() == [0, 1, 3, 4, 5, 6, 8]
    assert zv.validate(head, level=2).ok
    old = repo.readonly_session(snapshot_id=first).store
    assert_geometry_equal(zv.read_polylines(old), before)  # time travel
    assert zv.validate(old, level=2).ok
    assert [s.id for s in repo.ancestry(branch="main")][:2] == [second, first]


def test_local_repository_snapshots_and_time_travel(tmp_path: Path) -> None:
    _snapshots_and_time_travel(_local_repo(tmp_path))


@pytest.mark.slow
@pytest.mark.s3
def test_s3_repository_snapshots_and_time_travel(s3: dict[str, Any]) -> None:
    _snapshots_and_time_travel(_s3_repo(s3, "snapshots"))


def test_failed_block_commits_nothing(tmp_path: Path) -> None:
    repo = _local_repo(tmp_path)
    with zv.icechunk_transaction(repo) as tx:
        zv.write_points(tx.store, np.zeros((3, 3)), **CHUNKS)
    opened: list[Any] = []

    def append_then_fail() -> None:
        with zv.icechunk_transaction(repo) as tx2:
            opened.append(tx2)
            zv.append_points(tx2.store, np.ones((2, 3)))
            zv.append_points(tx2.store, np.ones((2, 2)))  # wrong dimensions: refused

    with pytest.raises(zv.InvalidInputError):
        append_then_fail()
    assert opened[0].snapshot_id is None
    assert len(zv.read_points(repo.readonly_session("main").store)) == 3
    assert next(s.id for s in repo.ancestry(branch="main")) == tx.snapshot_id


def test_conflicting_sessions_one_commit_wins(tmp_path: Path) -> None:
    repo = _local_repo(tmp_path)
    with zv.icechunk_transaction(repo) as tx:
        zv.write_points(tx.store, np.zeros((3, 3)), **CHUNKS)
    first = zv.icechunk_transaction(repo, message="first")
    second = zv.icechunk_transaction(repo, message="second")
    a, b = first.__enter__(), second.__enter__()
    zv.append_points(a.store, np.ones((2, 3)))
    zv.append_points(b.store, np.full((4, 3), 2.0))
    first.__exit__(None, None, None)
    with pytest.raises(zv.StoreLockedError, match="committed to branch 'main' first"):
        second.__exit__(None, None, None)
    got = zv.read_points(repo.readonly_session("main").store).positions
    assert sorted(got.tolist()) == [[0.0] * 3] * 3 + [[1.0] * 3] * 2


def test_stores_inside_a_session_and_streamed_appends(tmp_path: Path) -> None:
    repo = _local_repo(tmp_path)
    pts = np.random.default_rng(3).uniform(0, 30, (40, 3))
    with zv.icechunk_transaction(repo) as tx:
        cells = StorePath(tx.store, "scene/cells")
        tracts = StorePath(tx.store, "scene/tracts")
        zv.write_points(cells, pts, **CHUNKS)
        zv.write_streamlines(tracts, _paths(0, 4), **CHUNKS)
        zv.append_points(cells, pts[:5] + 1)
        with zv.open_writer(tracts, "streamline", mode="a") as w:
            w.append(_paths(8, 2))
            w.append(_paths(9, 1))
        zv.delete_objects(tracts, [0])
    head = repo.readonly_session("main").store
    got = zv.read_points(StorePath(head, "scene/cells")).positions
    assert sorted(got.tolist()) == sorted(np.concatenate([pts, pts[:5] + 1]).tolist())
    lines = zv.read_polylines(StorePath(head, "scene/tracts"))
    assert lines.object_ids.tolist() == [1, 2, 3, 4, 5, 6]
    expected = [*_paths(0, 4)[1:], *_paths(8, 2), *_paths(9, 1)]
    assert all(np.allclose(x, y) for x, y in zip(lines, expected, strict=True))


def test_read_only_session_refuses_edits(tmp_path: Path) -> None:
    repo = _local_repo(tmp_path)
    with zv.icechunk_transaction(repo) as tx:
        zv.write_points(tx.store, np.zeros((3, 3)), **CHUNKS)
    with pytest.raises(zv.ReadOnlyStoreError):
        zv.append_points(repo.readonly_session("main").store, np.ones((1, 3)))
