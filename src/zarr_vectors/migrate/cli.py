"""``zarr-vectors convert OLD.zv NEW.zarrvectors`` for upstream stores: run and print a migration."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from zarr_vectors.errors import ZarrVectorsError
from zarr_vectors.formats.registry import STORE_SUFFIXES, is_store_path
from zarr_vectors.migrate.run import migrate
from zarr_vectors.spec.upstream import upstream_label

__all__ = ["convert_upstream"]


def convert_upstream(
    source: Path, store: Path, *, overwrite: bool, compressor: str, **given: object
) -> None:
    """Migrate ``source`` into ``store`` and print what was copied and what was found wrong.

    ``given`` holds the other ``convert`` options by flag; a migration keeps upstream's chunk
    and bin shapes and pyramid, so any of them set is a usage error rather than ignored.
    """
    err = Console(stderr=True)
    used = [flag for flag, value in given.items() if value not in (None, [], ())]
    if used:
        err.print(
            f"[red]error:[/red] {', '.join(used)} do(es) not apply when IN is an upstream "
            "zarr-vectors store: the migration keeps its chunk shape, bins and pyramid; "
            "rechunk or build a pyramid on the new store afterwards"
        )
        raise typer.Exit(2)
    if not is_store_path(store):
        err.print(
            f"[red]error:[/red] OUT must end in {', '.join(STORE_SUFFIXES)}, got {store.name!r}"
        )
        raise typer.Exit(2)
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
