"""A full read of a mesh level (no box, no ids) takes its own path: the manifest refs give the
rows in result order and every stored face is remapped chunk by chunk.  It must agree exactly
with the general query path and with the in-memory oracle :func:`as_meshes`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

from zarr_vectors.core.links.faces import gather_faces, level_faces, sorted_faces
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.select import Query
from zarr_vectors.core.store import open_store
from zarr_vectors.spec.metadata import BoundingBox
from zarr_vectors.types.meshes import Meshes, as_meshes, read_meshes, write_meshes

AnyArray = npt.NDArray[Any]
PROPERTY = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def meshes_crossing_chunks(draw: st.DrawFn) -> list[tuple[AnyArray, AnyArray]]:
    """0-5 meshes of 0-12 vertices random-walking over unit chunks, faces of any winding."""
    out = []
    spread = draw(st.sampled_from([0.05, 0.4]))  # faces mostly inside or across chunks
    for _ in range(draw(st.integers(0, 5))):
        n = draw(st.integers(0, 12))
        steps = draw(st.lists(st.integers(-5, 5), min_size=3 * n, max_size=3 * n))
        walk = np.cumsum(np.array(steps, dtype=np.float64).reshape(n, 3) * spread, axis=0)
        idx = st.integers(0, max(n - 1, 0))
        tri = st.tuples(idx, idx, idx).filter(lambda t: len(set(t)) == 3)
        faces = draw(st.lists(tri, max_size=14)) if n >= 3 else []  # duplicates allowed
        out.append((walk, np.array(faces, dtype=np.int64).reshape(-1, 3)))
    return out


def assert_same(a: Meshes, b: Meshes) -> None:
    """Exactly equal results: order, dtypes, winding and attributes."""
    for name in ("vertices", "faces", "offsets", "face_offsets", "object_ids"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.attributes.keys() == b.attributes.keys()
    for k in a.attributes:
        np.testing.assert_array_equal(a.attributes[k], b.attributes[k])
    assert a.face_attributes.keys() == b.face_attributes.keys()
    for k in a.face_attributes:
        np.testing.assert_array_equal(a.face_attributes[k], b.face_attributes[k])


def write(
    store: Any, meshes: list[tuple[AnyArray, AnyArray]], ids: Sequence[int], chunk: float
) -> None:
    """Write with per-vertex and per-face provenance attributes."""
    write_meshes(
        store,
        meshes,
        chunk_shape=(chunk, chunk, chunk),
        object_ids=np.asarray(ids, dtype=np.int64),
        attributes={"vid": [np.arange(len(v)) * 10 + i for i, (v, _) in enumerate(meshes)]},
        face_attributes={"fid": [np.arange(len(f)) * 10 + i for i, (_, f) in enumerate(meshes)]},
    )


@PROPERTY
@given(meshes=meshes_crossing_chunks(), data=st.data())
def test_full_read_matches_the_oracle_and_the_general_path(
    meshes: list[tuple[AnyArray, AnyArray]], data: st.DataObject
) -> None:
    ids = data.draw(st.permutations(range(100, 100 + len(meshes))))  # objects out of id order
    chunk = data.draw(st.sampled_from([0.5, 1.0, 3.0]))
    if not any(len(v) for v, _ in meshes):
        return  # a store needs a vertex (covered by the empty-store test)
    store = MemoryStore()
    write(store, meshes, ids, chunk)
    vid = [np.arange(len(v)) * 10 + i for i, (v, _) in enumerate(meshes)]
    fid = [np.arange(len(f)) * 10 + i for i, (_, f) in enumerate(meshes)]
    oracle = as_meshes(
        meshes, object_ids=ids, attributes={"vid": vid}, face_attributes={"fid": fid}
    )
    assert_same(read_meshes(store), oracle)

    reader = LevelReader(open_store(store, mode="r"), 0)
    fast = level_faces(reader, ("vid",), ("fid",))
    assert fast is not None
    lo = np.concatenate([v for v, _ in meshes]).min(axis=0) - 1
    hi = np.concatenate([v for v, _ in meshes]).max(axis=0) + 1
    box = BoundingBox(min=tuple(lo.tolist()), max=tuple(hi.tolist()))
    general = gather_faces(reader, Query(bbox=box, attributes=("vid",)), ("fid",), False)
    # the box drops objects without vertices; the rows, faces and attributes are the same
    np.testing.assert_array_equal(fast.positions, general.positions)
    np.testing.assert_array_equal(fast.objects[fast.objpos], general.objects[general.objpos])
    np.testing.assert_array_equal(fast.faces, general.faces)
    np.testing.assert_array_equal(fast.attributes["vid"].values, general.attributes["vid"].values)
    np.testing.assert_array_equal(
        fast.face_attributes["fid"].values, general.face_attributes["fid"].values
    )


@PROPERTY
@given(
    faces=st.lists(st.tuples(*[st.integers(0, 40)] * 3), max_size=60),
    with_order=st.booleans(),
)
def test_sorted_faces_is_a_stable_lexicographic_sort(
    faces: list[tuple[int, int, int]], with_order: bool
) -> None:
    f = np.array(faces, dtype=np.int64).reshape(-1, 3)
    want = np.lexsort((f[:, 2], f[:, 1], f[:, 0])) if len(f) else np.zeros(0, dtype=np.int64)
    got, order = sorted_faces(f, 41, with_order)
    np.testing.assert_array_equal(got, f[want])
    if with_order:
        assert order is not None
        np.testing.assert_array_equal(order, want)  # ties (duplicate faces) keep input order


def test_sorted_faces_beyond_packed_keys_sorts_by_columns() -> None:
    f = np.array([[3, 2**22, 1], [3, 5, 2**22 - 7], [0, 2**22 + 1, 9]], dtype=np.int64)
    got, order = sorted_faces(f, 2**22 + 2, True)  # 3 * 23 bits: no packed key
    assert got.tolist() == f[[2, 1, 0]].tolist()
    assert order is not None
    assert order.tolist() == [2, 1, 0]


def test_a_manifest_disagreeing_with_the_fragments_takes_the_general_path() -> None:
    """Manifest refs swapped between two objects: the fast path declines, and the full read
    returns the meshes the fragments hold, in order."""
    tri = np.array([[0, 1, 2]])
    a = np.array([[0.1, 0.1, 0.1], [0.2, 0.1, 0.1], [0.1, 0.2, 0.1]])
    b = a + np.array([2.0, 0.0, 0.0])
    store = MemoryStore()
    write_meshes(store, [(a, tri), (b, tri)], chunk_shape=(1.0, 1.0, 1.0))
    expected = read_meshes(store)
    manifest = zarr.open_group(store, mode="r+")["0/object_index/manifest"]
    rows = np.asarray(manifest[...])
    assert rows[0, 0] != rows[1, 0]  # one ref each, in different chunks
    manifest[...] = rows[[1, 0]]

    assert level_faces(LevelReader(open_store(store, mode="r"), 0), (), ()) is None
    assert_same(read_meshes(store), expected)
    np.testing.assert_array_equal(read_meshes(store).vertices, np.concatenate([a, b]))
