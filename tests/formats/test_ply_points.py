"""PLY vertices <-> point_cloud stores: files written by trimesh survive import -> store -> export."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import trimesh
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats.ply_points import open_ply, parse_ply, read_ply, store_to_ply, write_ply
from zarr_vectors.formats.registry import convert, export


def lexsorted(pos: np.ndarray) -> np.ndarray:
    return np.lexsort(pos.T[::-1])


@pytest.fixture
def trimesh_ply(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    vertices = rng.uniform(0, 10, (500, 3))
    colors = rng.integers(0, 255, (500, 4), dtype=np.uint8)
    path = tmp_path / "cloud.ply"
    trimesh.PointCloud(vertices, colors=colors).export(path)
    return path, vertices, colors


def test_reads_trimesh_point_cloud(trimesh_ply: tuple[Path, np.ndarray, np.ndarray]) -> None:
    path, vertices, colors = trimesh_ply
    ply = read_ply(path)
    assert ply.positions.dtype == np.float32
    assert np.array_equal(ply.positions, vertices.astype(np.float32))
    for i, name in enumerate(("red", "green", "blue", "alpha")):
        assert ply.attributes[name].dtype == np.uint8
        assert np.array_equal(ply.attributes[name], colors[:, i])
    assert ply.metadata["format"] == "binary_little_endian"


def test_round_trip_through_store(
    trimesh_ply: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    path, vertices, colors = trimesh_ply
    store = str(tmp_path / "c.zarrvectors")
    convert(path, store, chunk_shape=(5, 5, 5))
    out = tmp_path / "back.ply"
    export(store, out)
    back = trimesh.load(out)
    a, b = lexsorted(vertices.astype(np.float32)), lexsorted(np.asarray(back.vertices))
    assert np.array_equal(np.asarray(back.vertices)[b], vertices.astype(np.float32)[a])
    assert np.array_equal(np.asarray(back.colors)[b], colors[a])
    header = out.read_bytes().split(b"end_header")[0].decode()
    assert "property float x" in header
    assert "property uchar alpha" in header
    assert "comment https://github.com/mikedh/trimesh" in header


def test_ascii_and_big_endian_keep_types(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    pos = rng.uniform(-1, 1, (30, 3))
    attrs = {
        "nx": rng.normal(size=30).astype(np.float32),
        "label": rng.integers(-5, 5, 30).astype(np.int32),
    }
    meta = {
        "format": "ascii",
        "properties": [
            ["x", "double"],
            ["y", "double"],
            ["z", "double"],
            ["nx", "float"],
            ["label", "int"],
        ],
        "comments": ["made by a test"],
    }
    text_path = tmp_path / "a.ply"
    write_ply(text_path, pos, attrs, metadata=meta)
    assert b"format ascii 1.0" in text_path.read_bytes()
    text = read_ply(text_path)
    assert text.positions.dtype == np.float64
    assert np.array_equal(text.positions, pos)
    assert np.array_equal(text.attributes["nx"], attrs["nx"])
    assert text.attributes["label"].dtype == np.int32
    assert text.metadata["comments"] == ["made by a test"]
    # the same vertices as binary big-endian, written by hand
    table = np.zeros(
        30, dtype=[("x", ">f8"), ("y", ">f8"), ("z", ">f8"), ("nx", ">f4"), ("label", ">i4")]
    )
    for i, a in enumerate("xyz"):
        table[a] = pos[:, i]
    table["nx"], table["label"] = attrs["nx"], attrs["label"]
    head = (
        "ply\nformat binary_big_endian 1.0\nelement vertex 30\n"
        + "".join(f"property {t} {n}\n" for n, t in meta["properties"])
        + "element face 0\nproperty list uchar int vertex_indices\nend_header\n"
    )
    big = parse_ply(io.BytesIO(head.encode() + table.tobytes()))
    assert np.array_equal(big.positions, pos)
    assert np.array_equal(big.attributes["label"], attrs["label"])


def test_mesh_ply_reads_vertices_only(tmp_path: Path) -> None:
    path = tmp_path / "box.ply"
    trimesh.creation.box().export(path)
    with open_ply(path) as src:
        assert src.extent().n_vertices == 8


def test_store_from_elsewhere_exports(tmp_path: Path) -> None:
    store = MemoryStore()
    pos = np.random.default_rng(2).uniform(0, 4, (50, 2)).astype(np.float32)
    zv.write_points(
        store,
        pos,
        chunk_shape=(2, 2),
        attributes={"w": np.arange(50.0), "flag": np.arange(50) % 2 == 0},
    )
    store_to_ply(store, tmp_path / "p.ply")
    ply = read_ply(tmp_path / "p.ply")
    order = lexsorted(ply.positions)
    assert np.array_equal(ply.positions[order], pos[lexsorted(pos)])
    assert ply.attributes["flag"].dtype == np.uint8


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"solid\n", "not a PLY"),
        (b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float a\nend_header\n1\n", "x and y"),
        (b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n", "end_header"),
        (
            (
                b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\n"
                b"property float y\nend_header\n\x00\x00"
            ),
            "truncated",
        ),
        (
            b"ply\nformat ascii 1.0\nelement face 1\nproperty list uchar int v\nend_header\n",
            "no vertex",
        ),
    ],
)
def test_bad_files(data: bytes, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        parse_ply(io.BytesIO(data))
