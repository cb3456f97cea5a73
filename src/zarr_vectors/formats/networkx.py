"""networkx graphs <-> :class:`~zarr_vectors.types.graphs.Graph` and ``graph`` stores.

Needs ``networkx`` (the ``formats`` extra).  Node ``i`` of a :class:`Graph` is the ``i``-th node
of ``G.nodes``; node keys (all integers or all strings) are kept in a ``node_id`` vertex
attribute and become the node keys again in :func:`to_networkx` — so subgraphs read by box or
object keep the original keys (a graph without ``node_id`` gets keys ``0..N-1``).  Node
positions live in the ``position_attr`` node attribute (a sequence of D numbers); every other
node and edge attribute must be present on all nodes (edges) and becomes a vertex (edge)
attribute.  Conversions necessarily visit every node and edge in Python, as networkx does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx  # type: ignore[import-untyped, unused-ignore]
import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.types.graphs import Graph, connected_components, read_graph, write_graph

__all__ = ["from_networkx", "networkx_to_store", "store_to_networkx", "to_networkx"]

NODE_ID = "node_id"
"""Vertex attribute holding the original networkx node keys."""
OBJECT_ID = "object_id"
"""Node attribute :func:`to_networkx` sets to each vertex's object id."""


def _python(values: npt.NDArray[Any]) -> list[Any]:
    """Per-row Python values: scalars, or tuples for (N, K) columns."""
    if values.ndim == 1:
        return list(values.tolist())
    width = int(np.prod(values.shape[1:]))
    return [tuple(row) for row in values.reshape(len(values), width).tolist()]


def _records(columns: Mapping[str, npt.NDArray[Any]], n: int) -> list[dict[str, Any]]:
    names = list(columns)
    rows = zip(*(_python(np.asarray(columns[k])) for k in names), strict=True)
    return [dict(zip(names, r, strict=True)) for r in rows] if names else [{} for _ in range(n)]


def to_networkx(graph: Graph, *, position_attr: str = "pos") -> nx.Graph[Any]:
    """Convert a :class:`Graph` to a ``networkx.Graph`` (``DiGraph`` when directed).

    Nodes carry ``position_attr`` (a tuple), ``object_id`` and every vertex attribute; edges
    carry the edge attributes.

    Examples
    --------
    >>> g = Graph(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([[0, 1]]), np.array([0, 0]),
    ...           edge_attributes={"w": np.array([2.5])})
    >>> G = to_networkx(g)
    >>> G.nodes[1]["pos"], G.edges[0, 1]["w"]
    ((1.0, 0.0), 2.5)
    """
    G: nx.Graph[Any] = nx.DiGraph() if graph.directed else nx.Graph()
    node_attrs = {k: v for k, v in graph.attributes.items() if k != NODE_ID}
    node_attrs[OBJECT_ID] = np.asarray(graph.vertex_object_ids)
    node_attrs[position_attr] = graph.positions
    keys = graph.attributes.get(NODE_ID)
    nodes = list(range(graph.n_vertices)) if keys is None else _python(np.asarray(keys))
    G.add_nodes_from(zip(nodes, _records(node_attrs, graph.n_vertices), strict=True))
    ends = np.asarray(nodes, dtype=object)[graph.edges] if graph.n_edges else np.zeros((0, 2))
    data = _records(dict(graph.edge_attributes), graph.n_edges)
    G.add_edges_from((u, v, d) for (u, v), d in zip(ends.tolist(), data, strict=True))
    return G


def _column(
    G: nx.Graph[Any], items: Sequence[tuple[Any, dict[str, Any]]], name: str, what: str
) -> npt.NDArray[Any]:
    try:
        return np.asarray([d[name] for _, d in items])
    except KeyError:
        missing = next(k for k, d in items if name not in d)
        raise InvalidInputError(
            f"{what} {missing!r} has no {name!r} attribute; every {what} needs the same attributes"
        ) from None


def _node_keys(nodes: list[Any]) -> npt.NDArray[Any]:
    if all(isinstance(k, int | np.integer) and not isinstance(k, bool) for k in nodes):
        return np.asarray(nodes, dtype=np.int64)
    if all(isinstance(k, str) for k in nodes):
        return np.asarray(nodes, dtype=str)
    raise InvalidInputError(
        "node keys must be all integers or all strings; relabel with "
        "networkx.convert_node_labels_to_integers(G)"
    )


def from_networkx(
    G: nx.Graph[Any], position_attr: str = "pos", *, object_attr: str | None = None
) -> Graph:
    """Convert a networkx graph to a :class:`Graph` ready for :func:`write_graph`.

    Parameters
    ----------
    G
        ``Graph`` or ``DiGraph`` (multigraphs are rejected: ZVF graphs are simple).
    position_attr
        Node attribute holding each node's position.
    object_attr
        Node attribute holding each node's object id; default: connected components.

    Returns
    -------
    Graph
        Vertices in ``G.nodes`` order (node keys in the ``node_id`` attribute), edges in
        ``G.edges`` order; an empty graph gets (0, 3) positions.

    Raises
    ------
    InvalidInputError
        A multigraph, a node without a position, an attribute missing on some nodes or edges.

    Examples
    --------
    >>> G = nx.path_graph(3)
    >>> nx.set_node_attributes(G, {i: (float(i), 0.0) for i in G}, "pos")
    >>> g = from_networkx(G)
    >>> g.edges.tolist(), g.vertex_object_ids.tolist()
    ([[0, 1], [1, 2]], [0, 0, 0])
    """
    if G.is_multigraph():
        raise InvalidInputError(
            "multigraphs have parallel edges, which ZVF graphs do not allow; "
            "convert with networkx.Graph(G) or networkx.DiGraph(G)"
        )
    items = list(G.nodes(data=True))
    nodes = [k for k, _ in items]
    n = len(nodes)
    pos = _column(G, items, position_attr, "node").astype(np.float64).reshape(n, -1 if n else 3)
    index = {k: i for i, k in enumerate(nodes)}
    eitems = [((u, v), d) for u, v, d in G.edges(data=True)]
    edges = np.array([(index[u], index[v]) for (u, v), _ in eitems], dtype=np.int64)
    skip = {position_attr, OBJECT_ID} | ({object_attr} if object_attr else set())
    names = sorted({k for _, d in items for k in d} - skip)
    attrs = {k: _column(G, items, k, "node") for k in names}
    attrs[NODE_ID] = _node_keys(nodes)
    enames = sorted({k for _, d in eitems for k in d})
    eattrs = {k: _column(G, eitems, k, "edge") for k in enames}
    if object_attr is None:
        obj: npt.NDArray[Any] = connected_components(n, edges.reshape(-1, 2))[0]
    else:
        obj = _column(G, items, object_attr, "node")
    return Graph(pos, edges.reshape(-1, 2), obj, G.is_directed(), attrs, eattrs)


def networkx_to_store(
    G: nx.Graph[Any],
    store: StoreLike,
    *,
    position_attr: str = "pos",
    object_attr: str | None = None,
    chunk_shape: Sequence[float],
    **kwargs: Any,
) -> WriteSummary:
    """Write a networkx graph to a new ``graph`` store (see :func:`from_networkx`).

    ``**kwargs`` go to :func:`~zarr_vectors.types.graphs.write_graph`.

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> G = nx.Graph([("a", "b")])
    >>> nx.set_node_attributes(G, {"a": (0.0, 0.0), "b": (5.0, 5.0)}, "pos")
    >>> store = MemoryStore()
    >>> networkx_to_store(G, store, chunk_shape=(2, 2)).chunk_count
    2
    >>> sorted(store_to_networkx(store).edges)
    [('a', 'b')]
    """
    g = from_networkx(G, position_attr, object_attr=object_attr)
    return write_graph(
        store,
        g.positions,
        g.edges,
        directed=g.directed,
        vertex_object_ids=None if object_attr is None else g.vertex_object_ids,
        attributes=g.attributes,
        edge_attributes=g.edge_attributes,
        chunk_shape=chunk_shape,
        **kwargs,
    )


def store_to_networkx(
    store: StoreLike, *, position_attr: str = "pos", **kwargs: Any
) -> nx.Graph[Any]:
    """Read a ``graph`` store (``**kwargs`` as :func:`read_graph`) into networkx."""
    return to_networkx(read_graph(store, **kwargs), position_attr=position_attr)
