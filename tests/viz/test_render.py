"""``zarr_vectors.viz.render``: every geometry type draws where its data is, from pixel statistics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner
from viz_stores import DATA_MAX, VIEW_BOX, WRITERS

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.viz import Projection, RenderResult, render
from zarr_vectors.viz._scene import axis_labels

COLOURFUL = 40  # max - min channel spread of a "coloured" pixel (axes and text are grey)


def _rgb(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.int16)


def _coloured(rgb: np.ndarray) -> np.ndarray:
    return (rgb.max(axis=2) - rgb.min(axis=2)) > COLOURFUL


@dataclass(frozen=True)
class Frame:
    """Pixel box of a 2-D axes, found from its black spines."""

    top: int
    bottom: int
    left: int
    right: int

    def fraction(self, mask: np.ndarray, x: tuple[float, float], y: tuple[float, float]) -> float:
        """Fraction of pixels set in the part of the frame spanning data fractions x and y."""
        w, h = self.right - self.left, self.bottom - self.top
        c0, c1 = self.left + int(x[0] * w), self.left + int(x[1] * w)
        r0, r1 = self.bottom - int(y[1] * h), self.bottom - int(y[0] * h)
        return float(mask[r0:r1, c0:c1].mean())


def _frame(rgb: np.ndarray) -> Frame:
    dark = rgb.max(axis=2) < 90
    rows = np.flatnonzero(dark.sum(axis=1) > 0.3 * rgb.shape[1])
    cols = np.flatnonzero(dark.sum(axis=0) > 0.3 * rgb.shape[0])
    assert rows.size >= 2, "no horizontal spines found"
    # vertical lines: the axes' left and right spines first, a colour bar's outline after them
    groups = np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1)
    assert len(groups) >= 2, "no vertical spines found"
    return Frame(int(rows[0]) + 2, int(rows[-1]) - 1, int(groups[0][-1]) + 2, int(groups[1][0]) - 1)


# -- every geometry type ------------------------------------------------------------------------


@pytest.mark.parametrize("geometry", list(WRITERS))
def test_2d_view_shows_data_where_it_is(stores: dict[str, str], tmp_path: Path, geometry: str):
    out = tmp_path / "view.png"
    result = render(stores[geometry], out, bbox=VIEW_BOX, dpi=80)
    assert isinstance(result, RenderResult)
    assert result.path == out
    assert out.is_file()
    assert result.geometry_type is GeometryTypeName(geometry)
    assert result.level == 0
    assert result.vertices > 0
    rgb = _rgb(out)
    frame, mask = _frame(rgb), _coloured(rgb)
    inside = DATA_MAX / 100
    # colour where the data is (lower-left), none in the empty upper-right quarter
    assert frame.fraction(mask, (0, inside), (0, inside)) > 0.01
    assert frame.fraction(mask, (0.5, 1.0), (0.5, 1.0)) == 0.0


@pytest.mark.parametrize("geometry", list(WRITERS))
def test_3d_view_is_not_blank(stores: dict[str, str], tmp_path: Path, geometry: str):
    out = tmp_path / "view3d.png"
    result = render(stores[geometry], out, projection="3d", dpi=80)
    assert result.projection is Projection.THREE_D
    assert _coloured(_rgb(out)).mean() > 0.002


@pytest.mark.slow
def test_counts_per_geometry(stores: dict[str, str], tmp_path: Path):
    out = tmp_path / "x.png"
    mesh = render(stores["mesh"], out)
    assert (mesh.objects, mesh.faces, mesh.edges, mesh.vertices) == (2, 16, 0, 12)
    skel = render(stores["skeleton"], out)
    assert (skel.objects, skel.edges, skel.vertices) == (2, 10, 12)
    lines = render(stores["line"], out)
    assert (lines.objects, lines.edges, lines.vertices) == (40, 40, 80)
    graph = render(stores["graph"], out)
    assert (graph.edges, graph.vertices, graph.drawn_vertices) == (29, 30, 30)


@pytest.mark.parametrize("projection", ["xz", "yz"])
def test_side_projections(stores: dict[str, str], tmp_path: Path, projection: str):
    out = tmp_path / "side.png"
    render(stores["polyline"], out, bbox=VIEW_BOX, projection=projection, dpi=80)
    rgb = _rgb(out)
    frame, mask = _frame(rgb), _coloured(rgb)
    assert frame.fraction(mask, (0, 0.4), (0, 0.4)) > 0.01
    assert frame.fraction(mask, (0.5, 1.0), (0.5, 1.0)) == 0.0


# -- colour -------------------------------------------------------------------------------------


def _right_of_frame(path: Path) -> float:
    rgb = _rgb(path)
    frame = _frame(rgb)
    return float(_coloured(rgb)[frame.top : frame.bottom, frame.right + 5 :].mean())


@pytest.mark.parametrize(
    ("geometry", "attribute"),
    [
        ("point_cloud", "intensity"),  # per vertex, float
        ("point_cloud", "label"),  # per vertex, strings
        ("polyline", "weight"),  # per object
        ("graph", "w"),  # per edge
        ("mesh", "height"),  # per vertex, averaged per face
    ],
)
def test_colour_bar(stores: dict[str, str], tmp_path: Path, geometry: str, attribute: str):
    plain, coloured = tmp_path / "plain.png", tmp_path / "coloured.png"
    render(stores[geometry], plain, bbox=VIEW_BOX, dpi=80)
    result = render(stores[geometry], coloured, bbox=VIEW_BOX, color_by=attribute, dpi=80)
    assert result.color_by == attribute
    assert _right_of_frame(plain) == 0.0
    if result.legend:  # categories: a legend of small coloured patches
        assert _right_of_frame(coloured) > 0.001
    else:
        assert _right_of_frame(coloured) > 0.01  # the colour bar


def test_colour_follows_values(make_store, tmp_path: Path):
    # low values on the left, high on the right: viridis goes from purple to yellow
    pos = np.array([[x, y] for x in np.linspace(1, 99, 40) for y in np.linspace(1, 99, 40)])
    store = make_store(zv.write_points, pos, chunk_shape=(50, 50), attributes={"v": pos[:, 0]})
    out = tmp_path / "v.png"
    render(store, out, color_by="v", bbox=[0, 0, 100, 100], dpi=80)
    rgb = _rgb(out)
    f = _frame(rgb)
    w = f.right - f.left
    left = rgb[f.top : f.bottom, f.left : f.left + w // 5].reshape(-1, 3)
    right = rgb[f.top : f.bottom, f.right - w // 5 : f.right].reshape(-1, 3)
    left, right = left[_coloured(left[None])[0]], right[_coloured(right[None])[0]]
    assert left[:, 0].mean() < left[:, 2].mean()  # purple/blue: more blue than red
    assert right[:, 0].mean() > right[:, 2].mean()  # yellow: more red than blue


def test_unknown_colour_attribute(stores: dict[str, str], tmp_path: Path):
    with pytest.raises(InvalidInputError, match="available"):
        render(stores["point_cloud"], tmp_path / "x.png", color_by="nope")


# -- level choice -------------------------------------------------------------------------------


@pytest.fixture
def pyramid_store(make_store) -> str:
    rng = np.random.default_rng(1)
    store = make_store(
        zv.write_points,
        rng.uniform(0, 100, (20_000, 3)),
        chunk_shape=(50, 50, 50),
        bin_shape=(5, 5, 5),
    )
    zv.build_pyramid(store, [(2, 2, 2), (10, 10, 10)])
    return store


@pytest.mark.slow
def test_level_chosen_automatically(pyramid_store: str, tmp_path: Path):
    full = render(pyramid_store, tmp_path / "a.png")
    assert full.level == 0
    assert full.vertices == 20_000
    small = render(pyramid_store, tmp_path / "b.png", max_vertices=500)
    assert small.level == zv.choose_level(pyramid_store, max_vertices=500) == 2
    assert small.vertices < 2_000
    box = [0, 0, 0, 20, 20, 20]
    boxed = render(pyramid_store, tmp_path / "c.png", bbox=box, max_vertices=2_000)
    assert boxed.level == zv.choose_level(
        pyramid_store, bbox=([0, 0, 0], [20, 20, 20]), max_vertices=2_000
    )
    assert boxed.level < small.level


def test_explicit_level_and_thinning(pyramid_store: str, tmp_path: Path):
    r = render(pyramid_store, tmp_path / "a.png", level=1, max_vertices=300)
    assert r.level == 1
    assert r.drawn_vertices == 300 < r.vertices
    with pytest.raises(InvalidInputError, match="level 7"):
        render(pyramid_store, tmp_path / "b.png", level=7)


# -- edge cases ---------------------------------------------------------------------------------


def test_empty_box_still_draws(stores: dict[str, str], tmp_path: Path):
    out = tmp_path / "empty.png"
    r = render(stores["point_cloud"], out, bbox=[60, 60, 60, 90, 90, 90])
    assert r.vertices == 0
    assert out.is_file()
    assert _coloured(_rgb(out)).sum() == 0


def test_2d_store(make_store, tmp_path: Path):
    pos = np.random.default_rng(0).uniform(0, 30, (50, 2))
    store = make_store(zv.write_points, pos, chunk_shape=(50, 50))
    out = tmp_path / "p.png"
    assert render(store, out, bbox=[0, 0, 100, 100]).vertices == 50
    rgb = _rgb(out)
    frame = _frame(rgb)
    assert frame.fraction(_coloured(rgb), (0.5, 1), (0.5, 1)) == 0.0
    with pytest.raises(InvalidInputError, match="3 axes"):
        render(store, out, projection="3d")
    with pytest.raises(InvalidInputError, match="projection"):
        render(store, out, projection="zz")  # type: ignore[arg-type]


def test_axis_labels_use_units(stores: dict[str, str]):
    meta = zv.open(stores["point_cloud"]).metadata
    assert axis_labels(meta) == ["x (micrometer)", "y (micrometer)", "z (micrometer)"]


# -- command line -------------------------------------------------------------------------------


def test_cli_render(stores: dict[str, str], tmp_path: Path):
    out = tmp_path / "cli.png"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "render",
            stores["polyline"],
            "-o",
            str(out),
            "--bbox",
            "0,0,0,100,100,100",
            "--color-by",
            "speed",
            "--projection",
            "3d",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "level 0" in result.output
    assert out.is_file()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--bbox", "1,2,3"], 2),
        (["--color-by", "missing"], 2),
        (["--projection", "diagonal"], 2),
    ],
)
def test_cli_render_errors(stores: dict[str, str], tmp_path: Path, args: list[str], code: int):
    result = CliRunner().invoke(
        app, ["render", stores["point_cloud"], "-o", str(tmp_path / "x.png"), *args]
    )
    assert result.exit_code == code


def test_cli_render_missing_store(tmp_path: Path):
    result = CliRunner().invoke(app, ["render", str(tmp_path / "nothing"), "-o", "x.png"])
    assert result.exit_code == 2
