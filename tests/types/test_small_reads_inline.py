"""Small reads of a local store run on the calling thread: no pool, no waits on other threads.

On a loaded machine every handoff (work sent to a pool, a wait on a future or a contended lock)
puts the calling thread to sleep until the scheduler runs it again, which costs wall time the
read's CPU does not show.  One mesh or skeleton by id and a 1 % point box touch a few chunks,
so they must not hand off at all.  Observed without patching the library:

* ``threading.setprofile`` installs a hook every thread started through :mod:`threading` runs
  first, so any pool worker started during a read announces itself;
* ``getrusage(RUSAGE_THREAD).ru_nvcsw`` counts the calling thread's voluntary context switches:
  a handoff per read is at least one per read (the store's files were just written, so their
  reads come from the page cache and do not sleep).

Every read is also compared with its input (round trip exact, order included).
"""

from __future__ import annotations

import resource
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import zarr_vectors as zv

AnyArray = npt.NDArray[Any]
N_READS = 20

pytestmark = pytest.mark.skipif(
    not hasattr(resource, "RUSAGE_THREAD"), reason="per-thread rusage is Linux-only"
)


@contextmanager
def observed_threads() -> Iterator[tuple[list[int], list[int]]]:
    """Yield (idents of threads started inside, voluntary switches of this thread: [before, after])."""
    started: list[int] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        started.append(threading.get_ident())
        sys.setprofile(None)  # seen once is enough: leave the worker unprofiled

    switches = [resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw]
    threading.setprofile(hook)
    try:
        yield started, switches
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
        switches.append(resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw)


def assert_inline(reads: list[Callable[[], None]]) -> None:
    """Run ``reads`` (each checks its own result): no thread starts, far fewer waits than reads."""
    reads[0]()  # the first read loads the level's metadata and dense arrays
    with observed_threads() as (started, switches):
        for read in reads:
            read()
    assert started == [], f"{len(started)} threads started by {len(reads)} small reads"
    waits = switches[1] - switches[0]
    assert waits < len(reads) // 2, f"{waits} voluntary context switches in {len(reads)} reads"


def cube_meshes(n: int, rng: np.random.Generator) -> tuple[AnyArray, AnyArray, AnyArray]:
    """``n`` cubes of side 3 (8 vertices, 12 faces) at random places, many across chunks."""
    corners = np.array([[x, y, z] for x in (0, 3) for y in (0, 3) for z in (0, 3)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int64)
    origins = rng.uniform(0, 37, (n, 1, 3))
    vertices = (origins + corners[None]).reshape(-1, 3)
    all_faces = (faces[None] + 8 * np.arange(n)[:, None, None]).reshape(-1, 3)
    return vertices, all_faces, np.repeat(np.arange(n), 8)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_one_mesh_by_id_reads_inline(tmp_path: Path, zarr_format: int) -> None:
    rng = np.random.default_rng(1)
    vertices, faces, owner = cube_meshes(60, rng)
    path = str(tmp_path / "meshes.zarr")
    zv.write_meshes(
        path,
        vertices,
        faces,
        vertex_object_ids=owner,
        chunk_shape=(10.0, 10.0, 10.0),
        zarr_format=zarr_format,
    )
    reader = zv.open(path)

    def read(q: int) -> None:
        got = reader.read(object_ids=[q])
        assert got.object_ids.tolist() == [q]
        np.testing.assert_array_equal(got.vertices, vertices[8 * q : 8 * q + 8])
        want = {tuple(f) for f in (faces[12 * q : 12 * q + 12] - 8 * q).tolist()}
        assert {tuple(f) for f in got.faces.tolist()} == want
        assert len(got.faces) == 12

    ids = rng.choice(60, N_READS, replace=False)
    assert_inline([lambda q=int(q): read(q) for q in ids])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_one_skeleton_by_id_reads_inline(tmp_path: Path, zarr_format: int) -> None:
    rng = np.random.default_rng(2)
    n, k = 40, 50
    positions = np.cumsum(rng.normal(0, 2, (n * k, 3)), axis=0) % 100
    parents = np.arange(-1, n * k - 1)
    parents[::k] = -1
    path = str(tmp_path / "skeletons.zarr")
    zv.write_skeletons(
        path,
        positions,
        parents,
        offsets=np.arange(0, n * k + 1, k),
        chunk_shape=(25.0, 25.0, 25.0),
        zarr_format=zarr_format,
    )
    reader = zv.open(path)

    def read(q: int) -> None:
        got = reader.read(object_ids=[q])
        assert got.object_ids.tolist() == [q]
        np.testing.assert_array_equal(got.positions, positions[q * k : (q + 1) * k])
        assert np.asarray(got.parents).tolist() == list(range(-1, k - 1))

    ids = rng.choice(n, N_READS, replace=False)
    assert_inline([lambda q=int(q): read(q) for q in ids])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_one_percent_point_box_reads_inline(tmp_path: Path, zarr_format: int) -> None:
    rng = np.random.default_rng(3)
    positions = rng.uniform(0, 100, (20_000, 3))
    path = str(tmp_path / "points.zarr")
    zv.write_points(
        path,
        positions,
        chunk_shape=(25.0, 25.0, 25.0),
        bin_shape=(5.0, 5.0, 5.0),
        attributes={"pid": np.arange(len(positions))},
        zarr_format=zarr_format,
    )
    reader = zv.open(path)
    side = 100 * 0.01 ** (1 / 3)  # 1 % of the volume

    def read(lo: AnyArray) -> None:
        hi = lo + side
        got = reader.read(bbox=(lo, hi))
        want = np.flatnonzero(((positions >= lo) & (positions < hi)).all(axis=1))
        pid = np.asarray(got.attributes["pid"])
        assert sorted(pid.tolist()) == want.tolist()
        np.testing.assert_array_equal(got.positions, positions[pid])

    corners = rng.uniform(0, 100 - side, (N_READS, 3))
    assert_inline([lambda lo=lo: read(lo) for lo in corners])
