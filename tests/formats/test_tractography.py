"""TRK, TCK and TRX files written by nibabel and trx-python survive import -> store -> export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np
import pytest
import trx.trx_file_memmap as tmm  # type: ignore[import-untyped, unused-ignore]
import zarr
from nibabel.streamlines import ArraySequence, TckFile, Tractogram, TrkFile

import zarr_vectors as zv
from zarr_vectors.core.chunking import axis_bounds
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats import tractography
from zarr_vectors.formats.registry import Extent, WriteOptions, convert, export
from zarr_vectors.formats.tractography import open_tck, open_trk, open_trx

# trx-python leaves the TemporaryDirectory of a loaded .trx to the finaliser (ResourceWarning).
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

AFFINE = np.array(
    [[-1.5, 0.0, 0.0, 90.0], [0.0, 1.5, 0.0, -126.0], [0.0, 0.0, 2.0, -72.0], [0, 0, 0, 1]]
)


def trk_header() -> dict[str, Any]:
    """Header of the test TRK files: a LAS image with anisotropic voxels."""
    return {
        "dimensions": np.array([120, 168, 72]),
        "voxel_sizes": np.array([1.5, 1.5, 2.0]),
        "voxel_to_rasmm": AFFINE,
        "voxel_order": "LAS",
    }


OPTS = WriteOptions(chunk_shape=(20.0, 20.0, 20.0), bin_shape=(5.0, 5.0, 5.0))


def streamlines(n: int = 60, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        m = 1 if i == 3 else int(rng.integers(2, 40))
        start = rng.uniform(-60, 60, 3)
        out.append((start + np.cumsum(rng.normal(0, 1, (m, 3)), axis=0)).astype(np.float32))
    return out


@pytest.fixture
def trk(tmp_path: Path) -> Path:
    sl = streamlines()
    rng = np.random.default_rng(1)
    tg = Tractogram(
        sl,
        data_per_point={
            "fa": [rng.random((len(s), 1)).astype(np.float32) for s in sl],
            "colors rgb": [rng.random((len(s), 3)).astype(np.float32) for s in sl],
        },
        data_per_streamline={"weight": rng.random((len(sl), 1)).astype(np.float32)},
        affine_to_rasmm=np.eye(4),
    )
    path = tmp_path / "tracts.trk"
    TrkFile(tg, header=trk_header()).save(str(path))
    return path


@pytest.fixture
def tck(tmp_path: Path) -> Path:
    path = tmp_path / "tracts.tck"
    header = {"step_size": "0.5", "method": "iFOD2", "source": "synthetic"}
    TckFile(Tractogram(streamlines(), affine_to_rasmm=np.eye(4)), header=header).save(str(path))
    return path


def _sequence(arrays: list[np.ndarray]) -> ArraySequence:
    return ArraySequence(arrays)


@pytest.fixture
def trx_file(tmp_path: Path) -> Path:
    sl = streamlines(40, seed=2)
    rng = np.random.default_rng(3)
    tg = Tractogram(
        _sequence(sl),
        data_per_point={"fa": _sequence([rng.random((len(s), 1)).astype(np.float32) for s in sl])},
        data_per_streamline={"length": rng.random((len(sl), 1)).astype(np.float32)},
        affine_to_rasmm=np.eye(4),
    )
    nv = sum(len(s) for s in sl)
    reference = {
        "NB_VERTICES": nv,
        "NB_STREAMLINES": len(sl),
        "VOXEL_TO_RASMM": AFFINE.astype(np.float32),
        "DIMENSIONS": np.array([120, 168, 72], np.uint16),
    }
    trx = tmm.TrxFile.from_tractogram(tg, reference=reference)
    trx.groups["CST left"] = np.array([0, 5, 7], np.uint32)
    trx.groups["AF"] = np.array([1, 2], np.uint32)
    trx.data_per_group["AF"] = {"color": np.array([[255, 0, 0]], np.uint8)}
    path = tmp_path / "tracts.trx"
    tmm.save(trx, str(path))
    trx.close()
    return path


def flat(seq: Any) -> np.ndarray:
    return np.concatenate([np.asarray(s) for s in seq])


def assert_same_store(a: str, b: str) -> None:
    ga, gb = zarr.open_group(a, mode="r"), zarr.open_group(b, mode="r")
    attrs_a, attrs_b = ga.attrs.asdict(), gb.attrs.asdict()
    attrs_a.pop("creation_timestamp"), attrs_b.pop("creation_timestamp")
    assert attrs_a == attrs_b
    with quiet_vlen():
        ma, mb = dict(ga.members(max_depth=None)), dict(gb.members(max_depth=None))
        names = sorted(k for k, v in ma.items() if isinstance(v, zarr.Array))
        assert names == sorted(k for k, v in mb.items() if isinstance(v, zarr.Array))
        for name in names:
            assert np.array_equal(ma[name][...], mb[name][...]), name


# -- TRK --------------------------------------------------------------------------------------


def test_trk_reader_matches_nibabel(trk: Path) -> None:
    ref = nib.streamlines.load(str(trk))
    with open_trk(trk) as src:
        got = src.everything()
        assert src.metadata()["voxel_order"] == "LAS"
    assert np.array_equal(got.positions, flat(ref.streamlines).astype(np.float32))
    assert np.array_equal(np.diff(got.offsets), [len(s) for s in ref.streamlines])
    assert np.array_equal(
        got.attributes["colors_rgb"], ref.tractogram.data_per_point["colors rgb"].get_data()
    )
    assert np.array_equal(
        got.attributes["fa"], ref.tractogram.data_per_point["fa"].get_data()[:, 0]
    )
    assert np.array_equal(
        got.object_attributes["weight"], ref.tractogram.data_per_streamline["weight"][:, 0]
    )


def test_big_trk_reader_matches_nibabel_bit_for_bit(tmp_path: Path) -> None:
    """A read large enough to run the affine products on one BLAS thread gives nibabel's bits."""
    rng = np.random.default_rng(7)
    n, m = 100, 3_000  # 300k vertices: above the one-thread threshold
    pts = rng.uniform(0, 100, (n * m, 3)).astype(np.float32)
    seq = ArraySequence()
    seq._data, seq._offsets, seq._lengths = pts, np.arange(0, n * m, m), np.full(n, m)
    path = tmp_path / "big.trk"
    TrkFile(Tractogram(seq, affine_to_rasmm=np.eye(4)), header=trk_header()).save(str(path))
    ref = nib.streamlines.load(str(path)).streamlines.get_data()
    with open_trk(path) as src:
        got = src.everything().positions
    assert len(got) >= 4 * 65536
    assert np.array_equal(got.view(np.uint32), np.asarray(ref, np.float32).view(np.uint32))


def test_trk_round_trip(trk: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "t.zarrvectors")
    convert(trk, store, chunk_shape=(20, 20, 20))
    root = zv.open_store(store).attrs
    assert root["coordinate_system"] == "RAS"
    assert root["custom_metadata"]["trk"]["dimensions"] == [120, 168, 72]
    out = tmp_path / "back.trk"
    export(store, out)
    a, b = nib.streamlines.load(str(trk)), nib.streamlines.load(str(out))
    assert len(a.streamlines) == len(b.streamlines)
    assert np.allclose(flat(a.streamlines), flat(b.streamlines), atol=2e-5)
    for key in ("fa", "colors rgb"):
        assert np.allclose(
            a.tractogram.data_per_point[key].get_data(), b.tractogram.data_per_point[key].get_data()
        )
    assert np.array_equal(
        a.tractogram.data_per_streamline["weight"], b.tractogram.data_per_streamline["weight"]
    )
    assert np.allclose(a.header["voxel_to_rasmm"], b.header["voxel_to_rasmm"])
    assert np.array_equal(a.header["dimensions"], b.header["dimensions"])
    assert np.array_equal(a.header["voxel_sizes"], b.header["voxel_sizes"])
    assert a.header["voxel_order"] == b.header["voxel_order"]


@pytest.mark.slow
@pytest.mark.parametrize("partition", [1, 3])
def test_trk_streaming_gives_the_same_store(trk: Path, tmp_path: Path, partition: int) -> None:
    a, b = str(tmp_path / "a.zarrvectors"), str(tmp_path / "b.zarrvectors")
    with open_trk(trk) as src:
        src.write(a, OPTS)
    with open_trk(trk) as src:
        src.write(
            b,
            WriteOptions(
                chunk_shape=OPTS.chunk_shape,
                bin_shape=OPTS.bin_shape,
                streaming=True,
                batch_size=100,
                partition_chunks=partition,
            ),
        )
    assert_same_store(a, b)


def test_truncated_trk_is_rejected(trk: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.trk"
    bad.write_bytes(trk.read_bytes()[:-10])
    with pytest.raises(InvalidInputError, match="truncated"):
        open_trk(bad)


# -- TCK --------------------------------------------------------------------------------------


def test_tck_round_trip(tck: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "t.zarrvectors")
    convert(tck, store, chunk_shape=(20, 20, 20))
    root = zv.open_store(store).attrs
    assert root["step_size"] == 0.5
    assert root["custom_metadata"]["tck"]["method"] == "iFOD2"
    pl = zv.read_streamlines(store)
    ref = nib.streamlines.load(str(tck))
    assert np.array_equal(pl.positions, flat(ref.streamlines))
    out = tmp_path / "back.tck"
    export(store, out)
    back = nib.streamlines.load(str(out))
    assert np.array_equal(flat(back.streamlines), flat(ref.streamlines))
    assert [len(s) for s in back.streamlines] == [len(s) for s in ref.streamlines]
    assert back.header["method"] == "iFOD2"
    assert back.header["step_size"] == "0.5"


@pytest.mark.slow
def test_tck_streaming_gives_the_same_store(tck: Path, tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.zarrvectors"), str(tmp_path / "b.zarrvectors")
    with open_tck(tck) as src:
        src.write(a, OPTS)
    with open_tck(tck) as src:
        src.write(
            b,
            WriteOptions(
                chunk_shape=OPTS.chunk_shape,
                bin_shape=OPTS.bin_shape,
                streaming=True,
                batch_size=50,
            ),
        )
    assert_same_store(a, b)


def test_tck_export_warns_about_attributes(trk: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "t.zarrvectors")
    convert(trk, store, chunk_shape=(20, 20, 20))
    with pytest.warns(UserWarning, match="TCK holds no per-point data"):
        export(store, tmp_path / "x.tck")


# -- TRX --------------------------------------------------------------------------------------


def test_trx_round_trip(trx_file: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "t.zarrvectors")
    convert(trx_file, store, chunk_shape=(20, 20, 20))
    pl = zv.read_streamlines(store)
    assert sorted(pl.groups) == ["AF", "CST left"]
    assert pl.groups["CST left"].tolist() == [0, 5, 7]
    out = tmp_path / "back.trx"
    export(store, out)
    a, b = tmm.load(str(trx_file)), tmm.load(str(out))
    try:
        assert np.array_equal(np.asarray(a.streamlines._data), np.asarray(b.streamlines._data))
        assert np.array_equal(
            np.asarray(a.streamlines._offsets), np.asarray(b.streamlines._offsets)
        )
        assert np.array_equal(
            np.asarray(a.data_per_vertex["fa"]._data), np.asarray(b.data_per_vertex["fa"]._data)
        )
        assert np.array_equal(
            np.asarray(a.data_per_streamline["length"]), np.asarray(b.data_per_streamline["length"])
        )
        assert {k: np.asarray(v).tolist() for k, v in a.groups.items()} == {
            k: np.asarray(v).tolist() for k, v in b.groups.items()
        }
        assert np.asarray(b.data_per_group["AF"]["color"]).tolist() == [[255, 0, 0]]
        assert np.allclose(a.header["VOXEL_TO_RASMM"], b.header["VOXEL_TO_RASMM"])
        assert np.array_equal(a.header["DIMENSIONS"], b.header["DIMENSIONS"])
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_trx_streaming_keeps_groups(trx_file: Path, tmp_path: Path) -> None:
    a, b = str(tmp_path / "a.zarrvectors"), str(tmp_path / "b.zarrvectors")
    with open_trx(trx_file) as src:
        src.write(a, OPTS)
    with open_trx(trx_file) as src:
        src.write(
            b,
            WriteOptions(
                chunk_shape=OPTS.chunk_shape,
                bin_shape=OPTS.bin_shape,
                streaming=True,
                batch_size=60,
            ),
        )
    pa_, pb = zv.read_streamlines(a), zv.read_streamlines(b)
    assert np.array_equal(pa_.positions, pb.positions)
    assert {k: v.tolist() for k, v in pa_.groups.items()} == {
        k: v.tolist() for k, v in pb.groups.items()
    }


def test_trx_store_exports_to_trk_in_its_space(trx_file: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "t.zarrvectors")
    convert(trx_file, store, chunk_shape=(20, 20, 20))
    export(store, tmp_path / "x.trk")
    back = nib.streamlines.load(str(tmp_path / "x.trk"))
    assert np.allclose(back.header["voxel_to_rasmm"], AFFINE)
    assert np.allclose(flat(back.streamlines), zv.read_streamlines(store).positions, atol=2e-5)


# -- extent -----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 1023, 1024, 1025, 5000])
def test_bounds_is_min_max(n: int) -> None:
    pos = np.random.default_rng(n).normal(0, 50, (n, 3)).astype(np.float32)
    lo, hi = axis_bounds(pos)
    assert lo.tolist() == pos.min(axis=0).astype(np.float64).tolist()
    assert hi.tolist() == pos.max(axis=0).astype(np.float64).tolist()


def test_extent_in_memory_and_streamed(
    trk: Path, tck: Path, trx_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path, opener in ((trk, open_trk), (tck, open_tck), (trx_file, open_trx)):
        with opener(path) as src:
            expected = Extent.of(src.everything().positions)
            assert src.extent() == expected
            monkeypatch.setattr(tractography, "STREAMING_THRESHOLD", 10)
            assert src.extent() == expected
            monkeypatch.undo()


def test_mean_step_is_the_mean_segment_length(trk: Path) -> None:
    # 60 streamlines: one sampled run holds them all (one has a single vertex: no segment)
    loaded = nib.streamlines.load(str(trk)).streamlines
    want = np.mean(
        [
            np.linalg.norm(s[i + 1].astype(np.float64) - s[i])
            for s in loaded
            for i in range(len(s) - 1)
        ]
    )
    with open_trk(trk) as src:
        streamed = src.mean_step()
        src.everything()
        cached = src.mean_step()
    assert streamed == pytest.approx(want, rel=1e-12)
    assert cached == pytest.approx(want, rel=1e-12)
