"""Valid stores give no findings; missing or non-ZVF stores give exactly one clear finding."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
import zarr
from zarr.abc.store import Store
from zarr.storage import LocalStore, MemoryStore, WrapperStore

import zarr_vectors as zv
from zarr_vectors.core.store import open_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.types.graphs import write_graph
from zarr_vectors.types.meshes import write_meshes
from zarr_vectors.types.skeletons import write_skeletons
from zarr_vectors.validate import CHECKS, validate


@pytest.mark.parametrize("level", [1, 2])
def test_written_store_has_no_findings(
    store_kind: str,
    zarr_format: Literal[2, 3],
    level: int,
    tmp_path: Path,
    zipped: Any,
    sample: Any,
) -> None:
    store = MemoryStore() if store_kind == "memory" else LocalStore(tmp_path / "s.zarrvectors")
    sample(store, zarr_format)
    report = validate(zipped(store) if store_kind == "zip" else store, level=level)
    assert report.findings == (), str(report)
    assert report.ok


@pytest.mark.parametrize("level", [3, 4, 5])
def test_deeper_levels_run_clean_on_valid_stores(level: int, sample: Any) -> None:
    store = MemoryStore()
    sample(store)
    report = validate(store, level=level)
    assert report.ok
    assert [f for f in report.findings if f.severity is not Severity.INFO] == []
    assert all(not f.check.startswith("validate.not_implemented") for f in report.findings)


def test_path_inputs(tmp_path: Path, zipped: Any, sample: Any) -> None:
    directory = tmp_path / "p.zarrvectors"
    sample(str(directory))
    zip_store = zipped(LocalStore(directory))
    for store in (str(directory), directory, str(zip_store.path), open_store(directory)):
        assert validate(store).findings == (), store


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"positions": np.zeros((0, 3))}, id="empty"),
        pytest.param(
            {
                "positions": np.random.default_rng(0).uniform(-60, 60, (80, 2)),
                "chunk_shape": (25.0, 25.0),
                "bin_shape": (5.0, 5.0),
            },
            id="2d-negative",
        ),
        pytest.param(
            {
                "positions": np.random.default_rng(0).uniform(0, 9, (40, 4)),
                "chunk_shape": (3.0,) * 4,
                "bin_shape": (1.0,) * 4,
            },
            id="4d",
        ),
        pytest.param(
            {
                "positions": np.random.default_rng(1).uniform(0, 0.9, (50, 3)),
                "chunk_shape": (0.3,) * 3,
                "bin_shape": (0.1,) * 3,
            },
            id="float-tolerance",
        ),
        pytest.param(
            {
                "positions": np.random.default_rng(2).uniform(0, 100, (50, 3)),
                "chunk_shape": (25.0,) * 3,
                "shards": (2, 2, 2),
            },
            id="sharded",
        ),
        pytest.param(
            {
                "positions": np.random.default_rng(3).uniform(0, 100, (50, 3)),
                "chunk_shape": (25.0,) * 3,
                "compressor": None,
            },
            id="uncompressed",
        ),
    ],
)
def test_variants_have_no_findings(kwargs: dict[str, Any]) -> None:
    store = MemoryStore()
    kwargs.setdefault("chunk_shape", (10.0, 10.0, 10.0))
    zv.write_points(store, kwargs.pop("positions"), **kwargs)
    report = validate(store)
    assert report.findings == (), str(report)


def test_multilevel_store_has_no_findings(kit_factory: Any) -> None:
    kit = kit_factory("memory", 3)
    kit.add_level(1, (1, 1, 5))
    kit.add_level(2, (5, 5, 5))
    report = validate(kit.store)
    assert report.findings == (), str(report)


@pytest.mark.parametrize("target", ["dir", "zip", "file"])
def test_missing_store_is_one_finding(tmp_path: Path, target: str) -> None:
    path = {
        "dir": tmp_path / "nope.zarrvectors",
        "zip": tmp_path / "nope.zip",
        "file": tmp_path / "plain.txt",
    }[target]
    if target == "file":
        path.write_text("not a store")
    report = validate(str(path))
    assert [(f.check, f.severity, f.path) for f in report.findings] == [
        ("L1.store.missing", Severity.ERROR, "/")
    ]
    assert str(path) in report.findings[0].message


@pytest.mark.parametrize(
    ("build", "check"),
    [
        pytest.param(lambda s: None, "L1.root.not_group", id="empty-store"),
        pytest.param(
            lambda s: zarr.create_array(s, shape=(2,), dtype="i4"),
            "L1.root.not_group",
            id="root-is-array",
        ),
        pytest.param(
            lambda s: zarr.open_group(s, mode="w"), "L1.root.required_key", id="plain-zarr-group"
        ),
    ],
)
def test_not_a_zvf_store_is_one_finding(build: Any, check: str) -> None:
    store = MemoryStore()
    build(store)
    report = validate(store)
    assert report.checks() == {check}
    assert len(report.findings) == 1, str(report)


class _NoListing(WrapperStore[Store]):
    """A store that cannot list keys (like a plain HTTP server)."""

    @property
    def supports_listing(self) -> bool:
        return False


def test_store_without_listing_checks_predictable_nodes(sample: Any) -> None:
    inner = MemoryStore()
    sample(inner)
    report = validate(_NoListing(inner))
    assert [(f.check, f.severity) for f in report.findings] == [
        ("L1.store.no_listing", Severity.WARNING)
    ], str(report)


def test_missing_vertices_found_without_listing(sample: Any) -> None:
    inner = MemoryStore()
    sample(inner)
    zarr.open_group(inner, mode="r+")["0"].__delitem__("vertices")
    report = validate(_NoListing(inner))
    assert "L1.array.missing" in report.checks()


@pytest.mark.parametrize("level", [0, 6, "2", True, 2.0])
def test_bad_level_argument_raises(level: Any) -> None:
    with pytest.raises(InvalidInputError, match="level must be an integer from 1 to 5"):
        validate(MemoryStore(), level=level)


_GARBAGE = [None, "x", [], {}, [None], [1, "a"], 1.5, -1, 0, True, [[1]], {"min": 1}]
_ROOT_KEYS = [
    "zarr_vectors_version",
    "geometry_type",
    "spatial_dims",
    "base_bin_shape",
    "chunk_shape",
    "multiscales",
    "chunk_grid",
    "bounding_box",
    "axis_units",
]


@pytest.mark.parametrize("key", _ROOT_KEYS)
def test_garbage_root_values_never_raise(key: str, kit_factory: Any) -> None:
    kit = kit_factory("memory", 3)
    for value in _GARBAGE:
        kit.set_attr("", key, value)
        report = validate(kit.store, level=5)
        assert all(f.message for f in report.findings)


@pytest.mark.parametrize(
    "key",
    [
        "level",
        "bin_ratio",
        "bin_shape",
        "object_sparsity",
        "vertex_count",
        "sparsity_strategy",
        "coarsening",
    ],
)
def test_garbage_level_values_never_raise(key: str, kit_factory: Any) -> None:
    kit = kit_factory("memory", 2)
    for value in _GARBAGE:
        kit.set_attr("0", key, value)
        validate(kit.store, level=5)


@pytest.mark.parametrize("key", ["datasets", "axes", "type", "version"])
def test_garbage_multiscales_never_raise(key: str, kit_factory: Any) -> None:
    kit = kit_factory("memory", 3)
    for value in _GARBAGE:
        kit.edit_attrs("", lambda a, v=value: a["multiscales"][0].__setitem__(key, v))
        report = validate(kit.store)
        # readers need neither the block's type nor its version: those are warnings
        assert not report.ok or (key in ("type", "version") and report.warnings)


def test_garbage_dataset_entries_never_raise(kit_factory: Any) -> None:
    kit = kit_factory("memory", 2)
    for value in _GARBAGE:
        kit.edit_datasets(lambda ds, v=value: ds.append(v))
        assert not validate(kit.store).ok
        kit.edit_datasets(lambda ds: ds.pop())
        kit.edit_dataset(0, lambda d, v=value: d.update(coordinateTransformations=v, path=v))
        assert not validate(kit.store).ok


def test_registry_has_every_level() -> None:
    assert sorted(CHECKS) == [1, 2, 3, 4, 5]
    assert CHECKS[1]
    assert CHECKS[2]


def test_validate_imports_only_spec_core_errors() -> None:
    package = Path(zv.__file__).parent / "validate"
    allowed = (
        "zarr_vectors.spec",
        "zarr_vectors.core",
        "zarr_vectors.errors",
        "zarr_vectors.validate",
    )
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("zarr_vectors"):
                    assert name.startswith(allowed), f"{source.name} imports {name}"


_RNG = np.random.default_rng(7)
_C, _B = (25.0, 25.0, 25.0), (5.0, 5.0, 5.0)


def _pts(n: int) -> Any:
    return _RNG.uniform(0, 100, (n, 3))


_WRITERS = {
    "point_cloud": lambda s, f: zv.write_points(
        s,
        _pts(100),
        chunk_shape=_C,
        bin_shape=_B,
        zarr_format=f,
        vertex_object_ids=np.arange(100) % 7,
    ),
    "line": lambda s, f: zv.write_lines(
        s, _pts(40).reshape(20, 2, 3), chunk_shape=_C, bin_shape=_B, zarr_format=f
    ),
    "polyline": lambda s, f: zv.write_polylines(
        s, [_pts(10) for _ in range(6)], chunk_shape=_C, bin_shape=_B, zarr_format=f
    ),
    "streamline": lambda s, f: zv.write_streamlines(
        s, [_pts(10) for _ in range(6)], chunk_shape=_C, bin_shape=_B, zarr_format=f
    ),
    "graph": lambda s, f: write_graph(
        s,
        _pts(50),
        np.c_[np.arange(49), np.arange(1, 50)],
        chunk_shape=_C,
        bin_shape=_B,
        zarr_format=f,
    ),
    "mesh": lambda s, f: write_meshes(
        s,
        _pts(50),
        np.c_[np.arange(48), np.arange(1, 49), np.arange(2, 50)],
        chunk_shape=_C,
        bin_shape=_B,
        zarr_format=f,
    ),
    "skeleton": lambda s, f: write_skeletons(
        s, _pts(30), np.r_[-1, np.arange(29)], chunk_shape=_C, bin_shape=_B, zarr_format=f
    ),
}


@pytest.mark.parametrize("geometry", sorted(_WRITERS))
def test_every_geometry_type_and_pyramid_validates(
    geometry: str, zarr_format: Literal[2, 3]
) -> None:
    store = MemoryStore()
    _WRITERS[geometry](store, zarr_format)
    assert validate(store).findings == ()
    zv.build_pyramid(store, [(1, 1, 5), (5, 5, 5)])
    report = validate(store)
    assert report.findings == (), str(report)
