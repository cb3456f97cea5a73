"""The type registry: the built-in specs say what the format says, and the registry is open.

The expected values below restate FORMAT.md §3 (root keys), §6 (link widths, cross-chunk
records), §8 (connectivity) and §10 (merge rules) independently of the specs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import zarr_vectors.spec.typespec as registry
from zarr_vectors.errors import InvalidInputError, UnknownGeometryTypeError
from zarr_vectors.spec.conventions import (
    FramePolicy,
    GeometryTypeName,
    MergeRule,
    SceneKind,
    Topology,
)
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.spec.typespec import (
    BUILTIN_TYPE_SPECS,
    TypeSpec,
    parse_geometry_type,
    register_type_spec,
    registered_type_names,
    type_spec,
)

SEVEN = ["point_cloud", "line", "polyline", "streamline", "graph", "skeleton", "mesh"]


def test_one_spec_per_builtin_name() -> None:
    assert [s.name for s in BUILTIN_TYPE_SPECS] == SEVEN
    assert [g.value for g in GeometryTypeName] == SEVEN
    for name in SEVEN:
        assert type_spec(name).name is GeometryTypeName(name)
        assert parse_geometry_type(name) is GeometryTypeName(name)
    assert set(SEVEN) <= set(registered_type_names())


@pytest.mark.parametrize(
    ("name", "arity", "cross", "sequential", "objects", "merge", "frames", "scene", "topology"),
    [
        ("point_cloud", 0, 0, False, False, "bin", "whole_chunk", "points", "none"),
        ("line", 0, 2, True, True, "run", "object", "segments", "paths"),
        ("polyline", 0, 2, True, True, "run", "path", "paths", "paths"),
        ("streamline", 0, 2, True, True, "run", "path", "paths", "paths"),
        ("graph", 2, 2, False, True, "bin", "object", "graph", "graph"),
        ("skeleton", 2, 2, False, True, "tree", "tree", "tree", "forest"),
        ("mesh", 3, 3, False, True, "bin", "object", "mesh", "surface"),
    ],
)
def test_builtin_facts(
    name: str,
    arity: int,
    cross: int,
    sequential: bool,
    objects: bool,
    merge: str,
    frames: str,
    scene: str,
    topology: str,
) -> None:
    s = type_spec(name)
    assert (s.link_arity, s.cross_chunk_endpoints) == (arity, cross)
    assert (s.sequential, s.has_objects, s.linked) == (sequential, objects, arity > 0)
    assert s.merge_rule is MergeRule(merge)
    assert s.frame_policy is FramePolicy(frames)
    assert s.scene is SceneKind(scene)
    assert s.topology is Topology(topology)
    assert s.exact_partitions == (arity == 0)
    assert s.family is None
    assert s.family_name == name
    assert s.always_directed == (name == "skeleton")
    assert s.object_vertices == (2 if name == "line" else None)
    assert s.ordered == (name != "point_cloud")


def test_root_keys_and_defaults() -> None:
    keys = {s.name: s.root_keys for s in BUILTIN_TYPE_SPECS if s.root_keys}
    assert keys == {
        "streamline": (
            "step_size",
            "step_size_unit",
            "seeding_strategy",
            "propagation_algorithm",
            "reference_image",
            "tractography_software",
        ),
        "graph": ("is_directed",),
        "skeleton": ("swc_compatible", "is_directed"),
        "mesh": ("winding_order", "closed_surface"),
    }
    defaults = {s.name: s.defaults for s in BUILTIN_TYPE_SPECS if s.root_defaults}
    assert defaults == {
        "graph": {"is_directed": False},
        "skeleton": {"swc_compatible": True, "is_directed": True},
        "mesh": {"winding_order": "ccw"},
    }
    assert [s.directed_default for s in BUILTIN_TYPE_SPECS] == [False] * 5 + [True, False]


def test_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownGeometryTypeError, match="'hexagon' is not one of 'point_cloud'"):
        type_spec("hexagon")
    with pytest.raises(UnknownGeometryTypeError, match="must be a string"):
        parse_geometry_type(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "a b"}, "not an identifier"),
        ({"name": "x", "link_arity": -1}, "link widths"),
        ({"name": "x", "has_objects": False, "link_arity": 2}, "links need objects"),
        ({"name": "x", "root_defaults": (("k", 1),)}, "not root_keys"),
    ],
)
def test_spec_checks_itself(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        TypeSpec(**kwargs)  # type: ignore[arg-type]


@pytest.fixture
def clean_registry() -> object:
    """Registry state restored after a test that registers types."""
    saved = dict(registry._SPECS), dict(registry._LOADED), registry._ENTRY_POINTS
    yield None
    registry._SPECS.clear()
    registry._SPECS.update(saved[0])
    registry._LOADED.clear()
    registry._LOADED.update(saved[1])
    registry._ENTRY_POINTS = saved[2]


@pytest.mark.usefixtures("clean_registry")
def test_register_new_spec_and_metadata_accepts_it() -> None:
    spec = TypeSpec(name="ring", sequential=True, root_keys=("winding",))
    assert register_type_spec(spec) is spec
    assert register_type_spec(spec) is spec  # the same spec again is fine
    with pytest.raises(InvalidInputError, match="already registered"):
        register_type_spec(TypeSpec(name="ring"))
    with pytest.raises(InvalidInputError, match="already registered"):
        register_type_spec(TypeSpec(name="mesh"))
    meta = RootMetadata.create(
        geometry_type="ring", chunk_shape=(1.0, 1.0), base_bin_shape=(1.0, 1.0)
    )
    assert meta.geometry_type == "ring"
    doc = meta.to_dict()
    assert doc["geometry_type"] == "ring"
    assert RootMetadata.from_dict(doc) == meta


@pytest.mark.usefixtures("clean_registry")
def test_entry_point_spec_loaded_on_first_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry point may name a bare TypeSpec; a rescan finds a distribution added late."""
    type_spec("mesh")  # the entry points are scanned and cached before the new one exists
    (tmp_path / "zv_hexagon.py").write_text(
        "from zarr_vectors.spec.typespec import TypeSpec\nHEXAGON = TypeSpec(name='hexagon')\n"
    )
    info = tmp_path / "zv_hexagon-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zv-hexagon\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[zarr_vectors.geometry_types]\nhexagon = zv_hexagon:HEXAGON\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert type_spec("hexagon").name == "hexagon"
        assert registry.load_geometry_entry_point("hexagon") is type_spec("hexagon")
    finally:
        sys.modules.pop("zv_hexagon", None)
