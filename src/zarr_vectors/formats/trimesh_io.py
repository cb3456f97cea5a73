"""``trimesh.Trimesh`` <-> :class:`~zarr_vectors.types.meshes.Meshes` (FORMAT.md §7 ``mesh``).

The only module that imports trimesh (the optional ``formats`` extra); without it every
function raises :class:`~zarr_vectors.errors.MissingDependencyError`.  Anything trimesh reads
(PLY, OBJ, STL, GLB, OFF, ...) therefore reaches a store as ``write_trimesh(store,
trimesh.load(path))``.

Mapping: vertices and faces as they are; numeric ``vertex_attributes`` and ``face_attributes``
with identifier names become per-vertex and per-face attributes (others are skipped with a
warning); per-vertex colours become the ``color`` attribute ((N, 4) uint8).  A single
``Trimesh`` is split into connected surfaces (one object each), a list gives one object per
mesh.  Vertices come back grouped by object, so a mesh whose surfaces interleave their vertices
is returned in a different (but consistent) vertex order.  Stores written with
``winding_order="cw"`` are flipped to trimesh's counter-clockwise convention.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, MissingDependencyError, ZVUserWarning
from zarr_vectors.spec.conventions import WindingOrder
from zarr_vectors.types.meshes import Mesh, Meshes, as_meshes, read_meshes, write_meshes

try:
    import trimesh

    HAVE_TRIMESH = True
except ImportError:  # the optional ``formats`` extra is not installed
    HAVE_TRIMESH = False

__all__ = [
    "HAVE_TRIMESH",
    "from_trimesh",
    "load_trimesh",
    "read_trimesh",
    "to_trimesh",
    "write_trimesh",
]

COLOR = "color"
"""Attribute name of per-vertex RGBA colours ((N, 4) uint8)."""


def _require() -> None:
    if not HAVE_TRIMESH:
        raise MissingDependencyError(
            "trimesh interop needs the optional trimesh package: pip install "
            "'zarr-vectors[formats]'"
        )


def _numeric(values: Mapping[str, Any], n: int, what: str) -> dict[str, npt.NDArray[Any]]:
    """Attributes a store can hold: identifier names, numeric/bool arrays of ``n`` rows."""
    out: dict[str, npt.NDArray[Any]] = {}
    for name, raw in values.items():
        arr = np.asarray(raw)
        if (
            isinstance(name, str)
            and name.isidentifier()
            and name != COLOR
            and arr.dtype.kind in "biuf"
            and 1 <= arr.ndim <= 2
            and len(arr) == n
        ):
            out[name] = arr
        else:
            warnings.warn(
                f"{what} {name!r} is skipped: stores hold numeric arrays of {n} rows "
                "with identifier names",
                ZVUserWarning,
                stacklevel=4,
            )
    return out


def _mesh_attributes(mesh: trimesh.Trimesh) -> tuple[dict[str, Any], dict[str, Any]]:
    verts = _numeric(mesh.vertex_attributes, len(mesh.vertices), "vertex attribute")
    visual = mesh.visual
    if isinstance(visual, trimesh.visual.ColorVisuals) and visual.kind == "vertex":
        verts[COLOR] = np.asarray(visual.vertex_colors, dtype=np.uint8)
    return verts, _numeric(mesh.face_attributes, len(mesh.faces), "face attribute")


def from_trimesh(
    meshes: trimesh.Trimesh | Sequence[trimesh.Trimesh], *, attributes: bool = True
) -> Meshes:
    """Convert trimesh meshes to an in-memory :class:`Meshes`.

    Parameters
    ----------
    meshes
        One mesh (split into connected surfaces, one object each) or a list (one object per
        mesh).
    attributes
        Carry numeric vertex/face attributes and vertex colours; with a list, only the names
        every mesh has.

    Returns
    -------
    Meshes
        What :func:`~zarr_vectors.types.meshes.read_meshes` returns after writing it.

    Raises
    ------
    MissingDependencyError
        trimesh is not installed.

    Examples
    --------
    >>> import pytest
    >>> trimesh = pytest.importorskip("trimesh")  # the optional ``formats`` extra
    >>> two = trimesh.util.concatenate([trimesh.creation.box(), trimesh.creation.icosahedron()])
    >>> m = from_trimesh(two)
    >>> len(m), len(m[0].faces), len(m[1].faces)
    (2, 12, 20)
    """
    return as_meshes(**_mesh_arguments(meshes, attributes))


def _mesh_arguments(
    meshes: trimesh.Trimesh | Sequence[trimesh.Trimesh], attributes: bool
) -> dict[str, Any]:
    """Keyword arguments of ``as_meshes``/``write_meshes`` (data, attributes) for trimesh meshes."""
    _require()
    single = isinstance(meshes, trimesh.Trimesh)
    items: list[trimesh.Trimesh] = [meshes] if isinstance(meshes, trimesh.Trimesh) else list(meshes)
    per_mesh = [_mesh_attributes(m) if attributes else ({}, {}) for m in items]
    v_names = set.intersection(*(set(v) for v, _ in per_mesh)) if items else set()
    f_names = set.intersection(*(set(f) for _, f in per_mesh)) if items else set()
    if single:
        return {
            "vertices": items[0].vertices,
            "faces": items[0].faces,
            "attributes": {k: per_mesh[0][0][k] for k in sorted(v_names)},
            "face_attributes": {k: per_mesh[0][1][k] for k in sorted(f_names)},
        }
    return {
        "vertices": [(m.vertices, m.faces) for m in items],
        "attributes": {k: [v[k] for v, _ in per_mesh] for k in sorted(v_names)},
        "face_attributes": {k: [f[k] for _, f in per_mesh] for k in sorted(f_names)},
    }


def to_trimesh(result: Meshes | Mesh, *, process: bool = False) -> trimesh.Trimesh:
    """Convert a read result (all objects, or one :class:`Mesh`) to one ``trimesh.Trimesh``.

    Faces keep their vertex order except for ``winding_order="cw"`` stores, which are flipped
    to trimesh's counter-clockwise convention.  ``process=True`` lets trimesh merge duplicate
    vertices (vertex order then changes).

    Examples
    --------
    >>> import pytest
    >>> trimesh = pytest.importorskip("trimesh")  # the optional ``formats`` extra
    >>> from zarr.storage import MemoryStore
    >>> store = MemoryStore()
    >>> _ = write_trimesh(store, trimesh.creation.box(), chunk_shape=(0.5, 0.5, 0.5))
    >>> tm = to_trimesh(read_meshes(store))
    >>> len(tm.vertices), len(tm.faces), bool(tm.is_watertight)
    (8, 12, True)
    """
    _require()
    if result.vertices.shape[1] != 3:
        raise InvalidInputError(f"trimesh needs 3-D vertices, got D={result.vertices.shape[1]}")
    faces = np.asarray(result.faces)
    if result.winding_order is WindingOrder.CW:
        faces = faces[:, ::-1]
    attrs = dict(result.attributes)
    colors = attrs.pop(COLOR, None)
    return trimesh.Trimesh(
        vertices=np.asarray(result.vertices, dtype=np.float64),
        faces=faces,
        vertex_attributes={k: np.asarray(v) for k, v in attrs.items()},
        face_attributes={k: np.asarray(v) for k, v in result.face_attributes.items()},
        vertex_colors=colors,
        process=process,
    )


def write_trimesh(
    store: StoreLike,
    meshes: trimesh.Trimesh | Sequence[trimesh.Trimesh],
    *,
    attributes: bool = True,
    **kwargs: Any,
) -> WriteSummary:
    """Write trimesh meshes to a new ``mesh`` store (see :func:`from_trimesh`).

    Every other keyword (``chunk_shape``, ``encoding``, ``keep_order``, ...) goes to
    :func:`~zarr_vectors.types.meshes.write_meshes`; with ``keep_order=True`` the vertex and
    face order of the meshes (concatenated, for a list) is stored.
    """
    return write_meshes(store, **_mesh_arguments(meshes, attributes), **kwargs)


def load_trimesh(path: str, *, merge: bool = False) -> trimesh.Trimesh:
    """Read a mesh file (any format trimesh reads) as one ``trimesh.Trimesh``.

    ``merge`` merges coincident vertices (for formats such as STL that repeat them per
    triangle); otherwise vertices keep their file order.

    Raises
    ------
    InvalidInputError
        The file holds no triangle mesh, or no triangles (points or lines only: converting
        it would store nothing).
    """
    _require()
    mesh = trimesh.load(path, force="mesh", process=merge)
    if not isinstance(mesh, trimesh.Trimesh) or mesh.faces.shape[1:] != (3,):
        raise InvalidInputError("the file holds no triangle mesh")
    if not len(mesh.faces):
        raise InvalidInputError("the file holds no triangle faces (points or lines only)")
    return mesh


def read_trimesh(store: StoreLike, **kwargs: Any) -> trimesh.Trimesh:
    """Read a ``mesh`` store (or part of it) as one ``trimesh.Trimesh``.

    Keywords go to :func:`~zarr_vectors.types.meshes.read_meshes` (``order="input"`` gives
    the vertex and face order of a store written with ``keep_order=True``).
    """
    _require()
    return to_trimesh(read_meshes(store, **kwargs))
