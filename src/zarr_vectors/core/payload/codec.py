"""Encode and decode one stored payload element, byte-identical to zarr-python."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
from numcodecs.abc import Codec as NumcodecsCodec

from zarr_vectors.core.checksums import append_crc32c
from zarr_vectors.core.payload.blosc_blocks import (
    BLOSC_HEADER_BYTES,
    BloscTable,
    blosc_table,
    decode_blocks,
)
from zarr_vectors.core.payload.concurrency import parallel_map
from zarr_vectors.core.payload.element import (
    HEADER,
    Blob,
    check_declared,
    check_element_header,
    with_header,
)
from zarr_vectors.core.payload.lz4_blocks import default_split, encode_lz4_blocks
from zarr_vectors.core.payload.zstd_frames import (
    BATCH_ZSTD,
    decode_frames,
    encode_frames,
    encode_frames_many,
    frame_table,
    zstd_bounded,
)
from zarr_vectors.core.ragged import concat_ranges
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "DIRECT_CODECS",
    "ElementCodec",
    "encode_plain",
]

DIRECT_CODECS = ("blosc", "zstd")
"""Compressors whose elements :class:`~zarr_vectors.core.payload.rows.PayloadArray` decodes
straight into a buffer of its own."""


@dataclass(frozen=True)
class ElementCodec:
    """Encode/decode one vlen-bytes chunk holding a single element, byte-identical to zarr.

    With ``frame_bytes`` set and a zstd compressor, an element longer than that is stored as
    independent zstd frames of ``frame_bytes`` decoded bytes each, followed by a seek table
    (zstd seekable format).  A zstd stream is a sequence of frames (RFC 8878 §3.1), so
    zarr-python and every zstd decoder read it as usual; this module can also decode only
    the frames holding some rows (:meth:`decode_rows`).
    """

    compressor: NumcodecsCodec | None
    frame_bytes: int | None = None
    lz4_blocks: tuple[int, int] | None = None
    """``(typesize, blocksize)``: Blosc LZ4 with byte shuffle written in blocks of exactly
    ``blocksize`` bytes (:func:`~zarr_vectors.core.payload.lz4_blocks.encode_lz4_blocks`)."""
    crc32c: bool = False
    """The chain ends with zarr's ``crc32c`` codec: stored bytes are followed by their
    CRC-32C.  :meth:`encode` appends it; the decoding methods take the stored bytes *without*
    it, already verified by :func:`~zarr_vectors.core.checksums.strip_crc32c` (the caller
    fetches them and names the chunk)."""

    def encode(self, payload: bytes | memoryview, headed: bool = False) -> Blob:
        """Return the stored bytes of one element (vlen header + ``payload``, encoded).

        ``headed``: ``payload`` is the whole element already (header included).
        """
        data = self._encode(payload, headed)
        return append_crc32c(data) if self.crc32c else data

    def _encode(self, payload: bytes | memoryview, headed: bool) -> Blob:
        raw = memoryview(payload).cast("B") if headed else with_header(payload)
        if self.compressor is None:
            return raw
        if self.lz4_blocks is not None:
            return encode_lz4_blocks(raw, *self.lz4_blocks)
        frame = self.frame_bytes
        if frame is None or len(raw) <= frame or self.compressor.codec_id != "zstd":
            return encode_plain(self.compressor, raw)
        return encode_frames(raw, frame, self.compressor)

    def encode_many(
        self, payloads: Sequence[bytes | memoryview], headed: bool = False
    ) -> list[Blob]:
        """:meth:`encode` every payload; the frames of all seekable ones in one zstd batch.

        The batch compresses on native threads without the GIL (same bytes as :meth:`encode`).
        """
        comp, frame = self.compressor, self.frame_bytes
        views = [memoryview(p).cast("B") for p in payloads]
        if comp is None or frame is None or comp.codec_id != "zstd" or not BATCH_ZSTD:
            encode = partial(self.encode, headed=headed)
            return parallel_map(encode, views, sum(len(v) for v in views))
        if headed:  # the batch writes each element's header with its first frame
            views = [v[HEADER.size :] for v in views]
        framed = [i for i, v in enumerate(views) if HEADER.size + len(v) > frame]
        out: list[Blob] = [b"" if HEADER.size + len(v) > frame else self.encode(v) for v in views]
        batch = encode_frames_many([views[i] for i in framed], frame, comp)
        for i, data in zip(framed, batch, strict=True):
            out[i] = append_crc32c(data) if self.crc32c else data
        return out

    def decode(self, data: Blob, where: str) -> bytes | memoryview:
        """Return the rows bytes of one stored element (its vlen header checked and cut)."""
        comp = self.compressor
        if comp is not None and comp.codec_id == "zstd":
            raw: Any = zstd_bounded(data, where)
            check_element_header(raw, where)
            return memoryview(raw)[HEADER.size :]
        if comp is not None and comp.codec_id == "blosc" and len(data) >= BLOSC_HEADER_BYTES:
            check_declared(int.from_bytes(data[4:8], "little"), len(data), where)
        try:
            raw = data if comp is None else comp.decode(data)
        except CorruptPayloadError as exc:  # a v2 checksum filter's verdict
            raise CorruptPayloadError(f"{where}: {exc}") from exc
        except Exception as exc:  # any codec error on untrusted bytes (zlib, blosc, ...)
            raise CorruptPayloadError(f"{where}: cannot decompress ({exc!r})") from exc
        if not isinstance(raw, bytes | bytearray | memoryview):
            raw = np.ascontiguousarray(raw).reshape(-1).view(np.uint8).data
        check_element_header(raw, where)
        return memoryview(raw)[HEADER.size :]  # no copy: rows are joined once by the reader

    def decode_rows(
        self,
        data: Blob,
        where: str,
        out: npt.NDArray[np.uint8],
        starts: npt.NDArray[np.int64],
        stops: npt.NDArray[np.int64],
    ) -> None:
        """Decode at least the byte ranges ``[starts, stops)`` of the rows into ``out``.

        ``out`` has the element's length without header; its other bytes are left as they are.

        Uncompressed and seekable payloads decode only what the ranges need; any other
        payload is decoded whole.
        """
        table = None
        if self.compressor is None:
            if len(data) != HEADER.size + len(out):
                self._whole_into(data, where, out)
                return
            check_element_header(memoryview(data)[: HEADER.size], where, len(out))
            view = np.frombuffer(data, dtype=np.uint8, offset=HEADER.size)
            _copy_ranges(view, out, starts, stops)
            return
        if self.compressor.codec_id == "blosc":
            blocks = _blosc_blocks(data, where)
            if blocks is not None and blocks.nbytes == HEADER.size + len(out):
                stored = memoryview(data)
                decode_blocks(
                    blocks, out, starts, stops, HEADER.size, where, lambda o, n: stored[o : o + n]
                )
                return
        if self.compressor.codec_id == "zstd":
            table = frame_table(data, where)
        if table is None or table.decoded[-1] != HEADER.size + len(out):
            self._whole_into(data, where, out)
            return
        decode_frames(data, table, out, starts, stops, HEADER.size, where)

    def _whole_into(self, data: Blob, where: str, out: npt.NDArray[np.uint8]) -> None:
        rows = self.decode(data, where)
        if len(rows) != len(out):
            raise CorruptPayloadError(f"{where}: {len(rows)} bytes, expected {len(out)}")
        out[:] = np.frombuffer(rows, dtype=np.uint8)


def encode_plain(compressor: NumcodecsCodec, raw: Any) -> bytes:
    """Encode with ``compressor``; Blosc in c-blosc's default split mode, deterministically.

    :func:`~zarr_vectors.core.payload.lz4_blocks.encode_lz4_blocks` switches c-blosc to "never
    split" process-wide while it runs; holding the default here keeps this encode's bytes
    independent of what other threads are doing.
    """
    if getattr(compressor, "codec_id", None) != "blosc":
        return bytes(compressor.encode(raw))
    with default_split():
        return bytes(compressor.encode(raw))


def _blosc_blocks(data: bytes | memoryview, where: str) -> BloscTable | None:
    """Block table of a stored Blosc element; None when it is too short to have one."""
    if len(data) < BLOSC_HEADER_BYTES:
        return None
    return blosc_table(data, where)


def _copy_ranges(
    src: npt.NDArray[np.uint8],
    dst: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    stops: npt.NDArray[np.int64],
) -> None:
    idx = concat_ranges(starts, stops - starts)
    dst[idx] = src[idx]
