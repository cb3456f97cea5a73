"""Draco encoding of ``vertices`` payloads (FORMAT.md §9), through the optional ``draco`` extra.

Contract: :func:`encode_vertices` turns the (n, D) rows of one chunk into a Draco point cloud
(D <= 3; fewer columns are zero-padded to 3), **keeping row order** (Draco's sequential
encoder), so per-vertex attributes, fragments, manifests and links stay aligned with the rows.
:func:`decode_vertices` gives back float32 rows.  The encoding is lossy: Draco quantises each
axis over the payload's own bounding box, so the error per coordinate is at most about
``extent / 2**quantization_bits`` (``extent`` = the chunk's data extent on that axis).

A Draco-encoded array carries ``encoding: "draco"``, ``dtype: "<f4"``, ``quantization_bits`` and
``compression_level`` (see :meth:`DracoSettings.array_attributes`); the root carries
``draco_compressed: true``.  Without DracoPy every entry point raises
:class:`~zarr_vectors.errors.MissingDependencyError` naming the extra.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptPayloadError, InvalidInputError, MissingDependencyError
from zarr_vectors.spec.conventions import Encoding

try:
    import DracoPy as _dracopy  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError:  # the optional ``draco`` extra is not installed
    _dracopy = None

__all__ = [
    "MAX_DIMS",
    "DracoSettings",
    "decode_payloads",
    "decode_vertices",
    "encode_vertices",
    "require_dracopy",
]

MAX_DIMS = 3
"""Draco encodes at most three coordinates per vertex."""

_INSTALL_HINT = "pip install 'zarr-vectors[draco]'"


def require_dracopy() -> Any:
    """Return the DracoPy module, or raise naming the ``draco`` extra.

    Raises
    ------
    MissingDependencyError
        DracoPy is not installed.
    """
    if _dracopy is None:
        raise MissingDependencyError(
            f"Draco-encoded vertices need the optional DracoPy package: {_INSTALL_HINT}"
        )
    return _dracopy


@dataclass(frozen=True, kw_only=True)
class DracoSettings:
    """Draco options of a ``vertices`` array (validated at construction).

    Examples
    --------
    >>> DracoSettings(quantization_bits=12).array_attributes()["quantization_bits"]
    12
    >>> DracoSettings(quantization_bits=40)
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: quantization_bits must be an integer in 1..30, got 40
    """

    quantization_bits: int = 16
    """Bits per quantised coordinate, 1..30 (more bits: smaller error, larger payloads)."""
    compression_level: int = 7
    """Draco speed/size trade-off, 0 (fastest) .. 10 (smallest)."""

    def __post_init__(self) -> None:
        for name, lo, hi in (("quantization_bits", 1, 30), ("compression_level", 0, 10)):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | np.integer)
                or not (lo <= value <= hi)
            ):
                raise InvalidInputError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
            object.__setattr__(self, name, int(value))

    def array_attributes(self) -> dict[str, Any]:
        """Return the array attributes that describe the encoding (FORMAT.md §6, §9)."""
        return {
            "encoding": Encoding.DRACO.value,
            "dtype": "<f4",
            "quantization_bits": self.quantization_bits,
            "compression_level": self.compression_level,
        }

    def encode(self, rows: npt.NDArray[np.floating]) -> bytes:
        """Encode one chunk's vertex rows with these settings (see :func:`encode_vertices`)."""
        return encode_vertices(rows, self.quantization_bits, self.compression_level)

    @classmethod
    def from_attributes(cls, attrs: Mapping[str, Any]) -> DracoSettings:
        """Read the settings back from array attributes (raises on bad values)."""
        return cls(
            quantization_bits=attrs.get("quantization_bits", 16),
            compression_level=attrs.get("compression_level", 7),
        )


def encode_vertices(
    rows: npt.NDArray[np.floating], quantization_bits: int = 16, compression_level: int = 7
) -> bytes:
    """Encode the (n, D) vertex rows of one chunk as a Draco point cloud, order preserved.

    Parameters
    ----------
    rows
        (n, D) finite coordinates, physical units, n >= 1 and D <= 3.
    quantization_bits, compression_level
        See :class:`DracoSettings`.

    Returns
    -------
    bytes
        The Draco buffer.

    Raises
    ------
    InvalidInputError
        More than three columns, no rows, or settings out of range.
    MissingDependencyError
        DracoPy is not installed.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("DracoPy")  # the optional ``draco`` extra
    >>> rows = np.array([[0.0, 0.0], [1.0, 2.0], [1.0, 2.0], [0.5, 0.25]])
    >>> out = decode_vertices(encode_vertices(rows, 16), 4, 2)
    >>> bool(np.abs(out - rows).max() < 1e-4), out.dtype.name
    (True, 'float32')
    """
    settings = DracoSettings(
        quantization_bits=quantization_bits, compression_level=compression_level
    )
    draco = require_dracopy()
    arr = np.asarray(rows)
    if arr.ndim != 2 or not 1 <= arr.shape[1] <= MAX_DIMS or len(arr) == 0:
        raise InvalidInputError(
            f"Draco encodes (n >= 1, D <= {MAX_DIMS}) vertex rows, got shape {arr.shape}"
        )
    padded = np.zeros((len(arr), MAX_DIMS), dtype=np.float32)
    padded[:, : arr.shape[1]] = arr
    return bytes(
        draco.encode(
            padded,
            quantization_bits=settings.quantization_bits,
            compression_level=settings.compression_level,
            preserve_order=True,
        )
    )


def decode_vertices(data: bytes | memoryview, n_rows: int, ndim: int) -> npt.NDArray[np.float32]:
    """Decode one chunk's Draco buffer to (n_rows, ndim) float32 rows in stored order.

    Raises
    ------
    CorruptPayloadError
        The buffer is not Draco data or holds a different number of rows.
    MissingDependencyError
        DracoPy is not installed.
    """
    if n_rows == 0 and len(data) == 0:
        return np.zeros((0, ndim), dtype=np.float32)
    draco = require_dracopy()
    try:
        points = np.asarray(draco.decode(bytes(data)).points, dtype=np.float32)
    except (draco.FileTypeException, ValueError, RuntimeError, AttributeError) as exc:
        raise CorruptPayloadError(f"not a Draco point cloud ({exc})") from exc
    if points.ndim != 2 or points.shape != (n_rows, MAX_DIMS):
        raise CorruptPayloadError(
            f"Draco payload holds {points.shape[0] if points.ndim == 2 else 0} vertices, "
            f"vertex_counts says {n_rows}"
        )
    return np.ascontiguousarray(points[:, :ndim])


def decode_payloads(
    payloads: Sequence[bytes | memoryview],
    counts: Sequence[int] | npt.NDArray[np.int64],
    ndim: int,
    where: str,
) -> npt.NDArray[np.float32]:
    """Decode several chunks' buffers and concatenate their rows (chunk order kept).

    ``where`` names the array in error messages.
    """
    parts = []
    for i, (data, n) in enumerate(zip(payloads, counts, strict=True)):
        try:
            parts.append(decode_vertices(data, int(n), ndim))
        except CorruptPayloadError as exc:
            raise CorruptPayloadError(f"{where} payload {i}: {exc}") from exc
    if not parts:
        return np.zeros((0, ndim), dtype=np.float32)
    return np.concatenate(parts)
