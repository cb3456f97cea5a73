"""The vectorised TRK and TCK readers return what ``nibabel.streamlines.load`` returns.

Every file is written by nibabel (then byte-edited for the cases nibabel cannot write: big-endian,
``n_count = 0``, empty streamlines, trailing bytes, corruption) into ``tmp_path``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nibabel.streamlines import TckFile, Tractogram, TrkFile
from nibabel.streamlines.header import Field
from nibabel.streamlines.tractogram_file import HeaderWarning

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats import _tractfiles
from zarr_vectors.formats._tractfiles import (
    TRK_HEADER_DTYPE,
    TckReader,
    TractData,
    TrkReader,
    read_tck,
    read_trk,
    write_tck,
    write_trk,
)
from zarr_vectors.formats.registry import convert

OBLIQUE = np.array(
    [[-1.2, 0.1, 0.05, 90.3], [0.08, 1.3, -0.1, -126.7], [0.02, 0.1, 1.9, -72.1], [0, 0, 0, 1]]
)
N_COUNT_AT = TRK_HEADER_DTYPE.fields["nb_streamlines"][1]  # type: ignore[index]


def lines(n: int, seed: int = 0, longest: int = 40) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        m = 1 if i == 2 else int(rng.integers(2, longest))
        start = rng.uniform(-60, 60, 3)
        out.append((start + np.cumsum(rng.normal(0, 1.3, (m, 3)), axis=0)).astype(np.float32))
    return out


def save_trk(
    path: Path,
    sl: list[np.ndarray],
    *,
    scalars: dict[str, int] | None = None,
    properties: dict[str, int] | None = None,
    header: dict[str, Any] | None = None,
) -> Path:
    """Write ``sl`` with random per-point ``scalars`` / per-streamline ``properties`` (name -> k)."""
    rng = np.random.default_rng(7)
    dpp = {
        k: [rng.random((len(s), c), dtype=np.float32) for s in sl]
        for k, c in (scalars or {}).items()
    }
    dps = {k: rng.random((len(sl), c), dtype=np.float32) for k, c in (properties or {}).items()}
    tg = Tractogram(sl, data_per_point=dpp, data_per_streamline=dps, affine_to_rasmm=np.eye(4))
    hdr = {"dimensions": np.array([160, 180, 120]), "voxel_sizes": np.array([1.2, 1.3, 1.9])}
    TrkFile(tg, header={**hdr, **(header or {})}).save(str(path))
    return path


def nib_flat(seq: Any) -> np.ndarray:
    data = np.asarray(seq.get_data())
    return data.reshape(len(data), -1) if data.size else np.zeros((0, 3), np.float32)


def assert_like_nibabel(got: TractData, path: Path) -> None:
    """Bit-identical positions, per-point and per-streamline data."""
    ref = nib.streamlines.load(str(path))
    assert got.positions.dtype == np.float32
    assert np.array_equal(got.positions, nib_flat(ref.streamlines).reshape(-1, 3))
    assert np.diff(got.offsets).tolist() == [len(s) for s in ref.streamlines]
    assert sorted(got.data_per_point) == sorted(ref.tractogram.data_per_point)
    for k, v in ref.tractogram.data_per_point.items():
        assert np.array_equal(got.data_per_point[k], nib_flat(v)), k
    assert sorted(got.data_per_streamline) == sorted(ref.tractogram.data_per_streamline)
    for k, v in ref.tractogram.data_per_streamline.items():
        assert np.array_equal(got.data_per_streamline[k], v), k


def big_endian_trk(src: Path, dst: Path) -> Path:
    """Rewrite a little-endian TRK big-endian (every body value is 4 bytes wide)."""
    raw = src.read_bytes()
    rec = np.frombuffer(raw[:1000], TRK_HEADER_DTYPE.newbyteorder("<"))
    head = rec.astype(TRK_HEADER_DTYPE.newbyteorder(">")).tobytes()
    dst.write_bytes(head + np.frombuffer(raw[1000:], "<u4").astype(">u4").tobytes())
    return dst


def set_n_count(path: Path, value: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[N_COUNT_AT : N_COUNT_AT + 4] = struct.pack("<i", value)
    path.write_bytes(bytes(raw))


# -- TRK --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scalars", "properties"),
    [
        ({}, {}),
        ({"fa": 1}, {}),
        ({}, {"weight": 1}),
        ({"fa": 1, "colors rgb": 3}, {"weight": 1, "centroid": 3}),
        ({"a": 1, "b": 1, "c": 2}, {"p": 2}),
    ],
)
@pytest.mark.parametrize("affine", ["oblique", "flipped", "identity"])
def test_trk_matches_nibabel(
    tmp_path: Path, scalars: dict[str, int], properties: dict[str, int], affine: str
) -> None:
    header = {
        "oblique": {"voxel_to_rasmm": OBLIQUE, "voxel_order": "LAS"},
        "flipped": {"voxel_to_rasmm": np.diag([-1.2, 1.3, 1.9, 1.0]), "voxel_order": "RPS"},
        "identity": {"voxel_sizes": np.ones(3)},
    }[affine]
    path = save_trk(
        tmp_path / "t.trk", lines(80), scalars=scalars, properties=properties, header=header
    )
    got = read_trk(path)
    assert_like_nibabel(got, path)
    assert len(got) == 80


def test_trk_oblique_many_vertices_bit_identical(tmp_path: Path) -> None:
    path = save_trk(
        tmp_path / "t.trk",
        lines(3000, seed=3, longest=120),
        header={"voxel_to_rasmm": OBLIQUE, "voxel_order": "LAS"},
    )
    assert_like_nibabel(read_trk(path), path)


@pytest.mark.parametrize("affine", ["oblique", "scaled"])
def test_trk_blocks_and_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, affine: str
) -> None:
    """Also the tiled scale and shift of a diagonal affine, grown for a long streamline."""
    to_rasmm = OBLIQUE if affine == "oblique" else np.diag([1.5, -0.7, 2.0, 1.0])
    path = save_trk(
        tmp_path / "t.trk",
        lines(200, seed=4),
        scalars={"fa": 1, "rgb": 3},
        properties={"w": 2},
        header={"voxel_to_rasmm": to_rasmm},
    )
    whole = read_trk(path)
    monkeypatch.setattr(_tractfiles, "_BLOCK", 7)  # many blocks, some one streamline long
    monkeypatch.setattr(_tractfiles, "_PARALLEL_VERTICES", 100)  # halves on two threads
    with TrkReader(path) as trk:
        assert_like_nibabel(trk.read(), path)
        part = trk.read(50, 120)
        a, b = whole.offsets[50], whole.offsets[120]
        assert np.array_equal(part.positions, whole.positions[a:b])
        assert np.array_equal(part.offsets, whole.offsets[50:121] - a)
        assert np.array_equal(part.data_per_point["rgb"], whole.data_per_point["rgb"][a:b])
        assert np.array_equal(part.data_per_streamline["w"], whole.data_per_streamline["w"][50:120])
        batches = list(trk.iter_batches(500))
    assert len(batches) > 3
    assert np.array_equal(np.concatenate([b.positions for b in batches]), whole.positions)
    assert sum(len(b) for b in batches) == 200
    assert len(TrkReader(path).read(5, 5).positions) == 0


def test_trk_zero_streamlines(tmp_path: Path) -> None:
    path = save_trk(tmp_path / "t.trk", [], header={"voxel_to_rasmm": OBLIQUE})
    got = read_trk(path)
    assert got.positions.shape == (0, 3)
    assert got.offsets.tolist() == [0]
    assert len(nib.streamlines.load(str(path)).streamlines) == 0


def test_trk_n_count_zero_reads_to_the_end(tmp_path: Path) -> None:
    path = save_trk(tmp_path / "t.trk", lines(30), scalars={"fa": 1}, properties={"w": 1})
    set_n_count(path, 0)
    with TrkReader(path) as trk:
        assert trk.header.n_count == 0
        assert_like_nibabel(trk.read(), path)


def test_trk_n_count_stops_reading(tmp_path: Path) -> None:
    path = save_trk(tmp_path / "t.trk", lines(30))
    set_n_count(path, 20)
    with pytest.warns(ZVUserWarning, match="bytes after the 20 streamlines"):
        got = read_trk(path)
    assert len(got) == 20
    assert_like_nibabel(got, path)
    set_n_count(path, 40)
    with pytest.warns(ZVUserWarning, match="announces 40 streamlines, file holds 30"):
        assert len(read_trk(path)) == 30


def test_trk_partial_word_after_the_last_streamline(tmp_path: Path) -> None:
    """Two stray bytes: ignored after the announced streamlines, a cut count without n_count."""
    path = save_trk(tmp_path / "t.trk", lines(12))
    path.write_bytes(path.read_bytes() + b"\x07\x00")
    with pytest.warns(ZVUserWarning, match="2 bytes after the 12 streamlines"):
        assert len(read_trk(path)) == 12
    set_n_count(path, 0)
    with pytest.raises(InvalidInputError, match="truncated"):
        TrkReader(path)


def test_trk_big_endian(tmp_path: Path) -> None:
    little = save_trk(
        tmp_path / "le.trk",
        lines(50),
        scalars={"fa": 1, "rgb": 3},
        properties={"w": 2},
        header={"voxel_to_rasmm": OBLIQUE},
    )
    big = big_endian_trk(little, tmp_path / "be.trk")
    with TrkReader(big) as trk:
        assert trk.header.byteorder == ">"
        assert trk.header.fields["endianness"] == ">"
        got = trk.read()
    assert_like_nibabel(got, big)
    ref = read_trk(little)
    assert np.array_equal(got.positions, ref.positions)
    assert np.array_equal(got.data_per_point["rgb"], ref.data_per_point["rgb"])


def test_trk_unnamed_scalars_and_properties(tmp_path: Path) -> None:
    path = save_trk(tmp_path / "t.trk", lines(20), scalars={"fa": 1, "rgb": 3}, properties={"w": 2})
    raw = bytearray(path.read_bytes())
    for name in ("scalar_name", "property_name"):
        at = TRK_HEADER_DTYPE.fields[name][1]  # type: ignore[index]
        raw[at : at + 200] = bytes(200)
    path.write_bytes(bytes(raw))
    got = read_trk(path)
    assert sorted(got.data_per_point) == ["scalars"]
    assert got.data_per_point["scalars"].shape[1] == 4
    assert sorted(got.data_per_streamline) == ["properties"]
    assert_like_nibabel(got, path)


def test_trk_empty_streamlines_are_kept(tmp_path: Path) -> None:
    sl = lines(5)
    path = save_trk(tmp_path / "t.trk", sl, scalars={"fa": 1}, properties={"w": 1})
    raw = path.read_bytes()
    cut = 1000 + 4 + len(sl[0]) * 16 + 4  # after the first record
    raw = raw[:cut] + struct.pack("<if", 0, 9.0) + raw[cut:]
    path.write_bytes(raw[:N_COUNT_AT] + struct.pack("<i", 6) + raw[N_COUNT_AT + 4 :])
    got = read_trk(path)
    assert np.diff(got.offsets).tolist() == [len(sl[0]), 0, *(len(s) for s in sl[1:])]
    assert got.data_per_streamline["w"][1, 0] == 9.0
    full = np.concatenate(sl)
    assert np.allclose(got.positions, full, atol=1e-4)


def test_trk_header_fields_like_nibabel(tmp_path: Path) -> None:
    path = save_trk(
        tmp_path / "t.trk", lines(5), header={"voxel_to_rasmm": OBLIQUE, "voxel_order": "LAS"}
    )
    ref = nib.streamlines.load(str(path), lazy_load=True).header
    with TrkReader(path) as trk:
        fields = trk.header.fields
        assert np.array_equal(
            trk.header.affine, nib.streamlines.trk.get_affine_trackvis_to_rasmm(ref)
        )
    for key in (
        "dimensions",
        "voxel_sizes",
        "voxel_to_rasmm",
        "voxel_order",
        "origin",
        Field.NB_STREAMLINES,
        "scalar_name",
        "version",
    ):
        assert np.array_equal(fields[key], ref[key]), key
        assert np.asarray(fields[key]).dtype == np.asarray(ref[key]).dtype, key


def test_trk_version_1_and_empty_voxel_order(tmp_path: Path) -> None:
    path = save_trk(tmp_path / "t.trk", lines(5))
    raw = bytearray(path.read_bytes())
    at = TRK_HEADER_DTYPE.fields["version"][1]  # type: ignore[index]
    raw[at : at + 4] = struct.pack("<i", 1)
    at = TRK_HEADER_DTYPE.fields["voxel_order"][1]  # type: ignore[index]
    raw[at : at + 4] = bytes(4)
    path.write_bytes(bytes(raw))
    with pytest.warns(ZVUserWarning) as record:
        got = read_trk(path)
    assert len(record) == 2
    with pytest.warns(HeaderWarning):
        assert_like_nibabel(got, path)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda raw: raw[:-10], "truncated"),
        (lambda raw: raw[:-2], "truncated"),
        (lambda raw: raw[:1000] + struct.pack("<i", -5) + raw[1004:], "corrupt"),
        (lambda raw: b"TRICK" + raw[5:], "not a TrackVis"),
        (lambda raw: raw[:996] + struct.pack("<i", 999) + raw[1000:], "hdr_size"),
        (lambda raw: raw[:500], "not a TrackVis"),
        (lambda raw: b"", "not a TrackVis"),
    ],
)
def test_bad_trk_is_rejected(tmp_path: Path, edit: Any, match: str) -> None:
    good = save_trk(tmp_path / "good.trk", lines(5), properties={"w": 1})
    bad = tmp_path / "bad.trk"
    bad.write_bytes(edit(good.read_bytes()))
    with pytest.raises(InvalidInputError, match=match):
        TrkReader(bad)


@pytest.mark.slow
@st.composite
def trk_cases(draw: st.DrawFn) -> dict[str, Any]:
    """Streamlines, scalar and property widths, a voxel-to-RAS affine and a byte order."""
    widths = st.dictionaries(
        st.sampled_from(["fa", "md", "rgb", "w"]), st.integers(1, 3), max_size=3
    )
    kind = draw(st.sampled_from(["identity", "diagonal", "oblique"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    affine = np.eye(4)
    if kind == "diagonal":  # voxel sizes with flips, and a shift
        affine[:3, :3] = np.diag(rng.uniform(0.5, 2.5, 3) * rng.choice([-1.0, 1.0], 3))
        affine[:3, 3] = rng.uniform(-100, 100, 3)
    elif kind == "oblique":
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        affine[:3, :3] = q @ np.diag(rng.uniform(0.5, 2.5, 3))
        affine[:3, 3] = rng.uniform(-100, 100, 3)
    n = draw(st.integers(1, 30))
    sl = lines(n, seed=int(rng.integers(2**31)), longest=draw(st.sampled_from([3, 40])))
    return {
        "lines": sl,
        "scalars": draw(widths),
        "properties": draw(widths),
        "affine": affine,
        "voxel_order": draw(st.sampled_from(["RAS", "LAS", "LPS", "PSR"])),
        "big_endian": draw(st.booleans()),
        "span": sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=2))),
    }


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(trk_cases())
def test_trk_reads_like_nibabel_property(tmp_path: Path, case: dict[str, Any]) -> None:
    """Coordinates in RAS+ mm, scalars and properties bit for bit, whole and by range."""
    header = {"voxel_to_rasmm": case["affine"], "voxel_order": case["voxel_order"]}
    path = save_trk(
        tmp_path / "p.trk",
        case["lines"],
        scalars=case["scalars"],
        properties=case["properties"],
        header=header,
    )
    if case["big_endian"]:
        path = big_endian_trk(path, tmp_path / "p-be.trk")
    ref = nib.streamlines.load(str(path))
    with TrkReader(path) as trk:
        got = trk.read()
        assert_like_nibabel(got, path)
        a, b = case["span"]
        part = trk.read(a, b)
    lo, hi = got.offsets[a], got.offsets[b]
    assert np.array_equal(part.positions, nib_flat(ref.streamlines[a:b]).reshape(-1, 3))
    assert np.array_equal(part.offsets, got.offsets[a : b + 1] - lo)
    for k, v in ref.tractogram.data_per_point.items():
        assert np.array_equal(part.data_per_point[k], nib_flat(v)[lo:hi]), k
    for k, v in ref.tractogram.data_per_streamline.items():
        assert np.array_equal(part.data_per_streamline[k], v[a:b]), k


def test_trk_conversion_stores_nibabel_coordinates(tmp_path: Path) -> None:
    path = save_trk(
        tmp_path / "t.trk",
        lines(300, seed=5),
        scalars={"fa": 1, "rgb": 3},
        properties={"w": 2, "len": 1},
        header={"voxel_to_rasmm": OBLIQUE, "voxel_order": "LAS"},
    )
    ref = nib.streamlines.load(str(path))
    dpp, dps = ref.tractogram.data_per_point, ref.tractogram.data_per_streamline
    for streaming in (False, True):
        store = str(tmp_path / f"s{streaming}.zarrvectors")
        convert(path, store, chunk_shape=(40, 40, 40), streaming=streaming, batch_size=700)
        pl = zv.read_streamlines(store)
        assert np.array_equal(pl.positions, ref.streamlines.get_data())
        assert np.array_equal(pl.attributes["fa"], dpp["fa"].get_data()[:, 0])
        assert np.array_equal(pl.attributes["rgb"], dpp["rgb"].get_data())
        assert np.array_equal(pl.object_attributes["w"], dps["w"])
        assert np.array_equal(pl.object_attributes["len"], dps["len"][:, 0])


# -- TCK --------------------------------------------------------------------------------------


def save_tck(path: Path, sl: list[np.ndarray], **header: str) -> Path:
    TckFile(Tractogram(sl, affine_to_rasmm=np.eye(4)), header=header).save(str(path))
    return path


def tck_body(path: Path) -> tuple[bytes, int]:
    raw = path.read_bytes()
    with TckReader(path) as tck:
        return raw, tck.header.offset


def test_tck_matches_nibabel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save_tck(tmp_path / "t.tck", lines(300, seed=6), step_size="0.5", method="iFOD2")
    with TckReader(path) as tck:
        assert tck.header.fields["method"] == "iFOD2"
        assert tck.header.fields["datatype"] == "Float32LE"
        assert_like_nibabel(tck.read(), path)
        whole = tck.read()
        part = tck.read(10, 200)
        a, b = whole.offsets[10], whole.offsets[200]
        assert np.array_equal(part.positions, whole.positions[a:b])
    monkeypatch.setattr(_tractfiles, "_SCAN_ROWS", 11)
    monkeypatch.setattr(_tractfiles, "_BLOCK", 5)
    assert_like_nibabel(read_tck(path), path)
    assert np.array_equal(
        np.concatenate([d.positions for d in TckReader(path).iter_batches(100)]), whole.positions
    )


def test_tck_header_like_nibabel(tmp_path: Path) -> None:
    path = save_tck(tmp_path / "t.tck", lines(3), step_size="0.5", comment="first")
    ref = nib.streamlines.load(str(path), lazy_load=True).header
    with TckReader(path) as tck:
        fields = tck.header.fields
        assert tck.header.offset == ref["_offset_data"]
    assert fields == {k: v for k, v in ref.items() if isinstance(v, str) and k != "endianness"}


def test_tck_zero_streamlines(tmp_path: Path) -> None:
    path = save_tck(tmp_path / "t.tck", [])
    got = read_tck(path)
    assert got.positions.shape == (0, 3)
    assert len(got) == 0
    assert len(nib.streamlines.load(str(path)).streamlines) == 0


def test_tck_nan_coordinate_is_not_a_delimiter(tmp_path: Path) -> None:
    sl = lines(4)
    sl[1][1, 0] = np.nan
    sl[2][0, :2] = np.nan
    path = save_tck(tmp_path / "t.tck", sl)
    got = read_tck(path)
    assert np.diff(got.offsets).tolist() == [len(s) for s in sl]
    ref = nib.streamlines.load(str(path))
    assert np.array_equal(got.positions, ref.streamlines.get_data(), equal_nan=True)


def test_tck_big_endian(tmp_path: Path) -> None:
    path = save_tck(tmp_path / "t.tck", lines(40))
    raw, offset = tck_body(path)
    head = raw[:offset].replace(b"Float32LE", b"Float32BE")
    big = tmp_path / "be.tck"
    big.write_bytes(head + np.frombuffer(raw[offset:], "<f4").astype(">f4").tobytes())
    got = read_tck(big)
    assert np.array_equal(got.positions, read_tck(path).positions)
    assert_like_nibabel(got, big)


def test_tck_float64(tmp_path: Path) -> None:
    sl = lines(10)
    path = save_tck(tmp_path / "t.tck", sl)
    raw, offset = tck_body(path)
    f64 = tmp_path / "f64.tck"
    head = raw[:offset].replace(b"Float32LE", b"Float64LE")
    body = np.frombuffer(raw[offset:], "<f4").astype("<f8").tobytes()
    start = len(head) + 2  # the data move: the offset may gain a digit
    head = head.replace(f"file: . {offset}".encode(), f"file: . {start}".encode())
    f64.write_bytes(head.ljust(start, b"\n") + body)
    got = read_tck(f64)
    assert np.array_equal(got.positions, np.concatenate(sl))


def test_tck_empty_streamlines_are_kept(tmp_path: Path) -> None:
    sl = lines(3)
    path = save_tck(tmp_path / "t.tck", sl)
    raw, offset = tck_body(path)
    nan = np.full(3, np.nan, "<f4").tobytes()
    first = offset + 12 * (len(sl[0]) + 1)
    path.write_bytes(raw[:first] + nan + nan + raw[first:])
    got = read_tck(path)
    assert np.diff(got.offsets).tolist() == [len(sl[0]), 0, 0, len(sl[1]), len(sl[2])]
    assert np.array_equal(got.positions, np.concatenate(sl))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda raw: raw[:-12], "inf inf inf"),
        (lambda raw: raw[:-5], "truncated"),
        (lambda raw: raw[:-12] + np.ones(3, "<f4").tobytes() + raw[-12:], "after the last"),
        (lambda raw: b"mrtrix trucks" + raw[13:], "not an MRtrix"),
        (lambda raw: raw.replace(b"END\n", b"EMD\n"), "END"),
        (lambda raw: raw.replace(b"Float32LE", b"Int32LE__"), "datatype"),
        (lambda raw: raw.replace(b"file: .", b"file: x"), "file entry"),
    ],
)
def test_bad_tck_is_rejected(tmp_path: Path, edit: Any, match: str) -> None:
    good = save_tck(tmp_path / "good.tck", lines(5))
    bad = tmp_path / "bad.tck"
    bad.write_bytes(edit(good.read_bytes()))
    with pytest.raises(InvalidInputError, match=match):
        TckReader(bad)


# -- writing TRK -------------------------------------------------------------------------------


AFFINES = {
    "oblique": {"voxel_to_rasmm": OBLIQUE, "voxel_order": "LAS"},
    "flipped": {"voxel_to_rasmm": np.diag([-1.2, 1.3, 1.9, 1.0]), "voxel_order": "RPS"},
    "identity": {"voxel_sizes": np.ones(3)},
    "shifted": {"voxel_sizes": np.ones(3), "dimensions": np.array([200, 220, 150])},
}


@pytest.mark.parametrize(
    ("scalars", "properties"),
    [({}, {}), ({"fa": 1}, {}), ({}, {"weight": 1}), ({"fa": 1, "rgb": 3}, {"w": 1, "c": 3})],
)
@pytest.mark.parametrize("affine", sorted(AFFINES))
def test_write_trk_gives_nibabels_bytes(
    tmp_path: Path, scalars: dict[str, int], properties: dict[str, int], affine: str
) -> None:
    """Byte for byte what ``TrkFile.save`` writes, without its loop over streamlines."""
    rng = np.random.default_rng(3)
    sl = lines(300, seed=5, longest=90)
    sl[7] = sl[7][:1]  # a one-point streamline
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sl])]).astype(np.int64)
    dpp = {k: rng.random((int(offsets[-1]), c), dtype=np.float32) for k, c in scalars.items()}
    dps = {k: rng.random((len(sl), c), dtype=np.float32) for k, c in properties.items()}
    fields = {"dimensions": np.array([160, 180, 120]), "voxel_sizes": np.array([1.2, 1.3, 1.9])}
    fields |= AFFINES[affine]
    split = {k: np.split(v, offsets[1:-1]) for k, v in dpp.items()}
    tg = Tractogram(sl, data_per_point=split, data_per_streamline=dps, affine_to_rasmm=np.eye(4))
    TrkFile(tg, header=dict(fields)).save(str(tmp_path / "nib.trk"))
    write_trk(tmp_path / "ours.trk", TractData(np.concatenate(sl), offsets, dpp, dps), fields)
    assert (tmp_path / "ours.trk").read_bytes() == (tmp_path / "nib.trk").read_bytes()


def test_write_trk_of_nothing_and_bad_names(tmp_path: Path) -> None:
    empty = TractData(np.zeros((0, 3), np.float32), np.zeros(1, np.int64))
    write_trk(tmp_path / "ours.trk", empty, {})
    TrkFile(Tractogram([], affine_to_rasmm=np.eye(4))).save(str(tmp_path / "nib.trk"))
    assert (tmp_path / "ours.trk").read_bytes() == (tmp_path / "nib.trk").read_bytes()
    pos, off = np.zeros((2, 3), np.float32), np.array([0, 2])
    many = {f"s{i}": np.zeros(2, np.float32) for i in range(11)}
    with pytest.raises(InvalidInputError, match="at most 10 scalar names, got 11"):
        write_trk(tmp_path / "x.trk", TractData(pos, off, many), {})
    long = {"a" * 19: np.zeros((2, 3), np.float32)}  # 19 characters + "\x003" > 20
    with pytest.raises(InvalidInputError, match="TRK scalar name 'aaaa"):
        write_trk(tmp_path / "x.trk", TractData(pos, off, long), {})


@pytest.mark.parametrize("n", [0, 1, 250])
def test_write_tck_gives_nibabels_bytes(tmp_path: Path, n: int) -> None:
    sl = lines(n, seed=9, longest=70)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sl])]).astype(np.int64)
    positions = np.concatenate(sl) if sl else np.zeros((0, 3), np.float32)
    fields = {"step_size": "0.5", "method": "iFOD2", "timestamp": "1700000000.1"}
    TckFile(Tractogram(sl, affine_to_rasmm=np.eye(4)), header=dict(fields)).save(
        str(tmp_path / "nib.tck")
    )
    write_tck(tmp_path / "ours.tck", positions, offsets, fields)
    assert (tmp_path / "ours.tck").read_bytes() == (tmp_path / "nib.tck").read_bytes()
