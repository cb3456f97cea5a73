"""The row-reading interface of payload arrays: :class:`PayloadArray`.

Every reader of per-chunk payloads (:mod:`zarr_vectors.core.reader`, validation, tools) goes
through the methods of :class:`PayloadArray`, one per way of asking for rows:

=====================================  ======================================================
:meth:`~PayloadArray.read`             each element's rows as its own bytes (any codec chain)
:meth:`~PayloadArray.read_concat`      all elements' rows decoded into one array, and the
                                       bytes of each (direct codecs: Blosc, zstd, none)
:meth:`~PayloadArray.iter_decoded`     element by element, in one reused buffer
:meth:`~PayloadArray.fetch`            the stored (encoded) bytes, for :meth:`decode_rows`
:meth:`~PayloadArray.decode_rows`      some byte ranges of one fetched element
:meth:`~PayloadArray.decode_rows_local`  the same, reading a local file in place
=====================================  ======================================================

The methods that return None leave the caller to fall back on :meth:`~PayloadArray.read`,
which always answers.  Writes are :meth:`~zarr_vectors.core.payload.access.ElementAccess.write`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from itertools import accumulate

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.payload.concurrency import (
    CPUS,
    byte_groups,
    decode_plan,
    parallel_map,
    serial_blosc,
)
from zarr_vectors.core.payload.element import HEADER, MIN_DECODE_CAP, Blob, check_element_header
from zarr_vectors.core.payload.local import LocalReads
from zarr_vectors.core.scratch import Lease, empty_bytes
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "PayloadArray",
]


@dataclass(frozen=True)
class PayloadArray(LocalReads):
    """A per-chunk payload array: one variable-length element per spatial chunk.

    The row-reading interface (see the module documentation) on top of
    :class:`~zarr_vectors.core.payload.access.ElementAccess` (codec, keys, fetch, write) and
    :class:`~zarr_vectors.core.payload.local.LocalReads` (local files read in place).
    """

    def read(self, flat_indices: npt.NDArray[np.int64]) -> Sequence[bytes | memoryview]:
        """Return the element of each flat grid index (``b""`` where nothing is stored)."""
        flats = [int(i) for i in flat_indices]
        if not flats:
            return []
        fast = self._fast
        if fast is None:
            return self._read_generic(flats)
        codec = fast[0]
        raw = self._fetch(flats, fast[1])
        nbytes = sum(len(r) for r in raw if r is not None)
        if codec.compressor is not None and codec.compressor.codec_id == "blosc":
            nbytes //= 8  # LZ4 decodes much faster than zstd: threads pay off only later
        with serial_blosc():
            return parallel_map(
                lambda pair: b"" if pair[1] is None else self._decode_whole(*pair),
                list(zip(flats, raw, strict=True)),
                nbytes,
            )

    def read_concat(
        self,
        flat_indices: npt.NDArray[np.int64],
        lease: Lease | None = None,
        expected: Sequence[int] | None = None,
    ) -> tuple[npt.NDArray[np.uint8], list[int]] | None:
        """Return the elements' rows concatenated, and each element's length in bytes.

        Blosc and zstd payloads decode straight into one array (no per-chunk buffers, no
        join): element ``i`` decodes over the end of element ``i - 1``'s slot, its 8-byte vlen
        header landing where the previous element's last bytes go, so elements are decoded
        last to first and each header is checked before it is overwritten.  Local
        uncompressed files are read into their places.  Returns None for other codecs, and
        for zstd elements whose stored bytes do not tell their decoded size (use
        :meth:`read`).  With a ``lease``, the rows (and the stored bytes fetched on the way)
        are in its buffers: valid while it lasts.

        ``expected``: the rows bytes each element should have (vertex-aligned arrays know
        them from ``vertex_counts``), which spares local uncompressed reads a ``stat`` per
        file; when an element has other than that, returns None (the caller's usual path
        then names the problem).
        """
        fast = self._direct
        if fast is None:
            return None
        flats = [int(i) for i in flat_indices]
        if self._raw and self.local_root is not None:
            if expected is not None and sum(expected) > MIN_DECODE_CAP:
                expected = None  # much to allocate: take the files' sizes, not the counts'
            return self._read_files_concat(flats, lease, expected)
        raw = self._fetch(flats, fast[1], lease)
        sizes = self._element_sizes(flats, raw, expected)
        if sizes is None:
            return None
        starts = [0, *accumulate(sizes)]
        out = empty_bytes(HEADER.size + starts[-1], lease)
        plan = decode_plan()
        parts = plan.parts if plan.pool is not None else min(plan.parts, CPUS)
        # zstd decodes much slower than LZ4: only its big reads spread over threads
        groups = byte_groups(sizes, parts) if self._codec_id == "zstd" else [(0, len(flats))]
        decode = partial(self._decode_group, flats, raw, starts, out)
        with serial_blosc():
            if len(groups) == 1:
                done = decode(*groups[0])
            elif plan.pool is not None:
                futures = [plan.pool.submit(decode, lo, hi) for lo, hi in groups]
                wait(futures)  # every part ends before ``out`` can go back to its lease
                done = all(f.result() for f in futures)
            else:
                with ThreadPoolExecutor(max_workers=len(groups)) as pool:
                    done = all(list(pool.map(decode, *zip(*groups, strict=True))))
        return (out[HEADER.size :], sizes) if done else None

    def _decode_group(
        self,
        flats: list[int],
        raw: Sequence[Blob | None],
        starts: list[int],
        out: npt.NDArray[np.uint8],
        lo: int,
        hi: int,
    ) -> bool:
        """Decode elements ``lo:hi`` into their places of :meth:`read_concat`'s ``out``.

        Last to first, each element's header landing on the tail of the ones before (more
        than one when they are shorter than a header).  A group after the first owns only the
        rows of its elements: an element whose header would land before them goes through a
        buffer of its own, so that no two groups write the same bytes.  False as
        :meth:`_decode_element`.
        """
        floor = 0 if lo == 0 else starts[lo] + HEADER.size  # nothing is written before
        for i in reversed(range(lo, hi)):
            data = raw[i]
            if data is None:
                continue
            a, b = starts[i], starts[i + 1] + HEADER.size
            if a >= floor:
                if not self._decode_element(flats[i], data, out[a:b]):
                    return False
                continue
            own = np.empty(b - a, dtype=np.uint8)
            if not self._decode_element(flats[i], data, own):
                return False
            out[a + HEADER.size : b] = own[HEADER.size :]
        return True

    def iter_decoded(
        self, flat_indices: npt.NDArray[np.int64], lease: Lease
    ) -> Iterator[tuple[int, npt.NDArray[np.uint8]]] | None:
        """Decode elements one at a time: ``(i, rows bytes of element i)``.

        The stored bytes are fetched in one batch (into ``lease`` buffers); each element then
        decodes into one small buffer reused for the next, so a consumer working chunk by
        chunk keeps its data in cache and never holds every decoded row (uncompressed
        elements are views of the fetched bytes).  Use (or copy) the bytes before advancing.
        Elements with nothing stored are skipped.  Returns None for codecs not decoded here
        (use :meth:`read_concat` or :meth:`read`).
        """
        fast = self._direct
        if fast is None:
            return None
        flats = [int(i) for i in flat_indices]
        raw = self._fetch(flats, fast[1], lease)
        if self._raw:
            return self._iter_stored(flats, raw)
        sizes = self._element_sizes(flats, raw)
        if sizes is None:
            return None
        return self._iter_decoded(flats, raw, sizes)

    def _iter_stored(
        self, flats: list[int], raw: Sequence[Blob | None]
    ) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
        """:meth:`iter_decoded` of uncompressed elements: views of the stored bytes."""
        for i, (flat, data) in enumerate(zip(flats, raw, strict=True)):
            if data is not None:
                check_element_header(data, f"{self.name} chunk {flat}")
                yield i, np.frombuffer(data, dtype=np.uint8, offset=HEADER.size)

    def _iter_decoded(
        self, flats: list[int], raw: Sequence[Blob | None], sizes: list[int]
    ) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
        scratch = np.empty(HEADER.size + max(sizes, default=0), dtype=np.uint8)
        with serial_blosc():
            for i, (flat, data) in enumerate(zip(flats, raw, strict=True)):
                if data is None:
                    continue
                slot = scratch[: HEADER.size + sizes[i]]
                if self._decode_element(flat, data, slot):
                    yield i, slot[HEADER.size :]
                else:  # frames that do not say their total: decoded the usual way
                    yield i, np.frombuffer(self._decode_whole(flat, data), dtype=np.uint8)

    def fetch(self, flat_indices: npt.NDArray[np.int64]) -> Sequence[Blob | None] | None:
        """Return the stored (still encoded) bytes of each element, None where nothing is.

        Returns None for codec chains this module does not decode itself (then use
        :meth:`read`).  Decode with :meth:`decode_rows`.
        """
        fast = self._fast
        if fast is None:
            return None
        flats = [int(i) for i in flat_indices]
        return self._fetch(flats, fast[1]) if flats else []

    def decode_rows(
        self,
        flat: int,
        data: Blob | None,
        out: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        stops: npt.NDArray[np.int64],
    ) -> None:
        """Decode the byte ranges ``[starts, stops)`` of element ``flat`` into ``out``.

        ``data`` comes from :meth:`fetch`; ``out`` has the element's decoded length.
        Seekable payloads decode only the frames the ranges need.
        """
        where = f"{self.name} chunk {flat}"
        if data is None:
            if len(out):
                raise CorruptPayloadError(f"{where}: missing, expected {len(out)} bytes")
            return
        fast = self._fast
        if fast is None:
            raise ValueError(f"{self.name}: no direct decoder for this codec chain")
        fast[0].decode_rows(data, where, out, starts, stops)
