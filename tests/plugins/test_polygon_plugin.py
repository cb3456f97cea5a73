"""A geometry type added from outside the package: closed polygons (``tests/plugins/polygons``).

The plug-in is a one-module distribution whose ``.dist-info/entry_points.txt`` registers it in
the ``zarr_vectors.geometry_types`` group.  The tests copy it to a temporary site directory,
put that on ``sys.path``, and reach the type only by its name: the entry point is discovered
by ``importlib.metadata`` on the first lookup.  Then the whole library works on ``polygon``
stores — write, read, box and id queries, streaming, pyramid, validation, rendering and
conversion to and from a file format — without any library file naming the type.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from typer.testing import CliRunner

import zarr_vectors as zv
import zarr_vectors.spec.typespec as typespec_registry
import zarr_vectors.types._base as type_registry
from zarr_vectors.cli import app
from zarr_vectors.errors import GeometryError, UnknownGeometryTypeError
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.testing import Box, GeometryTypeTests, canonical_objects, in_box
from zarr_vectors.types import get_geometry_type
from zarr_vectors.viz.render import render

AnyArray = npt.NDArray[Any]
PLUGIN = Path(__file__).with_name("polygons")


@pytest.fixture(scope="module", autouse=True)
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The plug-in distribution on ``sys.path``; registries restored afterwards."""
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(PLUGIN, site, dirs_exist_ok=True)
    # the registries are process-wide: snapshot them so other test modules never see polygons
    saved = (
        dict(typespec_registry._SPECS),
        dict(typespec_registry._LOADED),
        typespec_registry._ENTRY_POINTS,
        dict(type_registry._REGISTRY),
    )
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("zv_polygons", None)
        typespec_registry._SPECS.clear()
        typespec_registry._SPECS.update(saved[0])
        typespec_registry._LOADED.clear()
        typespec_registry._LOADED.update(saved[1])
        typespec_registry._ENTRY_POINTS = saved[2]
        type_registry._REGISTRY.clear()
        type_registry._REGISTRY.update(saved[3])


def plugin() -> ModuleType:
    """The plug-in module (imported by the entry point on the first lookup of its name)."""
    get_geometry_type("polygon")
    return importlib.import_module("zv_polygons")


def rings() -> list[AnyArray]:
    """Eight rings of 3-12 vertices crossing 4-unit chunks (1/8 grid, float32-exact)."""
    rng = np.random.default_rng(11)
    out = []
    for n in rng.integers(3, 13, 8):
        angle = np.linspace(0, 2 * np.pi, int(n), endpoint=False)
        centre = rng.integers(16, 112, 3) / 8.0
        radius = rng.integers(4, 24) / 8.0
        ring = centre + np.stack([np.cos(angle), np.sin(angle), 0 * angle], axis=1) * radius
        out.append(np.round(ring * 8) / 8 + 1 / 16)
    return out


def test_entry_point_is_found_by_name() -> None:
    """Nothing imports the plug-in: the name alone loads it through its entry point."""
    assert "zv_polygons" not in sys.modules
    spec = type_spec("polygon")
    assert "zv_polygons" in sys.modules
    cls = get_geometry_type("polygon")
    assert cls is plugin().PolygonType
    assert cls.spec is spec
    assert spec.family == "polyline"
    assert spec.family_name == "polyline"
    with pytest.raises(UnknownGeometryTypeError, match="hexagon"):
        type_spec("hexagon")


class TestPolygonContract(GeometryTypeTests):
    """The same contract as the seven built-in types."""

    geometry_type = "polygon"

    def make_input(self) -> list[AnyArray]:
        return rings()

    def write(self, store: str, data: Any) -> None:
        plugin().write_polygons(store, data, chunk_shape=self.chunk_shape, bin_shape=self.bin_shape)

    def expected(self, data: Any) -> Any:
        offsets = np.cumsum([0] + [len(r) for r in data]).astype(np.int64)
        return plugin().Polygons(
            np.concatenate(data), offsets, np.arange(len(data), dtype=np.int64)
        )

    def canonical(self, result: Any) -> Any:
        return canonical_objects(result.object_ids, list(result))

    def expected_in_box(self, data: Any, box: Box) -> Any:
        keep = [i for i, r in enumerate(data) if in_box(r, box).any()]
        return canonical_objects(keep, [data[i] for i in keep])

    def expected_by_ids(self, data: Any, ids: Sequence[int]) -> Any:
        return canonical_objects(ids, [data[i] for i in ids])

    def query_ids(self, data: Any) -> list[list[int]]:
        return [[0], [2, 7], [1, 3, 4]]


def test_write_rejects_short_ring(tmp_path: Path) -> None:
    with pytest.raises(GeometryError, match="ring 1 has 2 vertices"):
        plugin().write_polygons(
            str(tmp_path / "bad.zarr"), [np.zeros((3, 2)), np.zeros((2, 2))], chunk_shape=(1, 1)
        )
    assert not (tmp_path / "bad.zarr").exists()


def test_streaming_writer_matches_write(tmp_path: Path) -> None:
    """``open_writer(store, "polygon")`` takes polyline batches through the type's hook."""
    data = rings()
    whole, streamed = str(tmp_path / "whole.zarr"), str(tmp_path / "streamed.zarr")
    plugin().write_polygons(whole, data, chunk_shape=(4.0, 4.0, 4.0))
    with zv.open_writer(streamed, "polygon", chunk_shape=(4.0, 4.0, 4.0)) as w:
        w.append(data[:3], object_ids=np.arange(3))
        w.append(data[3:], object_ids=np.arange(3, len(data)))
    a, b = zv.open(whole).read(), zv.open(streamed).read()
    assert type(b).__name__ == "Polygons"
    np.testing.assert_array_equal(b.positions, a.positions)
    np.testing.assert_array_equal(b.offsets, a.offsets)
    np.testing.assert_array_equal(b.object_ids, a.object_ids)


def test_render_draws_closed_rings(tmp_path: Path) -> None:
    data = rings()
    store = str(tmp_path / "p.zarr")
    plugin().write_polygons(store, data, chunk_shape=(4.0, 4.0, 4.0))
    out = render(store, tmp_path / "p.png")
    assert out.path.stat().st_size > 0
    assert out.geometry_type == "polygon"
    # ring i of n vertices draws n edges: n - 1 along the path plus the closing one
    assert out.edges == sum(len(r) for r in data)
    assert out.objects == len(data)


def test_cli_export_and_convert_round_trip(tmp_path: Path) -> None:
    """A polygon store exports to TCK (its polyline family's format) and converts back."""
    data = rings()
    store, tck = tmp_path / "p.zarrvectors", tmp_path / "p.tck"
    plugin().write_polygons(str(store), data, chunk_shape=(4.0, 4.0, 4.0))
    runner = CliRunner()
    exported = runner.invoke(app, ["export", str(store), str(tck)])
    assert exported.exit_code == 0, exported.output
    back = tmp_path / "back.zarrvectors"
    converted = runner.invoke(app, ["convert", str(tck), str(back), "--chunk-shape", "4,4,4"])
    assert converted.exit_code == 0, converted.output
    pl = zv.read_streamlines(str(back))
    assert len(pl) == len(data)
    for got, want in zip(pl, data, strict=True):
        np.testing.assert_array_equal(got, want)
    info = runner.invoke(app, ["info", str(store)])
    assert info.exit_code == 0, info.output
    assert "polygon" in info.stdout
