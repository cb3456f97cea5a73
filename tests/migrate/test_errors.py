"""Upstream stores get a clear error from open/read/validate; migrate never touches its source."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import (
    InvalidInputError,
    StoreNotFoundError,
    UpstreamStoreError,
    ZVUserWarning,
)

LABEL = {"0.2.0": "0.2.0 (format 0.7.0)", "0.9.2": "0.9.2"}


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.mark.parametrize(
    "call",
    [
        lambda p: zv.open(p),
        lambda p: zv.open_store(p),
        lambda p: zv.read_points(p),
        lambda p: zv.read_polylines(p),
        lambda p: zv.read_graph(p),
    ],
    ids=["open", "open_store", "read_points", "read_polylines", "read_graph"],
)
def test_open_and_read_name_upstream(upstream, version: str, call) -> None:
    src = upstream("streamline")
    with pytest.raises(UpstreamStoreError) as info:
        call(src)
    message = str(info.value)
    assert f"written by upstream zarr-vectors {LABEL[version]}" in message
    assert "run `zarr-vectors convert" in message
    assert isinstance(info.value, StoreNotFoundError)
    assert isinstance(info.value, FileNotFoundError)


def test_validate_names_upstream(upstream, version: str) -> None:
    report = zv.validate(upstream("graph"))
    assert not report.ok
    assert len(report.errors) == 1
    assert f"written by upstream zarr-vectors {LABEL[version]}" in report.errors[0].message


def test_migrate_refuses_its_source(upstream, tmp_path: Path) -> None:
    src = upstream("points")
    before = _digest(src)
    for target in (src, src / "inner.zarrvectors", tmp_path):
        with pytest.raises(InvalidInputError, match="overlaps, the source"):
            zv.migrate(src, target, overwrite=True)
    assert _digest(src) == before


def test_migrate_leaves_source_and_existing_target(upstream, tmp_path: Path) -> None:
    src = upstream("mesh")
    before = _digest(src)
    out = tmp_path / "out.zarrvectors"
    zv.write_points(out, np.zeros((1, 3)), chunk_shape=(10, 10, 10))
    kept = _digest(out)
    with pytest.raises(zv.StoreExistsError):
        zv.migrate(src, out)
    assert _digest(out) == kept
    assert _digest(src) == before
    zv.migrate(src, out, overwrite=True)
    assert _digest(src) == before
    assert len(zv.read_meshes(out).faces) == 8


def test_migrate_rejects_a_zvf_store(tmp_path: Path) -> None:
    ours = tmp_path / "ours.zarrvectors"
    zv.write_points(ours, np.zeros((1, 3)), chunk_shape=(10, 10, 10))
    with pytest.raises(StoreNotFoundError, match="not a store written by upstream"):
        zv.migrate(ours, tmp_path / "new.zarrvectors")


def test_cli_convert_migrates(upstream, tmp_path: Path, version: str) -> None:
    src = upstream("skeleton")
    out = tmp_path / "new.zarrvectors"
    result = CliRunner().invoke(app, ["convert", str(src), str(out)])
    assert result.exit_code == 0, result.output
    assert f"migrated upstream zarr-vectors {LABEL[version]} skeleton store" in result.output
    assert ("spurious edges" in result.output) == version.startswith("0.2")
    assert len(zv.read_skeletons(out)) == 2
    again = CliRunner().invoke(app, ["convert", str(src), str(out)])
    assert again.exit_code == 1
    assert "exists" in again.output


def test_migrate_refuses_draco(upstream, tmp_path: Path) -> None:
    src = upstream("mesh_draco")
    with pytest.raises(InvalidInputError, match="Draco"):
        zv.migrate(src, tmp_path / "new.zarrvectors")
    assert not (tmp_path / "new.zarrvectors").exists()


def test_migrate_from_a_zip(upstream, expected, tmp_path: Path) -> None:
    src = upstream("streamline")
    archive = shutil.make_archive(str(tmp_path / "old"), "zip", root_dir=src)
    report = zv.migrate(archive, tmp_path / "new.zarrvectors")
    got = zv.read_polylines(tmp_path / "new.zarrvectors")
    np.testing.assert_array_equal(got.positions, expected.read("streamline", "positions"))
    assert report.objects == 3


def test_parametric_objects_reported(upstream, tmp_path: Path) -> None:
    with pytest.warns(ZVUserWarning, match="parametric objects"):
        report = zv.migrate(upstream("points_parametric"), tmp_path / "new.zarrvectors")
    assert report.vertices == 2
    assert len(report.dropped) == 1


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_corrupt_upstream_payload(upstream, version: str, tmp_path: Path, damage: str) -> None:
    src = upstream("streamline")
    if version.startswith("0.2"):
        # raw float rows have no check bytes: zeros there are valid, a fragment index is not
        kind = "vertices" if damage == "truncated" else "vertex_fragments"
        blob = next((src / "0" / kind).glob("*/c/0"))
    else:
        blob = next(p for p in (src / "0" / "vertices" / "c").rglob("*") if p.is_file())
    raw = blob.read_bytes()
    blob.write_bytes(raw[:-2] if damage == "truncated" else bytes(len(raw)))
    with pytest.raises(zv.errors.CorruptPayloadError):
        zv.migrate(src, tmp_path / "new.zarrvectors")
    assert not (tmp_path / "new.zarrvectors").exists()


def test_upstream_metadata_without_chunk_shape(upstream, tmp_path: Path) -> None:
    src = upstream("points")
    doc = json.loads((src / "zarr.json").read_text())
    del doc["attributes"]["zarr_vectors"]["chunk_shape"]
    (src / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(zv.MetadataValidationError, match="chunk_shape"):
        zv.migrate(src, tmp_path / "new.zarrvectors")
