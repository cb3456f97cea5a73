"""Range ends compare exactly with float32 values (not after rounding the end to float32)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv

F32 = st.floats(0.0, 1.0, width=32)
ENDS = st.one_of(st.none(), st.floats(0.0, 1.0), st.sampled_from([0.51, 0.1, 1 / 3]))


def test_float32_value_just_below_a_decimal_end() -> None:
    below = np.float32(0.51)  # 0.50999999..., the float32 nearest 0.51, is below 0.51
    v = np.array([below, 0.5, np.nextafter(below, np.float32(1))], dtype=np.float32)
    store = MemoryStore()
    zv.write_points(
        store,
        np.array([[1.0, 1.0], [5.0, 5.0], [9.0, 9.0]]),
        chunk_shape=(4, 4),
        attributes={"v": v},
    )
    got = zv.read_points(store, where={"v": (0.5, 0.51)})
    assert got.attributes["v"].tolist() == [float(below), 0.5]
    assert zv.count(store, where={"v": (0.51, None)}) == 1


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(F32, min_size=1, max_size=30),
    low=ENDS,
    high=ENDS,
    cells=st.data(),
)
def test_float32_ranges_match_float64_brute_force(
    values: list[float], low: float | None, high: float | None, cells: st.DataObject
) -> None:
    v = np.asarray(values, dtype=np.float32)
    pos = np.asarray(
        cells.draw(
            st.lists(
                st.tuples(st.integers(0, 15), st.integers(0, 15)), min_size=len(v), max_size=len(v)
            )
        ),
        dtype=np.float64,
    )
    store = MemoryStore()
    zv.write_points(store, pos, chunk_shape=(4, 4), attributes={"v": v})
    wide = v.astype(np.float64)
    want = np.ones(len(v), dtype=bool)
    if low is not None:
        want &= wide >= low
    if high is not None:
        want &= wide < high
    got = zv.read_points(store, where={"v": (low, high)})
    assert sorted(got.attributes["v"].tolist()) == sorted(v[want].tolist())
    assert zv.count(store, where={"v": (low, high)}) == int(want.sum())
