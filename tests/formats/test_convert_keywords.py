"""Keywords of ``convert``: a misspelt or mistyped one fails before the file is read, for
every format source, and the sources' own store keywords are checked store keywords."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import trimesh

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError, MetadataValidationError
from zarr_vectors.formats.registry import (
    FORMATS,
    WriteOptions,
    convert,
    export,
    format_for,
    open_source,
    store_metadata,
)

CHUNK = (5.0, 5.0, 5.0)
RNG = np.random.default_rng(3)


def _points(path: Path) -> None:
    zv.write_points(path, RNG.uniform(0, 10, (50, 3)), chunk_shape=CHUNK)


def _streamlines(path: Path) -> None:
    paths = [RNG.uniform(0, 10, (n, 3)).astype(np.float32) for n in (3, 5, 4)]
    zv.write_polylines(path, paths, geometry_type="streamline", chunk_shape=CHUNK)


def _graph(path: Path) -> None:
    edges = np.array([[0, 1], [1, 2], [3, 4]])
    zv.write_graph(path, RNG.uniform(0, 10, (6, 3)), edges, chunk_shape=CHUNK)


def _skeleton(path: Path) -> None:
    zv.write_skeletons(path, RNG.uniform(0, 10, (4, 3)), np.array([-1, 0, 1, 1]), chunk_shape=CHUNK)


def _mesh(path: Path) -> None:
    sphere = trimesh.creation.icosphere(1)
    zv.write_meshes(path, sphere.vertices, sphere.faces, chunk_shape=CHUNK)


# one exported file per format (the format's own exporter writes it); a store of each kind
FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "las": (_points, "a.laz"),
    "ply": (_points, "a.ply"),
    "csv": (_points, "a.csv"),
    "parquet": (_points, "a.parquet"),
    "h5ad": (_points, "a.h5ad"),
    "trk": (_streamlines, "a.trk"),
    "tck": (_streamlines, "a.tck"),
    "trx": (_streamlines, "a.trx"),
    "graphml": (_graph, "a.graphml"),
    "edgelist": (_graph, "edges.csv"),
    "swc": (_skeleton, "a.swc"),
    "precomputed": (_skeleton, "a.precomputed"),
    "mesh": (_mesh, "a.obj"),
    "gifti": (_mesh, "a.gii"),
    "freesurfer": (_mesh, "lh.white"),
}
NAMES = sorted(FILES)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small file of every format, read-only for the tests."""
    root = tmp_path_factory.mktemp("sources")
    out: dict[str, Path] = {}
    for name, (write, file_name) in FILES.items():
        store = root / f"{name}.zarrvectors"
        write(store)
        out[name] = root / file_name
        export(store, out[name])
        assert format_for(out[name]).name == name
    return out


def test_every_format_has_a_source_file() -> None:
    assert set(FILES) == {info.name for info in FORMATS}


@pytest.mark.parametrize("name", NAMES)
def test_misspelt_keyword_names_it_and_writes_nothing(
    name: str, sources: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.zarrvectors"
    with pytest.raises(InvalidInputError, match=r"'chunk_shap' \(did you mean 'chunk_shape'\?"):
        convert(sources[name], out, chunk_shap=CHUNK)
    with pytest.raises(InvalidInputError, match=r"'keep_ordr'.*did you mean 'keep_order'"):
        convert(sources[name], out, chunk_shape=CHUNK, keep_ordr=False)
    assert not out.exists()


@pytest.mark.parametrize("name", NAMES)
def test_mistyped_store_keyword_names_it_and_writes_nothing(
    name: str, sources: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.zarrvectors"
    with pytest.raises(InvalidInputError, match=r"compressor.*'zsdt'"):
        convert(sources[name], out, compressor="zsdt")
    with pytest.raises(InvalidInputError, match="overwrite must be True or False"):
        convert(sources[name], out, chunk_shape=CHUNK, overwrite="yes")  # type: ignore[arg-type]
    with pytest.raises(MetadataValidationError, match="chunk_shape: element 1"):
        convert(sources[name], out, chunk_shape=(5.0, -1.0, 5.0))
    assert not out.exists()


@pytest.mark.parametrize("name", NAMES)
def test_source_write_checks_its_store_keywords(
    name: str, sources: dict[str, Path], tmp_path: Path
) -> None:
    """``Source.write`` refuses bad layout options itself (not only through ``convert``)."""
    out = tmp_path / "out.zarrvectors"
    with open_source(sources[name]) as src, pytest.raises(InvalidInputError, match="compressor"):
        src.write(out, WriteOptions(chunk_shape=CHUNK, compressor="zsdt"))
    assert not out.exists()


@pytest.mark.parametrize("name", NAMES)
def test_source_metadata_reaches_the_store(
    name: str, sources: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.zarrvectors"
    report = convert(sources[name], out, chunk_shape=CHUNK, compressor="zstd")
    meta = store_metadata(out)
    assert report.chunk_shape == CHUNK
    assert meta.chunk_shape == CHUNK
    assert sources[name].name in (meta.source_description or "")


def test_write_options_store_checks_keywords() -> None:
    opts = WriteOptions(chunk_shape=CHUNK, bin_shape=(2.5,) * 3, compressor="zstd")
    kwargs = opts.store(notes="n", axis_units="mm")
    assert kwargs == {
        "chunk_shape": CHUNK,
        "bin_shape": (2.5,) * 3,
        "overwrite": False,
        "compressor": "zstd",
        "notes": "n",
        "axis_units": "mm",
    }
    bad: dict[str, object] = {"source_descripton": "x"}
    with pytest.raises(InvalidInputError, match=r"'source_descripton'.*'source_description'"):
        opts.store(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="notes must be a string"):
        opts.store(notes=3)  # type: ignore[typeddict-item]
