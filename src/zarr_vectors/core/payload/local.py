"""Reading local, unsharded payload files in place: only the bytes (frames, blocks) asked for."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.checksums import CHECKSUM_BYTES, strip_crc32c
from zarr_vectors.core.payload.access import ElementAccess
from zarr_vectors.core.payload.blosc_blocks import (
    BLOSC_HEADER_BYTES,
    BloscTable,
    blosc_table,
    decode_ranges,
    table_length,
)
from zarr_vectors.core.payload.blosc_many import decode_many, layout_key
from zarr_vectors.core.payload.caches import SEEK_TABLES
from zarr_vectors.core.payload.element import HEADER, check_element_header
from zarr_vectors.core.payload.store_io import open_chunk, pread_all, read_element
from zarr_vectors.core.payload.zstd_frames import (
    FrameTable,
    TailTooShort,
    decode_frames,
    frame_table,
)
from zarr_vectors.core.ragged import concat_ranges
from zarr_vectors.core.scratch import Lease, empty_bytes
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "SETTLE_NS",
    "LocalReads",
]

SETTLE_NS = 2_000_000_000
"""A chunk file whose modification or change time is less than this many nanoseconds old
when its checksum is verified is verified again on its next read (see
:meth:`LocalReads._verify_whole`)."""


def _identity(stat: os.stat_result) -> tuple[int, ...]:
    """Return what changes whenever a file is rewritten: device, inode, size, times."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@dataclass(frozen=True)
class LocalReads(ElementAccess):
    """Reads of a local, unsharded payload array straight from its files."""

    def _read_files_concat(
        self, flats: list[int], lease: Lease | None, expected: Sequence[int] | None
    ) -> tuple[npt.NDArray[np.uint8], list[int]] | None:
        """``PayloadArray.read_concat`` of local uncompressed elements: each file read in place.

        One ``readv`` per file puts its vlen header in a small array (checked) and its rows
        straight into the result: no buffer of stored bytes, no copy.  Without ``expected``
        each file's size is taken first.
        """
        root = self.local_root
        assert root is not None
        paths = [os.path.join(root, k) for k in self._keys(flats)]
        if expected is None:
            sizes = [self._stat_rows(flat, path) for flat, path in zip(flats, paths, strict=True)]
        else:
            sizes = [int(n) for n in expected]
        starts = [0, *accumulate(max(0, n) for n in sizes)]
        out = empty_bytes(starts[-1], lease)
        head = np.empty(HEADER.size, dtype=np.uint8)
        crc = self._fast is not None and self._fast[0].crc32c
        for i, path in enumerate(paths):
            if sizes[i] < 0:  # no file
                continue
            wrong = read_element(path, head, out[starts[i] : starts[i + 1]], crc)
            if wrong is None or (wrong == "missing" and sizes[i] == 0):
                continue
            if expected is not None:
                return None
            raise CorruptPayloadError(
                f"{self.name} chunk {flats[i]}: "
                + ("removed while read" if wrong == "missing" else wrong)
            )
        return out, [max(0, n) for n in sizes]

    def _stat_rows(self, flat: int, path: str) -> int:
        """Rows bytes of an uncompressed element file, from its size (-1: no file)."""
        crc = CHECKSUM_BYTES if self._fast is not None and self._fast[0].crc32c else 0
        try:
            size = os.stat(path).st_size - HEADER.size - crc
        except FileNotFoundError:
            return -1
        if size < 0:
            raise CorruptPayloadError(f"{self.name} chunk {flat}: truncated element header")
        return size

    def _local_path(self, flat: int) -> str:
        """Path of element ``flat``'s file in the local store (kept per element)."""
        path = self._paths.get(flat)
        if path is None:
            assert self.local_root is not None
            path = self._paths[flat] = os.path.join(self.local_root, self._key(flat))
        return path

    def decode_rows_local(
        self,
        flat: int,
        out: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        stops: npt.NDArray[np.int64],
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """Decode the byte ranges ``[starts, stops)`` (sorted by start) of a local element.

        Returns ``(buf, pos)``: range ``i`` is ``buf[pos[i] : pos[i] + stops[i] - starts[i]]``.
        ``buf`` is ``out`` (the element's decoded length, without header; then ``pos`` is
        ``starts``) or, for Blosc blocks, just the blocks holding the ranges
        (:func:`~zarr_vectors.core.payload.blosc_blocks.decode_ranges`).  For a seekable
        payload only its seek table and the frames the ranges need are read; for an
        uncompressed one its header and the span of the ranges, straight into ``out``.
        """
        assert self.local_root is not None
        assert self._fast is not None
        codec = self._fast[0]
        where = f"{self.name} chunk {flat}"
        try:
            path = self._local_path(flat)
            fd = open_chunk(path)
        except FileNotFoundError:
            if len(out):
                raise CorruptPayloadError(f"{where}: missing, expected {len(out)} bytes") from None
            return out, starts
        try:
            stat = os.fstat(fd)
            size = stat.st_size
            if codec.crc32c:
                if self._verified.get(flat) != _identity(stat):
                    return self._verify_whole(flat, fd, stat, where, out, starts, stops)
                size -= CHECKSUM_BYTES  # verified and unchanged since: read only what is needed
            if self._raw and size == HEADER.size + len(out):
                check_element_header(os.pread(fd, HEADER.size, 0), where, len(out))
                if len(starts):
                    lo, hi = int(starts.min()), int(stops.max())
                    if os.preadv(fd, [out[lo:hi].data], HEADER.size + lo) != hi - lo:
                        raise CorruptPayloadError(f"{where}: file changed size while read")
                return out, starts
            table = self._cached_table(path, fd, (size, stat.st_mtime_ns), where)
            if table is None:
                codec.decode_rows(pread_all(fd, size, where), where, out, starts, stops)
                return out, starts
            _check_decoded(table, len(out), where)
            read = lambda offset, n: os.pread(fd, n, offset)
            if isinstance(table, BloscTable):
                into = lambda offset, view: os.preadv(fd, [view], offset)
                return decode_ranges(table, starts, stops, HEADER.size, where, read, into)
            decode_frames(b"", table, out, starts, stops, HEADER.size, where, read=read)
            return out, starts
        finally:
            os.close(fd)

    def decode_rows_local_many(
        self,
        flats: Sequence[int],
        rows_bytes: Sequence[int],
        starts: npt.NDArray[np.int64],
        stops: npt.NDArray[np.int64],
        bounds: Sequence[tuple[int, int]],
        lease: Lease | None = None,
    ) -> tuple[list[int], npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """Decode the byte ranges of many local elements together, where that applies.

        Element ``flats[i]`` (``rows_bytes[i]`` bytes of rows) wants the ranges
        ``[starts[j], stops[j])`` for ``a <= j < b``, ``(a, b) = bounds[i]`` (sorted by start).
        Elements whose file was verified by this reader and holds Blosc blocks of one layout
        are decoded with one call of the decoder
        (:func:`~zarr_vectors.core.payload.blosc_many.decode_many`).  Returns the indexes
        ``i`` of those elements, the decoded blocks and, for each of their ranges (in order),
        where it starts in them; the other elements are left to :meth:`decode_rows_local`.
        With a ``lease`` the decoded blocks are valid while it lasts.
        """
        fds: list[int] = []
        try:
            done, tables = self._batchable(flats, rows_bytes, fds)
            if not done:
                return [], np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64)
            lo = np.asarray([bounds[i][0] for i in done], dtype=np.int64)
            n = np.asarray([bounds[i][1] - bounds[i][0] for i in done], dtype=np.int64)
            which = concat_ranges(lo, n)
            owner = np.repeat(np.arange(len(done), dtype=np.int64), n)
            mine = [fds[i] for i in done]
            into = lambda i, offset, view: os.preadv(mine[i], [view], offset)
            raw, pos = decode_many(
                tables,
                owner,
                starts[which] + HEADER.size,
                stops[which] + HEADER.size,
                into,
                self.name,
                lease,
            )
            return done, raw, pos
        finally:
            for fd in fds:
                if fd >= 0:
                    os.close(fd)

    def _batchable(
        self, flats: Sequence[int], rows_bytes: Sequence[int], fds: list[int]
    ) -> tuple[list[int], list[BloscTable]]:
        """Return the indexes of the elements decoded together, and their block tables.

        Opens the files of ``flats``, appending their descriptors to ``fds`` (-1: absent).
        """
        assert self.local_root is not None
        assert self._fast is not None
        done: list[int] = []
        tables: list[BloscTable] = []
        key = None
        if not self._fast[0].crc32c or self._fast[0].compressor is None:
            return done, tables
        for i, flat in enumerate(flats):
            if flat not in self._verified:  # read whole and verified by decode_rows_local
                fds.append(-1)
                continue
            path = self._local_path(flat)
            try:
                fds.append(open_chunk(path))
            except FileNotFoundError:
                fds.append(-1)
                continue
            stat = os.fstat(fds[-1])
            if self._verified.get(flat) != _identity(stat):
                continue
            size = stat.st_size - CHECKSUM_BYTES
            table = self._cached_table(path, fds[-1], (size, stat.st_mtime_ns), self.name)
            if not isinstance(table, BloscTable):
                continue
            layout = layout_key(table)
            if layout is None or (key is not None and layout != key):
                continue
            _check_decoded(table, rows_bytes[i], f"{self.name} chunk {flat}")
            key = layout
            done.append(i)
            tables.append(table)
        return done, tables

    def _verify_whole(
        self,
        flat: int,
        fd: int,
        stat: os.stat_result,
        where: str,
        out: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        stops: npt.NDArray[np.int64],
    ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """:meth:`decode_rows_local` of a chunk file read whole and its checksum verified.

        The checksum covers the whole chunk, so the first read of a file by this array
        fetches and verifies all of it.  The file is then remembered by its identity, size
        and times (:func:`_identity`): any rewrite, in place or by replacement, changes them,
        and later reads of the unchanged file fetch only the blocks they need.  A file changed
        less than :data:`SETTLE_NS` before it was read is not remembered, since a write within
        the file system's timestamp granularity could leave its times as they were.
        """
        assert self._fast is not None
        codec = self._fast[0]
        stored = strip_crc32c(pread_all(fd, stat.st_size, where), where)
        if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) > SETTLE_NS:
            self._verified[flat] = _identity(stat)
        comp = codec.compressor
        if comp is not None and comp.codec_id == "blosc" and len(stored) >= BLOSC_HEADER_BYTES:
            table = blosc_table(stored, where)
            _check_decoded(table, len(out), where)
            return decode_ranges(
                table, starts, stops, HEADER.size, where, lambda o, n: stored[o : o + n]
            )
        codec.decode_rows(stored, where, out, starts, stops)
        return out, starts

    def _cached_table(
        self, path: str, fd: int, stamp: tuple[int, int], where: str
    ) -> FrameTable | BloscTable | None:
        """Seek (block) table of a local file, kept while its size and mtime stay."""
        known = SEEK_TABLES.get(path)
        if known is not None and known[0] == stamp:
            return known[1]  # type: ignore[no-any-return]
        table = self._read_table(fd, stamp[0], where)
        SEEK_TABLES.put(path, (stamp, table))
        return table

    def _read_table(self, fd: int, size: int, where: str) -> FrameTable | BloscTable | None:
        assert self._fast is not None
        codec = self._fast[0]
        if codec.compressor is not None and codec.compressor.codec_id == "blosc":
            if size < BLOSC_HEADER_BYTES:
                return None
            head = os.pread(fd, min(size, 4096), 0)
            need = table_length(head, where)
            if need > len(head):
                head = os.pread(fd, need, 0)
            return blosc_table(head, where, size)
        if codec.compressor is None or codec.frame_bytes is None:
            return None
        tail = os.pread(fd, min(size, 2048), size - min(size, 2048))
        try:
            return frame_table(tail, where, size)
        except TailTooShort as short:
            return frame_table(os.pread(fd, short.needed, size - short.needed), where, size)


def _check_decoded(table: FrameTable | BloscTable, rows_bytes: int, where: str) -> None:
    """Raise unless a seek table decodes to the header and ``rows_bytes`` of rows."""
    decoded = table.nbytes if isinstance(table, BloscTable) else table.decoded[-1]
    if decoded != HEADER.size + rows_bytes:
        raise CorruptPayloadError(
            f"{where}: decodes to {decoded - HEADER.size} bytes, expected {rows_bytes}"
        )
