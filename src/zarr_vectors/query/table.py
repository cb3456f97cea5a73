"""Any typed read result as a flat vertex table (what ``--out`` writes and records group)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["vertex_owners", "vertex_table"]


def vertex_owners(result: Any) -> tuple[npt.NDArray[Any], npt.NDArray[Any] | None, dict[str, Any]]:
    """Flat (N, D) positions, object id per vertex (None without objects), vertex attributes.

    Works for every result type: ``Points``, ``Lines`` (endpoints flattened), ``Polylines``,
    ``Skeletons`` (ids repeated per vertex), ``Graph`` and ``Meshes``.
    """
    if hasattr(result, "endpoints"):  # Lines: (m, 2, D)
        m = len(result.endpoints)
        attrs = {k: v.reshape(2 * m, *v.shape[2:]) for k, v in result.attributes.items()}
        pos = result.endpoints.reshape(2 * m, result.endpoints.shape[-1])
        return pos, np.repeat(result.object_ids, 2), attrs
    pos = result.vertices if hasattr(result, "vertices") else result.positions
    if hasattr(result, "vertex_object_ids"):  # Points, Graph, Meshes
        return pos, result.vertex_object_ids, dict(result.attributes)
    owner = np.repeat(result.object_ids, np.diff(result.offsets))  # paths, skeletons
    return pos, owner, dict(result.attributes)


def vertex_table(result: Any, axis_names: tuple[str, ...]) -> dict[str, npt.NDArray[Any]]:
    """Columns of a vertex table: axes, attributes (``name_i`` per extra column), object_id."""
    pos, owner, attrs = vertex_owners(result)
    out: dict[str, npt.NDArray[Any]] = {a: pos[:, d] for d, a in enumerate(axis_names)}
    for name, values in attrs.items():
        if values.ndim == 1:
            out[name] = values
        else:
            flat = values.reshape(len(values), -1)
            out.update({f"{name}_{i}": flat[:, i] for i in range(flat.shape[1])})
    if owner is not None:
        out["object_id"] = np.asarray(owner)
    return out
