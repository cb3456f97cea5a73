"""The registry of checks per validation level (FORMAT.md §11).

Level N of :func:`~zarr_vectors.validate.validate` runs the checks of levels 1..N in order.  A
check is a function ``(ValidationContext) -> None`` that emits findings and never raises for
anything it reads from the store.  Levels 3 (consistency), 4 (geometry) and 5 (pyramid) are
implemented in ``_objectindex`` and ``_consistency``, ``_geometry`` and ``_pyramid``; they read
payloads through
:mod:`zarr_vectors.core` in bounded batches (``_levelview``).  Every id is listed in
``docs/validation.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from zarr_vectors.validate._arrays import (
    check_array_attr_values,
    check_array_properties,
    check_level_nodes,
)
from zarr_vectors.validate._consistency import check_chunks, check_level_counts
from zarr_vectors.validate._context import ValidationContext
from zarr_vectors.validate._dense import check_dense_chunks
from zarr_vectors.validate._geometry import check_link_geometry, check_path_continuity
from zarr_vectors.validate._leftovers import check_leftovers
from zarr_vectors.validate._levels import check_attribute_names, check_datasets, check_level_attrs
from zarr_vectors.validate._metadata import (
    check_multiscales_block,
    check_root_extras,
    check_seed_rules,
)
from zarr_vectors.validate._objectindex import check_object_index
from zarr_vectors.validate._pyramid import check_pyramid
from zarr_vectors.validate._segments import check_segments
from zarr_vectors.validate._statistics import check_statistics
from zarr_vectors.validate._structure import (
    check_documents,
    check_format_mixing,
    check_level_groups,
    check_root_group,
    check_root_keys,
)

__all__ = ["CHECKS", "LEVEL_NAMES", "MAX_LEVEL", "Check"]

Check = Callable[[ValidationContext], None]
"""A check: reads the context, appends findings."""

LEVEL_NAMES: Mapping[int, str] = MappingProxyType(
    {1: "structure", 2: "metadata", 3: "consistency", 4: "geometry", 5: "pyramid"}
)
"""What each validation level covers."""

MAX_LEVEL = max(LEVEL_NAMES)

CHECKS: Mapping[int, tuple[Check, ...]] = MappingProxyType(
    {
        1: (
            check_documents,
            check_root_group,
            check_format_mixing,
            check_root_keys,
            check_level_groups,
            check_level_nodes,
            check_segments,
            check_array_properties,
            check_leftovers,
        ),
        2: (
            check_seed_rules,
            check_root_extras,
            check_multiscales_block,
            check_datasets,
            check_level_attrs,
            check_array_attr_values,
            check_attribute_names,
            check_dense_chunks,
        ),
        3: (check_object_index, check_chunks, check_level_counts, check_statistics),
        4: (check_link_geometry, check_path_continuity),
        5: (check_pyramid,),
    }
)
"""Checks of each level, run in this order."""
