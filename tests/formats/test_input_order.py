"""Input order (docs/spec.md §8.7): keep_order= on the writers, order="input" on the readers."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import zarr
from typer.testing import CliRunner
from zarr.storage import MemoryStore

from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats import _ply
from zarr_vectors.formats.ply_points import parse_ply, read_ply, store_to_ply
from zarr_vectors.formats.registry import convert, export
from zarr_vectors.types._order import INPUT_INDEX, index_dtype
from zarr_vectors.types.meshes import read_meshes, write_meshes
from zarr_vectors.types.points import read_points, write_points

RNG = np.random.default_rng(7)


def has_index(store: object) -> bool:
    """Whether level 0 of a store holds the input-index attribute array."""
    level = zarr.open_group(store, mode="r")["0"]
    return "attributes" in level and INPUT_INDEX in level["attributes"]


@pytest.mark.parametrize(
    ("count", "dtype"),
    [(1, np.uint8), (256, np.uint8), (257, np.uint16), (65_537, np.uint32), (2**32 + 1, np.uint64)],
)
def test_index_dtype_is_the_smallest(count: int, dtype: type) -> None:
    assert index_dtype(count) == np.dtype(dtype)


def test_points_come_back_in_input_order() -> None:
    pos = RNG.uniform(0, 100, (3000, 3))
    attrs = {"a": RNG.integers(0, 9, 3000), "name": np.array(["p", "q", "r"] * 1000)}
    store = MemoryStore()
    write_points(store, pos, attributes=attrs, chunk_shape=(25, 25, 25), keep_order=True)
    stored = read_points(store)
    assert not np.array_equal(stored.positions, pos)  # storage order differs here
    assert set(stored.attributes) == {"a", "name"}  # the index is not an attribute
    back = read_points(store, order="input")
    assert np.array_equal(back.positions, pos)
    assert np.array_equal(back.attributes["a"], attrs["a"])
    assert np.array_equal(back.attributes["name"], attrs["name"])
    assert zarr.open_group(store, mode="r")[f"0/attributes/{INPUT_INDEX}"].attrs["dtype"] == "<u2"
    box = ([0, 0, 0], [50, 50, 50])
    inside = np.flatnonzero(np.all(pos < 50, axis=1))
    assert np.array_equal(read_points(store, bbox=box, order="input").positions, pos[inside])


def test_points_with_objects_in_input_order() -> None:
    pos = RNG.uniform(0, 10, (200, 2))
    ids = RNG.integers(0, 5, 200) * 7
    store = MemoryStore()
    write_points(store, pos, vertex_object_ids=ids, chunk_shape=(5, 5), keep_order=True)
    back = read_points(store, order="input")
    assert np.array_equal(back.positions, pos)
    assert back.vertex_object_ids is not None
    assert np.array_equal(back.vertex_object_ids, ids)


def test_default_layout_is_unchanged_and_input_order_needs_the_index() -> None:
    store = MemoryStore()
    write_points(store, RNG.uniform(0, 1, (10, 3)), chunk_shape=(1, 1, 1))
    assert not has_index(store)
    with pytest.raises(InvalidInputError, match="no input order"):
        read_points(store, order="input")
    with pytest.raises(InvalidInputError, match="order must be one of"):
        read_points(store, order="file")


def test_reserved_name_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="reserved"):
        write_points(
            MemoryStore(),
            np.zeros((2, 2)),
            attributes={INPUT_INDEX: np.arange(2)},
            chunk_shape=(1, 1),
            keep_order=True,
        )


def _interleaved_mesh() -> tuple[np.ndarray, np.ndarray]:
    """Two surfaces whose vertices and faces alternate, plus a lone vertex."""
    verts = np.array(
        [[0, 0, 0], [50, 50, 50], [1, 0, 0], [51, 50, 50], [0, 1, 0], [50, 51, 50], [9, 9, 9]],
        dtype=np.float32,
    )
    return verts, np.array([[3, 1, 5], [0, 2, 4], [4, 2, 0]])


def test_mesh_vertices_and_faces_in_input_order() -> None:
    verts, faces = _interleaved_mesh()
    labels = np.array([7, 8, 9], np.int16)
    store = MemoryStore()
    write_meshes(
        store,
        verts,
        faces,
        face_attributes={"label": labels},
        chunk_shape=(10, 10, 10),
        keep_order=True,
    )
    stored = read_meshes(store)
    assert set(stored.face_attributes) == {"label"}
    assert not np.array_equal(stored.faces, faces)
    back = read_meshes(store, order="input")
    assert back.input_order
    assert np.array_equal(back.vertices, verts)
    assert np.array_equal(back.faces, faces)
    assert np.array_equal(back.face_attributes["label"], labels)
    # objects still index correctly though their rows interleave
    first = back[0]
    assert np.array_equal(first.vertices, verts[[0, 2, 4]])
    assert first.faces.tolist() == [[0, 1, 2], [2, 1, 0]]
    assert first.face_attributes["label"].tolist() == [8, 9]
    assert back[1].faces.tolist() == [[1, 0, 2]]
    plain = MemoryStore()
    write_meshes(plain, verts, faces, chunk_shape=(10, 10, 10))
    with pytest.raises(InvalidInputError, match="no input order"):
        read_meshes(plain, order="input")


ALL_TYPES = tuple(_ply.PLY_TYPES)


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_every_ply_type_name_round_trips(fmt: str, tmp_path: Path) -> None:
    """One property per PLY type name; the file comes back byte for byte (the issue's repro:
    ASCII ``float32`` was printed as integers)."""
    props = "".join(f"property {t} p_{t}\n" for t in ALL_TYPES)
    head = f"ply\nformat {fmt} 1.0\nelement vertex 3\nproperty float32 x\nproperty float32 y\n"
    head += props + "end_header\n"
    values = {t: np.array([0, 1, 100], dtype="<" + _ply.PLY_TYPES[t]) for t in ALL_TYPES}
    for t in ("float", "float32", "double", "float64"):
        values[t] = values[t] + np.array([0.25, -1.5e-7, 3.14159], dtype=values[t].dtype)
    xy = np.array([[0.5, 1.0], [2.25, -3.0], [1e-3, 7.0]], np.float32)
    order = ">" if fmt == "binary_big_endian" else "<"
    table = np.zeros(
        3,
        dtype=[("x", order + "f4"), ("y", order + "f4")]
        + [(t, values[t].dtype.newbyteorder(order)) for t in ALL_TYPES],
    )
    table["x"], table["y"] = xy[:, 0], xy[:, 1]
    for t in ALL_TYPES:
        table[t] = values[t]
    if fmt == "ascii":
        rows = [
            " ".join(_ply.format_ascii(np.asarray(table[n])).tolist()[i] for n in table.dtype.names)
            for i in range(3)
        ]
        body = ("\n".join(rows) + "\n").encode()
    else:
        body = table.tobytes()
    src = tmp_path / "types.ply"
    src.write_bytes(head.encode() + body)
    ply = read_ply(src)
    assert np.array_equal(ply.positions, xy)
    for t in ALL_TYPES:
        assert ply.attributes[f"p_{t}"].dtype == values[t].dtype
        assert np.array_equal(ply.attributes[f"p_{t}"], values[t])
    store = str(tmp_path / "s.zarrvectors")
    convert(src, store, chunk_shape=(1, 1))
    out = tmp_path / "out.ply"
    export(store, out)
    assert out.read_bytes() == src.read_bytes()


def test_ascii_float32_is_not_truncated() -> None:
    text = b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float32 x\nproperty float32 y\n"
    text += b"property float32 z\nend_header\n0.5 1.25 2.75\n3 4 5\n"
    ply = parse_ply(io.BytesIO(text))
    assert ply.positions.tolist() == [[0.5, 1.25, 2.75], [3.0, 4.0, 5.0]]


def test_mesh_store_exports_to_ply(tmp_path: Path) -> None:
    verts, faces = _interleaved_mesh()
    store = MemoryStore()
    write_meshes(
        store,
        verts,
        faces,
        attributes={"w": np.arange(7.0)},
        face_attributes={"label": np.array([7, 8, 9], np.int16)},
        chunk_shape=(10, 10, 10),
        keep_order=True,
    )
    store_to_ply(store, tmp_path / "m.ply")
    ply = read_ply(tmp_path / "m.ply")
    assert np.array_equal(ply.positions, verts)
    assert ply.faces is not None
    assert np.array_equal(ply.faces, faces)
    assert np.array_equal(ply.attributes["w"], np.arange(7.0))
    assert ply.face_attributes["label"].tolist() == [7, 8, 9]


def test_quads_are_refused(tmp_path: Path) -> None:
    text = b"ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
    text += b"element face 1\nproperty list uchar int vertex_indices\nend_header\n"
    text += b"0 0\n1 0\n1 1\n0 1\n4 0 1 2 3\n"
    with pytest.raises(InvalidInputError, match="only triangles"):
        parse_ply(io.BytesIO(text))


def test_other_ply_elements_are_reported(tmp_path: Path) -> None:
    text = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
    text += b"element face 1\nproperty list uchar int vertex_indices\n"
    text += b"element edge 1\nproperty int vertex1\nproperty int vertex2\nend_header\n"
    text += b"0 0\n1 0\n1 1\n3 0 1 2\n0 1\n"
    src = tmp_path / "e.ply"
    src.write_bytes(text)
    report = convert(src, str(tmp_path / "s.zarrvectors"), chunk_shape=(5, 5))
    assert report.dropped == ("PLY element 'edge' (1 rows)",)


def test_cli_no_keep_order_and_dropped_notes(tmp_path: Path) -> None:
    src = tmp_path / "e.ply"
    text = b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
    text += b"element material 1\nproperty uchar red\nend_header\n0 0\n1 0\n1 1\n255\n"
    src.write_bytes(text)
    store = tmp_path / "s.zarrvectors"
    result = CliRunner().invoke(app, ["convert", str(src), str(store), "--no-keep-order"])
    assert result.exit_code == 0, result.stderr
    assert "not carried by the store: PLY element 'material' (1 rows)" in result.stderr
    assert not has_index(str(store))
    kept = tmp_path / "k.zarrvectors"
    assert CliRunner().invoke(app, ["convert", str(src), str(kept)]).exit_code == 0
    assert has_index(str(kept))
