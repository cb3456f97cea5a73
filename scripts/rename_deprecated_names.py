"""Rewrite deprecated zarr_vectors names in Python files (the naming rule of docs/api/index.md).

Usage: ``python scripts/rename_deprecated_names.py [--check] FILE...``

Renames the singular functions (``write_skeleton`` -> ``write_skeletons``, ``read_mesh`` ->
``read_meshes``, ...) and, at call sites found by parsing, the keywords ``ids=`` ->
``object_ids=`` and per-vertex ``object_ids=`` -> ``vertex_object_ids=``.  Result attributes
(``Points.objects``, ``Meshes.ids``, ``Mesh.id``, and per-vertex ``.object_ids`` of ``Points``,
``Graph`` and ``Meshes``) depend on the value's type and are left for a person to change; run
the tests with ``-W error::zarr_vectors.ZVDeprecationWarning`` to find them.  Do not run it on
code that calls upstream zarr-vectors (its ``write_mesh`` is another function).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

FUNCTIONS = re.compile(r"\b(write|read|append)_(skeleton|mesh)\b")
PER_VERTEX = {"write_points", "append_points", "write_graph", "append_graph"}
MESHES = {"write_meshes", "append_meshes", "as_meshes"}
PER_OBJECT = {
    "write_polylines",
    "write_streamlines",
    "write_lines",
    "write_skeletons",
    "append_polylines",
    "append_streamlines",
    "append_lines",
    "append_skeletons",
    "swc_to_store",
    "delete_objects",
    "update_object_attributes",
}


def _plural(match: re.Match[str]) -> str:
    return f"{match[1]}_{match[2]}{'s' if match[2] == 'skeleton' else 'es'}"


def _new_keyword(call: ast.Call, name: str | None, arg: str) -> str | None:
    if name in PER_VERTEX and arg == "object_ids":
        return "vertex_object_ids"
    if name in PER_OBJECT and arg == "ids":
        return "object_ids"
    if name in MESHES and arg == "object_ids":  # vertex-array input: faces given
        faces = any(k.arg == "faces" for k in call.keywords)
        if faces or len(call.args) >= (2 if name == "as_meshes" else 3):
            return "vertex_object_ids"
    return None


def rewrite(source: str) -> str:
    """Return ``source`` with the deprecated function names and keywords replaced."""
    source = FUNCTIONS.sub(_plural, source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        for kw in node.keywords:
            new = None if kw.arg is None else _new_keyword(node, name, kw.arg)
            if new is not None and kw.arg is not None:
                edits.append((kw.lineno, kw.col_offset, kw.arg, new))
    for line, col, old, new in sorted(edits, reverse=True):
        text = lines[line - 1]
        lines[line - 1] = text[:col] + new + text[col + len(old) :]
    return "".join(lines)


def main(argv: list[str]) -> int:
    """Rewrite the files named in ``argv`` (``--check``: only list them, exit 1 if any)."""
    check = "--check" in argv
    changed = 0
    for name in (a for a in argv if a != "--check"):
        path = Path(name)
        old = path.read_text()
        new = rewrite(old)
        if new != old:
            changed += 1
            print(f"{'would rewrite' if check else 'rewrote'} {path}")
            if not check:
                path.write_text(new)
    return 1 if check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
