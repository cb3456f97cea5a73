"""``zarr-vectors convert OLD.zv NEW.zarrvectors`` for upstream stores: run and print a migration."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.migrate.detect import upstream_label
from zarr_vectors.migrate.run import migrate

__all__ = ["convert_upstream"]


def convert_upstream(source: Path, store: Path, *, overwrite: bool, compressor: str) -> None:
    """Migrate ``source`` into ``store`` and print what was copied and what was found wrong."""
    err = Console(stderr=True)
    if store.exists() and not overwrite:
        err.print(f"[red]error:[/red] {escape(str(store))} exists; pass --overwrite to replace it")
        raise typer.Exit(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report below lists every defect
            report = migrate(
                os.fspath(source), os.fspath(store), overwrite=overwrite, compressor=compressor
            )
    except (ZarrVectorsError, OSError, ValueError) as exc:
        err.print(f"[red]error:[/red] cannot migrate {escape(str(source))}: {escape(str(exc))}")
        raise typer.Exit(1) from exc
    out = Console()
    out.print(
        f"migrated upstream zarr-vectors {upstream_label(report.upstream_version)} "
        f"{report.geometry_type} store: {report.vertices} vertices, {report.objects} objects, "
        f"{report.links} links -> {escape(str(store))}"
    )
    for ratio in report.rebuilt_ratios:
        out.print(f"  rebuilt coarse level with bin ratio {list(ratio)}")
    for line in report.defects:
        out.print(f"  [yellow]upstream defect, not copied:[/yellow] {escape(line)}")
    for line in report.dropped:
        out.print(f"  [yellow]not carried over:[/yellow] {escape(line)}")
