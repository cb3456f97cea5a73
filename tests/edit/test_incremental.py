"""Point appends that rewrite only the chunks they land in equal a fresh write."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.edit.cases import plain

import zarr_vectors as zv
from zarr_vectors.edit import incremental


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _links(src: Path, dst: Path) -> None:
    for root, _dirs, files in os.walk(src):
        rel = Path(root).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(Path(root) / name, dst / rel / name)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**31), na=st.integers(2, 300), nb=st.integers(1, 40))
def test_chunk_append_equals_fresh_write(tmp_path_factory, seed: int, na: int, nb: int) -> None:
    tmp = tmp_path_factory.mktemp("inc")
    rng = np.random.default_rng(seed)
    a = rng.uniform(-20, 20, (na, 2))
    a[:2] = [[-20, -20], [19.9, 19.9]]  # the grid spans the box: b never grows it
    b = rng.uniform(-20, 19.9, (nb, 2)).astype(np.float64)
    wa = rng.integers(0, 9, na).astype(np.uint8)
    wb = rng.integers(0, 9, nb).astype(np.uint8)
    store, fresh = tmp / "a.zarr", tmp / "f.zarr"
    zv.write_points(str(store), a, attributes={"w": wa}, chunk_shape=(8, 8), bin_shape=(4, 4))
    backup = tmp / "links"
    _links(store, backup)
    before = _snapshot(backup)
    zv.append_points(str(store), b, attributes={"w": wb})
    assert incremental.LAST_PATH[-1] is incremental.AppendPath.CHUNKS
    assert _snapshot(backup) == before  # no file of the old store was written in place
    both = np.concatenate([a, b])
    zv.write_points(
        str(fresh),
        both,
        attributes={"w": np.concatenate([wa, wb])},
        chunk_shape=(8, 8),
        bin_shape=(4, 4),
    )
    for box in (None, ([-6.0, -6.0], [7.0, 7.0])):
        assert plain(zv.read_points(str(store), bbox=box)) == plain(
            zv.read_points(str(fresh), bbox=box)
        )
    level = zv.open_store(str(store))["0"].attrs.asdict()
    assert level.pop("segments") == [1]  # the new rows went to append segment 1
    assert level == zv.open_store(str(fresh))["0"].attrs.asdict()
    assert (
        zv.open_store(str(store)).attrs["bounding_box"]
        == zv.open_store(str(fresh)).attrs["bounding_box"]
    )
    assert zv.validate(str(store)).ok
    assert sorted(p.name for p in tmp.iterdir()) == ["a.zarr", "f.zarr", "links"]
