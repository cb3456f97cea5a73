"""Findings and the validation report (FORMAT.md §11).

A :class:`Finding` names a stable check id (``"L1.root.required_key"``, ``"L2.seed.3"``), a
:class:`~zarr_vectors.spec.conventions.Severity`, the node it concerns (``"/"`` for the root,
``"/0/vertices"`` for an array) and an actionable message.  A :class:`ValidationReport` is the
immutable list of findings of one run; ``ok`` is true when no finding is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zarr_vectors.spec.conventions import Severity

__all__ = ["Finding", "ValidationReport"]


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One problem (or note) found in a store.

    Examples
    --------
    >>> f = Finding(check="L2.seed.3", severity=Severity.ERROR, path="/", message="bad")
    >>> f.to_dict()["severity"]
    'error'
    """

    check: str
    """Stable check id, ``L<level>.<area>.<rule>`` (e.g. ``"L2.seed.3"``)."""
    severity: Severity
    """``error`` (the store violates ZVF 1.0), ``warning`` or ``info``."""
    path: str
    """Node the finding concerns: ``"/"`` for the root, ``"/0/vertices"`` for an array."""
    message: str
    """What is wrong, naming the key and value, and what to do about it."""

    def to_dict(self) -> dict[str, str]:
        """Return the JSON form."""
        return {
            "check": self.check,
            "severity": self.severity.value,
            "path": self.path,
            "message": self.message,
        }


@dataclass(frozen=True, kw_only=True)
class ValidationReport:
    """Result of :func:`zarr_vectors.validate.validate`: every finding, in check order.

    Examples
    --------
    >>> ok = ValidationReport(findings=(), level=2)
    >>> ok.ok, len(ok.errors)
    (True, 0)
    >>> print(ok)
    ZVF validation (level 2): OK, no findings
    >>> bad = ValidationReport(
    ...     findings=(Finding(check="L1.x", severity=Severity.ERROR, path="/", message="m"),)
    ... )
    >>> bad.ok
    False
    """

    findings: tuple[Finding, ...]
    """All findings, ordered as the checks ran (L1 first)."""
    level: int = 2
    """Depth of checks requested (1..5)."""

    @property
    def ok(self) -> bool:
        """True when no finding is an error (warnings and infos allowed)."""
        return not self.errors

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings of severity ``error``."""
        return self._with(Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Findings of severity ``warning``."""
        return self._with(Severity.WARNING)

    @property
    def infos(self) -> tuple[Finding, ...]:
        """Findings of severity ``info``."""
        return self._with(Severity.INFO)

    def _with(self, severity: Severity) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is severity)

    def checks(self) -> set[str]:
        """Return the ids of the checks that produced findings."""
        return {f.check for f in self.findings}

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form: summary counts plus every finding."""
        return {
            "ok": self.ok,
            "level": self.level,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "infos": len(self.infos),
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """Return :meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(), indent=indent)

    def summary(self) -> str:
        """Return the one-line summary (``OK`` or the counts per severity)."""
        head = f"ZVF validation (level {self.level})"
        if not self.findings:
            return f"{head}: OK, no findings"
        counts = f"{_plural(len(self.errors), 'error')}, {_plural(len(self.warnings), 'warning')}"
        counts += f", {_plural(len(self.infos), 'info')}"
        return f"{head}: {'OK' if self.ok else 'FAILED'}, {counts}"

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.findings:
            rows = [(f.severity.value, f.check, f.path, f.message) for f in self.findings]
            header = ("severity", "check", "path", "message")
            widths = [max(len(r[i]) for r in (header, *rows)) for i in range(3)]
            for row in (header, *rows):
                cells = [c.ljust(w) for c, w in zip(row[:3], widths, strict=True)]
                lines.append("  ".join([*cells, row[3]]).rstrip())
        return "\n".join(lines)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
