"""GraphML files <-> ``graph`` stores (networkx).

Needs ``networkx`` (the ``formats`` extra); the graph itself goes through
:mod:`zarr_vectors.formats.networkx`, so node keys come back as the GraphML node ids.

Node positions come from numeric node attributes ``x``, ``y`` (and ``z``), or from a ``pos``
attribute holding numbers separated by spaces or commas (``"1.5 2 3"``, ``"(1.5, 2, 3)"``).
Every other node and edge attribute becomes a per-vertex or per-edge attribute (strings become
categories).  GraphML lets an attribute be absent on some nodes; those get NaN (numbers), ``""``
(strings) or False (booleans).  Which position attributes were used, the ``edgedefault`` and the
graph-level attributes go to ``custom_metadata["graphml"]``, so :func:`store_to_graphml` writes
the positions back the same way.  Multi-column attributes are written as ``name_0 .. name_K-1``.
``convert`` keeps the file's node and edge order (``keep_order``, docs/spec.md §8.8), and
export writes nodes and edges back in it.
"""

from __future__ import annotations

import re
import warnings
from typing import Any
from xml.etree import ElementTree

import networkx as nx  # type: ignore[import-untyped, unused-ignore]
import numpy as np

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats._common import begin, section
from zarr_vectors.formats.networkx import OBJECT_ID, from_networkx, to_networkx
from zarr_vectors.formats.registry import (
    Extent,
    PathLike,
    Progress,
    Source,
    WriteOptions,
    export_order,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.graphs import Graph, read_graph, write_graph

__all__ = ["KEY", "GraphmlSource", "graphml_graph", "open_graphml", "store_to_graphml"]

KEY = "graphml"
"""Key of the GraphML settings in the root ``custom_metadata``."""
_POS = "__zv_position__"
_AXES = ("x", "y", "z")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)", re.IGNORECASE)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool)


def _positions(G: Any) -> tuple[str, list[str]]:
    """Set the ``_POS`` node attribute; return the mode (``"axes"``/``"pos"``) and names."""
    nodes = list(G.nodes(data=True))
    axes = [a for a in _AXES if nodes and all(_is_number(d.get(a)) for _, d in nodes)]
    if axes[:2] == ["x", "y"] or not nodes:
        for _, d in nodes:
            d[_POS] = tuple(float(d.pop(a)) for a in axes)
        return "axes", axes
    if all("pos" in d for _, d in nodes):
        for key, d in nodes:
            raw = d.pop("pos")
            values = [float(v) for v in _NUMBER.findall(str(raw))] if isinstance(raw, str) else raw
            if not values:
                raise InvalidInputError(f"node {key!r}: cannot read a position from pos={raw!r}")
            d[_POS] = tuple(float(v) for v in values)
        return "pos", ["pos"]
    raise InvalidInputError(
        "GraphML nodes need numeric x and y (and z) attributes or a pos attribute on every node"
    )


def _fill(items: list[dict[str, Any]], what: str) -> None:
    """Give every item every attribute (absent values: NaN, "" or False), warning once."""
    names = {k for d in items for k in d}
    filled: list[str] = []
    for name in sorted(names):
        present = [d[name] for d in items if name in d]
        if len(present) == len(items):
            continue
        if all(isinstance(v, bool) for v in present):
            fill: Any = False
        elif all(_is_number(v) for v in present):
            fill = float("nan")
        else:
            fill = ""
        filled.append(f"{name!r} on {len(items) - len(present)} {what}s with {fill!r}")
        for d in items:
            d.setdefault(name, fill)
    if filled:
        warnings.warn(
            f"GraphML {what} attributes missing, filled: {'; '.join(filled)}", ZVUserWarning, 4
        )


def graphml_graph(path: PathLike) -> tuple[Graph, dict[str, Any]]:
    """Read a GraphML file into a :class:`~zarr_vectors.types.graphs.Graph`.

    Returns
    -------
    tuple
        The graph (node keys in the ``node_id`` attribute) and the settings kept in
        ``custom_metadata["graphml"]``.

    Raises
    ------
    InvalidInputError
        No node positions, or parallel edges (a multigraph).
    """
    try:
        G = nx.read_graphml(path)
    except (nx.NetworkXError, ElementTree.ParseError) as exc:
        raise InvalidInputError(f"{path}: not a valid GraphML file: {exc}") from exc
    mode, names = _positions(G)
    _fill([d for _, d in G.nodes(data=True)], "node")
    _fill([d for _, _, d in G.edges(data=True)], "edge")
    graph = from_networkx(G, position_attr=_POS)
    settings = {
        "positions": mode,
        "axes": names,
        "directed": bool(G.is_directed()),
        "graph": {str(k): v for k, v in G.graph.items() if isinstance(v, str | int | float)},
    }
    return graph, settings


class GraphmlSource(Source):
    """A GraphML file opened for conversion (the graph is read here)."""

    geometry_type = GeometryTypeName.GRAPH

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.graph, self.settings = graphml_graph(self.path)

    def extent(self) -> Extent:
        """Return the node count and bounding box."""
        return Extent.of(self.graph.positions)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the graph to a new store."""
        begin(progress, "writing store")
        g = self.graph
        return write_graph(
            store,
            g.positions,
            g.edges,
            directed=g.directed,
            attributes=g.attributes,
            edge_attributes=g.edge_attributes,
            keep_order=options.keep_order,
            **options.store(
                custom_metadata={KEY: self.settings},
                source_description=f"GraphML graph: {self.path.name}",
            ),
        )


def open_graphml(path: PathLike) -> GraphmlSource:
    """Open a GraphML file for conversion (see :class:`GraphmlSource`)."""
    return GraphmlSource(path)


def _flatten(data: dict[str, Any]) -> None:
    """Split tuple values (multi-column attributes) into ``name_0 .. name_K-1``."""
    for name in [k for k, v in data.items() if isinstance(v, tuple)]:
        for i, v in enumerate(data.pop(name)):
            data[f"{name}_{i}"] = v


def store_to_graphml(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``graph`` (or ``skeleton``) store to a GraphML file.

    Parameters
    ----------
    store
        A ``graph`` or ``skeleton`` store.
    path
        Output ``.graphml`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    report = begin(progress, "reading store")
    settings = section(store, KEY)
    graph = read_graph(store, level=level, order=export_order(store, level))
    G = to_networkx(graph, position_attr=_POS)
    as_pos = settings.get("positions") == "pos"
    for _, d in G.nodes(data=True):
        d.pop(OBJECT_ID, None)
        pos = d.pop(_POS)
        if as_pos:
            d["pos"] = " ".join(f"{float(v)!r}" for v in pos)
        else:
            d.update({a: float(v) for a, v in zip(_AXES, pos, strict=False)})
        _flatten(d)
    for _, _, d in G.edges(data=True):
        _flatten(d)
    G.graph.update(settings.get("graph", {}))
    report.start(f"writing {path}", None)
    nx.write_graphml(G, str(path))
