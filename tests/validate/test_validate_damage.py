"""Damaged stores: each case breaks one rule and expects one exact check id and severity.

Every case runs on Zarr v3 and v2 (unless it is format-specific), on a MemoryStore, a LocalStore
and a ZipStore packed from the damaged directory.  Besides the expected finding, a case lists
the other check ids the same damage legitimately triggers (``also``); anything else fails, so
the validator does not drown one problem in noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from zarr.core.dtype import VariableLengthBytes

from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate import ValidationReport, validate

Kit = Any  # conftest.Kit: a writable store plus metadata-editing helpers
E, W = Severity.ERROR, Severity.WARNING


@dataclass(frozen=True)
class Case:
    """One way to damage a store, and the finding it must produce."""

    name: str
    damage: Callable[[Kit], None]
    check: str
    severity: Severity = E
    path: str | None = None
    also: frozenset[str] = field(default_factory=frozenset)
    formats: tuple[Literal[2, 3], ...] = (3, 2)
    level: int = 2


def _replace_array(kit: Kit, path: str, **kwargs: Any) -> None:
    """Recreate array ``path`` with other zarr properties, keeping its attributes."""
    root = kit.root()
    with quiet_vlen():
        old = root[path]
        attrs = old.attrs.asdict()
        shape = kwargs.pop("shape", old.shape)
        root.create_array(path, shape=shape, attributes=attrs, overwrite=True, **kwargs)


def _vlen(kit: Kit, path: str, attrs: dict[str, Any]) -> None:
    with quiet_vlen():
        root = kit.root()
        root.create_array(
            path,
            shape=root["0/vertices"].shape,
            chunks=(1, 1, 1),
            dtype=VariableLengthBytes(),
            fill_value=b"",
            attributes=attrs,
        )


def _as_group(kit: Kit, path: str) -> None:
    kit.delete(path)
    kit.root().create_group(path, attributes={"zv_array": "vertices"})


def _v3_doc(kit: Kit, key: str, fn: Callable[[dict[str, Any]], None]) -> None:
    name = "zarr.json" if kit.fmt == 3 else ".zarray"
    doc = kit.get(f"{key}/{name}")
    assert doc is not None
    fn(doc)
    kit.put(f"{key}/{name}", doc)


def _drop_zvf_keys(kit: Kit) -> None:
    keys = (
        "zarr_vectors_version",
        "geometry_type",
        "spatial_dims",
        "base_bin_shape",
        "chunk_shape",
        "multiscales",
    )
    kit.edit_attrs("", lambda a: [a.pop(k) for k in keys])


def _decreasing(kit: Kit) -> None:
    # the library refuses to list such a level, so the multiscales entry is written by hand
    kit.add_level(1, (1, 1, 5))
    kit.add_level(2, (5, 5, 1), rebuild=False)
    bins = [25.0, 25.0, 5.0]
    entry = {
        "path": "2", "level": 2, "bin_ratio": [5, 5, 1], "bin_shape": bins,
        "object_sparsity": 1.0,
        "coordinateTransformations": [
            {"type": "scale", "scale": [5.0, 5.0, 1.0]},
            {"type": "translation", "translation": [b / 2 for b in bins]},
        ],
    }  # fmt: skip
    kit.edit_datasets(lambda ds: ds.append(entry))


def _drop_level0_entry(kit: Kit) -> None:
    kit.add_level(1, (5, 5, 5))
    kit.edit_datasets(lambda ds: ds.pop(0))


def _reverse_datasets(kit: Kit) -> None:
    kit.add_level(1, (5, 5, 5))
    kit.edit_datasets(lambda ds: ds.reverse())


def _unlisted(kit: Kit) -> None:
    kit.add_level(1, (5, 5, 5), rebuild=False)


def _dangling_path(kit: Kit) -> None:
    kit.add_level(1, (5, 5, 5))
    kit.delete("1")


def _attr_sets_differ(kit: Kit) -> None:
    kit.add_level(1, (5, 5, 5))
    kit.delete("1/attributes/intensity")


def _level_is_array(kit: Kit) -> None:
    kit.root().create_array("1", shape=(3,), dtype="i4", attributes={})


def _foreign_doc(kit: Kit) -> None:
    if kit.fmt == 3:
        kit.put("0/.zattrs", {"level": 0})
    else:
        kit.put("0/zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": {}})


def _chunky(kit: Kit) -> None:
    _replace_array(
        kit, "0/vertex_fragments", chunks=(2, 2, 2), dtype=VariableLengthBytes(), fill_value=b""
    )


CASES = [
    # ---- L1 structure --------------------------------------------------------------------
    Case(
        "missing required key",
        lambda k: k.del_attr("", "geometry_type"),
        "L1.root.required_key",
        path="/",
        also=frozenset({"L1.array.missing"}),
    ),
    Case(
        "no ZVF metadata at all",
        _drop_zvf_keys,
        "L1.root.required_key",
        also=frozenset({"L2.root.chunk_grid"}),
    ),
    Case(
        "spatial_dims is a string",
        lambda k: k.set_attr("", "spatial_dims", "3"),
        "L1.root.key_type",
    ),
    Case(
        "chunk_shape not a list", lambda k: k.set_attr("", "chunk_shape", "big"), "L1.root.key_type"
    ),
    Case(
        "multiscales not a list",
        lambda k: k.set_attr("", "multiscales", {"a": 1}),
        "L1.root.key_type",
    ),
    Case(
        "geometry_type wrong type",
        lambda k: k.set_attr("", "geometry_type", 7),
        "L1.root.key_type",
        also=frozenset({"L1.array.missing"}),
    ),
    Case("level 0 group missing", lambda k: k.delete("0"), "L1.level.missing", path="/0"),
    Case("level node is an array", _level_is_array, "L1.level.not_group", path="/1"),
    Case("v2/v3 documents mixed", _foreign_doc, "L1.format.mixed", path="/0"),
    Case(
        "malformed zarr.json",
        lambda k: k.put_raw("0/zarr.json" if k.fmt == 3 else "0/.zgroup", b"{not json"),
        "L1.json.malformed",
        path="/0",
        also=frozenset({"L1.level.missing"}),
    ),
    Case(
        "attributes not an object",
        lambda k: _v3_doc(k, "0/vertices", lambda d: d.update(attributes=[1])),
        "L1.json.malformed",
        formats=(3,),
        also=frozenset({"L1.array.attr_missing"}),
    ),
    Case(
        "vertices missing", lambda k: k.delete("0/vertices"), "L1.array.missing", path="/0/vertices"
    ),
    Case(
        "vertex_counts missing",
        lambda k: k.delete("0/vertex_counts"),
        "L1.array.missing",
        path="/0/vertex_counts",
    ),
    Case(
        "vertices is a group",
        lambda k: _as_group(k, "0/vertices"),
        "L1.array.not_array",
        path="/0/vertices",
    ),
    Case(
        "links in a point cloud",
        lambda k: _vlen(
            k, "0/links", {"zv_array": "links", "dtype": "<i4", "width": 2, "encoding": "raw"}
        ),
        "L1.array.not_allowed",
        path="/0/links",
    ),
    Case(
        "unknown node",
        lambda k: k.root().create_group("0/extra"),
        "L1.level.unknown_node",
        severity=W,
        path="/0/extra",
    ),
    Case(
        "vertices stored dense",
        lambda k: _replace_array(k, "0/vertices", chunks=(1, 1, 1), dtype="f8", fill_value=0),
        "L1.array.vlen_dtype",
    ),
    Case("per-chunk chunks not 1", _chunky, "L1.array.chunks"),
    Case(
        "per-chunk shape not grid",
        lambda k: _replace_array(
            k,
            "0/vertices",
            shape=(2, 4, 4),
            chunks=(1, 1, 1),
            dtype=VariableLengthBytes(),
            fill_value=b"",
        ),
        "L1.array.shape",
        path="/0/vertices",
    ),
    Case(
        "vertex_counts not numeric",
        lambda k: _replace_array(
            k, "0/vertex_counts", chunks=(1, 1, 1), dtype=VariableLengthBytes(), fill_value=b""
        ),
        "L1.array.numeric",
        also=frozenset({"L2.array.dtype"}),
    ),
    Case(
        "array attr missing",
        lambda k: k.del_attr("0/vertices", "encoding"),
        "L1.array.attr_missing",
        path="/0/vertices",
    ),
    Case(
        "array attr wrong type",
        lambda k: k.set_attr("0/vertices", "dtype", 5),
        "L1.array.attr_type",
    ),
    Case(
        "array metadata unreadable",
        lambda k: _v3_doc(k, "0/vertices", lambda d: d.update(shape="nope")),
        "L1.array.unreadable",
    ),
    # ---- L2 seed rules ---------------------------------------------------------------------
    Case(
        "rule 1 geometry_type",
        lambda k: k.set_attr("", "geometry_type", "polygon"),
        "L2.seed.1",
        also=frozenset(),
    ),
    Case("rule 2 length", lambda k: k.set_attr("", "base_bin_shape", [5.0, 5.0]), "L2.seed.2"),
    Case(
        "rule 3 divisibility",
        lambda k: k.set_attr("", "base_bin_shape", [30.0, 5.0, 5.0]),
        "L2.seed.3",
        also=frozenset({"L2.multiscales.bin_shape", "L2.level.bin_shape"}),
    ),
    Case(
        "rule 3 just outside tolerance",
        lambda k: k.set_attr("", "base_bin_shape", [5.0001, 5.0, 5.0]),
        "L2.seed.3",
        also=frozenset({"L2.multiscales.bin_shape", "L2.level.bin_shape"}),
    ),
    Case(
        "rule 4 positivity",
        lambda k: k.set_attr("", "chunk_shape", [25.0, -25.0, 25.0]),
        "L2.seed.4",
    ),
    Case(
        "rule 5 empty multiscales",
        lambda k: k.set_attr("", "multiscales", []),
        "L2.seed.5",
        also=frozenset({"L2.multiscales.unlisted_level"}),
    ),
    Case("rule 5 path to missing group", _dangling_path, "L2.seed.5", path="/1"),
    Case(
        "rule 6 level 0 not listed",
        _drop_level0_entry,
        "L2.seed.6",
        also=frozenset({"L2.multiscales.unlisted_level"}),
    ),
    Case(
        "rule 6 level 0 ratio",
        lambda k: k.edit_dataset(
            0,
            lambda d: d.update(
                bin_ratio=[1, 5, 1],
                bin_shape=[5.0, 25.0, 5.0],
                coordinateTransformations=[
                    {"type": "scale", "scale": [1.0, 5.0, 1.0]},
                    {"type": "translation", "translation": [2.5, 12.5, 2.5]},
                ],
            ),
        ),
        "L2.seed.6",
        also=frozenset({"L2.level.bin_ratio", "L2.level.bin_shape"}),
    ),
    Case("rule 7 bin_ratio decreasing", _decreasing, "L2.seed.7"),
    # ---- L2 root ---------------------------------------------------------------------------
    Case(
        "unknown version",
        lambda k: k.set_attr("", "zarr_vectors_version", "9.9"),
        "L2.root.version",
        severity=W,
    ),
    Case(  # recommended, not required (issue 26): readers derive the grid from level 0
        "chunk_grid missing",
        lambda k: k.del_attr("", "chunk_grid"),
        "L2.root.chunk_grid",
        severity=W,
    ),
    Case(
        "chunk_grid malformed",
        lambda k: k.set_attr("", "chunk_grid", {"origin": [0]}),
        "L2.root.chunk_grid",
    ),
    Case(
        "bbox outside grid",
        lambda k: k.set_attr("", "bounding_box", {"min": [0, 0, 0], "max": [500, 1, 1]}),
        "L2.root.bbox_outside_grid",
    ),
    Case(
        "bbox malformed",
        lambda k: k.set_attr("", "bounding_box", {"min": [3, 0, 0], "max": [1, 1, 1]}),
        "L2.root.bounding_box",
    ),
    Case(
        "optional key type",
        lambda k: k.set_attr("", "draco_compressed", "yes"),
        "L2.root.optional_key",
    ),
    Case(
        "axis_units wrong length",
        lambda k: k.set_attr("", "axis_units", ["um"]),
        "L2.root.optional_key",
    ),
    # ---- L2 multiscales --------------------------------------------------------------------
    Case(
        "two multiscales",
        lambda k: k.edit_attrs("", lambda a: a["multiscales"].append(a["multiscales"][0])),
        "L2.multiscales.structure",
    ),
    Case(
        "datasets not a list",
        lambda k: k.edit_attrs("", lambda a: a["multiscales"][0].update(datasets="x")),
        "L2.multiscales.structure",
        also=frozenset({"L2.multiscales.unlisted_level"}),
    ),
    Case(
        "multiscale type",
        lambda k: k.edit_attrs("", lambda a: a["multiscales"][0].update(type="image")),
        "L2.multiscales.type",
        severity=W,  # readers do not need it (and read the store)
    ),
    Case(
        "multiscale version",
        lambda k: k.edit_attrs("", lambda a: a["multiscales"][0].update(version="0.4")),
        "L2.multiscales.version",
        severity=W,
    ),
    Case(
        "axes count",
        lambda k: k.edit_attrs("", lambda a: a["multiscales"][0]["axes"].pop()),
        "L2.multiscales.axes",
    ),
    Case(
        "dataset lacks bin_shape",
        lambda k: k.edit_dataset(0, lambda d: d.pop("bin_shape")),
        "L2.multiscales.dataset",
    ),
    Case(
        "dataset path not str(level)",
        lambda k: k.edit_dataset(0, lambda d: d.update(path="00")),
        "L2.multiscales.path",
        also=frozenset({"L2.seed.5"}),
    ),
    Case("datasets out of order", _reverse_datasets, "L2.multiscales.order"),
    Case(
        "dataset bin_shape",
        lambda k: k.edit_dataset(0, lambda d: d.update(bin_shape=[6.0, 5.0, 5.0])),
        "L2.multiscales.bin_shape",
        also=frozenset({"L2.multiscales.transform", "L2.level.bin_shape"}),
    ),
    Case(
        "translation not bin_shape/2",
        lambda k: k.edit_dataset(
            0,
            lambda d: d.update(
                coordinateTransformations=[
                    {"type": "scale", "scale": [1.0, 1.0, 1.0]},
                    {"type": "translation", "translation": [0, 0, 0]},
                ]
            ),
        ),
        "L2.multiscales.transform",
        severity=W,  # readers never apply the transforms (and read the store)
    ),
    Case("level group not listed", _unlisted, "L2.multiscales.unlisted_level", path="/1"),
    # ---- L2 level groups -------------------------------------------------------------------
    Case("level number", lambda k: k.set_attr("0", "level", 3), "L2.level.number", path="/0"),
    Case(
        "level bin_ratio differs",
        lambda k: k.set_attr("0", "bin_ratio", [5, 5, 5]),
        "L2.level.bin_ratio",
        also=frozenset({"L2.level.bin_shape"}),
    ),
    Case(
        "level bin_shape differs",
        lambda k: k.set_attr("0", "bin_shape", [25.0, 25.0, 25.0]),
        "L2.level.bin_shape",
    ),
    Case(
        "level bin does not divide chunk",
        lambda k: k.set_attr("0", "bin_shape", [10.0, 5.0, 5.0]),
        "L2.level.bin_divides",
        also=frozenset({"L2.level.bin_shape"}),
    ),
    Case(
        "object_sparsity out of range",
        lambda k: k.set_attr("0", "object_sparsity", 1.5),
        "L2.level.object_sparsity",
        path="/0",
    ),
    Case(
        "level attrs do not parse",
        lambda k: k.set_attr("0", "vertex_count", -1),
        "L2.level.attrs",
        path="/0",
    ),
    Case(
        "attribute name",
        lambda k: _vlen(
            k,
            "0/attributes/1bad",
            {"zv_array": "attribute", "dtype": "<f4", "width": 1, "encoding": "raw"},
        ),
        "L2.attributes.name",
        path="/0/attributes/1bad",
    ),
    Case("attribute sets differ", _attr_sets_differ, "L2.attributes.levels", path="/1"),
    # ---- L2 array attribute values ---------------------------------------------------------
    Case(
        "zv_array wrong", lambda k: k.set_attr("0/vertices", "zv_array", "links"), "L2.array.kind"
    ),
    Case(
        "vertices dtype int", lambda k: k.set_attr("0/vertices", "dtype", "<i4"), "L2.array.dtype"
    ),
    Case(
        "dtype not numpy", lambda k: k.set_attr("0/vertices", "dtype", "floaty"), "L2.array.dtype"
    ),
    Case(
        "dtype big-endian",
        lambda k: k.set_attr("0/attributes/intensity", "dtype", ">f4"),
        "L2.array.dtype",
    ),
    Case(
        "dense dtype attr mismatch",
        lambda k: k.set_attr("0/vertex_counts", "dtype", "<f8"),
        "L2.array.dtype",
        path="/0/vertex_counts",
    ),
    Case("vertices width", lambda k: k.set_attr("0/vertices", "width", 2), "L2.array.width"),
    Case(
        "fragments width", lambda k: k.set_attr("0/vertex_fragments", "width", 3), "L2.array.width"
    ),
    Case(
        "encoding unknown",
        lambda k: k.set_attr("0/vertices", "encoding", "lz4"),
        "L2.array.encoding",
    ),
    Case(
        "draco on fragments",
        lambda k: k.set_attr("0/vertex_fragments", "encoding", "draco"),
        "L2.array.encoding",
    ),
]

_PARAMS = [
    pytest.param(case, fmt, id=f"{case.name}-v{fmt}") for case in CASES for fmt in case.formats
]


def _check(report: ValidationReport, case: Case) -> None:
    hits = [f for f in report.findings if f.check == case.check]
    assert hits, f"{case.check} not reported; got:\n{report}"
    assert {f.severity for f in hits} == {case.severity}, str(report)
    if case.path is not None:
        assert case.path in {f.path for f in hits}, str(report)
    unexpected = report.checks() - {case.check} - case.also
    assert not unexpected, f"unexpected findings {unexpected}:\n{report}"
    assert report.ok is (case.severity is not E), str(report)


@pytest.mark.parametrize(("case", "fmt"), _PARAMS)
@pytest.mark.parametrize("kind", ["memory", "local", "zip"])
def test_damage(case: Case, fmt: Literal[2, 3], kind: str, kit_factory: Any, zipped: Any) -> None:
    kit = kit_factory("memory" if kind == "memory" else "local", fmt)
    case.damage(kit)
    store = zipped(kit.store) if kind == "zip" else kit.store
    _check(validate(store, level=case.level), case)
