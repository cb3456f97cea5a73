"""ASPRS LAS/LAZ point clouds <-> ``point_cloud`` stores (LAS 1.0–1.4; LAZ through lazrs).

Needs ``laspy`` with a LAZ backend (the ``formats`` extra).

Mapping: positions are the scaled coordinates ``x = X · scale + offset`` (float64, so integer
coordinates come back exactly); every other point dimension of the point format — intensity,
return_number, number_of_returns, classification and its flags, scan angle, user data, point
source id, gps_time, red/green/blue, nir, extra bytes — becomes a per-point attribute named as
in laspy (extra-bytes names are made identifiers; scaled extra bytes are stored scaled).  The
header — version, point format, scales, offsets, system identifier, generating software,
creation date, global encoding, file source id, GUID, extra-bytes descriptions, extra header
and VLR bytes, the raw payloads of every VLR and EVLR in file order (base64), extra-bytes VLRs
included, and the header and record-header bytes laspy would write differently
(:mod:`._lasbytes`: padding, reserved fields, a zero creation date, counts by return and the
bounding box as the file had them) — goes to ``custom_metadata["las"]`` (FORMAT.md §3), so
:func:`store_to_las` writes back the same header, VLRs and EVLRs; uncompressed files come back
byte for byte.  Only the LASzip VLR is rebuilt (by laspy), so LAZ files come back equal point
for point but not byte for byte.  Internal waveform data packets are not carried (reported).
COPC files are read as the LAS 1.4 files they are; their
COPC info VLR and hierarchy EVLR describe a page layout the exporter does not rebuild, so they
are left out (:meth:`LasSource.dropped` says so) and the export is a plain LAS/LAZ 1.4 file.

A store from another source is written with the point format (0, 1, 2, 3, 6, 7 or 8) whose
dimensions cover most of its attribute names, a 0.001 scale (coarser when the extent needs it),
offsets at the floor of the bounding box, and every other numeric attribute as extra bytes.
``convert`` keeps the file's point order (``keep_order``), and export writes points in it;
stores without input order are written in storage order (chunk by chunk).

Large files stream: :class:`LasSource` reads ``chunk_iterator`` batches into
:func:`~zarr_vectors.open_writer`, and :func:`store_to_las` writes batches through a laspy
writer.  A store without input order is read chunk batch by chunk batch; one with it is read
whole first (input order is a permutation across all chunks), so exporting it holds the
level in memory.
"""

from __future__ import annotations

import base64
import datetime
import itertools
import math
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

import laspy  # type: ignore[import-untyped, unused-ignore]
import numpy as np
import numpy.typing as npt
from laspy.vlrs.vlrlist import VLRList  # type: ignore[import-untyped, unused-ignore]

from zarr_vectors.core.options import StoreKwargs
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats import _lasbytes
from zarr_vectors.formats.registry import (
    Extent,
    NullProgress,
    PathLike,
    PointBatch,
    Progress,
    Source,
    WriteOptions,
    custom_section,
    default_bin_shape,
    identifier,
    iter_point_batches,
    store_metadata,
    suggest_chunk_shape,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.streaming import open_writer
from zarr_vectors.types._order import INPUT_INDEX, input_index
from zarr_vectors.types.points import write_points

__all__ = [
    "KEY",
    "LasDimension",
    "LasMetadata",
    "LasPoints",
    "LasSource",
    "LasVlr",
    "copc_records",
    "header_metadata",
    "las_to_store",
    "open_las",
    "read_las",
    "store_to_las",
]

KEY = "las"
"""Key of the LAS header in the root ``custom_metadata``."""
_COORDS = frozenset({"X", "Y", "Z"})
_REBUILT_VLRS = frozenset({("laszip encoded", 22204)})
_COPC_VLRS = frozenset({("copc", 1), ("copc", 1000)})
"""COPC info VLR and hierarchy EVLR: they index LAZ chunks the exporter does not reproduce."""
_EXTRA_BYTES_VLR = ("LASF_Spec", 4)
_POINT_FORMATS = (0, 1, 2, 3, 6, 7, 8)
_MAX_INT32 = 2**31 - 1


class LasDimension(TypedDict):
    """One point dimension (JSON, in ``custom_metadata["las"]["dimensions"]``)."""

    name: str
    attribute: str
    extra: bool
    type: str
    description: str
    scales: list[float] | None
    offsets: list[float] | None


class LasVlr(TypedDict):
    """One (extended) variable length record, payload base64-encoded."""

    user_id: str
    record_id: int
    description: str
    data: str


class LasMetadata(TypedDict):
    """The LAS header kept in ``custom_metadata["las"]``."""

    version: str
    point_format: int
    scales: list[float]
    offsets: list[float]
    system_identifier: str
    generating_software: str
    creation_date: str | None
    global_encoding: int
    file_source_id: int
    uuid: str
    dimensions: list[LasDimension]
    vlrs: list[LasVlr]
    evlrs: list[LasVlr]
    all_vlrs: bool
    """``vlrs`` lists every VLR but LASzip's, extra-bytes VLRs included (older stores: none)."""
    raw_bytes: dict[str, Any]
    """Header and record-header bytes laspy does not round-trip (:mod:`._lasbytes`)."""
    point_count: int
    extra_header_bytes: str
    extra_vlr_bytes: str


@dataclass(frozen=True)
class LasPoints:
    """A LAS file in memory: positions, per-point attributes and header metadata."""

    positions: npt.NDArray[np.float64]
    """(N, 3) scaled coordinates."""
    attributes: dict[str, npt.NDArray[Any]]
    """Per-point dimensions by attribute name."""
    metadata: LasMetadata
    """Header, as stored in ``custom_metadata["las"]``."""

    def __len__(self) -> int:
        return len(self.positions)


# -- header <-> metadata --------------------------------------------------------------------


def _floats(values: Any) -> list[float] | None:
    return None if values is None else [float(v) for v in np.ravel(values)]


def _dimensions(point_format: Any) -> list[LasDimension]:
    extra = set(point_format.extra_dimension_names)
    taken = {d.name for d in point_format.dimensions if d.name not in extra}
    out: list[LasDimension] = []
    for dim in point_format.dimensions:
        if dim.name in _COORDS:
            continue
        is_extra = dim.name in extra
        out.append(
            LasDimension(
                name=dim.name,
                attribute=identifier(dim.name, taken) if is_extra else dim.name,
                extra=is_extra,
                type=_extra_type(dim) if is_extra else "",
                description=str(dim.description or "") if is_extra else "",
                scales=_floats(dim.scales) if is_extra else None,
                offsets=_floats(dim.offsets) if is_extra else None,
            )
        )
    return out


def _extra_type(dim: Any) -> str:
    base = np.dtype(dim.dtype).base.str.lstrip("<>|=")
    return base if dim.num_elements == 1 else f"{dim.num_elements}{base}"


def _vlrs(records: Iterable[Any] | None) -> list[LasVlr]:
    out: list[LasVlr] = []
    for v in records or ():
        if (v.user_id, v.record_id) in _REBUILT_VLRS | _COPC_VLRS:
            continue
        out.append(
            LasVlr(
                user_id=str(v.user_id),
                record_id=int(v.record_id),
                description=str(v.description),
                data=base64.b64encode(bytes(v.record_data_bytes())).decode("ascii"),
            )
        )
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def copc_records(header: Any) -> list[str]:
    """Describe the COPC records of a header (left out of the store), one line each."""
    found = [
        f"{kind} {v.user_id!r} {v.record_id}"
        for kind, records in (("VLR", header.vlrs), ("EVLR", header.evlrs or ()))
        for v in records
        if (v.user_id, v.record_id) in _COPC_VLRS
    ]
    return [f"COPC {r} (export writes a plain LAS/LAZ 1.4 file)" for r in found]


def header_metadata(header: Any, path: PathLike | None = None) -> LasMetadata:
    """Return the JSON form of a ``laspy.LasHeader`` kept in ``custom_metadata["las"]``.

    ``path`` (the file the header was read from) supplies the raw creation date.
    """
    date = header.creation_date
    return LasMetadata(
        version=str(header.version),
        point_format=int(header.point_format.id),
        scales=[float(s) for s in header.scales],
        offsets=[float(o) for o in header.offsets],
        system_identifier=str(header.system_identifier),
        generating_software=str(header.generating_software),
        creation_date=None if date is None else date.isoformat(),
        global_encoding=int(header.global_encoding.value),
        file_source_id=int(header.file_source_id),
        uuid=str(header.uuid),
        dimensions=_dimensions(header.point_format),
        vlrs=_vlrs(header.vlrs),
        evlrs=_vlrs(header.evlrs),
        all_vlrs=True,
        raw_bytes={} if path is None else _lasbytes.read_raw(path, str(header.version)),
        point_count=int(header.point_count),
        extra_header_bytes=_b64(header.extra_header_bytes),
        extra_vlr_bytes=_b64(header.extra_vlr_bytes),
    )


def _vlr(record: Mapping[str, Any]) -> Any:
    return laspy.VLR(
        str(record["user_id"]),
        int(record["record_id"]),
        str(record["description"]),
        base64.b64decode(str(record["data"])),
    )


def _header(meta: Mapping[str, Any]) -> Any:
    """Build a ``laspy.LasHeader`` from stored metadata."""
    header = laspy.LasHeader(version=str(meta["version"]), point_format=int(meta["point_format"]))
    for dim in meta["dimensions"]:
        if dim["extra"]:
            scales, offsets = dim.get("scales"), dim.get("offsets")
            header.add_extra_dim(
                laspy.ExtraBytesParams(
                    dim["name"],
                    dim["type"],
                    description=dim.get("description", ""),
                    scales=None if scales is None else np.asarray(scales, np.float64),
                    offsets=None if offsets is None else np.asarray(offsets, np.float64),
                )
            )
    header.scales = np.asarray(meta["scales"], np.float64)
    header.offsets = np.asarray(meta["offsets"], np.float64)
    header.system_identifier = str(meta.get("system_identifier", ""))
    header.generating_software = str(meta.get("generating_software", ""))
    if meta.get("creation_date"):
        header.creation_date = datetime.date.fromisoformat(str(meta["creation_date"]))
    header.global_encoding.value = int(meta.get("global_encoding", 0))
    header.file_source_id = int(meta.get("file_source_id", 0))
    header.uuid = uuid.UUID(str(meta.get("uuid", uuid.UUID(int=0))))
    header.extra_header_bytes = base64.b64decode(str(meta.get("extra_header_bytes", "")))
    header.extra_vlr_bytes = base64.b64decode(str(meta.get("extra_vlr_bytes", "")))
    records = [_vlr(v) for v in meta.get("vlrs", ())]
    if meta.get("all_vlrs"):
        # the stored list is complete and in file order: it replaces the extra-bytes VLR laspy
        # rebuilt (in place, since assigning ``vlrs`` would rebuild it again)
        header.vlrs.clear()
    header.vlrs.extend(records)
    return header


# -- reading --------------------------------------------------------------------------------


def _positions(record: Any) -> npt.NDArray[np.float64]:
    return np.stack([np.asarray(record.x), np.asarray(record.y), np.asarray(record.z)], axis=1)


def _attributes(record: Any, dims: Sequence[LasDimension]) -> dict[str, npt.NDArray[Any]]:
    return {d["attribute"]: np.asarray(record[d["name"]]) for d in dims}


def read_las(path: PathLike) -> LasPoints:
    """Read a whole LAS/LAZ file.

    Parameters
    ----------
    path
        ``.las`` or ``.laz`` file.

    Returns
    -------
    LasPoints
        Scaled positions, every point dimension, and the header metadata.
    """
    las = laspy.read(path)
    meta = header_metadata(las.header, path)
    return LasPoints(_positions(las.points), _attributes(las.points, meta["dimensions"]), meta)


class LasSource(Source):
    """A LAS/LAZ file opened for conversion (only the header is read here)."""

    geometry_type = GeometryTypeName.POINT_CLOUD

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        try:
            with laspy.open(self.path) as reader:
                self.header = reader.header
        except laspy.errors.LaspyException as exc:
            raise InvalidInputError(f"{self.path}: not a valid LAS/LAZ file: {exc}") from exc
        self.metadata: LasMetadata = header_metadata(self.header, self.path)

    def extent(self) -> Extent:
        """Return the point count and the header's bounding box."""
        return Extent(
            tuple(float(v) for v in self.header.mins),
            tuple(float(v) for v in self.header.maxs),
            int(self.header.point_count),
        )

    def _store_options(self, options: WriteOptions) -> StoreKwargs:
        meta = self.metadata
        return options.store(
            custom_metadata={KEY: cast(dict[str, Any], meta)},
            source_description=(
                f"LAS {meta['version']} point format {meta['point_format']}: {self.path.name}"
            ),
        )

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the points to a new store, streaming above the threshold."""
        report = progress or NullProgress()
        kwargs = self._store_options(options)
        dims = self.metadata["dimensions"]
        n = int(self.header.point_count)
        if not options.stream(n):
            report.start(f"reading {self.path.name}", None)
            las = laspy.read(self.path)
            report.start("writing store", None)
            return write_points(
                store,
                _positions(las.points),
                attributes=_attributes(las.points, dims),
                keep_order=options.keep_order,
                **kwargs,
            )
        writer = open_writer(
            store, "point_cloud", partition_chunks=options.partition_chunks, **kwargs
        )
        try:
            report.start(f"reading {self.path.name}", n)
            with laspy.open(self.path) as reader:
                done = 0
                for record in reader.chunk_iterator(options.batch_size):
                    attrs = _attributes(record, dims)
                    if options.keep_order:
                        attrs[INPUT_INDEX] = input_index(len(record), done, total=n)
                    writer.append(_positions(record), attributes=attrs)
                    done += len(record)
                    report.advance(len(record))
            report.start("writing store", None)
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def dropped(self) -> list[str]:
        """Describe the COPC records and internal waveform data of the file.

        The store keeps everything else: header fields, VLRs, EVLRs and every point
        dimension (waveform packet descriptors included).
        """
        out = copc_records(self.header)
        start = int(getattr(self.header, "start_of_waveform_data_packet_record", 0) or 0)
        if self.header.global_encoding.waveform_data_packets_internal and start:
            out.append(
                f"waveform data packets stored in the file after the points (at byte {start:,})"
            )
        return out


def open_las(path: PathLike) -> LasSource:
    """Open a LAS/LAZ file for conversion (see :class:`LasSource`)."""
    return LasSource(path)


def las_to_store(
    path: PathLike,
    store: StoreLike,
    *,
    chunk_shape: Sequence[float] | None = None,
    bin_shape: Sequence[float] | None = None,
    overwrite: bool = False,
    streaming: bool | None = None,
    chunk_size: int = 1_000_000,
    progress: Progress | None = None,
) -> WriteSummary:
    """Convert a LAS/LAZ file to a new ``point_cloud`` store.

    Parameters
    ----------
    path
        ``.las`` or ``.laz`` file.
    store
        Where the new store goes.
    chunk_shape
        Chunk extent per axis, same units as the coordinates; default from the header extent
        (~50k points per chunk).
    bin_shape
        Level-0 bin extent; default ``chunk_shape / 4``.
    overwrite
        Replace an existing store.
    streaming
        Read ``chunk_size`` points at a time through :func:`~zarr_vectors.open_writer`; default
        only for very large files.  The store is the same either way.
    chunk_size
        Points per streamed batch.
    progress
        Receiver of progress reports.

    Returns
    -------
    WriteSummary
        What level 0 holds.
    """
    with open_las(path) as src:
        chunk = tuple(chunk_shape) if chunk_shape is not None else suggest_chunk_shape(src.extent())
        opts = WriteOptions(
            chunk_shape=chunk,
            bin_shape=default_bin_shape(chunk) if bin_shape is None else tuple(bin_shape),
            overwrite=overwrite,
            streaming=streaming,
            batch_size=chunk_size,
        )
        return src.write(store, opts, progress)


# -- writing --------------------------------------------------------------------------------


def _point_format_for(names: Iterable[str]) -> int:
    wanted = set(names)

    def covered(pf: int) -> int:
        return len(wanted & set(laspy.PointFormat(pf).dimension_names))

    return max(_POINT_FORMATS, key=lambda pf: (covered(pf), -pf))


def _derived_metadata(meta: RootMetadata, batch: PointBatch | None) -> dict[str, Any]:
    """LAS header metadata for a store that was not read from a LAS file."""
    if meta.spatial_dims not in (2, 3):
        raise InvalidInputError(f"LAS holds 2-D or 3-D points, the store has {meta.spatial_dims}-D")
    attrs = {} if batch is None else batch.attributes
    pf = _point_format_for(attrs)
    box = meta.bounding_box
    lo = np.zeros(3) if box is None else np.resize(np.asarray(box.min, np.float64), 3)
    hi = np.zeros(3) if box is None else np.resize(np.asarray(box.max, np.float64), 3)
    if meta.spatial_dims == 2:
        lo[2] = hi[2] = 0.0
    span = np.maximum(hi - lo, 0.0)
    scales = [
        0.001 if s <= 0 else max(0.001, 10.0 ** math.ceil(math.log10(s / _MAX_INT32))) for s in span
    ]
    return {
        "version": "1.2" if pf < 6 else "1.4",
        "point_format": pf,
        "scales": scales,
        "offsets": np.floor(lo).tolist(),
        "dimensions": [
            {"name": n, "attribute": n, "extra": False}
            for n in laspy.PointFormat(pf).dimension_names
            if n in attrs and n not in _COORDS
        ],
    }


def _extra_dims(meta: dict[str, Any], batch: PointBatch | None) -> list[tuple[str, str]]:
    """Add extra-bytes dimensions for attributes the header does not name; return the plan."""
    used = {d["attribute"] for d in meta["dimensions"]}
    taken = {d["name"] for d in meta["dimensions"]}
    for name, values in ({} if batch is None else batch.attributes).items():
        if name in used:
            continue
        if values.dtype.kind not in "biuf" or values.ndim > 2:
            warnings.warn(f"LAS export skips attribute {name!r} ({values.dtype})", ZVUserWarning, 2)
            continue
        dtype = np.dtype(np.uint8) if values.dtype.kind == "b" else values.dtype
        width = 1 if values.ndim == 1 else values.shape[1]
        base = dtype.str.lstrip("<>|=")
        meta["dimensions"].append(
            {
                "name": identifier(name, taken),
                "attribute": name,
                "extra": True,
                "type": base if width == 1 else f"{width}{base}",
                "description": "",
            }
        )
    return [(d["attribute"], d["name"]) for d in meta["dimensions"]]


def _record(header: Any, batch: PointBatch, plan: Sequence[tuple[str, str]]) -> Any:
    n = len(batch.positions)
    record = laspy.ScaleAwarePointRecord.zeros(n, header=header)
    pos = batch.positions
    record.x = pos[:, 0]
    record.y = pos[:, 1]
    record.z = pos[:, 2] if pos.shape[1] > 2 else np.zeros(n)
    for attribute, name in plan:
        values = batch.attributes.get(attribute)
        if values is not None:
            record[name] = values.astype(np.uint8) if values.dtype.kind == "b" else values
    return record


def store_to_las(
    store: StoreLike,
    path: PathLike,
    *,
    level: int = 0,
    batch_size: int = 1_000_000,
    progress: Progress | None = None,
) -> None:
    """Write one level of a ``point_cloud`` store to a LAS or LAZ file (by extension).

    Parameters
    ----------
    store
        A ``point_cloud`` store.
    path
        Output ``.las`` or ``.laz`` file.
    level
        Resolution level to write.
    batch_size
        Points per write batch.
    progress
        Receiver of progress reports.

    Raises
    ------
    InvalidInputError
        The store is not a 2-D or 3-D point cloud, or a value does not fit its LAS field.
    """
    report = progress or NullProgress()
    meta = store_metadata(store)
    batches = iter_point_batches(store, level=level, batch_size=batch_size)
    first = next(batches, None)
    stored = custom_section(meta, KEY)
    las_meta = dict(stored) if stored is not None else _derived_metadata(meta, first)
    las_meta["dimensions"] = [dict(d) for d in las_meta["dimensions"]]
    plan = _extra_dims(las_meta, first)
    header = _header(las_meta)
    evlrs = [_vlr(v) for v in las_meta.get("evlrs", ())]
    report.start(f"writing {path}", None)
    written = 0
    try:
        with laspy.open(path, mode="w", header=header) as writer:
            for batch in itertools.chain([] if first is None else [first], batches):
                writer.write_points(_record(header, batch, plan))
                report.advance(len(batch.positions))
                written += len(batch.positions)
            if evlrs:
                writer.write_evlrs(VLRList(evlrs))
    except OverflowError as exc:
        raise InvalidInputError(f"a value does not fit its LAS field: {exc}") from exc
    same = written == las_meta.get("point_count")
    _lasbytes.patch(path, las_meta.get("raw_bytes") or {}, same_points=same)
