"""The ``zarr-vectors`` command line (typer + rich; install with ``pip install zarr-vectors[cli]``).

Commands: ``info STORE`` summarises a store, ``validate STORE`` checks it against ZVF 1.0;
``convert``, ``export`` and ``pyramid`` (:mod:`zarr_vectors.cli_convert`), ``render`` and
``view`` (:mod:`zarr_vectors.cli_viz`).  ``zarr-vectors --version`` prints the version.
Exit codes: 0 success, 1 the store is invalid (validation errors, unreadable metadata), 2 usage
error or no store at the given location.

:data:`app` holds the commands.  A new command (``convert``, ``export``, ``pyramid``, ``render``)
lives in its own module exposing ``register(app: typer.Typer) -> None``; list that function in
:data:`REGISTRARS` and it is added when this module loads.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
import zarr
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from zarr_vectors import __version__, cli_convert, cli_edit, cli_query, cli_viz
from zarr_vectors.cli_collection import print_collection
from zarr_vectors.cli_style import FlagCommand, FlagGroup
from zarr_vectors.core.store import (
    list_resolution_levels,
    open_level,
    open_store,
    read_level_metadata,
    read_root_metadata,
)
from zarr_vectors.core.zarr_adapter import quiet_vlen
from zarr_vectors.edit.collection import is_collection
from zarr_vectors.errors import StoreNotFoundError, ZarrVectorsError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.spec.metadata import Axis
from zarr_vectors.validate import ValidationReport, validate

__all__ = ["REGISTRARS", "LevelSummary", "StoreSummary", "app", "main", "summarize"]

EXIT_INVALID = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="zarr-vectors",
    help=(
        "Convert, export, inspect, check, build pyramids of, render and view "
        "Zarr Vectors Format (ZVF 1.0) stores."
    ),
    cls=FlagGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
"""The typer application behind the ``zarr-vectors`` script."""

_STORE_HELP = "Path of the store: a directory (e.g. scan.zarrvectors) or a .zip file."
_ATTRIBUTE_PREFIXES = (
    L.ATTRIBUTES,
    L.OBJECT_ATTRIBUTES,
    L.LINK_ATTRIBUTES,
    L.CROSS_CHUNK_LINK_ATTRIBUTES,
    L.GROUPINGS_ATTRIBUTES,
)
_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


# ---------------------------------------------------------------------------------------------
# info


@dataclass(frozen=True)
class AttributeSummary:
    """One attribute array of a level."""

    array: str
    """Path inside the level group, e.g. ``"attributes/intensity"``."""
    dtype: str
    """Numpy dtype string of the values."""
    width: int | None
    """Values per row."""


@dataclass(frozen=True)
class LevelSummary:
    """Counts and bins of one resolution level."""

    level: int
    """Level number (0 = full resolution)."""
    bin_ratio: list[int]
    """Bin size relative to level 0, per axis."""
    bin_shape: list[float]
    """Bin extent, physical units."""
    object_sparsity: float
    """Fraction of level-0 objects kept."""
    vertex_count: int
    """Vertices stored at this level."""
    object_count: int
    """Objects with vertices at this level."""
    chunk_count: int
    """Non-empty chunks."""
    attributes: list[AttributeSummary]
    """Attribute arrays (per vertex, object, link, group)."""


@dataclass(frozen=True)
class StoreSummary:
    """What ``zarr-vectors info`` reports about a store."""

    store: str
    """The location as given."""
    geometry_type: str
    """One of the seven geometry types."""
    zarr_vectors_version: str
    """ZVF version of the store."""
    zarr_format: int
    """Zarr format, 2 or 3."""
    spatial_dims: int
    """Number of spatial dimensions D."""
    axes: list[dict[str, str]]
    """``multiscales`` axes: name, type and unit."""
    axis_units: str | list[str] | None
    """Root ``axis_units``."""
    coordinate_system: str
    """Informational coordinate system name."""
    chunk_shape: list[float]
    """Chunk extent, physical units."""
    base_bin_shape: list[float]
    """Level-0 bin extent, physical units."""
    chunk_grid: dict[str, list[int]] | None
    """``{origin, shape}`` of the chunk grid."""
    bounding_box: dict[str, list[float]] | None
    """``{min, max}`` of the level-0 vertices."""
    size_bytes: int | None
    """Bytes on disk for local directories and zip files, else None."""
    levels: list[LevelSummary]
    """One entry per level group, ascending."""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return asdict(self)


def summarize(store: str) -> StoreSummary:
    """Read the metadata of ``store`` into a :class:`StoreSummary`.

    Parameters
    ----------
    store
        Local directory, ``.zip`` path or URL of a ZVF store.

    Returns
    -------
    StoreSummary
        Root metadata, per-level counts and attribute arrays, and the size on disk.

    Raises
    ------
    StoreNotFoundError
        Nothing, or no ZVF store, at ``store``.
    MetadataValidationError
        Root or level metadata do not parse (run ``zarr-vectors validate`` for details).
    """
    root = open_store(store, mode="r")
    meta = read_root_metadata(root)
    levels = [_level_summary(root, n) for n in list_resolution_levels(root)]
    units, grid, box = meta.axis_units, meta.chunk_grid, meta.bounding_box
    return StoreSummary(
        store=store,
        geometry_type=str(meta.geometry_type),
        zarr_vectors_version=meta.zarr_vectors_version,
        zarr_format=root.metadata.zarr_format,
        spatial_dims=meta.spatial_dims,
        axes=[_axis(a) for a in meta.multiscales.axes],
        axis_units=list(units) if isinstance(units, tuple) else units,
        coordinate_system=meta.coordinate_system,
        chunk_shape=list(meta.chunk_shape),
        base_bin_shape=list(meta.base_bin_shape),
        chunk_grid=None
        if grid is None
        else {"origin": list(grid.origin), "shape": list(grid.shape)},
        bounding_box=None if box is None else {"min": list(box.min), "max": list(box.max)},
        size_bytes=_size_on_disk(Path(store)),
        levels=levels,
    )


def _axis(axis: Axis) -> dict[str, str]:
    out = {"name": axis.name, "type": axis.type}
    if axis.unit is not None:
        out["unit"] = axis.unit
    return out


def _level_summary(root: zarr.Group, level: int) -> LevelSummary:
    lm = read_level_metadata(root, level)
    return LevelSummary(
        level=lm.level,
        bin_ratio=list(lm.bin_ratio),
        bin_shape=list(lm.bin_shape),
        object_sparsity=lm.object_sparsity,
        vertex_count=lm.vertex_count,
        object_count=lm.object_count,
        chunk_count=lm.chunk_count,
        attributes=_attributes(open_level(root, level)),
    )


def _attributes(group: zarr.Group) -> list[AttributeSummary]:
    out = []
    with quiet_vlen():
        for prefix in _ATTRIBUTE_PREFIXES:
            sub = group.get(prefix)
            if not isinstance(sub, zarr.Group):
                continue
            for name, arr in sorted(sub.arrays()):
                attrs = arr.attrs.asdict()
                width = attrs.get("width")
                out.append(
                    AttributeSummary(
                        array=f"{prefix}/{name}",
                        dtype=str(attrs.get("dtype", arr.dtype)),
                        width=width if isinstance(width, int) else None,
                    )
                )
    return out


def _size_on_disk(path: Path) -> int | None:
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        return None
    total = 0
    for folder, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _nums(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _store_table(s: StoreSummary) -> Table:
    table = Table(title=f"ZVF store {s.store}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    axes = ", ".join(a["name"] + (f" ({a['unit']})" if "unit" in a else "") for a in s.axes)
    rows = [
        ("geometry type", s.geometry_type),
        ("format version", f"ZVF {s.zarr_vectors_version}, Zarr v{s.zarr_format}"),
        ("spatial dims", str(s.spatial_dims)),
        ("axes", axes),
        ("axis units", str(s.axis_units) if s.axis_units is not None else "-"),
        ("coordinate system", s.coordinate_system),
        ("chunk shape", _nums(s.chunk_shape)),
        ("base bin shape", _nums(s.base_bin_shape)),
    ]
    if s.chunk_grid is not None:
        grid = s.chunk_grid
        rows.append(("chunk grid", f"origin {grid['origin']}, shape {grid['shape']}"))
    if s.bounding_box is not None:
        box = s.bounding_box
        rows.append(("bounding box", f"min {_nums(box['min'])}, max {_nums(box['max'])}"))
    if s.size_bytes is not None:
        rows.append(("size on disk", _human(s.size_bytes)))
    for key, value in rows:
        table.add_row(key, value)
    return table


def _levels_table(s: StoreSummary) -> Table:
    table = Table(title="Levels", title_justify="left")
    for name in ("level", "bin ratio", "bin shape", "vertices", "objects", "chunks", "sparsity"):
        numeric = name in ("level", "vertices", "objects", "chunks", "sparsity")
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for lv in s.levels:
        table.add_row(
            str(lv.level),
            str(lv.bin_ratio),
            _nums(lv.bin_shape),
            str(lv.vertex_count),
            str(lv.object_count),
            str(lv.chunk_count),
            f"{lv.object_sparsity:g}",
        )
    return table


def _attributes_table(s: StoreSummary) -> Table:
    table = Table(title="Attributes", title_justify="left")
    for name in ("level", "array", "dtype", "width"):
        table.add_column(name, overflow="fold")
    for lv in s.levels:
        for a in lv.attributes:
            table.add_row(str(lv.level), a.array, a.dtype, "-" if a.width is None else str(a.width))
    return table


def _print_summary(console: Console, s: StoreSummary) -> None:
    console.print(_store_table(s))
    console.print(_levels_table(s))
    attributes = _attributes_table(s)
    if attributes.row_count:
        console.print(attributes)


def info_command(
    store: Annotated[str, typer.Argument(help=_STORE_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Summarise a store: geometry, chunking, levels, counts and attributes.

    A collection shows the tree of its children: geometry type and level-0 counts of each.
    """
    err = Console(stderr=True)
    if is_collection(store):
        print_collection(store, as_json)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = summarize(store)
        except StoreNotFoundError as exc:
            err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(EXIT_USAGE) from None
        except (ZarrVectorsError, ValueError, KeyError) as exc:
            err.print(
                f"[bold red]error:[/] cannot read {escape(store)}: {escape(str(exc))}\n"
                f"Run [bold]zarr-vectors validate {escape(store)}[/] for a full report.",
                highlight=False,
            )
            raise typer.Exit(EXIT_INVALID) from None
    for w in caught:
        err.print(f"[yellow]warning:[/] {escape(str(w.message))}", highlight=False)
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
    else:
        _print_summary(Console(), summary)


# ---------------------------------------------------------------------------------------------
# validate


def _print_report(console: Console, report: ValidationReport) -> None:
    if report.findings:
        table = Table(show_lines=False)
        table.add_column("severity", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("path", overflow="fold")
        table.add_column("message", overflow="fold")
        for f in report.findings:
            style = _SEVERITY_STYLE[f.severity]
            table.add_row(f"[{style}]{f.severity.value}[/]", f.check, f.path, f.message)
        console.print(table)
    style = "bold green" if report.ok else "bold red"
    console.print(f"[{style}]{report.summary()}[/]", highlight=False)


def validate_command(
    store: Annotated[str, typer.Argument(help=_STORE_HELP)],
    level: Annotated[
        int,
        typer.Option(
            "--level",
            "-l",
            min=1,
            max=5,
            help="Depth: 1 structure, 2 metadata, 3 consistency, 4 geometry, 5 pyramid.",
        ),
    ] = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check a store against ZVF 1.0; exit 1 when any error is found."""
    report = validate(store, level=level)
    missing = "L1.store.missing" in report.checks()
    if as_json:
        typer.echo(report.to_json())
    elif missing:
        Console(stderr=True).print(
            f"[bold red]error:[/] {escape(report.errors[0].message)}", highlight=False
        )
    else:
        _print_report(Console(), report)
    if missing:
        raise typer.Exit(EXIT_USAGE)
    if not report.ok:
        raise typer.Exit(EXIT_INVALID)


# ---------------------------------------------------------------------------------------------
# registration


def _register_builtin(target: typer.Typer) -> None:
    target.callback()(_root)
    target.command("info", cls=FlagCommand)(info_command)
    target.command("validate", cls=FlagCommand)(validate_command)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"zarr-vectors {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Convert, export, inspect, check, build pyramids of, render and view ZVF 1.0 stores."""


REGISTRARS: tuple[Callable[[typer.Typer], None], ...] = (
    _register_builtin,
    cli_convert.register,
    cli_edit.register,
    cli_viz.register,
    cli_query.register,
)
"""Functions adding commands to :data:`app`; one per command module."""

for _register in REGISTRARS:
    _register(app)


def main() -> None:
    """Run the ``zarr-vectors`` command line."""
    app()


if __name__ == "__main__":
    main()
