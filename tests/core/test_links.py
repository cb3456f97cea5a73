"""Stored links decoded by one engine (``core.links.keys``), checked against the raw rows.

``chunk_links`` (whole-level reads for pyramids and rechunking, mesh queries) and the graph and
skeleton readers share ``KeySpace.cross_keys``: a valid store decodes to the links a plain loop
over the raw rows gives, and a damaged record is named by chunk, record and endpoint.
"""

from __future__ import annotations

import gc
import re
import weakref
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliability._damage import READERS, Damage, fresh
from zarr_vectors.core.columns import Column
from zarr_vectors.core.links.keys import chunk_links, sorted_by_key
from zarr_vectors.core.links.read import Tasks, checked_link_rows
from zarr_vectors.core.parts import read_parts
from zarr_vectors.core.reader import LevelReader, RowBlock
from zarr_vectors.errors import CorruptPayloadError

LINKED = ("graph", "skeleton", "mesh")
D = 3


def _brute_links(d: Damage, reader: LevelReader, flats: list[int]) -> np.ndarray[Any, Any]:
    """Links of chunks ``flats`` as rows of their concatenation, by a loop over raw records."""
    counts = np.asarray(d.array("0/vertex_counts")[...]).ravel()
    base = {f: int(sum(counts[g] for g in flats[: flats.index(f)])) for f in flats}
    origin, grid = np.asarray(reader.layout.grid.origin), tuple(reader.layout.grid.shape)
    local, cross = [], []
    for f in flats:
        rows = d.rows("0/links", f) if counts[f] else []
        local.extend([base[f] + int(v) for v in row] for row in rows)
    for f in flats:
        for rec in d.rows("0/cross_chunk_links", f) if counts[f] else []:
            ends = []
            for j in range(len(rec) // (D + 1)):
                coords = rec[j * (D + 1) : j * (D + 1) + D] - origin
                g = int(np.ravel_multi_index(tuple(int(c) for c in coords), grid))
                ends.append(base[g] + int(rec[j * (D + 1) + D]) if g in base else -1)
            cross.append(ends)
    k = 3 if reader.meta.geometry_type == "mesh" else 2
    return np.array(local + cross, dtype=np.int64).reshape(-1, k)


@pytest.mark.parametrize("kind", LINKED)
def test_chunk_links_match_the_raw_records(kind: str) -> None:
    d = fresh(kind)
    reader = LevelReader(d.root(), 0)
    every = [int(f) for f in reader.chunks()]
    for flats in (every, every[::2], every[1:2]):
        got = chunk_links(reader, np.asarray(flats, dtype=np.int64)).ends
        np.testing.assert_array_equal(got, _brute_links(d, reader, flats))
    parts = read_parts(reader, sequential=False)
    assert parts.links is not None
    assert len(parts.links) == len(_brute_links(d, reader, every))


def _cross_chunk(d: Damage) -> int:
    for flat in d.occupied():
        if len(d.rows("0/cross_chunk_links", flat)):
            return flat
    raise AssertionError("no cross-chunk links")


@pytest.mark.parametrize("kind", LINKED)
@pytest.mark.parametrize(
    ("column", "value", "why"),
    [(2 * D + 1, 10**6, "a row outside its chunk"), (D + 1, 10**6, "a chunk outside the grid")],
)
def test_a_damaged_cross_record_is_named(kind: str, column: int, value: int, why: str) -> None:
    d = fresh(kind)
    flat = _cross_chunk(d)
    rows = d.rows("0/cross_chunk_links", flat)
    rows[0, column] = value
    d.set_rows("0/cross_chunk_links", flat, rows)
    reader = LevelReader(d.root(), 0)
    chunk = reader.layout.coords_of_flat(np.array([flat]))[0].tolist()
    pattern = re.escape(f"cross_chunk_links chunk {chunk}: record 0 endpoint 1 names ")
    pattern += why.replace("the grid", "the chunk grid")
    with pytest.raises(CorruptPayloadError, match=pattern):
        read_parts(reader, sequential=False)
    with pytest.raises(CorruptPayloadError, match="cross_chunk_links"):
        READERS[kind](d.store)


class _Owner:
    """Work whose tasks are its own bound methods (a reference cycle through ``Tasks``)."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self.tasks = Tasks(self._first, self._second)

    def _first(self) -> None:
        self.done.append("first")

    def _second(self) -> None:
        self.done.append("second")


def test_tasks_run_once_each_and_free_their_owner_without_gc() -> None:
    """Every task runs once; once all are claimed the owner is freed by reference counting.

    The owner of a whole-object read's link work holds its result arrays: kept alive until a
    garbage collection, they would never return to the result pool.
    """
    owner = _Owner()
    owner.tasks.run()
    owner.tasks.run()  # a late thread: nothing left
    assert owner.done == ["first", "second"]
    ref = weakref.ref(owner)
    gc.disable()
    try:
        del owner
        assert ref() is None
    finally:
        gc.enable()


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(0, 400),
    high=st.sampled_from([3, 1 << 20, 1 << 52, (1 << 62) - 1]),
    runs=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_sorted_by_key_equals_a_stable_sort(n: int, high: int, runs: int, seed: int) -> None:
    """Edge keys in any number of runs sort as a stable argsort does, attributes along."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, high, n, dtype=np.int64)
    cuts = np.sort(rng.integers(0, n + 1, runs - 1))
    key = np.concatenate([np.sort(part) for part in np.split(key, cuts)]) if n else key
    bits = 31
    weight = Column(rng.random(n))
    order = np.argsort(key, kind="stable")
    for with_attrs in (False, True):
        attrs = {"w": weight} if with_attrs else {}
        edges, got = sorted_by_key(key.copy(), bits, attrs)
        want = key[order]
        np.testing.assert_array_equal(edges[:, 0], want >> bits)
        np.testing.assert_array_equal(edges[:, 1], want & ((1 << bits) - 1))
        if with_attrs:
            np.testing.assert_array_equal(got["w"].values, weight.values[order])


@settings(max_examples=80, deadline=None)
@given(
    counts=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    dtype=st.sampled_from(["<i4", "<i8"]),
    seed=st.integers(0, 2**32 - 1),
    bad=st.sampled_from([None, -1, 0, 1, -(2**31)]),
)
def test_link_rows_outside_their_chunk_are_refused(
    counts: list[int], dtype: str, seed: int, bad: int | None
) -> None:
    """Link rows are accepted exactly when each names a row of its own chunk (brute force)."""
    rng = np.random.default_rng(seed)
    n_links = [int(rng.integers(0, 4)) if c else 0 for c in counts]
    rows = [rng.integers(0, max(c, 1), (k, 2)) for c, k in zip(counts, n_links, strict=True)]
    if bad is not None and sum(n_links):
        i = int(rng.choice(np.flatnonzero(n_links)))
        # -1 and -2**31: negative; 0 and 1: the chunk's row count and one past it
        rows[i][int(rng.integers(n_links[i])), int(rng.integers(2))] = (
            bad if bad < 0 else counts[i] + bad
        )
    values = np.concatenate(rows).astype(dtype)
    offsets = np.concatenate([[0], np.cumsum(n_links)]).astype(np.int64)
    sizes = np.asarray(counts, dtype=np.int64)
    inside = all(((r >= 0) & (r < c)).all() for r, c in zip(rows, counts, strict=True))
    for block, chunk_sizes in [(RowBlock(values, offsets), sizes)] + [
        (RowBlock(r.astype(dtype), np.array([0, len(r)])), sizes[i : i + 1])
        for i, r in enumerate(rows)
    ]:
        ok = all(
            ((r >= 0) & (r < c)).all()
            for r, c in zip(np.split(block.values, block.offsets[1:-1]), chunk_sizes, strict=True)
        )
        if ok:
            np.testing.assert_array_equal(checked_link_rows(block, chunk_sizes), block.values)
        else:
            with pytest.raises(CorruptPayloadError, match="outside its chunk"):
                checked_link_rows(block, chunk_sizes)
    assert inside == (bad is None or not sum(n_links))
