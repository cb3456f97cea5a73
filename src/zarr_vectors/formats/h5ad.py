"""AnnData ``.h5ad`` spatial data <-> ``point_cloud`` stores (read with h5py directly).

AnnData (the scverse single-cell format) keeps one row per observation (cell, spot, bead) in
``obs`` and their coordinates in ``obsm["spatial"]``.  The on-disk layout is HDF5 with
``encoding-type`` attributes: a ``dataframe`` group for ``obs`` (``_index`` and
``column-order`` attributes), columns as ``array``, ``string-array``, ``categorical``
(``categories`` and integer ``codes``, -1 missing; ``ordered`` attribute) or
``nullable-integer`` / ``nullable-boolean`` (``values`` and ``mask``) elements.  h5py reads it
without anndata and its pinned dependencies.

Mapping: ``obsm[spatial_key]`` (default ``"spatial"``, (n, 2) or (n, 3)) gives the positions
(dtype kept); every ``obs`` column becomes a per-point attribute: numbers and booleans as they
are, strings and categoricals as categories (a categorical keeps all its categories, also
unused ones; missing values get a category of their own, recorded as missing), nullable
columns as their values plus a ``<name>_mask`` boolean attribute.  The ``obs`` index becomes
the ``obs_names`` attribute; row order is kept as every writer keeps it (``keep_order``: the
reserved ``_input_index`` attribute, docs/spec.md §8.8), and export writes rows in storage
order when it was left out (``--no-keep-order``).
What the encodings need to be written back (column order, encodings, dtypes, categories,
``ordered``, the index name) goes to ``custom_metadata["h5ad"]``; :func:`store_to_h5ad` writes
an AnnData file with that ``obs`` and ``obsm``, empty ``var`` and no ``X``.  The expression
matrix, ``var``, ``uns``, layers and other ``obsm`` entries are not carried (a
:class:`~zarr_vectors.errors.ZVUserWarning` lists them).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py  # type: ignore[import-untyped, unused-ignore]
import numpy as np
import numpy.typing as npt

from zarr_vectors.core.columns import Column
from zarr_vectors.core.store import StoreLike
from zarr_vectors.core.writer import WriteSummary
from zarr_vectors.errors import InvalidInputError, ZVUserWarning
from zarr_vectors.formats._common import begin, section
from zarr_vectors.formats.registry import (
    Extent,
    PathLike,
    Progress,
    Source,
    WriteOptions,
    export_order,
    identifier,
)
from zarr_vectors.spec.conventions import GeometryTypeName
from zarr_vectors.types.points import read_points, write_points

__all__ = ["H5adSource", "open_h5ad", "store_to_h5ad"]

KEY = "h5ad"
"""``custom_metadata`` key of the ``obs`` layout."""
NAMES = "obs_names"
"""Per-point attribute holding the ``obs`` index."""
_TEXT = h5py.string_dtype("utf-8")
AnyArray = npt.NDArray[Any]


def _encoding(node: Any) -> str:
    value = node.attrs.get("encoding-type", "array" if isinstance(node, h5py.Dataset) else "")
    return value.decode() if isinstance(value, bytes) else str(value)


def _text(dataset: Any) -> AnyArray:
    return np.asarray(dataset.asstr()[()], dtype=object).astype(str)


def _missing_label(categories: list[str]) -> str:
    label = "<NA>"
    while label in categories:
        label = f"<{label}>"
    return label


class H5adSource(Source):
    """An ``.h5ad`` file opened for conversion (``obs`` and the spatial ``obsm`` are read)."""

    geometry_type = GeometryTypeName.POINT_CLOUD

    def __init__(self, path: PathLike, spatial_key: str = "spatial") -> None:
        super().__init__(path)
        try:
            fh = h5py.File(self.path, "r")
        except OSError as exc:
            raise InvalidInputError(f"{self.path.name}: not an HDF5 file ({exc})") from exc
        with fh:
            self._read(fh, spatial_key)

    def _read(self, fh: Any, spatial_key: str) -> None:
        where = self.path.name
        if "obsm" not in fh or spatial_key not in fh["obsm"]:
            raise InvalidInputError(f"{where}: no obsm[{spatial_key!r}] coordinates")
        pos = np.asarray(fh["obsm"][spatial_key][()])
        if pos.ndim != 2 or pos.shape[1] not in (2, 3) or pos.dtype.kind != "f":
            raise InvalidInputError(
                f"{where}: obsm[{spatial_key!r}] has shape {list(pos.shape)} and dtype "
                f"{pos.dtype}; expected (n, 2) or (n, 3) floats"
            )
        self.positions = pos
        obs = fh["obs"]
        if _encoding(obs) != "dataframe":
            raise InvalidInputError(f"{where}: obs is not an AnnData dataframe")
        index_name = str(obs.attrs.get("_index", "_index"))
        order = [str(c) for c in obs.attrs.get("column-order", [])]
        taken = {NAMES}
        self.attributes: dict[str, Any] = {NAMES: _text(obs[index_name])}
        columns = [self._column(obs[c], c, taken) for c in order]
        self.header = {
            "spatial_key": spatial_key,
            "index": index_name,
            "columns": [c for c in columns if c is not None],
        }
        dropped = [k for k in fh if k not in ("obs", "obsm") and _holds_data(fh[k])]
        dropped += [f"obsm/{k}" for k in fh["obsm"] if k != spatial_key]
        if dropped:
            warnings.warn(
                f"{where}: a point cloud holds obs and obsm[{spatial_key!r}]; not converted: "
                + ", ".join(sorted(dropped)),
                ZVUserWarning,
                stacklevel=4,
            )

    def _column(self, node: Any, name: str, taken: set[str]) -> dict[str, Any] | None:
        enc = _encoding(node)
        key = identifier(name, taken)
        entry: dict[str, Any] = {"column": name, "attribute": key, "encoding": enc}
        if enc == "array":
            values = np.asarray(node[()])
            entry["dtype"] = values.dtype.str
            self.attributes[key] = values
        elif enc == "string-array":
            self.attributes[key] = _text(node)
        elif enc == "categorical":
            cats = [str(c) for c in _text(node["categories"]).tolist()]
            codes = np.asarray(node["codes"][()])
            entry |= {"categories": cats, "ordered": bool(node.attrs.get("ordered", False))}
            entry["codes_dtype"] = codes.dtype.str
            if (codes < 0).any():
                entry["missing_label"] = label = _missing_label(cats)
                codes = np.where(codes < 0, len(cats), codes)
                cats = [*cats, label]
            self.attributes[key] = Column(codes.astype(np.int32), tuple(cats))
        elif enc in ("nullable-integer", "nullable-boolean"):
            values = np.asarray(node["values"][()])
            mask_key = identifier(f"{name}_mask", taken)
            entry |= {"dtype": values.dtype.str, "mask_attribute": mask_key}
            self.attributes[key] = values
            self.attributes[mask_key] = np.asarray(node["mask"][()], dtype=bool)
        else:
            warnings.warn(
                f"{self.path.name}: obs column {name!r} ({enc}) is not converted",
                ZVUserWarning,
                stacklevel=5,
            )
            taken.discard(key)
            return None
        return entry

    def extent(self) -> Extent:
        """Return the observation count and bounding box."""
        return Extent.of(self.positions)

    def write(
        self, store: StoreLike, options: WriteOptions, progress: Progress | None = None
    ) -> WriteSummary:
        """Write the observations as points, rows in file order."""
        begin(progress, "writing store")
        return write_points(
            store,
            self.positions,
            attributes=self.attributes,
            keep_order=options.keep_order,
            **options.store(
                source_description=f"AnnData: {self.path.name}",
                custom_metadata={KEY: self.header},
            ),
        )


def _holds_data(node: Any) -> bool:
    """Whether an element outside obs/obsm has content (empty dicts and frames do not)."""
    if isinstance(node, h5py.Dataset):
        return True
    if _encoding(node) == "dataframe":
        index = node.get(str(node.attrs.get("_index", "_index")))
        return len(node) > 1 or (index is not None and len(index) > 0)
    return any(True for _ in node) if _encoding(node) in ("dict", "") else True


def open_h5ad(path: PathLike, spatial_key: str | None = None) -> H5adSource:
    """Open an ``.h5ad`` file for conversion (see :class:`H5adSource`).

    Parameters
    ----------
    path
        AnnData file.
    spatial_key
        ``obsm`` entry holding the coordinates (default ``"spatial"``).
    """
    return H5adSource(path, spatial_key or "spatial")


# -- export ---------------------------------------------------------------------------------


def _attrs(node: Any, encoding: str, version: str, **extra: Any) -> None:
    node.attrs["encoding-type"] = encoding
    node.attrs["encoding-version"] = version
    for k, v in extra.items():
        node.attrs[k] = v


def _strings(group: Any, name: str, values: AnyArray) -> None:
    ds = group.create_dataset(name, data=np.asarray(values, dtype=object), dtype=_TEXT)
    _attrs(ds, "string-array", "0.2.0")


def _array(group: Any, name: str, values: AnyArray) -> None:
    _attrs(group.create_dataset(name, data=values), "array", "0.2.0")


def _write_column(
    obs: Any, entry: Mapping[str, Any], values: AnyArray, mask: AnyArray | None
) -> None:
    name, enc = entry["column"], entry["encoding"]
    if enc == "categorical":
        cats = list(entry["categories"])
        lookup = {c: i for i, c in enumerate(cats)}
        missing = entry.get("missing_label")
        codes = np.asarray([-1 if v == missing else lookup[v] for v in values.tolist()])
        g = obs.create_group(name)
        _attrs(g, "categorical", "0.2.0", ordered=bool(entry.get("ordered", False)))
        _strings(g, "categories", np.asarray(cats, dtype=object))
        _array(g, "codes", codes.astype(entry.get("codes_dtype", "<i4")))
    elif enc == "string-array":
        _strings(obs, name, values)
    elif enc in ("nullable-integer", "nullable-boolean"):
        g = obs.create_group(name)
        _attrs(g, enc, "0.1.0")
        _array(g, "values", values.astype(entry["dtype"]))
        _array(g, "mask", np.asarray(mask, dtype=bool))
    else:
        _array(obs, name, values.astype(entry.get("dtype", values.dtype.str)))


def _default_columns(attributes: Mapping[str, AnyArray]) -> list[dict[str, Any]]:
    out = []
    for name, values in attributes.items():
        arr = np.asarray(values)
        if name == NAMES or arr.ndim != 1:
            continue
        if arr.dtype.kind in "OUS":
            cats = sorted({str(v) for v in arr.tolist()})
            out.append(
                {"column": name, "attribute": name, "encoding": "categorical", "categories": cats}
            )
        else:
            out.append({"column": name, "attribute": name, "encoding": "array"})
    return out


def store_to_h5ad(
    store: StoreLike, path: PathLike, *, level: int = 0, progress: Progress | None = None
) -> None:
    """Write one level of a ``point_cloud`` store as an AnnData ``.h5ad`` file.

    Parameters
    ----------
    store
        A ``point_cloud`` store.
    path
        Output ``.h5ad`` file.
    level
        Resolution level.
    progress
        Receiver of progress reports.
    """
    begin(progress, "reading store")
    h = section(store, KEY)
    pts = read_points(store, level=level, order=export_order(store, level))
    attrs = dict(pts.attributes)
    names = attrs.get(NAMES)
    index = np.asarray(names) if names is not None else np.arange(len(pts)).astype(str)
    columns = list(h.get("columns") or _default_columns(attrs))
    with h5py.File(Path(path), "w") as fh:
        _attrs(fh, "anndata", "0.1.0")
        obs = fh.create_group("obs")
        index_name = str(h.get("index", "_index"))
        _attrs(obs, "dataframe", "0.2.0", _index=index_name)
        obs.attrs["column-order"] = np.asarray([c["column"] for c in columns], dtype=_TEXT)
        _strings(obs, index_name, index)
        for entry in columns:
            mask_key = entry.get("mask_attribute")
            mask = None if mask_key is None else np.asarray(attrs[mask_key])
            _write_column(obs, entry, np.asarray(attrs[entry["attribute"]]), mask)
        obsm = fh.create_group("obsm")
        _attrs(obsm, "dict", "0.1.0")
        _array(obsm, str(h.get("spatial_key", "spatial")), np.asarray(pts.positions))
        var = fh.create_group("var")
        _attrs(var, "dataframe", "0.2.0", _index="_index")
        var.attrs["column-order"] = np.asarray([], dtype=_TEXT)
        _strings(var, "_index", np.asarray([], dtype=object))
        for empty in ("layers", "obsp", "uns", "varm", "varp"):
            _attrs(fh.create_group(empty), "dict", "0.1.0")
