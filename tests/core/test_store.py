"""Store layer: open/create, resolution levels, overwrite protection and safe writes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from zarr.errors import UnstableSpecificationWarning
from zarr.storage import LocalStore, MemoryStore, ZipStore

import zarr_vectors as zv
from zarr_vectors.core import gather, writer
from zarr_vectors.core.multiscale import write_multiscale_metadata
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.store import (
    create_store,
    list_resolution_levels,
    open_store,
    read_level_metadata,
    read_root_metadata,
)
from zarr_vectors.errors import (
    InvalidInputError,
    LevelNotFoundError,
    MetadataValidationError,
    StoreExistsError,
    StoreNotFoundError,
    ZarrVectorsError,
)
from zarr_vectors.spec.metadata import LevelMetadata, RootMetadata
from zarr_vectors.testing import assert_points_equal
from zarr_vectors.testing.stores import ZIP_DUPLICATE_NAMES, StoreFactory, open_zip

REQUIRED = {
    "zarr_vectors_version", "geometry_type", "spatial_dims", "base_bin_shape", "chunk_shape",
    "multiscales",
}  # fmt: skip
RECOMMENDED = {"coordinate_system", "bounding_box", "creation_timestamp", "chunk_grid"}

ZIP_R_PLUS_BUG = (
    "BUG: open_store('x.zip', 'r+') opens its own ZipStore in append mode and never closes it: "
    "attribute edits reach the file only when the garbage collector closes it; until then the "
    "zip has no central directory (BadZipFile on the next open), and each edit appends a "
    "duplicate entry (UserWarning 'Duplicate name')"
)

OLD = np.array([[0.5, 1.5, 2.5], [15.0, -3.0, 7.0], [-12.0, 4.0, 30.0]])
NEW = np.array([[10.0, 10.0, 10.0], [-5.0, 0.0, 1.0]])
CHUNK = (10.0, 10.0, 10.0)


def write(store: Any, pos: np.ndarray = OLD, **kwargs: Any) -> zv.WriteSummary:
    kwargs.setdefault("chunk_shape", CHUNK)
    return zv.write_points(store, pos, **kwargs)


def assert_overwrite_of_open_zip_refused(store: Any, factory: StoreFactory) -> None:
    """An open ZipStore cannot drop entries, so overwriting it must be refused, old data kept."""
    with pytest.raises(StoreExistsError, match="ZipStore"):
        write(store, NEW, overwrite=True)
    assert_points_equal(
        zv.read_points(factory.for_reading(store)), zv.Points(OLD, {"i": np.arange(3)})
    )


# --------------------------------------------------------------------------------------------
# open_store


@pytest.mark.filterwarnings(ZIP_DUPLICATE_NAMES)  # attribute edits in an open ZipStore
def test_open_store_read_and_write_attributes(
    request: pytest.FixtureRequest, store_kind: str, store: Any, store_factory: StoreFactory,
    zarr_format: int,
) -> None:  # fmt: skip
    write(store, zarr_format=zarr_format, source_description="original")
    if store_kind == "zip_path":  # zip entries cannot be rewritten: refused with a clear error
        with pytest.raises(zv.InvalidInputError, match="zip store"):
            open_store(store, mode="r+")
        return
    # r+ through the handle the user wrote with (an open ZipStore stays writable)
    root = open_store(store, mode="r+")
    root.attrs["source_description"] = "Corrected label v2"
    root.attrs["x_custom"] = {"a": [1, 2]}
    reader = store_factory.for_reading(store)
    attrs = open_store(reader, mode="r").attrs.asdict()
    assert set(attrs) >= REQUIRED | RECOMMENDED
    assert attrs["source_description"] == "Corrected label v2"
    assert attrs["x_custom"] == {"a": [1, 2]}
    assert attrs["geometry_type"] == "point_cloud"
    assert attrs["zarr_vectors_version"] == "1.0"
    assert open_store(reader).metadata.zarr_format == zarr_format
    # metadata unknown to the library survives and the data still reads
    assert read_root_metadata(open_store(reader)).extra == {"x_custom": {"a": [1, 2]}}
    assert_points_equal(zv.read_points(reader), zv.Points(OLD))


def test_open_store_read_only_refuses_assignment(store: Any, store_factory: StoreFactory) -> None:
    write(store)
    root = open_store(store_factory.for_reading(store), mode="r")
    with pytest.raises(ValueError, match="read-only"):
        root.attrs["notes"] = "nope"


@pytest.mark.parametrize("mode", ["w", "w-", "x"])
def test_open_store_rejects_write_modes(mode: str) -> None:
    store = MemoryStore()
    write(store)
    with pytest.raises(InvalidInputError, match="mode"):
        open_store(store, mode=mode)  # type: ignore[arg-type]


def test_open_store_missing_locations(tmp_path: Path) -> None:
    for target in [tmp_path / "none.zarrvectors", str(tmp_path / "none.zip"), MemoryStore()]:
        with pytest.raises(StoreNotFoundError) as info:
            open_store(target)  # type: ignore[arg-type]
        assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_open_store_rejects_plain_zarr_groups(zarr_format: int) -> None:
    store = MemoryStore()
    zarr.open_group(store, mode="w", zarr_format=zarr_format).attrs["hello"] = "world"  # type: ignore[arg-type]
    with pytest.raises(StoreNotFoundError, match="without ZVF root metadata"):
        open_store(store)


def test_open_store_accepts_an_open_group() -> None:
    store = MemoryStore()
    write(store)
    group = zarr.open_group(store, mode="r")
    assert open_store(group).attrs["spatial_dims"] == 3


@pytest.mark.filterwarnings(ZIP_DUPLICATE_NAMES)
def test_zip_path_string_reads(tmp_path: Path) -> None:
    zs = open_zip(tmp_path / "s.zip", "w")
    write(zs, attributes={"i": np.arange(3)})
    zs.close()
    got = zv.read_points(str(tmp_path / "s.zip"))
    assert_points_equal(got, zv.Points(OLD, {"i": np.arange(3)}))


# --------------------------------------------------------------------------------------------
# ZipStore handed in by the user


@pytest.mark.filterwarnings(ZIP_DUPLICATE_NAMES)
def test_write_leaves_a_user_zip_store_open(tmp_path: Path) -> None:
    zs = open_zip(tmp_path / "s.zip", "w")
    write(zs)
    group = zarr.open_group(zs, mode="r+")  # still usable: not closed by write_points
    group.attrs["after"] = 1
    zs.close()
    with ZipStore(tmp_path / "s.zip", mode="r") as reader:
        assert open_store(reader).attrs["after"] == 1


@pytest.mark.filterwarnings(ZIP_DUPLICATE_NAMES)
def test_write_to_an_unopened_zip_store(tmp_path: Path) -> None:
    zs = ZipStore(tmp_path / "s.zip", mode="w")  # what users write
    write(zs)
    zs.close()
    with ZipStore(tmp_path / "s.zip", mode="r") as reader:
        assert_points_equal(zv.read_points(reader), zv.Points(OLD))


@pytest.mark.filterwarnings(ZIP_DUPLICATE_NAMES)
def test_read_from_the_same_open_zip_store(tmp_path: Path) -> None:
    zs = open_zip(tmp_path / "s.zip", "w")
    write(zs)
    assert_points_equal(zv.read_points(zs), zv.Points(OLD))


def test_zip_write_emits_no_warnings(tmp_path: Path) -> None:
    zs = open_zip(tmp_path / "s.zip", "w")
    write(zs)
    zs.close()


# --------------------------------------------------------------------------------------------
# create_store and levels


def meta(**kwargs: Any) -> RootMetadata:
    return RootMetadata.create(
        geometry_type="point_cloud", chunk_shape=(10.0, 10.0), base_bin_shape=(2.5, 2.5), **kwargs
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_create_store(zarr_format: int) -> None:
    store = MemoryStore()
    root = create_store(store, meta(source_description="x"), zarr_format=zarr_format)  # type: ignore[arg-type]
    assert root.metadata.zarr_format == zarr_format
    assert list_resolution_levels(root) == [0]
    stored = read_root_metadata(open_store(store))
    assert stored.with_updates(chunk_grid=None) == meta(source_description="x")
    assert len(zv.read_points(store)) == 0  # an empty store reads as an empty point set
    level = read_level_metadata(root, 0)
    assert (level.level, level.bin_ratio, level.bin_shape) == (0, (1, 1), (2.5, 2.5))


def test_create_store_refuses_existing_data() -> None:
    store = MemoryStore()
    create_store(store, meta(notes="first"))
    with pytest.raises(StoreExistsError, match="overwrite=True") as info:
        create_store(store, meta(notes="second"))
    assert isinstance(info.value, FileExistsError)
    assert open_store(store).attrs["notes"] == "first"
    create_store(store, meta(notes="second"), overwrite=True)
    assert open_store(store).attrs["notes"] == "second"


def test_create_store_rejects_unknown_zarr_format() -> None:
    with pytest.raises(InvalidInputError, match="zarr_format"):
        create_store(MemoryStore(), meta(), zarr_format=4)  # type: ignore[arg-type]


def test_v2_root_attributes_are_a_real_zattrs_file(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    write(str(path), zarr_format=2)
    zattrs = json.loads((path / ".zattrs").read_text())
    assert set(zattrs) >= REQUIRED
    assert json.loads((path / "0" / ".zattrs").read_text())["level"] == 0
    assert not (path / "zarr.json").exists()


def test_v3_root_attributes_live_in_zarr_json(tmp_path: Path) -> None:
    path = tmp_path / "s.zarrvectors"
    write(str(path))
    doc = json.loads((path / "zarr.json").read_text())
    assert doc["node_type"] == "group"
    assert set(doc["attributes"]) >= REQUIRED
    assert not (path / ".zattrs").exists()


def levels_store(zarr_format: int = 3) -> tuple[MemoryStore, zarr.Group]:
    store = MemoryStore()
    write(store, chunk_shape=(10.0, 10.0, 10.0), bin_shape=(2.5, 2.5, 5.0),
          zarr_format=zarr_format, axis_units="um", axis_names=("z", "y", "x"))  # fmt: skip
    return store, open_store(store, mode="r+")


def datasets(store: Any) -> list[dict[str, Any]]:
    return list(open_store(store).attrs["multiscales"][0]["datasets"])  # type: ignore[index,arg-type]


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_add_and_remove_resolution_levels(zarr_format: int) -> None:
    store, root = levels_store(zarr_format)
    group = zv.add_resolution_level(root, 1, (2, 2, 2), object_sparsity=0.5)
    assert group.attrs["level"] == 1
    zv.add_resolution_level(root, 2, [4, 4, 2])
    assert list_resolution_levels(root) == [0, 1, 2]
    ds = datasets(store)
    assert [d["path"] for d in ds] == ["0", "1", "2"]
    assert ds[1] == {
        "path": "1", "level": 1, "bin_ratio": [2, 2, 2], "bin_shape": [5.0, 5.0, 10.0],
        "object_sparsity": 0.5,
        "coordinateTransformations": [
            {"type": "scale", "scale": [2.0, 2.0, 2.0]},
            {"type": "translation", "translation": [2.5, 2.5, 5.0]},
        ],
    }  # fmt: skip
    zv.remove_resolution_level(root, 1)
    assert list_resolution_levels(root) == [0, 2]
    assert [d["level"] for d in datasets(store)] == [0, 2]
    axes = open_store(store).attrs["multiscales"][0]["axes"]  # type: ignore[index]
    assert [(a["name"], a["unit"]) for a in axes] == [("z", "um"), ("y", "um"), ("x", "um")]
    assert_points_equal(zv.read_points(store), zv.Points(OLD))  # level 0 untouched


@pytest.mark.parametrize(
    ("level", "ratio", "error", "match"),
    [
        (1, (2, 2), MetadataValidationError, "bin_ratio"),
        (1, (0, 1, 1), MetadataValidationError, "bin_ratio"),
        (0, (1, 1, 1), InvalidInputError, "level 0"),
    ],
)
def test_add_resolution_level_errors(level: int, ratio: tuple[int, ...],
                                     error: type[Exception], match: str) -> None:  # fmt: skip
    _, root = levels_store()
    with pytest.raises(error, match=match):
        zv.add_resolution_level(root, level, ratio)


def test_add_existing_level_refused() -> None:
    _, root = levels_store()
    zv.add_resolution_level(root, 1, (2, 2, 2))
    with pytest.raises(StoreExistsError, match="level 1"):
        zv.add_resolution_level(root, 1, (4, 4, 4))


@pytest.mark.parametrize(
    "ratios", [[(3, 2, 2)], [(8, 2, 2)], [(4, 4, 2), (2, 2, 2)]],
    ids=["not_dividing", "bin_larger_than_chunk", "non_monotone"],
)  # fmt: skip
def test_add_resolution_level_checks_the_bin_grid(ratios: list[tuple[int, ...]]) -> None:
    store, root = levels_store()
    *first, last = ratios
    for n, ratio in enumerate(first, start=1):
        zv.add_resolution_level(root, n, ratio)
    levels = list_resolution_levels(root)
    with pytest.raises(MetadataValidationError, match="bin"):
        zv.add_resolution_level(root, len(ratios), last)
    assert list_resolution_levels(root) == levels  # nothing left behind
    assert [d["level"] for d in datasets(store)] == levels
    zv.add_resolution_level(root, len(ratios) + 1, (4, 4, 2))  # the store is still usable


def test_remove_resolution_level_errors() -> None:
    _, root = levels_store()
    with pytest.raises(InvalidInputError, match="level 0"):
        zv.remove_resolution_level(root, 0)
    with pytest.raises(LevelNotFoundError, match=r"level 3 is not in the store \(levels: \[0\]\)"):
        zv.remove_resolution_level(root, 3)


def test_write_multiscale_metadata_regenerates_from_groups() -> None:
    store, root = levels_store()
    root.attrs["x_unknown"] = "kept"
    lvl = LevelMetadata(level=3, bin_ratio=(4, 4, 2), bin_shape=(10.0, 10.0, 10.0),
                        object_sparsity=0.25)  # fmt: skip
    root.create_group("3", attributes=lvl.to_dict())
    root.create_group("not_a_level")
    assert [d["level"] for d in datasets(store)] == [0]  # stale until regenerated
    ms = write_multiscale_metadata(root)
    assert [d.level for d in ms.datasets] == [0, 3]
    assert datasets(store)[1]["bin_shape"] == [10.0, 10.0, 10.0]
    assert datasets(store)[1]["object_sparsity"] == 0.25
    assert list_resolution_levels(root) == [0, 3]
    attrs = open_store(store).attrs.asdict()
    assert attrs["x_unknown"] == "kept"
    assert read_root_metadata(open_store(store)).multiscales == ms
    # dropping the group by hand and regenerating removes it again
    del root["3"]
    write_multiscale_metadata(root)
    assert [d["level"] for d in datasets(store)] == [0]


# --------------------------------------------------------------------------------------------
# overwrite protection


def test_refuses_to_overwrite_without_flag(
    store: Any, store_factory: StoreFactory, zarr_format: int
) -> None:
    write(store, zarr_format=zarr_format, attributes={"i": np.arange(3)})
    with pytest.raises(StoreExistsError, match="overwrite=True") as info:
        write(store, NEW, zarr_format=zarr_format)
    assert isinstance(info.value, FileExistsError)
    got = zv.read_points(store_factory.for_reading(store))
    assert_points_equal(got, zv.Points(OLD, {"i": np.arange(3)}))


def test_overwrite_replaces(
    store_kind: str, store: Any, store_factory: StoreFactory, zarr_format: int
) -> None:
    write(store, zarr_format=zarr_format, attributes={"i": np.arange(3)})
    if store_kind == "zip":
        assert_overwrite_of_open_zip_refused(store, store_factory)
        return
    other = 5 - zarr_format  # also switch Zarr format
    write(store, NEW, chunk_shape=(4.0, 4.0, 4.0), overwrite=True, zarr_format=other)
    reader = store_factory.for_reading(store)
    assert_points_equal(zv.read_points(reader), zv.Points(NEW))
    root = open_store(reader)
    assert root.metadata.zarr_format == other
    assert root.attrs["chunk_shape"] == [4.0, 4.0, 4.0]
    # plain zarr sees no payload of the old store: only chunks holding new vertices are set
    counts = np.asarray(root["0/vertex_counts"][...]).ravel()  # type: ignore[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnstableSpecificationWarning)
        payloads = np.asarray(root["0/vertices"][...], dtype=object).ravel()  # type: ignore[index]
    assert [len(p) > 0 for p in payloads] == (counts > 0).tolist()


def test_existing_non_zarr_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "s.zarrvectors"
    target.mkdir()
    (target / "precious.txt").write_text("keep me")
    with pytest.raises(StoreExistsError):
        write(str(target))
    assert (target / "precious.txt").read_text() == "keep me"


def test_existing_empty_directory_is_used(tmp_path: Path) -> None:
    target = tmp_path / "s.zarrvectors"
    target.mkdir()
    write(LocalStore(target))
    assert_points_equal(zv.read_points(str(target)), zv.Points(OLD))


# --------------------------------------------------------------------------------------------
# interrupted writes never leave a store that reads as valid


class Injected(Exception):
    """The failure injected into a write."""


def inject(monkeypatch: pytest.MonkeyPatch, where: str, exc: BaseException) -> None:
    """Make the write fail part-way: after the vertices payload, in a dense array, or while
    gathering an attribute column."""
    calls = {"n": 0}

    def failing(original: Any, after: int) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] > after:
                raise exc
            return original(*args, **kwargs)

        return wrapper

    if where == "payload":  # the vertices payload is written, the next one fails
        monkeypatch.setattr(PayloadArray, "write", failing(PayloadArray.write, 1))
    elif where == "dense":  # every payload is written, vertex_counts fails (writer thread)
        monkeypatch.setattr(writer, "write_dense", failing(writer.write_dense, 0))
    elif where == "attribute":  # a row gather (vertices or an attribute column) fails
        monkeypatch.setattr(gather, "_elements", failing(gather._elements, 1))
    else:
        raise ValueError(where)


INJECTIONS = [
    pytest.param("payload", Injected("disk full"), id="payload"),
    pytest.param("dense", Injected("disk full"), id="dense"),
    pytest.param("attribute", Injected("bad column"), id="attribute"),
    pytest.param("payload", KeyboardInterrupt(), id="interrupt"),
]


def assert_rejected(store: Any) -> None:
    with pytest.raises(
        StoreNotFoundError, match=r"without ZVF root metadata|no Zarr group|no store at"
    ):
        open_store(store)
    with pytest.raises(ZarrVectorsError):
        zv.read_points(store)


@pytest.mark.parametrize(("where", "exc"), INJECTIONS)
def test_failed_write_to_a_new_store_is_rejected(
    monkeypatch: pytest.MonkeyPatch, store: Any, store_factory: StoreFactory,
    zarr_format: int, where: str, exc: BaseException,
) -> None:  # fmt: skip
    inject(monkeypatch, where, exc)
    with pytest.raises(type(exc)):
        write(store, zarr_format=zarr_format, attributes={"a": np.arange(3.0), "b": [1, 2, 3]})
    monkeypatch.undo()
    assert_rejected(store_factory.for_reading(store))


@pytest.mark.parametrize(("where", "exc"), INJECTIONS)
def test_failed_overwrite_keeps_old_store_or_is_rejected(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, store_kind: str,
    store: Any, store_factory: StoreFactory, zarr_format: int, where: str, exc: BaseException,
) -> None:  # fmt: skip
    write(store, zarr_format=zarr_format, attributes={"i": np.arange(3)})
    if store_kind == "zip":
        assert_overwrite_of_open_zip_refused(store, store_factory)
        return
    inject(monkeypatch, where, exc)
    with pytest.raises(type(exc)):
        write(store, NEW, overwrite=True, zarr_format=zarr_format,
              attributes={"a": np.arange(2.0), "b": [1, 2]})  # fmt: skip
    monkeypatch.undo()
    reader = store_factory.for_reading(store)
    try:
        root = open_store(reader)
    except StoreNotFoundError:
        assert_rejected(reader)
        return
    # it opens, so it must be exactly the old store
    assert root.metadata.zarr_format == zarr_format
    assert_points_equal(zv.read_points(reader), zv.Points(OLD, {"i": np.arange(3)}))


@pytest.mark.parametrize("kind", ["local", "local_path"])
def test_failed_local_overwrite_keeps_the_old_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "s.zarrvectors"
    target = str(path) if kind == "local_path" else LocalStore(path)
    write(target)
    inject(monkeypatch, "payload", Injected("disk full"))
    with pytest.raises(Injected):
        write(target, NEW, overwrite=True)
    monkeypatch.undo()
    assert_points_equal(zv.read_points(target), zv.Points(OLD))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarrvectors"]  # no staging left
