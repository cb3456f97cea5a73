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

Reading: TRK and TCK go through the vectorised readers :class:`TrkReader` and
:class:`TckReader` (bodies memory-mapped, one tight loop over TRK streamline counts, vertices
gathered by fancy indexing), which return what ``nibabel.streamlines.load`` returns, float32
coordinates bit for bit, several times faster (nibabel reads each streamline with its own
``file.read``); unlike nibabel they keep empty streamlines.  Above
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
from typing import Any, ClassVar

import nibabel
import nibabel.streamlines.tractogram
import numpy as np
import numpy.typing as npt
import trx.trx_file_memmap as tmm  # type: ignore[import-untyped, unused-ignore]

from zarr_vectors.core.chunking import axis_bounds
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats._tractfiles import (
    TckReader,
    TractData,
    TrkReader,
    read_tck,
    read_trk,
    write_tck,
    write_trk,
)
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
from zarr_vectors.types.polylines import (
    Polylines,
    path_parts,
    read_polylines,
    write_path_parts,
)

__all__ = [
    "StreamlineBatch",
    "TckReader",
    "TckSource",
    "TractData",
    "TrkReader",
    "TrkSource",
    "TrxSource",
    "open_tck",
    "open_trk",
    "open_trx",
    "read_tck",
    "read_trk",
    "store_to_tck",
    "store_to_trk",
    "store_to_trx",
]

# nibabel's streamline API is unannotated; mypy --strict rejects calls into it unless typed Any
nib: Any = nibabel
Tractogram: Any = nibabel.streamlines.tractogram.Tractogram

IntArray = npt.NDArray[np.int64]
_TRK_SPACE = ("dimensions", "voxel_sizes", "voxel_to_rasmm", "voxel_order", "origin")
_TCK_INTERNAL = frozenset({"count", "file"})
_TRK_KEPT = (
    "reserved",
    "pad2",
    "image_orientation_patient",
    "pad1",
    "invert_x",
    "invert_y",
    "invert_z",
    "swap_xy",
    "swap_yz",
    "swap_zx",
    "version",
    "endianness",
)
"""TRK header fields besides the space that nibabel exposes and export writes back."""


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


def _columns(names: Iterable[str], taken: set[str]) -> list[dict[str, Any]]:
    """Name mapping ``[{name, attribute}]`` for data arrays with arbitrary names."""
    return [{"name": k, "attribute": identifier(k, taken)} for k in names]


def _squeeze(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    out = values[:, 0] if values.ndim == 2 and values.shape[1] == 1 else values
    return np.ascontiguousarray(out)


def _as_2d(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return values.reshape(len(values), -1)


# -- sources --------------------------------------------------------------------------------


STEP_SAMPLE_BLOCKS = 16
"""Runs of streamlines sampled by :meth:`_StreamlineSource.mean_step`."""
STEP_SAMPLE_STREAMLINES = 64
"""Consecutive streamlines per sampled run."""


class _StreamlineSource(Source):
    """Shared writing of streamline sources that gather batches by streamline range."""

    geometry_type = GeometryTypeName.STREAMLINE
    format_name: ClassVar[str]
    offsets: IntArray
    """(n + 1,) vertex offsets of every streamline in the file."""

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self._all: StreamlineBatch | None = None
        self._extent: Extent | None = None
        self._bounds: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None
        """``axis_bounds`` of the cached streamlines' positions, once measured."""

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
        self._bounds = None

    def mean_step(self) -> float | None:
        """Mean distance between consecutive vertices of a streamline (mm), on a sample.

        :data:`STEP_SAMPLE_BLOCKS` runs of :data:`STEP_SAMPLE_STREAMLINES` consecutive
        streamlines spread evenly over the file; None when they have no segment.
        """
        n = len(self.offsets) - 1
        firsts = np.linspace(0, max(n - STEP_SAMPLE_STREAMLINES, 0), STEP_SAMPLE_BLOCKS)
        total, count = 0.0, 0
        for a in np.unique(firsts.astype(np.int64)).tolist() if n else []:
            b = min(a + STEP_SAMPLE_STREAMLINES, n)
            if self._all is not None:
                lo, hi = int(self.offsets[a]), int(self.offsets[b])
                pos, offsets = self._all.positions[lo:hi], self.offsets[a : b + 1] - lo
            else:
                got = self.batch(a, b)
                pos, offsets = got.positions, got.offsets
            steps = np.linalg.norm(np.diff(pos.astype(np.float64), axis=0), axis=1)
            inside = np.ones(len(steps), dtype=bool)
            inside[offsets[1:-1][(offsets[1:-1] > 0) & (offsets[1:-1] <= len(steps))] - 1] = False
            total += float(steps[inside].sum())
            count += int(np.count_nonzero(inside))
        return total / count if count else None

    def extent(self) -> Extent:
        """Return the vertex count and the exact bounding box (one pass over the file, kept)."""
        if self._extent is None:
            self._extent = self._measure_extent()
        return self._extent

    def _measure_extent(self) -> Extent:
        """Compute :meth:`extent` from the vertices."""
        if self.n_vertices == 0:
            return Extent.of(np.zeros((0, 3), np.float32))
        if self.n_vertices <= STREAMING_THRESHOLD:
            lo, hi = self._bounds = axis_bounds(self.everything().positions)
        else:
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            for a, b in self.ranges(5_000_000):
                pos = self.batch(a, b).positions
                if len(pos):
                    b_lo, b_hi = axis_bounds(pos)
                    lo, hi = np.minimum(lo, b_lo), np.maximum(hi, b_hi)
        return Extent(tuple(lo.tolist()), tuple(hi.tolist()), self.n_vertices)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the streamlines to a new store, streaming above the threshold."""
        report = progress or NullProgress()
        store_kwargs = options.store(
            coordinate_system="RAS",
            axis_units="millimeter",
            custom_metadata={self.format_name: self.metadata()},
            source_description=f"{self.format_name.upper()} tractogram: {self.path.name}",
        )
        if not options.stream(self.n_vertices):
            report.start(f"reading {self.path.name}", None)
            b = self.everything()
            report.start("writing store", None)
            parts = path_parts(
                b.positions,
                b.offsets,
                b.attributes,
                b.object_attributes,
                None,
                b.groups or None,
                None,
                finite=False,
            )
            # the extent measured to choose the chunk shape: the write need not scan again
            return write_path_parts(
                store,
                GeometryTypeName.STREAMLINE,
                parts,
                store_kwargs,
                self.type_metadata(),
                extent=self._bounds,
            )
        kwargs: dict[str, Any] = {**store_kwargs, "type_metadata": self.type_metadata()}
        writer = open_writer(
            store, "streamline", partition_chunks=options.partition_chunks, **kwargs
        )
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


class TrkSource(_StreamlineSource):
    """A TrackVis file opened for conversion (read with :class:`TrkReader`)."""

    format_name = "trk"

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.reader = TrkReader(self.path)
        self.header = self.reader.header.fields
        self.offsets = self.reader.offsets
        self._scalar_names = _columns((n for n, _ in self.reader.header.scalars), set())
        self._property_names = _columns((n for n, _ in self.reader.header.properties), set())

    def batch(self, start: int, stop: int) -> StreamlineBatch:
        """Gather streamlines ``start:stop``, coordinates mapped to RAS+ mm."""
        return _batch(self.reader.read(start, stop), self._scalar_names, self._property_names)

    def metadata(self) -> dict[str, Any]:
        """Return the TRK space and the scalar and property name mappings."""
        out = {k: _jsonable(self.header[k]) for k in _TRK_SPACE if k in self.header}
        out["header"] = {k: _jsonable(self.header[k]) for k in _TRK_KEPT if k in self.header}
        out["scalars"] = self._scalar_names
        out["properties"] = self._property_names
        return out

    def close(self) -> None:
        """Drop the cached streamlines and release the file."""
        super().close()
        self.reader.close()


def _batch(
    data: TractData, scalars: list[dict[str, Any]], properties: list[dict[str, Any]]
) -> StreamlineBatch:
    """Name the data of a read batch after the attribute mappings."""
    attrs = {m["attribute"]: _squeeze(data.data_per_point[m["name"]]) for m in scalars}
    obj = {m["attribute"]: _squeeze(data.data_per_streamline[m["name"]]) for m in properties}
    return StreamlineBatch(data.positions, data.offsets, attrs, obj)


class TckSource(_StreamlineSource):
    """An MRtrix TCK file opened for conversion (read with :class:`TckReader`)."""

    format_name = "tck"

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.reader = TckReader(self.path)
        self.header = self.reader.header.fields
        self.offsets = self.reader.offsets

    def batch(self, start: int, stop: int) -> StreamlineBatch:
        """Gather streamlines ``start:stop`` (TCK holds coordinates only)."""
        return _batch(self.reader.read(start, stop), [], [])

    def metadata(self) -> dict[str, Any]:
        """Return the text fields of the TCK header (less ``count``, ``datatype``, ``file``)."""
        return {k: v for k, v in self.header.items() if k not in _TCK_INTERNAL}

    def type_metadata(self) -> dict[str, Any]:
        """``step_size`` (mm) from the header, when it is a number."""
        try:
            return {"step_size": float(self.header["step_size"]), "step_size_unit": "millimeter"}
        except (KeyError, TypeError, ValueError):
            return {}

    def close(self) -> None:
        """Drop the cached streamlines and release the file."""
        super().close()
        self.reader.close()


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
    pos = _positions_3d(pl)
    return Tractogram(
        _split(pos, pl.offsets),
        data_per_point={k: _split(v.astype(np.float32), pl.offsets) for k, v in dpp.items()},
        data_per_streamline={k: v.astype(np.float32) for k, v in dps.items()},
        affine_to_rasmm=np.eye(4),
    )


def _positions_3d(pl: Polylines) -> npt.NDArray[np.float32]:
    """Return the vertices as float32, refusing stores that are not 3-D."""
    pos = np.asarray(pl.positions, np.float32)
    if pos.shape[1] != 3:
        raise InvalidInputError(f"tractography files hold 3-D streamlines, not {pos.shape[1]}-D")
    return pos


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
    kept = (trk or {}).get("header")
    if isinstance(kept, Mapping):
        header.update({k: _trk_value(k, v) for k, v in kept.items() if k in _TRK_KEPT})
    report.start(f"writing {path}", None)
    offsets = np.asarray(pl.offsets, np.int64)
    write_trk(path, TractData(_positions_3d(pl), offsets, dpp, dps), header)


def _trk_value(key: str, value: Any) -> Any:
    """Return a stored TRK header value as the header takes it (text as latin-1 bytes)."""
    return value.encode("latin1") if isinstance(value, str) and key != "endianness" else value


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
    write_tck(path, _positions_3d(pl), np.asarray(pl.offsets, np.int64), header)


def _trx_groups(pl: Polylines) -> dict[str, npt.NDArray[np.uint32]]:
    index = {int(i): k for k, i in enumerate(np.asarray(pl.object_ids).tolist())}
    return {
        name: np.asarray([index[int(i)] for i in np.asarray(ids).tolist()], np.uint32)
        for name, ids in pl.groups.items()
    }


def _trx_from_tractogram(tg: Any, reference: Any, dtypes: Any) -> Any:
    """``TrxFile.from_tractogram`` without its stray ResourceWarning.

    trx-python 0.6 saves the tractogram into a temporary directory it does not keep a handle
    to: the directory is removed (the returned file's memory maps stay valid) as the call
    returns, and Python warns "Implicitly cleaning up <TemporaryDirectory ...>" on every
    export.  The cleanup is the intended one, so exactly that warning is silenced here.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Implicitly cleaning up", category=ResourceWarning
        )
        return tmm.TrxFile.from_tractogram(tg, reference=reference, dtype_dict=dtypes)


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
    out = _trx_from_tractogram(tg, reference, dtypes)
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
