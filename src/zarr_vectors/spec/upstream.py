"""Recognise stores written by the upstream ``zarr-vectors`` package (0.2.0 and 0.9.x).

Upstream keeps its root metadata under a ``zarr_vectors`` key (``zv_version`` "0.7.0" for the
0.2.0 wheel, "0.9.x" for the later line) instead of ZVF's flat ``zarr_vectors_version``.  This
module only looks at root attributes, so the store layer and the validator (which may import
``spec`` but not the migration package) can name an upstream store in their errors;
:mod:`zarr_vectors.migrate` reads such stores.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zarr_vectors.errors import UpstreamStoreError

__all__ = [
    "UPSTREAM_KEY",
    "is_upstream_path",
    "raise_if_upstream",
    "upstream_label",
    "upstream_message",
    "upstream_version",
]

UPSTREAM_KEY = "zarr_vectors"
"""Root attribute holding upstream's metadata envelope."""

_FORMAT_TO_PACKAGE = {"0.7.0": "0.2.0"}
"""Upstream's format version -> the package release that writes it (0.9.x writes its own)."""


def upstream_version(attrs: Mapping[str, Any]) -> str | None:
    """Upstream's ``zv_version`` of a store's root attributes, or None for anything else.

    Parameters
    ----------
    attrs
        The root group's attributes.
    """
    if "zarr_vectors_version" in attrs:
        return None
    envelope = attrs.get(UPSTREAM_KEY)
    if not isinstance(envelope, Mapping):
        return None
    found = envelope.get("zv_version")
    return found if isinstance(found, str) and found else None


def upstream_label(format_version: str) -> str:
    """Name the upstream release behind a ``zv_version``: "0.2.0 (format 0.7.0)" or "0.9.2"."""
    package = _FORMAT_TO_PACKAGE.get(format_version)
    return f"{package} (format {format_version})" if package else format_version


def upstream_message(attrs: Mapping[str, Any], where: str) -> str | None:
    """Return the "written by upstream ...; run zarr-vectors convert" sentence, or None."""
    found = upstream_version(attrs)
    if found is None:
        return None
    return (
        f"{where} was written by upstream zarr-vectors {upstream_label(found)}, another "
        f"format; run `zarr-vectors convert {where} NEW.zarrvectors` (or "
        "zarr_vectors.migrate) to copy it into a ZVF 1.0 store"
    )


def raise_if_upstream(attrs: Mapping[str, Any], where: str) -> None:
    """Raise :class:`UpstreamStoreError` when ``attrs`` are an upstream store's root attributes.

    Parameters
    ----------
    attrs
        The root group's attributes.
    where
        How to name the store in the message (its path or URL).
    """
    message = upstream_message(attrs, where)
    if message is not None:
        raise UpstreamStoreError(message)


def is_upstream_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a local directory holding an upstream store (reads its zarr.json)."""
    doc = Path(path) / "zarr.json"
    if not doc.is_file():
        return False
    try:
        attrs = json.loads(doc.read_text()).get("attributes", {})
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(attrs, Mapping) and upstream_version(attrs) is not None
