"""Vertex clustering and attribute aggregation for coarse levels (FORMAT.md §10).

Vertices merge into a metavertex at their mean position.  Which vertices merge depends on the
geometry: all vertices of one coarse bin (point clouds; per object for graphs and meshes),
consecutive runs of one bin along a path (paths keep order and connectivity), or connected
same-bin pieces of a tree (skeletons stay trees).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.columns import Column
from zarr_vectors.core.ragged import run_starts, sort_order
from zarr_vectors.spec.conventions import Aggregation, MergeRule
from zarr_vectors.spec.layout import INPUT_INDEX

__all__ = [
    "RESERVED_AGGREGATION",
    "MergeRule",
    "aggregate",
    "assign_clusters",
    "default_aggregation",
    "member_weights",
    "remap_links",
]

RESERVED_AGGREGATION: Mapping[str, Aggregation] = {INPUT_INDEX: Aggregation.MIN}
"""Fixed aggregation of reserved attributes, not overridable: a metavertex (and a coarse
link) keeps the earliest input position of what it merges (docs/spec.md §8.8)."""

IntArray = npt.NDArray[np.int64]

_DENSE_KEYS_PER_VERTEX = 4
"""Largest key range per vertex grouped through a first-occurrence table (8 bytes a key)."""
_DENSE_KEYS_MIN = 1 << 16
"""Key range always grouped through the table (small inputs)."""


def _bin_key(pos: npt.NDArray[np.floating], layout: ChunkLayout) -> tuple[IntArray, int]:
    """Return each position's bin as one integer ``flat chunk x bins + bin``, and the key range.

    :meth:`ChunkLayout.locate` computes both parts in one pass, with the spec's arithmetic.
    """
    flat, bins = layout.locate(pos)
    nbins = int(np.prod(layout.bins_per_chunk))
    key = flat.astype(np.int64)
    key *= nbins
    key += bins
    return key, layout.n_chunks * nbins


def assign_clusters(
    pos: npt.NDArray[np.floating],
    vertex_object: npt.NDArray[np.integer[Any]] | None,
    layout: ChunkLayout,
    rule: MergeRule,
    links: IntArray | None = None,
) -> tuple[IntArray, int]:
    """Return the cluster of every vertex and the number of clusters.

    Clusters are numbered by their first vertex, so vertex order (traversal order within
    objects) carries over to metavertices.
    """
    n = len(pos)
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    key, n_keys = _bin_key(pos, layout)
    if rule is MergeRule.RUN:
        obj = np.zeros(n, dtype=np.int64) if vertex_object is None else vertex_object
        starts = run_starts(obj, key)
        label = np.zeros(n, dtype=np.int64)
        label[starts] = 1
        return np.cumsum(label) - 1, len(starts)
    group, count = _group(key, n_keys, vertex_object)
    if rule is MergeRule.TREE and links is not None and len(links):
        return _renumber_by_first(_split_by_connectivity(group, links))
    return group, count


def _group(
    key: IntArray, n_keys: int, vertex_object: npt.NDArray[np.integer[Any]] | None
) -> tuple[IntArray, int]:
    """Label vertices sharing (object, bin key), labels numbered by first vertex.

    Keys are dense integers (grid chunks x bins, times objects): while their range is a
    few times the vertex count, a first-occurrence table groups them in linear time;
    beyond it, a sort does.
    """
    n = len(key)
    if vertex_object is not None:
        n_obj = int(vertex_object.max()) + 1
        if n_obj * n_keys > max(_DENSE_KEYS_PER_VERTEX * n, _DENSE_KEYS_MIN):
            order = sort_order([vertex_object, key], [n_obj, n_keys])
            flag = np.zeros(n, dtype=np.int64)
            flag[run_starts(vertex_object[order], key[order])] = 1
            group = np.empty(n, dtype=np.int64)
            group[order] = np.cumsum(flag) - 1
            return _renumber_by_first(group)
        key = vertex_object.astype(np.int64) * n_keys + key
        n_keys *= n_obj
    elif n_keys > max(_DENSE_KEYS_PER_VERTEX * n, _DENSE_KEYS_MIN):
        return _renumber_by_first(key)
    first = np.full(n_keys, n, dtype=np.int64)
    np.minimum.at(first, key, np.arange(n, dtype=np.int64))
    used = np.flatnonzero(first < n)
    by_first = used[np.argsort(first[used], kind="stable")]
    label = np.empty(n_keys, dtype=np.int64)  # read only at used keys
    label[by_first] = np.arange(len(by_first), dtype=np.int64)
    return label[key], len(by_first)


def _split_by_connectivity(group: IntArray, links: IntArray) -> IntArray:
    """Label connected pieces of each group using only edges inside the group."""
    inside = links[group[links[:, 0]] == group[links[:, 1]]]
    label = np.arange(len(group), dtype=np.int64)
    if len(inside) == 0:
        return label
    a, b = inside[:, 0], inside[:, 1]
    while True:
        m = np.minimum(label[a], label[b])
        before = label.copy()
        np.minimum.at(label, a, m)
        np.minimum.at(label, b, m)
        label = label[label]  # pointer jumping
        if np.array_equal(label, before):
            return label


def _renumber_by_first(group: IntArray) -> tuple[IntArray, int]:
    uniq, first = np.unique(group, return_index=True)
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(uniq), dtype=np.int64)
    return rank[np.searchsorted(uniq, group)], len(uniq)


def default_aggregation(col: Column, name: str | None = None) -> Aggregation:
    """Return the aggregation of an attribute that the caller does not choose.

    :data:`RESERVED_AGGREGATION` for a reserved ``name``; else mean for floats, mode for
    integers, booleans and categories.
    """
    if name is not None and name in RESERVED_AGGREGATION:
        return RESERVED_AGGREGATION[name]
    if col.categories is None and col.values.dtype.kind == "f":
        return Aggregation.MEAN
    return Aggregation.MODE


def aggregate(
    values: npt.NDArray[np.generic],
    cluster: IntArray,
    n: int,
    how: Aggregation,
    weights: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.generic]:
    """Aggregate rows of ``values`` (N, ...) into ``n`` clusters.

    ``weights`` count the level-0 vertices behind each row, so a mean (or mode) over
    metavertices equals the mean (mode) over the original vertices they summarise.
    """
    flat = values.reshape(len(values), int(np.prod(values.shape[1:])))  # also when empty
    if how is Aggregation.MODE:
        out = _mode(flat, cluster, n, np.ones(len(flat)) if weights is None else weights)
    elif how is Aggregation.FIRST:
        out = flat[_first_member(cluster, n)]
    elif how in (Aggregation.MIN, Aggregation.MAX):
        ufunc = np.minimum if how is Aggregation.MIN else np.maximum
        out = flat[_first_member(cluster, n)].copy()
        ufunc.at(out, cluster, flat)
    else:
        w = None if how is Aggregation.SUM else weights
        sums: npt.NDArray[np.float64] = np.stack(
            [
                np.bincount(cluster, weights=_weighted(flat[:, k], w), minlength=n)
                for k in range(flat.shape[1])
            ],
            axis=1,
        )
        if how is not Aggregation.SUM:
            sums = sums / np.maximum(member_weights(cluster, n, w), 1e-300)[:, None]
        out = sums.astype(values.dtype if values.dtype.kind == "f" else np.float64)
    return out.reshape((n, *values.shape[1:]))


def _weighted(
    col: npt.NDArray[np.generic], weights: npt.NDArray[np.float64] | None
) -> npt.NDArray[np.generic]:
    """Return ``col x weights`` as bincount weights (None: unit weights).

    Floats stay as they are under unit weights: :func:`numpy.bincount` sums in float64 anyway.
    """
    if weights is None:
        return col if col.dtype.kind == "f" else col.astype(np.float64)
    return col.astype(np.float64) * weights


def member_weights(
    cluster: IntArray, n: int, weights: npt.NDArray[np.float64] | None
) -> npt.NDArray[np.float64]:
    """Total weight of each of ``n`` clusters (None: every vertex weighs 1)."""
    if weights is None:
        return np.bincount(cluster, minlength=n).astype(np.float64)
    return np.asarray(np.bincount(cluster, weights=weights, minlength=n), np.float64)


def _first_member(cluster: IntArray, n: int) -> IntArray:
    first = np.full(n, len(cluster), dtype=np.int64)
    np.minimum.at(first, cluster, np.arange(len(cluster), dtype=np.int64))
    return first


def _mode(
    flat: npt.NDArray[np.generic], cluster: IntArray, n: int, weights: npt.NDArray[np.float64]
) -> npt.NDArray[np.generic]:
    """Most frequent (by weight) value per cluster and column (ties: smallest value)."""
    out = np.empty((n, flat.shape[1]), dtype=flat.dtype)
    for k in range(flat.shape[1]):  # columns, not rows
        col = flat[:, k]
        order = np.lexsort((col, cluster))
        c_sorted, v_sorted = cluster[order], col[order]
        starts = run_starts(c_sorted, v_sorted)
        counts = np.add.reduceat(weights[order], starts) if len(starts) else starts
        run_cluster = c_sorted[starts]
        # per cluster keep the run with the largest count (stable: first = smallest value)
        pick = np.lexsort((-counts, run_cluster))
        best = pick[run_starts(run_cluster[pick])]
        out[run_cluster[best], k] = v_sorted[starts[best]]
    return out


def remap_links(
    links: IntArray,
    cluster: IntArray,
    *,
    directed: bool,
    attributes: Mapping[str, Column],
) -> tuple[IntArray, dict[str, Column]]:
    """Map links to clusters; drop degenerate links and duplicates (first one kept).

    A kept link takes the attributes of the first link it stands for, except reserved ones
    (:data:`RESERVED_AGGREGATION`), aggregated over every link it stands for.
    """
    if len(links) == 0:
        return links, dict(attributes)
    ends = cluster[links]
    srt = np.sort(ends, axis=1)
    keep = np.all(srt[:, 1:] != srt[:, :-1], axis=1)
    key = ends if directed else srt
    idx = np.flatnonzero(keep)
    _, first, inverse = np.unique(key[idx], axis=0, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")  # kept links in order of their first link
    rank = np.empty(len(first), dtype=np.int64)
    rank[by_first] = np.arange(len(first), dtype=np.int64)
    kept = idx[first[by_first]]
    out = ends[kept] if directed or ends.shape[1] != 2 else srt[kept]
    attrs = {}
    for name, col in attributes.items():
        if name in RESERVED_AGGREGATION:
            values = col.values[idx]
            how = RESERVED_AGGREGATION[name]
            merged = aggregate(values, rank[inverse.reshape(-1)], len(first), how)
            attrs[name] = Column(merged, col.categories)
        else:
            attrs[name] = col.take(kept)
    return out, attrs
