"""Markdown tables (timings with ours/peer ratios, sizes, correctness) and JSON output.

A table row is an :class:`Op`: a label, the metric read from *our* result and the metric read
from each peer's result (they differ when, e.g., our open-Reader box query is compared with a
peer's only box query).  A metric is a :class:`~benchmarks.peers.BenchResult` timing field
(``write_s``, ``read_s``, ``bbox_read_s``, ``object_read_s``) or ``"extra:NAME"``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.peers import BenchResult

__all__ = [
    "Op",
    "Target",
    "checks_table",
    "chunk_table",
    "cpu_ratio",
    "environment",
    "fmt_seconds",
    "metric",
    "render_configs",
    "render_targets",
    "save_run",
    "sizes_table",
    "times_table",
    "write_json",
]

TIMING_FIELDS = ("write_s", "read_s", "bbox_read_s", "object_read_s")


@dataclass(frozen=True)
class Op:
    """One table row: ``ours`` metric vs ``peer`` metric (``None``: peers not compared)."""

    label: str
    ours: str
    peer: str | None = None


@dataclass(frozen=True)
class Target:
    """An issue target evaluated on measured numbers."""

    name: str
    passed: bool
    detail: str


def metric(res: BenchResult, key: str | None) -> float | None:
    """Value of ``key`` (timing field or ``extra:NAME``) in ``res``, or ``None``."""
    if key is None:
        return None
    if key.startswith("extra:"):
        return res.get_extra(key.removeprefix("extra:"))
    if key in TIMING_FIELDS:
        value = getattr(res, key)
        return None if value is None else float(value)
    raise KeyError(f"unknown metric {key!r}")


def fmt_seconds(value: float | None) -> str:
    """Seconds as ``1.23 s`` / ``45.6 ms`` / ``789 µs``; ``—`` for missing."""
    if value is None:
        return "—"
    if value >= 1.0:
        return f"{value:.2f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "—"
    return f"{a / b:.2f}×"


def _name(res: BenchResult) -> str:
    return res.fmt


def times_table(ours: BenchResult, peers: Sequence[BenchResult], ops: Sequence[Op]) -> str:
    """Markdown table: operation | ours | each peer | ours/peer.

    Parameters
    ----------
    ours : BenchResult
        Our result (one chunk configuration).
    peers : sequence of BenchResult
        Peer results (Parquet, TRX, upstream ...).
    ops : sequence of Op
        Rows.

    Returns
    -------
    str
        Markdown.
    """
    head = ["operation", f"ours ({ours.fmt})"]
    for p in peers:
        head += [_name(p), f"ours/{_name(p)}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op in ops:
        mine = metric(ours, op.ours)
        cells = [op.label, fmt_seconds(mine)]
        for p in peers:
            theirs = metric(p, op.peer)
            cells += [fmt_seconds(theirs), _ratio(mine, theirs)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sizes_table(results: Sequence[BenchResult], reference: BenchResult | None = None) -> str:
    """Markdown table of store sizes (MB, files, chunks) and size / ``reference`` size."""
    ref = reference or (results[0] if results else None)
    head = ["store", "size (MB)", "files", "chunks", f"size / {ref.fmt if ref else '—'}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        ratio = _ratio(float(r.size_bytes), float(ref.size_bytes) if ref else None)
        chunks = "—" if r.n_chunks is None else str(r.n_chunks)
        lines.append(
            f"| {_name(r)} | {r.size_bytes / 1e6:.1f} | {r.file_count} | {chunks} | {ratio} |"
        )
    return "\n".join(lines)


def checks_table(results: Sequence[BenchResult]) -> str:
    """Markdown table of correctness flags per result."""
    lines = ["| store | correct | checks | note |", "|---|---|---|---|"]
    for r in results:
        checks = ", ".join(f"{k} {'✓' if ok else '✗'}" for k, ok in r.checks)
        note = r.note.replace("|", "/")
        lines.append(f"| {_name(r)} | {'yes' if r.correct else 'NO'} | {checks} | {note} |")
    return "\n".join(lines)


def render_targets(targets: Sequence[Target]) -> str:
    """Markdown list of PASS/FAIL lines."""
    return "\n".join(
        f"- **{'PASS' if t.passed else 'FAIL'}** {t.name}: {t.detail}" for t in targets
    )


def cpu_ratio(ours: BenchResult, up: BenchResult, key: str) -> str:
    """``"A vs upstream B (upstream/ours k×)"`` for a CPU extra in both results, else ours."""
    a, b = ours.get_extra(key), up.get_extra(key)
    if a is None or b is None or a == 0:
        return f"{fmt_seconds(a)} (upstream n/a)"
    return f"{fmt_seconds(a)} vs upstream {fmt_seconds(b)} (upstream/ours {b / a:.1f}×)"


def chunk_table(ours: Sequence[BenchResult], rows: Sequence[tuple[str, str]], title: str) -> str:
    """Markdown table of ``extra`` values (2 decimals) per configuration: ``(key, label)`` rows."""
    head = [title, *(_name(r) for r in ours)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label in rows:
        vals = [r.get_extra(key) for r in ours]
        lines.append(
            "| " + " | ".join([label, *("—" if v is None else f"{v:.2f}" for v in vals)]) + " |"
        )
    return "\n".join(lines)


def is_ours(res: BenchResult) -> bool:
    """Whether ``res`` is one of our chunk configurations (``fmt`` ``"zv ..."``)."""
    return res.fmt.startswith("zv ")


def config_sections(
    ours: Sequence[BenchResult], peers: Sequence[BenchResult], ops: Sequence[Op], prefix: str = ""
) -> list[str]:
    """A ``## <prefix><fmt>: N chunks`` heading and timing table per configuration of ours."""
    parts: list[str] = []
    for r in ours:
        parts += [f"## {prefix}{r.fmt}: {r.n_chunks} chunks", times_table(r, peers, ops)]
    return parts


def closing_sections(targets: Sequence[Target], notes: Sequence[str]) -> list[str]:
    """The ``## Targets`` list and the notes as quotes."""
    return ["## Targets", render_targets(targets), *(f"> {note}" for note in notes)]


def render_configs(
    results: Sequence[BenchResult],
    targets: Sequence[Target],
    notes: Sequence[str],
    ops: Sequence[Op],
    *,
    middle: Sequence[str] = (),
    size_only: Sequence[BenchResult] = (),
) -> str:
    """Markdown: timing tables per configuration of ours, ``middle``, sizes, checks, targets.

    ``size_only`` results (e.g. compressed files nobody reads) appear in the size table only.
    """
    ours = [r for r in results if is_ours(r)]
    sized = {id(r) for r in size_only}
    timed = [r for r in results if not is_ours(r) and id(r) not in sized]
    parts = config_sections(ours, timed, ops)
    parts += middle
    parts += ["## Store sizes", sizes_table([*ours, *timed, *size_only], reference=ours[0])]
    parts += ["## Correctness", checks_table([*ours, *timed])]
    parts += closing_sections(targets, notes)
    return "\n\n".join(parts)


def _git(*args: str) -> str:
    import subprocess

    try:
        proc = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            check=False,
        )
    except OSError:
        return "unknown"
    return " ".join(proc.stdout.split()) if proc.returncode == 0 else "unknown"


def environment() -> dict[str, str]:
    """Interpreter, platform and library versions."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "load_average_1_5_15min": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    env["git_commit"] = _git("rev-parse", "--short", "HEAD")
    env["git_src_modified"] = _git("status", "--porcelain", "--", ":/src") or "no"
    for dist in (
        "zarr-vectors",
        "zarr",
        "numcodecs",
        "numpy",
        "pyarrow",
        "laspy",
        "lazrs",
        "trx-python",
        "nibabel",
        "zstandard",
    ):
        try:
            env[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            env[dist] = "not installed"
    return env


def write_json(
    path: Path,
    *,
    script: str,
    args: Mapping[str, Any],
    results: Sequence[BenchResult],
    targets: Sequence[Target],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write every result, target and the environment as one JSON document."""
    doc = {
        "script": script,
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in args.items()},
        "environment": environment(),
        "results": [asdict(r) for r in results],
        "targets": [asdict(t) for t in targets],
        "extra": dict(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str))


def save_run(
    args: Any,
    *,
    script: str,
    work: Path,
    results: Sequence[BenchResult],
    targets: Sequence[Target],
    extra: Mapping[str, Any],
) -> None:
    """:func:`write_json` to ``args.json`` (if given) with the parsed command line."""
    if args.json:
        write_json(
            args.json,
            script=script,
            args=vars(args) | {"workdir": work},
            results=results,
            targets=targets,
            extra=extra,
        )


# ---------------------------------------------------------------------------
# Re-rendering saved runs
# ---------------------------------------------------------------------------


def result_from_dict(doc: Mapping[str, Any]) -> BenchResult:
    """Rebuild a :class:`BenchResult` from its ``asdict`` JSON form."""
    kw = dict(doc)
    for key in ("unsupported", "checks", "extra"):
        kw[key] = tuple(tuple(item) for item in kw.get(key, ()))
    return BenchResult(**kw)


def render_saved(path: Path) -> str:
    """Markdown of a JSON file written by a bench script's ``--json``."""
    import importlib

    doc = json.loads(Path(path).read_text())
    module = importlib.import_module(f"benchmarks.{doc['script']}")
    results = [result_from_dict(r) for r in doc["results"]]
    targets = [Target(**t) for t in doc["targets"]]
    notes = list(doc.get("extra", {}).get("notes", []))
    env = doc.get("environment", {})
    head = (
        f"<!-- {doc['script']} {doc.get('args', {})} | "
        + ", ".join(f"{k}={v}" for k, v in env.items())
        + " -->"
    )
    return head + "\n\n" + str(module.render(results, targets, notes))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.report RUN.json...``: print the markdown of saved runs."""
    import argparse

    parser = argparse.ArgumentParser(description="Re-render saved benchmark JSON as markdown")
    parser.add_argument("json", type=Path, nargs="+")
    args = parser.parse_args(argv)
    print("\n\n".join(render_saved(p) for p in args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
