r"""The PLY file structure (numpy only): header, elements, ASCII and binary bodies.

A PLY file is a header naming elements (``vertex``, ``face``, ...) and their properties, each a
scalar of one of the PLY type names (``char``/``int8``, ``uchar``/``uint8``, ``short``/``int16``,
``ushort``/``uint16``, ``int``/``int32``, ``uint``/``uint32``, ``float``/``float32``,
``double``/``float64``) or a list (a count type then an item type), followed by the element rows
as text (``ascii``) or packed binary (either byte order).  Type names are kept as written, so a
file written back declares the same names.  List properties are read when every row of the
element has the same count (the faces of a triangle mesh); other elements are skipped.

ASCII numbers are written the way ``%g`` writers (VTK, rply) print them: with the fewest
significant digits that read back as the same value, so such files come back byte for byte.

Examples
--------
>>> import io
>>> text = b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float32 x\nend_header\n0.5\n2\n"
>>> header = parse_header(io.BytesIO(text))
>>> header.elements[0].properties[0].type, header.ascii_style.trailing_space
('float32', False)
>>> format_ascii(np.array([0.5, 2.0, 1e-7], np.float32)).tolist()
['0.5', '2', '1e-07']
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError

__all__ = [
    "ORDER",
    "PLY_TYPES",
    "AsciiStyle",
    "Column",
    "Element",
    "Header",
    "Property",
    "format_ascii",
    "header_from_json",
    "parse_header",
    "read_elements",
    "write_file",
]

PLY_TYPES: Mapping[str, str] = {
    "char": "i1",
    "int8": "i1",
    "uchar": "u1",
    "uint8": "u1",
    "short": "i2",
    "int16": "i2",
    "ushort": "u2",
    "uint16": "u2",
    "int": "i4",
    "int32": "i4",
    "uint": "u4",
    "uint32": "u4",
    "float": "f4",
    "float32": "f4",
    "double": "f8",
    "float64": "f8",
}
"""Every PLY scalar type name -> numpy type code (without byte order)."""
ORDER = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": "<"}
"""PLY formats -> numpy byte order of their values (ASCII values are parsed little-endian)."""


@dataclass(frozen=True)
class Property:
    """One property: a scalar (``count_type`` None) or a list."""

    name: str
    type: str
    """PLY scalar type name as written (the item type of a list)."""
    count_type: str | None = None
    """PLY type name of a list's count, None for scalars."""

    def header_line(self) -> str:
        """Return the ``property ...`` header line."""
        if self.count_type is None:
            return f"property {self.type} {self.name}"
        return f"property list {self.count_type} {self.type} {self.name}"


@dataclass(frozen=True)
class Element:
    """One element: name, row count and properties."""

    name: str
    count: int
    properties: tuple[Property, ...]

    @property
    def has_lists(self) -> bool:
        """Whether a property is a list."""
        return any(p.count_type is not None for p in self.properties)


@dataclass(frozen=True)
class AsciiStyle:
    """How text lines end: ASCII rows (from the first row) and header lines (from ``ply``)."""

    trailing_space: bool = False
    newline: str = "\n"
    header_newline: str = "\n"


@dataclass(frozen=True)
class Header:
    """A parsed PLY header."""

    format: str
    elements: tuple[Element, ...]
    comments: tuple[str, ...]
    obj_info: tuple[str, ...]
    lines: tuple[str, ...]
    """Header lines between ``ply`` and ``end_header``, as written."""
    ascii_style: AsciiStyle = field(default_factory=AsciiStyle)

    def element(self, name: str) -> Element | None:
        """Return the element called ``name``, or None."""
        return next((e for e in self.elements if e.name == name), None)


def _check_type(name: str, where: str) -> str:
    if name not in PLY_TYPES:
        raise InvalidInputError(f"PLY {where} has unknown type {name!r}")
    return name


def _header_entry(words: list[str], elements: list[list[Any]]) -> None:
    """Apply one ``element`` or ``property`` line."""
    if words[0] == "element":
        if len(words) != 3 or not words[2].isdigit():
            raise InvalidInputError(f"bad PLY element line {' '.join(words)!r}")
        elements.append([words[1], int(words[2]), []])
        return
    if not elements or len(words) < 3:
        raise InvalidInputError(f"bad PLY property line {' '.join(words)!r}")
    where = f"element {elements[-1][0]!r} property {words[-1]!r}"
    if words[1] == "list":
        if len(words) != 5:
            raise InvalidInputError(f"bad PLY list property line {' '.join(words)!r}")
        prop = Property(words[4], _check_type(words[3], where), _check_type(words[2], where))
    else:
        prop = Property(words[2], _check_type(words[1], where))
    elements[-1][2].append(prop)


def parse_header(stream: IO[bytes]) -> Header:
    """Read a PLY header; leave ``stream`` at the first data byte.

    Raises
    ------
    InvalidInputError
        Not a PLY file, an unknown format or type name, or no ``end_header``.
    """
    magic = stream.readline()
    if magic.strip() != b"ply":
        raise InvalidInputError("not a PLY file (no 'ply' magic line)")
    header_newline = "\r\n" if magic.endswith(b"\r\n") else "\n"
    fmt, elements, comments, info, lines = "", [], [], [], []  # type: ignore[var-annotated]
    while True:
        raw = stream.readline()
        if not raw:
            raise InvalidInputError("PLY header has no end_header line")
        text = raw.decode("latin1").rstrip("\r\n")
        words = text.split()
        if words and words[0] == "end_header":
            break
        lines.append(text)
        if not words:
            continue
        if words[0] == "format":
            fmt = words[1] if len(words) > 1 else ""
        elif words[0] == "comment":
            comments.append(text[len("comment ") :])
        elif words[0] == "obj_info":
            info.append(text[len("obj_info ") :])
        elif words[0] in ("element", "property"):
            _header_entry(words, elements)
    if fmt not in ORDER:
        raise InvalidInputError(f"unsupported PLY format {fmt!r}")
    style = AsciiStyle(header_newline=header_newline)
    if fmt == "ascii":
        start = stream.tell()
        first = stream.readline()
        stream.seek(start)
        style = AsciiStyle(
            trailing_space=first.rstrip(b"\r\n").endswith(b" "),
            newline="\r\n" if first.endswith(b"\r\n") else "\n",
            header_newline=header_newline,
        )
    return Header(
        fmt,
        tuple(Element(n, c, tuple(p)) for n, c, p in elements),
        tuple(comments),
        tuple(info),
        tuple(lines),
        style,
    )


# -- reading --------------------------------------------------------------------------------


def _fixed_dtype(element: Element, order: str, counts: Mapping[str, int]) -> np.dtype[Any]:
    """Row dtype of an element whose list properties have the given counts."""
    fields: list[tuple[Any, ...]] = []
    for p in element.properties:
        if p.count_type is None:
            fields.append((p.name, order + PLY_TYPES[p.type]))
        else:
            fields.append((f"{p.name}\0count", order + PLY_TYPES[p.count_type]))
            fields.append((p.name, order + PLY_TYPES[p.type], (counts[p.name],)))
    return np.dtype(fields)


def _binary_row_counts(stream: IO[bytes], element: Element, order: str) -> dict[str, int]:
    """List counts of the first row (binary), stream position unchanged."""
    start = stream.tell()
    counts: dict[str, int] = {}
    for p in element.properties:
        if p.count_type is None:
            stream.read(np.dtype(PLY_TYPES[p.type]).itemsize)
            continue
        ct = np.dtype(order + PLY_TYPES[p.count_type])
        n = int(np.frombuffer(stream.read(ct.itemsize), ct)[0]) if element.count else 0
        counts[p.name] = n
        stream.read(n * np.dtype(PLY_TYPES[p.type]).itemsize)
    stream.seek(start)
    return counts


def _check_counts(table: npt.NDArray[Any], element: Element, counts: Mapping[str, int]) -> None:
    for name, n in counts.items():
        got = table[f"{name}\0count"]
        bad = np.flatnonzero(got != n)
        if len(bad):
            row = int(bad[0])
            raise InvalidInputError(
                f"PLY element {element.name!r} row {row}: list {name!r} has {int(got[row])} "
                f"items, row 0 has {n}; only lists of one length are read (triangles)"
            )


def _read_binary(stream: IO[bytes], element: Element, order: str) -> npt.NDArray[Any]:
    counts = _binary_row_counts(stream, element, order)
    dtype = _fixed_dtype(element, order, counts)
    size = dtype.itemsize * element.count
    data = stream.read(size)
    if len(data) < size:
        what = "truncated" if not element.has_lists else "truncated or has lists of mixed length"
        raise InvalidInputError(f"PLY element {element.name!r} data is {what}")
    table = np.frombuffer(data, dtype=dtype)
    _check_counts(table, element, counts)
    return table


def _read_ascii(stream: IO[bytes], element: Element) -> npt.NDArray[Any]:
    rows = [stream.readline().split() for _ in range(element.count)]
    counts: dict[str, int] = {}
    if rows:
        col = 0
        for p in element.properties:
            if p.count_type is not None:
                counts[p.name] = int(rows[0][col])
                col += counts[p.name]
            col += 1
    dtype = _fixed_dtype(element, "<", counts)
    width = sum(1 if dtype[n].shape == () else dtype[n].shape[0] for n in dtype.names or ())
    lengths = {len(r) for r in rows}
    if lengths - {width}:
        row = next(i for i, r in enumerate(rows) if len(r) != width)
        raise InvalidInputError(
            f"PLY element {element.name!r} row {row} has {len(rows[row])} values, expected "
            f"{width} (lists of one length only)"
        )
    text = np.array(rows, dtype=str).reshape(len(rows), width)
    table = np.zeros(len(rows), dtype=dtype)
    col = 0
    for name in dtype.names or ():
        k = 1 if dtype[name].shape == () else dtype[name].shape[0]
        base = dtype[name].base
        values = text[:, col : col + k]
        parsed = values.astype(np.float64 if base.kind == "f" else np.int64)
        table[name] = parsed[:, 0] if k == 1 else parsed
        col += k
    _check_counts(table, element, counts)
    return table


def _skip(stream: IO[bytes], element: Element, fmt: str) -> None:
    if fmt == "ascii":
        for _ in range(element.count):
            stream.readline()
        return
    order = ORDER[fmt]
    if not element.has_lists:
        stream.read(_fixed_dtype(element, order, {}).itemsize * element.count)
        return
    for _ in range(element.count):  # rows of varying size: walk them
        for p in element.properties:
            item = np.dtype(PLY_TYPES[p.type]).itemsize
            if p.count_type is None:
                stream.read(item)
                continue
            ct = np.dtype(order + PLY_TYPES[p.count_type])
            n = int(np.frombuffer(stream.read(ct.itemsize), ct)[0])
            stream.read(n * item)


def read_elements(
    stream: IO[bytes], header: Header, wanted: Sequence[str]
) -> dict[str, npt.NDArray[Any]]:
    """Read the ``wanted`` elements as structured arrays (native little-endian values).

    A list property ``p`` becomes an (n, k) field ``p`` and its counts a field named ``p``,
    a NUL character, then ``count``.
    Elements after the last wanted one are not read.
    """
    out: dict[str, npt.NDArray[Any]] = {}
    left = set(wanted) & {e.name for e in header.elements}
    for element in header.elements:
        if not left:
            break
        if element.name not in left:
            _skip(stream, element, header.format)
            continue
        left.discard(element.name)
        if header.format == "ascii":
            table = _read_ascii(stream, element)
        else:
            table = _read_binary(stream, element, ORDER[header.format])
        out[element.name] = table.astype(table.dtype.newbyteorder("<"))
    return out


# -- writing --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """Values of one property to write: (n,) scalars or (n, k) list items."""

    prop: Property
    values: npt.NDArray[Any]


def format_ascii(values: npt.NDArray[Any]) -> npt.NDArray[np.str_]:
    """Format numbers as ``%g`` with the fewest digits that read back exactly (ints: ``%d``)."""
    flat = values.ravel()
    if values.dtype.kind != "f":
        return flat.astype(np.int64).astype(str).reshape(values.shape)
    out = np.empty(len(flat), dtype=object)
    todo = np.arange(len(flat))
    kind = values.dtype.type
    for digits in range(1, 18):
        if not len(todo):
            break
        text = np.array([f"{v:.{digits}g}" for v in flat[todo].tolist()], dtype=str)
        ok = text.astype(np.float64).astype(kind) == flat[todo]
        ok |= np.isnan(flat[todo])
        out[todo[ok]] = text[ok]
        todo = todo[~ok]
    return out.astype(str).reshape(values.shape)


def _element_lines(columns: Sequence[Column], n: int, style: AsciiStyle) -> str:
    parts: list[npt.NDArray[np.str_]] = []
    for c in columns:
        if c.prop.count_type is not None:
            k = c.values.shape[1] if c.values.ndim == 2 else 0
            parts.append(np.full((n, 1), str(k)))
        parts.append(format_ascii(c.values).reshape(n, -1))
    if not n:
        return ""
    table = np.concatenate(parts, axis=1) if parts else np.zeros((n, 0), str)
    end = (" " if style.trailing_space else "") + style.newline
    return "".join(" ".join(row) + end for row in table.tolist())


def _element_bytes(columns: Sequence[Column], n: int, order: str) -> bytes:
    fields: list[tuple[Any, ...]] = []
    for c in columns:
        code = order + PLY_TYPES[c.prop.type]
        if c.prop.count_type is None:
            fields.append((c.prop.name, code))
        else:
            k = c.values.shape[1] if c.values.ndim == 2 else 0
            fields.append((f"{c.prop.name}\0count", order + PLY_TYPES[c.prop.count_type]))
            fields.append((c.prop.name, code, (k,)))
    table = np.zeros(n, dtype=np.dtype(fields))
    for c in columns:
        if c.prop.count_type is not None:
            table[f"{c.prop.name}\0count"] = c.values.shape[1] if c.values.ndim == 2 else 0
        table[c.prop.name] = c.values
    return table.tobytes()


def _header_text(
    fmt: str,
    elements: Sequence[Element],
    stored: Header | None,
    comments: Sequence[str],
    newline: str,
) -> str:
    """Header lines: the stored ones (new counts) when they declare the same elements."""
    same = stored is not None and [(e.name, e.properties) for e in stored.elements] == [
        (e.name, e.properties) for e in elements
    ]
    if stored is not None and same and stored.format == fmt:
        counts = iter(e.count for e in elements)
        lines = [
            f"element {line.split()[1]} {next(counts)}" if line.split()[:1] == ["element"] else line
            for line in stored.lines
        ]
    else:
        lines = [f"format {fmt} 1.0"]
        lines += [f"comment {c}" for c in comments]
        if stored is not None:
            lines += [f"obj_info {c}" for c in stored.obj_info]
        for e in elements:
            lines.append(f"element {e.name} {e.count}")
            lines += [p.header_line() for p in e.properties]
    return newline.join(["ply", *lines, "end_header"]) + newline


def write_file(
    path: Any,
    fmt: str,
    elements: Sequence[tuple[str, int, Sequence[Column]]],
    *,
    stored: Header | None = None,
    comments: Sequence[str] = (),
) -> None:
    """Write a PLY file (``ascii``, ``binary_little_endian`` or ``binary_big_endian``).

    ``stored`` is the header of the file the data came from: its lines are reused when they
    declare the same elements and properties, and its ASCII row style is followed.
    """
    declared = [Element(n, count, tuple(c.prop for c in cols)) for n, count, cols in elements]
    style = stored.ascii_style if stored is not None else AsciiStyle()
    body = io.BytesIO()
    header = _header_text(fmt, declared, stored, comments, style.header_newline)
    body.write(header.encode("latin1"))
    for _, count, cols in elements:
        if fmt == "ascii":
            body.write(_element_lines(cols, count, style).encode("latin1"))
        else:
            body.write(_element_bytes(cols, count, ORDER[fmt]))
    with open(path, "wb") as f:
        f.write(body.getvalue())


def header_from_json(data: Mapping[str, Any]) -> Header | None:
    """Rebuild a stored :class:`Header` from its ``custom_metadata`` form (None if absent)."""
    lines = data.get("header")
    if not isinstance(lines, list):
        return None
    text = "\n".join(["ply", *map(str, lines), "end_header", ""]).encode("latin1")
    parsed = parse_header(io.BytesIO(text))
    style = data.get("ascii_style") or {}
    return Header(
        parsed.format,
        parsed.elements,
        parsed.comments,
        parsed.obj_info,
        parsed.lines,
        AsciiStyle(
            bool(style.get("trailing_space", False)),
            str(style.get("newline", "\n")),
            str(style.get("header_newline", "\n")),
        ),
    )
