"""Read the raw metadata documents of every node of a store, without trusting zarr-python.

The walk starts at the root, reads ``zarr.json``, ``.zgroup``, ``.zarray``, ``.zattrs`` and
``.zmetadata`` of each node, and descends into groups with the store's ``list_dir`` (or, for
stores that cannot list, into the children the layout predicts).  It never descends into arrays,
so chunk keys are not listed.  A document that cannot be read or parsed is recorded as a
:class:`BadDocument`, never raised.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from zarr.abc.store import Store
from zarr.buffer import default_buffer_prototype
from zarr.storage import StorePath

from zarr_vectors.core.zarr_adapter import sync
from zarr_vectors.spec.layout import ARRAY_SPECS

__all__ = [
    "DOC_NAMES",
    "JSON",
    "V2_DOCS",
    "ZARR_JSON",
    "BadDocument",
    "RawNode",
    "Scan",
    "ZarrFormat",
    "display_path",
    "join",
    "known_children",
    "scan",
]

JSON = Any
ZARR_JSON = "zarr.json"
V2_DOCS = (".zgroup", ".zarray", ".zattrs", ".zmetadata")
DOC_NAMES = frozenset((ZARR_JSON, *V2_DOCS))
ZarrFormat = Literal[2, 3]


def display_path(path: str) -> str:
    """Return the node path shown in findings: ``"/"`` for the root, ``"/0/vertices"`` else.

    Examples
    --------
    >>> display_path(""), display_path("0/vertices")
    ('/', '/0/vertices')
    """
    return "/" + path.strip("/")


def join(*parts: str) -> str:
    """Join store path components, skipping empty ones."""
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


@dataclass(frozen=True)
class BadDocument:
    """A metadata document that exists but cannot be read or is not a JSON object."""

    path: str
    """Node path."""
    name: str
    """Document file name, e.g. ``"zarr.json"``."""
    reason: str
    """Parser or I/O error."""


@dataclass(frozen=True)
class RawNode:
    """A node of the hierarchy as its metadata documents describe it."""

    path: str
    """Path from the store root (``""`` for the root)."""
    docs: Mapping[str, Mapping[str, JSON]]
    """Parsed documents by file name; malformed ones are left out (see :class:`BadDocument`)."""
    present: frozenset[str]
    """Names of every document that exists, parsed or not."""

    @property
    def name(self) -> str:
        """Last path component."""
        return self.path.rsplit("/", 1)[-1]

    def kind(self, fmt: ZarrFormat | None) -> Literal["group", "array"] | None:
        """Return the node type the ``fmt`` documents declare, or None."""
        if fmt == 3:
            node_type = self.docs.get(ZARR_JSON, {}).get("node_type")
            return node_type if node_type in ("group", "array") else None
        if ".zarray" in self.docs:
            return "array"
        return "group" if ".zgroup" in self.docs else None

    def attrs(self, fmt: ZarrFormat | None) -> Mapping[str, JSON] | None:
        """Return the node attributes in format ``fmt`` (``{}`` when none, None if malformed)."""
        if fmt == 3:
            value = self.docs.get(ZARR_JSON, {}).get("attributes", {})
        else:
            value = self.docs.get(".zattrs", {})
        return value if isinstance(value, Mapping) else None

    def maybe_group(self) -> bool:
        """Whether any document declares a group (so the walk descends into it)."""
        return self.kind(3) == "group" or self.kind(2) == "group"


@dataclass(frozen=True)
class Scan:
    """Result of walking a store."""

    nodes: Mapping[str, RawNode]
    """Every node found, by path."""
    bad: tuple[BadDocument, ...]
    """Documents that could not be read or parsed."""
    listing: bool
    """False when the store cannot list keys (only the root was read)."""


def _no_constant(name: str) -> JSON:
    raise ValueError(f"{name} is not standard JSON (strict parsers reject it)")


def _parse_doc(raw: bytes) -> Mapping[str, JSON]:
    doc = json.loads(raw, parse_constant=_no_constant)
    if not isinstance(doc, dict):
        raise TypeError(f"expected a JSON object, got {type(doc).__name__}")
    return doc


def scan(store_path: StorePath) -> Scan:
    """Read the metadata documents of every node reachable from the root of ``store_path``."""
    store, prefix = store_path.store, store_path.path
    return sync(_scan(store, prefix))


async def _scan(store: Store, prefix: str) -> Scan:
    proto = default_buffer_prototype()
    nodes: dict[str, RawNode] = {}
    bad: list[BadDocument] = []
    listing = store.supports_listing

    async def fetch(path: str, name: str) -> bytes | None:
        try:
            buf = await store.get(join(prefix, path, name), proto)
        except OSError as exc:
            bad.append(BadDocument(path, name, f"cannot be read ({exc})"))
            return None
        return None if buf is None else buf.to_bytes()

    async def visit(path: str) -> None:
        names = sorted(DOC_NAMES)
        raws = await asyncio.gather(*(fetch(path, n) for n in names))
        docs: dict[str, Mapping[str, JSON]] = {}
        for name, raw in zip(names, raws, strict=True):
            if raw is None:
                continue
            try:
                docs[name] = _parse_doc(raw)
            except (ValueError, TypeError, RecursionError) as exc:  # bad JSON, deep nesting
                bad.append(BadDocument(path, name, f"is not a valid JSON object ({exc})"))
        present = frozenset(n for n, r in zip(names, raws, strict=True) if r is not None)
        if not present:
            return
        node = RawNode(path, docs, present)
        nodes[path] = node
        if not node.maybe_group():
            return
        if listing:
            children = {c async for c in store.list_dir(join(prefix, path))} - DOC_NAMES
        else:
            children = known_children(node)
        await asyncio.gather(*(visit(join(path, c)) for c in sorted(children)))

    await store._ensure_open()
    await visit("")
    return Scan(nodes, tuple(bad), listing)


def known_children(node: RawNode) -> set[str]:
    """Return the child names the layout predicts for ``node`` (for stores without listing).

    The root's children are the ``multiscales`` dataset paths; a level group's and its
    containers' children come from the layout table.  Arrays with user-chosen names
    (``attributes/<name>``) cannot be predicted.
    """
    if node.path == "":
        attrs = node.attrs(3 if ZARR_JSON in node.docs else 2) or {}
        ms = attrs.get("multiscales")
        block = ms[0] if isinstance(ms, list) and ms and isinstance(ms[0], Mapping) else {}
        datasets = block.get("datasets")
        entries = datasets if isinstance(datasets, list) else []
        return {d["path"] for d in entries if isinstance(d, Mapping) and _simple(d.get("path"))}
    parts = [spec.path.split("/") for spec in ARRAY_SPECS]
    if "/" not in node.path:
        return {p[0] for p in parts}
    container = node.path.split("/", 1)[1]
    return {p[1] for p in parts if len(p) == 2 and p[0] == container and p[1] != "{name}"}


def _simple(path: object) -> bool:
    return isinstance(path, str) and path.isdigit()
