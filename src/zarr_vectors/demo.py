"""A two-minute tour: write a point cloud and a streamline store, query them, validate them.

Run ``python -m zarr_vectors.demo [OUTPUT_DIR]`` (default ``./demo-output``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from zarr_vectors.types.points import read_points, write_points
from zarr_vectors.types.polylines import read_streamlines, write_streamlines
from zarr_vectors.validate import validate

__all__ = ["main"]


def _random_walks(rng: np.random.Generator, n: int, steps: int) -> list[np.ndarray]:
    start = rng.uniform(20, 180, (n, 1, 3))
    dirs = rng.normal(0, 1, (n, 1, 3))
    wiggle = rng.normal(0, 0.3, (n, steps, 3)) + dirs
    wiggle /= np.linalg.norm(wiggle, axis=2, keepdims=True)
    return list((start + np.cumsum(wiggle, axis=1)).astype(np.float32))


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return a process exit code."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "demo-output")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)

    n = 200_000
    pts = rng.uniform(0, 1000, (n, 3)).astype(np.float32)
    t = time.perf_counter()
    write_points(
        out / "spots.zarrvectors",
        pts,
        chunk_shape=(250, 250, 250),
        bin_shape=(50, 50, 50),
        overwrite=True,
        axis_units="micrometer",
        attributes={
            "intensity": rng.random(n, dtype=np.float32),
            "gene": rng.choice(np.array(["Gad1", "Slc17a7", "Pvalb"]), n),
        },
    )
    t_write = time.perf_counter() - t
    t = time.perf_counter()
    box = read_points(out / "spots.zarrvectors", bbox=([100, 100, 100], [300, 300, 300]))
    t_box = time.perf_counter() - t
    expected = int(np.all((pts >= 100) & (pts < 300), axis=1).sum())
    print(
        f"points: wrote {n:,} in {t_write * 1e3:.0f} ms; bbox read {len(box):,} points "
        f"(expected {expected:,}) in {t_box * 1e3:.1f} ms; genes {sorted(set(box.attributes['gene']))}"
    )

    walks = _random_walks(rng, 2_000, 100)
    write_streamlines(
        out / "tracts.zarrvectors",
        walks,
        chunk_shape=(50, 50, 50),
        bin_shape=(25, 25, 25),
        step_size=1.0,
        step_size_unit="millimeter",
        overwrite=True,
        attributes={"fa": [rng.random(len(w)) for w in walks]},
    )
    one = read_streamlines(out / "tracts.zarrvectors", object_ids=[42])
    same = bool(np.array_equal(one[0], walks[42]))
    print(f"streamlines: wrote {len(walks):,}; streamline 42 read back exactly: {same}")

    ok = True
    for name in ("spots.zarrvectors", "tracts.zarrvectors"):
        report = validate(out / name, level=2)
        ok &= report.ok
        print(
            f"validate {name}: {'OK' if report.ok else 'ERRORS'} ({len(report.findings)} findings)"
        )
    ok &= len(box) == expected and same
    print(f"stores are in {out.resolve()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
