"""The one module that reaches into zarr-python's internals (``zarr.core.*``).

zarr-python 3 keeps some things this package needs outside its public API: running a
coroutine on its event loop (:func:`sync`), its metadata classes (:data:`ArrayV3Metadata`,
:data:`GroupMetadata`), building arrays and groups over metadata already parsed
(:func:`array_at`, :func:`group_at`), and the array spec its codecs are called with
(:class:`SyncBytesCodecs`).  Everything else in the package imports them from here, so a
zarr-python release that moves them is fixed in this file alone.  Public zarr names
(``zarr.buffer``, ``zarr.dtype``, ``zarr.abc.*``, ``zarr.codecs``, ``zarr.storage``) are
imported directly where they are used.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import zarr
from numcodecs.abc import Codec as NumcodecsCodec
from zarr.abc.buffer import Buffer
from zarr.abc.codec import SupportsSyncCodec
from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.core.array import AsyncArray
from zarr.core.array_spec import ArrayConfig, ArraySpec
from zarr.core.common import AccessModeLiteral
from zarr.core.group import AsyncGroup, GroupMetadata
from zarr.core.metadata import ArrayV3Metadata
from zarr.core.sync import sync
from zarr.dtype import VariableLengthBytes
from zarr.errors import UnstableSpecificationWarning
from zarr.storage import StorePath

from zarr_vectors.core.shared import SharedSetting

__all__ = [
    "AccessModeLiteral",
    "ArrayV3Metadata",
    "GroupMetadata",
    "SyncBytesCodecs",
    "array_at",
    "group_at",
    "group_document",
    "quiet_vlen",
    "sync",
]


def _silence_vlen() -> warnings.catch_warnings[None]:
    saved = warnings.catch_warnings()
    saved.__enter__()
    warnings.filterwarnings("ignore", category=UnstableSpecificationWarning)
    return saved


_QUIET = SharedSetting(_silence_vlen, lambda saved: saved.__exit__(None, None, None))


def quiet_vlen() -> AbstractContextManager[None]:
    """Silence zarr-python's warning that variable-length bytes lack a final v3 spec.

    Safe across threads: warning filters are process-wide, so the filter is installed by the
    first caller to enter and removed when the last one (in any thread) leaves; a plain
    ``catch_warnings`` per call would let one thread's exit unsilence another thread that is
    still creating arrays (dask workers with threads do this).
    """
    return _QUIET.held()


def array_at(store: Store, path: str, meta: ArrayV3Metadata) -> zarr.Array[Any]:
    """Return the ``zarr.Array`` at ``path`` of ``store`` described by ``meta`` (no I/O)."""
    return zarr.Array(AsyncArray(metadata=meta, store_path=StorePath(store, path)))


def group_at(store: Store, path: str, meta: GroupMetadata) -> zarr.Group:
    """Return the ``zarr.Group`` at ``path`` of ``store`` described by ``meta`` (no I/O)."""
    return zarr.Group(AsyncGroup(metadata=meta, store_path=StorePath(store, path)))


def group_document() -> bytes:
    """Return the ``zarr.json`` bytes zarr-python writes for a new, empty Zarr v3 group."""
    proto = default_buffer_prototype()
    return GroupMetadata(zarr_format=3).to_buffer_dict(proto)["zarr.json"].to_bytes()


class SyncBytesCodecs(NumcodecsCodec):  # type: ignore[misc]
    """Zarr v3 bytes-to-bytes codecs applied in chain order, behind numcodecs' interface.

    Decoding through :class:`~zarr_vectors.core.payload.codec.ElementCodec` checks the
    vlen-bytes header of a payload before anything is allocated from it (zarr-python's
    decoder allocates as many elements as a corrupt header claims).
    """

    codec_id = "zarr-v3-bytes-codecs"

    def __init__(self, codecs: Sequence[SupportsSyncCodec]) -> None:
        self._codecs = tuple(codecs)
        self._spec = ArraySpec(
            shape=(1,),
            dtype=VariableLengthBytes(),
            fill_value=b"",
            config=ArrayConfig.from_dict({}),
            prototype=default_buffer_prototype(),
        )

    def _buffer(self, data: Any) -> Buffer:
        return self._spec.prototype.buffer.from_bytes(bytes(memoryview(data).cast("B")))

    def encode(self, buf: Any) -> bytes:
        """Apply the codecs to ``buf`` in chain order."""
        data: Any = self._buffer(buf)
        for codec in self._codecs:
            data = codec._encode_sync(data, self._spec)
        assert isinstance(data, Buffer)
        return data.to_bytes()

    def decode(self, buf: Any, out: Any = None) -> bytes:
        """Undo the codecs on ``buf``, last first (``out`` is not used)."""
        data: Any = self._buffer(buf)
        for codec in reversed(self._codecs):
            data = codec._decode_sync(data, self._spec)
        assert isinstance(data, Buffer)
        return data.to_bytes()
