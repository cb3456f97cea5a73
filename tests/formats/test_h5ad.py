"""AnnData .h5ad spatial data <-> point clouds.

tests/data/h5ad/spots.h5ad was written by anndata 0.12 (tests/data/h5ad/make_spots.py): every
obs encoding anndata writes.  The exported file was also checked with anndata itself
(``pandas.testing.assert_frame_equal`` on ``obs``, equal ``obsm["spatial"]``); here the
comparison is element by element through h5py, which is what anndata reads.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

import zarr
from typer.testing import CliRunner

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats.registry import convert, export

SPOTS = Path(__file__).resolve().parent.parent / "data" / "h5ad" / "spots.h5ad"


def _convert(store: str, **options) -> None:
    with pytest.warns(ZVUserWarning, match="X, .*obsm/spatial_3d"):
        convert(SPOTS, store, **options)


def _same_element(a, b, where: str) -> None:
    assert a.attrs.get("encoding-type") == b.attrs.get("encoding-type"), where
    if isinstance(a, h5py.Dataset):
        assert isinstance(b, h5py.Dataset), where
        assert a.shape == b.shape, where
        if h5py.check_string_dtype(a.dtype):
            assert a.asstr()[()].tolist() == b.asstr()[()].tolist(), where
        else:
            assert a.dtype == b.dtype, where
            np.testing.assert_array_equal(a[()], b[()], err_msg=where)
        return
    assert sorted(a) == sorted(b), where
    for k in ("ordered", "_index"):
        assert a.attrs.get(k) == b.attrs.get(k), where
    for k in a:
        _same_element(a[k], b[k], f"{where}/{k}")


def test_obs_and_spatial_round_trip(tmp_path: Path) -> None:
    store = str(tmp_path / "s.zarrvectors")
    _convert(store)
    pts = zv.read_points(store)
    assert len(pts) == 300
    assert pts.positions.dtype == np.float64
    assert set(pts.attributes["cell_type"]) <= {"neuron", "astrocyte", "microglia"}
    out = tmp_path / "out.h5ad"
    export(store, out)
    with h5py.File(SPOTS) as a, h5py.File(out) as b:
        assert a["obs"].attrs["column-order"].tolist() == b["obs"].attrs["column-order"].tolist()
        _same_element(a["obs"], b["obs"], "obs")
        _same_element(a["obsm/spatial"], b["obsm/spatial"], "obsm/spatial")
        assert b.attrs["encoding-type"] == "anndata"
        assert "X" not in b


def test_categories_missing_values_and_order_kept(tmp_path: Path) -> None:
    store = str(tmp_path / "s.zarrvectors")
    _convert(store)
    pts = zv.read_points(store, order="input")
    with h5py.File(SPOTS) as f:
        codes = f["obs/region/codes"][()]
        cats = f["obs/region/categories"].asstr()[()].tolist()
        names = f["obs/_index"].asstr()[()].tolist()
    region = pts.attributes["region"]
    assert (codes < 0).any()
    want = np.array([cats[c] if c >= 0 else "<NA>" for c in codes], dtype=object)
    np.testing.assert_array_equal(region, want)
    assert pts.attributes["obs_names"].tolist() == names


def test_other_spatial_key(tmp_path: Path) -> None:
    store = str(tmp_path / "s.zarrvectors")
    with pytest.warns(ZVUserWarning, match="obsm/spatial[^_]"):
        convert(SPOTS, store, spatial_key="spatial_3d")
    assert zv.read_points(store).positions.shape == (300, 3)
    export(store, tmp_path / "o.h5ad")
    with h5py.File(SPOTS) as a, h5py.File(tmp_path / "o.h5ad") as b:
        _same_element(a["obsm/spatial_3d"], b["obsm/spatial_3d"], "obsm/spatial_3d")


def test_plain_point_store_exports(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    store = str(tmp_path / "p.zarrvectors")
    zv.write_points(
        store,
        rng.uniform(0, 10, (50, 2)),
        chunk_shape=(5, 5),
        attributes={"kind": rng.choice(["a", "b"], 50), "v": rng.random(50)},
    )
    export(store, tmp_path / "p.h5ad")
    back = str(tmp_path / "back.zarrvectors")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing dropped: an export holds only obs and obsm
        convert(tmp_path / "p.h5ad", back)
    a, b = zv.read_points(store), zv.read_points(back)
    key = np.lexsort(a.positions.T)
    kb = np.lexsort(b.positions.T)
    np.testing.assert_array_equal(a.positions[key], b.positions[kb])
    np.testing.assert_array_equal(a.attributes["kind"][key], b.attributes["kind"][kb])
    np.testing.assert_array_equal(a.attributes["v"][key], b.attributes["v"][kb])


def test_bad_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="obsm\\['nope'\\]"):
        convert(SPOTS, str(tmp_path / "s.zarrvectors"), spatial_key="nope")
    bad = tmp_path / "bad.h5ad"
    bad.write_bytes(b"not hdf5")
    with pytest.raises(InvalidInputError, match="not an HDF5 file"):
        convert(bad, str(tmp_path / "t.zarrvectors"))
    assert not (tmp_path / "s.zarrvectors").exists()


def test_cli(tmp_path: Path) -> None:
    store = tmp_path / "s.zarrvectors"
    run = CliRunner().invoke(app, ["convert", str(SPOTS), str(store), "--spatial-key", "spatial"])
    assert run.exit_code == 0, run.output
    assert "not converted" in run.output
    run = CliRunner().invoke(app, ["export", str(store), str(tmp_path / "o.h5ad")])
    assert run.exit_code == 0, run.output


def test_no_keep_order_exports_storage_order(tmp_path: Path) -> None:
    store = str(tmp_path / "s.zarrvectors")
    _convert(store, keep_order=False)
    assert "_input_index" not in zarr.open_group(store, mode="r")["0/attributes"]
    export(store, tmp_path / "o.h5ad")
    stored = zv.read_points(store)
    with h5py.File(tmp_path / "o.h5ad") as f, h5py.File(SPOTS) as g:
        names = f["obs/_index"].asstr()[()].tolist()
        assert names == stored.attributes["obs_names"].tolist()
        original = g["obs/_index"].asstr()[()].tolist()
        assert names != original  # storage order, not file order
        assert sorted(names) == sorted(original)
        np.testing.assert_array_equal(f["obsm/spatial"][()], stored.positions)
