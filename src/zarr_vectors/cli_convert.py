"""``zarr-vectors convert``, ``export`` and ``pyramid``: move data between files and stores.

The file format follows from the extension (:data:`~zarr_vectors.formats.registry.FORMATS`);
a store is a path ending in ``.zarrvectors`` or ``.zarr`` (a directory) or ``.zip``.  Long
steps draw rich progress bars on stderr; results go to stdout.

Exit codes: 0 success; 1 the operation failed (unreadable input, data the store cannot hold, a
missing optional library); 2 usage error (bad option value, unknown extension, missing input,
an existing output without ``--overwrite``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from zarr_vectors.cli_style import FlagCommand
from zarr_vectors.errors import (
    InvalidInputError,
    MetadataValidationError,
    StoreExistsError,
    StoreNotFoundError,
    ZarrVectorsError,
)
from zarr_vectors.formats.bins import level0_vertices, warn_sparse_levels
from zarr_vectors.formats.registry import (
    FORMATS,
    STORE_SUFFIXES,
    ConvertReport,
    convert,
    editable,
    export,
    format_for,
    format_for_store,
    is_store_path,
    store_metadata,
)
from zarr_vectors.migrate.cli import convert_upstream
from zarr_vectors.multiscale import PyramidLevel, build_pyramid
from zarr_vectors.spec.conventions import Compression
from zarr_vectors.spec.metadata import RootMetadata
from zarr_vectors.spec.typespec import type_spec
from zarr_vectors.spec.upstream import is_upstream_path

__all__ = ["RichProgress", "parse_ratio", "parse_shape", "register"]

T = TypeVar("T")

EXIT_FAILURE = 1
EXIT_USAGE = 2

_FORMATS_HELP = "; ".join(f"{', '.join(f.extensions)} ({f.description})" for f in FORMATS)
_STORE_HELP = "Path of the store: a directory ending in .zarrvectors (or .zarr), or a .zip file."


# -- option parsing -------------------------------------------------------------------------


def parse_shape(text: str) -> tuple[float, ...]:
    """Parse ``"10,10,5"`` into positive floats (a ``typer.BadParameter`` otherwise).

    Examples
    --------
    >>> parse_shape("10, 10,2.5")
    (10.0, 10.0, 2.5)
    """
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a comma-separated list of numbers") from None
    if not values or any(not v > 0 for v in values):
        raise typer.BadParameter(f"{text!r}: every extent must be > 0")
    return values


def parse_ratio(text: str) -> tuple[int, ...]:
    """Parse ``"2,2,2"`` into integers >= 1 (a ``typer.BadParameter`` otherwise).

    Examples
    --------
    >>> parse_ratio("2,2,1")
    (2, 2, 1)
    """
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a comma-separated list of integers") from None
    if any(v < 1 for v in values):
        raise typer.BadParameter(f"{text!r}: every ratio must be >= 1")
    return values


def _usage(console: Console, message: str) -> NoReturn:
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(EXIT_USAGE)


def _failure(console: Console, message: str) -> NoReturn:
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(EXIT_FAILURE)


# -- progress -------------------------------------------------------------------------------


class RichProgress:
    """A :class:`~zarr_vectors.formats.registry.Progress` drawing rich progress bars."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def _finish(self) -> None:
        if self._task is not None:
            task = self._progress.tasks[self._task]
            self._progress.update(
                self._task, total=task.completed or 1, completed=task.completed or 1
            )
            self._progress.stop_task(self._task)

    def start(self, description: str, total: float | None = None) -> None:
        """Close the current bar and open a new one (a spinner when ``total`` is None)."""
        self._finish()
        self._task = self._progress.add_task(description, total=total)

    def advance(self, amount: float = 1) -> None:
        """Advance the current bar."""
        if self._task is not None:
            self._progress.advance(self._task, amount)

    def note(self, message: str) -> None:
        """Print a line above the bars."""
        self._progress.console.print(escape(message), highlight=False)

    def close(self) -> None:
        """Complete the last bar."""
        self._finish()


@contextmanager
def _progress(console: Console) -> Iterator[RichProgress]:
    bars = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    report = RichProgress(bars)
    with bars:
        yield report
        report.close()


@contextmanager
def _warnings_to(console: Console) -> Iterator[None]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        console.print(f"[yellow]warning:[/] {escape(str(w.message))}", highlight=False)


# -- convert --------------------------------------------------------------------------------


def _check_convert_paths(err: Console, source: Path, store: Path, overwrite: bool) -> None:
    if is_store_path(source):
        _usage(err, f"{source} is a store; use 'zarr-vectors export STORE OUT' to write a file")
    if not is_store_path(store):
        _usage(err, f"OUT must end in {', '.join(STORE_SUFFIXES)}, got {store.name!r}")
    try:
        format_for(source)
    except InvalidInputError as exc:
        _usage(err, str(exc))
    if not source.exists():
        _usage(err, f"no such file: {source}")
    if store.exists() and not overwrite:
        _usage(err, f"{store} exists; pass --overwrite to replace it")


def _print_report(console: Console, store: Path, report: ConvertReport) -> None:
    s = report.summary
    table = Table(title=escape(f"wrote {store}"), show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("geometry type", str(s.geometry_type))
    table.add_row("vertices", f"{s.vertex_count:,}")
    table.add_row("objects", f"{s.object_count:,}")
    table.add_row("chunks", f"{s.chunk_count:,} (grid {list(s.chunk_grid.shape)})")
    auto = " (chosen from the data extent)" if report.chunk_shape_chosen else ""
    table.add_row("chunk shape", _nums(report.chunk_shape) + auto)
    table.add_row("bin shape", _nums(report.bin_shape))
    console.print(table)
    if report.pyramid:
        console.print(_levels_table(report.pyramid))


def _nums(values: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _levels_table(levels: Sequence[PyramidLevel]) -> Table:
    table = Table(title="pyramid levels", title_justify="left")
    for name in ("level", "bin ratio", "vertices", "objects", "sparsity"):
        table.add_column(name, justify="left" if name == "bin ratio" else "right")
    for lv in levels:
        table.add_row(
            str(lv.level),
            str(list(lv.bin_ratio)),
            f"{lv.vertex_count:,}",
            f"{lv.object_count:,}",
            f"{lv.object_sparsity:g}",
        )
    return table


def convert_command(
    source: Annotated[
        Path, typer.Argument(metavar="IN", help=f"Input file: {_FORMATS_HELP}.", show_default=False)
    ],
    store: Annotated[Path, typer.Argument(metavar="OUT", help=_STORE_HELP, show_default=False)],
    chunk_shape: Annotated[
        str | None,
        typer.Option(
            "--chunk-shape",
            metavar="X,Y,Z",
            help="Chunk extent per axis in data units, e.g. 100,100,100. "
            "Default: a cube holding ~50k vertices per chunk (~400k for streamlines), "
            "chosen from the data extent.",
        ),
    ] = None,
    bin_shape: Annotated[
        str | None,
        typer.Option(
            "--bin-shape",
            metavar="X,Y,Z",
            help="Level-0 bin extent per axis; must divide the chunk shape. "
            "Default: chosen from the data, about 4 vertices per occupied bin, so that "
            "--pyramid levels keep a useful share (docs/guides/pyramids.md).",
        ),
    ] = None,
    pyramid: Annotated[
        list[str] | None,
        typer.Option(
            "--pyramid",
            metavar="RX,RY,RZ",
            help="Build a coarser level with this bin ratio, e.g. 2,2,2; repeat for more levels.",
        ),
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option(
            "--columns",
            metavar="X,Y[,Z]",
            help="CSV/Parquet: coordinate column names, e.g. lon,lat,height "
            "(default: x,y,z in any case).",
        ),
    ] = None,
    spatial_key: Annotated[
        str | None,
        typer.Option(
            "--spatial-key",
            metavar="KEY",
            help="AnnData .h5ad: the obsm entry holding the coordinates (default: spatial).",
            show_default=False,
        ),
    ] = None,
    nodes: Annotated[
        Path | None,
        typer.Option(
            "--nodes",
            metavar="FILE",
            help="Edge-list CSV: the node table (id,x,y[,z],...); default NAME.nodes.csv "
            "beside IN when it exists.",
            show_default=False,
        ),
    ] = None,
    vertex_data: Annotated[
        list[Path] | None,
        typer.Option(
            "--vertex-data",
            metavar="FILE",
            help="GIFTI/FreeSurfer: a per-vertex data file of the surface (.func.gii, "
            ".shape.gii, lh.curv, lh.thickness, ...); repeat for more.",
            show_default=False,
        ),
    ] = None,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--in-memory",
            help="Stream batches (LAS/LAZ, TRK, TCK, TRX) or load at once; "
            "default: stream above 20 million vertices.",
            show_default=False,
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Vertices per streamed batch.")
    ] = 1_000_000,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace OUT if it exists.")
    ] = False,
    compressor: Annotated[
        Compression,
        typer.Option(
            "--compressor",
            help="lz4 (the default): Blosc-LZ4 payload blocks, the fastest reads and writes; "
            "zstd: one zstd frame per chunk; none: uncompressed, the largest store.",
            case_sensitive=False,
        ),
    ] = Compression.LZ4,
    keep_order: Annotated[
        bool,
        typer.Option(
            "--keep-order/--no-keep-order",
            help="Store each element's position in IN (points, vertices, faces, nodes, edges), so "
            "that export writes IN's element order back (a small unsigned attribute); "
            "--no-keep-order drops it.",
        ),
    ] = True,
) -> None:
    """Convert a point cloud, tractogram, graph, skeleton or mesh file into a new ZVF store.

    The format follows from the extension of IN; OUT must end in .zarrvectors, .zarr or .zip.
    IN may also be a store written by upstream zarr-vectors 0.2.0 or 0.9.x: it is migrated.

    Input headers (LAS scales and offsets, TRK affine, ...) go to custom_metadata for export.

    Example: zarr-vectors convert scan.laz scan.zarrvectors --pyramid 2,2,2 --pyramid 4,4,4
    """
    if is_upstream_path(source):  # a store written by upstream zarr-vectors: migrate it
        given: dict[str, object] = {"--chunk-shape": chunk_shape, "--bin-shape": bin_shape}
        given |= {"--pyramid": pyramid, "--columns": columns, "--stream/--in-memory": stream}
        convert_upstream(source, store, overwrite=overwrite, compressor=compressor.value, **given)
        return
    err = Console(stderr=True)
    _check_convert_paths(err, source, store, overwrite)
    chunk = None if chunk_shape is None else _option(err, parse_shape, chunk_shape, "--chunk-shape")
    bins = None if bin_shape is None else _option(err, parse_shape, bin_shape, "--bin-shape")
    ratios = [_option(err, parse_ratio, r, "--pyramid") for r in pyramid or ()]
    info = format_for(source)
    if columns is not None and "columns" not in info.options:
        _usage(err, f"--columns applies to CSV and Parquet files, not {info.name}")
    options: dict[str, object] = {}
    if columns is not None:
        options["columns"] = [c.strip() for c in columns.split(",")]
    if spatial_key is not None:
        if "spatial_key" not in info.options:
            _usage(err, f"--spatial-key applies to .h5ad files, not {info.name}")
        options["spatial_key"] = spatial_key
    if nodes is not None:
        if "nodes" not in info.options:
            _usage(err, f"--nodes applies to edge-list CSV files, not {info.name}")
        options["nodes"] = nodes
    if vertex_data:
        if "vertex_data" not in info.options:
            _usage(err, f"--vertex-data applies to GIFTI and FreeSurfer surfaces, not {info.name}")
        options["vertex_data"] = list(vertex_data)
    try:
        with _warnings_to(err), _progress(err) as report:
            result = convert(
                source,
                os.fspath(store),
                chunk_shape=chunk,
                bin_shape=bins,
                pyramid=ratios,
                overwrite=overwrite,
                streaming=stream,
                batch_size=batch_size,
                progress=report,
                compressor=compressor.value,
                keep_order=keep_order,
                **options,
            )
    except StoreExistsError as exc:
        _usage(err, str(exc))
    except (ZarrVectorsError, OSError, ValueError) as exc:
        _failure(err, f"cannot convert {source}: {exc}")
    _print_report(Console(), store, result)


def _option(err: Console, parse: Callable[[str], T], text: str, name: str) -> T:
    try:
        return parse(text)
    except typer.BadParameter as exc:
        _usage(err, f"{name}: {exc}")


# -- export ---------------------------------------------------------------------------------


def _read_store(err: Console, store: Path) -> RootMetadata:
    """Root metadata of ``store``; exit 2 when there is no store, 1 when it does not parse."""
    try:
        return store_metadata(os.fspath(store))
    except FileNotFoundError:
        _usage(err, f"no store found at {store}")
    except (ZarrVectorsError, ValueError) as exc:
        _failure(err, f"cannot read {store}: {exc}")


def export_command(
    store: Annotated[Path, typer.Argument(metavar="STORE", help=_STORE_HELP, show_default=False)],
    out: Annotated[
        Path,
        typer.Argument(metavar="OUT", help=f"Output file: {_FORMATS_HELP}.", show_default=False),
    ],
    level: Annotated[int, typer.Option("--level", "-l", min=0, help="Resolution level.")] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace OUT if it exists.")
    ] = False,
    object_id: Annotated[
        str | None,
        typer.Option(
            "--object-id",
            help="SWC: the skeleton to write (its id), for stores holding several.",
            show_default=False,
        ),
    ] = None,
    vertex_data: Annotated[
        Path | None,
        typer.Option(
            "--vertex-data",
            metavar="FILE",
            help="GIFTI: write the per-vertex attributes to this second .gii file.",
            show_default=False,
        ),
    ] = None,
    nodes: Annotated[
        Path | None,
        typer.Option(
            "--nodes",
            metavar="FILE",
            help="Edge-list CSV: where the node table goes (default NAME.nodes.csv).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write one level of a store to a point cloud, tractogram, graph, skeleton or mesh file.

    The format follows from the extension of OUT; headers kept by convert are restored.

    Example: zarr-vectors export tracts.zarrvectors tracts.trk
    """
    err = Console(stderr=True)
    if out.exists() and not overwrite:
        _usage(err, f"{out} exists; pass --overwrite to replace it")
    gtype = _read_store(err, store).geometry_type
    try:
        info = format_for_store(out, gtype)
    except InvalidInputError as exc:
        _usage(err, str(exc))
    if type_spec(gtype).family_name not in info.exports:
        kinds = " or ".join(g.value for g in info.exports)
        _usage(err, f"{store} holds {gtype} geometry; {info.name} files hold {kinds}")
    if object_id is not None and "object_id" not in info.export_options:
        _usage(err, f"--object-id applies to SWC files, not {info.name}")
    if vertex_data is not None and "vertex_data" not in info.export_options:
        _usage(err, f"--vertex-data applies to GIFTI files, not {info.name}")
    if nodes is not None and "nodes" not in info.export_options:
        _usage(err, f"--nodes applies to edge-list CSV files, not {info.name}")
    try:
        with _warnings_to(err), _progress(err) as report:
            export(
                os.fspath(store),
                out,
                level=level,
                progress=report,
                object_id=_id(object_id),
                vertex_data=vertex_data,
                nodes=nodes,
            )
    except StoreNotFoundError as exc:
        _usage(err, str(exc))
    except (ZarrVectorsError, OSError, ValueError) as exc:
        _failure(err, f"cannot export {store} to {info.name}: {exc}")
    Console().print(escape(f"wrote {out} ({info.name}, level {level})"), highlight=False)


def _id(text: str | None) -> int | str | None:
    """Return an object id typed on the command line: an integer when it reads as one."""
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return text


# -- pyramid --------------------------------------------------------------------------------


def pyramid_command(
    store: Annotated[Path, typer.Argument(metavar="STORE", help=_STORE_HELP, show_default=False)],
    ratio: Annotated[
        list[str],
        typer.Option(
            "--ratio",
            "-r",
            metavar="RX,RY,RZ",
            help="Bin ratio of a new level relative to level 0, e.g. 2,2,2; repeat for more "
            "levels (non-decreasing).  base bin x ratio must divide the chunk shape.",
        ),
    ],
    sparsity: Annotated[
        list[float] | None,
        typer.Option(
            "--sparsity",
            metavar="FRACTION",
            min=0.0,
            max=1.0,
            help="Fraction of objects kept: once for all levels or once per --ratio.",
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace existing coarse levels.")
    ] = False,
) -> None:
    """Build coarser resolution levels (a multiscale pyramid) in an existing store.

    A .zip store is unpacked beside itself, extended and packed again.

    Example: zarr-vectors pyramid scan.zarrvectors --ratio 2,2,2 --ratio 4,4,4
    """
    err = Console(stderr=True)
    ratios = [_option(err, parse_ratio, r, "--ratio") for r in ratio]
    spars = None if not sparsity else (sparsity[0] if len(sparsity) == 1 else list(sparsity))
    _read_store(err, store)
    try:
        with _warnings_to(err), _progress(err) as report:
            report.start(f"building {len(ratios)} level(s)", None)
            with editable(os.fspath(store)) as target:  # a .zip is rebuilt
                levels = build_pyramid(target, ratios, object_sparsity=spars, overwrite=overwrite)
                warn_sparse_levels(level0_vertices(target), levels)
    except (StoreExistsError, InvalidInputError, MetadataValidationError) as exc:
        _usage(err, str(exc))  # the store reads: these are about the options
    except (ZarrVectorsError, OSError, ValueError) as exc:
        _failure(err, f"pyramid failed: {exc}")
    Console().print(_levels_table(levels))


def register(app: typer.Typer) -> None:
    """Add ``convert``, ``export`` and ``pyramid`` to the ``zarr-vectors`` application."""
    app.command("convert", cls=FlagCommand)(convert_command)
    app.command("export", cls=FlagCommand)(export_command)
    app.command("pyramid", cls=FlagCommand)(pyramid_command)
