"""``zarr-vectors append`` and ``zarr-vectors compact``: edit an existing store."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from zarr_vectors.core.store import open_store, read_root_metadata
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.edit import append_store, compact
from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.formats.registry import convert

__all__ = ["append_command", "compact_command", "register"]

EXIT_FAILURE = 1


def _report(summary: WriteSummary) -> None:
    Console().print(
        f"{summary.geometry_type}: {summary.vertex_count} vertices, "
        f"{summary.object_count} objects, {summary.chunk_count} chunks",
        highlight=False,
    )


def _fail(message: str) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(EXIT_FAILURE)


def append_command(
    store: Annotated[Path, typer.Argument(metavar="STORE", help="An existing ZVF store.")],
    source: Annotated[
        Path, typer.Argument(metavar="FILE", help="A file any `convert` input format reads.")
    ],
) -> None:
    """Append the objects of FILE to STORE (same geometry type and attribute schema).

    Example: zarr-vectors append atlas.zarrvectors tonight.trk
    """
    scratch = Path(tempfile.mkdtemp(prefix="zv-append-"))
    try:
        meta = read_root_metadata(open_store(os.fspath(store)))
        staged = scratch / "new.zarrvectors"
        convert(source, os.fspath(staged), chunk_shape=meta.chunk_shape)
        summary = append_store(os.fspath(store), os.fspath(staged))
    except (ZarrVectorsError, OSError, ValueError) as exc:
        raise _fail(f"cannot append {source} to {store}: {exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _report(summary)


def compact_command(
    store: Annotated[Path, typer.Argument(metavar="STORE", help="An existing ZVF store.")],
) -> None:
    """Rewrite STORE as a fresh write of its content (every level), committed at once."""
    try:
        summary = compact(os.fspath(store))
    except (ZarrVectorsError, OSError) as exc:
        raise _fail(f"cannot compact {store}: {exc}") from None
    _report(summary)


def register(app: typer.Typer) -> None:
    """Add ``append`` and ``compact`` to ``app``."""
    app.command("append")(append_command)
    app.command("compact")(compact_command)
