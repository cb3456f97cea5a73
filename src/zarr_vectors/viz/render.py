"""Render one level of a ZVF store to a PNG with matplotlib (``pip install zarr-vectors[viz]``).

Drawing is headless: figures are built on matplotlib's Agg canvas directly, never through
``pyplot``, so no display, GUI backend or global state is touched.  Points become a scatter,
lines, polylines, streamlines, graph edges and skeleton edges a (3-D) line collection, meshes
painter-sorted, normal-shaded triangles.  Without an explicit level the finest level whose
estimated vertex count fits ``max_vertices`` is drawn (:func:`zarr_vectors.choose_level`), so a
huge store renders from a coarse pyramid level in about the time a small one does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import BoundaryNorm, Colormap, Normalize, to_rgba_array
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from mpl_toolkits.mplot3d.art3d import (  # type: ignore[import-untyped]
    Line3DCollection,
    Poly3DCollection,
)

from zarr_vectors.api import Reader
from zarr_vectors.core.ragged import unique_sorted
from zarr_vectors.core.reader import BBoxLike
from zarr_vectors.core.store import StoreLike
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import ParamEnum, SceneKind
from zarr_vectors.spec.metadata import BoundingBox
from zarr_vectors.viz._scene import Scene, axis_labels, load_scene

__all__ = ["Projection", "RenderResult", "render"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
ProjectionLike = Literal["xy", "xz", "yz", "3d"]

_OBJECT_COLOURS = colormaps["tab10"]
_SINGLE_COLOUR = "#1f77b4"
_MAX_CATEGORIES = 20


class Projection(ParamEnum):
    """Which axes a rendering shows."""

    XY = "xy"
    XZ = "xz"
    YZ = "yz"
    THREE_D = "3d"

    @property
    def axes(self) -> tuple[int, ...]:
        """Indices of the spatial axes drawn."""
        return {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2), "3d": (0, 1, 2)}[self.value]


@dataclass(frozen=True, kw_only=True)
class RenderResult:
    """What :func:`render` drew."""

    path: Path
    """The PNG written."""
    level: int
    """Resolution level drawn (chosen automatically unless given)."""
    geometry_type: str
    """Geometry type of the store."""
    projection: Projection
    """Axes shown."""
    vertices: int
    """Vertices read."""
    drawn_vertices: int
    """Vertices drawn (points beyond ``max_vertices`` are thinned evenly)."""
    objects: int
    """Objects read (0 for a point cloud without objects)."""
    edges: int
    """Edges or segments drawn."""
    faces: int
    """Triangles drawn."""
    color_by: str | None
    """Attribute mapped to colour, if any."""
    legend: tuple[str, ...] = ()
    """Category labels of the discrete legend drawn for a categorical ``color_by`` (strings,
    or integers with at most 20 distinct values); empty when a colour bar (or nothing) was
    drawn."""


@dataclass(frozen=True)
class _Colours:
    """Per-element colour values of one attribute and how to map them."""

    where: Literal["vertex", "edge", "face"]
    values: FloatArray
    label: str
    norm: Normalize
    cmap: Colormap
    ticks: tuple[list[float], list[str]] | None = None

    def rgba(self, values: FloatArray) -> FloatArray:
        return np.asarray(self.cmap(self.norm(values)), dtype=np.float64)


# -- colour sources -----------------------------------------------------------------------------


def _numeric(values: npt.NDArray[Any], name: str) -> tuple[FloatArray, str, list[str] | None]:
    """Return float values (one per row), a label and category names.

    Strings (dictionary-encoded categories) are categories; so are one-component integer and
    boolean attributes with at most :data:`_MAX_CATEGORIES` distinct values (LAS
    ``classification``, SWC ``swc_type``: codes, whose in-between values mean nothing).
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "OUSaT":
        cats, codes = np.unique(arr.astype(str), return_inverse=True)
        return codes.astype(np.float64).ravel(), name, [str(c) for c in cats]
    if arr.dtype.kind in "biu" and arr.size == len(arr):
        levels, codes = np.unique(arr.ravel(), return_inverse=True)
        if len(levels) <= _MAX_CATEGORIES:
            return codes.astype(np.float64).ravel(), name, [str(v) for v in levels.tolist()]
    if arr.dtype.kind not in "biuf":
        raise InvalidInputError(f"color_by: attribute {name!r} has dtype {arr.dtype}")
    flat = arr.astype(np.float64).reshape(len(arr), -1)
    if flat.shape[1] == 1:
        return flat[:, 0], name, None
    return np.linalg.norm(flat, axis=1), f"|{name}|", None


def _colours(scene: Scene, name: str) -> _Colours:
    """Find attribute ``name`` (vertex, object, edge or face) and build its colour mapping."""
    where: Literal["vertex", "edge", "face"]
    if name in scene.attributes:
        raw, where = np.asarray(scene.attributes[name]), "vertex"
    elif name in scene.object_attributes and scene.vertex_object is not None:
        raw, where = np.asarray(scene.object_attributes[name])[scene.vertex_object], "vertex"
    elif name in scene.edge_attributes:
        raw, where = np.asarray(scene.edge_attributes[name]), "edge"
    elif name in scene.face_attributes:
        raw, where = np.asarray(scene.face_attributes[name]), "face"
    else:
        known = sorted(
            {*scene.attributes, *scene.object_attributes}
            | {*scene.edge_attributes, *scene.face_attributes}
        )
        raise InvalidInputError(f"color_by: no attribute {name!r}; available: {known}")
    values, label, cats = _numeric(raw, name)
    if cats is not None:
        n = len(cats)
        cmap = colormaps["tab20" if n > 10 else "tab10"].resampled(max(n, 1))
        norm: Normalize = BoundaryNorm(np.arange(n + 1) - 0.5, max(n, 1))
        shown = cats if n <= _MAX_CATEGORIES else []
        ticks = ([float(i) for i in range(len(shown))], shown)
        return _Colours(where, values, label, norm, cmap, ticks)
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return _Colours(where, values, label, Normalize(lo, hi if hi > lo else lo + 1), _viridis())


def _viridis() -> Colormap:
    return colormaps["viridis"].with_extremes(bad="#bbbbbb")  # NaN values in grey


def _element_values(c: _Colours, index: IntArray | None) -> FloatArray:
    """Values per drawn element: vertex values averaged over each element's vertices."""
    if c.where != "vertex" or index is None:
        return c.values
    if index.ndim == 1:
        return c.values[index]
    return np.asarray(c.values[index].mean(axis=1), dtype=np.float64)


def _object_rgba(scene: Scene, index: IntArray) -> FloatArray:
    """One tab10 colour per object, for elements given as vertex indices (first vertex)."""
    if scene.vertex_object is None or scene.n_objects <= 1:
        return np.asarray(to_rgba_array(_SINGLE_COLOUR), dtype=np.float64).repeat(len(index), 0)
    first = index if index.ndim == 1 else index[:, 0]
    obj = scene.vertex_object[first]
    return np.asarray(_OBJECT_COLOURS(obj % _OBJECT_COLOURS.N), dtype=np.float64)


def _rgba(scene: Scene, colours: _Colours | None, index: IntArray) -> FloatArray:
    if colours is None:
        return _object_rgba(scene, index)
    return colours.rgba(_element_values(colours, index))


# -- drawing ------------------------------------------------------------------------------------


def _point_size(n: int) -> float:
    return float(np.clip(10000.0 / max(n, 1), 0.5, 25.0))


def _draw_points(ax: Any, xyz: FloatArray, rgba: FloatArray, three_d: bool, nodes: bool) -> None:
    if len(xyz) == 0:
        return
    size = min(_point_size(len(xyz)), 12.0) if nodes else _point_size(len(xyz))
    if three_d:
        ax.scatter(xyz[:, 0], xyz[:, 1], xyz[:, 2], c=rgba, s=size, lw=0, depthshade=False)
    else:
        ax.scatter(xyz[:, 0], xyz[:, 1], c=rgba, s=size, linewidths=0)


def _draw_edges(ax: Axes, segs: FloatArray, rgba: FloatArray, three_d: bool) -> None:
    if len(segs) == 0:
        return
    width = float(np.clip(300.0 / np.sqrt(len(segs)), 0.4, 2.0))
    if three_d:
        ax.add_collection(Line3DCollection(list(segs), colors=rgba, linewidths=width))
    else:
        ax.add_collection(LineCollection(list(segs), colors=rgba, linewidths=width))


def _shade(tri: FloatArray, view: FloatArray) -> FloatArray:
    """Lambert-like factor per triangle from its normal and the viewing direction."""
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    length = np.linalg.norm(n, axis=1)
    cos = np.abs(n @ view) / np.where(length > 0, length, 1.0)
    return np.asarray(0.35 + 0.65 * cos, dtype=np.float64)


def _draw_faces(
    ax: Axes, tri3: FloatArray, rgba: FloatArray, axes: tuple[int, ...], three_d: bool
) -> None:
    if len(tri3) == 0:
        return
    view = np.array([1.0, -1.0, 1.5]) if three_d else np.zeros(3)
    if not three_d:
        dropped = ({0, 1, 2} - set(axes)).pop()
        view[dropped] = 1.0
        order = np.argsort(tri3[:, :, dropped].mean(axis=1), kind="stable")
        tri3, rgba = tri3[order], rgba[order]
    shaded = rgba.copy()
    shaded[:, :3] *= _shade(tri3, view / np.linalg.norm(view))[:, None]
    tri = tri3[:, :, list(axes)]
    if three_d:
        ax.add_collection(Poly3DCollection(list(tri), facecolors=shaded, edgecolors="none"))
    else:
        ax.add_collection(PolyCollection(list(tri), facecolors=shaded, edgecolors="none"))


def _padded(tri_or_pos: FloatArray, width: int) -> FloatArray:
    """Give 2-D coordinates a zero third axis so mesh normals can be computed."""
    if tri_or_pos.shape[-1] >= width:
        return tri_or_pos[..., :width]
    pad = np.zeros((*tri_or_pos.shape[:-1], width - tri_or_pos.shape[-1]))
    return np.concatenate([tri_or_pos, pad], axis=-1)


def _thin(n: int, budget: int) -> IntArray:
    if n <= budget:
        return np.arange(n, dtype=np.int64)
    return unique_sorted(np.linspace(0, n - 1, budget).astype(np.int64))


@dataclass(frozen=True)
class _Drawn:
    vertices: int
    edges: int
    faces: int


def _draw_scene(
    ax: Axes, scene: Scene, colours: _Colours | None, axes: tuple[int, ...], budget: int
) -> _Drawn:
    three_d = len(axes) == 3
    pos = scene.positions[:, list(axes)]
    kind = scene.kind
    drawn_vertices = 0
    if kind is SceneKind.MESH:
        tri3 = _padded(scene.positions, 3)[scene.faces]
        _draw_faces(ax, tri3, _rgba(scene, colours, scene.faces), axes, three_d)
    elif len(scene.edges):
        _draw_edges(ax, pos[scene.edges], _rgba(scene, colours, scene.edges), three_d)
    if kind in (SceneKind.POINTS, SceneKind.GRAPH):
        keep = _thin(len(pos), budget)
        point_colours = None if colours is not None and colours.where != "vertex" else colours
        rgba = _rgba(scene, point_colours, keep)
        _draw_points(ax, pos[keep], rgba, three_d, nodes=kind is SceneKind.GRAPH)
        drawn_vertices = len(keep)
    else:
        drawn_vertices = len(scene.positions)
    return _Drawn(drawn_vertices, len(scene.edges), len(scene.faces))


# -- axes ---------------------------------------------------------------------------------------


def _limits(
    scene: Scene, box: BoundingBox | None, fallback: BoundingBox | None, axes: tuple[int, ...]
) -> list[tuple[float, float]]:
    if box is not None:
        return [(box.min[a], box.max[a]) for a in axes]
    if len(scene.positions):
        lo = scene.positions[:, list(axes)].min(axis=0)
        hi = scene.positions[:, list(axes)].max(axis=0)
    elif fallback is not None:
        lo = np.array([fallback.min[a] for a in axes])
        hi = np.array([fallback.max[a] for a in axes])
    else:
        lo, hi = np.zeros(len(axes)), np.ones(len(axes))
    span = np.maximum(hi - lo, 1e-9)
    pad = 0.04 * float(span.max())
    return [(float(a) - pad, float(b) + pad) for a, b in zip(lo, hi, strict=True)]


def _set_axes(ax: Any, limits: list[tuple[float, float]], labels: list[str]) -> None:
    setters = (ax.set_xlim, ax.set_ylim, getattr(ax, "set_zlim", None))
    label_setters = (ax.set_xlabel, ax.set_ylabel, getattr(ax, "set_zlabel", None))
    for lim, label, set_lim, set_label in zip(limits, labels, setters, label_setters, strict=False):
        if set_lim is not None and set_label is not None:
            set_lim(*lim)
            set_label(label)
    if len(limits) == 3:
        spans = np.array([max(b - a, 1e-12) for a, b in limits])
        ax.set_box_aspect(tuple(np.maximum(spans / spans.max(), 0.05)))
    else:
        ax.set_aspect("equal")


def _counts_line(scene: Scene, drawn: _Drawn, level: int) -> str:
    parts = [f"level {level}", f"{len(scene.positions):,} vertices"]
    if scene.n_objects:
        parts.append(f"{scene.n_objects:,} objects")
    if drawn.edges:
        parts.append(f"{drawn.edges:,} edges")
    if drawn.faces:
        parts.append(f"{drawn.faces:,} faces")
    if drawn.vertices < len(scene.positions):
        parts.append(f"{drawn.vertices:,} drawn")
    return " · ".join(parts)


def _legend(ax: Axes, colours: _Colours, codes: list[float], labels: list[str]) -> tuple[str, ...]:
    """Draw a discrete legend of categories (``codes`` as coloured, ``labels``); return them."""
    rgba = colours.rgba(np.asarray(codes, dtype=np.float64))
    handles = [
        Patch(facecolor=c, edgecolor="none", label=t) for c, t in zip(rgba, labels, strict=True)
    ]
    ax.legend(
        handles=handles,
        title=colours.label,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize=8,
        title_fontsize=9,
        frameon=False,
    )
    return tuple(labels)


def _key(fig: Figure, ax: Axes, colours: _Colours) -> tuple[str, ...]:
    """Draw a legend for categories that fit one, else a colour bar; return legend labels."""
    if colours.ticks is not None and colours.ticks[1]:
        return _legend(ax, colours, *colours.ticks)
    _colour_bar(fig, ax, colours)
    return ()


def _colour_bar(fig: Figure, ax: Axes, colours: _Colours) -> None:
    mappable = ScalarMappable(norm=colours.norm, cmap=colours.cmap)
    bar = fig.colorbar(mappable, ax=ax, shrink=0.8, pad=0.08)
    bar.set_label(colours.label)
    if colours.ticks is not None:
        bar.set_ticks(colours.ticks[0], labels=colours.ticks[1])


def _projection(projection: ProjectionLike | Projection, ndim: int) -> Projection:
    proj = Projection.parse(projection, field="projection")
    if max(proj.axes) >= ndim:
        raise InvalidInputError(f"projection {proj.value!r} needs 3 axes; the store has {ndim}")
    return proj


def render(
    store: StoreLike | Reader,
    out_png: str | os.PathLike[str],
    *,
    level: int | None = None,
    bbox: BBoxLike | Sequence[float] | None = None,
    color_by: str | None = None,
    projection: ProjectionLike | Projection = "xy",
    max_vertices: int = 200_000,
    dpi: int = 150,
    title: str | None = None,
) -> RenderResult:
    """Draw one level of a store to a PNG file.

    Parameters
    ----------
    store
        Path, URL, zarr store or open :class:`~zarr_vectors.Reader`.
    out_png
        File to write (PNG).
    level
        Level to draw; None picks the finest level whose estimated vertex count inside
        ``bbox`` is at most ``max_vertices``.
    bbox
        ``(min, max)`` pair of D-sequences, or ``2 * D`` numbers ``x0, y0, z0, x1, y1, z1``
        (physical units); the view is limited to it and objects touching it are read whole.
    color_by
        Attribute to colour by: per-vertex, per-object, per-edge or per-face, numeric
        (multi-component values by their norm) or categorical (strings, and integers with at
        most 20 distinct values, such as LAS ``classification``).  Adds a colour bar, or a
        discrete legend for categories.
        Without it, objects get cycling qualitative colours.
    projection
        ``"xy"``, ``"xz"``, ``"yz"`` (orthographic views) or ``"3d"`` (perspective axes).
    max_vertices
        Vertex budget: for the automatic level choice, and points beyond it are thinned
        evenly when drawn.
    dpi
        Resolution of the PNG (the figure is 7 x 6 inches).
    title
        First title line (default: the geometry type); a line of counts is always added.

    Returns
    -------
    RenderResult
        The path, level and counts drawn.

    Raises
    ------
    InvalidInputError
        Unknown ``color_by`` or projection, a projection needing more axes than the store has,
        a level not in the store, or a malformed ``bbox``.
    StoreNotFoundError
        No ZVF store at ``store``.

    Examples
    --------
    >>> import tempfile, numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = zv.write_points(store, np.random.default_rng(0).uniform(0, 10, (100, 3)),
    ...                     chunk_shape=(5, 5, 5), attributes={"v": np.arange(100.0)})
    >>> with tempfile.TemporaryDirectory() as d:
    ...     r = render(store, f"{d}/view.png", color_by="v", projection="3d")
    >>> r.vertices, r.level
    (100, 0)
    >>> with tempfile.TemporaryDirectory() as d:  # an empty box still writes a picture
    ...     render(store, f"{d}/e.png", bbox=[20, 20, 20, 30, 30, 30]).vertices
    0
    """
    reader = store if isinstance(store, Reader) else Reader(store)
    box = _bbox_arg(bbox)
    loaded = load_scene(reader, level=level, bbox=box, max_vertices=max_vertices)
    scene, meta = loaded.scene, loaded.metadata
    proj = _projection(projection, meta.spatial_dims)
    colours = None if color_by is None else _colours(scene, color_by)
    fig = Figure(figsize=(7, 6), layout="constrained")
    FigureCanvasAgg(fig)
    three_d = proj is Projection.THREE_D
    ax = fig.add_subplot(projection="3d") if three_d else fig.add_subplot()
    drawn = _draw_scene(ax, scene, colours, proj.axes, max_vertices)
    labels = axis_labels(meta)
    _set_axes(
        ax,
        _limits(scene, loaded.bbox, meta.bounding_box, proj.axes),
        [labels[a] for a in proj.axes],
    )
    legend = () if colours is None else _key(fig, ax, colours)
    if not len(scene.positions):
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center")
    heading = title if title is not None else str(meta.geometry_type).replace("_", " ")
    ax.set_title(f"{heading}\n{_counts_line(scene, drawn, loaded.level)}", fontsize=10)
    path = Path(out_png)
    fig.savefig(path, dpi=dpi, format="png")
    return RenderResult(
        path=path,
        level=loaded.level,
        geometry_type=meta.geometry_type,
        projection=proj,
        vertices=len(scene.positions),
        drawn_vertices=drawn.vertices,
        objects=scene.n_objects,
        edges=drawn.edges,
        faces=drawn.faces,
        color_by=color_by,
        legend=legend,
    )


def _bbox_arg(bbox: BBoxLike | Sequence[float] | None) -> BBoxLike | None:
    """Accept ``(min, max)`` or the flat ``x0, y0, z0, x1, y1, z1`` form of the CLI."""
    if bbox is None or isinstance(bbox, BoundingBox):
        return bbox
    arr = np.asarray(bbox, dtype=np.float64)
    if arr.ndim == 1:
        if arr.size % 2:
            raise InvalidInputError(f"bbox: expected 2 * D numbers, got {arr.size}")
        return arr.reshape(2, -1)
    return arr
