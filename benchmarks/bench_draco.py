"""Draco vertex compression: stored size and vertex error against quantization bits.

The surface is a marching-cubes isosurface of a smooth random field (a cell-like blob
with several lobes), built with ``skimage.measure.marching_cubes`` when scikit-image is
installed, else the displaced-icosphere set of :func:`benchmarks.datasets.make_mesh_set`.
For each ``quantization_bits`` the mesh is written with ``encoding="draco"`` and read back;
the table gives the ``vertices`` array size against the raw (float32 rows, zstd) encoding,
the whole store size, and the maximum and RMS vertex error (absolute, and relative to the
bounding-box diagonal).  Faces and vertex order must come back unchanged.

Run::

    python -m benchmarks.bench_draco [--grid 160] [--bits 8 10 12 14 16 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

import zarr_vectors as zv
from benchmarks.datasets import make_mesh_set


@dataclass(frozen=True)
class DracoRow:
    """One quantization setting."""

    bits: int
    vertices_bytes: int
    store_bytes: int
    max_error: float
    rms_error: float
    max_error_rel: float
    write_s: float
    read_s: float
    faces_equal: bool


def isosurface(
    grid: int, seed: int = 0
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], str]:
    """A marching-cubes surface of a sum of Gaussian blobs on a ``grid``³ lattice (µm)."""
    try:
        from skimage.measure import marching_cubes
    except ImportError:
        mesh = make_mesh_set(total_vertices=200_000, seed=seed)
        return mesh.vertices, mesh.faces, "displaced icospheres (scikit-image not installed)"
    rng = np.random.default_rng(seed)
    axis = np.linspace(-1.0, 1.0, grid)
    x, y, z = np.meshgrid(axis, axis, axis, indexing="ij", sparse=True)
    field = np.zeros((grid, grid, grid), dtype=np.float32)
    for _ in range(12):
        c = rng.uniform(-0.5, 0.5, 3)
        s = rng.uniform(0.12, 0.3)
        field += np.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2 + (z - c[2]) ** 2) / (2 * s * s))
    field += rng.normal(0, 0.01, field.shape).astype(np.float32)
    verts, faces, _, _ = marching_cubes(field, level=0.5, spacing=(0.25, 0.25, 0.25))
    return verts.astype(np.float32), faces.astype(np.int64), f"marching cubes, {grid}^3 grid"


def _same_faces(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> bool:
    """Same set of faces (the store keeps faces per chunk, not in input order)."""
    return a.shape == b.shape and bool(np.array_equal(np.unique(a, axis=0), np.unique(b, axis=0)))


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(grid: int, bits: list[int], workdir: Path) -> tuple[str, int, int, int, list[DracoRow]]:
    """Write the surface raw and with each ``bits``; return the description and rows."""
    verts, faces, what = isosurface(grid)
    chunk = (np.ptp(verts, axis=0).max() / 4.0,) * 3
    workdir.mkdir(parents=True, exist_ok=True)
    raw_path = workdir / "raw.zv"
    shutil.rmtree(raw_path, ignore_errors=True)
    one = np.zeros(len(verts), dtype=np.int64)  # one object: vertices come back in input order
    zv.write_meshes(raw_path, verts, faces, chunk_shape=chunk, vertex_object_ids=one)
    raw_vertices, raw_store = _size(raw_path / "0" / "vertices"), _size(raw_path)
    diag = float(np.linalg.norm(np.ptp(verts, axis=0)))
    rows = []
    for b in bits:
        path = workdir / f"draco{b}.zv"
        shutil.rmtree(path, ignore_errors=True)
        t0 = time.perf_counter()
        zv.write_meshes(
            path,
            verts,
            faces,
            chunk_shape=chunk,
            vertex_object_ids=one,
            encoding="draco",
            quantization_bits=b,
        )
        t1 = time.perf_counter()
        back = zv.read_meshes(path)
        t2 = time.perf_counter()
        err = np.linalg.norm(back.vertices.astype(np.float64) - verts, axis=1)
        rows.append(
            DracoRow(
                bits=b,
                vertices_bytes=_size(path / "0" / "vertices"),
                store_bytes=_size(path),
                max_error=float(err.max()),
                rms_error=float(np.sqrt(np.mean(err**2))),
                max_error_rel=float(err.max() / diag),
                write_s=t1 - t0,
                read_s=t2 - t1,
                faces_equal=_same_faces(back.faces, faces),
            )
        )
    return what, len(verts), raw_vertices, raw_store, rows


def markdown(what: str, n: int, raw_vertices: int, raw_store: int, rows: list[DracoRow]) -> str:
    """The result table."""
    head = (
        f"Surface: {what}, {n:,} vertices; raw encoding: `vertices` {raw_vertices / 1e6:.2f} MB,"
        f" store {raw_store / 1e6:.2f} MB."
    )
    columns = (
        "| bits | `vertices` size | vs raw | store vs raw | max error | max / diagonal "
        "| RMS error | write | read | same faces |"
    )
    out = [head, "", columns, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    out.extend(
        f"| {r.bits} | {r.vertices_bytes / 1e6:.2f} MB | {r.vertices_bytes / raw_vertices:.2f}×"
        f" | {r.store_bytes / raw_store:.2f}× | {r.max_error:.2e} | {r.max_error_rel:.1e}"
        f" | {r.rms_error:.2e} | {r.write_s:.2f} s | {r.read_s:.2f} s"
        f" | {'yes' if r.faces_equal else 'NO'} |"
        for r in rows
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=160, help="marching-cubes lattice size")
    ap.add_argument("--bits", type=int, nargs="+", default=[8, 10, 12, 14, 16, 20])
    ap.add_argument("--workdir", type=Path, default=Path("/work/bench-runs/draco"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    what, n, raw_v, raw_s, rows = run(args.grid, args.bits, args.workdir)
    print(markdown(what, n, raw_v, raw_s, rows))
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "surface": what,
                    "vertices": n,
                    "raw_vertices_bytes": raw_v,
                    "raw_store_bytes": raw_s,
                    "rows": [asdict(r) for r in rows],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
