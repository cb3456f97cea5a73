"""``clip=True`` with ``sphere=`` on path stores against a brute-force NumPy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from query._oracles import AnyArray, box_mask, boxes, range_mask, ranges, sphere_mask
from query.test_where_objects import path_sets


def _runs(inside: AnyArray) -> list[tuple[int, int]]:
    """Maximal runs [start, stop) of True in a 1-D mask, by a plain loop."""
    out, start = [], None
    for i, flag in enumerate([*inside.tolist(), False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start, i))
            start = None
    return out


def _expected(
    paths: list[AnyArray],
    values: list[AnyArray],
    box: Any,
    center: AnyArray,
    radius: float,
    rng: Any,
    limit: int | None,
) -> list[tuple[int, AnyArray, AnyArray]]:
    """(id, positions, values) of every clipped piece, in output order."""
    chosen = []
    for i, (p, v) in enumerate(zip(paths, values, strict=True)):
        shape = box_mask(p, box) & sphere_mask(p, center, radius)
        # no where= at all (rng unbounded) keeps NaN values; a range never matches NaN
        matches = np.ones(len(v), dtype=bool) if rng == (None, None) else range_mask(v, rng)
        if (shape & matches).any():
            chosen.append(i)
    if limit is not None:
        chosen = chosen[:limit]
    pieces = []
    for i in chosen:
        inside = box_mask(paths[i], box) & sphere_mask(paths[i], center, radius)
        for a, b in _runs(inside):
            pieces.append((i, paths[i][a:b], values[i][a:b]))
    return pieces


@settings(max_examples=40, deadline=None)
@given(
    data=path_sets(max_len=8),
    box=boxes(),
    center=st.tuples(st.integers(0, 32), st.integers(0, 32)),
    radius=st.integers(0, 14),
    rng=st.one_of(st.just((None, None)), ranges()),
    limit=st.one_of(st.none(), st.integers(0, 4)),
    streamline=st.booleans(),
)
def test_clip_sphere_paths(
    data: Any,
    box: Any,
    center: Any,
    radius: int,
    rng: Any,
    limit: int | None,
    streamline: bool,
) -> None:
    paths, values = data
    score = np.arange(len(paths), dtype=np.float64)
    store = MemoryStore()
    write = zv.write_streamlines if streamline else zv.write_polylines
    write(
        store,
        paths,
        chunk_shape=(4, 4),
        attributes={"value": values},
        object_attributes={"score": score},
    )
    c = np.asarray(center, dtype=np.float64) / 2
    r = radius / 2
    where = None if rng == (None, None) else {"value": rng}
    got = zv.read_polylines(store, bbox=box, sphere=(c, r), where=where, clip=True, limit=limit)
    want = _expected(paths, values, box, c, r, rng, limit)
    assert got.object_ids.tolist() == [i for i, _, _ in want]
    assert got.object_attributes["score"].tolist() == [float(i) for i, _, _ in want]
    assert len(got) == len(want)
    for k, (_, pos, vals) in enumerate(want):
        np.testing.assert_array_equal(got[k], pos)
        piece = got.attributes["value"][got.offsets[k] : got.offsets[k + 1]]
        np.testing.assert_array_equal(piece, vals)


def test_clip_sphere_cuts_a_path_into_pieces() -> None:
    # a straight path leaving and re-entering the ball is cut where it leaves
    path = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    store = MemoryStore()
    zv.write_polylines(store, [path], chunk_shape=(4, 4), object_ids=np.array([42]))
    got = zv.read_polylines(store, sphere=([0.0, 0.0], 1.0), clip=True)
    assert got.object_ids.tolist() == [42, 42]
    assert got.offsets.tolist() == [0, 2, 4]
    np.testing.assert_array_equal(got.positions, path[[0, 1, 3, 4]])
    whole = zv.read_polylines(store, sphere=([0.0, 0.0], 1.0))
    np.testing.assert_array_equal(whole.positions, path)


@pytest.mark.parametrize("radius", [0.0, 0.25])
def test_clip_sphere_empty(radius: float) -> None:
    store = MemoryStore()
    zv.write_polylines(store, [np.array([[3.0, 3.0], [4.0, 4.0]])], chunk_shape=(4, 4))
    got = zv.read_polylines(store, sphere=([0.0, 0.0], radius), clip=True)
    assert len(got) == 0
    assert got.positions.shape == (0, 2)
