"""Mesh stores against brute force: round trips, box/object/group reads, errors, Draco.

Expectations come from the input with plain Python/numpy: objects by a Python union-find
(numbered by first vertex), each object's vertices in input order, faces as a set per object
sorted by ``(v0, v1, v2)`` (the documented order), half-open boxes (FORMAT.md §2) and "faces
whose three vertices are returned" (§7).  Writes carry ``vid``/``fid`` attributes (input
indices), so every returned row maps back to the input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any
from unittest import mock

import numpy as np
import numpy.typing as npt
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core import draco as zv_draco
from zarr_vectors.core.payload import store_io as zv_store_io
from zarr_vectors.core.writer import StoreOptions, write_store
from zarr_vectors.errors import GeometryError, InvalidInputError, MissingDependencyError
from zarr_vectors.spec.conventions import WindingOrder
from zarr_vectors.types import _mesh_input as mesh_input
from zarr_vectors.types._base import get_geometry_type
from zarr_vectors.types.meshes import (
    Mesh,
    Meshes,
    MeshType,
    as_meshes,
    connected_components,
    read_meshes,
    write_meshes,
)

AnyArray = npt.NDArray[Any]
FAST = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CHUNKS = ((1.0, 1.0, 1.0), (0.5, 2.0, 1.0), (1.0, 0.5))
HAS_DRACO = zv_draco._dracopy is not None
HAS_HOOK = "draco" in {f.name for f in dataclasses.fields(StoreOptions)}
needs_draco = pytest.mark.skipif(
    not (HAS_DRACO and HAS_HOOK),
    reason="needs DracoPy (the 'draco' extra) and the core StoreOptions.draco hook",
)


# -- oracles ---------------------------------------------------------------------------------


def union_find(n: int, faces: AnyArray) -> AnyArray:
    """Component of each vertex, numbered by first vertex (plain Python)."""
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for f in faces.tolist():
        for a, b in ((f[0], f[1]), (f[1], f[2])):
            ra, rb = find(a), find(b)
            parent[max(ra, rb)] = min(ra, rb)
    roots = [find(i) for i in range(n)]
    number = {r: i for i, r in enumerate(sorted(set(roots)))}
    return np.array([number[r] for r in roots], dtype=np.int64)


def sorted_faces(faces: AnyArray) -> AnyArray:
    """Row order of faces sorted by (v0, v1, v2)."""
    return np.lexsort((faces[:, 2], faces[:, 1], faces[:, 0])) if len(faces) else np.zeros(0, int)


def expected_objects(
    vertices: AnyArray, faces: AnyArray, objects: AnyArray, keep: AnyArray, boundary: bool = False
) -> tuple[list[AnyArray], list[AnyArray]]:
    """Per object with returned vertices: input vertex indices, input face indices (sorted)."""
    fkeep = keep[faces].any(axis=1) if boundary else keep[faces].all(axis=1)
    returned = keep.copy()
    returned[faces[fkeep].ravel()] = True
    verts, face_sets = [], []
    for o in sorted(set(objects[returned].tolist())):
        vids = np.flatnonzero(returned & (objects == o))
        local = np.full(len(vertices), -1)
        local[vids] = np.arange(len(vids))
        fids = np.flatnonzero(fkeep & (objects[faces[:, 0]] == o))
        fids = fids[sorted_faces(local[faces[fids]])]
        verts.append(vids)
        face_sets.append(fids)
    return verts, face_sets


def check_result(
    m: Meshes, vertices: AnyArray, faces: AnyArray, verts: list[AnyArray], fsets: list[AnyArray]
) -> None:
    """``m`` holds exactly the given objects (input indices), in order, faces mapped."""
    assert len(m) == len(verts)
    for i, (vids, fids) in enumerate(zip(verts, fsets, strict=True)):
        mesh = m[i]
        assert mesh.attributes["vid"].tolist() == vids.tolist(), f"object {i} vertices"
        np.testing.assert_array_equal(mesh.vertices, vertices[vids])
        assert mesh.face_attributes["fid"].tolist() == fids.tolist(), f"object {i} faces"
        local = np.full(len(vertices), -1)
        local[vids] = np.arange(len(vids))
        np.testing.assert_array_equal(mesh.faces, local[faces[fids]].reshape(-1, 3))
    assert m.offsets.tolist() == np.cumsum([0] + [len(v) for v in verts]).tolist()
    assert m.face_offsets.tolist() == np.cumsum([0] + [len(f) for f in fsets]).tolist()
    assert m.vertex_object_ids.tolist() == np.repeat(m.object_ids, np.diff(m.offsets)).tolist()


# -- strategies ------------------------------------------------------------------------------


@st.composite
def mesh_lists(draw: st.DrawFn, chunk_shape: Sequence[float]) -> list[tuple[AnyArray, AnyArray]]:
    """1-4 meshes; vertices random-walk across chunks (steps up to 1.5 chunks)."""
    d = len(chunk_shape)
    out = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 9))
        start = np.array(draw(st.lists(st.integers(-8, 8), min_size=d, max_size=d)), float)
        steps = np.array(
            draw(st.lists(st.integers(-6, 6), min_size=d * (n - 1), max_size=d * (n - 1))),
            dtype=np.float64,
        ).reshape(n - 1, d)
        walk = np.concatenate([start[None], start + np.cumsum(steps * 0.25, axis=0)])
        walk *= np.asarray(chunk_shape)
        idx = st.integers(0, n - 1)
        tri = st.tuples(idx, idx, idx).filter(lambda t: len(set(t)) == 3)
        faces = draw(st.lists(tri, max_size=10, unique=True)) if n >= 3 else []
        out.append((walk, np.array(faces, dtype=np.int64).reshape(-1, 3)))
    return out


def flatten(meshes: list[tuple[AnyArray, AnyArray]]) -> tuple[AnyArray, AnyArray, AnyArray]:
    """Concatenate meshes: vertices, global faces, mesh index of each vertex."""
    counts = [len(v) for v, _ in meshes]
    base = np.concatenate([[0], np.cumsum(counts)[:-1]])
    verts = np.concatenate([v for v, _ in meshes])
    faces = np.concatenate([f + b for (_, f), b in zip(meshes, base, strict=True)])
    return verts, faces.reshape(-1, 3).astype(np.int64), np.repeat(np.arange(len(meshes)), counts)


def write(
    store: Any, vertices: AnyArray, faces: AnyArray, chunk: Sequence[float], **kw: Any
) -> zv.WriteSummary:
    """Write with ``vid``/``fid`` provenance attributes."""
    return write_meshes(
        store,
        vertices,
        faces,
        chunk_shape=chunk,
        attributes={"vid": np.arange(len(vertices))},
        face_attributes={"fid": np.arange(len(faces))},
        **kw,
    )


# -- round trips -----------------------------------------------------------------------------


@pytest.mark.slow
@FAST
@given(data=st.data(), chunk=st.sampled_from(CHUNKS), zarr_format=st.sampled_from([2, 3]))
def test_list_round_trip_is_exact(
    data: st.DataObject, chunk: Sequence[float], zarr_format: int
) -> None:
    meshes = data.draw(mesh_lists(chunk))
    verts, faces, owner = flatten(meshes)
    store = MemoryStore()
    weight = np.arange(len(meshes), dtype=np.float32) / 2
    ids = np.array([10, 7, 99, 3], dtype=np.uint64)[: len(meshes)]
    write_meshes(
        store,
        meshes,
        chunk_shape=chunk,
        object_ids=ids,
        zarr_format=zarr_format,  # type: ignore[arg-type]
        attributes={
            "vid": [
                np.arange(len(v)) + int(np.flatnonzero(owner == i)[0])
                for i, (v, _) in enumerate(meshes)
            ]
        },
        face_attributes={"fid": np.arange(len(faces))},
        object_attributes={"weight": weight},
    )
    m = read_meshes(store)
    fsets = [np.flatnonzero(owner[faces[:, 0]] == i) for i in range(len(meshes))]
    fsets = [f[sorted_faces(faces[f])] for f in fsets]
    check_result(m, verts, faces, [np.flatnonzero(owner == i) for i in range(len(meshes))], fsets)
    assert m.object_ids.tolist() == ids.tolist()
    assert m.vertex_object_ids.tolist() == ids[owner].tolist()
    np.testing.assert_array_equal(m.object_attributes["weight"], weight)
    assert m.vertices.dtype == np.float64
    assert m.faces.dtype == np.int64


@pytest.mark.slow
@FAST
@given(data=st.data(), chunk=st.sampled_from(CHUNKS))
def test_computed_surfaces_match_union_find(data: st.DataObject, chunk: Sequence[float]) -> None:
    verts, faces, _ = flatten(data.draw(mesh_lists(chunk)))
    perm = np.array(data.draw(st.permutations(range(len(verts)))), dtype=np.int64)
    inv = np.argsort(perm)
    verts, faces = verts[perm], inv[faces]  # interleave the objects' vertices
    store = MemoryStore()
    write(store, verts, faces, chunk)
    objects = union_find(len(verts), faces)
    check_result(
        read_meshes(store),
        verts,
        faces,
        *expected_objects(verts, faces, objects, np.ones(len(verts), bool)),
    )
    labels, n = connected_components(len(verts), faces)
    assert labels.tolist() == objects.tolist()
    assert n == objects.max() + 1


@pytest.mark.slow
@FAST
@given(data=st.data(), chunk=st.sampled_from(CHUNKS), boundary=st.booleans())
def test_bbox_matches_brute_force(
    data: st.DataObject, chunk: Sequence[float], boundary: bool
) -> None:
    verts, faces, _ = flatten(data.draw(mesh_lists(chunk)))
    d = len(chunk)
    lo = np.array(data.draw(st.lists(st.integers(-10, 8), min_size=d, max_size=d))) * 0.25
    hi = lo + np.array(data.draw(st.lists(st.integers(0, 12), min_size=d, max_size=d))) * 0.25
    lo, hi = lo * np.asarray(chunk), hi * np.asarray(chunk)
    store = MemoryStore()
    write(store, verts, faces, chunk)
    keep = np.all((verts >= lo) & (verts < hi), axis=1)
    got = read_meshes(store, bbox=(lo, hi), include_boundary_faces=boundary)
    objects = union_find(len(verts), faces)
    check_result(got, verts, faces, *expected_objects(verts, faces, objects, keep, boundary))


@pytest.mark.slow
@FAST
@given(data=st.data(), chunk=st.sampled_from(CHUNKS))
def test_object_reads_match_brute_force(data: st.DataObject, chunk: Sequence[float]) -> None:
    """Objects by id (any order, repeats) from interleaved rows: the object index path."""
    verts, faces, _ = flatten(data.draw(mesh_lists(chunk)))
    perm = np.array(data.draw(st.permutations(range(len(verts)))), dtype=np.int64)
    verts, faces = verts[perm], np.argsort(perm)[faces]  # objects' rows interleave in chunks
    store = MemoryStore()
    write(store, verts, faces, chunk)
    objects = union_find(len(verts), faces)
    n = int(objects.max()) + 1
    asked = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6))
    order = list(dict.fromkeys(asked))  # requested order, repeats read once
    every, fsets = expected_objects(verts, faces, objects, np.ones(len(verts), bool))
    got = read_meshes(store, object_ids=asked)
    assert got.object_ids.tolist() == order
    check_result(got, verts, faces, [every[o] for o in order], [fsets[o] for o in order])
    assert len(read_meshes(store, object_ids=[])) == 0
    with zv.open(store) as reader:  # an open Reader answers the same, call after call
        for o in order:
            one = reader.read(object_ids=[o])
            check_result(one, verts, faces, [every[o]], [fsets[o]])


def test_store_kinds_round_trip(store: Any, store_factory: Any) -> None:
    rng = np.random.default_rng(1)
    verts = rng.random((60, 3)) * 4
    faces = rng.integers(0, 60, (80, 3))
    write(store, verts, faces, (1.0, 1.0, 1.0))
    got = read_meshes(store_factory.for_reading(store))
    objects = union_find(60, faces)
    check_result(got, verts, faces, *expected_objects(verts, faces, objects, np.ones(60, bool)))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_tiny_meshes_in_one_bin_and_a_mesh_larger_than_the_grid(zarr_format: int) -> None:
    tiny = [
        (np.array([[1.0, 1, 1], [1.01, 1, 1], [1, 1.01, 1]]) + k * 0.02, np.array([[0, 1, 2]]))
        for k in range(3)
    ]
    sphere_v = np.array(
        [[0, 0, -50.0], [50, 0, 0], [0, 50, 0], [-50, 0, 0], [0, -50, 0], [0, 0, 50]]
    )
    sphere_f = np.array(
        [[0, 2, 1], [0, 3, 2], [0, 4, 3], [0, 1, 4], [5, 1, 2], [5, 2, 3], [5, 3, 4], [5, 4, 1]]
    )
    meshes = [*tiny, (sphere_v, sphere_f)]
    store = MemoryStore()
    summary = write_meshes(
        store,
        meshes,
        chunk_shape=(10, 10, 10),
        bin_shape=(5, 5, 5),
        bounds=([0, 0, 0], [10, 10, 10]),
        zarr_format=zarr_format,
        closed_surface=False,
    )
    assert summary.chunk_grid.shape == (11, 11, 11)
    verts, _faces, owner = flatten(meshes)
    m = read_meshes(store)
    np.testing.assert_array_equal(m.vertices, verts)
    assert m.vertex_object_ids.tolist() == owner.tolist()
    np.testing.assert_array_equal(m[3].faces, sphere_f[sorted_faces(sphere_f)])
    assert zarr.open_group(store, mode="r").metadata.zarr_format == zarr_format
    one = read_meshes(store, bbox=([0.9, 0.9, 0.9], [1.2, 1.2, 1.2]))
    assert one.object_ids.tolist() == [0, 1, 2]
    assert len(one.faces) == 3


def test_degenerate_and_duplicate_faces_are_kept() -> None:
    verts = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5]])
    faces = np.array([[0, 1, 1], [0, 1, 2], [0, 1, 2], [3, 3, 3]])
    store = MemoryStore()
    write(store, verts, faces, (0.5, 0.5, 0.5))
    m = read_meshes(store)
    assert m.faces.tolist() == [[0, 1, 1], [0, 1, 2], [0, 1, 2], [3, 3, 3]]
    assert sorted(m.face_attributes["fid"].tolist()[1:3]) == [1, 2]
    assert m.vertex_object_ids.tolist() == [0, 0, 0, 1]


def test_empty_store_and_vertices_without_faces() -> None:
    store = MemoryStore()
    write_meshes(store, np.zeros((0, 3)), np.zeros((0, 3), dtype=int), chunk_shape=(1, 1, 1))
    m = read_meshes(store)
    assert len(m) == 0
    assert m.vertices.shape == (0, 3)
    assert m.faces.shape == (0, 3)
    store = MemoryStore()
    write_meshes(store, np.eye(3), np.zeros((0, 3), dtype=int), chunk_shape=(1, 1, 1))
    assert len(read_meshes(store)) == 3  # an isolated vertex is an object of its own


# -- object, group and generic reads ---------------------------------------------------------


@pytest.fixture
def grid_store() -> tuple[MemoryStore, list[tuple[AnyArray, AnyArray]]]:
    """Six strips of 20 triangles, each crossing many chunks, with user ids and groups."""
    meshes = []
    for k in range(6):
        x = np.arange(11, dtype=float)
        top = np.stack([x, np.full(11, 3.0 * k), np.zeros(11)], axis=1)
        bottom = top + np.array([0.5, 1.0, 0.5])
        v = np.concatenate([top, bottom])
        f = np.concatenate([[[i, i + 11, i + 1], [i + 1, i + 11, i + 12]] for i in range(10)])
        meshes.append((v, f))
    store = MemoryStore()
    write_meshes(
        store,
        meshes,
        chunk_shape=(2.0, 2.0, 2.0),
        object_ids=[60, 50, 40, 30, 20, 10],
        groups={"even": [60, 40, 20]},
        group_attributes={"score": [1.5]},
        face_attributes={"area": [np.full(20, k, dtype=np.float32) for k in range(6)]},
        winding_order="cw",
        closed_surface=False,
    )
    return store, meshes


def test_object_and_group_reads(grid_store: Any) -> None:
    store, meshes = grid_store
    m = read_meshes(store, object_ids=[20, 50, 20])
    assert m.object_ids.tolist() == [20, 50]  # requested order, repeats read once
    for i, k in enumerate([4, 1]):
        np.testing.assert_array_equal(m[i].vertices, meshes[k][0])
        f = meshes[k][1]
        np.testing.assert_array_equal(m[i].faces, f[sorted_faces(f)])
        assert m[i].face_attributes["area"].tolist() == [k] * 20
    g = read_meshes(store, group="even", face_attributes=False, attributes=False)
    assert g.object_ids.tolist() == [60, 40, 20]
    assert g.groups["even"].tolist() == [60, 40, 20]
    assert g.group_attributes["score"].tolist() == [1.5]
    assert g.face_attributes == {}
    assert m.winding_order is WindingOrder.CW
    assert m[0].winding_order is WindingOrder.CW
    root = zv.open_store(store)
    assert root.attrs["winding_order"] == "cw"
    assert root.attrs["closed_surface"] is False


def test_one_object_read_touches_only_its_chunks(grid_store: Any) -> None:
    store, meshes = grid_store
    seen: list[str] = []
    original = zv_store_io.get_many

    def spy(s: Any, keys: Sequence[str], *rest: Any) -> Any:
        seen.extend(k for k in keys if "/object_index/" not in k and "/vertex_counts/" not in k)
        seen[:] = [k for k in seen if "/groupings" not in k and "/object_attributes/" not in k]
        return original(s, keys, *rest)

    with mock.patch.object(zv_store_io, "get_many", spy):
        read_meshes(store, object_ids=[30])
    chunks = {tuple(c) for c in np.floor(meshes[3][0] / 2.0).astype(int).tolist()}
    origin = np.asarray(zv.open_store(store).attrs["chunk_grid"]["origin"])  # type: ignore[index,call-overload]
    touched = set()
    for key in seen:
        parts = key.split("/")
        coords = parts[-3:] if "c" in parts else parts[-1].split(".")
        touched.add(tuple(int(c) for c in np.asarray(coords, dtype=int) + origin))
    assert touched == chunks
    vertex_keys = [k for k in seen if "/vertices/" in k]
    assert len(vertex_keys) == len(set(vertex_keys)) == len(chunks)


def test_generic_reader_dispatches_to_meshes(grid_store: Any) -> None:
    store, _ = grid_store
    assert get_geometry_type("mesh") is MeshType
    with zv.open(store) as r:
        got = r.read(bbox=([0, 0, 0], [4, 4, 4]))
    assert isinstance(got, Meshes)
    assert got.object_ids.tolist() == [60, 50]


def test_meshes_result_rewrites_to_an_equal_store(grid_store: Any) -> None:
    store, _ = grid_store
    first = read_meshes(store)
    copy = MemoryStore()
    write_meshes(copy, first, chunk_shape=(3.0, 3.0, 3.0), winding_order="cw")
    again = read_meshes(copy)
    # user ids are re-numbered densely in ascending id order
    order = np.argsort(first.object_ids)
    assert again.object_ids.tolist() == first.object_ids[order].tolist()
    for i, j in enumerate(order):
        a, b = again[i], first[int(j)]
        np.testing.assert_array_equal(a.vertices, b.vertices)
        np.testing.assert_array_equal(a.faces, b.faces)
        np.testing.assert_array_equal(a.face_attributes["area"], b.face_attributes["area"])
    assert again.groups["even"].tolist() == [60, 40, 20]


def test_mesh_item_access() -> None:
    m = as_meshes(
        [(np.eye(3), [[0, 1, 2]]), (np.eye(3) + 5, [[2, 1, 0]])],
        object_attributes={"w": [1.0, 2.0]},
    )
    assert isinstance(m[-1], Mesh)
    assert m[-1].object_attributes == {"w": 2.0}
    assert [x.object_id for x in m] == [0, 1]
    with pytest.raises(IndexError):
        m[2]


# -- errors ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExpectFail:
    vertices: Any
    faces: Any
    error: type[Exception]
    match: str
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)


TRI = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]])
BAD = {
    "index out of range": ExpectFail(
        TRI,
        [[0, 1, 2], [1, 2, 4]],
        GeometryError,
        r"face 1 = \[1, 2, 4\] refers to a vertex outside 0..3",
    ),
    "negative index": ExpectFail(TRI, [[0, -1, 2]], GeometryError, "face 0"),
    "quads": ExpectFail(TRI, [[0, 1, 2, 3]], GeometryError, "face 0 has 4 vertices"),
    "mixed polygons": ExpectFail(
        TRI, [[0, 1, 2], [0, 1, 2, 3]], GeometryError, "face 1 has 4 vertices"
    ),
    "float faces": ExpectFail(TRI, [[0.0, 1.0, 2.0]], InvalidInputError, "integer"),
    "nan vertex": ExpectFail(
        np.where(np.arange(12).reshape(4, 3) == 7, np.nan, TRI),
        [[0, 1, 2]],
        InvalidInputError,
        "row 2",
    ),
    "face joins objects": ExpectFail(
        TRI,
        [[0, 1, 2], [1, 2, 3]],
        GeometryError,
        r"face 1 = \[1, 2, 3\] joins vertices of objects",
        {"vertex_object_ids": [5, 5, 5, 6]},
    ),
    "object ids length": ExpectFail(
        TRI, [[0, 1, 2]], InvalidInputError, "one entry per vertex", {"vertex_object_ids": [1, 2]}
    ),
    "reserved id": ExpectFail(
        TRI, [[0, 1, 2]], InvalidInputError, "reserved", {"object_attributes": {"id": [1, 2]}}
    ),
    "face attribute length": ExpectFail(
        TRI, [[0, 1, 2]], InvalidInputError, "fid", {"face_attributes": {"fid": [1, 2]}}
    ),
    "winding": ExpectFail(
        TRI, [[0, 1, 2]], InvalidInputError, "winding_order", {"winding_order": "up"}
    ),
    "encoding": ExpectFail(TRI, [[0, 1, 2]], InvalidInputError, "encoding", {"encoding": "zip"}),
    "no faces": ExpectFail(TRI, None, InvalidInputError, "faces are required"),
}


@pytest.mark.parametrize("case", BAD.values(), ids=list(BAD))
def test_bad_input_is_rejected_before_writing(case: ExpectFail) -> None:
    store = MemoryStore()
    with pytest.raises(case.error, match=case.match):
        write_meshes(store, case.vertices, case.faces, chunk_shape=(1, 1, 1), **case.kwargs)
    assert not store._store_dict  # nothing written


def test_list_input_errors_name_the_mesh() -> None:
    with pytest.raises(GeometryError, match="mesh 1 faces: face 0"):
        write_meshes(
            MemoryStore(), [(TRI, [[0, 1, 2]]), (TRI[:2], [[0, 1, 2]])], chunk_shape=(1, 1, 1)
        )
    with pytest.raises(InvalidInputError, match="mixed dimensions"):
        as_meshes([(TRI, [[0, 1, 2]]), (TRI[:, :2], [[0, 1, 2]])])
    with pytest.raises(InvalidInputError, match="carries its own"):
        as_meshes(as_meshes(TRI, [[0, 1, 2]]), [[0, 1, 2]])


def test_read_errors(grid_store: Any) -> None:
    store, _ = grid_store
    with pytest.raises(InvalidInputError, match="not in the store"):
        read_meshes(store, object_ids=[1])
    with pytest.raises(InvalidInputError, match="unknown attribute"):
        read_meshes(store, face_attributes=["nope"])
    points = MemoryStore()
    zv.write_points(points, np.eye(3), chunk_shape=(1, 1, 1))
    with pytest.raises(InvalidInputError, match="read_meshes needs 'mesh'"):
        read_meshes(points)


# -- Draco -----------------------------------------------------------------------------------


@needs_draco
@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("bits", [8, 14, 20])
def test_draco_keeps_order_faces_and_attributes(zarr_format: int, bits: int) -> None:
    rng = np.random.default_rng(3)
    verts = rng.random((400, 3)) * 8
    faces = rng.integers(0, 400, (600, 3))
    raw, packed = MemoryStore(), MemoryStore()
    write(raw, verts, faces, (2.0, 2.0, 2.0), zarr_format=zarr_format)
    write(
        packed,
        verts,
        faces,
        (2.0, 2.0, 2.0),
        zarr_format=zarr_format,
        encoding="draco",
        quantization_bits=bits,
        compression_level=3,
    )
    a, b = read_meshes(raw), read_meshes(packed)
    np.testing.assert_array_equal(a.faces, b.faces)
    np.testing.assert_array_equal(a.attributes["vid"], b.attributes["vid"])
    np.testing.assert_array_equal(a.face_attributes["fid"], b.face_attributes["fid"])
    assert b.vertices.dtype == np.float32
    assert np.abs(b.vertices - a.vertices).max() <= 2.0 / 2**bits * 1.01
    root = zv.open_store(packed)
    assert root.attrs["draco_compressed"] is True
    attrs = root["0/vertices"].attrs  # type: ignore[index]
    assert (attrs["encoding"], attrs["quantization_bits"], attrs["compression_level"]) == (
        "draco",
        bits,
        3,
    )
    assert attrs["dtype"] == "<f4"
    box = read_meshes(packed, bbox=([1, 1, 1], [5, 5, 5]))
    assert set(box.attributes["vid"].tolist()) <= set(range(400))


@needs_draco
def test_draco_store_without_dracopy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore()
    write_meshes(store, TRI, [[0, 1, 2]], chunk_shape=(1, 1, 1), encoding="draco")
    monkeypatch.setattr(zv_draco, "_dracopy", None)
    with pytest.raises(MissingDependencyError, match=r"zarr-vectors\[draco\]"):
        read_meshes(store)
    with pytest.raises(MissingDependencyError, match="draco"):
        write_meshes(MemoryStore(), TRI, [[0, 1, 2]], chunk_shape=(1, 1, 1), encoding="draco")


def test_draco_write_without_dracopy_fails_before_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zv_draco, "_dracopy", None)
    store = MemoryStore()
    with pytest.raises(MissingDependencyError, match=r"pip install 'zarr-vectors\[draco\]'"):
        write_meshes(store, TRI, [[0, 1, 2]], chunk_shape=(1, 1, 1), encoding="draco")
    assert not store._store_dict


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"quantization_bits": 31}, "quantization_bits"),
        ({"compression_level": -1}, "compression_level"),
    ],
)
def test_draco_settings_are_validated(kwargs: dict[str, int], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        write_meshes(
            MemoryStore(), TRI, [[0, 1, 2]], chunk_shape=(1, 1, 1), encoding="draco", **kwargs
        )  # type: ignore[arg-type]


@pytest.mark.skipif(not HAS_DRACO, reason="needs DracoPy")
def test_draco_rejects_four_dimensions() -> None:
    with pytest.raises(InvalidInputError, match="at most 3"):
        write_meshes(
            MemoryStore(), np.eye(4)[:3], [[0, 1, 2]], chunk_shape=(1, 1, 1, 1), encoding="draco"
        )


@pytest.mark.skipif(not HAS_DRACO, reason="needs DracoPy")
def test_draco_codec_round_trip_and_corruption() -> None:
    rows = np.array([[0.0, 1.0], [0.0, 1.0], [3.0, -2.0]])
    out = zv_draco.decode_vertices(zv_draco.encode_vertices(rows, 20), 3, 2)
    assert out.shape == (3, 2)
    assert np.abs(out - rows).max() < 1e-4
    blob = zv_draco.encode_vertices(rows, 20)
    with pytest.raises(zv.CorruptPayloadError, match="holds 3 vertices"):
        zv_draco.decode_vertices(blob, 4, 2)
    with pytest.raises(zv.CorruptPayloadError, match="not a Draco"):
        zv_draco.decode_vertices(b"junk", 1, 2)


def test_face_joining_objects_is_named_in_any_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mesh_input, "_FACE_BLOCK", 2)
    faces = [[0, 1, 2], [1, 2, 0], [0, 2, 1], [1, 2, 3], [0, 1, 2]]
    with pytest.raises(GeometryError, match=r"face 3 = \[1, 2, 3\] joins vertices of objects"):
        write_meshes(
            MemoryStore(), TRI, faces, vertex_object_ids=[5, 5, 5, 6], chunk_shape=(1, 1, 1)
        )


@pytest.mark.parametrize("ids", [[7, 7, 9, 9], [9, 9, 7, 7], [2**63, 2**63, 2**64 - 1, 2**64 - 1]])
def test_sorted_and_unsorted_user_ids_give_the_same_objects(ids: list[int]) -> None:
    store = MemoryStore()
    arr = np.array(ids, dtype=np.uint64)
    write_meshes(store, TRI, [[0, 1, 1], [2, 3, 3]], vertex_object_ids=arr, chunk_shape=(1, 1, 1))
    m = read_meshes(store)
    assert sorted(m.object_ids.tolist()) == sorted(set(arr.tolist()))
    np.testing.assert_array_equal(m.vertex_object_ids, arr[np.argsort(arr, kind="stable")])


def test_list_input_with_a_nan_vertex_is_rejected_before_writing() -> None:
    store = MemoryStore()
    bad = np.where(np.arange(12).reshape(4, 3) == 4, np.nan, TRI)
    with pytest.raises(InvalidInputError, match="row 5, column 1"):  # row 1 of the second mesh
        write_meshes(store, [(TRI, [[0, 1, 2]]), (bad, [[0, 1, 2]])], chunk_shape=(1, 1, 1))
    assert not store._store_dict
    with pytest.raises(InvalidInputError, match="row 1, column 1"):  # no writer: scanned here
        as_meshes([(bad, [[0, 1, 2]])])


@pytest.mark.parametrize("n_objects", [3, 300, 70_000])
@pytest.mark.parametrize("shuffled", [False, True])
def test_face_joining_objects_is_found_at_any_object_count(n_objects: int, shuffled: bool) -> None:
    """One triangle per object; ids in order (ranges) or shuffled, up to int32-wide ids."""
    rng = np.random.default_rng(n_objects)
    verts = rng.random((3 * n_objects, 3)) * 10
    faces = np.arange(3 * n_objects, dtype=np.int64).reshape(-1, 3)
    ids = np.repeat(np.arange(n_objects, dtype=np.int64) * 3 + 1, 3)
    if shuffled:
        perm = rng.permutation(len(verts))
        verts, ids = verts[perm], ids[perm]
        faces = np.argsort(perm)[faces]
    store = MemoryStore()
    write_meshes(store, verts, faces, vertex_object_ids=ids, chunk_shape=(5, 5, 5))
    m = read_meshes(store)
    assert len(m.object_ids) == n_objects
    np.testing.assert_array_equal(np.sort(m.vertex_object_ids), np.sort(ids))
    # object 0 with the first object whose id would wrap to 0 in a too narrow type
    other = 65536 if n_objects > 65536 else 256 if n_objects > 256 else n_objects - 1
    joined = np.concatenate([faces, [[faces[0, 0], faces[other, 1], faces[other, 2]]]])
    row = len(faces)
    with pytest.raises(GeometryError, match=rf"face {row} = .* joins vertices of objects"):
        write_meshes(MemoryStore(), verts, joined, vertex_object_ids=ids, chunk_shape=(5, 5, 5))


def test_objects_as_ranges_write_the_meshes_ids_per_vertex_write() -> None:
    """The writer's objects-as-ranges input plans the store a per-vertex id input plans."""
    verts = np.concatenate([TRI, TRI + 20, TRI + 40])
    faces = np.array([[0, 1, 2], [1, 2, 3], [4, 5, 6], [8, 9, 10], [9, 10, 11]])
    ids = np.repeat([3, 8, 11], 4)
    written = mesh_input.input_parts(verts, faces, for_write=True, **_keywords(ids))
    checked = mesh_input.input_parts(verts, faces, **_keywords(ids))
    assert written.vertex_object is None
    assert written.object_offsets is not None
    assert written.object_offsets.tolist() == [0, 4, 8, 12]
    np.testing.assert_array_equal(written.vertex_objects, checked.vertex_objects)
    stores = [MemoryStore(), MemoryStore()]
    for store, parts in zip(stores, (written, checked), strict=True):
        write_store(store, "mesh", parts, StoreOptions(chunk_shape=(5.0,) * 3))
    a, b = (read_meshes(s) for s in stores)
    np.testing.assert_array_equal(a.faces, b.faces)
    np.testing.assert_array_equal(a.vertices, b.vertices)
    np.testing.assert_array_equal(a.vertex_object_ids, b.vertex_object_ids)


def _keywords(ids: npt.ArrayLike) -> dict[str, Any]:
    names = ("object_ids", "attributes", "face_attributes", "object_attributes", "groups")
    return {"vertex_object_ids": ids, "group_attributes": None} | dict.fromkeys(names)
