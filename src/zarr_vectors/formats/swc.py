"""SWC neuron morphology files <-> ``skeleton`` stores (FORMAT.md §7).

An SWC file is text: ``#`` comment lines, then one sample per line, ``n T x y z R P`` — sample
id, structure type (0 undefined, 1 soma, 2 axon, 3 basal dendrite, 4 apical dendrite, ...),
position, radius and parent id (``-1`` for a root).  Ids need not be contiguous and a file may
hold several roots.

Mapping to a store: one SWC file is one skeleton object (one neuron, possibly several roots);
samples keep their file order; ``T`` and ``R`` become the conventional ``swc_type`` (int32) and
``radius`` (float32) attributes, the sample ids a ``swc_id`` (int64) attribute, and the
full-line comments the ``swc_header`` object attribute — so :func:`store_to_swc` writes the file
back node for node.  Comment lines are written back at the top of the file; comments after data
on the same line are not kept.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.deprecation import renamed_keywords
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.formats.registry import Extent, NullProgress, Progress, Source, WriteOptions
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.skeletons import Skeleton, read_skeletons, write_skeletons

__all__ = [
    "SwcData",
    "SwcSource",
    "open_swc",
    "read_swc",
    "skeleton_to_swc",
    "store_to_swc",
    "swc_to_store",
    "write_swc",
]

IntArray = npt.NDArray[np.int64]
PathLike = str | os.PathLike[str]
_COMMENT = re.compile(r"^[ \t]*#(.*?)\r?$", re.MULTILINE)
_DATA = re.compile(r"^[ \t]*[^#\s]", re.MULTILINE)


@dataclass(frozen=True)
class SwcData:
    """The samples of one SWC file, in file order.

    Examples
    --------
    >>> d = SwcData.from_parent_index(np.zeros((2, 3)), [-1, 0], ids=[10, 20])
    >>> d.parents.tolist(), d.parent_index.tolist()
    ([-1, 10], [-1, 0])
    """

    ids: IntArray
    """(N,) sample numbers ``n``."""
    types: npt.NDArray[np.int32]
    """(N,) structure types ``T``."""
    positions: npt.NDArray[np.float64]
    """(N, 3) sample positions ``x y z``."""
    radii: npt.NDArray[np.floating]
    """(N,) radii ``R`` (float64 from a file; float32 from a store, written as such)."""
    parents: IntArray
    """(N,) parent sample numbers ``P`` (-1 for a root)."""
    header: tuple[str, ...] = field(default=())
    """Comment lines, text after the ``#``."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def parent_index(self) -> IntArray:
        """(N,) parent of each sample as a row index (-1 for a root)."""
        order = np.argsort(self.ids, kind="stable")
        ranked = self.ids[order]
        pos = np.minimum(np.searchsorted(ranked, self.parents), max(len(ranked) - 1, 0))
        found = (ranked[pos] == self.parents) if len(ranked) else np.zeros(0, dtype=bool)
        bad = np.flatnonzero(~found & (self.parents != -1))
        if bad.size:
            i = int(bad[0])
            raise GeometryError(
                f"SWC sample {self.ids[i]}: parent {self.parents[i]} is not a sample id"
            )
        return np.where(self.parents == -1, -1, order[pos]).astype(np.int64)

    @classmethod
    def from_parent_index(
        cls,
        positions: npt.ArrayLike,
        parent_index: npt.ArrayLike,
        *,
        ids: npt.ArrayLike | None = None,
        types: npt.ArrayLike | None = None,
        radii: npt.ArrayLike | None = None,
        header: Sequence[str] = (),
    ) -> SwcData:
        """Build from row-index parents; ids default to ``1..N``, types to 0, radii to 1.0."""
        pos = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
        n = len(pos)
        par = np.asarray(parent_index, dtype=np.int64).reshape(n)
        sid = np.arange(1, n + 1, dtype=np.int64) if ids is None else np.asarray(ids, np.int64)
        return cls(
            ids=sid.reshape(n),
            types=np.zeros(n, np.int32) if types is None else np.asarray(types, np.int32),
            positions=pos,
            radii=np.ones(n) if radii is None else _floats(radii).reshape(n),
            parents=np.where(par >= 0, sid[np.maximum(par, 0)], -1).astype(np.int64),
            header=tuple(header),
        )


def _floats(values: npt.ArrayLike) -> npt.NDArray[np.floating]:
    """Float values, float32 kept (so 0.55 stored as float32 is written back as 0.55)."""
    arr = np.asarray(values)
    return arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float64)


def read_swc(path: PathLike) -> SwcData:
    r"""Read an SWC file.

    Raises
    ------
    InvalidInputError
        A data line without 7 numbers, a non-integer id, type or parent, or a repeated id.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> f = Path(tmp.name) / "n.swc"
    >>> _ = f.write_text("# soma only\n1 1 0 0 0 5.0 -1\n2 3 0 0 2 1.0 1\n")
    >>> d = read_swc(f)
    >>> d.header, d.ids.tolist(), d.parent_index.tolist()
    ((' soma only',), [1, 2], [-1, 0])
    >>> tmp.cleanup()
    """
    text = Path(path).read_text()
    header = tuple(m.group(1) for m in _COMMENT.finditer(text))
    table = np.zeros((0, 7))
    if _DATA.search(text):  # loadtxt warns on a file without samples
        try:
            table = np.loadtxt(io.StringIO(text), comments="#", ndmin=2, dtype=np.float64)
        except ValueError as exc:
            raise InvalidInputError(f"{path}: not an SWC file ({exc})") from exc
    if table.shape[1] != 7:
        raise InvalidInputError(
            f"{path}: SWC lines need 7 columns (n T x y z R P), got {table.shape[1]}"
        )
    ints = table[:, [0, 1, 6]]
    if not np.array_equal(ints, np.round(ints)):
        row = int(np.argmax(np.any(ints != np.round(ints), axis=1)))
        raise InvalidInputError(f"{path}: sample {row}: id, type and parent must be integers")
    ids = table[:, 0].astype(np.int64)
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise InvalidInputError(f"{path}: sample id {uniq[np.argmax(counts > 1)]} is repeated")
    return SwcData(
        ids,
        table[:, 1].astype(np.int32),
        np.ascontiguousarray(table[:, 2:5]),
        np.ascontiguousarray(table[:, 5]),
        table[:, 6].astype(np.int64),
        header,
    )


def _join_columns(columns: Sequence[npt.NDArray[Any]]) -> list[str]:
    line = columns[0].astype(str)
    for col in columns[1:]:
        line = np.char.add(np.char.add(line, " "), col.astype(str))
    return [str(s) for s in line.tolist()]


def write_swc(path: PathLike, data: SwcData) -> None:
    """Write an SWC file: header comments, then one line per sample in order.

    Floats are written in their shortest round-trip form, so reading the file back gives the
    same numbers.

    Examples
    --------
    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> f = Path(tmp.name) / "n.swc"
    >>> write_swc(f, SwcData.from_parent_index([[0, 0, 0], [1.5, 0, 0]], [-1, 0]))
    >>> print(f.read_text(), end="")
    1 0 0.0 0.0 0.0 1.0 -1
    2 0 1.5 0.0 0.0 1.0 1
    >>> tmp.cleanup()
    """
    cols = [data.ids, data.types, *data.positions.T, data.radii, data.parents]
    lines = [f"#{h}" for h in data.header]
    if len(data):
        lines += _join_columns([np.asarray(c) for c in cols])
    Path(path).write_text("".join(f"{line}\n" for line in lines))


def skeleton_to_swc(skeleton: Skeleton) -> SwcData:
    """Convert one skeleton to SWC samples (uses ``swc_id``, ``swc_type``, ``radius``).

    Raises
    ------
    InvalidInputError
        The skeleton is not 3-D.
    """
    if skeleton.positions.ndim != 2 or skeleton.positions.shape[1] != 3:
        raise InvalidInputError(f"SWC needs 3-D positions, got shape {skeleton.positions.shape}")
    attrs = skeleton.attributes
    head = str(skeleton.object_attributes.get("swc_header", ""))
    header = tuple(head.split("\n")[:-1])  # every stored line ends with a newline
    return SwcData.from_parent_index(
        skeleton.positions,
        skeleton.parents,
        ids=attrs.get("swc_id"),
        types=attrs.get("swc_type"),
        radii=attrs.get("radius"),
        header=header,
    )


@renamed_keywords(ids="object_ids")
def swc_to_store(
    swc: PathLike | SwcData | Sequence[PathLike | SwcData],
    store: StoreLike,
    *,
    object_ids: npt.ArrayLike | None = None,
    chunk_shape: Sequence[float],
    **kwargs: Any,
) -> WriteSummary:
    """Write one or several SWC files (or :class:`SwcData`) as skeletons, one per file.

    Parameters
    ----------
    swc
        A path or :class:`SwcData`, or a sequence of them.
    store
        Where to write the new ``skeleton`` store.
    object_ids
        Per-file user ids (e.g. neuron ids); default ``0..n-1``.  ``ids=`` is the deprecated
        name.
    chunk_shape
        Chunk extent per axis, same units as the SWC coordinates.
    **kwargs
        Further keywords of :func:`~zarr_vectors.types.skeletons.write_skeletons`.

    Returns
    -------
    WriteSummary
        What was written.

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> d = SwcData.from_parent_index([[0, 0, 0], [5, 0, 0]], [-1, 0], ids=[3, 9])
    >>> swc_to_store(d, store, chunk_shape=(4, 4, 4)).vertex_count
    2
    >>> store_to_swc(store, None).ids.tolist()
    [3, 9]
    """
    items = [swc] if isinstance(swc, SwcData | str | os.PathLike) else list(swc)
    datas = [s if isinstance(s, SwcData) else read_swc(s) for s in items]
    counts = np.array([len(d) for d in datas], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    parents = np.concatenate([d.parent_index for d in datas] + [np.zeros(0, np.int64)])
    parents = np.where(parents >= 0, parents + np.repeat(offsets[:-1], counts), -1)

    def flat(values: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
        return np.concatenate(values) if values else np.zeros(0)

    return write_skeletons(
        store,
        flat([d.positions for d in datas]).reshape(-1, 3),
        parents,
        offsets=offsets,
        object_ids=object_ids,
        radius=flat([d.radii for d in datas]),
        swc_type=flat([d.types for d in datas]),
        attributes={"swc_id": flat([d.ids for d in datas]).astype(np.int64)},
        object_attributes={
            "swc_header": np.array(["".join(f"{h}\n" for h in d.header) for d in datas])
        },
        chunk_shape=chunk_shape,
        **kwargs,
    )


class SwcSource(Source):
    """An SWC file opened for conversion: one skeleton (the file is read here)."""

    geometry_type = GeometryTypeName.SKELETON

    def __init__(self, path: PathLike) -> None:
        super().__init__(path)
        self.data = read_swc(self.path)

    def extent(self) -> Extent:
        """Return the sample count and bounding box."""
        return Extent.of(self.data.positions)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the file as one skeleton of a new store (comments kept, node for node)."""
        (progress or NullProgress()).start("writing store", None)
        return swc_to_store(
            self.data,
            store,
            **options.store(source_description=f"SWC morphology: {self.path.name}"),
        )


def open_swc(path: PathLike) -> SwcSource:
    """Open an SWC file for conversion (see :class:`SwcSource`)."""
    return SwcSource(path)


def store_to_swc(
    store: StoreLike,
    path: PathLike | None,
    *,
    object_id: Any = None,
    level: int = 0,
    storage_options: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> SwcData:
    """Write one skeleton of a store to an SWC file and return its samples.

    Parameters
    ----------
    store
        A ``skeleton`` store.
    path
        Output file, or None to only return the samples.
    object_id
        Skeleton to write (user id); may be omitted when the store holds one skeleton.
    level
        Resolution level.
    storage_options
        fsspec options for URL stores.
    progress
        Receiver of progress reports.

    Returns
    -------
    SwcData
        The samples written.

    Raises
    ------
    InvalidInputError
        ``object_id`` omitted for a store with several skeletons, or the store is not 3-D.
    """
    (progress or NullProgress()).start("reading store", None)
    sks = read_skeletons(
        store,
        level=level,
        storage_options=storage_options,
        object_ids=None if object_id is None else [object_id],
    )
    if len(sks) != 1:
        raise InvalidInputError(
            f"the store holds {len(sks)} skeletons and an SWC file holds one: choose it with "
            f"object_id= (CLI: --object-id), one of {sks.object_ids[:5].tolist()}..."
        )
    data = skeleton_to_swc(sks[0])
    if path is not None:
        write_swc(path, data)
    return data
