"""Decoding the Blosc blocks that hold some rows of many chunks with one decoder call.

A box read wants a few short runs of rows from each of a hundred or more chunks.  Decoding
chunk by chunk (:func:`~zarr_vectors.core.payload.blosc_blocks.decode_ranges`) costs a fixed
amount of numpy and Python work per chunk that exceeds the decoding itself.  Blosc blocks are
independent, and blocks of buffers written with the same header (version, flags, typesize,
block size) are interchangeable: the full-size blocks needed from all those chunks go into one
standalone Blosc buffer (a header and a block table pointing into the stored bytes, read
straight after them) and are decoded by one call of the public decoder.  A short last block
(the remainder of a chunk) can only be the last block of a Blosc buffer, so each one needed is
decoded on its own.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.payload.blosc_blocks import (
    BLOSC_HEADER,
    BLOSC_HEADER_BYTES,
    BloscTable,
    decompress,
    read_spans,
    standalone_header,
)
from zarr_vectors.core.ragged import concat_ranges
from zarr_vectors.core.scratch import Lease, empty_bytes
from zarr_vectors.errors import CorruptPayloadError

__all__ = ["decode_many", "layout_key"]

IntArray = npt.NDArray[np.int64]

_BSTART = struct.Struct("<i")


def layout_key(table: BloscTable) -> tuple[int, ...] | None:
    """Return what buffers must share for their blocks to be decoded together, or None.

    The header's version bytes, flags and typesize, and the block size; memcpyed buffers
    (no blocks) are never batched (None).
    """
    if table.memcpyed or table.nbytes == 0:
        return None
    version, versionlz, flags, typesize, _, _, _ = BLOSC_HEADER.unpack(table.header)
    return (version, versionlz, flags, typesize, table.blocksize)


def decode_many(
    tables: Sequence[BloscTable],
    owner: IntArray,
    at: IntArray,
    end: IntArray,
    read_into: Callable[[int, int, npt.NDArray[np.uint8]], int],
    where: str,
    lease: Lease | None = None,
) -> tuple[npt.NDArray[np.uint8], IntArray]:
    """Decode the blocks holding the decoded byte ranges ``[at, end)`` of many Blosc buffers.

    Parameters
    ----------
    tables : sequence of BloscTable
        Block tables of the buffers, all with one :func:`layout_key`.
    owner : ndarray of int64
        Index in ``tables`` of each range's buffer, ascending.
    at, end : ndarray of int64
        Decoded byte ranges, in bytes from the start of their buffer's decoded bytes;
        ascending by start within each buffer.
    read_into : callable
        ``read_into(i, offset, view)`` fills ``view`` with stored bytes of buffer ``i`` from
        ``offset`` and returns how many it read.
    where : str
        Names the array in errors.
    lease : Lease, optional
        Lends the buffers (the stored and the decoded blocks): reused memory is not faulted
        in page by page again.  ``raw`` is then valid while the lease lasts.

    Returns
    -------
    raw : ndarray of uint8
        The needed blocks decoded, each in a slot of ``blocksize`` bytes, in ascending order
        of (buffer, block).
    pos : ndarray of int64
        Where each range starts in ``raw`` (its bytes are contiguous there).
    """
    bs = tables[0].blocksize
    pos = np.zeros(len(at), dtype=np.int64)
    some = end > at  # empty ranges need no block (and may sit at the very end)
    if not bool(some.any()):
        return np.zeros(0, dtype=np.uint8), pos
    n_blocks = np.fromiter((t.n_blocks for t in tables), np.int64, len(tables))
    base = np.zeros(len(tables) + 1, dtype=np.int64)
    np.cumsum(n_blocks, out=base[1:])
    owner, at, end = owner[some], at[some], end[some]
    first, last = at // bs, (end - 1) // bs
    if bool((last >= n_blocks[owner]).any()):
        raise CorruptPayloadError(f"{where}: rows beyond the Blosc buffer")
    gfirst = first + base[owner]
    blocks = np.unique(concat_ranges(gfirst, last - first + 1))
    tab = np.searchsorted(base, blocks, side="right") - 1
    # stored offsets of every buffer, one after the other (each has n_blocks + 1 entries)
    offsets = np.concatenate([t.offsets_array for t in tables])
    lo = offsets[blocks + tab]
    hi = offsets[blocks + tab + 1]
    into, at_in_into = _read_spans(tab, lo, hi, read_into, where, lease)
    remainder = np.fromiter((t.nbytes % bs for t in tables), np.int64, len(tables))
    short = (blocks == base[tab + 1] - 1) & (remainder[tab] > 0)
    raw = empty_bytes(len(blocks) * bs, lease)
    _decode_blocks(tables[0], into, at_in_into, hi - lo, (short, remainder[tab]), raw, where)
    pos[some] = np.searchsorted(blocks, gfirst) * bs + (at - first * bs)
    return raw, pos


def _read_spans(
    tab: IntArray,
    lo: IntArray,
    hi: IntArray,
    read_into: Callable[[int, int, npt.NDArray[np.uint8]], int],
    where: str,
    lease: Lease | None,
) -> tuple[npt.NDArray[np.uint8], IntArray]:
    """Read the stored blocks ``[lo, hi)`` of buffers ``tab`` in spans of close blocks.

    Returns the bytes read, after room for a Blosc header and a table of ``len(lo)`` block
    starts, and where each block starts in them.
    """
    k = len(lo)
    opens, span_lo, span_len = read_spans(lo, hi, tab[1:] != tab[:-1])  # no span across files
    head = BLOSC_HEADER_BYTES + 4 * k
    span_at = head + np.cumsum(span_len) - span_len
    into = empty_bytes(head + int(span_len.sum()), lease)
    for i, a, n, dst in zip(
        tab[opens].tolist(), span_lo.tolist(), span_len.tolist(), span_at.tolist(), strict=True
    ):
        if read_into(i, a, into[dst : dst + n]) != n:
            raise CorruptPayloadError(f"{where}: Blosc buffer truncated")
    span = np.repeat(np.arange(len(opens)), np.diff(opens, append=k))
    return into, span_at[span] + (lo - span_lo[span])


def _decode_blocks(
    like: BloscTable,
    into: npt.NDArray[np.uint8],
    start: IntArray,
    size: IntArray,
    shorts: tuple[npt.NDArray[np.bool_], IntArray],
    raw: npt.NDArray[np.uint8],
    where: str,
) -> None:
    """Decode the stored blocks at ``start`` in ``into``, each into a ``blocksize`` slot of ``raw``.

    ``into`` has room for a Blosc header and block table before the stored bytes; the
    header of ``like`` is copied with the block count and lengths changed.  Blocks marked
    short (``shorts``: the mask, and each block's decoded length where marked) are decoded
    one by one.
    """
    short, remainder = shorts
    bs = like.blocksize
    full = np.flatnonzero(~short)
    n_full = len(full)
    head = BLOSC_HEADER_BYTES + 4 * n_full
    if n_full:
        # the table sits right after the header; unused table room (short blocks) stays
        # between it and the stored bytes, which the decoder reaches through the table
        bstarts = start[full].astype("<i4")
        header = standalone_header(like.header, n_full * bs, bs, len(into))
        into[:BLOSC_HEADER_BYTES] = np.frombuffer(header, dtype=np.uint8)
        into[BLOSC_HEADER_BYTES:head] = bstarts.view(np.uint8)
    if n_full == len(short):
        decompress(into, n_full * bs, where, raw)
        return
    slots = raw.reshape(-1, bs)
    if n_full:
        slots[full] = decompress(into, n_full * bs, where).reshape(-1, bs)
    for j in np.flatnonzero(short).tolist():
        n, s, c = int(remainder[j]), int(start[j]), int(size[j])
        one = standalone_header(like.header, n, bs, BLOSC_HEADER_BYTES + 4 + c)
        buf = b"".join((one, _BSTART.pack(BLOSC_HEADER_BYTES + 4), into[s : s + c].tobytes()))
        slots[j, :n] = decompress(buf, n, where)
