"""Resolution levels: add or remove level groups and regenerate ``multiscales`` (FORMAT.md §4).

The seed fixes :func:`write_multiscale_metadata` at this path.
"""

from __future__ import annotations

from typing import Any

import zarr

from zarr_vectors.core.store import (
    list_resolution_levels,
    open_level,
    read_level_metadata,
    read_root_metadata,
)
from zarr_vectors.errors import InvalidInputError, MetadataValidationError, StoreExistsError
from zarr_vectors.spec.layout import level_path
from zarr_vectors.spec.metadata import (
    DatasetMetadata,
    LevelMetadata,
    MultiscaleMetadata,
    check_divides,
    parse_int_tuple,
)

__all__ = [
    "add_resolution_level",
    "build_multiscales",
    "remove_resolution_level",
    "write_multiscale_metadata",
]


def build_multiscales(root: zarr.Group) -> MultiscaleMetadata:
    """Return the ``multiscales`` block that matches the level groups of ``root``."""
    meta = read_root_metadata(root)
    levels = list_resolution_levels(root)
    if 0 not in levels:
        raise MetadataValidationError("the store has no level-0 group")
    datasets = []
    for n in levels:
        lvl = read_level_metadata(root, n)
        datasets.append(
            DatasetMetadata(
                level=n,
                bin_ratio=lvl.bin_ratio,
                bin_shape=meta.bin_shape_for(lvl.bin_ratio),
                object_sparsity=lvl.object_sparsity,
            )
        )
    old = meta.multiscales
    return MultiscaleMetadata(
        axes=old.axes, datasets=tuple(datasets), name=old.name, version=old.version
    )


def write_multiscale_metadata(root: zarr.Group) -> MultiscaleMetadata:
    """Rebuild and store the root ``multiscales`` block from the level groups present.

    Call it after adding or removing a resolution level by hand.  Every other root key is kept.

    Returns
    -------
    MultiscaleMetadata
        The block written.
    """
    ms = build_multiscales(root)
    doc: dict[str, Any] = dict(ms.to_dict())
    root.attrs["multiscales"] = [doc]
    return ms


def add_resolution_level(
    root: zarr.Group,
    level: int,
    bin_ratio: tuple[int, ...] | list[int],
    *,
    object_sparsity: float = 1.0,
) -> zarr.Group:
    """Create an empty level group ``level`` and regenerate ``multiscales``.

    The group is filled by a coarsening call (see :mod:`zarr_vectors.multiscale`).
    """
    meta = read_root_metadata(root)
    ratio = parse_int_tuple(bin_ratio, "bin_ratio", length=meta.spatial_dims, minimum=1)
    if level < 1:
        raise InvalidInputError("level 0 is written by write_*; added levels start at 1")
    levels = list_resolution_levels(root)
    if level in levels:
        raise StoreExistsError(f"level {level} already exists")
    check_divides(meta.chunk_shape, meta.bin_shape_for(ratio), "bin_ratio bin shape")
    for other in levels:  # seed rule 7: ratios never decrease with the level number
        theirs = read_level_metadata(root, other).bin_ratio
        lower, higher = (theirs, ratio) if other < level else (ratio, theirs)
        if any(h < lo for lo, h in zip(lower, higher, strict=True)):
            raise MetadataValidationError(
                f"bin_ratio {list(ratio)} for level {level} is not monotone with level {other} "
                f"({list(theirs)}); ratios must not decrease as levels grow"
            )
    lvl = LevelMetadata(
        level=level,
        bin_ratio=ratio,
        bin_shape=meta.bin_shape_for(ratio),
        object_sparsity=object_sparsity,
    )
    group = root.create_group(level_path(level), attributes=lvl.to_dict())
    write_multiscale_metadata(root)
    return group


def remove_resolution_level(root: zarr.Group, level: int) -> None:
    """Delete level group ``level`` (> 0) and regenerate ``multiscales``."""
    if level == 0:
        raise InvalidInputError("level 0 holds the full-resolution data and cannot be removed")
    open_level(root, level)
    del root[level_path(level)]
    write_multiscale_metadata(root)
