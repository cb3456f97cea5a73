"""The reader and the validator agree on which root metadata is valid (issue 26).

Each case edits the root attributes of a real two-level streamline store (v2 and v3) and states
whether the result is a valid store.  A valid store reads (level 0, level 1, a box) and
validates at level 2 with no error; an invalid one makes the reader raise a
``zarr_vectors.errors`` exception and the validator report an error; never one without the
other, and never a foreign exception.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from zarr_vectors.errors import MetadataValidationError, ZarrVectorsError

Doc = dict[str, Any]


def _ms(doc: Doc) -> Doc:
    return doc["multiscales"][0]  # type: ignore[no-any-return]


def _ds(doc: Doc, i: int) -> Doc:
    return _ms(doc)["datasets"][i]  # type: ignore[no-any-return]


def _set(value: Any, *keys: str | int) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        node: Any = doc
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return edit


def _drop(*keys: str | int) -> Callable[[Doc], None]:
    def edit(doc: Doc) -> None:
        node: Any = doc
        for k in keys[:-1]:
            node = node[k]
        del node[keys[-1]]

    return edit


M = ("multiscales", 0)
D0, D1 = (*M, "datasets", 0), (*M, "datasets", 1)

VALID: dict[str, Callable[[Doc], None]] = {
    "unchanged": lambda d: None,
    "integer chunk_shape": _set([20, 20, 20], "chunk_shape"),
    "unknown version (a warning)": _set("2.0", "zarr_vectors_version"),
    "multiscales version 0.4 (a warning)": _set("0.4", *M, "version"),
    "multiscales type other (a warning)": _set("image", *M, "type"),
    "multiscales type missing (a warning)": _drop(*M, "type"),
    "transforms missing (a warning)": _drop(*D1, "coordinateTransformations"),
    "axis_units per axis": _set(["um", "um", "um"], "axis_units"),
    "no axis_units": _drop("axis_units"),
    "no zarr_conventions": _drop("zarr_conventions"),
    "unknown key": _set({"a": 1}, "my_key"),
}

INVALID: dict[str, Callable[[Doc], None]] = {
    "spatial_dims 3.0": _set(3.0, "spatial_dims"),
    "spatial_dims '3'": _set("3", "spatial_dims"),
    "spatial_dims true": _set(True, "spatial_dims"),
    "spatial_dims 0": _set(0, "spatial_dims"),
    "chunk_shape strings": _set(["20", "20", "20"], "chunk_shape"),
    "chunk_shape booleans": _set([True, True, True], "chunk_shape"),
    "chunk_shape of 2": _set([20.0, 20.0], "chunk_shape"),
    "chunk_shape zero": _set([0.0, 20.0, 20.0], "chunk_shape"),
    "base_bin_shape strings": _set(["10", "10", "10"], "base_bin_shape"),
    "base_bin_shape not dividing": _set([7.0, 10.0, 10.0], "base_bin_shape"),
    "version a number": _set(1.0, "zarr_vectors_version"),
    "geometry_type unknown": _set("foo", "geometry_type"),
    "two multiscales": lambda d: d["multiscales"].append(copy.deepcopy(_ms(d))),
    "multiscales name a number": _set(5, *M, "name"),
    "multiscales version a number": _set(5, *M, "version"),
    "axis names repeat": lambda d: _ms(d)["axes"][1].update(name=_ms(d)["axes"][0]["name"]),
    "axis type unknown": lambda d: _ms(d)["axes"][0].update(type="banana"),
    "level 0.0": _set(0.0, *D0, "level"),
    "level '1'": _set("1", *D1, "level"),
    "bin_ratio floats": _set([2.0, 2.0, 2.0], *D1, "bin_ratio"),
    "bin_ratio strings": _set(["1", "1", "1"], *D0, "bin_ratio"),
    "no object_sparsity": _drop(*D1, "object_sparsity"),
    "object_sparsity above 1": _set(1.5, *D1, "object_sparsity"),
    "object_sparsity a string": _set("0.5", *D1, "object_sparsity"),
    "dataset without path": _drop(*D1, "path"),
    "dataset path not str(level)": _set("x", *D1, "path"),
    "bin_shape not base × ratio": _set([10.0, 10.0, 10.0], *D1, "bin_shape"),
    "axis_units of 2": _set(["um", "um"], "axis_units"),
    "bounding_box min > max": _set({"min": [9, 9, 9], "max": [0, 0, 0]}, "bounding_box"),
    "chunk_grid strings": lambda d: d["chunk_grid"].update(
        shape=[str(s) for s in d["chunk_grid"]["shape"]]
    ),
    # without chunk_grid the origin is 0, and this store's data lies partly below 0
    "no chunk_grid, data below the origin": _drop("chunk_grid"),
    "chunk_grid too large": lambda d: d["chunk_grid"].update(
        shape=[s + 1 for s in d["chunk_grid"]["shape"]]
    ),
    "coordinate_system a number": _set(5, "coordinate_system"),
    "draco_compressed a string": _set("yes", "draco_compressed"),
    "step_size negative": _set(-1, "step_size"),
    "step_size a string": _set("1", "step_size"),
    "zarr_conventions a string": _set("zarr_vectors", "zarr_conventions"),
}

# A level group's own attributes against its root datasets entry (reader: when the level is
# opened; validator: L2.level.*).
LEVEL_MISMATCH: dict[str, Callable[[Doc], None]] = {
    "object_sparsity differs from the level group": _set(0.25, *D1, "object_sparsity"),
    "bin_ratio differs from the level group": lambda d: _ds(d, 1).update(
        bin_ratio=[1, 1, 1],
        bin_shape=[10.0] * 3,
        coordinateTransformations=[
            {"type": "scale", "scale": [1.0] * 3},
            {"type": "translation", "translation": [5.0] * 3},
        ],
    ),
}


@pytest.fixture(scope="module", params=[3, 2], ids=["v3", "v2"])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agree") / "base.zv"
    rng = np.random.default_rng(1)
    paths = [np.cumsum(rng.normal(0, 3, (40, 3)), 0).astype(np.float32) + 50 for _ in range(30)]
    zv.write_streamlines(
        path, paths, chunk_shape=(20.0,) * 3, bin_shape=(10.0,) * 3, zarr_format=request.param
    )
    zv.build_pyramid(path, [(2, 2, 2)], object_sparsity=0.5)
    return path


@pytest.fixture
def edited(written: Path, tmp_path: Path) -> Callable[[Callable[[Doc], None]], Path]:
    def make(edit: Callable[[Doc], None]) -> Path:
        path = tmp_path / "case.zv"
        shutil.copytree(written, path)
        doc = copy.deepcopy(zarr.open_group(path, mode="r").attrs.asdict())
        edit(doc)
        zarr.open_group(path, mode="r+").attrs.put(doc)
        return path

    return make


def _reads(path: Path) -> bool:
    """True if the reader reads the store; False if it refuses it with a library error."""
    try:
        zv.read_streamlines(path)
        zv.read_streamlines(path, level=1)
        zv.read_streamlines(path, bbox=([40.0] * 3, [60.0] * 3))
    except ZarrVectorsError:
        return False
    return True


@pytest.mark.filterwarnings("ignore::zarr_vectors.errors.ZVUserWarning")
@pytest.mark.parametrize("name", VALID)
def test_valid_roots_read_and_validate(name: str, edited: Any) -> None:
    path = edited(VALID[name])
    report = zv.validate(path, level=2)
    assert report.ok, report
    assert _reads(path)


@pytest.mark.parametrize("name", INVALID)
def test_invalid_roots_are_refused_by_both(name: str, edited: Any) -> None:
    path = edited(INVALID[name])
    report = zv.validate(path, level=2)
    assert not report.ok
    assert not _reads(path)


@pytest.mark.parametrize("name", LEVEL_MISMATCH)
def test_level_group_disagreeing_with_the_root(name: str, edited: Any) -> None:
    path = edited(LEVEL_MISMATCH[name])
    assert not zv.validate(path, level=2).ok
    assert not _reads(path)


def test_bad_root_metadata_gives_no_pyramid_knock_on(edited: Any) -> None:
    """Unusable root metadata is reported once, not again as a level-5 sparsity error."""
    report = zv.validate(edited(_set(3.0, "spatial_dims")), level=5)
    assert [f.check for f in report.errors] == ["L1.root.key_type"]


def test_level_group_bin_shape_disagreeing_with_the_root(written: Path, tmp_path: Path) -> None:
    path = tmp_path / "case.zv"
    shutil.copytree(written, path)
    level = zarr.open_group(path / "1", mode="r+")
    attrs = level.attrs.asdict()
    attrs["bin_shape"] = [b * 2 for b in attrs["bin_shape"]]
    level.attrs.put(attrs)
    assert not zv.validate(path, level=2).ok
    with pytest.raises(MetadataValidationError, match=r"bin_shape .* differs from the root"):
        zv.read_streamlines(path, level=1)
    assert len(zv.read_streamlines(path)) == 30  # level 0 is untouched
