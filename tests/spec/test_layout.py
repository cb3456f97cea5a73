"""The spec tables and enums: names, parsing with friendly errors, layout paths."""

from __future__ import annotations

import pytest

from zarr_vectors.errors import InvalidInputError, MetadataValidationError, UnknownGeometryTypeError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import (
    ArrayKind,
    Encoding,
    GeometryTypeName,
    SparsityStrategy,
)
from zarr_vectors.spec.typespec import type_spec

SEED_GEOMETRY_TYPES = ["point_cloud", "line", "polyline", "streamline", "graph", "skeleton", "mesh"]


def test_the_seven_seed_geometry_types() -> None:
    assert [g.value for g in GeometryTypeName] == SEED_GEOMETRY_TYPES
    assert [type_spec(g).has_objects for g in GeometryTypeName] == [False] + [True] * 6


@pytest.mark.parametrize("name", SEED_GEOMETRY_TYPES)
def test_geometry_type_parse(name: str) -> None:
    parsed = GeometryTypeName.parse(name)
    assert parsed.value == name
    assert GeometryTypeName.parse(parsed) is parsed


def test_unknown_geometry_type_lists_valid_names() -> None:
    with pytest.raises(UnknownGeometryTypeError, match="geometry_type: 'polygon'") as info:
        GeometryTypeName.parse("polygon")
    assert all(repr(n) in str(info.value) for n in SEED_GEOMETRY_TYPES)
    assert isinstance(info.value, MetadataValidationError)
    assert isinstance(info.value, KeyError)
    assert str(info.value).startswith("geometry_type")  # not quoted like a plain KeyError


def test_param_enum_parse_names_the_field() -> None:
    with pytest.raises(InvalidInputError, match="encoding: 'gzip' is not one of 'raw', 'draco'"):
        Encoding.parse("gzip", field="encoding")
    with pytest.raises(InvalidInputError, match="SparsityStrategy"):
        SparsityStrategy.parse("x")


def test_array_table_is_consistent() -> None:
    kinds = [s.kind for s in L.ARRAY_SPECS]
    assert len(kinds) == len(set(kinds)) == len(ArrayKind)
    assert set(L.SPEC_BY_KIND) == set(ArrayKind)
    for spec in L.ARRAY_SPECS:
        assert all(spec.allows(g) for g in GeometryTypeName if spec.requires(g))
        if spec.dtype is not None:
            assert spec.dtype.startswith("<")
    per_chunk = {s.path for s in L.ARRAY_SPECS if s.per_chunk}
    assert {"vertices", "vertex_fragments", "links", "cross_chunk_links"} <= per_chunk
    required_everywhere = {
        s.path for s in L.ARRAY_SPECS if all(s.requires(g) for g in GeometryTypeName)
    }
    assert required_everywhere == {"vertices", "vertex_fragments", "vertex_counts"}


def _holders(path: str, test: str) -> set[str]:
    spec = next(s for s in L.ARRAY_SPECS if s.path == path)
    return {g.value for g in GeometryTypeName if getattr(spec, test)(g)}


def test_array_table_per_type() -> None:
    """Which built-in types may and must hold the link and object arrays (FORMAT.md §6)."""
    linked = {"graph", "skeleton", "mesh"}
    objects = set(SEED_GEOMETRY_TYPES) - {"point_cloud"}
    assert _holders("links", "allows") == linked
    assert _holders("link_attributes/{name}", "allows") == linked
    assert _holders("cross_chunk_links", "allows") == objects
    assert _holders("cross_chunk_link_attributes/{name}", "allows") == linked
    assert _holders("object_index/offsets", "requires") == objects
    assert _holders("object_index/manifest", "requires") == objects
    assert _holders("object_index/offsets", "allows") == set(SEED_GEOMETRY_TYPES)
    assert _holders("links", "requires") == set()


@pytest.mark.parametrize("name", ["intensity", "rgb_2", "_x", "ünï"])
def test_attribute_path(name: str) -> None:
    assert L.attribute_path(L.ATTRIBUTES, name) == f"attributes/{name}"


@pytest.mark.parametrize("name", ["", "a b", "1st", "a/b", "../x", "x-y"])
def test_attribute_path_rejects_non_identifiers(name: str) -> None:
    with pytest.raises(InvalidInputError, match="identifier"):
        L.attribute_path(L.ATTRIBUTES, name)


def test_level_path() -> None:
    assert [L.level_path(n) for n in (0, 1, 12)] == ["0", "1", "12"]
