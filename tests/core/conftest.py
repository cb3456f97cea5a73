"""Stores as earlier versions wrote them, for the tests that keep them readable.

Earlier versions stored object payloads longer than ``zstd_frame_bytes`` (array attribute) as
seekable multi-frame zstd without a chunk checksum.  :func:`reframe_legacy` rebuilds the
payload arrays of a store written with ``compressor="zstd"`` that way, through the same
element encoder those versions used (it still encodes frames for arrays carrying the
attribute), so the bytes are the old bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import zarr
from zarr.codecs import ZstdCodec
from zarr.core.dtype import VariableLengthBytes

from zarr_vectors.core.payload.compression import DEFAULT_ZSTD_LEVEL, FRAME_BYTES_ATTR
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.core.zarr_adapter import quiet_vlen


def reframe_legacy(root: zarr.Group, frame: int, level: str = "0") -> list[str]:
    """Rewrite every payload array of ``level`` as legacy seekable zstd; return their paths."""
    group = root[level]
    assert isinstance(group, zarr.Group)
    done = []
    with quiet_vlen():
        members = [
            (path, node)
            for path, node in group.members(max_depth=None)
            if isinstance(node, zarr.Array) and isinstance(node.metadata.dtype, VariableLengthBytes)
        ]
        for path, node in members:
            values = np.asarray(node[...], dtype=object).reshape(-1)
            attrs = dict(node.attrs)
            attrs[FRAME_BYTES_ATTR] = int(frame)
            new = group.create_array(
                path,
                shape=node.shape,
                chunks=(1,) * len(node.shape),
                dtype=VariableLengthBytes(),
                fill_value=b"",
                compressors=ZstdCodec(level=DEFAULT_ZSTD_LEVEL),
                attributes=attrs,
                overwrite=True,
            )
            flats = np.array([i for i, v in enumerate(values) if len(v)], dtype=np.int64)
            PayloadArray(new).write(flats, [values[i] for i in flats])
            done.append(path)
    return done


@pytest.fixture
def reframe() -> Callable[..., list[str]]:
    """:func:`reframe_legacy`, for tests that need a store as earlier versions wrote it."""
    return reframe_legacy
