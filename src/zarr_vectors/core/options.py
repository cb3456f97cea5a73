"""Store options: the keywords every writer takes (:class:`StoreKwargs`) and their checked form.

Every ``write_*`` function, :func:`~zarr_vectors.open_writer` and
:func:`~zarr_vectors.write_distributed` takes the same store keywords as
``**store: Unpack[StoreKwargs]``; they are documented once, in :class:`StoreKwargs`.
:meth:`StoreOptions.from_kwargs` checks them (an unknown or mistyped keyword raises
:class:`~zarr_vectors.errors.InvalidInputError` naming it) into one frozen
:class:`StoreOptions`, which a caller may also build once and pass as ``options=``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict

import numpy as np
from typing_extensions import Unpack

from zarr_vectors.core.draco import DracoSettings
from zarr_vectors.core.payload.compression import (
    DEFAULT_FRAME_BYTES,
    PATH_FRAME_BYTES,
    TREE_FRAME_BYTES,
    CompressorSpec,
    check_compressor,
)
from zarr_vectors.core.reader import BBoxLike, parse_bbox
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.spec.conventions import FramePolicy, ParamEnum
from zarr_vectors.spec.jsonvalue import parse_json_object
from zarr_vectors.spec.metadata import (
    Axis,
    BoundingBox,
    parse_axis_units,
    parse_float_tuple,
    parse_int_tuple,
)
from zarr_vectors.spec.typespec import type_spec

__all__ = [
    "STORE_KEYWORDS",
    "FrameBytes",
    "StoreKwargs",
    "StoreOptions",
    "chunk_ndim",
    "default_frame_bytes",
    "frame_bytes_option",
    "make_axes",
    "resolve_store_options",
]


class FrameBytes(ParamEnum):
    """Named choices of ``frame_bytes=`` (besides an integer or None)."""

    AUTO = "auto"
    """The geometry type's default (:func:`default_frame_bytes`)."""


class StoreKwargs(TypedDict, total=False):
    """Store keywords of every writer (``write_*``, ``open_writer``, ``write_distributed``).

    This is the one place they are documented; each writer's docstring refers here.
    ``chunk_shape`` is required unless ``options`` is given; ``options`` and the other
    keywords exclude each other.  An unknown keyword or a value of the wrong type raises
    :class:`~zarr_vectors.errors.InvalidInputError` naming it.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> kw: zv.StoreKwargs = {"chunk_shape": (10, 10), "compressor": "zstd"}
    >>> zv.write_points(MemoryStore(), np.zeros((3, 2)), **kw).chunk_count
    1
    >>> zv.write_points(MemoryStore(), np.zeros((3, 2)), chunk_shap=(10, 10))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: unknown store keyword 'chunk_shap' (did you mean ...
    """

    chunk_shape: Sequence[float]
    """Chunk extent per axis, in the positions' physical units (required)."""
    bin_shape: Sequence[float] | None
    """Level-0 bin extent per axis, physical units; must divide ``chunk_shape``
    (default: ``chunk_shape``, one bin per chunk)."""
    bounds: BBoxLike | None
    """Extent ``(min, max)`` the chunk grid must cover, physical units (default: the data's
    extent)."""
    zarr_format: Literal[2, 3]
    """Zarr format of the store: 3 (default) or 2."""
    overwrite: bool
    """Replace existing data at the location (default False: existing data raises
    :class:`~zarr_vectors.errors.StoreExistsError`)."""
    compressor: CompressorSpec
    """``"default"``/``"lz4"`` (payload arrays and the object index Blosc-LZ4 with byte
    shuffle in ``frame_bytes`` blocks, other dense arrays zstd), ``"zstd"`` (zstd level 3, one
    frame per chunk), ``"none"`` or None (no compression), a
    :class:`~zarr_vectors.spec.conventions.Compression` member, one codec for every array,
    or a mapping from array path (e.g. ``"vertices"``, ``"attributes/intensity"``; ``"*"`` for
    the rest) to any of these."""
    shards: Sequence[int] | None
    """Chunks per shard of payload arrays along each axis (Zarr v3 sharding codec), or None."""
    frame_bytes: int | FrameBytes | Literal["auto"] | None
    """Decoded bytes (>= 64) per Blosc block of ``"lz4"`` payloads, so that reading one
    object decodes only the blocks holding its rows; None for c-blosc's own block size;
    ``"auto"`` (default): 1024 for polylines and streamlines (box reads gather short runs
    of many paths), 4096 for lines, graphs and meshes, 65536 for skeletons (read whole tree
    by tree), None for point clouds."""
    storage_options: Mapping[str, Any] | None
    """fsspec options of a URL store (``s3://...``)."""
    coordinate_system: str
    """Informational coordinate-system name (root metadata; default ``"unknown"``)."""
    axis_units: str | Sequence[str] | None
    """Unit of every axis, or one unit per axis (root metadata)."""
    axis_names: Sequence[str] | None
    """One name per axis (default x, y, z, t; ``"t"`` is a time axis)."""
    source_description: str | None
    """Free-text origin of the data (root metadata)."""
    notes: str | None
    """Free-text notes (root metadata)."""
    custom_metadata: Mapping[str, Any] | None
    """Application metadata, a JSON object stored verbatim."""
    options: StoreOptions
    """All of the above at once, as built by :meth:`StoreOptions.from_kwargs`; refused
    together with any other store keyword."""


STORE_KEYWORDS = frozenset(StoreKwargs.__optional_keys__ | StoreKwargs.__required_keys__)
"""Names of the store keywords (those of :class:`StoreKwargs`)."""


@dataclass(frozen=True, kw_only=True)
class StoreOptions:
    """Checked store options: the :class:`StoreKwargs` keywords after validation.

    Build it with :meth:`from_kwargs` (which checks every value) and pass it to a writer as
    ``options=``; the fields hold the keywords' normalised values (tuples, a
    :class:`~zarr_vectors.spec.metadata.BoundingBox`, :class:`~zarr_vectors.spec.metadata.Axis`
    descriptions for ``axis_names``).  Writers also fill :attr:`type_metadata` and
    :attr:`draco` from their own arguments.

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> opts = zv.StoreOptions.from_kwargs(chunk_shape=(10, 10), compressor="zstd")
    >>> opts.chunk_shape, opts.frame_bytes
    ((10.0, 10.0), <FrameBytes.AUTO: 'auto'>)
    >>> zv.write_points(MemoryStore(), np.zeros((3, 2)), options=opts).vertex_count
    3
    """

    chunk_shape: tuple[float, ...]
    """See :class:`StoreKwargs`."""
    bin_shape: tuple[float, ...] | None = None
    """See :class:`StoreKwargs`."""
    bounds: BoundingBox | None = None
    """See :class:`StoreKwargs`."""
    zarr_format: Literal[2, 3] = 3
    """See :class:`StoreKwargs`."""
    overwrite: bool = False
    """See :class:`StoreKwargs`."""
    compressor: CompressorSpec = "default"
    """See :class:`StoreKwargs`."""
    shards: tuple[int, ...] | None = None
    """See :class:`StoreKwargs`."""
    frame_bytes: int | FrameBytes | None = FrameBytes.AUTO
    """See :class:`StoreKwargs`; :meth:`resolve` replaces ``AUTO`` with the type's size."""
    storage_options: Mapping[str, Any] | None = None
    """See :class:`StoreKwargs`."""
    coordinate_system: str = "unknown"
    """See :class:`StoreKwargs`."""
    axis_units: str | tuple[str, ...] | None = None
    """See :class:`StoreKwargs`."""
    axes: tuple[Axis, ...] | None = None
    """Axis descriptions from ``axis_names`` and ``axis_units`` (None: the default names)."""
    source_description: str | None = None
    """See :class:`StoreKwargs`."""
    notes: str | None = None
    """See :class:`StoreKwargs`."""
    custom_metadata: Mapping[str, Any] | None = None
    """See :class:`StoreKwargs`."""
    type_metadata: Mapping[str, Any] = field(default_factory=dict)
    """Type-specific root keys (streamline ``step_size``, graph ``is_directed`` ...), set by
    the writer."""
    draco: DracoSettings | None = None
    """Draco-encode the ``vertices`` payloads (lossy, row order kept; FORMAT.md §9), set by
    ``write_meshes(encoding="draco")``."""

    @classmethod
    def from_kwargs(cls, **kwargs: Unpack[StoreKwargs]) -> StoreOptions:
        """Check store keywords (those of :class:`StoreKwargs`, but ``options``).

        Raises
        ------
        InvalidInputError
            An unknown keyword (naming it and the nearest known one), a value of the wrong
            type (naming the keyword), or no ``chunk_shape``.
        """
        return parse_store_kwargs(kwargs)

    def frame_size(self) -> int | None:
        """Return :attr:`frame_bytes` of resolved options (``AUTO`` is an error here)."""
        if isinstance(self.frame_bytes, FrameBytes):
            raise InvalidInputError("frame_bytes='auto' needs the geometry type: resolve() first")
        return self.frame_bytes

    def resolve(
        self,
        ndim: int,
        geometry_type: str,
        type_metadata: Mapping[str, Any] | None = None,
    ) -> StoreOptions:
        """Return these options for a ``geometry_type`` store of ``ndim`` axes.

        ``frame_bytes="auto"`` becomes the type's size; ``type_metadata`` is added to
        :attr:`type_metadata` (None values dropped); per-axis options must have ``ndim``
        entries.
        """
        if self.bounds is not None:
            parse_bbox(self.bounds, ndim)
        if isinstance(self.axis_units, tuple):
            parse_axis_units(self.axis_units, ndim)
        if self.axes is not None and len(self.axes) != ndim:
            raise InvalidInputError(f"axis_names has {len(self.axes)} names, expected {ndim}")
        frame = self.frame_bytes
        if isinstance(frame, FrameBytes):
            frame = default_frame_bytes(geometry_type)
        keys = {**self.type_metadata, **(type_metadata or {})}
        return replace(
            self,
            frame_bytes=frame,
            type_metadata={k: v for k, v in keys.items() if v is not None},
        )


def resolve_store_options(
    store: Mapping[str, Any],
    *,
    ndim: int,
    geometry_type: str,
    type_metadata: Mapping[str, Any] | None = None,
) -> StoreOptions:
    """Options of a writer call from its ``**store`` keywords (or its ``options=``).

    ``ndim`` is the data's number of axes (``bounds``, ``axis_units`` and ``axis_names`` are
    checked against it).

    Raises
    ------
    InvalidInputError
        ``options`` together with other store keywords, an unknown or mistyped keyword, or
        neither ``chunk_shape`` nor ``options``.
    """
    opts = _given_options(store)
    if opts is None:
        opts = parse_store_kwargs(store, ndim=ndim)
    return opts.resolve(ndim, geometry_type, type_metadata)


def chunk_ndim(store: Mapping[str, Any]) -> int:
    """Axis count of store keywords: the length of ``chunk_shape`` (or of ``options``').

    Streaming writers learn the axis count from it before any batch arrives.
    """
    opts = _given_options(store)
    if opts is not None:
        return len(opts.chunk_shape)
    _refuse_unknown(store)
    if "chunk_shape" not in store:
        raise InvalidInputError("chunk_shape is required (chunk extent per axis)")
    return len(parse_float_tuple(store["chunk_shape"], "chunk_shape", positive=True))


def _given_options(store: Mapping[str, Any]) -> StoreOptions | None:
    """Return the ``options=`` of store keywords (refused beside others or of another type)."""
    if "options" not in store:
        return None
    given = store["options"]
    if not isinstance(given, StoreOptions):
        raise InvalidInputError(f"options must be a StoreOptions, got {type(given).__name__}")
    if len(store) > 1:
        others = sorted(k for k in store if k != "options")
        raise InvalidInputError(
            f"options= and the store keywords {others} were both given: pass one or the other "
            "(e.g. dataclasses.replace(options, ...))"
        )
    return given


def parse_store_kwargs(kw: Mapping[str, Any], *, ndim: int | None = None) -> StoreOptions:
    """Check the store keywords ``kw`` and return them as :class:`StoreOptions`.

    ``ndim`` (default: the length of ``chunk_shape``) is the axis count ``bounds``,
    ``axis_units`` and ``axis_names`` must match.
    """
    _refuse_unknown(kw)
    if "chunk_shape" not in kw:
        raise InvalidInputError("chunk_shape is required (chunk extent per axis)")
    chunk = parse_float_tuple(kw["chunk_shape"], "chunk_shape", positive=True)
    d = len(chunk) if ndim is None else ndim
    zarr_format = _zarr_format(kw.get("zarr_format", 3))
    bins, bounds, shards = kw.get("bin_shape"), kw.get("bounds"), kw.get("shards")
    units, custom = kw.get("axis_units"), kw.get("custom_metadata")
    return StoreOptions(
        chunk_shape=chunk,
        bin_shape=None if bins is None else parse_float_tuple(bins, "bin_shape", positive=True),
        bounds=None if bounds is None else parse_bbox(bounds, d),
        zarr_format=zarr_format,
        overwrite=_flag(kw.get("overwrite", False), "overwrite"),
        compressor=check_compressor(kw.get("compressor", "default"), zarr_format),
        shards=None if shards is None else parse_int_tuple(shards, "shards", minimum=1),
        frame_bytes=_frame_bytes(kw.get("frame_bytes", FrameBytes.AUTO)),
        storage_options=_mapping(kw.get("storage_options"), "storage_options"),
        coordinate_system=_text(kw.get("coordinate_system", "unknown"), "coordinate_system"),
        axis_units=parse_axis_units(units, d),
        axes=make_axes(kw.get("axis_names"), units, d),
        source_description=_text(kw.get("source_description"), "source_description", True),
        notes=_text(kw.get("notes"), "notes", True),
        custom_metadata=None if custom is None else parse_json_object(custom, "custom_metadata"),
    )


def _refuse_unknown(kw: Mapping[str, Any]) -> None:
    if "options" in kw:
        raise InvalidInputError("options= is already a StoreOptions: pass it to the writer")
    for name in kw:
        if name not in STORE_KEYWORDS:
            near = difflib.get_close_matches(str(name), sorted(STORE_KEYWORDS), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise InvalidInputError(f"unknown store keyword {name!r}{hint}")


def _zarr_format(value: Any) -> Literal[2, 3]:
    if isinstance(value, bool) or value not in (2, 3):
        raise InvalidInputError(f"zarr_format must be 2 or 3, got {value!r}")
    return 2 if value == 2 else 3


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _mapping(value: Any, name: str) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping, got {type(value).__name__}")
    return value


def _text(value: Any, name: str, optional: bool = False) -> Any:
    if not isinstance(value, str) and not (optional and value is None):
        raise InvalidInputError(f"{name} must be a string, got {value!r}")
    return value


def default_frame_bytes(geometry_type: str) -> int | None:
    """Default seekable-block size: blocked payloads for object types, whole for point clouds.

    Reading one object of a line, graph or mesh store then decodes a few 4 KiB blocks per
    chunk instead of whole chunks; polylines and streamlines, whose box reads gather short
    runs of many paths, use 1 KiB blocks; skeletons, read whole tree by tree, use 64 KiB
    blocks; point clouds keep one block per chunk (better compression of quantised
    coordinates, and box queries read whole chunks anyway).
    """
    policy = type_spec(geometry_type).frame_policy
    if policy is FramePolicy.WHOLE_CHUNK:
        return None
    sizes = {FramePolicy.TREE: TREE_FRAME_BYTES, FramePolicy.PATH: PATH_FRAME_BYTES}
    return sizes.get(policy, DEFAULT_FRAME_BYTES)


def frame_bytes_option(value: Any, geometry_type: str) -> int | None:
    """Resolve a ``frame_bytes=`` value (int >= 64, None or ``"auto"``) for ``geometry_type``."""
    frame = _frame_bytes(value)
    return default_frame_bytes(geometry_type) if isinstance(frame, FrameBytes) else frame


def _frame_bytes(value: Any) -> int | FrameBytes | None:
    if isinstance(value, str) and value == FrameBytes.AUTO:
        return FrameBytes.AUTO
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 64:
        raise InvalidInputError(
            f"frame_bytes must be an integer >= 64, None or 'auto', got {value!r}"
        )
    return int(value)


def make_axes(
    names: Sequence[str] | None, units: str | Sequence[str] | None, d: int
) -> tuple[Axis, ...] | None:
    """Axis descriptions from user axis names and units (None: the default names)."""
    if names is None:
        return None
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InvalidInputError(f"axis_names must be a list of strings, got {names!r}")
    if len(names) != d:
        raise InvalidInputError(f"axis_names has {len(names)} names, expected {d}")
    per = [units] * d if units is None or isinstance(units, str) else list(units)
    return tuple(
        Axis(name=n, type="time" if n == "t" else "space", unit=u)
        for n, u in zip(names, per, strict=True)
    )
