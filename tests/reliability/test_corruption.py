"""Corruption suite: real stores damaged in one way each.

For every damage and geometry type two things must hold:

* the validator (level 5) reports the damage under its check id and never raises;
* the type's reader either still returns data (damage it does not depend on) or raises one of
  our errors (a ``ZarrVectorsError`` subclass) naming the array — never a bare ``IndexError``,
  ``ValueError``, ``JSONDecodeError`` or ``MemoryError`` from numpy, json or a codec.

Reader crashes found here are marked ``xfail(strict=True, reason="BUG: ...")``; the fix for
each is proposed in the reliability report.  When a fix lands the strict xfail fails, and the
mark is removed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from zarr.errors import ZarrUserWarning
from zarr.storage import MemoryStore

from reliability._damage import KINDS, READERS, Damage, Fmt
from zarr_vectors.core.columns import Column
from zarr_vectors.errors import CorruptPayloadError, ZarrVectorsError, ZVUserWarning
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.validate import validate

D = 3
OBJECTS = ("points", "lines", "polylines", "graph", "skeleton", "mesh")
LINKED = ("graph", "skeleton", "mesh")
CROSSING = ("lines", "polylines", "graph", "skeleton", "mesh")
ALL = "*"
FEW = ("points", "polylines", "mesh")


def _first(d: Damage, path: str) -> int:
    for flat in d.occupied():
        if len(d.rows(f"0/{path}", flat)):
            return flat
    raise AssertionError(path)


def _key(d: Damage, path: str = "vertices") -> str:
    return d.chunk_key(f"0/{path}", _first(d, path))


def _edit_rows(path: str, fn: Callable[[Any], Any]) -> Callable[[Damage], None]:
    def apply(d: Damage) -> None:
        flat = _first(d, path)
        d.set_rows(f"0/{path}", flat, fn(d.rows(f"0/{path}", flat)))

    return apply


def _edit_dense(path: str, fn: Callable[[Any], None]) -> Callable[[Damage], None]:
    def apply(d: Damage) -> None:
        arr = d.dense(f"0/{path}")
        fn(arr)
        d.set_dense(f"0/{path}", arr)

    return apply


def _set(index: Any, value: Any) -> Callable[[Any], Any]:
    def apply(rows: Any) -> Any:
        rows[index] = value
        return rows

    return apply


def _truncate(d: Damage) -> None:
    key = _key(d)
    raw = d.get(key)
    assert raw is not None
    d.put(key, raw[: len(raw) // 2])


def _swap_dtype(d: Damage) -> None:
    d.edit_attrs("0/vertices", lambda a: a.__setitem__("dtype", "<f4"))


def _root_doc(d: Damage, fmt: Fmt) -> str:
    return "zarr.json" if fmt == 3 else ".zattrs"


def _offsets_past_end(a: Any) -> None:
    a[1] = a[-1] + 7


def _bump_count(a: Any) -> None:
    a.reshape(-1)[np.flatnonzero(a.reshape(-1))[0]] += 2


def _negative_count(a: Any) -> None:
    a.reshape(-1)[np.flatnonzero(a.reshape(-1))[0]] = -3


def _garbage_chunks(path: str) -> Callable[[Damage], None]:
    def apply(d: Damage) -> None:
        for key in d.keys(f"0/{path}/c"):
            d.put(key, b"\x28\xb5\x2f\xfd garbage")

    return apply


def _replace_dense(path: str, fn: Callable[[Any], Any]) -> Callable[[Damage], None]:
    def apply(d: Damage) -> None:
        d.set_dense(f"0/{path}", fn(d.dense(f"0/{path}")))

    return apply


def _set_attr(path: str, key: str, value: Any) -> Callable[[Damage], None]:
    return lambda d: d.edit_attrs(f"0/{path}", lambda a: a.__setitem__(key, value))


@dataclass(frozen=True)
class Corruption:
    """One way to damage a store, what the validator must say, and what readers may do."""

    name: str
    apply: Callable[[Damage, Fmt], None]
    checks: frozenset[str]
    """The validator must report at least one of these ids."""
    kinds: tuple[str, ...] = KINDS
    severity: Severity = Severity.ERROR
    must_raise: bool = True
    """The reader cannot return correct data, so it must raise (our error)."""
    names: str | None = None
    """Text our reader error must contain (the damaged array)."""
    formats: tuple[Fmt, ...] = (3,)
    bugs: Mapping[str, str] = field(default_factory=dict)
    """Reader crashes still open, by kind (``"*"``: every kind): the xfail reason."""


def _on(fn: Callable[[Damage], None]) -> Callable[[Damage, Fmt], None]:
    return lambda d, _fmt: fn(d)


CORRUPTIONS = [
    Corruption(
        "truncated payload", _on(_truncate), frozenset({"L3.payload.decode"}), names="vertices"
    ),
    Corruption(
        "truncated payload v2",
        _on(_truncate),
        frozenset({"L3.payload.decode"}),
        names="vertices",
        formats=(2,),
        kinds=FEW,
    ),
    Corruption(
        "garbage bytes",
        _on(lambda d: d.put(_key(d), b"\x28\xb5\x2f\xfd garbage")),
        frozenset({"L3.payload.decode"}),
        names="vertices",
    ),
    Corruption(
        "rows not whole",
        _on(_edit_rows("vertices", lambda r: r.tobytes()[:-3])),
        frozenset({"L3.payload.rows"}),
        names="vertices",
    ),
    Corruption(
        "missing array",
        _on(lambda d: d.delete_dir("0/vertex_fragments")),
        frozenset({"L1.array.missing"}),
        must_raise=False,
        names="vertex_fragments",
    ),
    Corruption(
        "missing manifest",
        _on(lambda d: d.delete_dir("0/object_index/manifest")),
        frozenset({"L1.array.missing", "L3.object_index.incomplete"}),
        kinds=OBJECTS,
        names="manifest",
        must_raise=False,
    ),
    Corruption(
        "wrong dtype attr",
        _on(_swap_dtype),
        frozenset({"L3.vertex_counts.match", "L3.payload.rows"}),
        names="vertices",
    ),
    Corruption(
        "big-endian dtype attr",
        _on(lambda d: d.edit_attrs("0/vertices", lambda a: a.__setitem__("dtype", ">f8"))),
        frozenset({"L2.array.dtype"}),
        must_raise=False,
        kinds=FEW,
    ),
    Corruption(
        "manifest out of range",
        _on(_edit_dense("object_index/manifest", _set((0, D), 10**6))),
        frozenset({"L3.manifest.range"}),
        kinds=OBJECTS,
        names="manifest",
    ),
    Corruption(
        "manifest chunk outside grid",
        _on(_edit_dense("object_index/manifest", _set((0, 0), 10**6))),
        frozenset({"L3.manifest.range"}),
        kinds=OBJECTS,
        names="manifest",
        must_raise=False,
    ),
    Corruption(
        "offsets past manifest",
        _on(_edit_dense("object_index/offsets", _offsets_past_end)),
        frozenset({"L3.object_index.offsets"}),
        kinds=OBJECTS,
        names="offsets",
    ),
    Corruption(
        "malformed root json",
        lambda d, fmt: d.put(_root_doc(d, fmt), b'{"zarr_format": '),
        frozenset({"L1.json.malformed"}),
        formats=(3, 2),
        kinds=FEW,
    ),
    Corruption(
        "malformed array json",
        lambda d, fmt: d.put("0/vertices/" + ("zarr.json" if fmt == 3 else ".zarray"), b"[1, 2"),
        frozenset({"L1.json.malformed"}),
        formats=(3, 2),
        kinds=FEW,
    ),
    Corruption(
        "unknown format version",
        _on(lambda d: d.edit_attrs("", lambda a: a.__setitem__("zarr_vectors_version", "7.3"))),
        frozenset({"L2.root.version"}),
        severity=Severity.WARNING,
        must_raise=False,
        kinds=FEW,
    ),
    Corruption(
        "v2/v3 mix",
        lambda d, fmt: d.put("0/.zattrs" if fmt == 3 else "0/zarr.json", b"{}"),
        frozenset({"L1.format.mixed"}),
        formats=(3, 2),
        must_raise=False,
        kinds=FEW,
    ),
    Corruption(
        "fragments not tiling",
        _on(_edit_rows("vertex_fragments", _set((0, 2), 1))),
        frozenset({"L3.fragments.tile"}),
        must_raise=False,
    ),
    Corruption(
        "fragment count huge",
        _on(_edit_rows("vertex_fragments", _set((0, 3), 2**40))),
        frozenset({"L3.fragments.tile"}),
        must_raise=False,
    ),
    Corruption(
        "fragment object out of range",
        _on(_edit_rows("vertex_fragments", _set((0, 1), 10**6))),
        frozenset({"L3.fragments.object"}),
        must_raise=False,
    ),
    Corruption(
        "vertex_counts mismatch",
        _on(_edit_dense("vertex_counts", _bump_count)),
        frozenset({"L3.vertex_counts.match"}),
        must_raise=False,
    ),
    Corruption(
        "vertex_counts negative",
        _on(_edit_dense("vertex_counts", _negative_count)),
        frozenset({"L3.vertex_counts.match"}),
        must_raise=False,
    ),
    Corruption(
        "chunk missing",
        _on(lambda d: d.delete(_key(d))),
        frozenset({"L3.vertex_counts.match"}),
        names="vertices",
    ),
    Corruption(
        "link row out of range",
        _on(_edit_rows("links", _set((0, 0), 10**6))),
        frozenset({"L3.links.range"}),
        kinds=LINKED,
        names="links",
    ),
    Corruption(
        "cross-chunk row out of range",
        _on(_edit_rows("cross_chunk_links", _set((0, 2 * D + 1), 10**6))),
        frozenset({"L3.cross_chunk_links.row"}),
        kinds=CROSSING,
        must_raise=False,
        names="cross_chunk_links",
    ),
    Corruption(
        "dense chunk garbage",
        _on(_garbage_chunks("object_index/offsets")),
        frozenset({"L3.dense.decode"}),
        kinds=OBJECTS,
        names="offsets",
    ),
    Corruption(
        "offsets not 1-D",
        _on(_replace_dense("object_index/offsets", lambda a: a[:, None])),
        frozenset({"L3.object_index.offsets"}),
        kinds=OBJECTS,
        names="offsets",
    ),
    Corruption(
        "offsets decreasing",
        _on(_replace_dense("object_index/offsets", lambda a: a[::-1].copy())),
        frozenset({"L3.object_index.offsets"}),
        kinds=OBJECTS,
        names="offsets",
    ),
    Corruption(
        "manifest too narrow",
        _on(_replace_dense("object_index/manifest", lambda a: a[:, :2])),
        frozenset({"L3.object_index.manifest"}),
        kinds=OBJECTS,
        names="manifest",
    ),
    Corruption(
        "object attribute rows short",
        _on(_replace_dense("object_attributes/length", lambda a: a[:2])),
        frozenset({"L3.object_attributes.align"}),
        kinds=("polylines",),
        names="object_attributes",
    ),
    Corruption(
        "group member out of range",
        _on(_replace_dense("groupings/members", lambda a: a + 1000)),
        frozenset({"L3.groupings.index"}),
        kinds=("polylines",),
        must_raise=False,
        names="groupings",
    ),
    Corruption(
        "width zero",
        _on(_set_attr("vertices", "width", 0)),
        frozenset({"L2.array.width"}),
        kinds=FEW,
        names="vertices",
    ),
    Corruption(
        "fragment width",
        _on(_set_attr("vertex_fragments", "width", 2)),
        frozenset({"L2.array.width"}),
        must_raise=False,
        names="vertex_fragments",
    ),
    Corruption(
        "link width",
        _on(_set_attr("links", "width", 1)),
        frozenset({"L2.array.width"}),
        kinds=LINKED,
        names="links",
    ),
    Corruption(
        "cross-chunk width",
        _on(_set_attr("cross_chunk_links", "width", 5)),
        frozenset({"L2.array.width"}),
        kinds=CROSSING,
        must_raise=False,
        names="cross_chunk_links",
    ),
    Corruption(
        "link attribute rows short",
        _on(_edit_rows("link_attributes/w", lambda r: r[:-1])),
        frozenset({"L3.link_attributes.align"}),
        kinds=("graph",),
        names="link_attributes",
    ),
    Corruption(
        "cross-chunk chunk outside grid",
        _on(_edit_rows("cross_chunk_links", _set((0, 0), 10**6))),
        frozenset({"L3.cross_chunk_links.chunk"}),
        kinds=CROSSING,
        must_raise=False,
        names="cross_chunk_links",
    ),
]


def _params(reader: bool) -> list[Any]:
    out = []
    for c in CORRUPTIONS:
        for kind in c.kinds:
            for fmt in c.formats:
                marks = []
                reason = c.bugs.get(kind, c.bugs.get(ALL))
                if reader and reason is not None:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                out.append(pytest.param(c, kind, fmt, marks=marks, id=f"{c.name}-{kind}-v{fmt}"))
    return out


_DAMAGED: dict[tuple[str, str, int], dict[str, Any]] = {}


def _damaged(
    case: Corruption, kind: str, fmt: Fmt, pristine: Callable[[str, Fmt], Damage]
) -> Damage:
    """The damaged store, built once per case and copied for each test using it."""
    key = (case.name, kind, fmt)
    if key not in _DAMAGED:
        d = pristine(kind, fmt)
        case.apply(d, fmt)
        assert isinstance(d.store, MemoryStore)
        _DAMAGED[key] = dict(d.store._store_dict)
    return Damage(MemoryStore(dict(_DAMAGED[key])))


@pytest.mark.parametrize(("case", "kind", "fmt"), _params(reader=False))
def test_validator_reports_corruption(
    case: Corruption, kind: str, fmt: Fmt, pristine: Callable[[str, Fmt], Damage]
) -> None:
    d = _damaged(case, kind, fmt, pristine)
    report = validate(d.store, level=5)
    hits = [f for f in report.findings if f.check in case.checks]
    assert hits, f"{case.name}: expected one of {sorted(case.checks)}, got\n{report}"
    assert {f.severity for f in hits} == {case.severity}, str(report)
    assert report.ok is (case.severity is not Severity.ERROR)


@pytest.mark.parametrize(("case", "kind", "fmt"), _params(reader=True))
def test_reader_raises_our_error(
    case: Corruption, kind: str, fmt: Fmt, pristine: Callable[[str, Fmt], Damage]
) -> None:
    d = _damaged(case, kind, fmt, pristine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZVUserWarning)  # the unknown-version case warns
        warnings.simplefilter("ignore", ZarrUserWarning)  # zarr on a foreign v2/v3 document
        try:
            READERS[kind](d.store)
        except ZarrVectorsError as exc:
            error: str | None = str(exc)
        else:
            error = None
    if error is None:
        assert not case.must_raise, f"{case.name}: {kind} reader returned data from a broken store"
    elif case.names is not None:
        assert case.names in error, f"the error does not name {case.names!r}: {error}"


def test_junk_categories_attribute_is_our_error(
    pristine: Callable[[str, Fmt], Damage],
) -> None:
    """``categories`` must be a list of strings (the validator does not check it)."""
    d = pristine("points", 3)
    _set_attr("attributes/intensity", "categories", 5)(d)
    with pytest.raises(ZarrVectorsError, match="intensity"):
        READERS["points"](d.store)


def test_categories_on_float_values_is_our_error(
    pristine: Callable[[str, Fmt], Damage],
) -> None:
    d = pristine("points", 3)
    _set_attr("attributes/intensity", "categories", ["a", "b"])(d)  # float32 values
    with pytest.raises(CorruptPayloadError, match=r"intensity.*must be integers"):
        READERS["points"](d.store)


def test_categorical_code_outside_its_categories_is_our_error() -> None:
    for codes in ([0, 2], [-1, 0]):
        with pytest.raises(CorruptPayloadError, match="outside its 2 categories"):
            Column(np.array(codes, dtype=np.int32), ("a", "b")).decoded()


def test_every_damage_is_distinct_and_has_cases() -> None:
    names = [c.name for c in CORRUPTIONS]
    assert len(names) == len(set(names))
    assert len(_params(reader=False)) > 80
