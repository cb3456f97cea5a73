"""Write the upstream fixture stores under tests/data/upstream/<version>/.

Run this with the Python of a venv that holds the *upstream* ``zarr-vectors`` (0.2.0 or 0.9.x),
never with this library installed::

    python3 -m venv /work/venvs/migrate-020
    /work/venvs/migrate-020/bin/pip install zarr-vectors==0.2.0 DracoPy
    /work/venvs/migrate-020/bin/python scripts/make_upstream_fixtures.py

For every store ``<name>.zv`` the script also writes ``expected.npz`` (what upstream's own
readers return for it, plus the input that was written, keyed ``<name>/read/...`` and
``<name>/input/...``) and ``expected.json`` (upstream version and per-store notes).  The tests in
``tests/migrate`` compare the migrated stores against those values.
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

try:
    from zarr_vectors.multiresolution.coarsen import build_pyramid
    from zarr_vectors.types.parametric import write_parametric_objects

    from zarr_vectors.types.graphs import read_graph, write_graph
    from zarr_vectors.types.lines import read_lines, write_lines
    from zarr_vectors.types.meshes import read_mesh, write_mesh
    from zarr_vectors.types.points import read_points, write_points
    from zarr_vectors.types.polylines import read_polylines, write_polylines
except ImportError:  # this library (not upstream) is installed here
    sys.exit("run this script in a venv holding the upstream zarr-vectors package")

ROOT = Path(__file__).resolve().parents[1] / "tests" / "data" / "upstream"
CHUNK = (10.0, 10.0, 10.0)
BIN = (5.0, 5.0, 5.0)
# 0.9.x stores object attributes as dense 65,536-row chunks; zstd keeps the fixtures small.
KW: dict[str, Any] = {} if version("zarr-vectors").startswith("0.2.") else {"compressor": "zstd"}


def _save(out: dict[str, Any], name: str, kind: str, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, dict):
            _save(out, name, kind, {f"{key}/{k}": v for k, v in value.items()})
            continue
        out[f"{name}/{kind}/{key}"] = np.asarray(value)


def points(base: Path, out: dict[str, Any]) -> None:
    """Write a binned point cloud with two vertex attributes over 2x2x2 chunks."""
    rng = np.random.default_rng(1)
    pos = (rng.random((24, 3)) * 20).astype(np.float32)
    attrs = {
        "intensity": rng.random(24).astype(np.float32),
        "label": rng.integers(0, 5, 24).astype(np.int32),
        "normal": rng.random((24, 3)).astype(np.float32),
        "kind": np.array(["soma", "axon", "dendrite"] * 8, dtype=object),
    }
    write_points(
        str(base / "points.zv"),
        pos,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        vertex_attributes=attrs,
        **KW,
    )
    got = read_points(str(base / "points.zv"), attribute_names=list(attrs))
    read_attrs = dict(got["vertex_attributes"])
    read_attrs["kind"] = read_attrs["kind"].astype(str)  # npz holds no object arrays
    attrs["kind"] = attrs["kind"].astype(str)
    _save(out, "points", "input", {"positions": pos, "attributes": attrs})
    _save(out, "points", "read", {"positions": got["positions"], "attributes": read_attrs})


def points_negative(base: Path, out: dict[str, Any]) -> None:
    """Points on both sides of the origin; a categorical attribute with a missing value."""
    pos = np.array(
        [[-15, -5, -5], [-5, -5, -5], [5, 5, 5], [-15, 3, 3], [12, -18, 4], [-1, -1, -1]],
        np.float32,
    )
    kind = np.array(["a", "b", None, "a", "b", "a"], dtype=object)
    write_points(
        str(base / "points_negative.zv"),
        pos,
        chunk_shape=CHUNK,
        vertex_attributes={"kind": kind},
        bounds=([-20.0, -20.0, -20.0], [20.0, 20.0, 20.0]),
        **KW,
    )
    got = read_points(str(base / "points_negative.zv"), attribute_names=["kind"])
    _save(out, "points_negative", "input", {"positions": pos})
    codes = np.array([-1 if k is None else "ab".index(k) for k in got["vertex_attributes"]["kind"]])
    _save(out, "points_negative", "read", {"positions": got["positions"], "kind_codes": codes})


def points_objects(base: Path, out: dict[str, Any]) -> None:
    """Points grouped into objects, with object attributes, groups and group attributes."""
    rng = np.random.default_rng(2)
    pos = (rng.random((12, 3)) * 20).astype(np.float32)
    oids = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3])
    obj = {"score": np.array([0.5, 1.5, 2.5, 3.5], np.float32)}
    groups = {0: [0, 2], 1: [1, 3]}
    gattrs = {"weight": np.array([10.0, 20.0], np.float32)}
    write_points(
        str(base / "points_objects.zv"),
        pos,
        chunk_shape=CHUNK,
        vertex_attributes={"v": np.arange(12, dtype=np.float32)},
        object_ids=oids,
        object_attributes=obj,
        groups=groups,
        group_attributes=gattrs,
        **KW,
    )
    got = read_points(str(base / "points_objects.zv"), attribute_names=["v"])
    _save(
        out,
        "points_objects",
        "input",
        {
            "positions": pos,
            "object_ids": oids,
            "attributes": {"v": np.arange(12, dtype=np.float32)},
            "object_attributes": obj,
            "groups/0": groups[0],
            "groups/1": groups[1],
            "group_attributes": gattrs,
        },
    )
    _save(
        out,
        "points_objects",
        "read",
        {"positions": got["positions"], "attributes": got["vertex_attributes"]},
    )


def lines(base: Path, out: dict[str, Any]) -> None:
    """Five segments; two cross a chunk boundary."""
    ends = np.array(
        [
            [[1, 1, 1], [2, 2, 2]],
            [[3, 3, 3], [14, 3, 3]],
            [[12, 12, 12], [13, 14, 15]],
            [[5, 15, 5], [5, 5, 5]],
            [[18, 1, 18], [19, 2, 17]],
        ],
        np.float32,
    )
    obj = {"strength": np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)}
    write_lines(str(base / "lines.zv"), ends, chunk_shape=CHUNK, object_attributes=obj, **KW)
    got = read_lines(str(base / "lines.zv"))
    _save(out, "lines", "input", {"endpoints": ends, "object_attributes": obj})
    _save(out, "lines", "read", {k: v for k, v in got.items() if isinstance(v, np.ndarray)})


def _paths() -> list[np.ndarray]:
    return [
        np.array([[1, 1, 1], [4, 2, 1], [8, 3, 2], [12, 4, 2], [16, 6, 3]], np.float32),
        np.array([[2, 18, 2], [3, 15, 4], [4, 12, 6], [5, 9, 8]], np.float32),
        np.array([[15, 15, 15], [16, 16, 16], [17, 15, 14]], np.float32),
    ]


def polylines(base: Path, out: dict[str, Any], kind: str) -> None:
    """Three paths crossing chunks, per-vertex and per-object attributes, two groups."""
    paths = _paths()
    fa = [np.linspace(0.1, 0.9, len(p)).astype(np.float32) + i for i, p in enumerate(paths)]
    obj = {"weight": np.array([1.0, 2.0, 3.0], np.float32)}
    groups = {0: [0, 2], 1: [1]}
    gattrs = {"size": np.array([2, 1], np.int32)}
    write_polylines(
        str(base / f"{kind}.zv"),
        paths,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        vertex_attributes={"fa": fa},
        object_attributes=obj,
        groups=groups,
        group_attributes=gattrs,
        geometry_type=kind,
        **KW,
    )
    got = read_polylines(str(base / f"{kind}.zv"))
    flat = [np.concatenate(segs) for segs in got["polylines"]]
    _save(
        out,
        kind,
        "input",
        {
            "positions": np.concatenate(paths),
            "offsets": np.cumsum([0] + [len(p) for p in paths]),
            "attributes": {"fa": np.concatenate(fa)},
            "object_attributes": obj,
            "groups/0": groups[0],
            "groups/1": groups[1],
            "group_attributes": gattrs,
        },
    )
    _save(
        out,
        kind,
        "read",
        {
            "positions": np.concatenate(flat),
            "offsets": np.cumsum([0] + [len(p) for p in flat]),
        },
    )


def graph(base: Path, out: dict[str, Any]) -> None:
    """Two components over several chunks with node, edge and object attributes."""
    pos = np.array(
        [[1, 1, 1], [12, 1, 1], [12, 12, 1], [1, 12, 1], [15, 15, 15], [16, 17, 15], [3, 3, 3]],
        np.float32,
    )
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [0, 6]])
    oids = np.array([0, 0, 0, 0, 1, 1, 0])
    vattr = {"degree": np.array([3, 2, 2, 2, 1, 1, 1], np.int32)}
    eattr = {"weight": np.array([0.5, 1.5, 2.5, 3.5, 4.5, 5.5], np.float32)}
    obj = {"kind": np.array([7, 8], np.int32)}
    write_graph(
        str(base / "graph.zv"),
        pos,
        edges,
        chunk_shape=CHUNK,
        vertex_attributes=vattr,
        link_attributes=eattr,
        object_attributes=obj,
        object_ids=oids,
        **KW,
    )
    got = read_graph(str(base / "graph.zv"))
    _save(
        out,
        "graph",
        "input",
        {
            "positions": pos,
            "edges": edges,
            "object_ids": oids,
            "attributes": vattr,
            "edge_attributes": eattr,
            "object_attributes": obj,
        },
    )
    _save(out, "graph", "read", {k: v for k, v in got.items() if isinstance(v, np.ndarray)})


def skeleton(base: Path, out: dict[str, Any]) -> None:
    """Two branching trees (one object each) crossing chunks, with a radius per node."""
    pos = np.array(
        [
            [1, 1, 1],
            [5, 1, 1],
            [12, 1, 1],
            [5, 6, 1],
            [5, 12, 1],
            [15, 1, 1],
            [13, 13, 13],
            [14, 13, 13],
            [18, 13, 13],
        ],
        np.float32,
    )
    edges = np.array([[1, 0], [2, 1], [3, 1], [4, 3], [5, 2], [7, 6], [8, 7]])
    oids = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    radius = np.linspace(1.0, 2.0, 9).astype(np.float32)
    write_graph(
        str(base / "skeleton.zv"),
        pos,
        edges,
        chunk_shape=CHUNK,
        kind="skeleton",
        vertex_attributes={"radius": radius},
        object_ids=oids,
        **KW,
    )
    got = read_graph(str(base / "skeleton.zv"))
    _save(
        out,
        "skeleton",
        "input",
        {"positions": pos, "edges": edges, "object_ids": oids, "attributes": {"radius": radius}},
    )
    _save(out, "skeleton", "read", {k: v for k, v in got.items() if isinstance(v, np.ndarray)})


def mesh(base: Path, out: dict[str, Any]) -> None:
    """Two tetrahedra (objects 0 and 1); some faces span chunks."""
    verts = np.array(
        [
            [1, 1, 1],
            [8, 1, 1],
            [1, 8, 1],
            [1, 1, 12],
            [14, 14, 14],
            [18, 14, 14],
            [14, 18, 14],
            [14, 14, 18],
        ],
        np.float32,
    )
    faces = np.array(
        [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3], [4, 6, 5], [4, 5, 7], [4, 7, 6], [5, 6, 7]]
    )
    oids = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    vattr = {"curv": np.linspace(-1, 1, 8).astype(np.float32)}
    obj = {"area": np.array([12.5, 8.0], np.float32)}
    write_mesh(
        str(base / "mesh.zv"),
        verts,
        faces,
        chunk_shape=CHUNK,
        vertex_attributes=vattr,
        object_attributes=obj,
        object_ids=oids,
        **KW,
    )
    got = read_mesh(str(base / "mesh.zv"))
    _save(
        out,
        "mesh",
        "input",
        {
            "vertices": verts,
            "faces": faces,
            "object_ids": oids,
            "attributes": vattr,
            "object_attributes": obj,
        },
    )
    _save(out, "mesh", "read", {k: v for k, v in got.items() if isinstance(v, np.ndarray)})


def shared_chunk(base: Path, out: dict[str, Any]) -> None:
    """Two objects interleaved in one chunk: a graph, a mesh and a skeleton.

    Upstream 0.2.0 numbers such a graph's edges in input order while storing rows object by
    object, points every mesh object at the chunk's single fragment, and joins the second
    tree's root to the first tree on read.
    """
    oids = np.array([0, 1, 0, 1, 0, 1])
    pos = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 5, 5], [6, 6, 6]], np.float32)
    edges = np.array([[0, 2], [2, 4], [1, 3], [3, 5]])
    write_graph(str(base / "graph_shared.zv"), pos, edges, chunk_shape=CHUNK, object_ids=oids, **KW)
    got = read_graph(str(base / "graph_shared.zv"))
    _save(out, "graph_shared", "input", {"positions": pos, "edges": edges, "object_ids": oids})
    _save(out, "graph_shared", "read", {"positions": got["positions"], "edges": got["edges"]})
    verts = np.array([[1, 1, 1], [5, 1, 1], [2, 1, 1], [6, 1, 1], [1, 2, 1], [5, 2, 1]], np.float32)
    faces = np.array([[0, 2, 4], [1, 3, 5]])
    obj = {"area": np.array([0.5, 0.25], np.float32)}
    write_mesh(
        str(base / "mesh_shared.zv"),
        verts,
        faces,
        chunk_shape=CHUNK,
        object_ids=oids,
        object_attributes=obj,
        **KW,
    )
    got = read_mesh(str(base / "mesh_shared.zv"))
    _save(out, "mesh_shared", "input", {"vertices": verts, "faces": faces, "object_ids": oids})
    _save(out, "mesh_shared", "read", {"vertices": got["vertices"], "faces": got["faces"]})
    tree = np.array([[1, 1, 1], [5, 1, 1], [2, 1, 1], [6, 1, 1], [2, 2, 1], [6, 2, 1]], np.float32)
    parents = np.array([[2, 0], [4, 0], [3, 1], [5, 1]])
    write_graph(
        str(base / "skeleton_shared.zv"),
        tree,
        parents,
        chunk_shape=CHUNK,
        kind="skeleton",
        object_ids=oids,
        **KW,
    )
    got = read_graph(str(base / "skeleton_shared.zv"))
    _save(out, "skeleton_shared", "input", {"positions": tree, "edges": parents})
    _save(out, "skeleton_shared", "read", {"positions": got["positions"], "edges": got["edges"]})


def points_parametric(base: Path) -> None:
    """Write two points plus one parametric sphere, which the migration reports as dropped."""
    path = str(base / "points_parametric.zv")
    write_points(path, np.array([[1, 1, 1], [2, 2, 2]], np.float32), chunk_shape=CHUNK, **KW)
    write_parametric_objects(path, [{"type": "sphere", "coefficients": [1.0, 1.0, 1.0, 0.5]}])


def mesh_draco(base: Path) -> None:
    """Write a Draco-encoded mesh (needs DracoPy), which the migration refuses by name."""
    verts = np.array([[1, 1, 1], [8, 1, 1], [1, 8, 1], [1, 1, 8]], np.float32)
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    write_mesh(str(base / "mesh_draco.zv"), verts, faces, chunk_shape=CHUNK, encoding="draco")


def pyramid(base: Path, out: dict[str, Any]) -> list[str]:
    """Points with two coarse levels built with ``factors=[(2, 1), (2, 1)]``."""
    rng = np.random.default_rng(3)
    pos = (rng.random((40, 3)) * 20).astype(np.float32)
    path = str(base / "pyramid.zv")
    write_points(path, pos, chunk_shape=CHUNK, bin_shape=(2.5, 2.5, 2.5), **KW)
    build_pyramid(path, factors=[(2.0, 1.0), (2.0, 1.0)])
    _save(out, "pyramid", "input", {"positions": pos})
    notes = []
    for level in range(3):
        got = read_points(path, level=level)
        _save(out, "pyramid", "read", {f"level{level}/positions": got["positions"]})
        notes.append(f"level {level}: {got['vertex_count']} vertices")
    return notes


def main() -> None:
    """Write every fixture store of the installed upstream version."""
    ver = version("zarr-vectors")
    base = ROOT / ver
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    out: dict[str, Any] = {}
    points(base, out)
    points_negative(base, out)
    points_objects(base, out)
    lines(base, out)
    polylines(base, out, "streamline")
    polylines(base, out, "polyline")
    graph(base, out)
    skeleton(base, out)
    mesh(base, out)
    shared_chunk(base, out)
    mesh_draco(base)
    points_parametric(base)
    notes = {"pyramid": pyramid(base, out)}
    np.savez_compressed(base / "expected.npz", **out)
    (base / "expected.json").write_text(
        json.dumps({"upstream_version": ver, "notes": notes}, indent=1) + "\n"
    )
    print(f"wrote {sorted(p.name for p in base.iterdir())} for upstream {ver}")


if __name__ == "__main__":
    main()
