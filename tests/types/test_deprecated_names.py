"""Old names of the naming rule still work for one release, each use warning exactly once.

The rule: ``object_ids`` holds one id per object, ``vertex_object_ids`` one per vertex, and
function nouns are plural like their result classes.  Every old name must give the same result
as its new name plus one :class:`zarr_vectors.ZVDeprecationWarning` naming the replacement.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv

POS = np.array([[0.5, 0.5, 0.5], [1.5, 0.5, 0.5], [5.5, 5.5, 5.5], [6.5, 5.5, 5.5]])
OWNER = np.array([30, 30, 10, 10], dtype=np.int64)  # per vertex
TRI = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5], [6, 5, 5], [5, 6, 5]])
FACES = np.array([[0, 1, 2], [3, 4, 5]])
PATHS = [POS[:2], POS[2:]]
CHUNK = (4.0, 4.0, 4.0)


def _warns_once(call: Callable[[], Any], old: str, new: str) -> Any:
    """Run ``call``; assert exactly one ZVDeprecationWarning naming ``old`` and ``new``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    ours = [w for w in caught if issubclass(w.category, zv.ZVDeprecationWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    message = str(ours[0].message)
    assert old in message, message
    assert new in message, message
    assert ours[0].filename == __file__, "the warning must point at the caller's line"
    return out


def _same_store(a: MemoryStore, b: MemoryStore, read: Callable[..., Any]) -> None:
    ra, rb = read(a), read(b)
    for name in ("positions", "vertices", "faces", "edges", "offsets", "parents"):
        if hasattr(ra, name):
            np.testing.assert_array_equal(getattr(ra, name), getattr(rb, name))
    np.testing.assert_array_equal(ra.object_ids, rb.object_ids)


def test_warning_category_is_visible_by_default() -> None:
    assert issubclass(zv.ZVDeprecationWarning, FutureWarning)
    assert zv.ZVDeprecationWarning is zv.errors.ZVDeprecationWarning


# -- keywords --------------------------------------------------------------------------------

VERTEX_WRITERS = [
    (zv.write_points, (POS,), zv.read_points),
    (zv.write_graph, (POS, [[0, 1], [2, 3]]), zv.read_graph),
    (zv.write_meshes, (TRI, FACES), zv.read_meshes),
]


@pytest.mark.parametrize(("write", "args", "read"), VERTEX_WRITERS, ids=lambda v: "")
def test_per_vertex_object_ids_keyword(write: Any, args: tuple[Any, ...], read: Any) -> None:
    old, new = MemoryStore(), MemoryStore()
    owner = OWNER if len(args[0]) == len(OWNER) else np.repeat([30, 10], 3)
    write(new, *args, chunk_shape=CHUNK, vertex_object_ids=owner)
    _warns_once(
        lambda: write(old, *args, chunk_shape=CHUNK, object_ids=owner),
        "object_ids=",
        "vertex_object_ids=",
    )
    _same_store(old, new, read)
    assert sorted(read(new).object_ids.tolist()) == [10, 30]


PER_OBJECT_WRITERS = [
    (zv.write_polylines, (PATHS,), zv.read_polylines),
    (zv.write_streamlines, (PATHS,), zv.read_streamlines),
    (zv.write_lines, (np.stack(PATHS),), zv.read_lines),
    (zv.write_skeletons, (POS, [-1, 0, -1, 2]), zv.read_skeletons),
]


@pytest.mark.parametrize(("write", "args", "read"), PER_OBJECT_WRITERS, ids=lambda v: "")
def test_ids_keyword(write: Any, args: tuple[Any, ...], read: Any) -> None:
    old, new = MemoryStore(), MemoryStore()
    write(new, *args, chunk_shape=CHUNK, object_ids=[30, 10])
    _warns_once(lambda: write(old, *args, chunk_shape=CHUNK, ids=[30, 10]), "ids=", "object_ids=")
    _same_store(old, new, read)
    assert sorted(read(new).object_ids.tolist()) == [10, 30]


def test_old_and_new_keyword_together_is_refused() -> None:
    with pytest.raises(zv.InvalidInputError, match="pass object_ids= only"):
        zv.write_polylines(MemoryStore(), PATHS, chunk_shape=CHUNK, ids=[1, 2], object_ids=[1, 2])
    with pytest.raises(zv.InvalidInputError, match="vertex_object_ids= only"):
        zv.write_meshes(
            MemoryStore(), TRI, FACES, chunk_shape=CHUNK, object_ids=[1] * 6,
            vertex_object_ids=[1] * 6,
        )  # fmt: skip


def test_list_mesh_input_keeps_object_ids_without_warning() -> None:
    store = MemoryStore()
    zv.write_meshes(store, [(TRI[:3], FACES[:1]), (TRI[3:], FACES[:1])], chunk_shape=CHUNK,
                    object_ids=[30, 10])  # fmt: skip
    assert zv.read_meshes(store).object_ids.tolist() == [30, 10]  # list order


def test_append_and_edit_keywords() -> None:
    store = MemoryStore()
    zv.write_polylines(store, PATHS, chunk_shape=CHUNK, object_ids=[1, 2])
    _warns_once(lambda: zv.append_polylines(store, PATHS, ids=[3, 4]), "ids=", "object_ids=")
    _warns_once(
        lambda: zv.update_object_attributes(store, ids=[3], values={}), "ids=", "object_ids="
    )
    _warns_once(lambda: zv.delete_objects(store, ids=[4]), "ids=", "object_ids=")
    assert zv.read_polylines(store).object_ids.tolist() == [1, 2, 3]
    points = MemoryStore()
    zv.write_points(points, POS, chunk_shape=CHUNK, vertex_object_ids=OWNER)
    _warns_once(
        lambda: zv.append_points(points, POS + 1, object_ids=OWNER + 1),
        "object_ids=",
        "vertex_object_ids=",
    )
    assert zv.read_points(points).object_ids.tolist() == [10, 11, 30, 31]


STREAMED = [
    ("point_cloud", POS, {}, "object_ids", "vertex_object_ids", OWNER, zv.read_points),
    ("polyline", PATHS, {}, "ids", "object_ids", [30, 10], zv.read_polylines),
    ("graph", POS, {"edges": [[0, 1], [2, 3]]}, "object_ids", "vertex_object_ids", OWNER,
     zv.read_graph),
    ("skeleton", POS, {"parents": [-1, 0, -1, 2]}, "ids", "object_ids", [30, 10],
     zv.read_skeletons),
    ("mesh", TRI, {"faces": FACES}, "ids", "object_ids", [30, 10], zv.read_meshes),
]  # fmt: skip


@pytest.mark.parametrize(("gtype", "data", "kw", "old", "new", "ids", "read"), STREAMED,
                         ids=[s[0] for s in STREAMED])  # fmt: skip
def test_streaming_append_keywords(
    gtype: str, data: Any, kw: dict[str, Any], old: str, new: str, ids: Any, read: Any
) -> None:
    stores = MemoryStore(), MemoryStore()
    for store, name in zip(stores, (old, new), strict=True):
        with zv.open_writer(store, gtype, chunk_shape=CHUNK) as w:
            if name == old:
                _warns_once(lambda: w.append(data, **kw, **{old: ids}), f"({old}=", f"{new}=")
            else:
                w.append(data, **kw, **{new: ids})
    _same_store(stores[0], stores[1], read)
    assert sorted(read(stores[1]).object_ids.tolist()) == [10, 30]


# -- result attributes -----------------------------------------------------------------------


def test_points_objects_attribute() -> None:
    store = MemoryStore()
    zv.write_points(store, POS, chunk_shape=CHUNK, vertex_object_ids=OWNER)
    got = zv.read_points(store)
    assert sorted(got.vertex_object_ids.tolist()) == sorted(OWNER.tolist())
    objects = _warns_once(lambda: got.objects, "Points.objects", "Points.object_ids")
    np.testing.assert_array_equal(objects, got.object_ids)
    assert got.object_ids.tolist() == [10, 30]


def test_graph_objects_attribute() -> None:
    store = MemoryStore()
    zv.write_graph(store, POS, [[0, 1], [2, 3]], chunk_shape=CHUNK, vertex_object_ids=OWNER)
    got = zv.read_graph(store)
    objects = _warns_once(lambda: got.objects, "Graph.objects", "Graph.object_ids")
    np.testing.assert_array_equal(objects, got.object_ids)
    assert len(got.object_ids) == 2
    assert len(got.vertex_object_ids) == 4


def test_meshes_ids_and_mesh_id_attributes() -> None:
    store = MemoryStore()
    zv.write_meshes(store, TRI, FACES, chunk_shape=CHUNK, vertex_object_ids=[7, 7, 7, 3, 3, 3])
    got = zv.read_meshes(store)
    ids = _warns_once(lambda: got.ids, "Meshes.ids", "Meshes.object_ids")
    assert ids.tolist() == got.object_ids.tolist() == [3, 7]
    assert got.vertex_object_ids.tolist() == [3, 3, 3, 7, 7, 7]
    assert _warns_once(lambda: got[1].id, "Mesh.id", "Mesh.object_id") == got[1].object_id == 7


# -- functions -------------------------------------------------------------------------------


def test_singular_function_names() -> None:
    old, new = MemoryStore(), MemoryStore()
    zv.write_skeletons(new, POS, [-1, 0, -1, 2], chunk_shape=CHUNK)
    _warns_once(
        lambda: zv.write_skeleton(old, POS, [-1, 0, -1, 2], chunk_shape=CHUNK),
        "write_skeleton()",
        "write_skeletons()",
    )
    got = _warns_once(lambda: zv.read_skeleton(old), "read_skeleton()", "read_skeletons()")
    np.testing.assert_array_equal(got.parents, zv.read_skeletons(new).parents)
    _warns_once(
        lambda: zv.append_skeleton(old, POS + 8, [-1, 0, -1, 2]),
        "append_skeleton()",
        "append_skeletons()",
    )
    assert len(zv.read_skeletons(old)) == 4
    meshes = MemoryStore()
    _warns_once(
        lambda: zv.write_mesh(meshes, TRI, FACES, chunk_shape=CHUNK),
        "write_mesh()",
        "write_meshes()",
    )
    _warns_once(lambda: zv.append_mesh(meshes, TRI + 8, FACES), "append_mesh()", "append_meshes()")
    got_m = _warns_once(lambda: zv.read_mesh(meshes), "read_mesh()", "read_meshes()")
    assert len(got_m) == 4
    assert zv.write_mesh.__wrapped__ is zv.write_meshes  # type: ignore[attr-defined]


def test_old_names_are_not_exported_by_star() -> None:
    for old in ("write_skeleton", "read_skeleton", "append_skeleton", "write_mesh", "read_mesh",
                "append_mesh"):  # fmt: skip
        assert old not in zv.__all__
        assert callable(getattr(zv, old))
