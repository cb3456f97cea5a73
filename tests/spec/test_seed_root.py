"""A root whose attributes are exactly the seed's complete example reads and validates (issue 26).

The seed does not define ``chunk_grid``: readers take origin 0 and the shape of level 0's
arrays, and the validator recommends the key (a warning) instead of refusing the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from zarr_vectors.core.store import open_store, read_root_metadata
from zarr_vectors.errors import MetadataValidationError
from zarr_vectors.spec.metadata import (
    CONVENTION_UUID,
    SPEC_URL,
    ZVF_CONVENTION,
    ChunkGrid,
    RootMetadata,
)
from zarr_vectors.testing import assert_geometry_equal

SEED_EXAMPLE = Path(__file__).with_name("seed_root_example.json")
EXTENT = np.array([8000.0, 6000.0, 4000.0])  # the example's bounding_box (columns z, y, x)


def _streamlines() -> list[np.ndarray]:
    rng = np.random.default_rng(26)
    out = []
    for _ in range(40):
        start = rng.uniform(0, EXTENT)
        steps = rng.normal(0, 60, (30, 3))
        out.append(np.clip(start + np.cumsum(steps, axis=0), 0, EXTENT - 1e-3).astype(np.float32))
    # the box's corners, so the data spans exactly the example's bounding_box
    out.append(np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]], dtype=np.float32))
    out.append(np.array([EXTENT - 1.0, EXTENT], dtype=np.float32))
    return out


@pytest.mark.parametrize("fmt", [3, 2])
def test_seed_example_root_reads_and_validates(tmp_path: Path, fmt: int) -> None:
    path = tmp_path / "seed.zarrvectors"
    lines = _streamlines()
    zv.write_streamlines(
        path,
        lines,
        chunk_shape=(200.0, 200.0, 200.0),
        bin_shape=(50.0, 50.0, 50.0),
        zarr_format=fmt,
    )
    zv.build_pyramid(path, [(2, 2, 2)], object_sparsity=0.5)
    written = zv.read_streamlines(path)
    coarse = zv.read_streamlines(path, level=1)
    seed = json.loads(SEED_EXAMPLE.read_text())
    root = zarr.open_group(path, mode="r+")
    root.attrs.put(seed)  # exactly the seed's keys: no chunk_grid
    assert "chunk_grid" not in zarr.open_group(path, mode="r").attrs

    assert_geometry_equal(zv.read_streamlines(path), written)
    assert_geometry_equal(zv.read_streamlines(path, level=1), coarse)
    # origin 0 and the shape of level 0's arrays (the data span [0, EXTENT] in 200-unit chunks)
    grid = read_root_metadata(open_store(path, mode="r")).chunk_grid
    assert grid == ChunkGrid(origin=(0, 0, 0), shape=tuple(int(e) // 200 + 1 for e in EXTENT))
    report = zv.validate(path, level=5)
    assert report.ok, report
    assert [f.check for f in report.warnings] == ["L2.root.chunk_grid"]


def test_format_declared_for_generic_tools(tmp_path: Path) -> None:
    path = tmp_path / "p.zarrvectors"
    zv.write_points(path, np.zeros((1, 3)), chunk_shape=(1.0, 1.0, 1.0))
    doc = json.loads((path / "zarr.json").read_text())
    (entry,) = doc["attributes"]["zarr_conventions"]
    assert entry["uuid"] == CONVENTION_UUID
    assert entry["spec_url"] == SPEC_URL
    assert entry["name"] == "zarr_vectors"
    assert set(entry) <= {"uuid", "schema_url", "spec_url", "name", "description"}


def test_other_conventions_are_kept_beside_ours() -> None:
    meta = RootMetadata.create(geometry_type="point_cloud", chunk_shape=(1.0,))
    theirs = {"uuid": "f17cb550-5864-4468-aeb7-f3180cfb622f", "name": "proj:"}
    doc = {**meta.to_dict(), "zarr_conventions": [theirs, meta.to_dict()["zarr_conventions"][0]]}
    again = RootMetadata.from_dict(doc)
    out = again.to_dict()["zarr_conventions"]
    assert out[0] == theirs
    assert out[1]["uuid"] == CONVENTION_UUID
    assert RootMetadata.from_dict(again.to_dict()) == again


@pytest.mark.parametrize("bad", [None, "zarr_vectors", {"uuid": CONVENTION_UUID}])
def test_conventions_that_are_not_a_list_are_refused(bad: object) -> None:
    doc = {**RootMetadata.create(geometry_type="point_cloud", chunk_shape=(1.0,)).to_dict()}
    doc["zarr_conventions"] = bad
    with pytest.raises(MetadataValidationError, match="zarr_conventions"):
        RootMetadata.from_dict(doc)


def test_spec_page_shows_the_declaration_the_writer_writes() -> None:
    """docs/spec.md §4 prints exactly ZVF_CONVENTION (spec and code agree)."""
    text = (Path(__file__).parents[2] / "docs" / "spec.md").read_text()
    start = text.index('{"uuid": "' + CONVENTION_UUID)
    block, _ = json.JSONDecoder().raw_decode(text[start:])
    assert block == ZVF_CONVENTION
