"""Raw key I/O: batched reads and writes of stored chunks, and chunk key names.

Local directory stores are read and written with plain file calls (zarr's ``LocalStore`` pays
a thread hop per key); other stores through one ``asyncio.gather`` over the store API.
:func:`get_many` and :func:`set_many` are the only batched paths: every payload and dense
chunk read and write of :mod:`zarr_vectors.core.payload` goes through them.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import zarr
from zarr.abc.store import OffsetByteRequest, Store
from zarr.buffer import default_buffer_prototype
from zarr.storage import FsspecStore, LocalStore

from zarr_vectors.core.checksums import CHECKSUM_BYTES, crc32c_matches
from zarr_vectors.core.payload.concurrency import parallel_map
from zarr_vectors.core.payload.element import Blob, header_problem
from zarr_vectors.core.scratch import Lease, empty_bytes
from zarr_vectors.core.zarr_adapter import sync
from zarr_vectors.errors import CorruptPayloadError

__all__ = [
    "chunk_key_format",
    "chunk_keys",
    "dense_keys",
    "get_many",
    "KeyFormat",
    "local_dir",
    "open_chunk",
    "pread_all",
    "read_element",
    "read_files",
    "set_many",
    "settle_pending_writes",
    "unravel",
    "write_file",
]

_MAX_IN_FLIGHT = 64


def local_dir(store: Store) -> Path | None:
    """Root directory of a local directory store, else None."""
    if not isinstance(store, LocalStore):
        return None
    root = store.root
    # the store's own Path object: a new one per read would build its string again
    return root if isinstance(root, Path) else Path(root)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | _CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
"""Chunk files are opened without following a final symbolic link (one that may lead out of
the store); such a file fails to open with ELOOP, reported by :func:`open_chunk`."""


def open_chunk(path: str) -> int:
    """Open a chunk file for reading; a symbolic link is a corrupt store, not data."""
    try:
        return os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptPayloadError(
                f"{path} is a symbolic link; chunk files inside a store are never followed"
            ) from exc
        raise


_OPEN_FILES = 256
"""Files a local batch read holds open at once (their sizes size its one buffer)."""


def read_files(paths: Sequence[str], lease: Lease | None = None) -> list[memoryview | None]:
    """Whole contents of local files (None where absent), read into one buffer per batch.

    Each content is a read-only view of a buffer shared by up to :data:`_OPEN_FILES` files:
    one allocation instead of a ``bytes`` object per file, which for chunk-sized files
    (> 128 KiB: each its own ``mmap``, faulted in page by page) is slower to fill.  With
    a ``lease`` the buffers are borrowed from it (the views are valid while it lasts).
    """
    out: list[memoryview | None] = []
    for at in range(0, len(paths), _OPEN_FILES):
        fds: list[int] = []
        try:
            for path in paths[at : at + _OPEN_FILES]:
                try:
                    fds.append(open_chunk(path))
                except FileNotFoundError:
                    fds.append(-1)
            sizes = [os.fstat(fd).st_size if fd >= 0 else 0 for fd in fds]
            buffer = empty_bytes(sum(sizes), lease).data  # not a bytearray: no zero fill
            start = 0
            for fd, size in zip(fds, sizes, strict=True):
                if fd < 0:
                    out.append(None)
                    continue
                view = buffer[start : start + size]
                got = 0
                while got < size:  # large files come in pieces; a file cut short ends early
                    n = os.readv(fd, [view[got:]])
                    if not n:
                        break
                    got += n
                out.append(view[:got].toreadonly())
                start += size
        finally:
            for fd in fds:
                if fd >= 0:
                    os.close(fd)
    return out


def read_element(
    path: str, head: npt.NDArray[np.uint8], rows: npt.NDArray[np.uint8], crc32c: bool = False
) -> str | None:
    """Read an uncompressed element file: its vlen header into ``head``, its rows into ``rows``.

    Returns what is wrong, or None: the file is missing, shorter than that (it changed since
    its size was taken), its header does not describe ``len(rows)`` bytes (a longer file's
    header gives its own length) or, with ``crc32c``, the CRC-32C that ends the file does not
    match the header and rows.
    """
    try:
        fd = open_chunk(path)
    except FileNotFoundError:
        return "missing"
    tail = np.zeros(CHECKSUM_BYTES if crc32c else 0, dtype=np.uint8)
    want = len(head) + len(rows) + len(tail)
    try:
        got = os.readv(fd, [head.data, rows.data, tail.data])
        while len(head) <= got < want:  # large files may come in pieces
            at = got - len(head)
            rest = [rows.data[at:], tail.data] if at < len(rows) else [tail.data[at - len(rows) :]]
            n = os.readv(fd, rest)
            if not n:
                break
            got += n
    finally:
        os.close(fd)
    if got != want:
        return f"{max(0, got - len(head) - len(tail))} bytes, expected {len(rows)}"
    if crc32c and not crc32c_matches((head, rows), tail):
        return "checksum mismatch (crc32c), the chunk is damaged"
    return header_problem(head, len(rows))


def get_many(
    store: Store, keys: Sequence[str], lease: Lease | None = None
) -> Sequence[Blob | None]:
    """Return the stored bytes of ``keys`` (None where absent); local reads use ``lease``."""
    root = local_dir(store)
    if root is not None:
        base = str(root)
        return read_files([os.path.join(base, k) for k in keys], lease)
    proto = default_buffer_prototype()

    async def fetch() -> list[bytes | None]:
        sem = asyncio.Semaphore(_MAX_IN_FLIGHT)

        # an open-ended range read is one GET; a plain fsspec/s3fs read first asks for the
        # object's size (one HEAD per key) to decide on concurrent block downloads
        whole = OffsetByteRequest(0) if isinstance(store, FsspecStore) else None

        async def one(k: str) -> bytes | None:
            async with sem:
                buf = await store.get(k, proto, byte_range=whole)
            return None if buf is None else buf.to_bytes()

        return list(await asyncio.gather(*(one(k) for k in keys)))

    return sync(fetch())


def pread_all(fd: int, size: int, where: str) -> bytes:
    """Read the ``size`` bytes of an open file (raise when it is shorter: changed while read)."""
    data = os.pread(fd, size, 0)
    if len(data) != size:
        raise CorruptPayloadError(f"{where}: file changed size while read")
    return data


def unravel(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    """C-order coordinates of a flat index (np.unravel_index has a high fixed cost per scalar)."""
    coords = []
    for n in reversed(shape):
        flat, c = divmod(flat, int(n))
        coords.append(c)
    return tuple(reversed(coords))


def _set_many(store: Store, items: Sequence[tuple[str, Blob]]) -> None:
    root = local_dir(store)
    if root is not None:
        paths = [os.path.join(root, k) for k, _ in items]  # str: pathlib objects cost more per file
        for parent in sorted({os.path.dirname(p) for p in paths}):
            os.makedirs(parent, exist_ok=True)
        files = [(path, v) for path, (_, v) in zip(paths, items, strict=True)]
        parallel_map(write_file, files, sum(len(v) for _, v in items))
        return
    proto = default_buffer_prototype()

    async def put() -> None:
        sem = asyncio.Semaphore(_MAX_IN_FLIGHT)

        async def one(k: str, v: Blob) -> None:
            async with sem:
                await store.set(k, proto.buffer.from_bytes(v))

        await asyncio.gather(*(one(k, v) for k, v in items))

    sync(put())


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _CLOEXEC


def write_file(item: tuple[str, bytes | memoryview]) -> None:
    """Create (or replace) the file ``item[0]`` holding ``item[1]``: what ``open(, "wb")`` does."""
    fd = os.open(item[0], _WRITE_FLAGS, 0o666)
    try:
        view = memoryview(item[1]).cast("B")
        while len(view):
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def set_many(store: Store, items: Sequence[tuple[str, Blob]]) -> None:
    """Write raw keys to a store in one batch."""
    _set_many(store, items)


def settle_pending_writes(timeout: float = 60.0) -> None:
    """Wait (up to ``timeout`` seconds) for the tasks zarr-python's event loop is running.

    When one write of a batch fails, ``asyncio.gather`` reports the error at once while the
    sibling writes keep running (a ``LocalStore`` writes in worker threads and creates parent
    directories); a failed write must let them finish before removing what they write into.
    """

    async def others() -> None:
        me = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not me]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    sync(others())


def dense_keys(array: zarr.Array[Any], chunks: Sequence[int]) -> list[str]:
    """Store keys of the chunks ``chunks`` (along axis 0) of a dense array."""
    inner = (0,) * (len(array.shape) - 1)
    return chunk_keys(array, chunk_key_format(array), ((c, *inner) for c in chunks))


KeyFormat = tuple[str, str | None]
"""``(head, separator)`` of an array's chunk keys (see :func:`chunk_key_format`)."""


def chunk_key_format(array: zarr.Array[Any]) -> KeyFormat:
    """``(head, separator)`` of the store keys of ``array``'s chunks.

    A chunk's key is ``head`` (the array's path and the encoding's prefix) followed by its
    coordinates joined by ``separator``; the separator is None when zarr's encoding is not
    of that form (checked on two probes).
    """
    prefix = array.store_path.path
    prefix = f"{prefix}/" if prefix else ""
    encode = array.metadata.encode_chunk_key
    ndim = len(array.shape)
    if ndim == 0:
        return prefix, None
    probe = tuple(range(10, 10 + ndim))  # distinct, multi-digit coordinates
    key = encode(probe)
    for sep in ("/", "."):
        body = sep.join(map(str, probe))
        zero = key[: -len(body)] + sep.join(["0"] * ndim)
        if key.endswith(body) and encode((0,) * ndim) == zero:
            return prefix + key[: -len(body)], sep
    return prefix, None


def chunk_keys(
    array: zarr.Array[Any], fmt: KeyFormat, coords: Iterable[tuple[int, ...]]
) -> list[str]:
    """Store keys of the chunks at ``coords`` of ``array`` (``fmt``: its key format).

    Formatted here: zarr's ``encode_chunk_key`` has a high fixed cost per key.
    """
    head, sep = fmt
    if sep is None:  # an encoding this module does not reproduce: ask zarr
        encode = array.metadata.encode_chunk_key
        return [head + encode(tuple(c)) for c in coords]
    return [head + sep.join(map(str, c)) for c in coords]
