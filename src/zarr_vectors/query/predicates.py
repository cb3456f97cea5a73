"""Attribute predicates (``where=``): parsing, resolution against a level, evaluation.

A predicate is a mapping ``{name: condition}``; conditions on different names are ANDed:

* ``(low, high)``: the half-open range ``low <= v < high`` (either end may be None), the same
  rule as boxes;
* a set (or frozenset, list, tuple of more than two values is *not* accepted: use a set) of
  values: ``v in values`` (integers, bools, or category labels of a categorical attribute);
* a single number, bool or string: ``v == value``.

Names resolve to a vertex attribute (``attributes/<name>``: filters vertices), an object
attribute (``object_attributes/<name>``: filters objects) or a link attribute
(``link_attributes/<name>``: filters edges and faces).  A name held by more than one kind must
be written with its prefix, e.g. ``"object_attributes/score"``.

**NaN rule**: a NaN value never satisfies any condition (like SQL ``NULL`` and pyarrow
filters): it is outside every range and in no set, so ``where`` never returns a NaN value
(use no predicate on that attribute to keep them).  Per-chunk statistics ignore NaN values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.reader import LevelReader
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.typespec import type_spec

__all__ = [
    "Clause",
    "Predicate",
    "Scope",
    "WhereLike",
    "parse_where",
    "parse_where_text",
    "resolve",
]

WhereLike = Mapping[str, Any]
"""What ``where=`` accepts: ``{name: (low, high) | set | scalar}``."""


class Scope(StrEnum):
    """What an attribute is attached to, hence what a condition on it filters."""

    VERTEX = "attributes"
    OBJECT = "object_attributes"
    LINK = "link_attributes"


@dataclass(frozen=True, kw_only=True)
class Clause:
    """One condition on one attribute."""

    name: str
    """Attribute name (without prefix)."""
    scope: Scope | None = None
    """Kind of attribute; None until resolved against a level."""
    low: float | int | None = None
    """Inclusive lower bound of a range, or None."""
    high: float | int | None = None
    """Exclusive upper bound of a range, or None."""
    values: tuple[Any, ...] | None = None
    """Allowed values (set condition), or None for a range."""

    @property
    def is_range(self) -> bool:
        """Whether the clause is a range (else a value set)."""
        return self.values is None

    def bounds(self, dtype: np.dtype[Any]) -> tuple[Any, Any]:
        """Return the range's ends for comparing with values of ``dtype``.

        Float ends become float64 scalars: a Python float next to a float32 array would be
        rounded to float32 (numpy's promotion rules), so ``v < 0.51`` would drop the float32
        value just below 0.51.  Values are compared exactly, as boxes compare coordinates.
        """
        if dtype.kind != "f":
            return self.low, self.high
        return (
            None if self.low is None else np.float64(self.low),
            None if self.high is None else np.float64(self.high),
        )

    def mask(self, values: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
        """Return which of ``values`` (decoded: categories as strings) satisfy the clause."""
        v = values.reshape(len(values)) if values.ndim > 1 else values
        if self.values is not None:
            if v.dtype.kind in "OUS":
                wanted = [x for x in self.values if isinstance(x, str)]
                return np.isin(v.astype(object), np.asarray(wanted, dtype=object))
            wanted_numbers = _as_dtype([x for x in self.values if not isinstance(x, str)], v.dtype)
            # NaN is in no set: isin compares with ==, and NaN == NaN is False
            return np.isin(v, wanted_numbers)
        if v.dtype.kind in "OUS":
            raise InvalidInputError(
                f"where: {self.name!r} is categorical; use a set of labels, not a range"
            )
        keep = np.ones(len(v), dtype=bool)
        low, high = self.bounds(v.dtype)
        # comparisons with NaN are False: NaN is outside every range
        if low is not None:
            keep &= v >= low
        if high is not None:
            keep &= v < high
        if self.low is None and self.high is None and v.dtype.kind == "f":
            keep &= ~np.isnan(v)  # an open range still excludes NaN
        return keep


def _as_dtype(values: list[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Set members as an array of ``dtype``, dropping those no value of it can equal.

    Converting a mix of small and > int64 integers through numpy's default would give
    float64 and lose digits; integer columns compare with exact integers instead.
    """
    if dtype.kind not in "biu":
        return np.asarray([float(x) for x in values], dtype=np.float64)
    low, high = (
        (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
    )
    exact = [int(x) for x in values if float(x).is_integer() or isinstance(x, int | np.integer)]
    return np.asarray([x for x in exact if low <= x <= high], dtype=dtype)


@dataclass(frozen=True)
class Predicate:
    """Clauses ANDed together (empty: everything matches)."""

    clauses: tuple[Clause, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.clauses)

    def of(self, scope: Scope) -> tuple[Clause, ...]:
        """Clauses on attributes of ``scope``."""
        return tuple(c for c in self.clauses if c.scope is scope)

    @property
    def names(self) -> tuple[str, ...]:
        """Attribute names used, in clause order."""
        return tuple(c.name for c in self.clauses)


def _number(x: Any, name: str) -> float | int:
    if isinstance(x, bool | np.bool_):
        return int(x)
    if isinstance(x, int | float | np.integer | np.floating):
        if isinstance(x, float | np.floating) and np.isnan(x):
            raise InvalidInputError(f"where: {name!r}: NaN is not a range bound")
        return x.item() if isinstance(x, np.generic) else x
    raise InvalidInputError(f"where: {name!r}: range bound {x!r} is not a number")


def _clause(key: str, cond: Any) -> Clause:
    scope = None
    name = key
    head, sep, tail = key.partition("/")
    if sep:
        try:
            scope = Scope(head)
        except ValueError:
            raise InvalidInputError(
                f"where: {key!r}: prefix must be one of {[s.value for s in Scope]}"
            ) from None
        name = tail
    if isinstance(cond, set | frozenset):
        vals = tuple(sorted(cond, key=repr))
        for x in vals:
            if not isinstance(x, str | int | float | bool | np.integer | np.floating | np.bool_):
                raise InvalidInputError(f"where: {key!r}: set member {x!r} is not a value")
        return Clause(name=name, scope=scope, values=vals)
    if isinstance(cond, tuple | list):
        if len(cond) != 2:
            raise InvalidInputError(
                f"where: {key!r}: a range is (low, high) with None for an open end; "
                "use a set for several values"
            )
        low = None if cond[0] is None else _number(cond[0], key)
        high = None if cond[1] is None else _number(cond[1], key)
        return Clause(name=name, scope=scope, low=low, high=high)
    if isinstance(cond, str | int | float | bool | np.generic):
        return Clause(name=name, scope=scope, values=(cond,))
    raise InvalidInputError(
        f"where: {key!r}: condition {cond!r} is not a (low, high) range, a set or a value"
    )


def parse_where(where: WhereLike | Predicate | None) -> Predicate:
    """Parse a ``where=`` mapping into a :class:`Predicate` (not yet resolved)."""
    if where is None:
        return Predicate()
    if isinstance(where, Predicate):
        return where
    if not isinstance(where, Mapping):
        raise InvalidInputError(
            f"where must be a mapping {{name: condition}}, got {type(where).__name__}"
        )
    return Predicate(tuple(_clause(str(k), v) for k, v in where.items()))


_TEXT = re.compile(r"^\s*([A-Za-z_][\w/]*)\s*(>=|<=|==|>|<|=|\bin\b)\s*(.+?)\s*$")


def _literal(text: str) -> Any:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    return t.strip("'\"")


def parse_where_text(texts: Sequence[str]) -> dict[str, Any]:
    """Parse CLI conditions (``"intensity>=0.5"``, ``"label in 3,7"``) into a ``where`` mapping.

    ``>`` and ``<=`` become half-open bounds through the next float64 (exact for float
    attributes and for integers below 2**53).  Conditions on one name are intersected.
    """
    out: dict[str, Any] = {}
    for text in texts:
        m = _TEXT.match(text)
        if m is None:
            raise InvalidInputError(
                f"cannot parse condition {text!r}; write e.g. 'intensity>=0.5', 'label==3' "
                "or 'label in 3,7'"
            )
        name, op, rhs = m.groups()
        if op == "in":
            cond: Any = {_literal(x) for x in rhs.split(",") if x.strip()}
        elif op in ("==", "="):
            cond = _literal(rhs)
        else:
            value = float(_number(_literal(rhs), name))
            cond = {
                ">=": (value, None),
                ">": (float(np.nextafter(value, np.inf)), None),
                "<": (None, value),
                "<=": (None, float(np.nextafter(value, np.inf))),
            }[op]
        if name in out:
            cond = _intersect(name, out[name], cond)
        out[name] = cond
    return out


def _intersect(name: str, a: Any, b: Any) -> Any:
    if not (isinstance(a, tuple) and isinstance(b, tuple)):
        raise InvalidInputError(f"two conditions on {name!r}: combine ranges only")
    lows = [x for x in (a[0], b[0]) if x is not None]
    highs = [x for x in (a[1], b[1]) if x is not None]
    return (max(lows) if lows else None, min(highs) if highs else None)


def resolve(predicate: Predicate, reader: LevelReader) -> Predicate:
    """Attach each clause to the attribute it names in ``reader``'s level.

    Raises
    ------
    InvalidInputError
        A name no attribute has (listing those that exist), a name held by several kinds
        without a prefix, a multi-column attribute, or a range on a categorical attribute.
    """
    available = {s: reader.names(s.value) for s in Scope}
    out = []
    for c in predicate.clauses:
        scopes = [c.scope] if c.scope is not None else [s for s in Scope if c.name in available[s]]
        if not scopes or c.name not in available[scopes[0]]:
            listing = "; ".join(f"{s.value}: {available[s]}" for s in Scope if available[s])
            raise InvalidInputError(
                f"where: the store has no attribute {c.name!r} "
                f"({listing or 'it has no attributes'})"
            )
        if len(scopes) > 1:
            raise InvalidInputError(
                f"where: {c.name!r} is an attribute of several kinds; prefix it, e.g. "
                f"{scopes[0].value + '/' + c.name!r}"
            )
        scope = scopes[0]
        attrs = reader.node(f"{scope.value}/{c.name}").attrs
        width = attrs.get("width", 1)
        if isinstance(width, int) and width != 1:
            raise InvalidInputError(
                f"where: {c.name!r} has {width} values per row; predicates need one"
            )
        if attrs.get("categories") is not None and c.is_range:
            raise InvalidInputError(
                f"where: {c.name!r} is categorical; use a set of labels, not a range"
            )
        out.append(Clause(name=c.name, scope=scope, low=c.low, high=c.high, values=c.values))
    if (
        Scope.LINK in {c.scope for c in out}
        and type_spec(reader.meta.geometry_type).link_arity == 0
    ):
        raise InvalidInputError("where: link attributes filter edges and faces only")
    return Predicate(tuple(out))
