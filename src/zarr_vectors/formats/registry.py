"""File formats by extension, the conversion protocol, and ``convert`` / ``export``.

Each entry of :data:`FORMATS` names the module that converts one foreign format, the function
that opens a file of that format as a :class:`Source` (its ``opener``) and the function that
writes a store back to a file (its ``exporter``).  Modules are imported by name with
:func:`importlib.import_module` only when a file of their format is converted, so using one
format never needs another format's library; a missing library raises
:class:`~zarr_vectors.errors.MissingDependencyError` naming the ``formats`` extra.

The contract of a format module:

* ``opener(path, **options) -> Source``: read the header (streaming formats) or the whole file
  (small formats); :meth:`Source.extent` reports the vertex count and bounding box used to pick a
  default chunk shape, :meth:`Source.write` writes level 0 of a new store.
* ``exporter(store, path, *, level=0, progress=None) -> None``: write one level of a store.
* Foreign header fields go to the root ``custom_metadata`` under the format's name (FORMAT.md
  §3), so that the exporter reproduces the header.

Examples
--------
>>> format_for("scan.laz").name, format_for("tracts.TRK").name
('las', 'trk')
>>> suggest_chunk_shape(Extent((0.0, 0.0, 0.0), (1000.0, 1000.0, 10.0), 4_000_000))
(100.0, 100.0, 100.0)
>>> default_bin_shape((100.0, 100.0, 100.0), [(2, 2, 2), (8, 8, 8)])
(12.5, 12.5, 12.5)
"""

from __future__ import annotations

import abc
import difflib
import importlib
import inspect
import math
import os
import re
import shutil
import uuid
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Protocol, Self

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack
from zarr.storage import MemoryStore

from zarr_vectors.core.chunking import axis_bounds
from zarr_vectors.core.options import StoreKwargs, StoreOptions
from zarr_vectors.core.reader import LevelReader
from zarr_vectors.core.store import StoreLike, open_store, refuse_overlap
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, MissingDependencyError
from zarr_vectors.formats.bins import (
    curve_bin_shape,
    extent_bin_shape,
    measured_bin_shape,
    warn_sparse_levels,
)
from zarr_vectors.multiscale import PyramidLevel, build_pyramid
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.types._base import decode_columns
from zarr_vectors.types._order import INPUT_INDEX, ElementOrder, visible
from zarr_vectors.types.points import read_points

__all__ = [
    "FORMATS",
    "STORE_SUFFIXES",
    "STREAMING_THRESHOLD",
    "TARGET_VERTICES_PER_CHUNK",
    "TARGET_VERTICES_PER_CURVE_CHUNK",
    "ConvertReport",
    "Extent",
    "FormatInfo",
    "NullProgress",
    "PointBatch",
    "Progress",
    "Source",
    "WriteOptions",
    "convert",
    "custom_section",
    "default_bin_shape",
    "editable",
    "export",
    "format_for",
    "format_for_store",
    "is_edge_list_csv",
    "export_order",
    "identifier",
    "is_store_path",
    "iter_point_batches",
    "load_format",
    "open_source",
    "store_metadata",
    "suggest_chunk_shape",
]

PathLike = str | os.PathLike[str]

TARGET_VERTICES_PER_CHUNK = 50_000
"""Vertices per chunk the default chunk shape aims for (points, meshes, graphs, skeletons)."""
TARGET_VERTICES_PER_CURVE_CHUNK = 400_000
"""Vertices per chunk the default chunk shape aims for with streamlines.  A streamline box read
decodes only the 1 KiB payload blocks of its hit paths, so its cost grows slowly with the chunk
while every chunk is four files to create: on a 10M-vertex tractogram 8x larger chunks cut the
files from 1,071 to 238 and the conversion's CPU time by about a quarter, for a 1% box read up
to 18% slower and the same by-id read (docs/performance.md)."""
STREAMING_THRESHOLD = 20_000_000
"""Inputs with more vertices are streamed through :func:`~zarr_vectors.open_writer` by default
(the in-memory writers are several times faster but hold every vertex several times over)."""
STORE_SUFFIXES = (".zarrvectors", ".zarr", ".zip")
"""Suffixes that mark a path as a ZVF store rather than a foreign file (``.zarrvectors`` is
the conventional one; a ZVF store is a Zarr hierarchy, so ``.zarr`` is one too)."""
BIN_DIVISOR = 4
"""Default bins per chunk axis, so ``pyramid --ratio 2,2,2 --ratio 4,4,4`` works later."""
_EXTRA = "pip install 'zarr-vectors[formats]'"
_POINTS = (GeometryTypeName.POINT_CLOUD,)
_PATHS = (GeometryTypeName.STREAMLINE, GeometryTypeName.POLYLINE)
_GRAPHS = (GeometryTypeName.GRAPH, GeometryTypeName.SKELETON)
_SKELETONS = (GeometryTypeName.SKELETON,)
_MESHES = (GeometryTypeName.MESH,)


# -- the protocol ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Extent:
    """Size and bounding box of a source, known before it is written."""

    min: tuple[float, ...]
    """Lower corner, physical units (the source's coordinates)."""
    max: tuple[float, ...]
    """Upper corner, physical units."""
    n_vertices: int
    """Number of vertices (points, streamline points, graph nodes)."""

    @classmethod
    def of(cls, positions: npt.NDArray[np.floating]) -> Extent:
        """Return the extent of an (N, D) array (a zero box at the origin when empty)."""
        if len(positions) == 0:
            zeros = (0.0,) * (positions.shape[1] if positions.ndim == 2 else 3)
            return cls(zeros, zeros, 0)
        lo, hi = axis_bounds(positions)
        return cls(tuple(lo.tolist()), tuple(hi.tolist()), len(positions))


class Progress(Protocol):
    """Receiver of progress reports (the CLI draws rich progress bars)."""

    def start(self, description: str, total: float | None = None) -> None:
        """Begin a new step; ``total`` in the step's units, None when unknown."""

    def advance(self, amount: float = 1) -> None:
        """Report ``amount`` more units of the current step done."""

    def note(self, message: str) -> None:
        """Tell the user something (the chosen chunk shape, a skipped attribute)."""


class NullProgress:
    """A :class:`Progress` that reports nothing (the default of every function)."""

    def start(self, description: str, total: float | None = None) -> None:
        """Ignore the step."""

    def advance(self, amount: float = 1) -> None:
        """Ignore the advance."""

    def note(self, message: str) -> None:
        """Ignore the message."""


@dataclass(frozen=True, kw_only=True)
class WriteOptions:
    """How :meth:`Source.write` lays out the new store."""

    chunk_shape: tuple[float, ...]
    """Chunk extent per axis, physical units (same as the source's coordinates)."""
    bin_shape: tuple[float, ...] | None = None
    """Level-0 bin extent per axis; must divide ``chunk_shape`` (default: ``chunk_shape``)."""
    overwrite: bool = False
    """Replace an existing store."""
    streaming: bool | None = None
    """Stream batches through :func:`~zarr_vectors.open_writer`; None: only above
    :data:`STREAMING_THRESHOLD` vertices."""
    batch_size: int = 1_000_000
    """Vertices per streamed batch (LAS points per ``chunk_iterator`` step)."""
    compressor: str = "default"
    """Compressor preset of the writers: ``"default"``/``"lz4"`` (Blosc-LZ4) or ``"zstd"``."""
    partition_chunks: int = 1
    """Chunks per axis of a spill partition of the streaming writer (see
    :func:`~zarr_vectors.open_writer`; :func:`convert` sizes it from the data extent)."""
    keep_order: bool = True
    """Store each element's input position (``_input_index``) so that export gives the file's
    element order back (sources that reorder elements honour it; ``--no-keep-order``)."""

    @property
    def store_kwargs(self) -> StoreKwargs:
        """Store keywords of the ``write_*`` functions for the new store's layout."""
        return {
            "chunk_shape": self.chunk_shape,
            "bin_shape": self.bin_shape,
            "overwrite": self.overwrite,
            "compressor": self.compressor,
        }

    def store(self, **metadata: Unpack[StoreKwargs]) -> StoreKwargs:
        """Return the layout's store keywords plus a source's ``metadata`` keywords, checked.

        Sources pass what they know of the file (``source_description``, ``custom_metadata``,
        ``axis_units`` ...) here rather than beside :attr:`store_kwargs`, so that a misspelt or
        mistyped keyword fails before any data is read or written.

        Raises
        ------
        InvalidInputError
            A keyword that is not a store keyword (naming it), or a value of the wrong type.
        """
        kwargs: StoreKwargs = {**self.store_kwargs, **metadata}
        StoreOptions.from_kwargs(**kwargs)
        return kwargs

    def stream(self, n_vertices: int) -> bool:
        """Whether a source of ``n_vertices`` is streamed."""
        if n_vertices == 0:
            return False
        return n_vertices > STREAMING_THRESHOLD if self.streaming is None else self.streaming


class Source(abc.ABC):
    """A foreign file opened for conversion (a context manager).

    Subclasses set :attr:`geometry_type` and implement :meth:`extent` and :meth:`write`.
    """

    geometry_type: GeometryTypeName
    """Geometry type of the store :meth:`write` creates."""

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no such file: {self.path}")

    @abc.abstractmethod
    def extent(self) -> Extent:
        """Return the vertex count and bounding box (cheap: header or loaded data)."""

    @abc.abstractmethod
    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the file as level 0 of a new store."""

    def dropped(self) -> list[str]:
        """Describe what of the file the store cannot carry, one line each (default: nothing)."""
        return []

    def mean_step(self) -> float | None:
        """Mean distance between consecutive vertices of a curve (None: not curves, default)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook: most sources hold no open file
        """Release open files (the default holds none)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# -- the table of formats -------------------------------------------------------------------


@dataclass(frozen=True)
class FormatInfo:
    """One foreign format: its extensions, module and conversion functions.

    The module ``zarr_vectors.formats.<module>`` defines ``open_<name>(path, **options) ->
    Source`` and ``store_to_<name>(store, path, *, level, progress) -> None``.
    """

    name: str
    """Short name, also the ``custom_metadata`` key of its header."""
    extensions: tuple[str, ...]
    """Lower-case file suffixes, with the dot."""
    module: str
    """Module name inside :mod:`zarr_vectors.formats`, imported on first use."""
    exports: tuple[GeometryTypeName, ...]
    """Geometry types of the stores the exporter writes."""
    description: str
    """One line for ``--help``."""
    options: tuple[str, ...] = field(default=())
    """Keyword options the opener accepts besides ``path``."""
    export_options: tuple[str, ...] = field(default=())
    """Keyword options the exporter accepts besides ``level`` and ``progress``."""

    @property
    def opener(self) -> str:
        """Name of the module function opening a file as a :class:`Source`."""
        return f"open_{self.name}"

    @property
    def exporter(self) -> str:
        """Name of the module function writing a store to a file."""
        return f"store_to_{self.name}"


_COLS = ("columns",)
FORMATS: tuple[FormatInfo, ...] = (
    FormatInfo("las", (".las", ".laz"), "las", _POINTS, "ASPRS LAS/LAZ point clouds (laspy)"),
    FormatInfo(
        "ply", (".ply",), "ply_points", _POINTS + _MESHES, "PLY point clouds and triangle meshes"
    ),
    FormatInfo("csv", (".csv",), "tables", _POINTS, "CSV tables, one row per point", _COLS),
    FormatInfo("parquet", (".parquet", ".pq"), "tables", _POINTS, "Parquet tables", _COLS),
    FormatInfo("trk", (".trk",), "tractography", _PATHS, "TrackVis streamlines (nibabel)"),
    FormatInfo("tck", (".tck",), "tractography", _PATHS, "MRtrix streamlines (nibabel)"),
    FormatInfo("trx", (".trx",), "tractography", _PATHS, "TRX tractograms (trx-python)"),
    FormatInfo("graphml", (".graphml",), "graphml", _GRAPHS, "GraphML graphs (networkx)"),
    FormatInfo(
        "swc",
        (".swc",),
        "swc",
        _SKELETONS,
        "SWC neuron morphologies, one per file",
        export_options=("object_id",),
    ),
    FormatInfo("mesh", (".obj", ".stl"), "meshfiles", _MESHES, "OBJ and STL meshes (trimesh)"),
    FormatInfo(
        "gifti",
        (".gii",),
        "gifti",
        _MESHES,
        "GIFTI surfaces (nibabel); per-vertex data files with --vertex-data",
        ("vertex_data",),
        ("vertex_data",),
    ),
    FormatInfo(
        "freesurfer",
        (".white", ".pial", ".inflated", ".sphere", ".orig", ".smoothwm", ".midthickness", ".reg"),
        "freesurfer",
        _MESHES,
        "FreeSurfer surfaces (lh.white, ...; nibabel); curv/thickness files with --vertex-data",
        ("vertex_data",),
    ),
    FormatInfo(
        "edgelist",
        (".csv",),
        "edgelist",
        (GeometryTypeName.GRAPH,),
        "edge-list CSV (source,target columns) with a node table (id,x,y[,z]), as graphs",
        ("nodes", "directed"),
        ("nodes",),
    ),
    FormatInfo(
        "h5ad",
        (".h5ad",),
        "h5ad",
        _POINTS,
        "AnnData spatial data: obsm['spatial'] as points, obs columns as attributes (h5py)",
        ("spatial_key",),
    ),
    FormatInfo(
        "precomputed",
        (".precomputed",),
        "precomputed",
        _GRAPHS + _MESHES,
        "Neuroglancer precomputed skeletons and legacy meshes (a directory with an info file)",
    ),
)
"""Every convertible format, in ``--help`` order."""


def is_store_path(path: PathLike) -> bool:
    """Whether ``path`` names a ZVF store (``.zarrvectors`` or ``.zarr`` directory, ``.zip``)."""
    return Path(path).suffix.lower() in STORE_SUFFIXES


def format_for(path: PathLike) -> FormatInfo:
    """Return the format of a file from its extension.

    Raises
    ------
    InvalidInputError
        The extension is not one of :data:`FORMATS` (the message lists them).
    """
    if Path(path).is_dir() and (Path(path) / "info").is_file():
        return _named("precomputed")  # a Neuroglancer data source: a directory with an info file
    if Path(path).suffix.lower() == ".csv" and is_edge_list_csv(path):
        return _named("edgelist")
    return _by_suffix(path)


def _by_suffix(path: PathLike) -> FormatInfo:
    suffix = Path(path).suffix.lower()
    for info in FORMATS:
        if suffix in info.extensions:
            return info
    known = ", ".join(e for info in FORMATS for e in info.extensions)
    raise InvalidInputError(f"{os.fspath(path)!r}: unknown file extension {suffix!r}; use {known}")


def is_edge_list_csv(path: PathLike) -> bool:
    """Whether ``path`` is a CSV file whose header names ``source`` and ``target`` columns."""
    p = Path(path)
    if not p.is_file():
        return False
    with p.open("r", encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    names = {c.strip().strip('"').lower() for c in first.rstrip("\r\n").split(",")}
    return {"source", "target"} <= names


def format_for_store(path: PathLike, geometry_type: str) -> FormatInfo:
    """Return the format :func:`export` writes a store of ``geometry_type`` to at ``path``.

    As :func:`format_for`, except that a ``graph`` store goes to a ``.csv`` path as an edge
    list (CSV point tables hold point clouds).
    """
    info = _by_suffix(path)  # what an existing file at ``path`` holds does not matter
    if info.name == "csv" and type_spec(geometry_type).family_name == GeometryTypeName.GRAPH:
        return _named("edgelist")
    return info


def _named(name: str) -> FormatInfo:
    return next(info for info in FORMATS if info.name == name)


def load_format(info: FormatInfo) -> ModuleType:
    """Import the module of a format.

    Raises
    ------
    MissingDependencyError
        The module's third-party library is not installed.
    """
    try:
        return importlib.import_module(f"zarr_vectors.formats.{info.module}")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "zarr_vectors":  # our own bug, not an extra
            raise
        raise MissingDependencyError(
            f"{info.name} files need the {exc.name!r} package: {_EXTRA}"
        ) from exc


def open_source(path: PathLike, **options: Any) -> Source:
    """Open a foreign file for conversion; ``options`` go to the format's opener.

    Raises
    ------
    InvalidInputError
        Unknown extension, or an option the format does not take.
    MissingDependencyError
        The format's library is not installed.
    """
    info = format_for(path)
    given = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(given) - set(info.options))
    if unknown:
        raise InvalidInputError(f"{info.name} files take no option {', '.join(unknown)}")
    source: Source = getattr(load_format(info), info.opener)(path, **given)
    return source


# -- chunk shapes ---------------------------------------------------------------------------


_ROUND = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)


def _nice(value: float) -> float:
    """Round to the nearest (in log scale) of 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 × a power of ten."""
    exp = math.floor(math.log10(value))
    best = min(
        (m * 10.0**e for e in (exp - 1, exp, exp + 1) for m in _ROUND),
        key=lambda c: abs(math.log(c / value)),
    )
    return float(f"{best:.12g}")


def suggest_chunk_shape(
    extent: Extent, target: int = TARGET_VERTICES_PER_CHUNK
) -> tuple[float, ...]:
    """Pick a cubic chunk shape holding about ``target`` vertices on average.

    The side ``s`` solves ``prod(max(1, span_d / s)) = n / target`` (flat axes count once), then
    rounds to a round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten).

    Parameters
    ----------
    extent
        Vertex count and bounding box of the data.
    target
        Vertices per chunk to aim for.

    Returns
    -------
    tuple of float
        One side per axis, physical units.

    Examples
    --------
    >>> suggest_chunk_shape(Extent((0.0, 0.0), (0.0, 0.0), 0))
    (1.0, 1.0)
    """
    span = np.subtract(extent.max, extent.min, dtype=np.float64)
    d = len(span)
    biggest = float(span.max()) if d else 0.0
    if biggest <= 0 or extent.n_vertices <= target:
        side = biggest if biggest > 0 else 1.0
        return (_nice(side * 1.0001),) * d
    wanted = extent.n_vertices / target
    lo, hi = math.log(biggest / wanted), math.log(biggest)
    for _ in range(60):  # prod(max(1, span / s)) decreases with s: bisect in log space
        mid = 0.5 * (lo + hi)
        if float(np.prod(np.maximum(1.0, span / math.exp(mid)))) > wanted:
            lo = mid
        else:
            hi = mid
    return (_nice(math.exp(hi)),) * d


def _chunk_target(geometry_type: str) -> int:
    """Vertices per chunk the default chunk shape aims for with ``geometry_type``."""
    if geometry_type == GeometryTypeName.STREAMLINE:
        return TARGET_VERTICES_PER_CURVE_CHUNK
    return TARGET_VERTICES_PER_CHUNK


def default_bin_shape(
    chunk_shape: Sequence[float], ratios: Sequence[Sequence[int]] = ()
) -> tuple[float, ...]:
    """Return ``chunk_shape / lcm(4, ratios...)`` per axis, so every pyramid ratio divides.

    Examples
    --------
    >>> default_bin_shape((10.0, 10.0))
    (2.5, 2.5)
    """
    out = []
    for axis, c in enumerate(chunk_shape):
        div = BIN_DIVISOR
        for r in ratios:
            div = math.lcm(div, int(r[axis]))
        out.append(float(c) / div)
    return tuple(out)


# -- reading point stores in batches ---------------------------------------------------------


@dataclass(frozen=True)
class PointBatch:
    """Points of some chunks of a ``point_cloud`` level, in storage order."""

    positions: npt.NDArray[np.floating]
    """(n, D) coordinates."""
    attributes: dict[str, npt.NDArray[Any]]
    """Per-point attributes (categories resolved to strings)."""


def iter_point_batches(
    store: StoreLike, *, level: int = 0, batch_size: int = 1_000_000
) -> Iterator[PointBatch]:
    """Yield the points of a level, about ``batch_size`` points at a time.

    A store written with input order (``keep_order``) is read whole and yielded in input
    order; any other chunk by chunk, in storage order.  The reserved ``_input_index``
    attribute is never yielded.

    Raises
    ------
    InvalidInputError
        The store is not a point cloud.
    """
    reader = LevelReader(open_store(store, mode="r"), level)
    if reader.meta.geometry_type is not GeometryTypeName.POINT_CLOUD:
        raise InvalidInputError(
            f"store holds {str(reader.meta.geometry_type)!r}, not 'point_cloud'"
        )
    names = visible(reader.names(L.ATTRIBUTES))
    if INPUT_INDEX in reader.names(L.ATTRIBUTES):
        yield from _input_order_batches(store, level, batch_size)
        return
    flats = reader.chunks()
    counts = reader.vertex_counts[flats]
    start = 0
    while start < len(flats):
        cum = np.cumsum(counts[start:])
        stop = start + max(1, int(np.searchsorted(cum, batch_size, side="right")))
        part = flats[start:stop]
        pos = reader.rows(L.VERTICES, part).values
        cols = {n: reader.column(f"{L.ATTRIBUTES}/{n}", part) for n in names}
        yield PointBatch(pos, decode_columns(cols))
        start = stop


def export_order(store: StoreLike, level: int = 0) -> ElementOrder:
    """Return the order an exporter writes a level in.

    The input order when the level keeps it (``_input_index``, docs/spec.md §8.8), else
    storage order.
    """
    reader = LevelReader(open_store(store, mode="r"), level)
    kept = INPUT_INDEX in reader.names(L.ATTRIBUTES)
    return ElementOrder.INPUT if kept else ElementOrder.STORAGE


def _input_order_batches(store: StoreLike, level: int, batch_size: int) -> Iterator[PointBatch]:
    """Yield the points of a level in input order, ``batch_size`` at a time.

    Input order is a global permutation of the chunks' rows, so the level is read at once.
    """
    points = read_points(store, level=level, order=ElementOrder.INPUT)
    for start in range(0, len(points), batch_size):
        rows = slice(start, start + batch_size)
        yield PointBatch(points.positions[rows], {k: v[rows] for k, v in points.attributes.items()})


def identifier(name: str, taken: set[str]) -> str:
    """Make ``name`` a Python identifier not in ``taken`` (attribute names must be), and take it.

    Examples
    --------
    >>> taken = {"fa"}
    >>> identifier("my dist", taken), identifier("fa", taken), identifier("2nd", taken)
    ('my_dist', 'fa_1', '_2nd')
    """
    out = re.sub(r"\W+", "_", name).strip("_") or "value"
    if out[0].isdigit():
        out = "_" + out
    base, i = out, 1
    while out in taken:
        out, i = f"{base}_{i}", i + 1
    taken.add(out)
    return out


def store_metadata(store: StoreLike) -> RootMetadata:
    """Read the root metadata of a store."""
    return RootMetadata.from_dict(open_store(store, mode="r").attrs.asdict())


# -- convert and export ---------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertReport:
    """What :func:`convert` did."""

    format: str
    """Name of the input format."""
    chunk_shape: tuple[float, ...]
    """Chunk shape of the new store, physical units."""
    bin_shape: tuple[float, ...]
    """Level-0 bin shape of the new store."""
    chunk_shape_chosen: bool
    """Whether ``chunk_shape`` was picked from the data extent."""
    summary: WriteSummary
    """What level 0 holds."""
    pyramid: list[PyramidLevel]
    """Coarser levels built."""
    dropped: tuple[str, ...] = ()
    """What of the input the store does not carry (also sent to ``progress.note``)."""


def convert(
    source: PathLike,
    store: StoreLike,
    *,
    chunk_shape: Sequence[float] | None = None,
    bin_shape: Sequence[float] | None = None,
    pyramid: Sequence[Sequence[int]] = (),
    overwrite: bool = False,
    streaming: bool | None = None,
    batch_size: int = 1_000_000,
    progress: Progress | None = None,
    compressor: str = "default",
    keep_order: bool = True,
    **options: Any,
) -> ConvertReport:
    """Convert a foreign file to a new store, choosing the format from the extension.

    Parameters
    ----------
    source
        Input file (see :data:`FORMATS` for the extensions).
    store
        Where the new store goes (path, ``.zip`` or zarr store).
    chunk_shape
        Chunk extent per axis, physical units; default :func:`suggest_chunk_shape`.
    bin_shape
        Level-0 bin extent; default: chosen from the data so that a level-0 bin holds about
        4 vertices and every ``pyramid`` ratio divides (:mod:`zarr_vectors.formats.bins`,
        docs/guides/pyramids.md).  Levels keeping under 1% of level 0 draw a
        :class:`~zarr_vectors.errors.ZVUserWarning`.
    pyramid
        Bin ratios of coarser levels to build after level 0, e.g. ``[(2, 2, 2), (4, 4, 4)]``.
    overwrite
        Replace an existing store.
    streaming
        Stream through :func:`~zarr_vectors.open_writer` (LAS/LAZ, TRK, TCK, TRX); None: only
        above :data:`STREAMING_THRESHOLD` vertices.
    batch_size
        Vertices per streamed batch.
    progress
        Receiver of progress reports.
    compressor
        ``"default"``/``"lz4"`` (Blosc-LZ4 payload blocks) or ``"zstd"`` (see
        docs/performance.md).
    keep_order
        Store each element's input position so that :func:`export` writes the file's element
        order back (points, mesh vertices and faces, graph nodes and edges; docs/spec.md
        §8.8); False stores no index and export writes storage order.
    **options
        Format options (``columns=("x", "y", "z")`` for CSV and Parquet; ``FormatInfo.options``
        names those of each format).

    Returns
    -------
    ConvertReport
        Shapes used, the level-0 summary and the pyramid levels.

    Raises
    ------
    InvalidInputError
        Unknown extension, a keyword neither :func:`convert` nor the format takes (naming it,
        before the file is read), a bad store keyword value, or data the store cannot hold.
    MissingDependencyError
        The format's library is not installed.
    StoreExistsError
        ``store`` exists and ``overwrite`` is False.
    """
    report = progress or NullProgress()
    info = format_for(source)
    _refuse_unknown_options(info, options)
    # the layout keywords are checked now: chunk_shape may only be chosen once the file is read
    StoreOptions.from_kwargs(
        chunk_shape=(1.0,) if chunk_shape is None else chunk_shape,
        bin_shape=bin_shape,
        overwrite=overwrite,
        compressor=compressor,
    )
    refuse_overlap(source, store, "convert")
    with open_source(source, **options) as src:
        chosen = chunk_shape is None
        partition = 1
        if chunk_shape is None:
            extent = src.extent()
            chunk = suggest_chunk_shape(extent, _chunk_target(src.geometry_type))
            spanned = _chunks_spanned(extent, chunk)
            partition = spill_partition(extent.n_vertices, spanned, len(chunk))
            report.note(
                f"chunk shape {_fmt(chunk)} from the data extent: {extent.n_vertices:,} vertices "
                f"over {spanned:,} chunks of the bounding box"
            )
        else:
            chunk = tuple(float(c) for c in chunk_shape)
        opts = WriteOptions(
            chunk_shape=chunk,
            bin_shape=None if bin_shape is None else tuple(float(b) for b in bin_shape),
            overwrite=overwrite,
            streaming=streaming,
            batch_size=batch_size,
            compressor=compressor,
            partition_chunks=partition,
            keep_order=keep_order,
        )
        if opts.bin_shape is None:
            opts = replace(opts, bin_shape=_pick_bin_shape(src, opts, pyramid))
            report.note(
                f"bin shape {_fmt(opts.bin_shape or ())} from the data (docs/guides/pyramids.md)"
            )
        summary = src.write(store, opts, report)
        dropped = tuple(src.dropped())
        for line in dropped:
            report.note(f"not carried by the store: {line}")
    levels: list[PyramidLevel] = []
    if pyramid:
        report.start(f"building {len(pyramid)} pyramid level(s)", None)
        with editable(store) as target:
            levels = build_pyramid(target, [tuple(r) for r in pyramid])
        warn_sparse_levels(summary.vertex_count, levels)
    bins = opts.bin_shape or chunk
    return ConvertReport(info.name, chunk, bins, chosen, summary, levels, dropped)


_CONVERT_KEYWORDS = tuple(
    name
    for name, p in inspect.signature(convert).parameters.items()
    if p.kind is inspect.Parameter.KEYWORD_ONLY
)
"""Keyword parameters of :func:`convert` (offered when a format option is misspelt)."""


def _refuse_unknown_options(info: FormatInfo, options: Mapping[str, Any]) -> None:
    """Raise when ``options`` holds a keyword that neither :func:`convert` nor ``info`` takes."""
    for name in options:
        if name in info.options:
            continue
        known = sorted({*_CONVERT_KEYWORDS, *info.options})
        near = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        takes = ", ".join(info.options) or "no format options"
        raise InvalidInputError(
            f"convert() takes no keyword {name!r} ({hint}{info.name} files take {takes})"
        )


MEASURE_LIMIT = 2_000_000
"""Inputs with at most this many vertices (and not streamed) have their default bin shape
measured on the vertices (:func:`~zarr_vectors.formats.bins.measured_bin_shape`): they are
written once to memory first.  Larger ones use the mean step of curves (streamlines,
:func:`~zarr_vectors.formats.bins.curve_bin_shape`) or else the bounding box
(:func:`~zarr_vectors.formats.bins.extent_bin_shape`)."""


def _pick_bin_shape(
    src: Source, opts: WriteOptions, pyramid: Sequence[Sequence[int]]
) -> tuple[float, ...]:
    """Return the default level-0 bin of ``src`` (see :mod:`zarr_vectors.formats.bins`)."""
    extent = src.extent()
    chunk = opts.chunk_shape
    if extent.n_vertices > MEASURE_LIMIT or opts.stream(extent.n_vertices):
        step = src.mean_step()
        if step is not None:
            return curve_bin_shape(step, chunk, pyramid)
        return extent_bin_shape(extent.min, extent.max, extent.n_vertices, chunk, pyramid)
    scratch = MemoryStore()
    src.write(scratch, replace(opts, bin_shape=chunk, overwrite=True), NullProgress())
    reader = LevelReader(open_store(scratch, mode="r"), 0)
    positions = reader.rows(L.VERTICES, reader.chunks()).values
    return measured_bin_shape(positions, chunk, pyramid)


@contextmanager
def editable(store: StoreLike) -> Iterator[StoreLike]:
    """Yield a writable form of ``store`` for adding levels.

    Zip entries cannot be rewritten, so a ``.zip`` path is unpacked into a directory beside it
    and packed into a new zip that replaces the old one when the block succeeds (on failure the
    zip is untouched).  Any other store is yielded as it is.
    """
    if not isinstance(store, str | os.PathLike) or Path(store).suffix.lower() != ".zip":
        yield store
        return
    zip_path = Path(store)
    tag = uuid.uuid4().hex[:8]
    work = zip_path.with_name(f".{zip_path.name}.zv-edit-{tag}")
    packed = zip_path.with_name(f".{zip_path.name}.zv-pack-{tag}")
    try:
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall(work)
        yield os.fspath(work)
        with zipfile.ZipFile(packed, "w", zipfile.ZIP_STORED) as zf:
            for f in sorted(p for p in work.rglob("*") if p.is_file()):
                zf.write(f, f.relative_to(work).as_posix())
        os.replace(packed, zip_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        packed.unlink(missing_ok=True)


PARTITION_VERTICES = 2_000_000
"""Vertices a spill partition of a streamed conversion holds on average at most."""


def spill_partition(n_vertices: int, chunks: int, ndim: int) -> int:
    """Chunks per axis of a streaming spill partition: about :data:`PARTITION_VERTICES` each.

    A partition is one spill file per batch and field, loaded whole when the store is
    written: one-chunk partitions would make a large streamed conversion write many thousands
    of small spill files, each with its own fixed cost.  ``chunks`` are the chunks of the
    bounding box (empty ones too, so the average undercounts busy chunks); at most 8.

    Examples
    --------
    >>> spill_partition(10_000_000, 252, 3), spill_partition(10**9, 8000, 3), spill_partition(0, 1, 2)
    (3, 2, 8)
    """
    per_chunk = n_vertices / max(chunks, 1)
    if per_chunk <= 0:
        return 8
    side = (PARTITION_VERTICES / per_chunk) ** (1.0 / max(ndim, 1))
    return int(min(8, max(1, math.floor(side))))


def _chunks_spanned(extent: Extent, chunk: Sequence[float]) -> int:
    lo = np.floor(np.divide(extent.min, chunk))
    hi = np.floor(np.divide(extent.max, chunk))
    return int(np.prod(hi - lo + 1))


def _fmt(values: Sequence[float]) -> str:
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"


def export(
    store: StoreLike,
    path: PathLike,
    *,
    level: int = 0,
    progress: Progress | None = None,
    **options: Any,
) -> FormatInfo:
    """Write one level of a store to a foreign file, choosing the format from the extension.

    ``options`` go to the format's exporter (SWC: ``object_id``, the skeleton to write).

    Returns
    -------
    FormatInfo
        The format written.

    Raises
    ------
    InvalidInputError
        Unknown extension, a store whose geometry type the format cannot hold, or an option
        the format does not take.
    MissingDependencyError
        The format's library is not installed.
    """
    gtype = store_metadata(store).geometry_type
    info = format_for_store(path, gtype)
    if type_spec(gtype).family_name not in info.exports:
        allowed = " or ".join(repr(g.value) for g in info.exports)
        raise InvalidInputError(
            f"the store holds {str(gtype)!r}; {info.name} files hold {allowed} geometry"
        )
    given = {k: v for k, v in options.items() if v is not None}
    unknown = sorted(set(given) - set(info.export_options))
    if unknown:
        raise InvalidInputError(f"{info.name} export takes no option {', '.join(unknown)}")
    exporter = getattr(load_format(info), info.exporter)
    exporter(store, path, level=level, progress=progress, **given)
    return info


def custom_section(meta: RootMetadata, key: str) -> Mapping[str, Any] | None:
    """Return ``custom_metadata[key]`` when it is a mapping, else None."""
    section = (meta.custom_metadata or {}).get(key)
    return section if isinstance(section, Mapping) else None
