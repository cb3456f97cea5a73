"""The documentation works: every example runs, every export is documented, the site builds.

* Every fenced ```` ```python ```` block of every ``docs/**/*.md`` page is executed.  The blocks
  of one page run in order in one fresh namespace, in a fresh temporary working directory, so a
  page reads like a script and later blocks may use earlier results.  A block preceded by the
  line ``<!-- docs-test: skip -->`` is shown but not run (used for code that needs real cloud
  credentials or the upstream package); use ```` ```text ```` for output and shell sessions.
* ``scripts/check_documented_exports.py`` must pass (every name of ``zarr_vectors.__all__`` has
  an API-reference entry).
* ``mkdocs build --strict`` must succeed.  It is skipped only when mkdocs is not installed, and
  never on CI (``CI`` set), where the ``dev`` extra installs it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SKIP = "<!-- docs-test: skip -->"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    """1-based line of the opening fence."""
    language: str
    source: str
    skip: bool


def code_blocks(text: str, page: str) -> Iterator[Block]:
    """Yield the fenced code blocks of a Markdown page, dedented to their fence."""
    lines = text.splitlines()
    i = 0
    previous = ""
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        language = m["info"].strip().split(" ")[0].lstrip("{.").rstrip("}")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j].removeprefix(indent))
            j += 1
        yield Block(page, i + 1, language, "\n".join(body) + "\n", previous == SKIP)
        previous = ""
        i = j + 1


def runnable(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.language in ("python", "py") and not b.skip]


def pages_with_examples() -> list[Path]:
    """Every page with at least one runnable python block."""
    return [
        page
        for page in sorted(DOCS.rglob("*.md"))
        if runnable(list(code_blocks(page.read_text(encoding="utf-8"), page.name)))
    ]


def _page_id(path: Path) -> str:
    return path.relative_to(DOCS).as_posix()


def _spec_setup() -> None:
    """docs/spec.md (owned by the spec author) opens an existing ``scan.zarrvectors`` and
    decodes the store named by ``sys.argv[1]``; give it both."""
    import zarr_vectors as zv

    rng = np.random.default_rng(0)
    zv.write_points("scan.zarrvectors", rng.uniform(0, 100, (50, 3)), chunk_shape=(50, 50, 50))
    sys.argv = ["decode.py", "raw.zarrvectors"]


PAGE_SETUP: dict[str, Callable[[], None]] = {"spec.md": _spec_setup}
"""Set-up run in the page's working directory before its first block, for pages we do not own."""


def test_every_tutorial_and_guide_has_examples() -> None:
    tested = {_page_id(p) for p in pages_with_examples()}
    for folder in ("tutorials", "guides"):
        for page in (DOCS / folder).glob("*.md"):
            assert _page_id(page) in tested, f"{page} has no runnable example"


def test_blocks_are_found() -> None:
    text = "a\n\n```python\nx = 1\n```\n\n<!-- docs-test: skip -->\n```python\nboom()\n```\n"
    got = list(code_blocks(text, "t.md"))
    assert [(b.line, b.language, b.skip) for b in got] == [
        (3, "python", False),
        (8, "python", True),
    ]
    assert got[0].source == "x = 1\n"
    indented = "!!! note\n    ```python\n    y = 2\n    ```\n"
    assert [b.source for b in code_blocks(indented, "t.md")] == ["y = 2\n"]


SLOW_PAGES = frozenset(
    {
        "cli.md",
        "guides/cloud.md",
        "guides/dask.md",
        "guides/pyramids.md",
        "guides/streaming.md",
        "tutorials/graphs.md",
        "tutorials/meshes.md",
        "tutorials/points.md",
        "tutorials/skeletons.md",
        "tutorials/streamlines.md",
    }
)
"""Pages whose examples take two seconds or more: they run with ``-m slow`` (getting-started
stays in the default run)."""


def _page_param(page: Path) -> Any:
    return pytest.param(page, marks=pytest.mark.slow) if _page_id(page) in SLOW_PAGES else page


@pytest.mark.parametrize("page", [_page_param(p) for p in pages_with_examples()], ids=_page_id)
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page_id = _page_id(page)
    blocks = runnable(list(code_blocks(page.read_text(encoding="utf-8"), page_id)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    if page_id in PAGE_SETUP:
        PAGE_SETUP[page_id]()
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in blocks:
        code = compile(block.source, f"docs/{page_id}:{block.line}", "exec")
        try:
            exec(code, namespace)  # noqa: S102 -- running the documentation is the test
        except Exception as exc:
            raise AssertionError(
                f"docs/{page_id}, block at line {block.line} failed: {exc!r}"
            ) from exc


def test_every_export_is_documented() -> None:
    spec = importlib.util.spec_from_file_location(
        "check_documented_exports", ROOT / "scripts" / "check_documented_exports.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([]) == 0


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is not installed on CI: install the 'dev' (or 'docs') extra")
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]' to build the site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--quiet",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "index.html").is_file()
