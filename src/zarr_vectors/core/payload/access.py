"""Stored elements of a payload array: codec, keys, batched fetch, write, whole decodes.

:class:`ElementAccess` is the base of :class:`~zarr_vectors.core.payload.rows.PayloadArray`;
readers use the row-reading interface documented there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from numcodecs import blosc

from zarr_vectors.core.checksums import strip_crc32c
from zarr_vectors.core.codec_policy import check_codecs
from zarr_vectors.core.payload import store_io
from zarr_vectors.core.payload.blosc_blocks import BLOSC_HEADER_BYTES
from zarr_vectors.core.payload.chain import FastCodec, cached_element_codec
from zarr_vectors.core.payload.codec import DIRECT_CODECS
from zarr_vectors.core.payload.element import HEADER, Blob, check_declared, check_element_header
from zarr_vectors.core.payload.store_io import (
    KeyFormat,
    chunk_key_format,
    chunk_keys,
    local_dir,
    set_many,
    unravel,
)
from zarr_vectors.core.payload.zstd_frames import zstd_into, zstd_size
from zarr_vectors.core.scratch import Lease
from zarr_vectors.core.shards import ShardFormat
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "ElementAccess",
]


@dataclass(frozen=True)
class ElementAccess:
    """The stored elements of a per-chunk payload array (one per spatial chunk)."""

    array: zarr.Array[Any]
    """The underlying Zarr array (shape = chunk grid shape)."""
    _paths: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    """File path of each chunk read in place (local arrays)."""
    _verified: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)
    """Local chunk files whose whole checksum this array verified, with the file's identity,
    size and times then (:mod:`zarr_vectors.core.payload.local`)."""

    @cached_property
    def name(self) -> str:
        """Path of the array inside the store (asked for by every element read: kept)."""
        return self.array.path

    @property
    def attrs(self) -> Mapping[str, Any]:
        """Array attributes (``zv_array``, ``dtype``, ``width``, ``encoding``, ...)."""
        return self.array.attrs.asdict()

    @cached_property
    def _fast(self) -> FastCodec | None:
        check_codecs(self.array)  # every read and write path asks for this first
        return cached_element_codec(self.array)

    @property
    def _codec_id(self) -> str | None:
        """Codec id of the elements' compressor (None: uncompressed or not decoded here)."""
        fast = self._fast
        return None if fast is None or fast[0].compressor is None else fast[0].compressor.codec_id

    @property
    def _raw(self) -> bool:
        """Whether the elements are stored uncompressed (the vlen element itself)."""
        fast = self._fast
        return fast is not None and fast[0].compressor is None

    @property
    def _direct(self) -> FastCodec | None:
        """:attr:`_fast` when its elements decode straight into place (Blosc, zstd, none)."""
        return self._fast if self._raw or self._codec_id in DIRECT_CODECS else None

    @property
    def write_batch_bytes(self) -> int | None:
        """Bytes of rows to encode and store at a time, or None to write all chunks at once.

        A shard must be written whole (a later batch would read and rewrite it), and a remote
        store is fastest with every chunk of the array in flight at once: None.  Local zstd
        arrays take batches of 8 MiB (their encodes spread over threads from 4 MiB), other
        codecs 2 MiB (their encodes stay on the writer thread, in cache).
        """
        fast = self._fast
        if fast is None or fast[1] is not None or local_dir(self.array.store_path.store) is None:
            return None
        comp = fast[0].compressor
        return 8 << 20 if comp is not None and comp.codec_id == "zstd" else 2 << 20

    def _key(self, flat: int) -> str:
        return self._keys([flat])[0]

    def _keys(self, flats: Sequence[int]) -> list[str]:
        """Store keys of the elements ``flats``."""
        if not len(flats):
            return []
        coords = np.unravel_index(np.asarray(flats, dtype=np.int64), self.array.shape)
        rows = zip(*(c.tolist() for c in coords), strict=True)
        return chunk_keys(self.array, self._key_format, rows)

    @cached_property
    def _key_format(self) -> KeyFormat:
        return chunk_key_format(self.array)

    def _shard_of(self, flat: int, fmt: ShardFormat) -> tuple[tuple[int, ...], int]:
        coords = unravel(flat, self.array.shape)
        shard = tuple(int(c) // s for c, s in zip(coords, fmt.chunks_per_shard, strict=True))
        inner = tuple(int(c) % s for c, s in zip(coords, fmt.chunks_per_shard, strict=True))
        return shard, int(np.ravel_multi_index(inner, fmt.chunks_per_shard))

    def _shard_key(self, shard: tuple[int, ...]) -> str:
        return chunk_keys(self.array, self._key_format, [shard])[0]

    def write(
        self,
        flat_indices: npt.NDArray[np.int64],
        payloads: Sequence[bytes | memoryview],
        headed: bool = False,
    ) -> None:
        """Write one element per flat grid index; empty payloads are skipped.

        ``headed``: each payload is a whole element already (vlen header, then the bytes;
        see :func:`~zarr_vectors.core.gather.payload_batches`).
        """
        empty = HEADER.size if headed else 0
        pairs = [(int(i), p) for i, p in zip(flat_indices, payloads, strict=True) if len(p) > empty]
        if not pairs:
            return
        fast = self._fast
        if fast is None:
            if headed:
                pairs = [(i, memoryview(p).cast("B")[HEADER.size :]) for i, p in pairs]
            self._write_generic(pairs)
            return
        codec, fmt = fast
        encoded = codec.encode_many([p for _, p in pairs], headed)
        store = self.array.store_path.store
        if fmt is None:
            keys = self._keys([i for i, _ in pairs])
            set_many(store, list(zip(keys, encoded, strict=True)))
            return
        shards: dict[tuple[int, ...], dict[int, Blob]] = {}
        for (flat, _), data in zip(pairs, encoded, strict=True):
            shard, inner = self._shard_of(flat, fmt)
            shards.setdefault(shard, {})[inner] = data
        keys = [self._shard_key(k) for k in shards]
        # a shard that already exists is merged: read-modify-write of the whole shard
        for key, old, new in zip(
            keys, store_io.get_many(store, keys), shards.values(), strict=True
        ):
            if old is not None:
                merged = fmt.split(old, f"{self.name} shard {key}")
                merged.update(new)
                new.clear()
                new.update(merged)
        set_many(store, [(k, fmt.encode(v)) for k, v in zip(keys, shards.values(), strict=True)])

    def _write_generic(self, pairs: list[tuple[int, bytes | memoryview]]) -> None:
        idx = np.unravel_index(np.array([i for i, _ in pairs]), self.array.shape)
        values = np.empty(len(pairs), dtype=object)
        values[:] = [bytes(p) for _, p in pairs]
        with quiet_vlen():
            self.array.set_coordinate_selection(idx, values)

    def _decode_whole(self, flat: int, data: Blob) -> bytes | memoryview:
        """Rows bytes of one stored element, through the element codec."""
        fast = self._fast
        assert fast is not None
        return fast[0].decode(data, f"{self.name} chunk {flat}")

    def _element_sizes(
        self, flats: list[int], raw: Sequence[Blob | None], expected: Sequence[int] | None = None
    ) -> list[int] | None:
        """Rows bytes of each stored element (0 where none); None when one does not say.

        Sizes are checked before anything is allocated from them: against ``expected``
        when given (``vertex_counts``), else against :func:`decode_cap`.
        """
        sizes = []
        for i, (flat, data) in enumerate(zip(flats, raw, strict=True)):
            if data is None:
                sizes.append(0)
                continue
            n = self._decoded_size(flat, data)
            if n is None:
                return None
            where = f"{self.name} chunk {flat}"
            if expected is not None and n - HEADER.size != expected[i]:
                raise CorruptPayloadError(
                    f"{where}: decodes to {n - HEADER.size} bytes, vertex_counts says {expected[i]}"
                )
            if not self._raw:
                check_declared(n, len(data), where)
            sizes.append(n - HEADER.size)
        return sizes

    def _decode_element(self, flat: int, data: Blob, slot: npt.NDArray[np.uint8]) -> bool:
        """Decompress a stored element into ``slot`` (its size) and check its header.

        Returns False for zstd frames that do not fill ``slot`` exactly (frames without a
        seek table, only the first of which says its size); raises for corrupt bytes.
        """
        where = f"{self.name} chunk {flat}"
        if self._raw:
            if len(data) != len(slot):
                raise CorruptPayloadError(f"{where}: {len(data)} bytes, expected {len(slot)}")
            slot[:] = np.frombuffer(data, dtype=np.uint8)
        elif self._codec_id == "blosc":
            try:
                blosc.decompress(data, slot)
            except (RuntimeError, ValueError) as exc:
                raise CorruptPayloadError(f"{where}: cannot decompress ({exc!r})") from exc
        elif not zstd_into(data, slot, where):
            return False
        check_element_header(slot, where)
        return True

    def _decoded_size(self, flat: int, data: Blob) -> int | None:
        """Return the decoded bytes (vlen header included) of a stored element, if it says."""
        where = f"{self.name} chunk {flat}"
        if self._raw:
            if len(data) < HEADER.size:
                raise CorruptPayloadError(f"{where}: truncated element header")
            return len(data)
        if self._codec_id != "blosc":
            return zstd_size(data, where)
        if len(data) < BLOSC_HEADER_BYTES:
            raise CorruptPayloadError(f"{where}: truncated Blosc header")
        nbytes = int.from_bytes(data[4:8], "little")
        if nbytes < HEADER.size:
            raise CorruptPayloadError(f"{where}: truncated element header")
        return nbytes

    def _fetch(
        self, flats: list[int], fmt: ShardFormat | None, lease: Lease | None = None
    ) -> Sequence[Blob | None]:
        """Fetch the stored bytes of the elements ``flats`` (None where absent) in one batch.

        With a ``crc32c`` chain each element's checksum is verified here and cut off: no
        decoder ever sees bytes that do not match it.
        """
        if fmt is None:
            got = store_io.get_many(self.array.store_path.store, self._keys(flats), lease)
        else:
            got = self._read_sharded(flats, fmt, lease)
        if self._fast is None or not self._fast[0].crc32c:
            return got
        return [
            None if data is None else strip_crc32c(data, f"{self.name} chunk {flat}")
            for flat, data in zip(flats, got, strict=True)
        ]

    @cached_property
    def local_root(self) -> str | None:
        """Directory of a local, unsharded array with a direct decoder, else None.

        Such payloads can be decoded in place with
        :meth:`~zarr_vectors.core.payload.local.LocalReads.decode_rows_local`.
        """
        fast = self._fast
        root = local_dir(self.array.store_path.store)
        if fast is None or fast[1] is not None or root is None:
            return None
        return str(root)

    def _read_sharded(
        self, flats: list[int], fmt: ShardFormat, lease: Lease | None = None
    ) -> list[Blob | None]:
        where = [self._shard_of(f, fmt) for f in flats]
        shard_ids = sorted({s for s, _ in where})
        keys = [self._shard_key(s) for s in shard_ids]
        blobs = store_io.get_many(self.array.store_path.store, keys, lease)
        inner = {
            s: {} if b is None else fmt.split(b, f"{self.name} shard {k}")
            for s, k, b in zip(shard_ids, keys, blobs, strict=True)
        }
        return [inner[s].get(i) for s, i in where]

    def _read_generic(self, flats: list[int]) -> list[bytes]:
        idx = np.unravel_index(np.array(flats), self.array.shape)
        try:
            with quiet_vlen():
                values = self.array.get_coordinate_selection(idx)
        except Exception as exc:  # any codec error on untrusted bytes
            raise CorruptPayloadError(
                f"{self.name}: cannot decode chunks {flats[:8]} ({exc!r})"
            ) from exc
        return [bytes(v) for v in np.asarray(values, dtype=object).ravel()]
