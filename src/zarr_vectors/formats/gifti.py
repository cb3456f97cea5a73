"""GIFTI surfaces (``.gii``, through nibabel) <-> ``mesh`` stores with per-vertex data.

A surface file (``.surf.gii``) holds a ``NIFTI_INTENT_POINTSET`` array (vertices) and a
``NIFTI_INTENT_TRIANGLE`` array (faces).  Per-vertex data (``.func.gii``, ``.shape.gii``,
``.label.gii``: curvature, thickness, time series, labels) lives in the same file or in
separate files of one array per measure, each with as many rows as the surface has vertices;
pass those as ``vertex_data``.

Mapping: vertices and faces keep their file order (:mod:`zarr_vectors.formats._surface`);
every data array becomes a per-vertex attribute named after its ``Name`` metadata (else the
file name, numbered when a file holds several arrays).  Everything nibabel exposes about the
files goes to ``custom_metadata["gifti"]``: the file metadata and label table, and per array
its intent, data type, encoding, byte order, index order, metadata and coordinate system, so
:func:`store_to_gifti` writes the arrays back as they were (in one file, or the data arrays in
a second file with ``vertex_data``).  An external-file encoding is written back inline
(base64, gzip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nibabel as nib
import numpy as np
import numpy.typing as npt
from nibabel.gifti.gifti import (
    GiftiCoordSystem,
    GiftiDataArray,
    GiftiImage,
    GiftiLabel,
    GiftiLabelTable,
    GiftiMetaData,
)
from nibabel.nifti1 import intent_codes

from zarr_vectors.core.store import StoreLike
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.formats._common import begin, section
from zarr_vectors.formats._surface import Surface, SurfaceSource, read_surface
from zarr_vectors.formats.registry import (
    PathLike,
    Progress,
    identifier,
)

__all__ = ["GiftiSource", "open_gifti", "store_to_gifti"]

KEY = "gifti"
"""``custom_metadata`` key of the GIFTI header."""


def _int(value: Any) -> int:
    """Return a nibabel code as int (nibabel types its codes as ``Hashable``)."""
    return int(value)


POINTSET = _int(intent_codes.code["NIFTI_INTENT_POINTSET"])
TRIANGLE = _int(intent_codes.code["NIFTI_INTENT_TRIANGLE"])
_NONE = _int(intent_codes.code["NIFTI_INTENT_NONE"])
_EXTERNAL = 4
"""GIFTI_ENCODING_EXTBIN: data in a side file; written back inline."""
_B64GZ = 3
_GIFTI_DTYPES = {np.dtype(np.uint8): 2, np.dtype(np.int32): 8, np.dtype(np.float32): 16}


def _load(path: Path) -> GiftiImage:
    try:
        img = nib.load(str(path))
    except Exception as exc:  # nibabel raises many kinds on a malformed file
        raise InvalidInputError(f"{path.name}: not a readable GIFTI file ({exc})") from exc
    if not isinstance(img, GiftiImage):
        raise InvalidInputError(f"{path.name}: not a GIFTI file")
    return img


def _labels(table: GiftiLabelTable) -> list[list[Any]]:
    return [[int(lb.key), lb.label, lb.red, lb.green, lb.blue, lb.alpha] for lb in table.labels]


def _array_info(da: GiftiDataArray) -> dict[str, Any]:
    cs = da.coordsys
    return {
        "intent": _int(da.intent),
        "datatype": _int(da.datatype),
        "encoding": _int(da.encoding),
        "endian": _int(da.endian),
        "ordering": _int(da.ind_ord),
        "meta": dict(da.meta),
        "shape": list(np.shape(np.asarray(da.data))),
        "coordsys": None
        if cs is None
        else {
            "dataspace": _int(cs.dataspace),
            "xformspace": _int(cs.xformspace),
            "xform": np.asarray(cs.xform, dtype=np.float64).tolist(),
        },
    }


class GiftiSource(SurfaceSource):
    """A GIFTI surface (and its per-vertex data files) opened for conversion."""

    label = "GIFTI surface"
    key = KEY

    def __init__(self, path: PathLike, vertex_data: Sequence[PathLike] = ()) -> None:
        super().__init__(path)
        img = _load(self.path)
        points = [d for d in img.darrays if d.intent == POINTSET]
        tris = [d for d in img.darrays if d.intent == TRIANGLE]
        if len(points) != 1 or len(tris) != 1:
            raise InvalidInputError(
                f"{self.path.name}: a GIFTI surface holds one POINTSET and one TRIANGLE array "
                f"(found {len(points)} and {len(tris)}); pass data files as vertex_data "
                "together with their surface"
            )
        self.vertices = np.asarray(points[0].data)
        self.faces = np.asarray(tris[0].data)
        self.header: dict[str, Any] = {
            "meta": dict(img.meta),
            "labeltable": _labels(img.labeltable),
            "pointset": _array_info(points[0]),
            "triangle": _array_info(tris[0]),
            "data": [],
        }
        self.attributes: dict[str, npt.NDArray[Any]] = {}
        taken: set[str] = set()
        own = [d for d in img.darrays if d.intent not in (POINTSET, TRIANGLE)]
        self._add_data(self.path, img, own, taken)
        for extra in vertex_data:
            extra_path = Path(extra)
            if not extra_path.exists():
                raise FileNotFoundError(f"no such file: {extra_path}")
            data_img = _load(extra_path)
            self._add_data(extra_path, data_img, list(data_img.darrays), taken)

    def _add_data(
        self, path: Path, img: GiftiImage, arrays: list[GiftiDataArray], taken: set[str]
    ) -> None:
        n = len(self.vertices)
        stem = path.name.split(".")[0]
        for i, da in enumerate(arrays):
            values = np.asarray(da.data)
            if values.ndim not in (1, 2) or len(values) != n:
                raise InvalidInputError(
                    f"{path.name}: data array {i} has shape {list(values.shape)}; the surface "
                    f"has {n} vertices"
                )
            label = str(da.meta.get("Name", "")) or (stem if len(arrays) == 1 else f"{stem}_{i}")
            name = identifier(label, taken)
            self.attributes[name] = (
                values[:, 0] if values.ndim == 2 and values.shape[1] == 1 else values
            )
            entry = {"attribute": name, "file": path.name, **_array_info(da)}
            if path != self.path:
                entry["file_meta"] = dict(img.meta)
                entry["file_labeltable"] = _labels(img.labeltable)
            self.header["data"].append(entry)


def open_gifti(path: PathLike, vertex_data: Sequence[PathLike] | None = None) -> GiftiSource:
    """Open a GIFTI surface for conversion (see :class:`GiftiSource`).

    Parameters
    ----------
    path
        ``.gii`` file holding a POINTSET and a TRIANGLE array (and possibly data arrays).
    vertex_data
        ``.func.gii`` / ``.shape.gii`` / ``.label.gii`` files of per-vertex data.
    """
    return GiftiSource(path, vertex_data or ())


# -- export ---------------------------------------------------------------------------------


def _table(rows: Sequence[Sequence[Any]]) -> GiftiLabelTable:
    table = GiftiLabelTable()
    for key, text, r, g, b, a in rows:
        label = GiftiLabel(key=key, red=r, green=g, blue=b, alpha=a)
        setattr(label, "label", text)  # noqa: B010 - not in nibabel's hints
        table.labels.append(label)
    return table


def _array(
    values: npt.NDArray[Any], info: Mapping[str, Any] | None, default_intent: int
) -> GiftiDataArray:
    if info is None:
        dtype = np.dtype(np.int32) if values.dtype.kind in "biu" else np.dtype(np.float32)
        code = 2 if values.dtype == np.uint8 else _GIFTI_DTYPES[dtype]
        return GiftiDataArray(
            values.astype(dtype if code != 2 else np.uint8), intent=default_intent, datatype=code
        )
    data = np.asarray(values)
    shape = tuple(info.get("shape", data.shape))
    if data.size == int(np.prod(shape)) and len(shape) == 2 and data.ndim == 1:
        data = data.reshape(shape)
    cs = info.get("coordsys")
    coordsys = (
        None
        if cs is None
        else GiftiCoordSystem(cs["dataspace"], cs["xformspace"], np.asarray(cs["xform"]))
    )
    encoding = int(info["encoding"])
    return GiftiDataArray(
        data,
        intent=int(info["intent"]),
        datatype=int(info["datatype"]),
        encoding=_B64GZ if encoding == _EXTERNAL else encoding,
        endian=int(info["endian"]),
        coordsys=coordsys,
        ordering=int(info.get("ordering", 1)),
        meta=GiftiMetaData(info.get("meta", {})),
    )


def _data_arrays(
    surface: Surface, header: Mapping[str, Any] | None, progress: Progress
) -> list[GiftiDataArray]:
    known = {e["attribute"]: e for e in (header or {}).get("data", [])}
    arrays = []
    for name, values in surface.attributes.items():
        arr = np.asarray(values)
        if arr.dtype.kind not in "biuf" or arr.ndim > 2:
            progress.note(f"GIFTI: attribute {name!r} ({arr.dtype}) is not written")
            continue
        da = _array(arr, known.get(name), _NONE)
        if name not in known:
            da.meta = GiftiMetaData({"Name": name})
        arrays.append(da)
    return arrays


def store_to_gifti(
    store: StoreLike,
    path: PathLike,
    *,
    level: int = 0,
    progress: Progress | None = None,
    vertex_data: PathLike | None = None,
) -> None:
    """Write one level of a ``mesh`` store to a GIFTI surface file.

    Parameters
    ----------
    store
        A ``mesh`` store (every object, in one surface).
    path
        Output ``.gii`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    vertex_data
        Write the per-vertex attributes to this second ``.gii`` file instead of ``path``.
    """
    report = begin(progress, "reading store")
    h = section(store, KEY)
    surface = read_surface(store, level=level)
    points = _array(np.asarray(surface.vertices, dtype=np.float32), h.get("pointset"), POINTSET)
    if h.get("pointset") is None:
        points.intent = POINTSET
    tris = _array(np.asarray(surface.faces, dtype=np.int32), h.get("triangle"), TRIANGLE)
    data = _data_arrays(surface, h, report)
    main = GiftiImage(
        meta=GiftiMetaData(h.get("meta", {})), labeltable=_table(h.get("labeltable", []))
    )
    for da in (points, tris):
        main.add_gifti_data_array(da)
    if vertex_data is None:
        for da in data:
            main.add_gifti_data_array(da)
    else:
        first: Mapping[str, Any] = next(iter(h.get("data", [])), {})
        side = GiftiImage(
            meta=GiftiMetaData(first.get("file_meta", {})),
            labeltable=_table(first.get("file_labeltable", [])),
        )
        for da in data:
            side.add_gifti_data_array(da)
        nib.save(side, str(vertex_data))
    nib.save(main, str(path))
