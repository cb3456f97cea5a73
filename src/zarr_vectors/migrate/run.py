"""``zv.migrate``: copy a store written by upstream zarr-vectors into a fresh ZVF 1.0 store.

The upstream store is read directly (no upstream import) and written again with this
library's public writers.  Upstream's known defects are detected and listed in the returned
:class:`MigrationReport` (and as a warning), never copied.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from zarr_vectors.core.store import StoreLike, resolve_store
from zarr_vectors.errors import (
    CorruptPayloadError,
    InvalidInputError,
    MetadataValidationError,
    StoreNotFoundError,
    ZarrVectorsError,
    ZVUserWarning,
)
from zarr_vectors.migrate import geometry, read07, read09
from zarr_vectors.migrate.level import LevelData
from zarr_vectors.migrate.tree import Tree
from zarr_vectors.multiscale import build_pyramid
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.upstream import UPSTREAM_KEY, upstream_label, upstream_version
from zarr_vectors.types.graphs import write_graph
from zarr_vectors.types.lines import write_lines
from zarr_vectors.types.meshes import write_meshes
from zarr_vectors.types.points import write_points
from zarr_vectors.types.polylines import write_polylines
from zarr_vectors.types.skeletons import write_skeletons

__all__ = ["MigrationReport", "migrate"]

_LINKED = ("graph", "skeleton", "mesh")


@dataclass(frozen=True)
class MigrationReport:
    """What :func:`migrate` read, wrote, and found wrong in the upstream store."""

    upstream_version: str
    """Upstream's ``zv_version`` ("0.7.0" for the 0.2.0 package, "0.9.x")."""
    geometry_type: str
    """Geometry type of both stores."""
    vertices: int
    """Level-0 vertices copied."""
    objects: int
    """Objects copied (0 for a point cloud without objects)."""
    links: int
    """Edges or faces copied."""
    levels: tuple[int, ...]
    """Upstream levels found, 0 first."""
    rebuilt_ratios: tuple[tuple[int, ...], ...]
    """Bin ratios of the coarse levels rebuilt here from level 0."""
    defects: tuple[str, ...]
    """Upstream defects detected and not copied (one sentence each)."""
    dropped: tuple[str, ...]
    """Upstream data that could not be carried over."""


def _check_paths(old: StoreLike, new: StoreLike) -> None:
    if not isinstance(old, (str, os.PathLike)) or not isinstance(new, (str, os.PathLike)):
        if old is new:
            raise InvalidInputError("migrate cannot write into its source store")
        return
    src = Path(os.fspath(old)).expanduser().resolve()
    dst = Path(os.fspath(new)).expanduser().resolve()
    if src == dst or src in dst.parents or dst in src.parents:
        raise InvalidInputError(
            f"migrate writes a fresh store: {dst} is, or overlaps, the source {src}"
        )


@dataclass(frozen=True)
class _Source:
    """An opened upstream store and the facts every step needs."""

    tree: Tree
    attrs: dict[str, Any]
    meta: dict[str, Any]
    version: str
    geometry_type: str
    ndim: int


def _source(old: StoreLike) -> _Source:
    tree, attrs = _open(old)
    meta = dict(attrs[UPSTREAM_KEY])
    missing = [k for k in ("chunk_shape", "geometry_types") if not meta.get(k)]
    if missing:
        raise MetadataValidationError(
            f"{old}: upstream root metadata lacks {', '.join(missing)} (under '{UPSTREAM_KEY}')"
        )
    types = meta["geometry_types"]
    if len(types) != 1:
        raise InvalidInputError(f"{old}: upstream composite stores ({types}) cannot be migrated")
    axes = (attrs.get("multiscales") or [{}])[0].get("axes") or []
    level = tree.attrs("0").get("zarr_vectors_level", {})
    if isinstance(level, dict) and level.get("chunk_dims"):
        raise InvalidInputError(
            f"{old}: chunked by attribute {level.get('chunk_attribute_name')!r} upstream; the "
            "migration reads spatially chunked stores only (rechunk spatially upstream first)"
        )
    return _Source(
        tree,
        attrs,
        meta,
        str(meta["zv_version"]),
        str(types[0]),
        len(axes) or len(meta["chunk_shape"]),
    )


def _common(src: _Source, data: LevelData, overwrite: bool, compressor: str) -> dict[str, Any]:
    """Writer arguments shared by every geometry type: grid, axes and provenance."""
    axes = (src.attrs.get("multiscales") or [{}])[0].get("axes") or []
    provenance: dict[str, Any] = {"root": src.meta}
    if data.categories:
        provenance["categories"] = data.categories
    common: dict[str, Any] = {
        "chunk_shape": tuple(float(c) for c in src.meta["chunk_shape"]),
        "overwrite": overwrite,
        "compressor": compressor,
        "source_description": f"migrated from upstream zarr-vectors {upstream_label(src.version)}",
        "custom_metadata": {"upstream_zarr_vectors": provenance},
    }
    if src.meta.get("base_bin_shape"):
        common["bin_shape"] = tuple(float(b) for b in src.meta["base_bin_shape"])
    if axes and all(isinstance(a, dict) and a.get("name") for a in axes):
        common["axis_names"] = [str(a["name"]) for a in axes]
        if all(a.get("unit") for a in axes):
            common["axis_units"] = [str(a["unit"]) for a in axes]
    return common


def _open(old: StoreLike) -> tuple[Tree, dict[str, Any]]:
    handle = resolve_store(old, mode="r")
    try:
        root = zarr.open_group(handle.store, mode="r")
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise StoreNotFoundError(f"no Zarr group at {old}") from exc
    attrs = root.attrs.asdict()
    if upstream_version(attrs) is None:
        raise StoreNotFoundError(
            f"{old} is not a store written by upstream zarr-vectors (no '{UPSTREAM_KEY}' root "
            "metadata with a zv_version)"
        )
    store = handle.store.store if isinstance(handle.store, zarr.storage.StorePath) else handle.store
    return Tree(store, os.fspath(old) if isinstance(old, (str, os.PathLike)) else "store"), attrs


def _scales(attrs: dict[str, Any]) -> dict[int, tuple[int, ...]]:
    """Each level's bin ratio from the NGFF block (upstream's single source for it)."""
    out: dict[int, tuple[int, ...]] = {}
    for entry in (attrs.get("multiscales") or [{}])[0].get("datasets", []):
        scale = next(
            (
                t["scale"]
                for t in entry.get("coordinateTransformations", [])
                if t.get("type") == "scale"
            ),
            None,
        )
        if scale is not None and str(entry.get("path", "")).isdigit():
            out[int(entry["path"])] = tuple(round(s) for s in scale)
    return out


def _load(
    tree: Tree, version: str, level: int, ndim: int, linked: bool
) -> tuple[LevelData, list[str]]:
    """Decode one level; payloads that do not fit their metadata raise CorruptPayloadError."""
    try:
        if version.startswith("0.9"):
            return read09.load_level(tree, level, ndim, linked)
        return read07.load_level(tree, level, ndim, linked)
    except ZarrVectorsError:
        raise
    except (ValueError, KeyError, IndexError, TypeError) as exc:  # numpy or zarr on bad bytes
        raise CorruptPayloadError(
            f"{tree.name}: level {level} of the upstream store cannot be decoded "
            f"({type(exc).__name__}: {exc})"
        ) from exc


def _identical(a: LevelData, b: LevelData) -> bool:
    return a.positions.shape == b.positions.shape and bool(np.array_equal(a.positions, b.positions))


def _skeleton(data: LevelData, version: str, where: str) -> tuple[dict[str, Any], list[str]]:
    parents, _ = geometry.skeleton_parents(data, where)
    defects: list[str] = []
    if not version.startswith("0.9"):
        naive = geometry.sequential_reading(data)
        wrong = np.flatnonzero(naive != parents)
        pairs = [f"{int(c)}->{int(naive[c])}" for c in wrong if naive[c] >= 0]
        if pairs:
            defects.append(
                f"skeleton spurious edges: upstream's reader joins {len(pairs)} node(s) to the "
                f"node read before them across trees or chunks ({', '.join(pairs[:10])}"
                f"{', ...' if len(pairs) > 10 else ''}; child->parent in upstream's read order); "
                "the store does not record these edges and they were not copied"
            )
    return geometry.skeleton_args(data, where, parents), defects


def _membership(data: LevelData) -> list[str]:
    """Report objects whose vertices upstream did not record (shared fragments)."""
    if len(data.manifests) < 2 or not geometry.shared_fragments(data):
        return []
    lost = sorted(data.object_attributes) + (["groups"] if data.groups else [])
    tail = f", and {', '.join(lost)} were not copied" if lost else ""
    message = (
        f"object membership: upstream's {len(data.manifests)} objects share fragments (0.2.0 "
        "meshes keep one fragment per chunk for all objects), so the store does not say "
        f"which vertex belongs to which object; objects here are the connected components{tail}"
    )
    return [message]


def _unplaced(tree: Tree, data: LevelData) -> list[str]:
    """Report what has no place here: parametric objects, vertices outside every object."""
    out: list[str] = []
    if tree.exists("parametric"):
        out.append(
            "parametric objects (upstream's parametric/ planes, lines and spheres) have no "
            "ZVF form; not copied"
        )
    oids = geometry.vertex_object_ids(data, "level 0")
    if oids is not None and (oids < 0).any():
        out.append(
            f"objects: {int((oids < 0).sum())} vertices belong to no upstream object, so the "
            "objects, their attributes and groups were not copied (the vertices were)"
        )
    return out


def _misnumbered_edges(data: LevelData, version: str) -> list[str]:
    """0.2.0 graphs: edges of chunks holding several objects may name the wrong rows."""
    if version.startswith("0.9") or len(data.manifests) < 2:
        return []
    where = geometry.objects_per_chunk(data)
    shared = sorted(c for c, objs in where.items() if len(objs) > 1)
    if not shared:
        return []
    marks = np.zeros(len(data.positions), bool)
    for chunk in shared:
        marks[data.start[chunk] : data.start[chunk] + data.chunk_size(chunk)] = True
    suspect = int(marks[data.links.rows].any(axis=1).sum())
    if not suspect:
        return []
    more = " ..." if len(shared) > 5 else ""
    return [
        (
            "graph edges in chunks shared by several objects: upstream 0.2.0 numbers a chunk's "
            f"edges in input order but stores its rows object by object, so {suspect} edge(s) "
            f"touching chunks {shared[:5]}{more} may join the wrong vertices; the right ones "
            "are not recorded, so they were copied as stored (as upstream reads them)"
        )
    ]


def _write(
    gtype: str, new: StoreLike, data: LevelData, version: str, common: dict[str, Any]
) -> tuple[list[str], int, int]:
    """Write level 0; return the defects found, the object and the link counts."""
    where = f"level 0 of the upstream {gtype} store"
    defects: list[str] = []
    if gtype == "point_cloud":
        args = geometry.point_args(data, where)
        write_points(new, args.pop("positions"), **args, **common)
    elif gtype == "line":
        args = geometry.line_args(data, where)
        write_lines(new, args.pop("endpoints"), **args, **common)
    elif gtype in ("polyline", "streamline"):
        args = geometry.path_args(data, where)
        write_polylines(
            new, args.pop("positions"), geometry_type=GeometryTypeName(gtype), **args, **common
        )
    elif gtype == "graph":
        defects = _misnumbered_edges(data, version)
        args = geometry.graph_args(data, where)
        write_graph(new, args.pop("positions"), args.pop("edges"), **args, **common)
    elif gtype == "skeleton":
        args, defects = _skeleton(data, version, where)
        write_skeletons(new, args.pop("positions"), args.pop("parents"), **args, **common)
    elif gtype == "mesh":
        args = geometry.mesh_args(data, where)
        write_meshes(new, args.pop("vertices"), args.pop("faces"), **args, **common)
    else:
        raise InvalidInputError(f"upstream geometry type {gtype!r} cannot be migrated")
    links = len(data.links.rows) if gtype in _LINKED else 0
    return defects, len(data.manifests), links


def _coarse_plan(
    src: _Source, level0: LevelData
) -> tuple[list[tuple[int, ...]], list[float], list[str]]:
    """Upstream's distinct coarse levels: bin ratios, cumulative object sparsity, defects."""
    scales = _scales(src.attrs)
    seen: dict[tuple[int, ...], int] = {scales.get(0, (1,) * src.ndim): 0}
    loaded: dict[int, LevelData] = {0: level0}
    ratios: list[tuple[int, ...]] = []
    sparsity: list[float] = []
    defects: list[str] = []
    kept = 1.0
    for level in sorted(k for k in scales if k > 0):
        data, _ = _load(src.tree, src.version, level, src.ndim, False)
        ratio = scales[level]
        if ratio in seen:  # upstream 0.2.0 scales every factor from level 0
            first = seen[ratio]
            same = "identical vertices" if _identical(data, loaded[first]) else "other vertices"
            defects.append(
                f"identical pyramid levels: level {level} repeats level {first} (bin ratio "
                f"{list(ratio)}, {same}, {len(data.positions)} vertices); not copied"
            )
            continue
        seen[ratio] = level
        loaded[level] = data
        ratios.append(ratio)
        # upstream's object_sparsity is the share kept from the level before
        meta = src.tree.attrs(str(level)).get("zarr_vectors_level", {})
        kept *= float(meta.get("object_sparsity", 1.0) or 1.0)
        sparsity.append(kept)
    return ratios, sparsity, defects


def _pyramid(
    src: _Source, new: StoreLike, level0: LevelData, overwrite: bool
) -> tuple[list[tuple[int, ...]], list[str], list[str]]:
    """Rebuild upstream's coarse levels here; report identical levels and unusable ratios."""
    ratios, sparsity, defects = _coarse_plan(src, level0)
    if not ratios:
        return [], defects, []
    try:
        build_pyramid(
            new,
            ratios,
            object_sparsity=sparsity if min(sparsity) < 1.0 else None,
            overwrite=overwrite,
        )
    except (InvalidInputError, ValueError) as exc:
        lost = f"coarse levels with bin ratios {[list(r) for r in ratios]}: {exc}"
        return [], defects, [lost]
    return ratios, defects, []


def migrate(
    old: StoreLike,
    new: StoreLike,
    *,
    overwrite: bool = False,
    pyramid: bool = True,
    compressor: str = "default",
) -> MigrationReport:
    """Copy a store written by upstream zarr-vectors (0.2.0 or 0.9.x) into a new ZVF store.

    Level 0 is read directly from upstream's on-disk layout (upstream need not be installed)
    and written with this library's writers: geometry, per-vertex, per-link and per-object
    attributes, groups and group attributes, links and faces.  Coarse levels are rebuilt here
    from level 0 with upstream's bin ratios.  Upstream's root metadata is kept under
    ``custom_metadata["upstream_zarr_vectors"]``.

    Parameters
    ----------
    old
        The upstream store (path, URL or zarr store); only read.
    new
        Where to write the ZVF 1.0 store; must not be, contain or lie inside ``old``.
    overwrite
        Replace an existing store at ``new``.
    pyramid
        Rebuild upstream's coarse levels (distinct bin ratios only) from the copied level 0.
    compressor
        Compressor of the new store, as in :func:`zarr_vectors.write_points`.

    Returns
    -------
    MigrationReport
        Counts, the coarse levels rebuilt, the upstream defects found and what could not be
        carried over (each of those also warned as a :class:`~zarr_vectors.errors.ZVUserWarning`).

    Raises
    ------
    InvalidInputError
        ``new`` is or overlaps ``old``, or the upstream store uses a feature the migration
        does not read (composite stores, attribute chunking, upstream shards, Draco).
    StoreNotFoundError
        ``old`` is not an upstream store.
    StoreExistsError
        ``new`` exists and ``overwrite`` is False.
    """
    _check_paths(old, new)
    src = _source(old)
    data, dropped = _load(src.tree, src.version, 0, src.ndim, src.geometry_type in _LINKED)
    dropped += _membership(data) + _unplaced(src.tree, data)
    common = _common(src, data, overwrite, compressor)
    gtype = GeometryTypeName(src.geometry_type).value
    defects, objects, links = _write(gtype, new, data, src.version, common)
    ratios: list[tuple[int, ...]] = []
    if pyramid:
        ratios, more, lost = _pyramid(src, new, data, overwrite)
        defects, dropped = defects + more, dropped + lost
    report = MigrationReport(
        upstream_version=src.version,
        geometry_type=gtype,
        vertices=len(data.positions),
        objects=objects,
        links=links,
        levels=tuple(sorted(_scales(src.attrs)) or [0]),
        rebuilt_ratios=tuple(ratios),
        defects=tuple(defects),
        dropped=tuple(dropped) + data.notes,
    )
    for line in report.defects:
        warnings.warn(f"{old}: upstream defect, not copied: {line}", ZVUserWarning, stacklevel=2)
    for line in report.dropped:
        warnings.warn(f"{old}: not carried over: {line}", ZVUserWarning, stacklevel=2)
    return report
