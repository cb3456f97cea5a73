"""Arrow table columns as arrays an attribute can hold (pyarrow)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

__all__ = ["column_array"]


def column_array(column: Any) -> npt.NDArray[Any] | None:
    """Convert an Arrow column of numbers, booleans or text to an array.

    Text (and dictionary-encoded text) becomes ``str`` with nulls as ``""``; an integer or
    boolean column with nulls becomes float64 with the nulls as NaN.

    Returns
    -------
    numpy.ndarray or None
        The values, or None when the column holds another type (the caller decides whether
        that is an error or a column to skip).
    """
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = column.cast(pa.string())
        kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return np.asarray(column.fill_null("").to_pylist(), dtype=object).astype(str)
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        if column.null_count and not pa.types.is_floating(kind):
            column = column.cast(pa.float64())  # nulls become NaN
        return np.asarray(column.to_numpy(zero_copy_only=False))
    return None
