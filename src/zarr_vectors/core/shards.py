"""Byte layout of Zarr v3 ``sharding_indexed`` shards, for whole-shard batch I/O (FORMAT.md §9).

A shard holds the encoded inner chunks back to back plus an index of ``(offset, nbytes)``
little-endian uint64 pairs per inner chunk in C order (``2**64 - 1`` twice for an empty chunk),
optionally followed by a crc32c checksum, at the end (default) or the start of the shard.
zarr-python reads shards written here and vice versa; building shards whole avoids its
per-inner-chunk read-modify-write cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import google_crc32c
import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError

__all__ = ["ShardFormat"]

_EMPTY = np.uint64(2**64 - 1)


@dataclass(frozen=True)
class ShardFormat:
    """How inner chunks are packed into one shard."""

    chunks_per_shard: tuple[int, ...]
    """Inner chunks along each axis of a shard."""
    index_at_end: bool = True
    """Index after the chunk data (zarr's default) or before it."""
    checksum: bool = True
    """Index followed by a crc32c checksum (zarr's default index codecs)."""

    @property
    def n_inner(self) -> int:
        """Inner chunks per shard."""
        return int(np.prod(self.chunks_per_shard))

    @property
    def index_nbytes(self) -> int:
        """Size of the encoded index."""
        return 16 * self.n_inner + (4 if self.checksum else 0)

    def encode(self, inner: Mapping[int, bytes | memoryview]) -> bytes:
        """Pack encoded inner chunks (by C-order inner index) into shard bytes."""
        index = np.full((self.n_inner, 2), _EMPTY, dtype="<u8")
        offset = 0 if self.index_at_end else self.index_nbytes
        parts: list[bytes | memoryview] = []
        for i in sorted(inner):
            data = inner[i]
            index[i] = (offset, len(data))
            offset += len(data)
            parts.append(data)
        raw = index.tobytes()
        if self.checksum:
            raw += np.uint32(google_crc32c.value(raw)).astype("<u4").tobytes()
        return b"".join([*parts, raw] if self.index_at_end else [raw, *parts])

    def index_range(self, shard_size: int | None = None) -> tuple[int, int]:
        """Byte range ``(start, stop)`` of the index; ``shard_size`` needed when at the end."""
        if not self.index_at_end:
            return 0, self.index_nbytes
        if shard_size is None:
            raise ValueError("the shard size is needed to locate an index at the end")
        return shard_size - self.index_nbytes, shard_size

    def decode_index(self, raw: bytes | memoryview, where: str) -> npt.NDArray[np.uint64]:
        """Decode (and verify) an index into an (n_inner, 2) array of offset, nbytes."""
        if len(raw) != self.index_nbytes:
            raise CorruptPayloadError(
                f"{where}: shard index has {len(raw)} bytes, expected {self.index_nbytes}"
            )
        body = raw[: 16 * self.n_inner]
        if self.checksum:
            stored = raw[16 * self.n_inner :]
            crc = google_crc32c.value(bytes(body))  # it takes bytes only, not views
            if np.uint32(crc).astype("<u4").tobytes() != stored:
                raise CorruptPayloadError(f"{where}: shard index checksum mismatch")
        return np.frombuffer(body, dtype="<u8").reshape(self.n_inner, 2)

    def split(self, shard: bytes | memoryview, where: str) -> dict[int, bytes | memoryview]:
        """Return every non-empty inner chunk of a whole shard."""
        if len(shard) < self.index_nbytes:
            raise CorruptPayloadError(
                f"{where}: shard of {len(shard)} bytes is shorter than its index"
            )
        lo, hi = self.index_range(len(shard))
        index = self.decode_index(shard[lo:hi], where)
        out: dict[int, bytes | memoryview] = {}
        for i in np.flatnonzero(index[:, 0] != _EMPTY).tolist():
            start, size = int(index[i, 0]), int(index[i, 1])
            if start + size > len(shard):
                raise CorruptPayloadError(f"{where}: inner chunk {i} lies past the shard end")
            out[i] = shard[start : start + size]
        return out
