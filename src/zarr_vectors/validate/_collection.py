"""Validation of a collection: the listing, and every child store, each finding naming its child.

A collection's root group carries ``zarr_vectors_collection`` =
``{"version": "1.0", "children": {name: {"geometry_type": ...}}}`` and no ZVF root metadata;
each child is a complete ZVF store in the member group ``name``.  Findings of a child keep
their check ids; their path is prefixed with ``/<name>`` and their message with
``child '<name>': ``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import zarr
from zarr.errors import BaseZarrError
from zarr.storage import StorePath

from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate._report import Finding, ValidationReport

__all__ = ["COLLECTION_KEY", "is_collection_root", "validate_collection"]

COLLECTION_KEY = "zarr_vectors_collection"
"""Root attribute of a collection listing its children."""

ValidateOne = Callable[[StorePath, int], ValidationReport]


def is_collection_root(attrs: Mapping[str, Any] | None) -> bool:
    """Whether root attributes are a collection's (a listing and no ZVF root metadata)."""
    return attrs is not None and COLLECTION_KEY in attrs and "zarr_vectors_version" not in attrs


def _stored_type(sp: StorePath) -> str | None:
    """Return the geometry type in a child's root attributes (None when there is none)."""
    try:
        gtype = zarr.open_group(sp, mode="r").attrs.get("geometry_type")
    except (BaseZarrError, OSError, ValueError, KeyError, TypeError):
        return None
    return gtype if isinstance(gtype, str) else None


def _member_groups(sp: StorePath) -> list[str]:
    """Names of the collection root's member groups (hidden names left out)."""
    try:
        names = list(zarr.open_group(sp, mode="r").group_keys())
    except (BaseZarrError, OSError, ValueError, KeyError, TypeError):
        return []
    return sorted(n for n in names if not n.startswith("."))


def _error(check: str, path: str, message: str) -> Finding:
    return Finding(check=check, severity=Severity.ERROR, path=path, message=message)


def _listing(attrs: Mapping[str, Any]) -> tuple[dict[str, str], list[Finding]]:
    """Return ``{child: listed geometry type}`` and the findings about the listing itself."""
    doc = attrs.get(COLLECTION_KEY)
    if not isinstance(doc, dict) or not isinstance(doc.get("children"), dict):
        found = f"{COLLECTION_KEY} must be an object with a 'children' object, got {doc!r}"
        return {}, [_error("L2.collection.listing", "/", found)]
    problems: list[Finding] = []
    if doc.get("version") != "1.0":
        problems.append(
            _error("L2.collection.version", "/", f"collection version {doc.get('version')!r}")
        )
    kids: dict[str, str] = {}
    for name, entry in sorted(doc["children"].items()):
        gtype = entry.get("geometry_type") if isinstance(entry, dict) else None
        if not str(name).isidentifier() or not isinstance(gtype, str):
            problems.append(
                _error(
                    "L2.collection.listing",
                    "/",
                    f"child entry {name!r}: {entry!r} (need an identifier name and "
                    "{'geometry_type': str})",
                )
            )
            continue
        kids[str(name)] = gtype
    return kids, problems


def _prefixed(name: str, f: Finding) -> Finding:
    path = f"/{name}" if f.path in ("", "/") else f"/{name}{f.path}"
    return Finding(
        check=f.check, severity=f.severity, path=path, message=f"child {name!r}: {f.message}"
    )


def validate_collection(
    sp: StorePath, attrs: Mapping[str, Any], depth: int, validate_one: ValidateOne
) -> ValidationReport:
    """Validate the listing and every listed child; groups present but unlisted are noted.

    ``validate_one`` validates one store (the ordinary entry point, at the same depth).
    """
    kids, findings = _listing(attrs)
    for name, listed in kids.items():
        report = validate_one(sp / name, depth)
        findings.extend(_prefixed(name, f) for f in report.findings)
        actual = _stored_type(sp / name)
        if actual is not None and actual != listed:
            findings.append(
                _error(
                    "L2.collection.geometry_type",
                    f"/{name}",
                    f"child {name!r}: listed as {listed!r} but the store holds {actual!r}; "
                    "run Collection.refresh() to relist the children",
                )
            )
    for name in sorted(set(_member_groups(sp)) - set(kids)):
        findings.append(
            Finding(
                check="L1.collection.unlisted",
                severity=Severity.WARNING,
                path=f"/{name}",
                message=f"child {name!r}: a group in the collection that its listing does not "
                "name (an unfinished child write, or run Collection.refresh())",
            )
        )
    return ValidationReport(findings=tuple(findings), level=depth)
