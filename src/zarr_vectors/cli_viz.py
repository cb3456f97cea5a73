"""``zarr-vectors render`` and ``zarr-vectors view``: look at a store (needs the ``viz`` extra).

``render STORE -o view.png`` draws one level to a PNG; ``view STORE`` exports a level as
Neuroglancer precomputed data into a temporary directory, serves it on ``127.0.0.1`` and prints
a Neuroglancer URL whose state points at it.  Exit codes follow :mod:`zarr_vectors.cli`:
0 success, 1 the store cannot be read, 2 usage error (bad option, no store, missing extra).

The ``zarr_vectors.viz`` package is imported when a command runs, not when the command line
loads: matplotlib is an optional dependency and ``info``/``validate`` must work without it.
"""

from __future__ import annotations

import importlib
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from zarr_vectors.cli_style import FlagCommand
from zarr_vectors.errors import InvalidInputError, StoreNotFoundError, ZarrVectorsError

__all__ = ["parse_bbox_option", "register", "render_command", "view_command"]

EXIT_INVALID = 1
EXIT_USAGE = 2

_STORE_HELP = "Path of the store: a directory (e.g. scan.zarrvectors) or a .zip file."
_BBOX_HELP = "Region x0,y0,z0,x1,y1,z1 (2*D numbers, physical units)."


def parse_bbox_option(text: str | None) -> list[float] | None:
    """Parse ``"x0,y0,z0,x1,y1,z1"`` into numbers (an even count of them).

    Examples
    --------
    >>> parse_bbox_option("0,0,10,5")
    [0.0, 0.0, 10.0, 5.0]
    >>> parse_bbox_option(None) is None
    True
    """
    if text is None:
        return None
    try:
        values = [float(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise InvalidInputError(f"--bbox: expected comma-separated numbers, got {text!r}") from None
    if not values or len(values) % 2:
        raise InvalidInputError(f"--bbox: expected 2 * D numbers, got {len(values)}")
    return values


def _viz() -> ModuleType:
    try:
        return importlib.import_module("zarr_vectors.viz")
    except ImportError as exc:
        Console(stderr=True).print(
            f"[bold red]error:[/] {escape(str(exc))}. Install the extra: "
            + escape("pip install 'zarr-vectors[viz]'"),
            highlight=False,
        )
        raise typer.Exit(EXIT_USAGE) from None


def _fail(exc: Exception, store: str) -> typer.Exit:
    err = Console(stderr=True)
    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
    if isinstance(exc, StoreNotFoundError | InvalidInputError):
        return typer.Exit(EXIT_USAGE)
    err.print(
        f"Run [bold]zarr-vectors validate {escape(store)}[/] for a full report.", highlight=False
    )
    return typer.Exit(EXIT_INVALID)


def render_command(
    store: Annotated[str, typer.Argument(help=_STORE_HELP)],
    output: Annotated[Path, typer.Option("--output", "-o", help="PNG file to write.")] = Path(
        "view.png"
    ),
    level: Annotated[
        int | None, typer.Option("--level", "-l", min=0, help="Level (default: automatic).")
    ] = None,
    bbox: Annotated[str | None, typer.Option("--bbox", help=_BBOX_HELP)] = None,
    color_by: Annotated[
        str | None, typer.Option("--color-by", help="Attribute mapped to colour.")
    ] = None,
    projection: Annotated[str, typer.Option("--projection", "-p", help="xy, xz, yz or 3d.")] = "xy",
    max_vertices: Annotated[
        int, typer.Option("--max-vertices", min=1, help="Vertex budget of the automatic level.")
    ] = 200_000,
    dpi: Annotated[int, typer.Option("--dpi", min=10, help="PNG resolution.")] = 150,
    title: Annotated[str | None, typer.Option("--title", help="Title line.")] = None,
) -> None:
    """Draw one level of a store to a PNG (points, lines, graphs, skeletons, meshes)."""
    viz = _viz()
    try:
        result = viz.render(
            store,
            output,
            level=level,
            bbox=parse_bbox_option(bbox),
            color_by=color_by,
            projection=projection,
            max_vertices=max_vertices,
            dpi=dpi,
            title=title,
        )
    except (ZarrVectorsError, ValueError, KeyError) as exc:
        raise _fail(exc, store) from None
    typer.echo(
        f"wrote {result.path} (level {result.level}, {result.vertices} vertices, "
        f"{result.objects} objects, {result.edges} edges, {result.faces} faces)"
    )


def view_command(
    store: Annotated[str, typer.Argument(help=_STORE_HELP)],
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="0 = any free.")] = 0,
    level: Annotated[int, typer.Option("--level", "-l", min=0, help="Level to export.")] = 0,
    bbox: Annotated[str | None, typer.Option("--bbox", help=_BBOX_HELP)] = None,
    client: Annotated[
        str | None, typer.Option("--client", help="Neuroglancer client URL (default: public).")
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option("--duration", min=0, help="Serve this many seconds, then exit."),
    ] = None,
) -> None:
    """Export a level for Neuroglancer, serve it on 127.0.0.1 and print the viewer URL."""
    viz = _viz()
    with tempfile.TemporaryDirectory(prefix="zarr-vectors-view-") as tmp:
        try:
            export = viz.export_neuroglancer(store, tmp, level=level, bbox=parse_bbox_option(bbox))
        except (ZarrVectorsError, ValueError, KeyError) as exc:
            raise _fail(exc, store) from None
        try:
            server = viz.serve(tmp, port=port)
        except OSError as exc:
            Console(stderr=True).print(
                f"[bold red]error:[/] port {port}: {escape(str(exc))}", highlight=False
            )
            raise typer.Exit(EXIT_USAGE) from None
        with server:
            state = viz.viewer_state(export, server.url)
            url = viz.neuroglancer_url(state, client or viz.DEFAULT_CLIENT)
            typer.echo(
                f"serving {export.count} {export.kind.value} at {server.url}/{export.source}"
            )
            typer.echo(url, nl=True)
            _wait(duration)


def _wait(duration: float | None) -> None:
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.2)
    except KeyboardInterrupt:
        typer.echo("stopped")


def register(app: typer.Typer) -> None:
    """Add ``render`` and ``view`` to ``app``."""
    app.command("render", cls=FlagCommand)(render_command)
    app.command("view", cls=FlagCommand)(view_command)
