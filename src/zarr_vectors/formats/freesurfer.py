"""FreeSurfer surfaces (``lh.white``, ``rh.pial``, ..., through nibabel) <-> ``mesh`` stores.

A FreeSurfer surface is a binary triangle file: a creation stamp line, vertices (float32),
faces (int32) and an optional volume-info footer (the volume the surface was made from).
Morphometry files (``lh.curv``, ``lh.thickness``, ``lh.sulc``, ``lh.area``, ...) hold one
float32 value per vertex, annotations (``lh.aparc.annot``) one label per vertex with a colour
table; pass them as ``vertex_data``.

Mapping: vertices and faces keep their file order (:mod:`zarr_vectors.formats._surface`);
each morphometry file becomes a float32 per-vertex attribute named after its suffix
(``thickness``), each annotation a categorical attribute of label names (``aparc``; vertices
without a label get the ``unknown`` category, recorded as missing), its colour table kept.  The creation stamp, volume info and the morphometry file names go to
``custom_metadata["freesurfer"]``, so :func:`store_to_freesurfer` writes the surface back byte
for byte and the morphometry files beside it (``<hemi>.<suffix>``, hemi being the output
file's name up to its first dot).  Quadrilateral surfaces are read as the triangles nibabel
splits them into and written back as triangles.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from nibabel.freesurfer import io as fsio

from zarr_vectors.core.columns import Column
from zarr_vectors.core.store import StoreLike
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats._common import begin, section
from zarr_vectors.formats._surface import SurfaceSource, read_surface
from zarr_vectors.formats.registry import (
    PathLike,
    Progress,
    identifier,
)

__all__ = ["SURFACE_SUFFIXES", "FreeSurferSource", "open_freesurfer", "store_to_freesurfer"]

KEY = "freesurfer"
"""``custom_metadata`` key of the FreeSurfer header."""
SURFACE_SUFFIXES = (
    ".white",
    ".pial",
    ".inflated",
    ".sphere",
    ".orig",
    ".smoothwm",
    ".midthickness",
    ".reg",
)
"""File suffixes of FreeSurfer surfaces (``lh.white``, ``rh.sphere.reg``)."""
_INT_KEYS = ("head", "volume")
_FLOAT_KEYS = ("voxelsize", "xras", "yras", "zras", "cras")


def _volume_info_json(info: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in info.items():
        out[key] = value if isinstance(value, str) else np.asarray(value).tolist()
    return out


def _volume_info_nib(info: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key in _INT_KEYS:
            out[key] = np.asarray(value, dtype=np.int64)
        elif key in _FLOAT_KEYS:
            out[key] = np.asarray(value, dtype=np.float64)
        else:
            out[key] = value
    return out


def _read_geometry(path: Path) -> tuple[npt.NDArray[Any], npt.NDArray[Any], dict[str, Any], str]:
    try:
        with warnings.catch_warnings():
            # nibabel warns for a surface without volume info, which is optional
            warnings.filterwarnings("ignore", message="Unknown extension code")
            warnings.filterwarnings("ignore", message="No volume information")
            coords, faces, info, stamp = fsio.read_geometry(
                str(path), read_metadata=True, read_stamp=True
            )
    except Exception as exc:  # nibabel raises ValueError, struct.error, ... on a bad file
        raise InvalidInputError(f"{path.name}: not a readable FreeSurfer surface ({exc})") from exc
    return coords, faces, dict(info), str(stamp)


def _read_morph(path: Path, n: int) -> npt.NDArray[np.float32]:
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        values = np.asarray(fsio.read_morph_data(str(path)))
    except Exception as exc:
        raise InvalidInputError(f"{path.name}: not a FreeSurfer morphometry file ({exc})") from exc
    if values.shape != (n,):
        raise InvalidInputError(
            f"{path.name}: {values.shape[0]} values; the surface has {n} vertices"
        )
    return values.astype(np.float32, copy=False)


def _read_annot(path: Path, n: int) -> tuple[Column, dict[str, Any]]:
    """Read an annotation as a categorical column (label names) and what writes it back."""
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        labels, ctab, names = fsio.read_annot(str(path))
    except Exception as exc:  # nibabel raises bare Exception for a missing colour table
        raise InvalidInputError(f"{path.name}: not a FreeSurfer annotation ({exc})") from exc
    if labels.shape != (n,):
        raise InvalidInputError(
            f"{path.name}: {labels.shape[0]} labels; the surface has {n} vertices"
        )
    cats = [b.decode() if isinstance(b, bytes) else str(b) for b in names]
    entry: dict[str, Any] = {"kind": "annot", "ctab": np.asarray(ctab).tolist(), "names": cats}
    codes = np.asarray(labels, dtype=np.int64)
    if (codes < 0).any():
        label = "unknown"
        while label in cats:
            label = f"<{label}>"
        entry["missing_label"] = label
        codes = np.where(codes < 0, len(cats), codes)
        cats = [*cats, label]
    return Column(codes.astype(np.int32), tuple(cats)), entry


def _write_annot(path: Path, values: npt.NDArray[Any], entry: Mapping[str, Any]) -> None:
    names = list(entry["names"])
    lookup = {c: i for i, c in enumerate(names)}
    missing = entry.get("missing_label")
    labels = np.asarray([-1 if v == missing else lookup[str(v)] for v in values.tolist()])
    ctab = np.asarray(entry["ctab"], dtype=np.int32)
    fsio.write_annot(str(path), labels, ctab, [c.encode() for c in names], fill_ctab=False)


class FreeSurferSource(SurfaceSource):
    """A FreeSurfer surface (and its morphometry files) opened for conversion."""

    label = "FreeSurfer surface"
    key = KEY

    def __init__(self, path: PathLike, vertex_data: Sequence[PathLike] = ()) -> None:
        super().__init__(path)
        coords, faces, info, stamp = _read_geometry(self.path)
        # the stored coordinates are float32: keep that dtype, not nibabel's float64 copy
        self.vertices = np.asarray(coords, dtype=np.float32)
        self.faces = np.asarray(faces)
        self.attributes: dict[str, Any] = {}
        morph: list[dict[str, str]] = []
        taken: set[str] = set()
        for extra in vertex_data:
            p = Path(extra)
            suffix = p.name.split(".", 1)[1] if "." in p.name else p.name
            if p.suffix.lower() == ".annot":
                name = identifier(suffix[: -len(".annot")] or "annot", taken)
                self.attributes[name], entry = _read_annot(p, len(self.vertices))
                morph.append({"attribute": name, "suffix": suffix, "file": p.name, **entry})
                continue
            name = identifier(suffix, taken)
            self.attributes[name] = _read_morph(p, len(self.vertices))
            morph.append({"attribute": name, "suffix": suffix, "file": p.name})
        self.header = {
            "create_stamp": stamp,
            "volume_info": _volume_info_json(info),
            "morph": morph,
        }


def open_freesurfer(
    path: PathLike, vertex_data: Sequence[PathLike] | None = None
) -> FreeSurferSource:
    """Open a FreeSurfer surface for conversion (see :class:`FreeSurferSource`).

    Parameters
    ----------
    path
        Surface file (``lh.white``, ``rh.pial``, ...).
    vertex_data
        Morphometry files of the same hemisphere (``lh.curv``, ``lh.thickness``, ...).
    """
    return FreeSurferSource(path, vertex_data or ())


def store_to_freesurfer(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``mesh`` store as a FreeSurfer surface, morphometry beside it.

    Attributes that came from morphometry files are written to ``<hemi>.<suffix>`` in the
    folder of ``path``; other float attributes are not written (reported through
    ``progress``).

    Parameters
    ----------
    store
        A ``mesh`` store (every object, in one surface).
    path
        Output surface file, e.g. ``lh.white``.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    report = begin(progress, "reading store")
    header = section(store, KEY)
    surface = read_surface(store, level=level)
    out = Path(path)
    info = header.get("volume_info") or None
    fsio.write_geometry(
        str(out),
        np.asarray(surface.vertices, dtype=np.float32),
        np.asarray(surface.faces),
        create_stamp=header.get("create_stamp"),
        volume_info=None if info is None else _volume_info_nib(info),
    )
    hemi = out.name.split(".", 1)[0]
    morph = {m["attribute"]: m for m in header.get("morph", [])}
    for name, values in surface.attributes.items():
        if name in morph:
            target = out.with_name(f"{hemi}.{morph[name]['suffix']}")
            if morph[name].get("kind") == "annot":
                _write_annot(target, np.asarray(values), morph[name])
            else:
                fsio.write_morph_data(str(target), np.asarray(values, dtype=np.float32))
            report.note(f"wrote {target}")
        else:
            report.note(f"FreeSurfer: attribute {name!r} is not written (no morphometry file)")
