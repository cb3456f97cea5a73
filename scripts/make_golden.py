"""Write the golden stores of ``tests/golden/<format version>/`` (STYLE §13).

Run it only on purpose, from the repository root, with the code whose output should become
golden (normally once per format version, from ``main``)::

    PYTHONPATH=src python scripts/make_golden.py            # refuse to replace existing stores
    PYTHONPATH=src python scripts/make_golden.py --force    # replace them

Every geometry type is written as a zip store in Zarr v2 and v3 with each compressor preset
(``"default"``, ``"lz4"``, None), plus one sharded v3 store and, when DracoPy is installed,
one Draco-encoded mesh.  The data are small, cross chunk boundaries and carry vertex and object
attributes and groups; they come from fixed seeds.  Each store is read back (whole, one box,
one object by id), checked against its input, validated, and the results are saved in
``expected.npz`` with ``manifest.json`` describing each store and its queries.
``tests/golden/test_golden.py`` reads the stores with the current code and compares.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv
from zarr_vectors.testing import assert_arrays_identical, assert_points_equal
from zarr_vectors.testing.examples import random_walk_paths, random_walk_trees

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "golden"))

# golden_cases lives beside the test that reads the stores
from golden_cases import (
    EXPECTED,
    FORMAT_VERSION,
    GOLDEN_DIR,
    MANIFEST,
    QUERIES,
    READERS,
    flatten,
    query_kwargs,
)

CHUNK = (4.0, 4.0, 4.0)
"""Chunk extent of every store: the data span about 3 chunks per axis."""

BBOX = ((1.5, 1.5, 1.5), (8.5, 8.5, 8.5))
"""The box query of every store (crosses chunk boundaries)."""

COMPRESSORS: dict[str, str | None] = {"zstd": "default", "lz4": "lz4", "none": None}
"""Compressor presets, by the name used in store names."""


def _points(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    n = 80
    ids = rng.integers(0, 5, n).astype(np.uint64) * np.uint64(3) + np.uint64(2**40)
    labels = np.array(["soma", "axon", "dendrite", ""])[rng.integers(0, 4, n)]
    kwargs = {
        "positions": rng.uniform(0.0, 12.0, (n, 3)).astype(np.float32),
        "attributes": {
            "intensity": rng.normal(0.0, 1.0, n).astype(np.float32),
            "rgb": rng.integers(0, 256, (n, 3)).astype(np.uint8),
            "label": labels,
        },
        "vertex_object_ids": ids,
        "object_attributes": {"volume": np.arange(len(np.unique(ids)), dtype=np.float64) + 0.5},
        "groups": {"first_two": np.unique(ids)[:2]},
        "bin_shape": (2.0, 2.0, 2.0),
    }
    return zv.write_points, kwargs, int(np.unique(ids)[1])


def _lines(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    m = 30
    start = rng.uniform(0.0, 12.0, (m, 3))
    ends = np.stack([start, np.clip(start + rng.normal(0.0, 2.5, (m, 3)), 0.0, 12.0)], axis=1)
    ids = np.arange(m, dtype=np.int64) * 7 + 100
    kwargs = {
        "endpoints": ends,
        "attributes": {"width": rng.uniform(0.1, 1.0, (m, 2)).astype(np.float32)},
        "object_attributes": {"kind": rng.integers(0, 4, m).astype(np.int16)},
        "object_ids": ids,
        "groups": {"odd": ids[1::2]},
    }
    return zv.write_lines, kwargs, int(ids[4])


def _paths(
    rng: np.random.Generator, seed: int
) -> tuple[list[np.ndarray], dict[str, Any], np.ndarray]:
    pos, offsets = random_walk_paths(n=10, seed=seed, min_length=2, max_length=40)
    pos = np.clip(pos * 1.2, 0.0, 12.0)
    paths = [pos[a:b] for a, b in itertools.pairwise(offsets)]
    ids = np.arange(10, dtype=np.int64) + 1
    extra = {
        "attributes": {"t": [np.linspace(0.0, 1.0, len(p), dtype=np.float32) for p in paths]},
        "object_attributes": {"weight": rng.uniform(0.0, 1.0, 10)},
        "object_ids": ids,
        "groups": {"left": ids[:4]},
    }
    return paths, extra, ids


def _polylines(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    paths, extra, ids = _paths(rng, seed=11)
    return zv.write_polylines, {"polylines": paths, **extra}, int(ids[3])


def _streamlines(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    paths, extra, ids = _paths(rng, seed=12)
    kwargs = {"streamlines": paths, "step_size": 0.5, "step_size_unit": "mm", **extra}
    return zv.write_streamlines, kwargs, int(ids[5])


def _graph(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    per, comps = 15, 3
    positions = np.concatenate(
        [np.clip(np.cumsum(rng.normal(0, 1.5, (per, 3)), 0) + 6.0, 0.0, 12.0) for _ in range(comps)]
    )
    edges = []
    for c in range(comps):
        base = c * per
        edges += [(base + i, base + i + 1) for i in range(per - 1)]
        edges += [(base + i, base + int(rng.integers(0, i - 1))) for i in range(3, per, 4)]
    object_ids = np.repeat(np.array([10, 20, 30], dtype=np.int64), per)
    kwargs = {
        "positions": positions,
        "edges": np.array(edges, dtype=np.int64),
        "vertex_object_ids": object_ids,
        "attributes": {"degree_hint": rng.integers(0, 5, len(positions)).astype(np.int32)},
        "edge_attributes": {"weight": rng.uniform(0, 1, len(edges)).astype(np.float32)},
        "object_attributes": {"score": np.array([0.25, 0.5, 0.75])},
        "groups": {"pair": np.array([10, 30])},
    }
    return zv.write_graph, kwargs, 20


def _skeletons(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    pos, parents, offsets = random_walk_trees(n=4, nodes=25, seed=13)
    pos = np.clip((pos - 20.0) * 0.25, 0.0, 12.0)
    n = len(pos)
    ids = np.array([5, 6, 7, 8], dtype=np.int64)
    kwargs = {
        "positions": pos,
        "parents": parents,
        "offsets": offsets,
        "object_ids": ids,
        "radius": rng.uniform(0.1, 0.5, n).astype(np.float32),
        "swc_type": rng.integers(1, 4, n).astype(np.int8),
        "object_attributes": {"cell_type": np.array([1, 2, 1, 3], dtype=np.int32)},
        "groups": {"first": ids[:1]},
    }
    return zv.write_skeletons, kwargs, 7


def _sheet(origin: np.ndarray, n: int, step: float) -> tuple[np.ndarray, np.ndarray]:
    ii, jj = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    verts = np.stack([ii.ravel() * step, jj.ravel() * step, 0.3 * (ii + jj).ravel()], axis=1)
    quads = [
        (i * n + j, i * n + j + 1, (i + 1) * n + j) for i in range(n - 1) for j in range(n - 1)
    ]
    quads += [
        (i * n + j + 1, (i + 1) * n + j + 1, (i + 1) * n + j)
        for i in range(n - 1)
        for j in range(n - 1)
    ]
    return verts + origin, np.array(quads, dtype=np.int64)


def _meshes(rng: np.random.Generator) -> tuple[Callable[..., Any], dict[str, Any], int]:
    sheets = [_sheet(rng.uniform(0.0, 4.0, 3), 5, 1.7) for _ in range(3)]
    kwargs = {
        "vertices": sheets,
        "object_ids": np.array([101, 102, 103], dtype=np.int64),
        "attributes": {"curv": [rng.normal(0, 1, len(v)).astype(np.float32) for v, _ in sheets]},
        "face_attributes": {
            "region": [rng.integers(0, 3, len(f)).astype(np.uint8) for _, f in sheets]
        },
        "object_attributes": {"area": np.array([1.0, 2.0, 3.0])},
        "groups": {"pair": np.array([101, 103])},
    }
    return zv.write_meshes, kwargs, 102


Case = Callable[[np.random.Generator], tuple[Callable[..., Any], dict[str, Any], int]]
"""Input of one geometry type from a random generator: (write verb, its keywords, an id)."""

CASES: dict[str, Case] = {
    "point_cloud": _points,
    "line": _lines,
    "polyline": _polylines,
    "streamline": _streamlines,
    "graph": _graph,
    "skeleton": _skeletons,
    "mesh": _meshes,
}
"""Input of each geometry type: (write verb, its keyword arguments, an object id to query)."""


def _variants() -> list[dict[str, Any]]:
    out = [
        {"geometry_type": gtype, "zarr_format": fmt, "compressor": cname}
        for gtype in CASES
        for fmt in (2, 3)
        for cname in COMPRESSORS
    ]
    out.append(
        {"geometry_type": "polyline", "zarr_format": 3, "compressor": "zstd", "shards": [2, 2, 2]}
    )
    if importlib.util.find_spec("DracoPy") is not None:
        out.append(
            {"geometry_type": "mesh", "zarr_format": 3, "compressor": "zstd", "encoding": "draco"}
        )
    return out


def _name(v: dict[str, Any]) -> str:
    parts = [v["geometry_type"], f"v{v['zarr_format']}", v["compressor"]]
    if v.get("shards"):
        parts.append("sharded")
    if v.get("encoding"):
        parts.append(v["encoding"])
    return "-".join(parts)


def _write(v: dict[str, Any], path: Path) -> tuple[dict[str, Any], int]:
    seed = list(CASES).index(v["geometry_type"]) + 1
    write, kwargs, object_id = CASES[v["geometry_type"]](np.random.default_rng(seed))
    options: dict[str, Any] = {
        "chunk_shape": CHUNK,
        "zarr_format": v["zarr_format"],
        "compressor": COMPRESSORS[v["compressor"]],
        "notes": f"golden store {path.name}",
    }
    if v.get("shards"):
        options["shards"] = v["shards"]
    if v.get("encoding"):
        options["encoding"] = v["encoding"]
    write(str(path), **kwargs, **options)
    return kwargs, object_id


def _check_against_input(v: dict[str, Any], kwargs: dict[str, Any], got: Any) -> None:
    """Refuse to bless a store whose whole read does not give the input back."""
    gtype = v["geometry_type"]
    if gtype == "point_cloud":
        assert_points_equal(
            got, zv.Points(kwargs["positions"], kwargs["attributes"], kwargs["vertex_object_ids"])
        )
    elif gtype == "line":
        np.testing.assert_array_equal(got.endpoints, kwargs["endpoints"])
    elif gtype in ("polyline", "streamline"):
        paths = kwargs.get("polylines", kwargs.get("streamlines"))
        np.testing.assert_array_equal(got.positions, np.concatenate(paths))
    elif gtype == "graph":
        assert len(got.positions) == len(kwargs["positions"])
        assert len(got.edges) == len(kwargs["edges"])
    elif gtype == "skeleton":
        np.testing.assert_array_equal(got.positions, kwargs["positions"])
        np.testing.assert_array_equal(got.parents, kwargs["parents"])
    elif gtype == "mesh" and not v.get("encoding"):
        np.testing.assert_array_equal(
            got.vertices, np.concatenate([s[0] for s in kwargs["vertices"]])
        )


def _bless(v: dict[str, Any], path: Path, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    kwargs, object_id = _write(v, path)
    report = zv.validate(str(path))
    if not report.ok:
        raise SystemExit(f"{path.name} does not validate: {report}")
    entry = {"name": path.name, **v, "bbox": [list(BBOX[0]), list(BBOX[1])], "object_id": object_id}
    # every variant of a type holds the same data: one expected result per type (and encoding)
    entry["expected_key"] = "-".join(
        [v["geometry_type"], *([v["encoding"]] if v.get("encoding") else [])]
    )
    read = READERS[v["geometry_type"]]
    entry["expected"] = {}
    for query in QUERIES:
        got = read(str(path), **query_kwargs(entry, query))
        owners = flatten(got)[0]
        owners = owners.get("vertex_object_ids", owners["object_ids"])
        if query == "whole":
            _check_against_input(v, kwargs, got)
            whole = len(owners)
        elif not 0 < len(owners) < whole:
            raise SystemExit(f"{path.name}: the {query} query should select some of the data")
        flat, scalars = flatten(got)
        for key, value in flat.items():
            name = f"{entry['expected_key']}|{query}|{key}"
            if name in arrays:  # a variant already blessed this result: they must agree
                assert_arrays_identical(value, arrays[name], f"{path.name} {query} {key}")
            arrays[name] = value
        entry["expected"][query] = scalars
    return entry


def _source_commit() -> str:
    """Return the commit of the code that writes the stores (``+dirty`` when the tree has changes)."""
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "src"], capture_output=True, text=True, check=True
    )
    return f"zarr-vectors {head.stdout.strip()}" + ("+dirty" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    """Write every golden store; refuse to replace existing ones without ``--force``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="replace existing golden stores")
    args = parser.parse_args(argv)
    if GOLDEN_DIR.exists() and any(GOLDEN_DIR.iterdir()) and not args.force:
        print(f"{GOLDEN_DIR} exists: pass --force to replace it", file=sys.stderr)
        return 1
    shutil.rmtree(GOLDEN_DIR, ignore_errors=True)
    GOLDEN_DIR.mkdir(parents=True)
    arrays: dict[str, np.ndarray] = {}
    entries = []
    for v in _variants():
        path = GOLDEN_DIR / f"{_name(v)}.zip"
        entries.append(_bless(v, path, arrays))
        print(f"{path.name}: {path.stat().st_size} bytes")
    np.savez_compressed(EXPECTED, **arrays)
    doc = {
        "format_version": FORMAT_VERSION,
        "written_by": _source_commit(),
        "stores": entries,
    }
    stores = ",\n".join(json.dumps(e) for e in entries)  # one store per line
    head = json.dumps({k: doc[k] for k in ("format_version", "written_by")})[:-1]
    MANIFEST.write_text(f'{head}, "stores": [\n{stores}\n]}}\n')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
