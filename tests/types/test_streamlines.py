"""Streamline stores: tractography root keys (FORMAT.md §3) and the polyline contract (§7).

A streamline store is a polyline store with ``geometry_type: "streamline"`` and optional
tractography keys in the root attributes; reads behave exactly like polyline reads.
"""

from __future__ import annotations

import os
import time
from typing import Any
from unittest import mock

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.core.payload import local as zv_local
from zarr_vectors.errors import CorruptPayloadError, InvalidInputError
from zarr_vectors.testing.stores import StoreFactory

AnyArray = npt.NDArray[Any]

SETTINGS = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TRACT_KEYS: dict[str, Any] = {
    "step_size": 0.5,
    "step_size_unit": "mm",
    "seeding_strategy": "wm-mask, 2 seeds per voxel",
    "propagation_algorithm": "iFOD2",
    "reference_image": "sub-01_T1w.nii.gz",
    "tractography_software": "MRtrix3 3.0.4",
}


def _tracts(rng: np.random.Generator, lengths: list[int], ndim: int, step: float) -> list[AnyArray]:
    """Smooth random walks of fixed step length (float32, as tractography writes them)."""
    out = []
    for n in lengths:
        start = rng.uniform(-2.0, 2.0, ndim)
        heading = rng.normal(size=ndim)
        steps = []
        for _ in range(max(n - 1, 0)):
            heading = heading + 0.5 * rng.normal(size=ndim)
            steps.append(step * heading / np.linalg.norm(heading))
        walk = np.vstack([start, start + np.cumsum(np.reshape(steps, (-1, ndim)), axis=0)])
        out.append(walk[:n].astype(np.float32))
    return out


def _bundle(
    seed: int, ndim: int, lengths: list[int], *, user_ids: bool
) -> tuple[list[AnyArray], dict[str, Any]]:
    """Streamlines plus per-point, per-streamline, id and bundle data."""
    rng = np.random.default_rng(seed)
    tracts = _tracts(rng, lengths, ndim, 0.5)
    n_points = sum(lengths)
    n = len(lengths)
    ids = np.sort(rng.choice(2**62, n, replace=False)).astype(np.uint64)[::-1] if user_ids else None
    out_ids = np.arange(n, dtype=np.int64) if ids is None else ids
    extra = {
        "attributes": {
            "fa": rng.random(n_points).astype(np.float32),
            "direction": rng.normal(size=(n_points, 3)).astype(np.float32),
            "in_mask": rng.random(n_points) > 0.5,
        },
        "object_attributes": {
            "bundle": np.array(["CST", "AF", "CC", "IFOF"])[rng.integers(0, 4, n)],
            "length_mm": np.array([0.5 * (k - 1) for k in lengths], np.float64),
        },
        "ids": ids,
        "groups": {"left": list(range(0, n, 2)), "right": list(range(1, n, 2))},
        "group_attributes": {"hemisphere": np.array(["L", "R"]), "color": np.eye(2, 3)},
        "out_ids": out_ids,
    }
    return tracts, extra


def _write(store: Any, tracts: list[AnyArray], extra: dict[str, Any], **kw: Any) -> None:
    groups = {g: extra["out_ids"][m] for g, m in extra["groups"].items()}
    zv.write_streamlines(
        store,
        tracts,
        attributes=extra["attributes"],
        object_attributes=extra["object_attributes"],
        object_ids=extra["ids"],
        groups=groups,
        group_attributes=extra["group_attributes"],
        **kw,
    )


def _expect(extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "ids": extra["out_ids"],
        "attributes": extra["attributes"],
        "object_attributes": extra["object_attributes"],
        "groups": extra["groups"],
        "group_attributes": extra["group_attributes"],
    }


# --------------------------------------------------------------------------------------------
# root metadata


def test_tractography_keys_land_in_root_attributes(
    store: Any, zarr_format: int, store_factory: StoreFactory
) -> None:
    tracts, extra = _bundle(1, 3, [6, 1, 9], user_ids=True)
    _write(
        store,
        tracts,
        extra,
        chunk_shape=(1.0, 1.0, 1.0),
        zarr_format=zarr_format,
        axis_units="mm",
        coordinate_system="RAS",
        **TRACT_KEYS,
    )
    attrs = zv.open_store(store_factory.for_reading(store)).attrs.asdict()
    assert attrs["geometry_type"] == "streamline"
    for key, value in TRACT_KEYS.items():
        assert attrs[key] == value, key
    assert isinstance(attrs["step_size"], float)
    assert attrs["coordinate_system"] == "RAS"
    assert attrs["spatial_dims"] == 3
    assert attrs["zarr_vectors_version"] == "1.0"


def test_missing_tractography_keys_are_left_out() -> None:
    store = MemoryStore()
    zv.write_streamlines(store, [np.zeros((2, 3))], chunk_shape=(1, 1, 1), step_size=2)
    attrs = zv.open_store(store).attrs.asdict()
    assert attrs["step_size"] == 2.0
    assert isinstance(attrs["step_size"], float)
    assert not set(TRACT_KEYS) - {"step_size"} & set(attrs)


def test_polyline_geometry_type_streamline_matches_write_streamlines(path_oracle: Any) -> None:
    tracts, _ = _bundle(2, 3, [4, 4], user_ids=False)
    a, b = MemoryStore(), MemoryStore()
    zv.write_streamlines(a, tracts, chunk_shape=(1, 1, 1))
    zv.write_polylines(b, tracts, chunk_shape=(1, 1, 1), geometry_type="streamline")
    assert path_oracle.store_contents(a) == path_oracle.store_contents(b)


def test_non_numeric_step_size_is_an_input_error() -> None:
    with pytest.raises(ValueError, match="step_size") as info:
        zv.write_streamlines(MemoryStore(), [np.zeros((2, 3))], chunk_shape=(1, 1, 1),
                             step_size="fast")  # type: ignore[arg-type]  # fmt: skip
    assert isinstance(info.value, InvalidInputError)


# --------------------------------------------------------------------------------------------
# the polyline contract


def test_round_trip_every_store(
    path_oracle: Any, store: Any, zarr_format: int, store_factory: StoreFactory
) -> None:
    tracts, extra = _bundle(3, 3, [12, 1, 7, 30], user_ids=True)
    _write(store, tracts, extra, chunk_shape=(0.5, 0.5, 0.5), zarr_format=zarr_format)
    path_store = store_factory.for_reading(store)
    everything = range(len(tracts))
    path_oracle.assert_selection(
        zv.read_streamlines(path_store), tracts, everything, **_expect(extra)
    )
    path_oracle.assert_selection(
        zv.read_polylines(path_store), tracts, everything, **_expect(extra)
    )
    order = [3, 0]
    r = zv.read_streamlines(path_store, object_ids=extra["out_ids"][order])
    path_oracle.assert_selection(r, tracts, order, **_expect(extra))
    path_oracle.check_rows_and_links(path_store, tracts, (0.5, 0.5, 0.5))


@pytest.mark.slow
@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    ndim=st.sampled_from((2, 3, 4)),
    lengths=st.lists(st.integers(1, 15), min_size=1, max_size=5),
    user_ids=st.booleans(),
    fmt=st.sampled_from((2, 3)),
    box=st.tuples(st.integers(-8, 8), st.integers(-8, 8), st.integers(1, 8)),
)
def test_streamline_reads_equal_brute_force(
    path_oracle: Any,
    seed: int,
    ndim: int,
    lengths: list[int],
    user_ids: bool,
    fmt: int,
    box: tuple[int, int, int],
) -> None:
    tracts, extra = _bundle(seed, ndim, lengths, user_ids=user_ids)
    chunk = (0.5 if ndim < 4 else 1.0,) * ndim
    store = MemoryStore()
    _write(store, tracts, extra, chunk_shape=chunk, zarr_format=fmt, step_size=0.5)
    path_oracle.assert_selection(
        zv.read_streamlines(store), tracts, range(len(tracts)), **_expect(extra)
    )
    # quarter-unit box corners: exactly on chunk boundaries or halfway between them
    lo = [box[0] / 4] * ndim
    hi = [box[0] / 4 + box[2] / 2] * ndim
    lo[0] = box[1] / 4
    hi[0] = lo[0] + box[2] / 2
    sel = path_oracle.touching(tracts, lo, hi)
    path_oracle.assert_selection(
        zv.read_streamlines(store, bbox=(lo, hi)), tracts, sel, **_expect(extra)
    )
    exp = _expect(extra)
    path_oracle.assert_clipped(
        zv.read_streamlines(store, bbox=(lo, hi), clip=True),
        tracts,
        lo,
        hi,
        ids=exp["ids"],
        attributes=exp["attributes"],
        object_attributes=exp["object_attributes"],
    )
    path_oracle.check_rows_and_links(store, tracts, chunk)
    last = len(tracts) - 1
    path_oracle.check_single_object_reads(
        store,
        tracts[last],
        chunk,
        list(extra["attributes"]),
        lambda: zv.read_streamlines(store, object_ids=extra["out_ids"][last : last + 1]),
    )


def test_group_reads() -> None:
    tracts, extra = _bundle(4, 3, [3, 4, 5, 6, 7], user_ids=True)
    store = MemoryStore()
    _write(store, tracts, extra, chunk_shape=(1, 1, 1))
    ids = extra["out_ids"]
    left = zv.read_streamlines(store, group="left")
    assert sorted(left.object_ids.tolist()) == sorted(ids[[0, 2, 4]].tolist())
    right = zv.read_streamlines(store, group=1)
    assert sorted(right.object_ids.tolist()) == sorted(ids[[1, 3]].tolist())
    both = zv.read_streamlines(store, group="left", object_ids=ids[[4, 1, 0]])
    assert both.object_ids.tolist() == ids[[4, 0]].tolist()
    assert both.group_attributes["hemisphere"].tolist() == ["L", "R"]


# --------------------------------------------------------------------------------------------
# type checks


def test_streamline_readers_reject_other_geometry_types() -> None:
    points = MemoryStore()
    zv.write_points(points, np.zeros((3, 3)), chunk_shape=(1, 1, 1))
    with pytest.raises(InvalidInputError, match="point_cloud"):
        zv.read_streamlines(points)
    tracts = MemoryStore()
    zv.write_streamlines(tracts, [np.zeros((2, 3))], chunk_shape=(1, 1, 1))
    with pytest.raises(InvalidInputError, match="streamline"):
        zv.read_lines(tracts)


def test_write_streamlines_validates_like_polylines() -> None:
    with pytest.raises(InvalidInputError, match=r"row 1\b"):
        zv.write_streamlines(MemoryStore(), [np.array([[0, 0, 0], [0, np.nan, 0]])],
                             chunk_shape=(1, 1, 1))  # fmt: skip
    with pytest.raises(InvalidInputError, match="duplicate id"):
        zv.write_streamlines(MemoryStore(), [np.zeros((1, 3))] * 2, chunk_shape=(1, 1, 1),
                             object_ids=[9, 9])  # fmt: skip


# --------------------------------------------------------------------------------------------
# box reads of local stores on an open Reader: Blosc blocks decoded in part, checksums of
# unchanged files verified once per Reader


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    lengths=st.lists(st.integers(1, 60), min_size=20, max_size=60),
    frame=st.sampled_from((64, 256, 1024, 4096)),
    boxes=st.lists(
        st.tuples(st.integers(-8, 8), st.integers(-8, 8), st.integers(1, 4)), min_size=3, max_size=3
    ),
)
def test_open_reader_box_reads_of_local_stores_equal_brute_force(
    path_oracle: Any,
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    lengths: list[int],
    frame: int,
    boxes: list[tuple[int, int, int]],
) -> None:
    tracts, extra = _bundle(seed, 3, lengths, user_ids=False)
    store = str(tmp_path_factory.mktemp("box") / "s.zv")
    _write(store, tracts, extra, chunk_shape=(1.0, 1.0, 1.0), frame_bytes=frame)
    with mock.patch.object(zv_local, "SETTLE_NS", -1), zv.open(store) as reader:
        for _ in range(2):  # the second pass reads files already verified
            for box in boxes:
                lo = [box[0] / 4, box[1] / 4, box[1] / 4]
                hi = [lo[0] + box[2] / 2, lo[1] + box[2] / 2, lo[2] + box[2] / 2]
                sel = path_oracle.touching(tracts, lo, hi)
                path_oracle.assert_selection(
                    reader.read(bbox=(lo, hi)), tracts, sel, **_expect(extra)
                )


def _verifications(read: Any) -> int:
    """Run ``read``; return how many payload chunk files it read whole to verify."""
    calls = []
    real = zv_local.strip_crc32c

    def counting(data: Any, where: str) -> Any:
        calls.append(where)
        return real(data, where)

    with mock.patch.object(zv_local, "strip_crc32c", counting):
        read()
    return len(calls)


def _small_box_store(tmp_path: Any) -> tuple[str, list[AnyArray], tuple[list[float], list[float]]]:
    tracts, extra = _bundle(7, 3, [40] * 60, user_ids=False)
    store = str(tmp_path / "s.zv")
    _write(store, tracts, extra, chunk_shape=(2.0, 2.0, 2.0), frame_bytes=256)
    return store, tracts, ([-0.5, -0.5, -0.5], [0.0, 0.0, 0.0])


def _vertex_files(store: str) -> list[str]:
    root = os.path.join(store, "0", "vertices", "c")
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]


def test_unchanged_files_are_verified_once_per_open_reader(path_oracle: Any, tmp_path: Any) -> None:
    store, tracts, box = _small_box_store(tmp_path)
    sel = path_oracle.touching(tracts, *box)
    with mock.patch.object(zv_local, "SETTLE_NS", -1), zv.open(store) as reader:
        first = _verifications(lambda: reader.read(bbox=box))
        assert first > 0
        assert _verifications(lambda: reader.read(bbox=box)) == 0
        got = reader.read(bbox=box)
    assert got.object_ids.tolist() == sel
    with zv.open(store) as again:  # a new Reader verifies again
        assert _verifications(lambda: again.read(bbox=box)) == first


def test_files_changed_just_before_a_read_are_verified_again(tmp_path: Any) -> None:
    store, _, box = _small_box_store(tmp_path)
    # a settle window of a day keeps the just-written files "recent" however slow the machine
    with mock.patch.object(zv_local, "SETTLE_NS", 86_400 * 10**9), zv.open(store) as reader:
        first = _verifications(lambda: reader.read(bbox=box))
        assert first > 0
        assert _verifications(lambda: reader.read(bbox=box)) == first


@pytest.mark.parametrize("how", ["in_place", "replaced_same_size_and_mtime"])
def test_flipped_bit_after_verification_is_an_error(tmp_path: Any, how: str) -> None:
    store, _, box = _small_box_store(tmp_path)
    with mock.patch.object(zv_local, "SETTLE_NS", -1), zv.open(store) as reader:
        reader.read(bbox=box)
        assert _verifications(lambda: reader.read(bbox=box)) == 0
        time.sleep(0.02)  # past the file system's timestamp granularity
        for path in _vertex_files(store):
            with open(path, "rb") as f:
                data = bytearray(f.read())
            data[len(data) // 2] ^= 0x10
            if how == "in_place":
                with open(path, "r+b") as f:
                    f.seek(len(data) // 2)
                    f.write(data[len(data) // 2 : len(data) // 2 + 1])
            else:
                st_old = os.stat(path)
                with open(path + ".new", "wb") as f:
                    f.write(data)
                os.utime(path + ".new", ns=(st_old.st_atime_ns, st_old.st_mtime_ns))
                os.replace(path + ".new", path)
        with pytest.raises(CorruptPayloadError, match="checksum"):
            reader.read(bbox=box)
