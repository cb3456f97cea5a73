"""Regenerate the pictures of the documentation in ``docs/assets/``.

Usage::

    python scripts/make_doc_images.py [--out docs/assets]

Pictures come from two sources, so that they show what the code on the pages really does:

* the concept figures are drawn here with matplotlib from stores written by the library;
* the pictures of the tutorials are the PNGs that the pages' own examples write with
  ``zarr_vectors.viz.render``: the page's python blocks are run (as ``tests/test_docs.py``
  runs them) in a temporary directory and the PNG is copied (:data:`PAGE_IMAGES`).

Needs the ``viz`` extra (matplotlib) plus whatever the pages need (trimesh). The test suite does
not run this script; run it after changing a page's example data, and commit the PNGs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

import zarr_vectors as zv

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "assets"

PAGE_IMAGES: dict[str, dict[str, str]] = {
    "getting-started.md": {"tissue.png": "tissue.png"},
    "tutorials/points.md": {"slide.png": "slide.png"},
    "tutorials/streamlines.md": {"tracts.png": "tracts.png"},
    "tutorials/graphs.md": {"vessels.png": "vessels.png"},
    "tutorials/skeletons.md": {"neurons.png": "neurons.png"},
    "tutorials/meshes.md": {"cells.png": "meshes.png"},
}
"""Page -> {PNG its examples write: name in docs/assets}."""


def _grid(
    ax: Axes,
    lo: tuple[float, float],
    hi: tuple[float, float],
    step: tuple[float, float],
    **style: Any,
) -> None:
    for x in np.arange(lo[0], hi[0] + 1e-9, step[0]):
        ax.axvline(x, **style)
    for y in np.arange(lo[1], hi[1] + 1e-9, step[1]):
        ax.axhline(y, **style)


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    return fig, axes


def concepts_grid(out: Path, work: Path) -> None:
    """Chunks (solid), bins (dotted), a query box and the chunks it reads."""
    rng = np.random.default_rng(3)
    centres = rng.uniform(5, 35, (6, 2))
    pts = np.concatenate([c + rng.normal(0, 2.5, (60, 2)) for c in centres])
    pts = pts[np.all((pts >= 0) & (pts < 40), axis=1)]
    store = work / "grid.zarrvectors"
    zv.write_points(store, pts, chunk_shape=(10, 10), bin_shape=(5, 5))
    lo, hi = np.array([13.0, 6.0]), np.array([27.0, 18.0])
    got = zv.read_points(store, bbox=(lo.tolist(), hi.tolist())).positions
    fig, (ax,) = _figure(6.4, 6.0)
    for cx in range(int(lo[0] // 10), int(np.ceil(hi[0] / 10))):
        for cy in range(int(lo[1] // 10), int(np.ceil(hi[1] / 10))):
            ax.add_patch(Rectangle((cx * 10, cy * 10), 10, 10, color="#fde68a", zorder=0))
    _grid(ax, (0, 0), (40, 40), (5, 5), color="#9ca3af", lw=0.6, ls=":")
    _grid(ax, (0, 0), (40, 40), (10, 10), color="#374151", lw=1.4)
    ax.scatter(pts[:, 0], pts[:, 1], s=6, color="#6b7280", zorder=2)
    ax.scatter(got[:, 0], got[:, 1], s=10, color="#dc2626", zorder=3)
    width, height = hi - lo
    ax.add_patch(Rectangle((lo[0], lo[1]), width, height, fill=False, ec="#dc2626", lw=2, zorder=4))
    ax.text(lo[0], lo[1] - 1.4, "query box (min <= p < max)", color="#dc2626", fontsize=9)
    ax.text(0.5, 38.6, "chunk (0, 3)", fontsize=9, color="#374151")
    ax.text(30.5, 0.6, "bins: 2 x 2\nper chunk", fontsize=8, color="#6b7280")
    ax.set(xlim=(0, 40), ylim=(0, 40), aspect="equal", xlabel="x", ylabel="y")
    ax.set_title(
        "chunk_shape = (10, 10), bin_shape = (5, 5)\n"
        f"the box reads the 6 shaded chunks and returns {len(got)} points",
        fontsize=10,
    )
    fig.savefig(out / "concepts-grid.png", dpi=110)


def concepts_objects(out: Path, work: Path) -> None:
    """Draw the worked path example of the specification (§8.6) over its chunks."""
    paths = [np.array([[-5.0, 7], [2, 8], [7, 3], [14, 2]]), np.array([[3.0, 2], [4, 1]])]
    store = work / "paths.zarrvectors"
    zv.write_polylines(store, paths, object_ids=[901, 17], chunk_shape=(10, 10), bin_shape=(5, 5))
    fig, (ax,) = _figure(7.0, 3.0)
    _grid(ax, (-10, 0), (20, 10), (5, 5), color="#9ca3af", lw=0.6, ls=":")
    _grid(ax, (-10, 0), (20, 10), (10, 10), color="#374151", lw=1.4)
    colours = ["#2563eb", "#16a34a"]
    for k, (path, uid) in enumerate(zip(paths, [901, 17], strict=True)):
        ax.plot(
            path[:, 0],
            path[:, 1],
            "-o",
            color=colours[k],
            lw=2,
            ms=6,
            zorder=3,
            label=f"object {k} (user id {uid})",
        )
        for j, (x, y) in enumerate(path):
            ax.annotate(
                f"{'ab'[k]}{j}",
                (x, y),
                textcoords="offset points",
                xytext=(4, 5),
                fontsize=9,
                color=colours[k],
            )
    for a, b in [(paths[0][0], paths[0][1]), (paths[0][2], paths[0][3])]:
        mid = (a + b) / 2
        ax.annotate(
            "cross-chunk link",
            mid,
            textcoords="offset points",
            xytext=(-20, -14),
            fontsize=8,
            color="#dc2626",
        )
    for cx in (-1, 0, 1):
        ax.text(cx * 10 + 0.4, 9.2, f"chunk ({cx}, 0)", fontsize=8, color="#374151")
    ax.set(xlim=(-10, 20), ylim=(0, 10), aspect="equal", xlabel="x", ylabel="y")
    ax.legend(loc="lower left", fontsize=8)
    ax.set_title("two polylines; object 0 is stored in three chunks, read back whole", fontsize=10)
    fig.savefig(out / "concepts-objects.png", dpi=110)


def concepts_levels(out: Path, work: Path) -> None:
    """Level 0 and two coarser pyramid levels of one point cloud."""
    rng = np.random.default_rng(7)
    centres = rng.uniform(10, 70, (8, 2))
    pts = np.concatenate([c + rng.normal(0, 4, (400, 2)) for c in centres])
    pts = pts[np.all((pts >= 0) & (pts < 80), axis=1)]
    store = work / "levels.zarrvectors"
    zv.write_points(store, pts, chunk_shape=(40, 40), bin_shape=(2.5, 2.5))
    zv.build_pyramid(store, [(2, 2), (8, 8)])
    fig, axes = _figure(11.0, 4.0, ncols=3)
    for level, ax in enumerate(axes):
        got = zv.read_points(store, level=level).positions
        bin_edge = 2.5 * (1, 2, 8)[level]
        _grid(ax, (0, 0), (80, 80), (bin_edge, bin_edge), color="#e5e7eb", lw=0.4)
        _grid(ax, (0, 0), (80, 80), (40, 40), color="#374151", lw=1.2)
        ax.scatter(got[:, 0], got[:, 1], s=3 if level == 0 else 8, color="#2563eb")
        ax.set(xlim=(0, 80), ylim=(0, 80), aspect="equal", xticks=[], yticks=[])
        ax.set_title(f"level {level}: bin {bin_edge:g}, {len(got)} vertices", fontsize=10)
    fig.savefig(out / "concepts-levels.png", dpi=100)


def _load_docs_test() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_docs", ROOT / "tests" / "test_docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["test_docs"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def page_images(out: Path, work: Path) -> None:
    """Run each page of :data:`PAGE_IMAGES` and copy the PNGs its examples write."""
    docs_test = _load_docs_test()
    here = Path.cwd()
    for page, images in PAGE_IMAGES.items():
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        folder = work / page.replace("/", "_")
        folder.mkdir()
        os.chdir(folder)
        try:
            namespace: dict[str, object] = {"__name__": "__main__"}
            for block in docs_test.code_blocks(text, page):
                if block.language == "python" and not block.skip:
                    code = compile(block.source, f"docs/{page}:{block.line}", "exec")
                    exec(code, namespace)  # noqa: S102 -- the pages' own examples
        finally:
            os.chdir(here)
        for written, name in images.items():
            shutil.copyfile(folder / written, out / name)
            print("wrote", name, "from", page)


def main(argv: list[str] | None = None) -> None:
    """Write every picture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for make in (concepts_grid, concepts_objects, concepts_levels):
            make(args.out, work)
            print("wrote", make.__name__)
        page_images(args.out, work)


if __name__ == "__main__":
    main()
