"""MkDocs hooks for the zarr-vectors site (referenced by ``hooks:`` in ``mkdocs.yml``).

* ``docs/validation.md`` (owned by the validation engineer) joins the nav when it exists.
* ``<!-- cli-reference -->`` in a page becomes the ``--help`` output of ``zarr-vectors`` and of
  every registered sub-command, produced by running the real command line in a subprocess (so
  the reference can never drift from the code).
* ``<!-- include: BENCHMARKS.md -->`` becomes the repository's ``BENCHMARKS.md`` (headings
  demoted one level, links outside ``docs/`` turned into plain text so ``--strict`` holds), or a
  note when the file has not been produced in this checkout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

_CLI_MARKER = "<!-- cli-reference -->"
_INCLUDE = re.compile(r"<!-- include: (?P<path>[^ ]+) -->")
_HELP_SCRIPT = r"""
import json
import typer
from typer.main import get_command
from typer.testing import CliRunner
from zarr_vectors.cli import app

runner = CliRunner()
group = get_command(app)
names = group.list_commands(typer.Context(group))
out = {"": runner.invoke(app, ["--help"], prog_name="zarr-vectors").output}
for name in names:
    out[name] = runner.invoke(app, [name, "--help"], prog_name="zarr-vectors").output
print(json.dumps(out))
"""

_ROOT = Path(__file__).resolve().parent.parent
_cli_cache: dict[str, str] | None = None


def on_config(config: Any, **kwargs: Any) -> Any:
    """Add the validation-check table to the nav when its page exists."""
    docs = Path(config["docs_dir"])
    if (docs / "validation.md").is_file() and not _in_nav(config["nav"], "validation.md"):
        at = next(
            (i + 1 for i, item in enumerate(config["nav"]) if "spec.md" in item.values()),
            len(config["nav"]),
        )
        config["nav"].insert(at, {"Validation checks": "validation.md"})
    return config


def _in_nav(nav: Any, page: str) -> bool:
    if isinstance(nav, str):
        return nav == page
    if isinstance(nav, dict):
        return any(_in_nav(v, page) for v in nav.values())
    if isinstance(nav, list):
        return any(_in_nav(v, page) for v in nav)
    return False


def cli_help() -> dict[str, str]:
    """Return ``{command: help text}`` ("" is the top-level help), from a fresh interpreter."""
    global _cli_cache
    if _cli_cache is None:
        env = {**os.environ, "TERMINAL_WIDTH": "100", "NO_COLOR": "1", "COLUMNS": "100"}
        env.pop("FORCE_COLOR", None)
        done = subprocess.run(
            [sys.executable, "-c", _HELP_SCRIPT],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"zarr-vectors --help failed:\n{done.stderr}")
        _cli_cache = json.loads(done.stdout)
    return _cli_cache


def cli_reference() -> str:
    """Markdown sections holding the help of every command."""
    helps = cli_help()
    parts = ["## `zarr-vectors`", "", "```text", _clean(helps[""]), "```", ""]
    for name, text in helps.items():
        if name:
            parts += [f"## `zarr-vectors {name}`", "", "```text", _clean(text), "```", ""]
    return "\n".join(parts)


def _clean(text: str) -> str:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)")


def include(path: str) -> str:
    """Return a repository file as page content, or a note when it does not exist."""
    src = _ROOT / path
    if not src.is_file():
        return (
            f'!!! note "No `{path}` in this checkout"\n    The benchmark results are written to '
            f"`{path}` at the repository root by the commands above; rebuild the docs after "
            "running them.\n"
        )
    text = src.read_text(encoding="utf-8")
    text = re.sub(r"^(#+) ", r"#\1 ", text, flags=re.MULTILINE)  # demote headings

    def relink(m: re.Match[str]) -> str:
        target = m["target"]
        if re.match(r"^[a-z]+://|^#|^mailto:", target):
            return m[0]
        return f"{m['text']} (`{target}`)"

    return _LINK.sub(relink, text)


_NUMBER_LIST = re.compile(r"\[(?P<body>[-\d][\d.,\s\-−]*)\]")


def escape_number_lists(markdown: str) -> str:
    """Escape ``[1, 0] [2, 0]`` in table rows, which autorefs would read as a cross-reference.

    Only table rows (lines starting with ``|``) are touched, and only outside code spans.
    """
    out = []
    for line in markdown.split("\n"):
        if line.lstrip().startswith("|"):
            pieces = line.split("`")
            for i in range(0, len(pieces), 2):  # even pieces are outside code spans
                pieces[i] = _NUMBER_LIST.sub(r"\\[\g<body>\\]", pieces[i])
            line = "`".join(pieces)
        out.append(line)
    return "\n".join(out)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """Expand the CLI and include markers; escape number lists in tables."""
    if _CLI_MARKER in markdown:
        markdown = markdown.replace(_CLI_MARKER, cli_reference())
    markdown = _INCLUDE.sub(lambda m: include(m["path"]), markdown)
    return escape_number_lists(markdown)
