"""The report objects and the seed's divisibility tolerance."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, dataclass

import pytest

from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate import Finding, ValidationReport
from zarr_vectors.validate._context import divides


@dataclass(frozen=True)
class Div:
    chunk: float
    bin: float
    divides: bool


# 1e-6 × chunk_shape[i] tolerance (seed rule 3): for chunk 1000 the remainder (or its distance
# to the bin) may be up to 1e-3; with 10 bins per chunk that is a bin error of 1e-4.
DIVISIBILITY = [
    Div(200.0, 50.0, True),
    Div(200.0, 200.0, True),
    Div(0.3, 0.1, True),
    Div(1.0, 1 / 3, True),
    Div(200.0, 30.0, False),
    Div(25.0, 30.0, False),
    Div(1000.0, 100.00009, True),
    Div(1000.0, 100.00011, False),
    Div(1000.0, 99.99991, True),
    Div(1000.0, 99.99989, False),
]


@pytest.mark.parametrize("case", DIVISIBILITY, ids=lambda c: f"{c.chunk}/{c.bin}")
def test_divisibility_tolerance(case: Div) -> None:
    assert divides(case.chunk, case.bin) is case.divides


def _report() -> ValidationReport:
    return ValidationReport(
        findings=(
            Finding(check="L2.seed.3", severity=Severity.ERROR, path="/", message="bad bins"),
            Finding(check="L2.root.version", severity=Severity.WARNING, path="/", message="v"),
            Finding(check="x.y", severity=Severity.INFO, path="/0/vertices", message="note"),
        ),
        level=3,
    )


def test_report_properties() -> None:
    report = _report()
    assert not report.ok
    assert [f.check for f in report.errors] == ["L2.seed.3"]
    assert [f.check for f in report.warnings] == ["L2.root.version"]
    assert [f.check for f in report.infos] == ["x.y"]
    assert report.checks() == {"L2.seed.3", "L2.root.version", "x.y"}


def test_report_json_round_trip() -> None:
    doc = json.loads(_report().to_json())
    assert doc["ok"] is False
    assert (doc["errors"], doc["warnings"], doc["infos"], doc["level"]) == (1, 1, 1, 3)
    assert doc["findings"][2] == {
        "check": "x.y",
        "severity": "info",
        "path": "/0/vertices",
        "message": "note",
    }


def test_report_str_is_a_table() -> None:
    lines = str(_report()).splitlines()
    assert lines[0] == "ZVF validation (level 3): FAILED, 1 error, 1 warning, 1 info"
    assert lines[1].split() == ["severity", "check", "path", "message"]
    assert lines[2].split()[:3] == ["error", "L2.seed.3", "/"]
    assert lines[2].endswith("bad bins")


def test_warnings_only_is_ok() -> None:
    report = ValidationReport(findings=_report().warnings)
    assert report.ok
    assert report.summary().startswith("ZVF validation (level 2): OK")


def test_findings_are_frozen() -> None:
    finding = _report().findings[0]
    with pytest.raises(FrozenInstanceError):
        finding.check = "other"  # type: ignore[misc]
