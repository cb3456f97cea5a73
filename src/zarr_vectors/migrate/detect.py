"""Recognise upstream stores: the detector of :mod:`zarr_vectors.spec.upstream`, re-exported.

It lives in ``spec`` so that the store layer and the validator can use it without importing
the migration package.
"""

from __future__ import annotations

from zarr_vectors.spec.upstream import (
    UPSTREAM_KEY,
    is_upstream_path,
    raise_if_upstream,
    upstream_label,
    upstream_message,
    upstream_version,
)

__all__ = [
    "UPSTREAM_KEY",
    "is_upstream_path",
    "raise_if_upstream",
    "upstream_label",
    "upstream_message",
    "upstream_version",
]
