"""Hypothesis strategies and brute-force oracles for the query tests (plain numpy only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

AnyArray = npt.NDArray[Any]

CHUNK = 4.0
EXTENT = 16.0


@dataclass(frozen=True)
class Cloud:
    """Generated points with a float attribute (NaN allowed) and a small integer label."""

    positions: AnyArray
    value: AnyArray
    label: AnyArray
    objects: AnyArray | None


@st.composite
def clouds(draw: st.DrawFn, *, ndim: int = 2, with_objects: bool = False) -> Cloud:
    """Points on a coarse grid (exact chunk-boundary values included)."""
    n = draw(st.integers(1, 40))
    cells = draw(
        st.lists(
            st.tuples(*[st.integers(0, int(EXTENT * 2) - 1) for _ in range(ndim)]),
            min_size=n,
            max_size=n,
        )
    )
    pos = np.asarray(cells, dtype=np.float64) / 2.0  # steps of 0.5: hits chunk boundaries
    value = np.asarray(
        draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, np.nan]), min_size=n, max_size=n))
    )
    label = np.asarray(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int64)
    objects = None
    if with_objects:
        objects = np.asarray(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    return Cloud(pos, value, label, objects)


def ranges() -> st.SearchStrategy[tuple[float | None, float | None]]:
    """Half-open ranges on the value attribute, open ends included."""
    bound = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 0.6, 1.0]))
    return st.tuples(bound, bound)


def label_sets() -> st.SearchStrategy[set[int]]:
    """Sets of labels (empty allowed)."""
    return st.sets(st.integers(0, 5), max_size=3)


@st.composite
def boxes(draw: st.DrawFn, ndim: int = 2) -> tuple[list[float], list[float]] | None:
    """A query box on the half-unit grid, or None."""
    if draw(st.booleans()):
        return None
    lo = [draw(st.integers(0, 30)) / 2.0 for _ in range(ndim)]
    hi = [a + draw(st.integers(0, 20)) / 2.0 for a in lo]
    return lo, hi


def range_mask(values: AnyArray, rng: tuple[float | None, float | None]) -> AnyArray:
    """Brute force: ``low <= v < high``; NaN matches nothing."""
    keep = ~np.isnan(values)
    with np.errstate(invalid="ignore"):
        if rng[0] is not None:
            keep &= values >= rng[0]
        if rng[1] is not None:
            keep &= values < rng[1]
    return keep


def box_mask(pos: AnyArray, box: tuple[list[float], list[float]] | None) -> AnyArray:
    """Brute force: ``min <= p < max`` on every axis."""
    if box is None:
        return np.ones(len(pos), dtype=bool)
    return np.all((pos >= np.asarray(box[0])) & (pos < np.asarray(box[1])), axis=1)


def sphere_mask(pos: AnyArray, center: AnyArray, radius: float) -> AnyArray:
    """Brute force: closed ball in float64."""
    d = pos.astype(np.float64) - np.asarray(center, dtype=np.float64)
    return (d * d).sum(axis=1) <= radius * radius


def rows_multiset(*cols: AnyArray) -> list[tuple[Any, ...]]:
    """Sorted rows built from columns (NaN-safe via repr)."""
    parts = [c.reshape(len(c), int(np.prod(c.shape[1:]))) for c in cols]
    rows = [tuple(repr(float(x)) for p in parts for x in p[i]) for i in range(len(parts[0]))]
    return sorted(rows)
