"""Validate a store against ZVF 1.0 (FORMAT.md §11, seed *Root metadata* validation rules).

:func:`validate` returns a :class:`ValidationReport` of :class:`Finding` objects, each with a
stable check id (``"L1.root.required_key"``, ``"L2.seed.3"``), a severity, the node path and an
actionable message.  Problems in the store never raise; they become findings.

Levels: L1 structure (``_structure``, ``_arrays``), L2 metadata (``_metadata``, ``_levels``,
``_arrays``); L3 consistency, L4 geometry and L5 pyramid are registered in ``_checks.CHECKS`` as
they are written.  This package imports only :mod:`zarr_vectors.spec`, :mod:`zarr_vectors.core`
and :mod:`zarr_vectors.errors`.
"""

from __future__ import annotations

from zarr_vectors.validate._api import validate
from zarr_vectors.validate._checks import CHECKS, LEVEL_NAMES, Check
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._report import Finding, ValidationReport

__all__ = [
    "CHECKS",
    "LEVEL_NAMES",
    "Check",
    "Finding",
    "ValidationContext",
    "ValidationReport",
    "validate",
]
