"""Categorical attributes are drawn with a discrete legend, others with a colour bar."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from matplotlib import colormaps
from PIL import Image

import zarr_vectors as zv
from zarr_vectors.viz.render import render


@pytest.fixture
def scan(tmp_path: Path) -> str:
    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 100, (3000, 3))
    classification = np.where(pos[:, 2] > 50, 2, np.where(pos[:, 0] > 50, 6, 1)).astype(np.uint8)
    store = str(tmp_path / "scan.zarrvectors")
    zv.write_points(
        store,
        pos,
        chunk_shape=(50, 50, 50),
        attributes={
            "classification": classification,  # LAS codes: categories
            "height": pos[:, 2].astype(np.float32),
            "intensity": rng.integers(0, 65535, 3000).astype(np.uint16),  # many values
            "label": rng.choice(["ground", "tree"], 3000),
        },
    )
    return store


@pytest.mark.parametrize(
    ("attribute", "legend"),
    [
        ("classification", ("1", "2", "6")),
        ("label", ("ground", "tree")),
        ("height", ()),
        ("intensity", ()),
    ],
)
def test_legend_or_colour_bar(scan: str, tmp_path: Path, attribute: str, legend: tuple) -> None:
    out = tmp_path / f"{attribute}.png"
    result = render(scan, out, color_by=attribute, dpi=60)
    assert result.legend == legend
    assert out.stat().st_size > 0


def test_legend_colours_match_points(scan: str, tmp_path: Path) -> None:
    """Each legend entry's colour is used by the points of that class (and only those)."""
    out = tmp_path / "c.png"
    render(scan, out, color_by="classification", dpi=60, projection="xz")
    rgb = np.asarray(Image.open(out).convert("RGB")).astype(int)
    colours = {tuple(c) for c in rgb.reshape(-1, 3).tolist()}
    # tab10 resampled to 3 classes: blue, brown, cyan all appear in the picture
    cmap = colormaps["tab10"].resampled(3)
    for i in range(3):
        want = tuple(round(255 * v) for v in cmap(i)[:3])
        assert any(sum(abs(a - b) for a, b in zip(c, want, strict=True)) < 6 for c in colours)
