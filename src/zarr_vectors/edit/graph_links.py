"""Graph appends whose edges may join new nodes to stored ones.

Edges of :func:`~zarr_vectors.append_graph` index the concatenation of the stored nodes (in
the order ``read_graph(store)`` returns them at level 0) and the new nodes: index
``i < n_stored`` is stored node ``i``, index ``i >= n_stored`` is new node ``i - n_stored``.
The merged parts are exactly those of a fresh ``write_graph`` of that concatenation:

* objects that are connected components (no user ids in the store, none given) are recomputed
  over all nodes and edges, so an edge joining two objects merges them;
* user-given objects (``vertex_object_ids`` at write time or now) stay as given, and an edge
  between two objects is kept as a cross-object edge, as a fresh write with those ids keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import normalize_columns
from zarr_vectors.core.components import connected_components
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.writer import check_positions
from zarr_vectors.edit.merge import ID, merge_parts
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.types.graphs import check_edges, graph_parts, traversal_rank

__all__ = ["GraphInput", "link_graph", "new_only_parts", "reject_repeats"]

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class GraphInput:
    """The arguments of one ``append_graph`` call, checked against the store when it is read."""

    positions: Any
    edges: Any
    vertex_object_ids: Any
    attributes: Mapping[str, Any] | None
    edge_attributes: Mapping[str, Any] | None
    object_attributes: Mapping[str, Any] | None
    groups: Mapping[str, Any] | None
    group_attributes: Mapping[str, Any] | None

    def parts(self, edges: Any, directed: bool, edge_attributes: Any) -> GeometryParts:
        """Return the new nodes alone as write parts, with ``edges`` among them (0-based)."""
        return graph_parts(
            self.positions,
            edges,
            directed,
            self.vertex_object_ids,
            self.attributes,
            edge_attributes,
            self.object_attributes,
            self.groups,
            self.group_attributes,
        )


def _checked_edges(inp: GraphInput, n_stored: int) -> IntArray:
    """Return the edges as int64 indices into [stored nodes, new nodes]; refuse self-loops."""
    n_new = len(check_positions(inp.positions))
    e = check_edges(inp.edges, n_stored + n_new)
    loops = np.flatnonzero(e[:, 0] == e[:, 1])
    if loops.size:
        r = int(loops[0])
        raise GeometryError(
            f"edges row {r} is a self-loop on vertex {e[r, 0]}; graphs must be simple "
            "(no self-loops)"
        )
    return e


def reject_repeats(stored: IntArray, raw: IntArray, n: int, directed: bool) -> None:
    """Refuse a new edge already stored, or given twice, naming its ``edges`` row.

    ``stored`` are the store's links in ``read_parts`` order, ``raw`` the new edges; both
    index the concatenation of ``n`` nodes.  Undirected ``(a, b)`` and ``(b, a)`` are one edge.
    """
    if not directed:
        stored, new = np.sort(stored, axis=1), np.sort(raw, axis=1)
    else:
        new = raw
    base = max(n, 1)
    old_keys = stored[:, 0] * base + stored[:, 1]
    keys = new[:, 0] * base + new[:, 1]
    hit = np.flatnonzero(np.isin(keys, old_keys))
    if hit.size:
        r = int(hit[0])
        a, b = raw[r].tolist()
        raise GeometryError(
            f"edges row {r} ({a}, {b}) is already in the store; graphs must be simple "
            "(no duplicate edges)"
        )
    order = np.argsort(keys, kind="stable")
    same = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if same.size:
        i, j = sorted(order[same[0] : same[0] + 2].tolist())
        a, b = raw[i].tolist()
        raise GeometryError(
            f"edges rows {i} and {j} are the same edge ({a}, {b}); graphs must be simple "
            "(no duplicate edges)"
        )


def new_only_parts(inp: GraphInput, n_stored: int, directed: bool) -> GeometryParts | None:
    """Parts of the new nodes when no edge touches a stored node, else None.

    The chunk-incremental append handles these; an edge to a stored node takes the rebuild.
    """
    e = _checked_edges(inp, n_stored)
    if e.size and int(e.min()) < n_stored:
        return None
    # refused here so that the message names the caller's indices, not the shifted ones
    reject_repeats(np.zeros((0, 2), dtype=np.int64), e, n_stored + len(inp.positions), directed)
    return inp.parts(e - n_stored, directed, inp.edge_attributes)


def _canonical(links: IntArray, vertex_object: IntArray, directed: bool) -> IntArray:
    if directed or not len(links):
        return links
    rank = traversal_rank(vertex_object)
    swap = rank[links[:, 0]] > rank[links[:, 1]]
    return np.ascontiguousarray(np.where(swap[:, None], links[:, ::-1], links))


def _merge_components(
    merged: GeometryParts, old: GeometryParts, raw: IntArray, links: IntArray
) -> GeometryParts:
    """Recompute component objects over all nodes (a fresh write's objects)."""
    obj, n_obj = connected_components(len(merged.positions), links)
    kept = [n for n in merged.object_attributes if n != ID]
    if n_obj != merged.n_objects and (kept or (merged.groups is not None and merged.groups.names)):
        joins = np.flatnonzero(raw.min(axis=1) < len(old.positions))
        r = int(joins[0]) if joins.size else 0
        what = f"object attribute {kept[0]!r}" if kept else "groups"
        raise InvalidInputError(
            f"edges row {r} {tuple(raw[r].tolist())} joins objects of the store, whose objects "
            f"are connected components; the store has {what}, which cannot follow the merge. "
            "Write the graph with vertex_object_ids to keep objects apart"
        )
    return replace(merged, vertex_object=obj, n_objects=n_obj)


def link_graph(
    old: GeometryParts, inp: GraphInput, *, directed: bool, ids_given: bool
) -> GeometryParts:
    """Return the stored level 0 ``old`` (``read_parts``) with the new data merged in."""
    n_old = len(old.positions)
    raw = _checked_edges(inp, n_old)
    stored = np.asarray(old.links, dtype=np.int64).reshape(-1, 2)
    reject_repeats(stored, raw, n_old + len(check_positions(inp.positions)), directed)
    inner = raw.min(axis=1) >= n_old if len(raw) else np.zeros(0, dtype=bool)
    new = inp.parts(raw[inner] - n_old, directed, None)
    e_cols = normalize_columns(inp.edge_attributes, len(raw), "edge attribute")
    new = replace(new, links=None, link_attributes=e_cols)
    merged = merge_parts(old, new, ids_given=ids_given, sort_ids=False)
    if ID not in merged.object_attributes:
        merged = _merge_components(merged, old, raw, np.concatenate([stored, raw]))
    vo = np.asarray(merged.vertex_objects, dtype=np.int64)
    stored = _canonical(stored, vo, directed)
    added = _canonical(raw, vo, directed)
    return replace(merged, links=np.ascontiguousarray(np.concatenate([stored, added])))
