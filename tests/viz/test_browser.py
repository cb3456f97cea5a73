"""The real Neuroglancer client, in headless Chromium, shows what ``view`` exports and serves.

The client is built from the ``neuroglancer`` npm package at test time (``ngclient``; cached,
never committed) and served from the same local server as the export, as the ``view`` command
does.  The test reads the screenshot's pixels: the data's colour must be on screen.  It is
skipped only when no Chromium is installed (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from _cdp import Chromium, find_chromium
from ngclient import build_client
from PIL import Image

from zarr_vectors.viz import export_neuroglancer, neuroglancer_url, serve, viewer_state

CHROMIUM = find_chromium()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed"),
]

UI_ROWS = 120  # top bar, layer bar and axis labels


@pytest.fixture(scope="module")
def client() -> Path:
    return build_client()


def _annotation_pixels(rgb: np.ndarray) -> int:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return int(np.sum((r > 200) & (g > 150) & (g < 240) & (b < 90)))  # the layer's #ffcc00


def _segment_pixels(rgb: np.ndarray) -> int:
    coloured = (rgb.max(axis=2) - rgb.min(axis=2)) > 60
    primary = (rgb < 40).sum(axis=2) >= 2  # the 3-D view's pure red/green/blue axis lines
    return int(np.sum(coloured & ~primary))


def _show(
    client: Path,
    store: str,
    site: Path,
    measure: Callable[[np.ndarray], int],
    minimum: int,
    timeout: float = 60.0,
) -> tuple[int, Path]:
    export = export_neuroglancer(store, site)
    os.symlink(client / "ng", site / "ng")
    os.symlink(client / "async_computation.bundle.js", site / "async_computation.bundle.js")
    shot = site.parent / f"{site.name}.png"
    with serve(site) as server, Chromium(str(CHROMIUM)) as browser:
        url = neuroglancer_url(viewer_state(export, server.url), f"{server.url}/ng/index.html")
        _open(browser, url, export.source)
        deadline = time.monotonic() + timeout
        count = 0
        while time.monotonic() < deadline:
            png = browser.screenshot()
            rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
            count = measure(rgb[UI_ROWS:])
            if count >= minimum:
                break
            time.sleep(1.0)
        shot.write_bytes(png)
        assert _layers(browser) == [export.source]
    return count, shot


def _layers(browser: Chromium) -> list[str]:
    names = browser.evaluate("JSON.stringify(viewer.layerManager.managedLayers.map(l => l.name))")
    return list(json.loads(names))


def _open(browser: Chromium, url: str, layer: str, attempts: int = 4) -> None:
    """Load the viewer until it has restored our layer from the URL state.

    The bundled client (2.41.2) now and then fails to restore an annotation layer at start-up
    ("Cannot read properties of undefined (reading 'length')" in the layer's restoreState, a
    race inside the client) and falls back to an empty "new layer"; loading again recovers.
    """
    ready = "typeof viewer !== 'undefined' && viewer.isReady()"
    for _ in range(attempts):
        browser.navigate("about:blank")
        browser.navigate(url)
        assert browser.wait_for(ready, 180), browser.console
        time.sleep(1.0)
        if _layers(browser) == [layer]:
            return
    raise AssertionError(f"the viewer did not restore layer {layer!r} in {attempts} loads")


def test_points_as_annotations(client: Path, stores: dict[str, str], tmp_path: Path):
    count, shot = _show(client, stores["point_cloud"], tmp_path / "points", _annotation_pixels, 500)
    assert count >= 500, f"annotation colour not on screen, see {shot}"


def test_polylines_as_line_annotations(client: Path, stores: dict[str, str], tmp_path: Path):
    count, shot = _show(client, stores["polyline"], tmp_path / "lines", _annotation_pixels, 300)
    assert count >= 300, f"line annotations not on screen, see {shot}"


def test_skeletons(client: Path, stores: dict[str, str], tmp_path: Path):
    count, shot = _show(client, stores["skeleton"], tmp_path / "skeleton", _segment_pixels, 150)
    assert count >= 150, f"skeleton not on screen, see {shot}"


def test_meshes(client: Path, stores: dict[str, str], tmp_path: Path):
    count, shot = _show(client, stores["mesh"], tmp_path / "mesh", _segment_pixels, 2000)
    assert count >= 2000, f"meshes not on screen, see {shot}"
