"""Check that every name in ``zarr_vectors.__all__`` has an entry in the API reference.

An entry is a mkdocstrings directive ``::: <dotted.path>`` in a Markdown file under
``docs/api/`` whose path resolves to the same object as ``zarr_vectors.<name>`` (so
``::: zarr_vectors.types.points.write_points`` documents ``write_points`` too).  Paths are
resolved as mkdocstrings does, modules first: ``::: zarr_vectors.rechunk`` renders the module
``zarr_vectors.rechunk``, not the function of that name, so it does not count; write
``::: zarr_vectors.rechunk.rechunk``.

Usage::

    python scripts/check_documented_exports.py [--docs DIR]

Exits 1 and lists the missing names when any is undocumented, 0 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DIRECTIVE = re.compile(r"^:::\s+(?P<path>[\w.]+)\s*$", re.MULTILINE)
DEFAULT_DOCS = Path(__file__).resolve().parent.parent / "docs" / "api"
_MISSING = object()


def directives(docs: Path) -> dict[str, Path]:
    """Return ``{dotted path: page}`` of every ``:::`` directive under ``docs``."""
    found: dict[str, Path] = {}
    for page in sorted(docs.rglob("*.md")):
        for m in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
            found.setdefault(m["path"], page)
    return found


def resolve(path: str) -> Any:
    """Import the object at a dotted path (longest importable module first), or a sentinel."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def undocumented(names: Iterable[str], documented: Iterable[str], package: Any) -> list[str]:
    """Names of ``package`` that no documented path names or resolves to."""
    paths = set(documented)
    objects = [resolve(p) for p in paths]
    missing = []
    for name in names:
        target = getattr(package, name)
        if not any(obj is target for obj in objects):
            missing.append(name)
    return missing


def main(argv: list[str] | None = None) -> int:
    """Run the check; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS, help="API reference folder")
    args = parser.parse_args(argv)
    import zarr_vectors

    found = directives(args.docs)
    missing = undocumented(zarr_vectors.__all__, found, zarr_vectors)
    if missing:
        print(
            f"{len(missing)} name(s) of zarr_vectors.__all__ have no '::: zarr_vectors.<name>' "
            f"entry under {args.docs}:",
            file=sys.stderr,
        )
        for name in missing:
            print(f"  {name}", file=sys.stderr)
        return 1
    print(f"all {len(zarr_vectors.__all__)} names of zarr_vectors.__all__ are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
