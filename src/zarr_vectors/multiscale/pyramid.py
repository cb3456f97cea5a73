"""Build coarser resolution levels for every geometry type (FORMAT.md §4, §5, §10).

Level N is derived from level N-1: objects outside the level's kept set are dropped, vertices
merge into metavertices (:mod:`~zarr_vectors.multiscale.cluster`), attributes aggregate, links
are remapped, and the level is written with the same pipeline as level 0.  Ratios are relative
to level 0, integer, component-wise non-decreasing, and the level's bin must divide the chunk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr

from zarr_vectors.core.chunking import ChunkLayout
from zarr_vectors.core.columns import Column
from zarr_vectors.core.multiscale import write_multiscale_metadata
from zarr_vectors.core.parts import read_parts
from zarr_vectors.core.payload.compression import CompressorSpec
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike, list_resolution_levels, open_store
from zarr_vectors.core.stream import ProgressCallback
from zarr_vectors.core.writer import write_level
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.multiscale.cluster import (
    RESERVED_AGGREGATION,
    MergeRule,
    aggregate,
    assign_clusters,
    default_aggregation,
    member_weights,
    remap_links,
)
from zarr_vectors.multiscale.shards import coarse_level_shards
from zarr_vectors.multiscale.sparsity import check_attribute, keep_count, rank_objects
from zarr_vectors.multiscale.staging import begin_staging, drop_staging, swap_levels
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Aggregation, SparsityStrategy
from zarr_vectors.spec.metadata import (
    LevelMetadata,
    RootMetadata,
    check_divides,
    parse_int_tuple,
)
from zarr_vectors.spec.typespec import type_spec

__all__ = [
    "PyramidLevel",
    "PyramidPlan",
    "build_pyramid",
    "clear_levels",
    "coarse_levels",
    "coarsen_level",
    "coarsen_parts",
    "plan_pyramid",
]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PyramidLevel:
    """Summary of one level written by :func:`build_pyramid`."""

    level: int
    """Level number."""
    bin_ratio: tuple[int, ...]
    """Bin size relative to level 0."""
    vertex_count: int
    """Metavertices stored."""
    object_count: int
    """Objects kept."""
    object_sparsity: float
    """Fraction of level-0 objects kept."""


@dataclass(frozen=True, kw_only=True)
class PyramidPlan:
    """The validated options of one pyramid build, shared by the serial and distributed builds.

    Small and picklable: distributed builds send it to every task.
    """

    meta: RootMetadata
    """Root metadata of the store."""
    ratios: tuple[tuple[int, ...], ...]
    """Bin ratio of each new level (levels 1..n), relative to level 0."""
    sparsities: tuple[float, ...]
    """Object sparsity of each new level."""
    strategy: SparsityStrategy
    """How objects are ranked for sparsity."""
    sparsity_attribute: str | None
    """Object attribute ranking objects (attribute strategy)."""
    seed: int
    """Seed of the random strategy."""
    aggregation: Mapping[str, Aggregation]
    """Explicit aggregation per vertex attribute (others: the default)."""
    compressor: CompressorSpec
    """Compressor of every array of the new levels."""
    level_shards: tuple[tuple[int, ...] | None, ...]
    """Chunks per shard of each new level's payload arrays, or None for unsharded
    (:func:`~zarr_vectors.multiscale.shards.coarse_level_shards`)."""
    n_objects: int | None
    """Level-0 objects, or None when vertices have no objects."""

    @property
    def has_objects(self) -> bool:
        """Whether vertices belong to objects."""
        return self.n_objects is not None

    @property
    def rule(self) -> MergeRule:
        """Which vertices of a bin merge."""
        return type_spec(self.meta.geometry_type).merge_rule

    @property
    def sequential(self) -> bool:
        """Whether consecutive vertices of an object are connected (paths)."""
        return type_spec(self.meta.geometry_type).sequential

    @property
    def directed(self) -> bool:
        """Whether links are directed (skeletons, directed graphs)."""
        default = type_spec(self.meta.geometry_type).directed_default
        return bool(self.meta.type_metadata.get("is_directed", default))

    def layout(self, level: int) -> ChunkLayout:
        """Chunks and bins of level ``level`` (1..n)."""
        meta = self.meta
        assert meta.chunk_grid is not None
        return ChunkLayout(
            meta.chunk_shape, meta.bin_shape_for(self.ratios[level - 1]), meta.chunk_grid
        )

    def shards(self, level: int) -> tuple[int, ...] | None:
        """Chunks per shard of level ``level``'s (1..n) payload arrays, or None."""
        return self.level_shards[level - 1]

    @property
    def block_shards(self) -> tuple[int, ...] | None:
        """Per axis, a multiple of every level's shard shape (None: no level is sharded).

        A task writing whole blocks of chunks that are multiples of it owns whole shards.
        """
        used = [s for s in self.level_shards if s is not None]
        if not used:
            return None
        return tuple(math.lcm(*axis) for axis in zip(*used, strict=True))

    def keep_counts(self) -> list[int]:
        """Objects kept at each new level (0 without objects)."""
        return [keep_count(s, self.n_objects or 0) for s in self.sparsities]

    @property
    def needs_ranking(self) -> bool:
        """Whether some level drops objects (so objects must be ranked)."""
        return any(c < (self.n_objects or 0) for c in self.keep_counts())

    def level_template(self, level: int, used: Mapping[str, str]) -> LevelMetadata:
        """Metadata of level ``level`` before its counts are known.

        ``used`` is the aggregation applied per attribute (from :func:`coarsen_parts`).
        """
        return LevelMetadata(
            level=level,
            bin_ratio=self.ratios[level - 1],
            bin_shape=self.layout(level).bin_shape,
            object_sparsity=self.sparsities[level - 1],
            sparsity_strategy=self.strategy if self.has_objects else None,
            coarsening={
                "method": "bin_mean",
                "merge": self.rule.value,
                "source_level": level - 1,
                "aggregation": dict(used),
            },
        )

    def summary(self, done: LevelMetadata) -> PyramidLevel:
        """Summary of a written level."""
        i = done.level
        return PyramidLevel(
            i, self.ratios[i - 1], done.vertex_count, done.object_count, self.sparsities[i - 1]
        )


def _parse_ratios(bin_ratios: Sequence[Sequence[int]], meta: RootMetadata) -> list[tuple[int, ...]]:
    d = meta.spatial_dims
    out: list[tuple[int, ...]] = []
    prev = (1,) * d
    for i, r in enumerate(bin_ratios):
        ratio = parse_int_tuple(r, f"bin_ratios[{i}]", length=d, minimum=1)
        if any(a < b for a, b in zip(ratio, prev, strict=True)):
            raise InvalidInputError(
                f"bin_ratios[{i}] = {list(ratio)} decreases from {list(prev)}: ratios must be "
                "component-wise non-decreasing"
            )
        _check_ratio_fits(meta, ratio, i)
        out.append(ratio)
        prev = ratio
    return out


def _check_ratio_fits(meta: RootMetadata, ratio: tuple[int, ...], i: int) -> None:
    """Raise unless ``base_bin_shape x ratio`` divides the chunk shape, saying how to fix it."""
    bins = meta.bin_shape_for(ratio)
    too_big = [a for a, (b, c) in enumerate(zip(bins, meta.chunk_shape, strict=True)) if b > c]
    if too_big:  # ratios are >= 1 (parsed above)
        base = [float(b) for b in meta.base_bin_shape]
        finest = [c / r for c, r in zip(meta.chunk_shape, ratio, strict=True)]
        raise InvalidInputError(
            f"bin_ratios[{i}] = {list(ratio)} gives bins of {[float(b) for b in bins]}, larger "
            f"than the chunk shape {[float(c) for c in meta.chunk_shape]} on axis {too_big[0]}: "
            f"coarser levels need a base bin_shape finer than the chunk shape (this store's is "
            f"{base}).  Write the store with a smaller bin_shape that divides the chunk shape, "
            f"e.g. bin_shape={tuple(finest)} or finer for this ratio"
        )
    check_divides(meta.chunk_shape, bins, f"bin_ratios[{i}] bin shape")


def _parse_sparsity(value: float | Sequence[float] | None, n: int) -> list[float]:
    vals = (
        [1.0] * n
        if value is None
        else ([float(value)] * n if isinstance(value, int | float) else [float(v) for v in value])
    )
    if len(vals) != n:
        raise InvalidInputError(f"object_sparsity has {len(vals)} values for {n} levels")
    prev = 1.0
    for i, v in enumerate(vals):
        if not 0.0 < v <= prev:
            raise InvalidInputError(
                f"object_sparsity[{i}] = {v}: must be in (0, 1] and non-increasing with level"
            )
        prev = v
    return vals


def _keep_objects(
    parts: GeometryParts, keep: npt.NDArray[np.bool_]
) -> tuple[GeometryParts, IntArray | None]:
    """Drop vertices (and links touching them) of objects not ``keep``; return kept rows."""
    obj = parts.vertex_objects
    assert obj is not None
    vkeep = keep[obj]
    if vkeep.all():
        return parts, None
    new_index = np.cumsum(vkeep) - 1
    links, link_attrs = parts.links, dict(parts.link_attributes)
    if links is not None and len(links):
        ok = np.all(vkeep[links], axis=1)
        links = new_index[links[ok]]
        link_attrs = {k: c.take(np.flatnonzero(ok)) for k, c in link_attrs.items()}
    idx = np.flatnonzero(vkeep)
    return replace(
        parts,
        positions=parts.positions[idx],
        vertex_object=obj[idx],
        object_offsets=None,
        vertex_attributes={k: c.take(idx) for k, c in parts.vertex_attributes.items()},
        links=links,
        link_attributes=link_attrs,
    ), idx


def coarsen_parts(
    parts: GeometryParts,
    layout: ChunkLayout,
    rule: MergeRule,
    *,
    directed: bool = False,
    aggregation: Mapping[str, Aggregation] | None = None,
    weights: npt.NDArray[np.float64] | None = None,
) -> tuple[GeometryParts, dict[str, str], npt.NDArray[np.float64]]:
    """Merge vertices into metavertices on ``layout``'s bins.

    Returns the coarse parts, the aggregation used per attribute, and the number of
    original vertices behind each metavertex (pass it back in when coarsening again).
    """
    cluster, n = assign_clusters(parts.positions, parts.vertex_objects, layout, rule, parts.links)
    pos = aggregate(parts.positions, cluster, n, Aggregation.MEAN, weights)
    used: dict[str, str] = {}
    attrs: dict[str, Column] = {}
    for name, col in parts.vertex_attributes.items():
        how = (aggregation or {}).get(name, default_aggregation(col, name))
        used[name] = how.value
        attrs[name] = Column(aggregate(col.values, cluster, n, how, weights), col.categories)
    obj = parts.vertex_objects
    if obj is not None:
        first = np.full(n, len(cluster), dtype=np.int64)
        np.minimum.at(first, cluster, np.arange(len(cluster), dtype=np.int64))
        obj = obj[first]
    links, link_attrs = parts.links, dict(parts.link_attributes)
    if links is not None:
        links, link_attrs = remap_links(
            links, cluster, directed=directed, attributes=parts.link_attributes
        )
    coarse = replace(
        parts,
        positions=pos.astype(parts.positions.dtype),
        vertex_object=obj,
        object_offsets=None,
        vertex_attributes=attrs,
        links=links,
        link_attributes=link_attrs,
    )
    return coarse, used, member_weights(cluster, n, weights)


def build_pyramid(
    store: StoreLike,
    bin_ratios: Sequence[Sequence[int]],
    *,
    object_sparsity: float | Sequence[float] | None = None,
    sparsity_strategy: SparsityStrategy | str = "spatial_coverage",
    sparsity_attribute: str | None = None,
    aggregation: Mapping[str, Aggregation | str] | None = None,
    seed: int = 0,
    overwrite: bool = False,
    compressor: CompressorSpec = "source",
    storage_options: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
) -> list[PyramidLevel]:
    """Add coarser levels 1..n to a store, one per entry of ``bin_ratios``.

    :func:`zarr_vectors.distributed.build_pyramid_distributed` builds the same levels, byte
    for byte, on a dask.distributed cluster.

    Parameters
    ----------
    store
        An existing store (level 0 written by a ``write_*`` function).
    bin_ratios
        Bin size of each new level relative to level 0, e.g. ``[(2, 2, 2), (4, 4, 4)]``;
        integer, component-wise non-decreasing; ``base_bin_shape × ratio`` must divide
        ``chunk_shape``.
    object_sparsity
        Fraction of level-0 objects kept at each level: one number for all levels or one per
        level (non-increasing).  Default: keep every object.
    sparsity_strategy
        ``"spatial_coverage"`` (spread kept objects over space), ``"length"`` (longest first),
        ``"attribute"`` (highest ``sparsity_attribute`` first) or ``"random"``.
    sparsity_attribute
        Object attribute ranking objects for ``sparsity_strategy="attribute"``.
    aggregation
        Per vertex attribute: ``"mean"``, ``"mode"``, ``"min"``, ``"max"``, ``"first"`` or
        ``"sum"`` (default mean for floats, mode otherwise).
    seed
        Seed of the random strategy.
    overwrite
        Replace existing levels > 0; otherwise existing coarse levels raise.
    compressor
        As for the writers; by default (``"source"``) each array of the new levels is
        compressed as the level-0 array of the same path (a store written with ``"lz4"`` or
        ``"none"`` keeps it).  Level 0's shards carry over; in a Zarr v3 store whose
        level 0 is not sharded, each new level groups ``bin_ratio`` chunks per shard
        (:func:`~zarr_vectors.multiscale.shards.coarse_level_shards`), so a sparse coarse
        level does not cost one file per chunk.
    storage_options
        As for the writers.
    progress
        Called as ``progress("pyramid", levels done, levels)`` after each level.

    Returns
    -------
    list of PyramidLevel
        What each new level holds.

    Raises
    ------
    InvalidInputError
        Bad ratios, sparsities, strategy options or aggregation names.
    StoreExistsError
        Levels > 0 exist and ``overwrite`` is False.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> pts = np.random.default_rng(0).uniform(0, 100, (1000, 3))
    >>> _ = zv.write_points(store, pts, chunk_shape=(50, 50, 50), bin_shape=(5, 5, 5))
    >>> [lvl.vertex_count < 1000 for lvl in zv.build_pyramid(store, [(2, 2, 2), (10, 10, 10)])]
    [True, True]
    """
    root = open_store(store, mode="r+", storage_options=storage_options)
    reader = LevelReader(root, 0)
    plan = plan_pyramid(
        reader,
        bin_ratios,
        object_sparsity=object_sparsity,
        sparsity_strategy=sparsity_strategy,
        sparsity_attribute=sparsity_attribute,
        aggregation=aggregation,
        seed=seed,
        compressor=compressor,
    )
    old_levels = coarse_levels(root, overwrite=overwrite)
    parts = read_parts(reader, sequential=plan.sequential)
    ranking = (
        rank_objects(
            parts, plan.strategy, reader.layout, attribute=plan.sparsity_attribute, seed=seed
        )
        if plan.needs_ranking
        else np.zeros(0, np.int64)
    )
    stage = begin_staging(root)  # old levels stay until every new one is complete
    try:
        out = _build_levels(stage, parts, ranking, plan, progress)
    except BaseException:
        drop_staging(root, stage)
        raise
    swap_levels(root, stage, list(range(1, len(out) + 1)), old_levels)
    write_multiscale_metadata(root)
    return out


def _build_levels(
    stage: zarr.Group,
    parts: GeometryParts,
    ranking: npt.NDArray[np.int64],
    plan: PyramidPlan,
    progress: ProgressCallback | None,
) -> list[PyramidLevel]:
    """Write every coarse level of ``plan`` into the staging group ``stage``."""
    out: list[PyramidLevel] = []
    current = parts
    weights: npt.NDArray[np.float64] | None = None  # each level-0 vertex weighs 1
    for i, count in enumerate(plan.keep_counts(), start=1):
        keep = None
        if plan.needs_ranking:
            keep = np.zeros(parts.n_objects, dtype=np.bool_)
            keep[ranking[:count]] = True
        current, weights, used = coarsen_level(current, weights, plan, i, keep)
        done = write_level(
            stage.create_group(L.level_path(i)),
            current,
            plan.layout(i),
            plan.level_template(i, used),
            compressor=plan.compressor,
            shards=plan.shards(i),
        )
        out.append(plan.summary(done))
        if progress is not None:
            progress("pyramid", i, len(plan.ratios))
    return out


def plan_pyramid(
    reader: LevelReader,
    bin_ratios: Sequence[Sequence[int]],
    *,
    object_sparsity: float | Sequence[float] | None = None,
    sparsity_strategy: SparsityStrategy | str = "spatial_coverage",
    sparsity_attribute: str | None = None,
    aggregation: Mapping[str, Aggregation | str] | None = None,
    seed: int = 0,
    compressor: CompressorSpec = "source",
) -> PyramidPlan:
    """Validate the options of a pyramid build against level 0 (``reader``); read no vertex.

    Raises
    ------
    InvalidInputError
        Bad ratios, sparsities, strategy options or aggregation names.
    """
    meta = reader.meta
    ratios = _parse_ratios(bin_ratios, meta)
    strategy = SparsityStrategy.parse(sparsity_strategy, field="sparsity_strategy")
    aggs = {
        k: Aggregation.parse(v, field=f"aggregation[{k!r}]") for k, v in (aggregation or {}).items()
    }
    unknown = set(aggs) - set(reader.names(L.ATTRIBUTES))
    if unknown:
        raise InvalidInputError(f"aggregation names unknown attributes {sorted(unknown)}")
    fixed = sorted(set(aggs) & set(RESERVED_AGGREGATION))
    if fixed:
        raise InvalidInputError(
            f"aggregation of reserved attributes {fixed} is fixed "
            f"({', '.join(RESERVED_AGGREGATION[k].value for k in fixed)}); leave them out"
        )
    has_objects = reader.has(L.OBJECT_OFFSETS)
    if not has_objects and object_sparsity is not None:
        raise InvalidInputError("object_sparsity needs a store with objects")
    if has_objects and strategy is SparsityStrategy.ATTRIBUTE:
        check_attribute(sparsity_attribute, reader.names(L.OBJECT_ATTRIBUTES))
    return PyramidPlan(
        meta=meta,
        ratios=tuple(ratios),
        sparsities=tuple(_parse_sparsity(object_sparsity, len(ratios))),
        strategy=strategy,
        sparsity_attribute=sparsity_attribute,
        seed=seed,
        aggregation=aggs,
        compressor=reader.compressor_for(compressor),
        level_shards=coarse_level_shards(
            ratios,
            meta.chunk_grid.origin if meta.chunk_grid is not None else (0,) * meta.spatial_dims,
            reader.layout.grid.shape,
            level0_shards=reader.aligned_shards(),
            zarr_format=reader.group.metadata.zarr_format,
        ),
        n_objects=reader.n_objects if has_objects else None,
    )


def coarse_levels(root: zarr.Group, *, overwrite: bool) -> list[int]:
    """Return the levels > 0 of ``root``, which a rebuild replaces (refused unless ``overwrite``).

    Raises
    ------
    StoreExistsError
        Levels > 0 exist and ``overwrite`` is False.
    """
    existing = [lv for lv in list_resolution_levels(root) if lv > 0]
    if existing and not overwrite:
        raise StoreExistsError(f"levels {existing} exist; pass overwrite=True to rebuild them")
    return existing


def clear_levels(root: zarr.Group, *, overwrite: bool) -> None:
    """Delete the levels > 0 of ``root`` (refused unless ``overwrite``).

    Raises
    ------
    StoreExistsError
        Levels > 0 exist and ``overwrite`` is False.
    """
    existing = [lv for lv in list_resolution_levels(root) if lv > 0]
    if existing and not overwrite:
        raise StoreExistsError(f"levels {existing} exist; pass overwrite=True to rebuild them")
    for lv in existing:
        del root[L.level_path(lv)]


def coarsen_level(
    parts: GeometryParts,
    weights: npt.NDArray[np.float64] | None,
    plan: PyramidPlan,
    level: int,
    keep: npt.NDArray[np.bool_] | None,
) -> tuple[GeometryParts, npt.NDArray[np.float64], dict[str, str]]:
    """Derive level ``level`` from the level before it: drop objects, merge vertices.

    Parameters
    ----------
    parts
        The previous level, objects in traversal order (dense ids ``0..parts.n_objects-1``).
    weights
        (N,) level-0 vertices behind each vertex of ``parts``, or None when each stands
        for one (level 0).
    plan
        The build.
    level
        Number of the level to derive (1 for the first coarse level).
    keep
        (parts.n_objects,) which objects the level keeps, or None to keep all.

    Returns
    -------
    tuple
        The coarse parts, their weights and the aggregation used per attribute.

    Notes
    -----
    Metavertices never span objects, so coarsening a contiguous range of whole objects gives
    exactly the corresponding metavertices of coarsening all objects.
    """
    if parts.has_objects and keep is not None:
        parts, kept = _keep_objects(parts, keep)
        weights = weights if kept is None or weights is None else weights[kept]
    coarse, used, weights = coarsen_parts(
        parts,
        plan.layout(level),
        plan.rule,
        directed=plan.directed,
        aggregation=plan.aggregation,
        weights=weights,
    )
    return coarse, weights, used
