"""Tractography files (TrackVis ``.trk``, MRtrix ``.tck``, ``.trx``) <-> ``streamline`` stores.

Needs ``nibabel`` and ``trx-python`` (the ``formats`` extra).

Coordinates are stored in RAS+ millimetres (``coordinate_system = "RAS"``), float32, exactly as
``nibabel.streamlines.load`` returns them; the file's space (TRK ``voxel_to_rasmm``,
``dimensions``, ``voxel_sizes``, ``voxel_order``; TRX ``VOXEL_TO_RASMM`` and ``DIMENSIONS``;
the TCK header fields) goes to ``custom_metadata["trk" | "tck" | "trx"]`` so the exporters write
an equivalent header.  TRK per-point scalars and TRX ``dpv`` become per-vertex attributes, TRK
properties and TRX ``dps`` object attributes, TRX groups store groups (with ``dpg`` kept in the
metadata); names are made identifiers and the original names kept in the metadata.  A TCK
``step_size`` becomes the root ``step_size``.

Reading: nibabel parses the headers; the bodies are memory-mapped and gathered with numpy
(nibabel's own readers loop over streamlines in Python, about 1 µs per point), so converting a
TRK file takes less time than ``nibabel.streamlines.load`` alone.  The TRK coordinate transform is
``nibabel.affines.apply_affine`` with nibabel's own ``get_affine_trackvis_to_rasmm``.  Above
:data:`~zarr_vectors.formats.registry.STREAMING_THRESHOLD` vertices (or with ``streaming=True``)
batches of streamlines go through :func:`~zarr_vectors.open_writer`, so memory stays bounded.
Writing goes through nibabel (TRK, TCK) and trx-python (TRX).
"""

from __future__ import annotations

import abc
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import nibabel
import nibabel.streamlines.tck
import nibabel.streamlines.tractogram
import nibabel.streamlines.trk
import numpy as np
import numpy.typing as npt
import trx.trx_file_memmap as tmm  # type: ignore[import-untyped, unused-ignore]
from nibabel.streamlines.tractogram_file import DataError, HeaderError

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats.registry import (
    STREAMING_THRESHOLD,
    Extent,
    NullProgress,
    PathLike,
    Progress,
    Source,
    WriteOptions,
    custom_section,
    identifier,
    store_metadata,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.streaming import open_writer
from zarr_vectors.types.polylines import Polylines, read_polylines, write_polylines

__all__ = [
    "StreamlineBatch",
    "TckSource",
    "TrkSource",
    "TrxSource",
    "open_tck",
    "open_trk",
    "open_trx",
    "store_to_tck",
    "store_to_trk",
    "store_to_trx",
]

# nibabel's streamline API is unannotated; mypy --strict rejects calls into it unless typed Any
nib: Any = nibabel
_trk: Any = nibabel.streamlines.trk
TckFile: Any = nibabel.streamlines.tck.TckFile
TrkFile: Any = _trk.TrkFile
Tractogram: Any = nibabel.streamlines.tractogram.Tractogram

IntArray = npt.NDArray[np.int64]
_TRK_BODY = 1000  # bytes of the TRK header
_TRK_SPACE = ("dimensions", "voxel_sizes", "voxel_to_rasmm", "voxel_order", "origin")
_TCK_INTERNAL = frozenset(
    {"magic_number", "count", "datatype", "file", "endianness", "_dtype", "_offset_data"}
)
_SCAN_ROWS = 1 << 24


@dataclass(frozen=True)
class StreamlineBatch:
    """Consecutive streamlines with their data, coordinates in RAS+ mm."""

    positions: npt.NDArray[np.floating]
    """(N, 3) vertices of the batch."""
    offsets: IntArray
    """(n + 1,) streamline i is ``positions[offsets[i]:offsets[i + 1]]``."""
    attributes: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-vertex values by attribute name."""
    object_attributes: dict[str, npt.NDArray[Any]] = field(default_factory=dict)
    """Per-streamline values by attribute name."""
    groups: dict[str, IntArray] = field(default_factory=dict)
    """Group name -> indices of member streamlines within the batch."""


def _memmap(path: Path, dtype: Any, offset: int, count: int) -> npt.NDArray[Any]:
    """Read-only map of ``count`` items at ``offset`` (an empty array when there are none)."""
    if count <= 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(count,))


def _header(path: Path, kind: str) -> dict[str, Any]:
    """Parse a TRK or TCK header with nibabel (lazily: no streamline is read)."""
    try:
        return dict(nib.streamlines.load(path, lazy_load=True).header)
    except (HeaderError, DataError) as exc:
        raise InvalidInputError(f"{path}: not a valid {kind} file: {exc}") from exc


def _apply_affine(affine: npt.NDArray[Any], pts: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """``nibabel.affines.apply_affine`` in float64, column by column, returned as float32.

    Same numbers as nibabel (which builds an (N, 3) float64 product in one go) several times
    faster on strided float32 input.
    """
    aff = np.asarray(affine, np.float64)
    out = np.empty(pts.shape, np.float32)
    cols = [pts[:, j].astype(np.float64) for j in range(pts.shape[1])]
    for i in range(pts.shape[1]):
        acc = np.full(len(pts), aff[i, -1])
        for j, col in enumerate(cols):
            if aff[i, j] != 0:
                acc += col * aff[i, j]
        out[:, i] = acc
    return out


def _columns(names: Iterable[str], taken: set[str]) -> list[dict[str, Any]]:
    """Name mapping ``[{name, attribute}]`` for data arrays with arbitrary names."""
    return [{"name": k, "attribute": identifier(k, taken)} for k in names]


def _squeeze(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return values[:, 0] if values.ndim == 2 and values.shape[1] == 1 else values


def _as_2d(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return values.reshape(len(values), -1)


# -- sources --------------------------------------------------------------------------------


class _StreamlineSource(Source):
    """Shared writing of streamline sources that gather batches by streamline range."""

    geometry_type = GeometryTypeName.STREAMLINE
    format_name: ClassVar[str]
    offsets: IntArray
    """(n + 1,) vertex offsets of every streamline in the file."""

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self._all: StreamlineBatch | None = None

    @abc.abstractmethod
    def batch(self, start: int, stop: int) -> StreamlineBatch:
        """Gather streamlines ``start:stop``."""

    @abc.abstractmethod
    def metadata(self) -> dict[str, Any]:
        """Return the header section kept in ``custom_metadata[format_name]``."""

    def type_metadata(self) -> dict[str, Any]:
        """Tractography root keys (``step_size``)."""
        return {}

    @property
    def n_vertices(self) -> int:
        """Vertices in the file."""
        return int(self.offsets[-1])

    def ranges(self, batch_size: int) -> Iterator[tuple[int, int]]:
        """Streamline ranges of about ``batch_size`` vertices each."""
        n = len(self.offsets) - 1
        start = 0
        while start < n:
            target = self.offsets[start] + max(1, batch_size)
            stop = max(start + 1, int(np.searchsorted(self.offsets, target, side="right")) - 1)
            yield start, min(stop, n)
            start = min(stop, n)

    def everything(self) -> StreamlineBatch:
        """Gather every streamline (cached until :meth:`close`)."""
        if self._all is None:
            self._all = self.batch(0, len(self.offsets) - 1)
        return self._all

    def close(self) -> None:
        """Drop the cached streamlines."""
        self._all = None

    def extent(self) -> Extent:
        """Return the vertex count and the exact bounding box (one pass over the file)."""
        if self.n_vertices <= STREAMING_THRESHOLD:
            return Extent.of(self.everything().positions)
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for a, b in self.ranges(5_000_000):
            pos = self.batch(a, b).positions
            if len(pos):
                lo = np.minimum(lo, pos.min(axis=0))
                hi = np.maximum(hi, pos.max(axis=0))
        return Extent(tuple(lo.tolist()), tuple(hi.tolist()), self.n_vertices)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the streamlines to a new store, streaming above the threshold."""
        report = progress or NullProgress()
        kwargs: dict[str, Any] = {
            "chunk_shape": options.chunk_shape,
            "bin_shape": options.bin_shape,
            "overwrite": options.overwrite,
            "coordinate_system": "RAS",
            "axis_units": "millimeter",
            "custom_metadata": {self.format_name: self.metadata()},
            "source_description": f"{self.format_name.upper()} tractogram: {self.path.name}",
            "type_metadata": self.type_metadata(),
        }
        if not options.stream(self.n_vertices):
            report.start(f"reading {self.path.name}", None)
            b = self.everything()
            report.start("writing store", None)
            return write_polylines(
                store,
                b.positions,
                offsets=b.offsets,
                geometry_type="streamline",
                attributes=b.attributes,
                object_attributes=b.object_attributes,
                groups=b.groups or None,
                **kwargs,
            )
        writer = open_writer(store, "streamline", **kwargs)
        try:
            report.start(f"reading {self.path.name}", self.n_vertices)
            for a, z in self.ranges(options.batch_size):
                b = self.batch(a, z)
                writer.append(
                    b.positions,
                    offsets=b.offsets,
                    attributes=b.attributes,
                    object_attributes=b.object_attributes,
                    groups=b.groups or None,
                )
                report.advance(len(b.positions))
            report.start("writing store", None)
            return writer.close()
        except BaseException:
            writer.abort()
            raise


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | np.bytes_):
        return bytes(value).decode("latin1").rstrip("\x00")
    if isinstance(value, np.ndarray | np.generic):
        return _jsonable(value.tolist())
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _named_slices(names: Any, total: int, fallback: str) -> list[tuple[str, slice]]:
    """Decode TRK ``scalar_name``/``property_name`` into slices, as nibabel does."""
    out: list[tuple[str, slice]] = []
    cpt = 0
    for encoded in names:
        name, count = _trk.decode_value_from_name(encoded)
        if count:
            out.append((name, slice(cpt, cpt + count)))
            cpt += count
    if cpt < total:
        out.append((fallback, slice(cpt, total)))
    return out


class TrkSource(_StreamlineSource):
    """A TrackVis file opened for conversion: header parsed, body memory-mapped and indexed."""

    format_name = "trk"

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.header = _header(self.path, "TRK")
        endian = str(self.header["endianness"])
        offset = int(self.header.get("_offset_data", _TRK_BODY))
        size = self.path.stat().st_size - offset
        if size % 4:
            raise InvalidInputError(f"{self.path}: TRK body is truncated ({size} bytes)")
        self._ints = _memmap(self.path, endian + "i4", offset, size // 4)
        self._floats = _memmap(self.path, endian + "f4", offset, size // 4)
        self.n_scalars = int(self.header["nb_scalars_per_point"])
        self.n_properties = int(self.header["nb_properties_per_streamline"])
        self.affine = _trk.get_affine_trackvis_to_rasmm(self.header)
        self._starts, counts = self._index()
        self.offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self.scalars = _named_slices(self.header["scalar_name"], self.n_scalars, "scalars")
        self.properties = _named_slices(
            self.header["property_name"], self.n_properties, "properties"
        )
        self._scalar_names = _columns((n for n, _ in self.scalars), set())
        self._property_names = _columns((n for n, _ in self.properties), set())

    def _index(self) -> tuple[IntArray, IntArray]:
        """Word index of each streamline's first point, and point counts (one Python loop)."""
        words = self._ints
        stride, extra = 3 + self.n_scalars, self.n_properties
        starts: list[int] = []
        counts: list[int] = []
        pos, end = 0, len(words)
        while pos < end:
            count = int(words[pos])
            if count < 0:
                raise InvalidInputError(f"{self.path}: corrupt TRK body at byte {4 * pos}")
            starts.append(pos + 1)
            counts.append(count)
            pos += 1 + count * stride + extra
        if pos != end:
            raise InvalidInputError(f"{self.path}: TRK body is truncated")
        return np.asarray(starts, np.int64), np.asarray(counts, np.int64)

    def batch(self, start: int, stop: int) -> StreamlineBatch:
        """Gather streamlines ``start:stop``, coordinates mapped to RAS+ mm."""
        stride, extra = 3 + self.n_scalars, self.n_properties
        off = self.offsets[start : stop + 1]
        counts = np.diff(off)
        starts = self._starts[start:stop]
        if stop <= start:
            return StreamlineBatch(np.zeros((0, 3), np.float32), np.zeros(1, np.int64))
        lo = int(starts[0]) - 1
        hi = int(starts[-1] + counts[-1] * stride + extra)
        words = np.asarray(self._floats[lo:hi])
        keep = np.ones(hi - lo, dtype=bool)
        keep[starts - 1 - lo] = False
        prop_rows = (starts + counts * stride - lo)[:, None] + np.arange(extra)
        keep[prop_rows.ravel()] = False
        block = words[keep].reshape(-1, stride)
        pos = _apply_affine(self.affine, block[:, :3])
        attrs = {
            m["attribute"]: _squeeze(block[:, 3 + s.start : 3 + s.stop].astype(np.float32))
            for m, (_, s) in zip(self._scalar_names, self.scalars, strict=True)
        }
        props = words[prop_rows].astype(np.float32)
        obj = {
            m["attribute"]: _squeeze(props[:, s])
            for m, (_, s) in zip(self._property_names, self.properties, strict=True)
        }
        return StreamlineBatch(pos, off - off[0], attrs, obj)

    def metadata(self) -> dict[str, Any]:
        """Return the TRK space and the scalar and property name mappings."""
        out = {k: _jsonable(self.header[k]) for k in _TRK_SPACE if k in self.header}
        out["scalars"] = self._scalar_names
        out["properties"] = self._property_names
        return out


class TckSource(_StreamlineSource):
    """An MRtrix TCK file opened for conversion: header parsed, body memory-mapped."""

    format_name = "tck"

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.header = _header(self.path, "TCK")
        dtype = np.dtype(self.header["_dtype"])
        offset = int(self.header["_offset_data"])
        n = (self.path.stat().st_size - offset) // (3 * dtype.itemsize)
        self._rows = _memmap(self.path, dtype, offset, 3 * n).reshape(n, 3)
        self._separators = self._scan()
        n_sep = len(self._separators)
        counts = np.diff(np.append(-1, self._separators)) - 1
        self.offsets = np.zeros(n_sep + 1, dtype=np.int64)
        np.cumsum(counts, out=self.offsets[1:])

    def _scan(self) -> IntArray:
        """Rows of the NaN delimiters before the first infinite (end-of-file) row."""
        seps: list[IntArray] = []
        for lo in range(0, len(self._rows), _SCAN_ROWS):
            x = np.asarray(self._rows[lo : lo + _SCAN_ROWS, 0])
            ends = np.flatnonzero(np.isinf(x))
            if ends.size:
                x = x[: ends[0]]
            seps.append(np.flatnonzero(np.isnan(x)).astype(np.int64) + lo)
            if ends.size:
                break
        return np.concatenate(seps) if seps else np.zeros(0, np.int64)

    def batch(self, start: int, stop: int) -> StreamlineBatch:
        """Gather streamlines ``start:stop`` (TCK holds coordinates only)."""
        off = self.offsets[start : stop + 1]
        if stop <= start:
            return StreamlineBatch(np.zeros((0, 3), np.float32), np.zeros(1, np.int64))
        r0 = 0 if start == 0 else int(self._separators[start - 1]) + 1
        r1 = int(self._separators[stop - 1])
        block = np.asarray(self._rows[r0:r1])
        keep = np.ones(r1 - r0, dtype=bool)
        keep[self._separators[start : stop - 1] - r0] = False
        return StreamlineBatch(block[keep].astype(np.float32), off - off[0])

    def metadata(self) -> dict[str, Any]:
        """Return the text fields of the TCK header."""
        return {
            str(k): _jsonable(v)
            for k, v in self.header.items()
            if k not in _TCK_INTERNAL and isinstance(v, str | bytes)
        }

    def type_metadata(self) -> dict[str, Any]:
        """``step_size`` (mm) from the header, when it is a number."""
        try:
            return {"step_size": float(self.header["step_size"]), "step_size_unit": "millimeter"}
        except (KeyError, TypeError, ValueError):
            return {}


class TrxSource(_StreamlineSource):
    """A TRX file opened for conversion (trx-python memory-maps its arrays)."""

    format_name = "trx"

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        try:
            self.trx = tmm.load(str(self.path))
        except (zipfile.BadZipFile, KeyError) as exc:
            raise InvalidInputError(f"{self.path}: not a valid TRX file: {exc}") from exc
        seq = self.trx.streamlines
        self._positions = seq._data
        self.offsets = np.append(np.asarray(seq._offsets, np.int64), len(seq._data))
        self._dpv = _columns(self.trx.data_per_vertex, set())
        self._dps = _columns(self.trx.data_per_streamline, set())
        self._groups = {str(k): np.asarray(v, np.int64) for k, v in self.trx.groups.items()}

    def batch(self, start: int, stop: int) -> StreamlineBatch:
        """Gather streamlines ``start:stop`` with their dpv, dps and group membership."""
        off = self.offsets[start : stop + 1]
        a, z = int(off[0]), int(off[-1])
        attrs = {
            m["attribute"]: _squeeze(np.asarray(self.trx.data_per_vertex[m["name"]]._data[a:z]))
            for m in self._dpv
        }
        obj = {
            m["attribute"]: _squeeze(
                np.asarray(self.trx.data_per_streamline[m["name"]][start:stop])
            )
            for m in self._dps
        }
        groups = {k: v[(v >= start) & (v < stop)] - start for k, v in self._groups.items()}
        pos = np.asarray(self._positions[a:z])
        return StreamlineBatch(pos, off - a, attrs, obj, groups)

    def metadata(self) -> dict[str, Any]:
        """TRX space, name mappings and the data per group."""
        dpg = {
            str(g): {
                str(k): {"dtype": str(np.asarray(v).dtype), "values": _jsonable(v)}
                for k, v in d.items()
            }
            for g, d in self.trx.data_per_group.items()
        }
        return {
            "VOXEL_TO_RASMM": _jsonable(self.trx.header["VOXEL_TO_RASMM"]),
            "DIMENSIONS": _jsonable(self.trx.header["DIMENSIONS"]),
            "dpv": self._dpv,
            "dps": self._dps,
            "dpg": dpg,
        }

    def close(self) -> None:
        """Close the TRX file (removes trx-python's temporary folder)."""
        super().close()
        self.trx.close()


def open_trk(path: PathLike) -> TrkSource:
    """Open a ``.trk`` file for conversion (see :class:`TrkSource`)."""
    return TrkSource(path)


def open_tck(path: PathLike) -> TckSource:
    """Open a ``.tck`` file for conversion (see :class:`TckSource`)."""
    return TckSource(path)


def open_trx(path: PathLike) -> TrxSource:
    """Open a ``.trx`` file (zip or directory) for conversion (see :class:`TrxSource`)."""
    return TrxSource(path)


# -- export ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Space:
    affine: npt.NDArray[np.float64]
    dimensions: tuple[int, ...]
    voxel_sizes: tuple[float, ...]
    voxel_order: str


def _space(meta: RootMetadata) -> _Space:
    """Return the reference space kept by the tractography format the store came from."""
    trk, trx = custom_section(meta, "trk"), custom_section(meta, "trx")
    if trk is not None and "voxel_to_rasmm" in trk:
        return _Space(
            np.asarray(trk["voxel_to_rasmm"], np.float64),
            tuple(int(v) for v in trk["dimensions"]),
            tuple(float(v) for v in trk["voxel_sizes"]),
            str(trk["voxel_order"]),
        )
    affine = np.asarray(trx["VOXEL_TO_RASMM"], np.float64) if trx is not None else np.eye(4)
    dims = tuple(int(v) for v in trx["DIMENSIONS"]) if trx is not None else (1, 1, 1)
    return _Space(
        affine,
        dims,
        tuple(float(v) for v in nib.affines.voxel_sizes(affine)),
        "".join(nib.orientations.aff2axcodes(affine)),
    )


def _names(section: Mapping[str, Any] | None, key: str) -> dict[str, str]:
    """Attribute name -> original name from a stored mapping."""
    if section is None:
        return {}
    return {str(m["attribute"]): str(m["name"]) for m in section.get(key, ())}


def _numeric(
    values: Mapping[str, npt.NDArray[Any]], names: Mapping[str, str], what: str
) -> dict[str, npt.NDArray[Any]]:
    out: dict[str, npt.NDArray[Any]] = {}
    for k, v in values.items():
        if v.dtype.kind not in "biuf":
            warnings.warn(f"{what}: skipping non-numeric attribute {k!r}", ZVUserWarning, 3)
            continue
        out[names.get(k, k)] = _as_2d(v)
    return out


def _split(values: npt.NDArray[Any], offsets: IntArray) -> list[npt.NDArray[Any]]:
    return np.split(values, offsets[1:-1]) if len(offsets) > 1 else []


def _tractogram(
    pl: Polylines, dpp: Mapping[str, npt.NDArray[Any]], dps: Mapping[str, npt.NDArray[Any]]
) -> Tractogram:
    pos = np.asarray(pl.positions, np.float32)
    if pos.shape[1] != 3:
        raise InvalidInputError(f"tractography files hold 3-D streamlines, not {pos.shape[1]}-D")
    return Tractogram(
        _split(pos, pl.offsets),
        data_per_point={k: _split(v.astype(np.float32), pl.offsets) for k, v in dpp.items()},
        data_per_streamline={k: v.astype(np.float32) for k, v in dps.items()},
        affine_to_rasmm=np.eye(4),
    )


def _read(store: StoreLike, level: int, report: Progress) -> tuple[RootMetadata, Polylines]:
    report.start("reading store", None)
    return store_metadata(store), read_polylines(store, level=level)


def store_to_trk(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write a streamline store to a TrackVis file (per-point and per-streamline data kept).

    Parameters
    ----------
    store
        A ``streamline`` or ``polyline`` store, coordinates in RAS+ mm.
    path
        Output ``.trk`` file.
    level
        Resolution level to write.
    progress
        Receiver of progress reports.
    """
    report = progress or NullProgress()
    meta, pl = _read(store, level, report)
    trk = custom_section(meta, "trk")
    space = _space(meta)
    dpp = _numeric(pl.attributes, _names(trk, "scalars"), "TRK export")
    dps = _numeric(pl.object_attributes, _names(trk, "properties"), "TRK export")
    header = {
        "voxel_to_rasmm": space.affine,
        "dimensions": np.asarray(space.dimensions),
        "voxel_sizes": np.asarray(space.voxel_sizes),
        "voxel_order": space.voxel_order,
    }
    report.start(f"writing {path}", None)
    TrkFile(_tractogram(pl, dpp, dps), header=header).save(str(path))


def store_to_tck(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write a streamline store to an MRtrix TCK file (coordinates only; header fields kept).

    Attributes are skipped with a :class:`~zarr_vectors.errors.ZVUserWarning`: TCK holds none.

    Parameters
    ----------
    store
        A ``streamline`` or ``polyline`` store, coordinates in RAS+ mm.
    path
        Output file.
    level
        Resolution level to write.
    progress
        Receiver of progress reports.
    """
    report = progress or NullProgress()
    meta, pl = _read(store, level, report)
    dropped = sorted({*pl.attributes, *pl.object_attributes})
    if dropped:
        warnings.warn(f"TCK holds no per-point data: skipping {dropped}", ZVUserWarning, 2)
    header: dict[str, Any] = dict(custom_section(meta, "tck") or {})
    step = meta.type_metadata.get("step_size")
    if step is not None and "step_size" not in header:
        header["step_size"] = f"{step:g}"
    report.start(f"writing {path}", None)
    TckFile(_tractogram(pl, {}, {}), header=header).save(str(path))


def _trx_groups(pl: Polylines) -> dict[str, npt.NDArray[np.uint32]]:
    index = {int(i): k for k, i in enumerate(np.asarray(pl.object_ids).tolist())}
    return {
        name: np.asarray([index[int(i)] for i in np.asarray(ids).tolist()], np.uint32)
        for name, ids in pl.groups.items()
    }


def store_to_trx(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write a streamline store to a TRX file: dpv, dps, groups and dpg as imported.

    Parameters
    ----------
    store
        A ``streamline`` or ``polyline`` store, coordinates in RAS+ mm.
    path
        Output file.
    level
        Resolution level to write.
    progress
        Receiver of progress reports.
    """
    report = progress or NullProgress()
    meta, pl = _read(store, level, report)
    trx_meta = custom_section(meta, "trx")
    space = _space(meta)
    dpv = _numeric(pl.attributes, _names(trx_meta, "dpv"), "TRX export")
    dps = _numeric(pl.object_attributes, _names(trx_meta, "dps"), "TRX export")
    report.start(f"writing {path}", None)
    reference = {
        "NB_VERTICES": len(pl.positions),
        "NB_STREAMLINES": len(pl),
        "VOXEL_TO_RASMM": space.affine.astype(np.float32),
        "DIMENSIONS": np.asarray(space.dimensions, np.uint16),
    }
    dtypes = {
        "positions": np.float32,
        "offsets": np.uint32,
        "dpv": {k: v.dtype for k, v in dpv.items()},
        "dps": {k: v.dtype for k, v in dps.items()},
    }
    tg = _tractogram(pl, dpv, dps)
    for k, v in dpv.items():  # _tractogram made float32; keep the stored dtypes
        tg.data_per_point[k] = _split(v, pl.offsets)
    for k, v in dps.items():
        tg.data_per_streamline[k] = v
    out = tmm.TrxFile.from_tractogram(tg, reference=reference, dtype_dict=dtypes)
    try:
        out.groups.update(_trx_groups(pl))
        for g, data in (trx_meta or {}).get("dpg", {}).items():
            if g in out.groups:
                out.data_per_group[g] = {
                    k: np.asarray(d["values"], dtype=d["dtype"]) for k, d in data.items()
                }
        tmm.save(out, str(path))
    finally:
        out.close()
