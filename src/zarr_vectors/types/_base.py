"""The geometry-type plug-in contract and its registry (STYLE §3).

A geometry type converts user input to :class:`~zarr_vectors.core.plan.GeometryParts` (what the
core write pipeline consumes) and builds its typed result from a
:class:`~zarr_vectors.core.reader.LevelReader`.  Everything else — chunking, encoding, I/O,
metadata — is done once by ``core``.  Types register under their spec name; third-party types
can register through the ``zarr_vectors.geometry_types`` entry-point group.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.engine import LINKED_TOPOLOGIES, Gathered, gather
from zarr_vectors.core.links.keys import sorted_unique
from zarr_vectors.core.plan import GeometryParts
from zarr_vectors.core.reader import BBoxLike, LevelReader, parse_bbox
from zarr_vectors.core.select import Query, user_ids
from zarr_vectors.core.writer import StoreKwargs, StoreOptions, resolve_store_options
from zarr_vectors.errors import CorruptPayloadError, InvalidInputError, UnknownGeometryTypeError
from zarr_vectors.spec import layout as L
from zarr_vectors.spec.typespec import (
    TypeSpec,
    load_geometry_entry_point,
    register_type_spec,
    type_spec,
)
from zarr_vectors.types._order import visible

__all__ = [
    "Batch",
    "GeometryType",
    "Query",
    "attribute_selection",
    "batch_ids",
    "build_query",
    "dense_object_ids",
    "get_geometry_type",
    "object_query",
    "register_geometry_type",
    "resolve_user_ids",
    "take_batch_args",
    "user_ids",
    "write_options",
]

IntArray = npt.NDArray[np.int64]
_Result = TypeVar("_Result")


@dataclass(frozen=True)
class Batch:
    """One streaming batch converted for spilling."""

    parts: GeometryParts
    """Vertices, objects and links of the batch (batch-local numbering)."""
    user_ids: npt.NDArray[Any] | None = None
    """Per-vertex user object ids (point clouds)."""
    object_ids: npt.NDArray[Any] | None = None
    """Per-object user ids of the batch's objects."""


class GeometryType(ABC, Generic[_Result]):
    """Base class of every geometry type (built-in or plug-in); subclasses are stateless.

    A subclass sets :attr:`spec` (its :class:`~zarr_vectors.spec.typespec.TypeSpec`) and
    implements :meth:`assemble` (how gathered rows become its result) or :meth:`read`;
    :meth:`batch` (streaming and distributed writes) and :meth:`scene_result` (drawing) are
    optional.
    """

    spec: ClassVar[TypeSpec]
    """Every fact about the type; ``spec.name`` is written to ``geometry_type``."""
    name: ClassVar[str]
    """``spec.name`` (set for each subclass that defines ``spec``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "spec" in cls.__dict__:
            cls.name = cls.spec.name

    @classmethod
    def read(cls, reader: LevelReader, query: Query) -> _Result:
        """Run ``query`` on one level and return this type's typed result.

        The shared pipeline: :func:`~zarr_vectors.core.engine.gather` (the engine of
        ``spec.topology``, every visible edge or face attribute) then :meth:`assemble`.
        """
        linked = cls.spec.topology in LINKED_TOPOLOGIES
        return cls.read_with(
            reader, query, visible(reader.names(L.LINK_ATTRIBUTES)) if linked else ()
        )

    @classmethod
    def read_with(
        cls,
        reader: LevelReader,
        query: Query,
        link_attributes: Sequence[str] = (),
        boundary: bool = False,
    ) -> _Result:
        """:meth:`read` with the edge or face attributes to return and boundary links.

        ``boundary``: with a box, also the links with one end in it and their outside
        vertices (graphs, meshes).
        """
        rows = gather(reader, query, cls.spec, link_attributes, boundary)
        return cls.assemble(reader, query, rows)

    @classmethod
    def assemble(cls, reader: LevelReader, query: Query, rows: Gathered) -> _Result:
        """Build this type's result from the rows gathered for ``query``.

        The hook each type implements (unless it overrides :meth:`read`): ``rows`` is what
        :func:`~zarr_vectors.core.engine.gather` returned for the type's topology.
        """
        raise UnknownGeometryTypeError(f"geometry type {cls.spec.name!r} cannot build results")

    @classmethod
    def batch(cls, data: Any, meta: Mapping[str, Any], kw: dict[str, Any]) -> Batch:
        """Convert one streaming batch (the ``write_*`` arguments) to spillable parts."""
        raise InvalidInputError(f"no streaming support for {cls.spec.name!r}")

    @classmethod
    def scene_result(cls, result: Any) -> Any:
        """Return ``result`` as the result class its ``spec.scene`` kind draws (identity)."""
        return result


_Type = TypeVar("_Type", bound=type[GeometryType[Any]])

_REGISTRY: dict[str, type[GeometryType[Any]]] = {}


def register_geometry_type(cls: _Type) -> _Type:
    """Register a geometry type class and its spec under ``cls.spec.name`` (a decorator)."""
    register_type_spec(cls.spec)
    _REGISTRY[cls.spec.name] = cls
    return cls


def get_geometry_type(name: str) -> type[GeometryType[Any]]:
    """Return the registered class for ``name``, loading its entry point on first miss."""
    key = type_spec(name).name
    if key not in _REGISTRY:
        obj = load_geometry_entry_point(key)
        if isinstance(obj, type) and issubclass(obj, GeometryType):
            register_geometry_type(obj)
    if key not in _REGISTRY:
        raise UnknownGeometryTypeError(f"no reader is registered for geometry type {key!r}")
    return _REGISTRY[key]


def take_batch_args(kwargs: dict[str, Any], *names: str) -> list[Any]:
    """Pop ``names`` from a batch's keywords (None if absent); others are an error."""
    values = [kwargs.pop(n, None) for n in names]
    if kwargs:
        raise InvalidInputError(f"unexpected arguments {sorted(kwargs)}")
    return values


def batch_ids(value: Any) -> npt.NDArray[Any] | None:
    """User ids of a batch as an array, or None."""
    return None if value is None else np.asarray(value)


# -- helpers shared by the types ------------------------------------------------------------


def dense_object_ids(
    ids: npt.ArrayLike, what: str = "object_ids"
) -> tuple[IntArray, npt.NDArray[Any], bool]:
    """Map user object ids to dense ids (rank among the sorted distinct ids).

    Returns
    -------
    dense, distinct, is_identity
        Dense id per input row, the sorted distinct user ids, and whether they were already
        exactly ``0..n-1`` (then no ``id`` attribute needs storing).
    """
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise InvalidInputError(f"{what} must be 1-D, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise InvalidInputError(f"{what} must be integers, got dtype {arr.dtype}")
    distinct, dense = np.unique(arr, return_inverse=True)
    identity = bool(distinct.size == 0 or (distinct[0] == 0 and distinct[-1] == distinct.size - 1))
    return dense.astype(np.int64), distinct, identity


def resolve_user_ids(reader: LevelReader, ids: npt.ArrayLike) -> IntArray:
    """Map user object ids to dense ids, with an error naming an unknown id."""
    arr = np.atleast_1d(np.asarray(ids))
    stored = user_ids(reader)
    if stored is None:
        return reader.dense_ids(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(stored, kind="stable")
    ranked = stored[order]
    pos = np.searchsorted(ranked, arr)
    ok = (pos < len(ranked)) & (ranked[np.minimum(pos, len(ranked) - 1)] == arr)
    if not ok.all():
        raise InvalidInputError(f"object id {arr[np.argmax(~ok)]!r} is not in the store")
    return order[pos].astype(np.int64)


def build_query(
    reader: LevelReader,
    *,
    bbox: Any = None,
    object_ids: npt.ArrayLike | None = None,
    group: str | int | None = None,
    attributes: bool | str | Sequence[str] | None = True,
    clip: bool = False,
) -> Query:
    """Validate generic read arguments against a level and build the :class:`Query`."""
    ids = None
    if (object_ids is not None or group is not None) and not reader.has(L.OBJECT_OFFSETS):
        raise InvalidInputError("this store has no objects; object_ids/group do not apply")
    if object_ids is not None:
        ids = resolve_user_ids(reader, object_ids)
    if group is not None:
        table = reader.groups
        if table is None:
            raise InvalidInputError("this store has no groups")
        members = table.members_of(group)
        ids = np.sort(members) if ids is None else ids[np.isin(ids, members)]
    return Query(
        bbox=None if bbox is None else parse_bbox(bbox, reader.layout.ndim),
        object_ids=ids,
        attributes=attribute_selection(visible(reader.names(L.ATTRIBUTES)), attributes),
        clip=clip,
    )


def object_query(
    reader: LevelReader,
    allowed: tuple[str, ...],
    bbox: BBoxLike | None,
    object_ids: npt.ArrayLike | None,
    group: str | int | None,
    attributes: bool | str | Sequence[str],
) -> Query:
    """Validate read arguments for a graph-like store and build the query."""
    if type_spec(reader.meta.geometry_type).family_name not in allowed:
        names = ", ".join(repr(str(a)) for a in allowed)
        raise InvalidInputError(
            f"store holds {str(reader.meta.geometry_type)!r}; this reader needs {names}"
        )
    ids = None
    if object_ids is not None:
        ids = resolve_user_ids(reader, object_ids)
    if group is not None:
        table = reader.groups
        if table is None:
            raise InvalidInputError("this store has no groups")
        members = table.members_of(group)
        ids = sorted_unique(members) if ids is None else ids[np.isin(ids, members)]
    return Query(
        bbox=None if bbox is None else parse_bbox(bbox, reader.layout.ndim),
        object_ids=ids,
        attributes=attribute_selection(visible(reader.names(L.ATTRIBUTES)), attributes),
    )


def write_options(
    geometry_type: str,
    parts: GeometryParts,
    store: StoreKwargs,
    type_metadata: Mapping[str, Any] | None = None,
) -> StoreOptions:
    """Store options of a ``geometry_type`` ``write_*`` call from its ``**store_kwargs``."""
    return resolve_store_options(
        store,
        ndim=parts.positions.shape[1],
        geometry_type=geometry_type,
        type_metadata=type_metadata,
    )


def attribute_selection(
    available: Sequence[str], wanted: bool | str | Sequence[str] | None
) -> tuple[str, ...]:
    """Resolve an ``attributes=`` argument (True/None = all, False = none, names) to names."""
    if wanted is None or wanted is True:
        return tuple(available)
    if wanted is False:
        return ()
    names = (wanted,) if isinstance(wanted, str) else tuple(wanted)
    missing = [n for n in names if n not in available]
    if missing:
        raise InvalidInputError(f"unknown attribute(s) {missing}; available: {list(available)}")
    return names


def decode_columns(cols: Mapping[str, Column]) -> dict[str, npt.NDArray[Any]]:
    """Return plain arrays from columns, categorical codes resolved to strings."""
    out = {}
    for name, col in cols.items():
        try:
            out[name] = col.decoded()
        except CorruptPayloadError as exc:
            raise CorruptPayloadError(f"attribute {name!r}: {exc}") from exc
    return out


DenseIdMap = Callable[[npt.NDArray[Any], str], IntArray]
