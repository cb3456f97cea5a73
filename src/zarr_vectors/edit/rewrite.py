"""The one path every edit takes: read level 0, change its parts, rebuild, commit.

Under the store's edit lock, level 0 is read back into flat parts, the edit turns them into
the new parts, and the new store is built aside with the ordinary write pipeline: the same
root metadata (coordinate system, units, axes, type keys, custom metadata), each array
compressed as the stored array of the same path (codecs read from the store's own array
metadata, never from the defaults), the same sharding.  Coarse levels are rebuilt from the
new level 0 with the stored bin ratios, sparsities, strategy and aggregations, so every level
is up to date at the commit point (``refresh``; see docs/spec.md §13).  Then the new store
replaces the old at one commit point (:mod:`zarr_vectors.edit.commit`).

Cost: an edit rewrites the whole store (read and write every chunk), whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import zarr

from zarr_vectors.core.parts import read_parts
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike, list_resolution_levels, open_store
from zarr_vectors.core.writer import (
    StoreOptions,
    WriteSummary,
    frame_bytes_option,
    write_store,
)
from zarr_vectors.edit.commit import EditTarget, commit, editing, resolve_target
from zarr_vectors.edit.lock import DEFAULT_TIMEOUT
from zarr_vectors.errors import InvalidInputError, UnsupportedEditError
from zarr_vectors.multiscale import build_pyramid
from zarr_vectors.spec.metadata import LevelMetadata, RootMetadata
from zarr_vectors.spec.typespec import type_spec

__all__ = ["Edit", "FastPath", "PyramidPlan", "StoredLevel", "rewrite"]


@dataclass(frozen=True)
class StoredLevel:
    """What an edit sees of the committed store."""

    meta: RootMetadata
    parts: GeometryParts
    reader: LevelReader
    root: zarr.Group
    """The committed store's root group (read-only)."""


Edit = Callable[[StoredLevel], GeometryParts]
"""Turns the stored level 0 into the new level 0 (raises to refuse; nothing is written)."""

FastPath = Callable[[EditTarget, LevelReader, StoreOptions, "PyramidPlan"], WriteSummary | None]
"""An edit of only some chunks of level 0 (coarse levels rebuilt with the plan), or None when
it does not apply."""


@dataclass(frozen=True)
class PyramidPlan:
    """How the coarse levels of a store were built, to build them again."""

    ratios: tuple[tuple[int, ...], ...]
    sparsities: tuple[float, ...]
    strategy: str | None
    aggregation: dict[str, str]

    @classmethod
    def of(cls, levels: list[LevelMetadata]) -> PyramidPlan:
        """Return the plan that built ``levels`` (levels 1..n, in order)."""
        agg: dict[str, str] = {}
        coarsening = levels[0].coarsening if levels else None
        if coarsening and isinstance(coarsening.get("aggregation"), dict):
            agg = {str(k): str(v) for k, v in coarsening["aggregation"].items()}
        strategy = levels[0].sparsity_strategy if levels else None
        return cls(
            tuple(lv.bin_ratio for lv in levels),
            tuple(lv.object_sparsity for lv in levels),
            None if strategy is None else str(getattr(strategy, "value", strategy)),
            agg,
        )

    def build(self, store: StoreLike, parts: GeometryParts, *, overwrite: bool = False) -> None:
        """Build the coarse levels on ``store`` (whose level 0 holds ``parts``).

        ``overwrite`` replaces coarse levels the store holds already.
        """
        if not self.ratios:
            return
        agg = {k: v for k, v in self.aggregation.items() if k in parts.vertex_attributes}
        kw: dict[str, Any] = {"aggregation": agg or None, "overwrite": overwrite}
        if any(s < 1.0 for s in self.sparsities):
            kw["object_sparsity"] = list(self.sparsities)
            if self.strategy is not None:
                kw["sparsity_strategy"] = self.strategy
        build_pyramid(store, [list(r) for r in self.ratios], **kw)


def _options(reader: LevelReader, meta: RootMetadata) -> StoreOptions:
    if meta.draco_compressed:
        raise UnsupportedEditError(
            "Draco-encoded stores cannot be edited (re-encoding would quantise the stored "
            "vertices again); rewrite them from the source data"
        )
    shards = reader.shards()
    notes = meta.notes
    if shards is not None and notes is not None:
        # the writer adds the sharding note again
        notes = "\n".join(n for n in notes.split("\n") if "chunks per shard" not in n) or None
    fmt = reader.group.metadata.zarr_format
    return StoreOptions(
        chunk_shape=tuple(meta.chunk_shape),
        bin_shape=tuple(meta.base_bin_shape),
        zarr_format=fmt,
        compressor=reader.compressor_for("source", fmt),
        shards=shards,
        frame_bytes=frame_bytes_option("auto", meta.geometry_type),
        coordinate_system=meta.coordinate_system,
        axis_units=meta.axis_units,
        axes=meta.multiscales.axes,
        source_description=meta.source_description,
        notes=notes,
        custom_metadata=meta.custom_metadata,
        type_metadata=meta.type_metadata,
    )


def check_type(meta: RootMetadata, expected: str | None) -> None:
    """Refuse a store of another geometry type than the edit's."""
    if expected is None:
        return
    have = meta.geometry_type
    if have != expected and type_spec(have).family_name != expected:
        raise InvalidInputError(
            f"the store holds geometry type {have!r}; cannot add {expected!r} data to it"
        )


def rewrite(
    store: StoreLike,
    edit: Edit,
    *,
    geometry_type: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    fast: FastPath | None = None,
) -> WriteSummary:
    """Apply ``edit`` to the store's level 0 and commit the rebuilt store at one point.

    Raises
    ------
    StoreLockedError
        Another writer kept the store locked for ``timeout`` seconds.
    ReadOnlyStoreError, UnsupportedEditError, InvalidInputError
        Nothing was changed.
    """
    target = resolve_target(store)
    with editing(target, timeout):
        root = open_store(target.source(), mode="r")
        reader = LevelReader(root, 0)
        meta = reader.meta
        check_type(meta, geometry_type)
        opts = _options(reader, meta)
        levels = [LevelReader(root, i).level_meta for i in list_resolution_levels(root) if i > 0]
        plan = PyramidPlan.of(levels)
        if fast is not None:
            done = fast(target, reader, opts, plan)
            if done is not None:
                return done
        old = read_parts(reader, sequential=type_spec(meta.geometry_type).sequential)
        parts = edit(StoredLevel(meta, old, reader, root))
        summary: list[WriteSummary] = []

        def build(staging: StoreLike) -> None:
            summary.append(write_store(staging, meta.geometry_type, parts, replace(opts)))
            plan.build(staging, parts)

        commit(target, build)
        return summary[0]
