"""Edge-list CSV files (with a node table) <-> ``graph`` stores (pyarrow).

An edge list is a CSV file whose header has ``source`` and ``target`` columns (any letter
case): one row per edge, naming its two nodes by id (integers or text); every other column is
an edge attribute.  Node positions come from a node table (``nodes``): a CSV file with an
``id`` column, coordinate columns ``x``, ``y`` and optionally ``z``, and any other columns as
node attributes.  By default the node table is ``<name>.nodes.csv`` beside ``<name>.csv``
when it exists.  Without a node table, the edge list itself must give the coordinates of both
ends (``source_x``, ``source_y``[, ``source_z``], ``target_x``, ...), and nodes are taken in
order of first appearance.

Mapping: nodes are the graph's vertices and rows of the node table keep their order, edges
keep their order and their ``source -> target`` orientation (the graph is stored directed;
``directed=False`` stores it undirected, and the store then orders each edge's ends).  The
order is kept as every writer keeps it (``keep_order``: the reserved ``_input_index`` vertex
and edge attributes, docs/spec.md §8.8); ``--no-keep-order`` leaves it out and export then
writes nodes and edges in storage order.  Integer,
float, boolean and text columns become attributes (text as categories; an integer column
with empty cells becomes float64 with NaN, and gets its empty cells back on export); the
original column names and Arrow types, the id column and the coordinate columns go to
``custom_metadata["edgelist"]``.  Export writes the edge list and the node table
(``<name>.nodes.csv`` unless ``nodes`` is given).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.csv as pa_csv  # type: ignore[import-untyped, unused-ignore]

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats._arrow import column_array
from zarr_vectors.formats._common import begin, section
from zarr_vectors.formats.registry import (
    Extent,
    PathLike,
    Progress,
    Source,
    WriteOptions,
    export_order,
    identifier,
    is_edge_list_csv,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.graphs import read_graph, write_graph

__all__ = ["EdgeListSource", "is_edge_list", "nodes_path", "open_edgelist", "store_to_edgelist"]

KEY = "edgelist"
"""``custom_metadata`` key of the column layout."""
NODE_ID = "node_id"
"""Vertex attribute holding each node's id."""
_AXES = ("x", "y", "z")
AnyArray = npt.NDArray[Any]


def is_edge_list(path: PathLike) -> bool:
    """Whether ``path`` is a CSV file whose header has ``source`` and ``target`` columns."""
    return is_edge_list_csv(path)


def nodes_path(path: PathLike) -> Path:
    """Return the default node table of an edge list: ``<name>.nodes.csv`` beside it."""
    p = Path(path)
    return p.with_name(f"{p.stem}.nodes.csv")


def _read(path: Path) -> Any:
    try:
        return pa_csv.read_csv(str(path))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InvalidInputError(f"{path.name}: not a readable CSV file ({exc})") from exc


def _find(names: Sequence[str], wanted: str, where: str) -> str:
    for n in names:
        if n.lower() == wanted:
            return n
    raise InvalidInputError(f"{where}: no {wanted!r} column (columns: {', '.join(names)})")


def _values(column: Any, name: str, where: str) -> AnyArray:
    values = column_array(column)
    if values is None:
        raise InvalidInputError(
            f"{where}: column {name!r} has type {column.type}, not a number or text"
        )
    return values


def _attributes(
    table: Any, skip: set[str], where: str, taken: set[str]
) -> tuple[dict[str, AnyArray], list[dict[str, str]]]:
    attrs: dict[str, AnyArray] = {}
    layout = []
    for name in table.column_names:
        if name in skip:
            continue
        key = identifier(name, taken)
        attrs[key] = _values(table.column(name), name, where)
        layout.append(
            {"column": name, "attribute": key, "type": str(table.schema.field(name).type)}
        )
    return attrs, layout


def _index(ids: AnyArray, wanted: AnyArray, where: str) -> npt.NDArray[np.int64]:
    order = np.argsort(ids, kind="stable")
    ranked = ids[order]
    pos = np.searchsorted(ranked, wanted)
    ok = (pos < len(ranked)) & (ranked[np.minimum(pos, max(len(ranked) - 1, 0))] == wanted)
    if not ok.all():
        missing = wanted[np.argmax(~ok)].item()
        raise InvalidInputError(f"{where}: node {missing!r} is not in the node table")
    return order[pos].astype(np.int64)


class EdgeListSource(Source):
    """An edge-list CSV file (and its node table) opened for conversion."""

    geometry_type = GeometryTypeName.GRAPH

    def __init__(
        self, path: PathLike, nodes: PathLike | None = None, directed: bool = True
    ) -> None:
        super().__init__(path)
        self.directed = directed
        edges = _read(self.path)
        names = edges.column_names
        src, dst = _find(names, "source", self.path.name), _find(names, "target", self.path.name)
        node_file = Path(nodes) if nodes is not None else nodes_path(self.path)
        if nodes is not None and not node_file.exists():
            raise FileNotFoundError(f"no such file: {node_file}")
        layout: dict[str, Any] = {
            "source": src,
            "target": dst,
            "directed": directed,
            "edge_order": list(names),
            "source_type": str(edges.schema.field(src).type),
        }
        taken: set[str] = set()
        ends = (
            _values(edges.column(src), src, self.path.name),
            _values(edges.column(dst), dst, self.path.name),
        )
        if node_file.exists():
            skip = self._node_table(_read(node_file), node_file.name, layout)
            layout["nodes_file"] = node_file.name
        else:
            skip = self._nodes_from_edges(edges, ends, layout)
        self.edges = np.stack([_index(self.ids, e, self.path.name) for e in ends], axis=1)
        self.edge_attributes, layout["edge_columns"] = _attributes(
            edges, {src, dst, *skip}, self.path.name, set(taken)
        )
        self.header = layout

    def _node_table(self, table: Any, where: str, layout: dict[str, Any]) -> set[str]:
        names = table.column_names
        id_col = _find(names, "id", where)
        axes = [n for a in _AXES for n in names if n.lower() == a]
        if len(axes) < 2:
            raise InvalidInputError(f"{where}: needs x and y columns (and optionally z)")
        self.ids = _values(table.column(id_col), id_col, where)
        if len(np.unique(self.ids)) != len(self.ids):
            raise InvalidInputError(f"{where}: node ids in {id_col!r} are not unique")
        self.positions = np.stack([_values(table.column(a), a, where) for a in axes], axis=1)
        self.attributes, layout["node_columns"] = _attributes(
            table, {id_col, *axes}, where, {NODE_ID}
        )
        layout.update(
            {
                "id": id_col,
                "axes": axes,
                "node_order": list(names),
                "axis_types": [str(table.schema.field(a).type) for a in axes],
            }
        )
        return set()

    def _nodes_from_edges(
        self, table: Any, ends: tuple[AnyArray, AnyArray], layout: dict[str, Any]
    ) -> set[str]:
        names = table.column_names
        lower = {n.lower(): n for n in names}
        axes = [a for a in _AXES if f"source_{a}" in lower and f"target_{a}" in lower]
        if len(axes) < 2:
            raise InvalidInputError(
                f"{self.path.name}: no node table ({nodes_path(self.path).name}) and no "
                "source_x, source_y, target_x, target_y columns to place the nodes"
            )
        cols = {f"{end}_{a}": lower[f"{end}_{a}"] for end in ("source", "target") for a in axes}
        xyz = [
            np.stack(
                [_values(table.column(cols[f"{end}_{a}"]), a, self.path.name) for a in axes], axis=1
            )
            for end in ("source", "target")
        ]
        both = np.empty(2 * len(ends[0]), dtype=np.result_type(ends[0], ends[1]))
        both[0::2], both[1::2] = ends
        place = np.empty((2 * len(ends[0]), len(axes)))
        place[0::2], place[1::2] = xyz
        _, first = np.unique(both, return_index=True)
        first = np.sort(first)
        self.ids, self.positions = both[first], place[first]
        self.attributes = {}
        layout.update({"endpoint_columns": cols, "axes": list(axes)})
        return set(cols.values())

    def extent(self) -> Extent:
        """Return the node count and bounding box."""
        return Extent.of(self.positions)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the graph, node and edge rows in file order."""
        begin(progress, "writing store")
        return write_graph(
            store,
            self.positions,
            self.edges,
            directed=self.directed,
            attributes={**self.attributes, NODE_ID: self.ids},
            edge_attributes=self.edge_attributes,
            keep_order=options.keep_order,
            **options.store(
                source_description=f"edge list: {self.path.name}",
                custom_metadata={KEY: self.header},
            ),
        )


def open_edgelist(
    path: PathLike, nodes: PathLike | None = None, directed: bool | None = None
) -> EdgeListSource:
    """Open an edge-list CSV file for conversion (see :class:`EdgeListSource`).

    Parameters
    ----------
    path
        CSV file with ``source`` and ``target`` columns.
    nodes
        Node table (default: ``<name>.nodes.csv`` beside ``path`` when it exists).
    directed
        Store the graph directed (default True: ``source -> target`` as in the file).
    """
    return EdgeListSource(path, nodes, True if directed is None else directed)


# -- export ---------------------------------------------------------------------------------


def _cells(values: AnyArray, type_name: str | None) -> list[str]:
    """Return values as CSV cells.

    Floats use Python's shortest round-trip repr (``2.0``, so a reader infers a float column
    again), integer columns' NaN become empty cells, text stays as it is.
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "OUS":
        return [str(v) for v in arr.tolist()]
    if arr.dtype.kind == "b":
        return ["true" if v else "false" for v in arr.tolist()]
    integer = (type_name or "").startswith(("int", "uint"))
    if arr.dtype.kind == "f":
        return [
            "" if np.isnan(v) else (str(int(v)) if integer else repr(float(v)))
            for v in arr.tolist()
        ]
    return [str(v) for v in arr.tolist()]


def _columns(layout: Sequence[Mapping[str, str]], values: Mapping[str, AnyArray]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in layout:
        if col["attribute"] in values:
            out[col["column"]] = _cells(np.asarray(values[col["attribute"]]), col["type"])
    return out


def store_to_edgelist(
    store: StoreLike,
    path: PathLike,
    *,
    level: int = 0,
    progress: Progress | None = None,
    nodes: PathLike | None = None,
) -> None:
    """Write one level of a ``graph`` store as an edge-list CSV file and a node table.

    Parameters
    ----------
    store
        A ``graph`` store.
    path
        Output edge list (``.csv``).
    level
        Resolution level.
    progress
        Receiver of progress reports.
    nodes
        Output node table (default ``<name>.nodes.csv``); not written for an edge list
        converted without one (its coordinates go back into the edge list).
    """
    report = begin(progress, "reading store")
    h = section(store, KEY)
    g = read_graph(store, level=level, order=export_order(store, level))
    ids = np.asarray(g.attributes.get(NODE_ID, np.arange(len(g.positions))))
    ends = np.asarray(g.edges)
    pos = np.asarray(g.positions)
    axes = list(h.get("axes", _AXES[: pos.shape[1]]))
    id_type = h.get("source_type")
    edge_cols: dict[str, Any] = {
        h.get("source", "source"): _cells(ids[ends[:, 0]], id_type),
        h.get("target", "target"): _cells(ids[ends[:, 1]], id_type),
    }
    edge_cols |= _columns(h.get("edge_columns", _default(g.edge_attributes)), g.edge_attributes)
    endpoint = h.get("endpoint_columns")
    if endpoint:
        for end, col in ((0, "source"), (1, "target")):
            for i, a in enumerate(axes):
                edge_cols[endpoint[f"{col}_{a}"]] = _cells(pos[ends[:, end], i], "double")
    _write(path, edge_cols, h.get("edge_order"))
    if endpoint:
        return
    node_cols: dict[str, Any] = {h.get("id", "id"): _cells(ids, h.get("source_type"))}
    for i, (a, t) in enumerate(zip(axes, h.get("axis_types", [None] * len(axes)), strict=True)):
        node_cols[a] = _cells(pos[:, i], t)
    node_cols |= _columns(h.get("node_columns", _default(g.attributes)), g.attributes)
    target = Path(nodes) if nodes is not None else nodes_path(path)
    _write(target, node_cols, h.get("node_order"))
    report.note(f"wrote {target}")


def _default(values: Mapping[str, AnyArray]) -> list[dict[str, str]]:
    return [{"column": k, "attribute": k, "type": ""} for k in values if k != NODE_ID]


def _write(path: PathLike, columns: Mapping[str, list[str]], order: Sequence[str] | None) -> None:
    known = [n for n in (order or ()) if n in columns]
    names = known + [n for n in columns if n not in known]
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(names)
        out.writerows(zip(*(columns[n] for n in names), strict=True))
