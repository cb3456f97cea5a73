"""``zarr-vectors query``: count, explain or extract what a box/sphere/attribute query selects.

Examples::

    zarr-vectors query scan.zarrvectors --bbox 0,0,0,100,100,50 --where "intensity>=0.5" --count
    zarr-vectors query scan.zarrvectors --where "label in 3,7" --out hits.csv
    zarr-vectors query scan.zarrvectors --sphere 50,50,25,10 --explain

``--out`` writes the selected vertices as a table: ``.csv`` (header line, one row per vertex)
or ``.npz`` (one array per column); columns are the axes, the attributes and ``object_id``.
Exit codes follow :mod:`zarr_vectors.cli`: 0 success, 1 unreadable store, 2 usage error.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console

import zarr_vectors as zv
from zarr_vectors.cli_viz import parse_bbox_option
from zarr_vectors.errors import InvalidInputError, StoreNotFoundError, ZarrVectorsError
from zarr_vectors.query.count import CountUnit, default_unit
from zarr_vectors.query.predicates import parse_where_text
from zarr_vectors.query.table import vertex_owners, vertex_table
from zarr_vectors.spec.conventions import GeometryTypeName

__all__ = ["query_command", "register", "write_table"]

EXIT_INVALID = 1
EXIT_USAGE = 2

_STORE_HELP = "Path or URL of the store (directory, .zip, s3://...)."


def _bbox(text: str | None) -> tuple[list[float], list[float]] | None:
    values = parse_bbox_option(text)
    if values is None:
        return None
    d = len(values) // 2
    return values[:d], values[d:]


def _sphere(text: str | None) -> tuple[list[float], float] | None:
    if text is None:
        return None
    try:
        values = [float(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise InvalidInputError(f"--sphere: expected numbers, got {text!r}") from None
    if len(values) < 2:
        raise InvalidInputError("--sphere: expected center coordinates then the radius")
    return values[:-1], values[-1]


def write_table(columns: dict[str, Any], out: Path) -> None:
    """Write columns to ``.csv`` or ``.npz`` (chosen by the suffix)."""
    suffix = out.suffix.lower()
    if suffix == ".npz":
        np.savez(out, **columns)
        return
    if suffix != ".csv":
        raise InvalidInputError(f"--out: use a .csv or .npz file, got {out.name!r}")
    names = list(columns)
    n = len(next(iter(columns.values()))) if columns else 0
    with out.open("w", encoding="utf-8") as fh:
        fh.write(",".join(names) + "\n")
        for i in range(n):
            fh.write(",".join(_cell(columns[c][i]) for c in names) + "\n")


def _cell(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return repr(float(value))  # shortest text that reads back to the same float64
    return str(value.item() if isinstance(value, np.generic) else value)


def _fail(exc: Exception, store: str) -> typer.Exit:
    err = Console(stderr=True)
    err.print(f"[bold red]error:[/] {exc}", highlight=False)
    if isinstance(exc, StoreNotFoundError | InvalidInputError):
        return typer.Exit(EXIT_USAGE)
    err.print(f"Run [bold]zarr-vectors validate {store}[/] for a full report.", highlight=False)
    return typer.Exit(EXIT_INVALID)


def _count(
    reader: zv.Reader,
    box: Any,
    ball: Any,
    cond: dict[str, Any],
    level: int,
    max_vertices: int | None,
    limit: int | None,
) -> int:
    """Return what ``--count`` prints: the count of what the read with these options returns."""
    n = zv.count(reader, bbox=box, sphere=ball, where=cond, level=level, max_vertices=max_vertices)
    if limit is None or n <= limit:
        return n
    gtype = reader.geometry_type
    if gtype == GeometryTypeName.POINT_CLOUD or default_unit(gtype) is CountUnit.OBJECTS:
        return limit  # the count and the limit are both in items of the read
    # graphs and meshes: limit counts objects, the count vertices; count the limited read
    result = reader.read(
        level=level, bbox=box, sphere=ball, where=cond, limit=limit, max_vertices=max_vertices
    )
    return len(vertex_owners(result)[0])


def query_command(
    store: Annotated[str, typer.Argument(help=_STORE_HELP)],
    bbox: Annotated[str | None, typer.Option("--bbox", help="x0,y0,..,x1,y1,.. (2*D).")] = None,
    sphere: Annotated[
        str | None, typer.Option("--sphere", help="Center coordinates then radius.")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", "-w", help="Condition, e.g. 'v>=0.5' or 'k in 3,7' (repeat)."),
    ] = None,
    level: Annotated[int, typer.Option("--level", "-l", min=0, help="Resolution level.")] = 0,
    max_vertices: Annotated[
        int | None, typer.Option("--max-vertices", min=0, help="Finest level within budget.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help="First N items.")] = None,
    count: Annotated[
        bool,
        typer.Option(
            "--count",
            help="Print the number a read returns: objects (paths, skeletons) or vertices.",
        ),
    ] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Print the plan (JSON).")] = False,
    out: Annotated[Path | None, typer.Option("--out", "-o", help=".csv or .npz to write.")] = None,
) -> None:
    """Select by box, sphere and attribute conditions; count, explain or write the vertices."""
    try:
        cond = parse_where_text(where or [])
        box, ball = _bbox(bbox), _sphere(sphere)
        reader = zv.open(store)
        if explain:
            plan = zv.explain(
                reader, bbox=box, sphere=ball, where=cond, level=level, max_vertices=max_vertices
            )
            typer.echo(json.dumps(asdict(plan), default=str, indent=2))
        if count:
            typer.echo(str(_count(reader, box, ball, cond, level, max_vertices, limit)))
        if out is not None or not (count or explain):
            result = reader.read(
                level=level,
                bbox=box,
                sphere=ball,
                where=cond,
                limit=limit,
                max_vertices=max_vertices,
            )
            axes = tuple(a.name for a in reader.metadata.multiscales.axes)
            columns = vertex_table(result, axes)
            rows = len(next(iter(columns.values())))
            if out is not None:
                write_table(columns, out)
                typer.echo(f"wrote {rows} vertices to {out}")
            else:
                typer.echo(f"{rows} vertices selected")
    except (ZarrVectorsError, ValueError, KeyError) as exc:
        raise _fail(exc, store) from None


def register(app: typer.Typer) -> None:
    """Add ``query`` to ``app``."""
    app.command("query")(query_command)
