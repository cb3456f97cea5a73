"""Shared by ``scripts/make_golden.py`` (which writes the golden stores) and ``test_golden.py``.

A golden store is a tiny ZVF store written by a past version of the library and committed
under ``tests/golden/<format version>/`` (STYLE §13).  Next to the stores lie
``manifest.json`` (one entry per store: geometry type, how it was written, the queries to run)
and ``expected.npz`` (what each query returned when the store was written, flattened by
:func:`flatten`).  Current code must read every store to exactly the same arrays.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv

FORMAT_VERSION = "1.0"
GOLDEN_DIR = Path(__file__).resolve().parent / FORMAT_VERSION
MANIFEST = GOLDEN_DIR / "manifest.json"
EXPECTED = GOLDEN_DIR / "expected.npz"

READERS: dict[str, Callable[..., Any]] = {
    "point_cloud": zv.read_points,
    "line": zv.read_lines,
    "polyline": zv.read_polylines,
    "streamline": zv.read_streamlines,
    "graph": zv.read_graph,
    "skeleton": zv.read_skeletons,
    "mesh": zv.read_meshes,
}
"""The public read verb of each geometry type."""

QUERIES = ("whole", "bbox", "object")
"""The reads run on every store: everything, one box, one object by id."""


def query_kwargs(entry: Mapping[str, Any], query: str) -> dict[str, Any]:
    """Keyword arguments of the read verb for ``query`` on the manifest ``entry``."""
    if query == "whole":
        return {}
    if query == "bbox":
        lo, hi = entry["bbox"]
        return {"bbox": (tuple(lo), tuple(hi))}
    if query == "object":
        return {"object_ids": np.array([entry["object_id"]], dtype=np.uint64)}
    raise KeyError(query)


def _flat_value(key: str, value: Any, arrays: dict[str, Any], scalars: dict[str, Any]) -> None:
    if isinstance(value, np.ndarray):
        if value.dtype == object:  # strings: kept by value (npz without pickle)
            scalars[key + "#dtype"] = "object"
            value = value.astype(str)
        arrays[key] = value
    elif isinstance(value, Mapping):
        scalars[key + "#keys"] = list(value)
        for name, item in value.items():
            _flat_value(f"{key}/{name}", item, arrays, scalars)
    elif isinstance(value, enum.Enum):
        scalars[key] = value.value
    elif value is None or isinstance(value, bool | int | float | str):
        scalars[key] = value
    elif isinstance(value, np.generic):
        arrays[key] = np.asarray(value)
    else:
        raise TypeError(f"{key}: cannot flatten a {type(value).__name__}")


def flatten(result: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Split a read result (a geometry dataclass) into named arrays and JSON scalars.

    Field ``f`` of the result becomes ``"f"``; item ``k`` of a mapping field ``"f/k"``; the
    key order of each mapping is kept as ``"f#keys"`` and an object (string) dtype as
    ``"f#dtype"``, so that a comparison sees the order and the dtypes too.
    """
    arrays: dict[str, np.ndarray] = {"#type": np.asarray(type(result).__name__)}
    scalars: dict[str, Any] = {}
    for f in dataclasses.fields(result):
        _flat_value(f.name, getattr(result, f.name), arrays, scalars)
    return arrays, scalars


def load_manifest() -> dict[str, Any]:
    """Return the manifest of the golden stores (``{"stores": [...], ...}``)."""
    doc: dict[str, Any] = json.loads(MANIFEST.read_text())
    return doc
