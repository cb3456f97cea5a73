r"""Vectorised readers of TrackVis ``.trk`` and MRtrix ``.tck`` streamline files.

The contract is nibabel's: :meth:`TrkReader.read` and :meth:`TckReader.read` return the
streamlines, per-point and per-streamline data that ``nibabel.streamlines.load`` returns, with
the same float32 coordinates bit for bit, but without nibabel's Python loop over vertices
(nibabel reads each streamline with its own ``file.read``).  Bodies are memory-mapped, so a
reader holds only its index (one int64 per streamline) and reads any range of streamlines in
memory proportional to that range.

TrackVis (http://trackvis.org/docs/?subsect=fileformat): a 1000-byte header
(:data:`TRK_HEADER_FIELDS`; little-endian when ``hdr_size`` reads 1000, big-endian when it does
byte-swapped), then per streamline an int32 point count ``n``, ``n`` rows of
``3 + n_scalars`` float32 (x, y, z in voxmm, then the scalars) and ``n_properties`` float32.
``n_count = 0`` means "read to the end of the file".  Coordinates are mapped to RAS+ mm with
nibabel's ``get_affine_trackvis_to_rasmm`` and the same float32 matrix product nibabel uses.
Scalar and property names follow nibabel: ``name`` or ``name\x00count`` (a ``count``-column
value), leftover columns named ``scalars`` / ``properties``.

MRtrix (https://mrtrix.readthedocs.io/en/latest/getting_started/image_data.html#tracks-file-format-tck):
a text header (``mrtrix tracks``, ``key: value`` lines, ``END``) whose ``file: . offset`` gives
the start of float triplets; a row of NaN ends each streamline and a row of infinities ends the
file.  Coordinates are already RAS+ mm.

One deliberate difference: empty streamlines (a TRK count of 0, two TCK NaN rows in a row) are
kept, as TrackVis and MRtrix count them, so per-streamline data stay aligned; nibabel drops them
(and fails on a TRK file that also has properties).
"""

from __future__ import annotations

import abc
import io
import itertools
import os
import struct
import sys
import warnings
from array import array
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

import nibabel.orientations
import nibabel.streamlines.tck
import nibabel.streamlines.trk
import numpy as np
import numpy.typing as npt
from nibabel.streamlines.tractogram_file import HeaderError

from zarr_vectors.errors import InvalidInputError, ZVUserWarning

__all__ = [
    "TCK_MAGIC",
    "TRK_HEADER_DTYPE",
    "TRK_HEADER_FIELDS",
    "TckHeader",
    "TckReader",
    "TractData",
    "TrkHeader",
    "TrkReader",
    "read_tck",
    "read_trk",
    "write_tck",
    "write_trk",
]

# nibabel is unannotated; mypy --strict rejects calls into it unless typed Any
_trk: Any = nibabel.streamlines.trk
_tck: Any = nibabel.streamlines.tck
_aff2axcodes: Any = nibabel.orientations.aff2axcodes

IntArray = npt.NDArray[np.int64]
F32Array = npt.NDArray[np.float32]
PathLike = str | os.PathLike[str]

TRK_HEADER_SIZE = 1000
TRK_MAGIC = b"TRACK"
TRK_HEADER_FIELDS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("magic_number", "S6", ()),
    ("dimensions", "i2", (3,)),
    ("voxel_sizes", "f4", (3,)),
    ("origin", "f4", (3,)),
    ("nb_scalars_per_point", "i2", ()),
    ("scalar_name", "S20", (10,)),
    ("nb_properties_per_streamline", "i2", ()),
    ("property_name", "S20", (10,)),
    ("voxel_to_rasmm", "f4", (4, 4)),
    ("reserved", "S444", ()),
    ("voxel_order", "S4", ()),
    ("pad2", "S4", ()),
    ("image_orientation_patient", "f4", (6,)),
    ("pad1", "S2", ()),
    ("invert_x", "S1", ()),
    ("invert_y", "S1", ()),
    ("invert_z", "S1", ()),
    ("swap_xy", "S1", ()),
    ("swap_yz", "S1", ()),
    ("swap_zx", "S1", ()),
    ("nb_streamlines", "i4", ()),
    ("version", "i4", ()),
    ("hdr_size", "i4", ()),
)
"""TrackVis v2 header: (nibabel's field name, dtype, shape); ``n_count`` is ``nb_streamlines``,
``vox_to_ras`` is ``voxel_to_rasmm``."""
TRK_HEADER_DTYPE = np.dtype([(name, kind, shape) for name, kind, shape in TRK_HEADER_FIELDS])
TCK_MAGIC = b"mrtrix tracks"
_TCK_DTYPES = {"Float32LE": "<f4", "Float32BE": ">f4", "Float64LE": "<f8", "Float64BE": ">f8"}
_TCK_DTYPES |= {"Float32": "<f4", "Float64": "<f8"}  # no suffix: little-endian, as nibabel
_TCK_HEADER_MAX = 1 << 24  # bytes searched for END
_SCAN_ROWS = 1 << 24  # TCK rows scanned for delimiters at a time
_BLOCK = 1 << 16  # vertices gathered at a time (cache-sized)
_PARALLEL_VERTICES = 1 << 20  # from this many vertices on, a read runs on two threads


@dataclass(frozen=True)
class TractData:
    """Streamlines with their data, as ``nibabel.streamlines.load`` returns them."""

    positions: F32Array
    """(N, 3) vertices, RAS+ millimetres."""
    offsets: IntArray
    """(n + 1,) streamline i is ``positions[offsets[i]:offsets[i + 1]]``; ``offsets[0] == 0``."""
    data_per_point: dict[str, F32Array] = field(default_factory=dict)
    """(N, k) values per vertex, by name (TRK scalars)."""
    data_per_streamline: dict[str, F32Array] = field(default_factory=dict)
    """(n, k) values per streamline, by name (TRK properties)."""

    def __len__(self) -> int:
        return len(self.offsets) - 1


def _block_bounds(offsets: IntArray, size: int) -> list[int]:
    """Streamline boundaries cutting ``offsets`` into blocks of about ``size`` vertices."""
    n = len(offsets) - 1
    targets = np.arange(size, int(offsets[-1]), size)
    cuts = np.searchsorted(offsets, targets, side="right") - 1
    return sorted({0, n, *np.clip(cuts, 0, n).tolist()})


def _row_view(buffer: npt.NDArray[np.uint8], offset: int, width: int) -> npt.NDArray[np.void]:
    """Overlapping ``width``-byte rows of ``buffer`` starting every 4 bytes from ``offset``.

    Row ``i`` is bytes ``offset + 4 i`` to ``offset + 4 i + width`` (no copy), so indexing it
    with word indices gathers whole rows in one fancy-indexing pass.
    """
    dtype = np.dtype(f"V{max(width, 1)}")
    count = (len(buffer) - offset - width) // 4 + 1 if width else 0
    if count <= 0:
        return np.zeros(0, dtype)
    return np.ndarray((count,), dtype=dtype, buffer=buffer, offset=offset, strides=(4,))


def _vertex_rows(first: IntArray, counts: IntArray, stride: int) -> IntArray:
    """Row (in ``stride`` units from a streamline's first row) of every vertex, as an index.

    Vertex ``j`` of streamline ``s`` sits at ``first[s] + j * stride``.
    """
    local = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=local[1:])
    idx = np.repeat(first - local * stride, counts)
    idx += np.arange(0, int(local[-1] + counts[-1]) * stride if len(counts) else 0, stride)
    return idx


class _Reader(abc.ABC):
    """A streamline file opened for reading (a context manager): index built, body mapped."""

    path: Path
    offsets: IntArray
    """(n + 1,) vertex offsets of every streamline in the file."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_vertices(self) -> int:
        """Vertices in the file."""
        return int(self.offsets[-1])

    @abc.abstractmethod
    def read(self, start: int = 0, stop: int | None = None) -> TractData:
        """Read streamlines ``start:stop`` (default all)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the memory map (it closes once the last view is gone)."""

    def iter_batches(self, batch_vertices: int = 1_000_000) -> Iterator[TractData]:
        """Yield consecutive batches of whole streamlines, about ``batch_vertices`` each."""
        bounds = _block_bounds(self.offsets, max(1, batch_vertices))
        for a, b in itertools.pairwise(bounds):
            yield self.read(a, b)

    def _range(self, start: int, stop: int | None) -> tuple[int, int, IntArray]:
        """Clip ``start:stop`` to the file; return it with offsets from 0."""
        stop = len(self) if stop is None else min(stop, len(self))
        start = min(max(start, 0), stop)
        return start, stop, self.offsets[start : stop + 1] - self.offsets[start]


# -- TrackVis ---------------------------------------------------------------------------------


def _decode_names(
    names: npt.NDArray[Any], total: int, fallback: str
) -> tuple[tuple[str, slice], ...]:
    """Decode ``scalar_name`` / ``property_name`` into column slices, as nibabel does."""
    out: list[tuple[str, slice]] = []
    cpt = 0
    if total > 0:
        for encoded in names:
            try:
                name, count = _trk.decode_value_from_name(bytes(encoded))
            except (ValueError, HeaderError) as exc:
                raise InvalidInputError(f"TRK header: bad {fallback} name {encoded!r}") from exc
            if count:
                out.append((str(name), slice(cpt, cpt + count)))
                cpt += count
        if cpt < total:
            out.append((fallback, slice(cpt, total)))
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class TrkHeader:
    """A parsed TrackVis header.

    nibabel's fixes are applied: an identity ``vox_to_ras`` when it is absent, ``LPS`` when
    ``voxel_order`` is empty.
    """

    fields: dict[str, Any]
    """Every :data:`TRK_HEADER_FIELDS` value (native byte order) plus ``endianness``, keyed as
    nibabel's ``TrkFile.header``."""
    byteorder: str
    """``"<"`` or ``">"``, the byte order of the whole file."""
    n_count: int
    """Streamlines announced by the header (0: unknown, read to the end of the file)."""
    n_scalars: int
    """float32 values per point after x, y, z."""
    n_properties: int
    """float32 values per streamline."""
    scalars: tuple[tuple[str, slice], ...]
    """Per-point data name -> columns of the scalars."""
    properties: tuple[tuple[str, slice], ...]
    """Per-streamline data name -> columns of the properties."""
    affine: F32Array
    """(4, 4) float32 voxmm -> RAS+ mm (nibabel's ``get_affine_trackvis_to_rasmm``)."""

    @classmethod
    def from_bytes(cls, raw: bytes) -> TrkHeader:
        """Parse the first 1000 bytes of a TRK file.

        Raises
        ------
        InvalidInputError
            Short header, wrong magic, ``hdr_size`` not 1000 in either byte order, unsupported
            version, or a ``vox_to_ras`` without axis directions.
        """
        if len(raw) < TRK_HEADER_SIZE or raw[:5] != TRK_MAGIC:
            raise InvalidInputError("not a TrackVis file (no 'TRACK' magic or short header)")
        rec = np.frombuffer(raw, TRK_HEADER_DTYPE, count=1)
        byteorder = "<" if sys.byteorder == "little" else ">"
        if int(rec["hdr_size"][0]) != TRK_HEADER_SIZE:
            byteorder = "<" if byteorder == ">" else ">"
            rec = rec.view(TRK_HEADER_DTYPE.newbyteorder())
            if int(rec["hdr_size"][0]) != TRK_HEADER_SIZE:
                raise InvalidInputError(f"TRK header: hdr_size is not {TRK_HEADER_SIZE}")
        rec = rec.astype(TRK_HEADER_DTYPE)  # native byte order
        fields: dict[str, Any] = dict(zip(TRK_HEADER_DTYPE.names or (), rec[0], strict=True))
        fields["endianness"] = byteorder
        _fix_space(fields)
        n_scalars = int(fields["nb_scalars_per_point"])
        n_properties = int(fields["nb_properties_per_streamline"])
        if n_scalars < 0 or n_properties < 0:
            raise InvalidInputError("TRK header: negative n_scalars or n_properties")
        return cls(
            fields=fields,
            byteorder=byteorder,
            n_count=int(fields["nb_streamlines"]),
            n_scalars=n_scalars,
            n_properties=n_properties,
            scalars=_decode_names(fields["scalar_name"], n_scalars, "scalars"),
            properties=_decode_names(fields["property_name"], n_properties, "properties"),
            affine=np.asarray(_trk.get_affine_trackvis_to_rasmm(fields), np.float32),
        )


def _fix_space(fields: dict[str, Any]) -> None:
    """Apply nibabel's header fixes and checks to the space fields (in place)."""
    version = int(fields["version"])
    if version == 1:  # no vox_to_ras before version 2
        fields["voxel_to_rasmm"] = np.zeros((4, 4), np.float32)
    elif version == 3:
        warnings.warn("TRK v3 file read as v2", ZVUserWarning, stacklevel=4)
    elif version != 2:
        raise InvalidInputError(f"TRK header: unsupported version {version} (1 and 2 are)")
    if fields["voxel_to_rasmm"][3][3] == 0:
        fields["voxel_to_rasmm"] = np.eye(4, dtype=np.float32)
        warnings.warn(
            "TRK header: vox_to_ras not recorded, assuming the identity", ZVUserWarning, 4
        )
    if None in _aff2axcodes(fields["voxel_to_rasmm"]):
        raise InvalidInputError(f"TRK header: invalid vox_to_ras {fields['voxel_to_rasmm']}")
    if fields["voxel_order"] == b"":
        warnings.warn("TRK header: no voxel order, assuming LPS", ZVUserWarning, 4)
        fields["voxel_order"] = np.bytes_(b"LPS")


def _scan_trk(body: npt.NDArray[np.uint8], header: TrkHeader, path: Path) -> IntArray:
    """Byte offset of every record (point count) in ``body``, then the end of the last one.

    One tight loop over streamlines (records cannot be found without their predecessors'
    counts), stepping through the body as 4-byte words (records are whole words); the
    vertices are never touched.
    """
    row, extra = 3 + header.n_scalars, 1 + header.n_properties  # words
    end = len(body)
    words = _words(body, header.byteorder)
    n_words = len(words)
    starts = array("q")
    append = starts.append
    w = 0
    limit = header.n_count if header.n_count > 0 else sys.maxsize
    for _ in range(limit):
        if w >= n_words:
            break
        append(w)
        count = words[w]
        if count < 0:
            raise InvalidInputError(f"{path}: corrupt TRK body (count {count} at byte {4 * w})")
        w += count * row + extra
    pos = 4 * w
    if pos > end or (w == n_words and pos < end and len(starts) < limit):  # count cut short
        raise InvalidInputError(f"{path}: TRK body is truncated")
    n = len(starts)
    if header.n_count > 0 and n < header.n_count:
        warnings.warn(
            f"{path}: header announces {header.n_count} streamlines, file holds {n}",
            ZVUserWarning,
            4,
        )
    elif pos < end:
        warnings.warn(
            f"{path}: {end - pos} bytes after the {n} streamlines of the header ignored",
            ZVUserWarning,
            4,
        )
    append(w)
    return np.frombuffer(starts, np.int64) * 4


class _SwappedWords:
    """Words of a buffer in the other byte order, read one at a time (``words[i]``)."""

    def __init__(self, buffer: memoryview, byteorder: str) -> None:
        self._unpack = struct.Struct(byteorder + "i").unpack_from
        self._buffer = buffer
        self._n = len(buffer) // 4

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> int:
        value: int = self._unpack(self._buffer, 4 * i)[0]
        return value


class _Words(Protocol):
    """Read-only indexable ints (a cast memoryview or :class:`_SwappedWords`)."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> int: ...


def _words(body: npt.NDArray[np.uint8], byteorder: str) -> _Words:
    """Return the whole 4-byte signed words of ``body`` as ints (a cast view when native)."""
    whole = body[: len(body) // 4 * 4]
    if np.dtype(byteorder + "i4").isnative:
        return whole.data.cast("i")
    return _SwappedWords(whole.data, byteorder)


class TrkReader(_Reader):
    """A TrackVis file opened for reading: header parsed, body memory-mapped and indexed.

    Parameters
    ----------
    path
        The ``.trk`` file.

    Raises
    ------
    InvalidInputError
        Not a TrackVis file, bad header, or a truncated or corrupt body.

    Examples
    --------
    >>> import tempfile
    >>> from nibabel.streamlines import Tractogram, TrkFile
    >>> path = Path(tempfile.mkdtemp()) / "two.trk"
    >>> lines = [np.zeros((3, 3), np.float32), np.ones((2, 3), np.float32)]
    >>> TrkFile(Tractogram(lines, affine_to_rasmm=np.eye(4))).save(str(path))
    >>> with TrkReader(path) as trk:
    ...     len(trk), trk.n_vertices, trk.read(1).positions.tolist(), len(trk.read(2, 2))
    (2, 5, [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], 0)
    """

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        try:
            raw = np.memmap(self.path, np.uint8, mode="r")
        except (ValueError, OSError) as exc:  # numpy cannot map an empty file
            raise InvalidInputError(f"{self.path}: not a TrackVis file: {exc}") from exc
        self.header = TrkHeader.from_bytes(bytes(raw[:TRK_HEADER_SIZE]))
        h = self.header
        self._body = np.asarray(raw[TRK_HEADER_SIZE:])  # plain ndarray view of the map
        records = _scan_trk(self._body, h, self.path)
        self._first = (records[:-1] + 4) // 4  # first vertex word of each streamline
        self._stride = 3 + h.n_scalars
        counts = (np.diff(records) - 4 * (1 + h.n_properties)) // (4 * self._stride)
        self.offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.offsets[1:])
        self._float = np.dtype(h.byteorder + "f4")
        self._xyz = _row_view(self._body, 0, 12)
        self._scalars = _row_view(self._body, 12, 4 * h.n_scalars)
        self._words = self._body[: len(self._body) // 4 * 4].view(self._float)
        self._identity = bool(np.all(h.affine == np.eye(4)))
        rzs = h.affine[:3, :3]
        self._rzs_t = rzs.T
        # voxel sizes only (the usual TRK): the product is one multiply per coordinate
        self._diagonal = bool(np.all(rzs == np.diag(np.diag(rzs))))
        self._unit = bool(np.all(np.diag(rzs) == 1))
        # scale and shift tiled over a block: flat operations are several times faster than
        # broadcasting (3,)
        self._scale = np.tile(np.diag(rzs).astype(np.float32), _BLOCK)
        self._shift = np.tile(h.affine[:3, 3], _BLOCK)

    def close(self) -> None:
        """Release the memory map (it closes once the last view is gone)."""
        self._body = np.zeros(0, np.uint8)
        self._words = self._body.view(self._float)
        self._xyz = self._scalars = np.zeros(0, "V1")

    def _to_rasmm(self, raw: npt.NDArray[np.void], out: F32Array) -> None:
        """Map gathered voxmm rows ``raw`` (12 bytes each) to RAS+ mm into ``out``."""
        pts = raw.view(self._float).reshape(-1, 3)
        if not self._float.isnative:
            pts = pts.astype(np.float32)
        if self._identity:  # nibabel skips the product too
            out[...] = pts
            return
        flat = out.reshape(-1)  # at most len(self._shift): see _fit_tiles
        # nibabel.affines.apply_affine(affine, pts, inplace=True): float32 product, then shift.
        # With a diagonal rzs the product's other terms are exact zeros: x * a alone is the
        # same float32 (a zero's sign aside), without a BLAS call.
        if not self._diagonal:
            np.dot(pts, self._rzs_t, out=out)
        elif self._unit:
            out[...] = pts
        else:
            np.multiply(pts.reshape(-1), self._scale[: len(flat)], out=flat)
        flat += self._shift[: len(flat)]

    def read(self, start: int = 0, stop: int | None = None) -> TractData:
        """Read streamlines ``start:stop`` (default all), coordinates in RAS+ mm.

        Parameters
        ----------
        start, stop
            Streamline range, as a slice (no negative indices).

        Returns
        -------
        TractData
            Positions, offsets from 0, per-point data (scalars) and per-streamline data
            (properties), named as in nibabel.
        """
        h = self.header
        start, stop, off = self._range(start, stop)
        first = self._first[start:stop]
        counts = np.diff(off)
        n_vertices = int(off[-1])
        pos = np.empty((n_vertices, 3), np.float32)
        scal = np.empty((n_vertices, h.n_scalars), np.float32)
        blocks = list(itertools.pairwise(_block_bounds(off, _BLOCK)))
        self._fit_tiles(max((int(off[b] - off[a]) for a, b in blocks), default=0))
        read = partial(self._read_blocks, first=first, off=off, pos=pos, scal=scal)
        with _one_blas_thread(0 if self._diagonal else n_vertices):
            if n_vertices < _PARALLEL_VERTICES or len(blocks) < 2:
                read(blocks)
            else:  # gathers and arithmetic release the GIL: halves run side by side
                half = len(blocks) // 2
                with ThreadPoolExecutor(max_workers=1) as pool:
                    upper = pool.submit(read, blocks[half:])
                    read(blocks[:half])
                    upper.result()
        props_at = (first + counts * self._stride)[:, None] + np.arange(h.n_properties)
        props = self._words[props_at].astype(np.float32)
        return TractData(
            pos,
            off,
            {name: scal[:, s] for name, s in h.scalars},
            {name: props[:, s] for name, s in h.properties},
        )

    def _fit_tiles(self, n_vertices: int) -> None:
        """Make the tiled scale and shift cover a block of ``n_vertices`` (one long streamline)."""
        if 3 * n_vertices > len(self._shift):
            self._shift = np.tile(self._shift[:3], n_vertices)
            self._scale = np.tile(self._scale[:3], n_vertices)

    def _read_blocks(
        self,
        blocks: Sequence[tuple[int, int]],
        *,
        first: IntArray,
        off: IntArray,
        pos: F32Array,
        scal: F32Array,
    ) -> None:
        """Gather streamlines ``a:b`` of each block into ``pos`` and ``scal`` (rows ``off``)."""
        for a, b in blocks:
            v = slice(int(off[a]), int(off[b]))
            rows = _vertex_rows(first[a:b], np.diff(off[a : b + 1]), self._stride)
            self._to_rasmm(self._xyz[rows], pos[v])
            if scal.shape[1]:
                scal[v] = self._scalars[rows].view(self._float).reshape(scal[v].shape)


def _one_blas_thread(n_vertices: int) -> AbstractContextManager[Any]:
    """Run the (n, 3) x (3, 3) products of the affine on one BLAS thread (big reads).

    The result is the same bit for bit (each row is one thread's work either way), but
    OpenBLAS splits such thin products badly (one thread is faster here) and its idle threads
    then spin for a while, taking a core from the write that follows a read.  The limit is
    process-wide while it holds (threadpoolctl's way) and has a fixed cost to set, so small
    reads skip it; without ``threadpoolctl`` nothing changes.
    """
    if n_vertices < 4 * _BLOCK:
        return nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return nullcontext()
    limits: AbstractContextManager[Any] = threadpool_limits(1, user_api="blas")
    return limits


def write_trk(path: PathLike, data: TractData, fields: Mapping[str, Any]) -> None:
    r"""Write a TrackVis file holding the same bytes as nibabel's ``TrkFile.save``.

    ``TrkFile(Tractogram(streamlines, data_per_point, data_per_streamline,
    affine_to_rasmm=np.eye(4)), header=fields).save(path)`` builds the body one streamline at
    a time; this builds it with a handful of vectorised passes.  Coordinates are mapped from
    RAS+ mm to voxmm with nibabel's ``get_affine_rasmm_to_trackvis`` and its arithmetic
    (float64 product and shift, then float32), scalars and properties named as nibabel names
    them (sorted, ``name\x00count`` for several columns).

    Parameters
    ----------
    path
        Output ``.trk`` file.
    data
        Streamlines (RAS+ mm), per-point data (TRK scalars) and per-streamline data
        (properties); at most 10 names of each.
    fields
        Header fields by nibabel's names (``voxel_to_rasmm``, ``dimensions``, ``voxel_sizes``,
        ``voxel_order``, ...); other keys are ignored, as nibabel ignores them.

    Raises
    ------
    InvalidInputError
        More than 10 scalar or property names, or a name too long for the header.
    """
    header = np.zeros((), dtype=_trk.header_2_dtype.newbyteorder("<"))
    for key, value in {**_trk.TrkFile.create_empty_header(), **fields}.items():
        if key in header.dtype.names:
            header[key] = value
    if header["voxel_order"] == b"":
        header["voxel_order"] = b"LPS"
    scalars = _named_columns(data.data_per_point, len(data.positions), "scalar")
    props = _named_columns(data.data_per_streamline, len(data), "property")
    n, n_vertices = len(data), len(data.positions)
    if n:  # nibabel leaves the names and counts of an empty file at zero
        header["scalar_name"] = scalars.names
        header["property_name"] = props.names
        header["nb_scalars_per_point"] = scalars.width
        header["nb_properties_per_streamline"] = props.width
        header["nb_streamlines"] = n
    row = 3 + scalars.width
    body = np.empty(n * (1 + props.width) + n_vertices * row, dtype="<f4")
    counts = np.diff(data.offsets)
    first = np.arange(n, dtype=np.int64) * (1 + props.width) + row * data.offsets[:-1]
    body.view("<i4")[first] = counts  # each record starts with its point count
    # vertex v of streamline s starts at word 1 + row * v + s * (1 + n_properties)
    vertex = np.repeat(first + 1 - row * data.offsets[:-1], counts)
    vertex += np.arange(0, row * n_vertices, row, dtype=np.int64)
    # float64, as nibabel composes it with the tractogram's own (identity) affine
    to_voxmm = np.asarray(_trk.get_affine_rasmm_to_trackvis(header), dtype=np.float64)
    voxmm = _to_voxmm(data.positions, to_voxmm)
    for j in range(3):
        body[vertex + j] = voxmm[:, j]
    for j in range(scalars.width):
        body[vertex + 3 + j] = scalars.values[:, j]
    after = first + 1 + row * counts
    for j in range(props.width):
        body[after + j] = props.values[:, j]
    if fields.get("endianness") == ">":  # a big-endian source file is written back as one
        header = header.astype(header.dtype.newbyteorder(">"))
        body = body.astype(">f4")
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(body.tobytes())


def write_tck(
    path: PathLike, positions: F32Array, offsets: IntArray, fields: Mapping[str, Any]
) -> None:
    """Write an MRtrix file holding the same bytes as nibabel's ``TckFile.save``.

    The header is nibabel's (its defaults, then ``fields``, then the count; written by
    nibabel's own header writer), the body the float32 coordinates with a NaN row after each
    streamline and a row of infinities at the end, built in one pass instead of a write per
    streamline.

    Parameters
    ----------
    path
        Output ``.tck`` file.
    positions
        (N, 3) vertices, RAS+ millimetres.
    offsets
        (n + 1,) streamline ``i`` is ``positions[offsets[i]:offsets[i + 1]]``.
    fields
        Header key-value pairs (``step_size``, ...), as nibabel takes them.
    """
    header = _tck.TckFile.create_empty_header()
    header.update(fields)
    n = len(offsets) - 1
    header[_tck.Field.NB_STREAMLINES] = n
    big = str(header.get("datatype", "")) == "Float32BE"  # nibabel writes Float32 only
    body = np.empty((len(positions) + n + 1, 3), dtype=">f4" if big else "<f4")
    counts = np.diff(offsets)
    rows = np.arange(len(positions), dtype=np.int64) + np.repeat(np.arange(n), counts)
    body[rows] = positions
    body[offsets[1:] + np.arange(n)] = np.nan  # the delimiter after each streamline
    body[-1] = np.inf  # end of file
    text = io.BytesIO()
    _tck.TckFile._write_header(text, header)
    head = text.getvalue()
    if big:  # nibabel always declares little-endian; the replacement has the same length
        head = head.replace(b"datatype: Float32LE", b"datatype: Float32BE", 1)
    with open(path, "wb") as f:
        f.write(head)
        f.write(body.tobytes())


@dataclass(frozen=True)
class _Columns:
    """Named float32 columns of a TRK header section, as nibabel lays them out."""

    names: npt.NDArray[np.bytes_]
    """The 10 encoded names (``S20``)."""
    values: F32Array
    """(rows, width) the columns, in name order."""

    @property
    def width(self) -> int:
        return int(self.values.shape[1])


def _named_columns(columns: Mapping[str, npt.NDArray[Any]], rows: int, what: str) -> _Columns:
    """Return TRK scalars (``what="scalar"``) or properties laid out as nibabel does."""
    if len(columns) > 10:
        raise InvalidInputError(f"TRK holds at most 10 {what} names, got {len(columns)}")
    names = np.zeros(10, dtype="S20")
    parts = [np.zeros((rows, 0), dtype=np.float32)]
    for i, key in enumerate(sorted(columns)):
        col = np.asarray(columns[key])
        col = col.reshape(len(col), -1)
        try:
            names[i] = _trk.encode_value_in_name(col.shape[1], key)
        except ValueError as exc:
            raise InvalidInputError(f"TRK {what} name {key!r}: {exc}") from exc
        parts.append(col.astype(np.float32))
    return _Columns(names, np.concatenate(parts, axis=1))


def _to_voxmm(positions: F32Array, affine: npt.NDArray[np.float64]) -> F32Array:
    """RAS+ mm to voxmm as nibabel's ``TrkFile.save`` computes it (float64, then float32).

    nibabel skips the product when the affine is close to the identity.  A diagonal product
    is computed per column (adding the zero terms changes nothing); others in blocks with
    nibabel's own expression.
    """
    pos = np.asarray(positions, dtype=np.float32)
    if np.allclose(affine, np.eye(4)):
        return pos
    rzs, shift = affine[:3, :3], affine[:3, 3]
    out = np.empty(pos.shape, dtype=np.float32)
    if np.all(rzs == np.diag(np.diag(rzs))):
        scale = np.diag(rzs)
        for j in range(3):
            col = pos[:, j].astype(np.float64)
            col *= scale[j]
            col += shift[j]
            out[:, j] = col
        return out
    for a in range(0, len(pos), _BLOCK):
        out[a : a + _BLOCK] = pos[a : a + _BLOCK] @ rzs.T + shift[None, :]
    return out


def read_trk(path: PathLike) -> TractData:
    """Read a whole TrackVis file (see :class:`TrkReader`)."""
    with TrkReader(path) as trk:
        return trk.read()


# -- MRtrix -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TckHeader:
    """A parsed MRtrix tracks header."""

    fields: dict[str, str]
    """Every ``key: value`` of the header (repeated keys joined by newlines), as nibabel."""
    dtype: np.dtype[Any]
    """Coordinate type from ``datatype`` (Float32/Float64, LE/BE)."""
    offset: int
    """Byte offset of the first coordinate (``file: . offset``)."""

    @classmethod
    def from_bytes(cls, raw: bytes) -> TckHeader:
        """Parse the text header at the start of ``raw`` (which must include ``END``).

        Raises
        ------
        InvalidInputError
            Wrong magic, no ``END`` line, a line before any key, an unsupported datatype or a
            data file other than ``.``.
        """
        if not raw.startswith(TCK_MAGIC):
            raise InvalidInputError("not an MRtrix tracks file (no 'mrtrix tracks' magic)")
        pos = len(TCK_MAGIC) + 1
        values: dict[str, list[str]] = {}
        key: str | None = None
        while True:
            nl = raw.find(b"\n", pos)
            if nl < 0:
                raise InvalidInputError("TCK header: no END line")
            line = raw[pos:nl].decode("utf-8").strip()
            pos = nl + 1
            if not line:
                continue
            if line == "END":
                break
            with suppress(ValueError):
                key, line = line.split(":", 1)
                key = key.strip()
            if key is None:
                raise InvalidInputError(f"TCK header: value before any key: {line!r}")
            values.setdefault(key, []).append(line.strip())
        fields = {k: "\n".join(v) for k, v in values.items()}
        if "datatype" not in fields:
            warnings.warn("TCK header: no datatype, assuming Float32LE", ZVUserWarning, 3)
            fields["datatype"] = "Float32LE"
        if fields["datatype"] not in _TCK_DTYPES:
            raise InvalidInputError(f"TCK header: unsupported datatype {fields['datatype']!r}")
        if "file" not in fields:
            warnings.warn("TCK header: no 'file' entry, data follow END", ZVUserWarning, 3)
            fields["file"] = f". {pos}"
        where = fields["file"].split()
        if len(where) != 2 or where[0] != "." or not where[1].isdigit():
            raise InvalidInputError(f"TCK header: unsupported file entry {fields['file']!r}")
        return cls(
            fields=fields, dtype=np.dtype(_TCK_DTYPES[fields["datatype"]]), offset=int(where[1])
        )


def _read_tck_header(path: Path) -> TckHeader:
    size = 1 << 12
    with path.open("rb") as f:
        while True:
            raw = f.read(size)
            f.seek(0)
            done = b"\nEND\n" in raw or b"\nEND\r\n" in raw or len(raw) < size
            if done or size >= _TCK_HEADER_MAX:
                return TckHeader.from_bytes(raw)
            size *= 4


def _scan_tck(rows: npt.NDArray[Any], path: Path) -> tuple[IntArray, IntArray]:
    """First row and row count of every streamline (a row of NaN ends each one).

    Raises
    ------
    InvalidInputError
        The rows do not end with a row of infinities right after a delimiter.
    """
    if len(rows) == 0 or not np.isinf(np.asarray(rows[-1])).all():
        raise InvalidInputError(f"{path}: TCK body does not end with 'inf inf inf' (truncated?)")
    data = rows[:-1]
    found: list[IntArray] = [np.zeros(0, np.int64)]
    for lo in range(0, len(data), _SCAN_ROWS):
        x = np.asarray(data[lo : lo + _SCAN_ROWS, 0])
        cand = np.flatnonzero(np.isnan(x)) + lo
        if cand.size:  # a delimiter is a row of NaN, not just a NaN x
            yz = np.asarray(data[cand, 1:])
            found.append(cand[np.isnan(yz).all(axis=1)].astype(np.int64))
    delims = np.concatenate(found)
    if len(data) and (not delims.size or delims[-1] != len(data) - 1):
        raise InvalidInputError(f"{path}: TCK body: rows after the last streamline delimiter")
    first = np.concatenate(([0], delims[:-1] + 1)).astype(np.int64)
    return first, delims - first


class TckReader(_Reader):
    """An MRtrix TCK file opened for reading: header parsed, body memory-mapped and indexed.

    Parameters
    ----------
    path
        The ``.tck`` file.

    Raises
    ------
    InvalidInputError
        Not a TCK file, bad header, or a body without the final ``inf`` row.
    """

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        try:
            self.header = _read_tck_header(self.path)
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{self.path}: not a TCK file: {exc}") from exc
        dtype = self.header.dtype
        row = 3 * dtype.itemsize
        size = self.path.stat().st_size - self.header.offset
        if size < 0 or size % row:
            raise InvalidInputError(f"{self.path}: TCK body is truncated ({size} bytes)")
        n_rows = size // row
        raw = (
            np.asarray(np.memmap(self.path, np.uint8, "r", self.header.offset, (size,)))
            if n_rows
            else np.zeros(0, np.uint8)
        )
        self._rows = raw.view(dtype).reshape(n_rows, 3)
        self._packed = raw.view(f"V{row}")
        self._first, counts = _scan_tck(self._rows, self.path)
        self.offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.offsets[1:])

    def close(self) -> None:
        """Release the memory map (it closes once the last view is gone)."""
        self._rows = np.zeros((0, 3), self.header.dtype)
        self._packed = np.zeros(0, self._packed.dtype)

    def read(self, start: int = 0, stop: int | None = None) -> TractData:
        """Read streamlines ``start:stop`` (default all); TCK coordinates are RAS+ mm already."""
        start, stop, off = self._range(start, stop)
        first, counts = self._first[start:stop], np.diff(off)
        pos = np.empty((int(off[-1]), 3), np.float32)
        bounds = _block_bounds(off, _BLOCK)
        for a, b in itertools.pairwise(bounds):
            raw = self._packed[_vertex_rows(first[a:b], counts[a:b], 1)]
            pos[int(off[a]) : int(off[b])] = raw.view(self.header.dtype).reshape(-1, 3)
        return TractData(pos, off)


def read_tck(path: PathLike) -> TractData:
    """Read a whole MRtrix TCK file (see :class:`TckReader`)."""
    with TckReader(path) as tck:
        return tck.read()
