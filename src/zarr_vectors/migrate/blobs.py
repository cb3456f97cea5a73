"""Decode upstream's binary payloads: fragment indexes, object manifests and link records.

Layouts as observed on disk (all little-endian, see /work/shared/UPSTREAM-FORMAT.md §8):

* fragment index: 16-byte header (magic "GFVZ", version 1, flags 0, F, R), an LSB-first bitmap of
  F bits padded to 8 bytes, R ``(start, count)`` int64 pairs, then a CSR of explicit fragments
  (``E + 1`` uint32 offsets and int64 row indices, ``E = F - R``);
* object manifest: uint32 block count, then per block ``sid_ndim`` int64 chunk coordinates, a
  uint8 mode and mode 0 ``int64 fragment``, mode 1 ``int64 start, count``, mode 2
  ``uint32 n, int64[n]``;
* 0.2.0 cross-chunk links: one flat int64 blob of records, ``(coords..., row)`` per endpoint;
* 0.9.x neighbour links: ``int64 K``, K byte offsets, then records ``(perm, row_0, ..., row_w-1)``.
"""

from __future__ import annotations

import itertools
import struct

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "Block",
    "decode_cross_records",
    "decode_fragments",
    "decode_manifest",
    "decode_neighbour_links",
    "permutation",
]

IntArray = npt.NDArray[np.int64]
Block = tuple[tuple[int, ...], list[int]]
"""One manifest block: chunk coordinates and the fragment numbers it names, in order."""

_MAGIC = 0x5A564647
_HEADER = struct.Struct("<IHHII")


def decode_fragments(raw: bytes, where: str) -> list[IntArray]:
    """Row indices of every fragment in a fragment-index blob, in fragment order."""
    if len(raw) < _HEADER.size:
        raise CorruptPayloadError(f"{where}: fragment index of {len(raw)} bytes is truncated")
    magic, ver, flags, n_frag, n_range = _HEADER.unpack_from(raw)
    if magic != _MAGIC or ver != 1 or flags != 0 or n_range > n_frag:
        raise CorruptPayloadError(f"{where}: not an upstream fragment index (bad header)")
    pos = _HEADER.size
    bitmap_len = -(-n_frag // 8)
    bits = np.unpackbits(np.frombuffer(raw, np.uint8, bitmap_len, pos), bitorder="little")
    pos += -(-bitmap_len // 8) * 8
    ranges = np.frombuffer(raw, "<i8", 2 * n_range, pos).reshape(-1, 2)
    pos += 16 * n_range
    explicit = n_frag - n_range
    out: list[IntArray] = []
    if n_frag == 0:
        return out
    offsets = np.frombuffer(raw, "<u4", explicit + 1, pos).astype(np.int64)
    pos += 4 * (explicit + 1)
    indices = np.frombuffer(raw, "<i8", int(offsets[-1]), pos)
    r = e = 0
    for f in range(n_frag):
        if bits[f]:
            start, count = (int(v) for v in ranges[r])
            out.append(np.arange(start, start + count, dtype=np.int64))
            r += 1
        else:
            out.append(indices[offsets[e] : offsets[e + 1]].astype(np.int64))
            e += 1
    return out


def decode_manifest(raw: bytes, sid_ndim: int, where: str) -> list[Block]:
    """Decode the blocks of one object's manifest, in manifest order."""
    try:
        (n_blocks,) = struct.unpack_from("<I", raw)
        pos = 4
        blocks: list[Block] = []
        for _ in range(n_blocks):
            coords = struct.unpack_from(f"<{sid_ndim}q", raw, pos)
            pos += 8 * sid_ndim
            mode = raw[pos]
            pos += 1
            if mode == 0:
                frags = [struct.unpack_from("<q", raw, pos)[0]]
                pos += 8
            elif mode == 1:
                start, count = struct.unpack_from("<qq", raw, pos)
                frags = list(range(start, start + count))
                pos += 16
            elif mode == 2:
                (count,) = struct.unpack_from("<I", raw, pos)
                frags = list(struct.unpack_from(f"<{count}q", raw, pos + 4))
                pos += 4 + 8 * count
            else:
                raise CorruptPayloadError(f"{where}: unknown manifest block mode {mode}")
            blocks.append((tuple(coords), frags))
    except struct.error:
        raise CorruptPayloadError(f"{where}: object manifest is truncated") from None
    if pos != len(raw):
        raise CorruptPayloadError(f"{where}: {len(raw) - pos} trailing bytes after the manifest")
    return blocks


def decode_cross_records(raw: bytes, sid_ndim: int, width: int, where: str) -> IntArray:
    """0.2.0 cross-chunk link records as ``(n, width, sid_ndim + 1)`` (coords then row)."""
    values = np.frombuffer(raw, "<i8")
    step = width * (sid_ndim + 1)
    if values.size % step:
        raise CorruptPayloadError(f"{where}: {values.size} values are not whole records")
    return values.reshape(-1, width, sid_ndim + 1).astype(np.int64)


def decode_neighbour_links(raw: bytes, width: int, has_perm: bool, where: str) -> IntArray:
    """0.9.x links between a chunk and its neighbours as ``(n, 1 + width)``: perm, then rows.

    Without a permutation column the first column is 0 (records are in their stored order).
    """
    values = np.frombuffer(raw, "<i8")
    if not has_perm:
        if values.size % width:
            raise CorruptPayloadError(f"{where}: {values.size} values are not whole links")
        rows = values.reshape(-1, width)
        return np.hstack([np.zeros((len(rows), 1), np.int64), rows])
    if values.size < 1 or values.size < 1 + int(values[0]):
        raise CorruptPayloadError(f"{where}: neighbour link blob is truncated")
    data = values[1 + int(values[0]) :]
    if data.size % (width + 1):
        raise CorruptPayloadError(f"{where}: {data.size} values are not whole link records")
    return data.reshape(-1, width + 1).astype(np.int64)


def permutation(code: int, width: int, where: str) -> tuple[int, ...]:
    """Where each stored endpoint goes: stored endpoint ``i`` is endpoint ``p[i]`` of the link.

    Codes number the permutations of ``range(width)`` in lexicographic order.
    """
    table = list(itertools.permutations(range(width)))
    if not 0 <= code < len(table):
        raise CorruptPayloadError(f"{where}: link permutation code {code} out of range")
    return table[code]
