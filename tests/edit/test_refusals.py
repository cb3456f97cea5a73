"""Bad edits raise a library error naming the problem and leave the store's bytes untouched."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import LocalStore

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError, ZarrVectorsError


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, str]:
    rng = np.random.default_rng(0)
    pts = str(tmp_path / "pts.zarr")
    zv.write_points(
        pts,
        rng.uniform(0, 20, (20, 3)),
        attributes={"w": rng.normal(size=20)},
        vertex_object_ids=np.repeat(np.arange(5), 4),
        chunk_shape=(8, 8, 8),
    )
    lines = str(tmp_path / "pl.zarr")
    zv.write_polylines(
        lines,
        [rng.uniform(0, 20, (3, 3)) for _ in range(4)],
        attributes={"w": [np.ones(3, np.float32)] * 4},
        object_attributes={"s": np.arange(4, dtype=np.int16)},
        chunk_shape=(8, 8, 8),
    )
    return {"points": pts, "polylines": lines}


PATH3 = [np.zeros((2, 3))]
W3 = {"w": [np.ones(2, np.float32)]}
S1 = {"s": np.array([1], np.int16)}

BAD: list[tuple[str, str, Callable[[str], Any], str]] = [
    ("other type", "polylines", lambda s: zv.append_points(s, np.zeros((1, 3))), "polyline"),
    (
        "spatial dims",
        "polylines",
        lambda s: zv.append_polylines(s, [np.zeros((2, 2))], attributes=W3, object_attributes=S1),
        "spatial dimensions",
    ),
    (
        "unknown attribute",
        "polylines",
        lambda s: zv.append_polylines(
            s, PATH3, attributes={**W3, "x": [np.ones(2)]}, object_attributes=S1
        ),
        "'x'",
    ),
    (
        "missing attribute",
        "polylines",
        lambda s: zv.append_polylines(s, PATH3, object_attributes=S1),
        "'w'",
    ),
    (
        "dtype change",
        "polylines",
        lambda s: zv.append_polylines(
            s, PATH3, attributes={"w": [np.ones(2)]}, object_attributes=S1
        ),
        "'w'",
    ),
    (
        "duplicate id",
        "polylines",
        lambda s: zv.append_polylines(
            s, PATH3, attributes=W3, object_attributes=S1, object_ids=[2]
        ),
        "object id 2",
    ),
    (
        "duplicate point id",
        "points",
        lambda s: zv.append_points(
            s, np.zeros((1, 3)), attributes={"w": [1.0]}, vertex_object_ids=[3]
        ),
        "object id 3",
    ),
    ("delete unknown", "polylines", lambda s: zv.delete_objects(s, [1, 40]), "40"),
    (
        "add existing",
        "polylines",
        lambda s: zv.add_attribute(s, "s", [1, 2, 3, 4], kind="object"),
        "'s'",
    ),
    ("add wrong length", "points", lambda s: zv.add_attribute(s, "q", [1, 2]), "'q'"),
    ("drop unknown", "points", lambda s: zv.drop_attribute(s, "nope"), "'nope'"),
    (
        "update dtype",
        "polylines",
        lambda s: zv.update_object_attributes(s, [0], {"s": np.array([1.5])}),
        "'s'",
    ),
    ("update unknown id", "polylines", lambda s: zv.update_object_attributes(s, [9], S1), "9"),
    (
        "read-only store",
        "points",
        lambda s: zv.append_points(LocalStore(s, read_only=True), np.zeros((1, 3))),
        "read-only",
    ),
    (
        "read-only group",
        "points",
        lambda s: zv.delete_objects(zv.open_store(s), [0]),
        "read-only",
    ),
    ("remote", "points", lambda s: zv.compact("s3://bucket/x.zarr"), "remote"),
]


@pytest.mark.parametrize(("what", "which", "call", "named"), BAD, ids=[b[0] for b in BAD])
def test_refused_and_untouched(
    stores: dict[str, str], what: str, which: str, call: Callable[[str], Any], named: str
) -> None:
    path = Path(stores[which])
    before = _snapshot(path)
    siblings = sorted(p.name for p in path.parent.iterdir())
    with pytest.raises(ZarrVectorsError, match=named):
        call(str(path))
    assert _snapshot(path) == before, what
    assert sorted(p.name for p in path.parent.iterdir()) == siblings


def test_invalid_input_errors_are_value_errors(stores: dict[str, str]) -> None:
    with pytest.raises(InvalidInputError):
        zv.delete_objects(stores["points"], [77])
    with pytest.raises(ValueError, match="'w'"):
        zv.append_points(stores["points"], np.zeros((1, 3)), vertex_object_ids=[9])
