"""Griffe extension for the API reference: adapt numpydoc docstrings to mkdocstrings.

* The package's docstrings cross-reference with Sphinx roles (``:func:`~zarr_vectors.open```),
  which Markdown would show verbatim.  Each role becomes an *optional* mkdocs-autorefs link: a
  link when the target has an entry in the API reference, plain code otherwise (no warning, so
  ``mkdocs build --strict`` is unaffected by references to private helpers).
* numpydoc lets one entry describe several parameters (``chunk_shape, bin_shape``); griffe
  would give all of them the first one's type and default, so such entries are split into one
  entry per name (same description) before parsing.
"""

from __future__ import annotations

import html
import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc|const):`(?P<target>[^`]+)`")


def _replace(obj: Object, text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        target = m["target"].strip()
        short = target.startswith("~")
        target = target.lstrip("~").rstrip("()")
        shown = target.rsplit(".", 1)[-1] if short else target
        identifier = target
        if "." not in target:  # a name of the docstring's own module or class
            scope = obj if obj.is_module or obj.is_class else obj.parent
            while scope is not None and target not in scope.members:
                scope = scope.parent
            if scope is not None:
                identifier = f"{scope.path}.{target}"
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>"
        )

    return _ROLE.sub(sub, text)


_PARAM_SECTIONS = {"Parameters", "Other Parameters"}
_GROUPED = re.compile(r"^(?P<names>[A-Za-z_*][\w*]*(?:, [A-Za-z_*][\w*]*)+)(?P<rest>\s*:.*)?$")


def split_grouped_parameters(text: str) -> str:
    """Write ``a, b`` parameter entries as separate entries ``a`` and ``b``."""
    lines = text.split("\n")
    out: list[str] = []
    section = None
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and set(nxt.strip()) == {"-"} and not line.startswith(" "):
            section = line.strip()
            out += [line, nxt]
            i += 2
            continue
        m = _GROUPED.match(line) if section in _PARAM_SECTIONS else None
        if m is None:
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and (lines[j].startswith(" ") or not lines[j].strip()):
            j += 1
        body = lines[i + 1 : j]
        trailing = []
        while body and not body[-1].strip():
            trailing.append(body.pop())
        for name in m["names"].split(", "):
            out += [name + (m["rest"] or ""), *body]
        out += trailing
        i = j
    return "\n".join(out)


class DocstringAdapter(Extension):
    """Prepare every docstring: split grouped parameters, turn roles into optional autorefs."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:
        """Rewrite the docstring of ``obj``."""
        if obj.docstring is not None:
            text = split_grouped_parameters(obj.docstring.value)
            obj.docstring.value = _replace(obj, text)
