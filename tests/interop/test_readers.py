"""Every array of every store reads the same in independent Zarr implementations.

Stores of all seven geometry types, Zarr v2 and v3, default options and each compressor
preset (objects crossing chunks, payloads of many Blosc blocks) are read array by array with:

* zarr-python 3 in this process: the reference bytes;
* zarr-python 2.18 with numcodecs 0.15 (the v2 reader most installations have) in a venv of
  its own, in a subprocess: every array of every v2 store, payloads included;
* zarr-python and numcodecs at the lowest versions pyproject.toml allows, likewise: every
  array of every store, v2 and v3;
* tensorstore (``zarr`` and ``zarr3`` drivers): every dense array; it does not read
  variable-length bytes (v3 ``variable_length_bytes``, v2 ``|O``), which is asserted;
* zarrs (zarr-python's codec pipeline, strict mode): every dense array of v3 and v2 stores;
  it rejects variable-length bytes, also asserted.

Each reader's values are hashed (dense: dtype, shape and C-order bytes; payloads: each
element's length and bytes), and the hashes must equal zarr-python 3's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import warnings
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore
import zarr
import zarrs  # noqa: F401  (the codec pipeline named below)
from zarr.core.dtype import VariableLengthBytes

import zarr_vectors as zv
from zarr_vectors.testing.examples import random_walk_paths, random_walk_trees

# tensorstore and zarrs are in the test extra: imported, not skipped, so that CI cannot pass
# without them.
pytestmark = pytest.mark.slow

PRESETS = ["default", "lz4", "zstd", "none"]
FORMATS = [2, 3]

ZARR2_REQUIREMENTS = ["zarr>=2.18,<3", "numcodecs<0.16"]

# Run by zarr-python 2.18: print {store: {array path: digest}} for every array of the stores.
ZARR2_SCRIPT = r"""
import hashlib, json, sys
import numpy as np
import zarr

def digest(a):
    h = hashlib.sha256()
    if a.dtype == object:
        for v in np.asarray(a[...], dtype=object).reshape(-1):
            # a chunk never written reads as the fill value, which zarr 2 gives as str ""
            b = b"" if isinstance(v, str) and v == "" else v
            assert isinstance(b, bytes), type(b)
            h.update(len(b).to_bytes(8, "little")); h.update(b)
        return "vlen:" + h.hexdigest()
    v = np.ascontiguousarray(a[...])
    h.update(str(v.dtype.newbyteorder("<").str).encode()); h.update(str(v.shape).encode())
    h.update(v.astype(v.dtype.newbyteorder("<")).tobytes())
    return "dense:" + h.hexdigest()

out = {}
for path in sys.argv[1:]:
    got = {}
    def visit(name, node):
        if isinstance(node, zarr.Array):
            got[name] = digest(node)
    zarr.open_group(path, mode="r").visititems(visit)
    out[path] = got
print(json.dumps(out))
"""


def _digest_values(values: Any, vlen: bool) -> str:
    h = hashlib.sha256()
    if vlen:
        for v in np.asarray(values, dtype=object).reshape(-1):
            b = bytes(v)
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
        return "vlen:" + h.hexdigest()
    v = np.ascontiguousarray(values)
    little = v.dtype.newbyteorder("<")
    h.update(str(little.str).encode())
    h.update(str(v.shape).encode())
    h.update(v.astype(little).tobytes())
    return "dense:" + h.hexdigest()


def _arrays(path: Path) -> Iterator[tuple[str, zarr.Array[Any]]]:
    root = zarr.open_group(path, mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, node in root.members(max_depth=None):
            if isinstance(node, zarr.Array):
                yield name, node


def _is_vlen(array: zarr.Array[Any]) -> bool:
    return isinstance(array.metadata.dtype, VariableLengthBytes) or array.dtype == object


def _reference(path: Path) -> dict[str, str]:
    """zarr-python 3's digest of every array of the store."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: _digest_values(a[...], _is_vlen(a)) for name, a in _arrays(path)}


# --------------------------------------------------------------------------------------------
# stores


def _geometry_writers() -> dict[str, Callable[..., Any]]:
    rng = np.random.default_rng(7)
    paths_pos, paths_off = random_walk_paths(200, seed=3, min_length=100, max_length=500)
    paths = [paths_pos[a:b] for a, b in pairwise(paths_off)]
    tree_pos, tree_par, tree_off = random_walk_trees(6, 900, seed=5)
    points = rng.uniform(0, 40, (30_000, 3)).astype(np.float32)
    ends = rng.uniform(0, 40, (3_000, 2, 3)).astype(np.float32)
    edges = np.stack([np.arange(len(tree_pos) - 1), np.arange(1, len(tree_pos))], axis=1)
    tris = np.stack([np.arange(0, 900, 3), np.arange(1, 900, 3), np.arange(2, 900, 3)], axis=1)
    meshes = [(tree_pos[k * 900 : k * 900 + 900], tris) for k in range(3)]
    n_paths = len(paths)
    return {
        "points": lambda s, **kw: zv.write_points(
            s, points, attributes={"i": rng.random(len(points)).astype(np.float32)}, **kw
        ),
        "lines": lambda s, **kw: zv.write_lines(s, ends, **kw),
        "polylines": lambda s, **kw: zv.write_polylines(
            s,
            paths,
            object_attributes={"w": np.arange(n_paths, dtype=np.float64)},
            groups={"g": np.arange(n_paths) % 4},
            **kw,
        ),
        "streamlines": lambda s, **kw: zv.write_streamlines(s, paths_pos, offsets=paths_off, **kw),
        "graph": lambda s, **kw: zv.write_graph(s, tree_pos, edges, **kw),
        "skeleton": lambda s, **kw: zv.write_skeletons(
            s, tree_pos, tree_par, offsets=tree_off, **kw
        ),
        "mesh": lambda s, **kw: zv.write_meshes(s, meshes, **kw),
    }


@pytest.fixture(scope="module")
def stores() -> Iterator[dict[tuple[str, int, str], Path]]:
    """Every geometry type x Zarr format x preset, written once.

    In a directory of its own, not pytest's numbered ones: a concurrent pytest session prunes
    those while this module still reads them.
    """
    with tempfile.TemporaryDirectory(prefix="zv-interop-") as tmp:
        root = Path(tmp)
        out = {}
        for kind, write in _geometry_writers().items():
            for fmt in FORMATS:
                for preset in PRESETS:
                    path = root / f"{kind}-v{fmt}-{preset}.zv"
                    write(path, chunk_shape=(20.0,) * 3, zarr_format=fmt, compressor=preset)
                    out[(kind, fmt, preset)] = path
        yield out


def test_stores_have_objects_across_chunks_and_many_block_payloads(
    stores: dict[tuple[str, int, str], Path],
) -> None:
    """The stores exercise what the readers must handle (not a trivially small case)."""
    path = stores[("streamlines", 3, "default")]
    counts = np.asarray(zarr.open_array(path / "0" / "vertex_counts", mode="r")[...])
    assert counts.max() * 12 > 4 * 4096  # several 4 KiB Blosc blocks in one element
    got = zv.read_streamlines(path)
    assert len(got.offsets) - 1 == 200
    for kind in ("lines", "polylines", "streamlines", "skeleton", "graph", "mesh"):
        for fmt in FORMATS:
            level = stores[(kind, fmt, "default")] / "0"
            offsets = np.asarray(zarr.open_array(level / "object_index" / "offsets")[...])
            # objects whose vertices lie in several chunks, joined by cross-chunk records
            assert (np.diff(offsets) > 1).any(), (kind, fmt)
            assert (level / "cross_chunk_links").exists(), (kind, fmt)


# --------------------------------------------------------------------------------------------
# zarr-python 2.18


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@pytest.fixture(scope="session")
def zarr2_python() -> Path:
    """A Python with zarr-python 2.18 + numcodecs 0.15, built once into a cache directory.

    ``ZV_ZARR2_VENV`` names the directory (default: under the temp directory); an existing
    venv there that imports zarr 2 is reused.
    """
    venv = Path(
        os.environ.get("ZV_ZARR2_VENV")
        or Path(tempfile.gettempdir()) / "zarr-vectors-interop" / "zarr2-venv"
    )
    python = _venv_python(venv)
    check = [str(python), "-c", "import zarr, sys; sys.exit(zarr.__version__[0] != '2')"]
    if python.exists() and subprocess.run(check, check=False, capture_output=True).returncode == 0:
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *ZARR2_REQUIREMENTS],
        check=True,
        capture_output=True,
    )
    subprocess.run(check, check=True)
    return python


def test_zarr_python_2_reads_every_v2_array(
    stores: dict[tuple[str, int, str], Path], zarr2_python: Path
) -> None:
    v2 = [p for (_, fmt, _), p in stores.items() if fmt == 2]
    versions = _zarr_versions(zarr2_python)
    assert versions[0].startswith("2.18")
    assert versions[1].startswith("0.15")
    payloads = _assert_reads_like_zarr3(zarr2_python, ZARR2_SCRIPT, v2)
    assert payloads > 50  # payload arrays were really read


def _zarr_versions(python: Path) -> list[str]:
    """The zarr and numcodecs versions of another interpreter."""
    return subprocess.run(
        [
            str(python),
            "-c",
            "import zarr, numcodecs; print(zarr.__version__, numcodecs.__version__)",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()


def _assert_reads_like_zarr3(python: Path, script: str, paths: list[Path]) -> int:
    """Run ``script`` on ``paths`` in ``python``; every array's digest must equal zarr 3's.

    Returns the number of payload (variable-length) arrays compared.
    """
    done = subprocess.run(
        [str(python), "-c", script, *map(str, paths)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    payloads = 0
    for path in paths:
        want = _reference(path)
        assert got[str(path)] == want, path.name
        payloads += sum(d.startswith("vlen:") for d in want.values())
    return payloads


# --------------------------------------------------------------------------------------------
# the lowest zarr-python and numcodecs the package allows

# Run by that zarr-python: print {store: {array path: digest}} for every array of the stores.
LOWEST_SCRIPT = r"""
import hashlib, json, sys, warnings
import numpy as np
import zarr

def digest(a):
    h = hashlib.sha256()
    v = a[...]
    if v.dtype == object:
        for b in np.asarray(v, dtype=object).reshape(-1):
            b = bytes(b)
            h.update(len(b).to_bytes(8, "little")); h.update(b)
        return "vlen:" + h.hexdigest()
    v = np.ascontiguousarray(v)
    h.update(str(v.dtype.newbyteorder("<").str).encode()); h.update(str(v.shape).encode())
    h.update(v.astype(v.dtype.newbyteorder("<")).tobytes())
    return "dense:" + h.hexdigest()

warnings.simplefilter("ignore")
out = {}
for path in sys.argv[1:]:
    members = zarr.open_group(path, mode="r").members(max_depth=None)
    out[path] = {name: digest(node) for name, node in members if isinstance(node, zarr.Array)}
print(json.dumps(out))
"""


def _lower_bounds() -> list[str]:
    """``name==lowest`` for zarr and numcodecs, from pyproject.toml's dependencies."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    pins = []
    for dep in pyproject["project"]["dependencies"]:
        name, _, rest = dep.partition(">=")
        if name.strip() in ("zarr", "numcodecs"):
            low = rest.split(",")[0].split("#")[0].strip().strip('"')
            pins.append(f"{name.strip()}=={low}.0" if low.count(".") == 1 else f"{name}=={low}")
    assert len(pins) == 2, pins
    return pins


@pytest.fixture(scope="session")
def lowest_python() -> tuple[Path, list[str]]:
    """A Python with the lowest zarr-python and numcodecs pyproject.toml allows (cached venv).

    ``ZV_LOWEST_VENV`` names the directory (default: under the temp directory); an existing
    venv there with exactly those versions is reused.
    """
    pins = _lower_bounds()
    venv = Path(
        os.environ.get("ZV_LOWEST_VENV")
        or Path(tempfile.gettempdir()) / "zarr-vectors-interop" / "lowest-venv"
    )
    python = _venv_python(venv)
    want = " ".join(pin.split("==")[1] for pin in pins)
    check = [
        str(python),
        "-c",
        "import zarr, numcodecs; print(zarr.__version__, numcodecs.__version__)",
    ]
    if python.exists():
        done = subprocess.run(check, check=False, capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == want:
            return python, pins
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *pins], check=True, capture_output=True
    )
    return python, pins


def test_lowest_allowed_zarr_and_numcodecs_read_every_array(
    stores: dict[tuple[str, int, str], Path], lowest_python: tuple[Path, list[str]]
) -> None:
    python, pins = lowest_python
    assert _zarr_versions(python) == [pin.split("==")[1] for pin in pins]
    payloads = _assert_reads_like_zarr3(python, LOWEST_SCRIPT, list(stores.values()))
    assert payloads > 100  # payload arrays of v2 and v3 stores were really read


# --------------------------------------------------------------------------------------------
# tensorstore


def _tensorstore_read(path: Path, fmt: int) -> Any:
    spec = {
        "driver": "zarr3" if fmt == 3 else "zarr",
        "kvstore": {"driver": "file", "path": str(path)},
    }
    return tensorstore.open(spec, open=True).result().read().result()


@pytest.mark.parametrize("fmt", FORMATS)
def test_tensorstore_reads_every_dense_array(
    stores: dict[tuple[str, int, str], Path], fmt: int
) -> None:
    dense = refused = 0
    for (_, f, _), store in stores.items():
        if f != fmt:
            continue
        for name, array in _arrays(store):
            if _is_vlen(array):
                # documented (docs/spec.md §7.3): tensorstore has no variable-length bytes
                with pytest.raises(ValueError, match=r"dtype|data_type|data type"):
                    _tensorstore_read(store / name, fmt)
                refused += 1
                continue
            got = _tensorstore_read(store / name, fmt)
            assert _digest_values(got, False) == _digest_values(array[...], False), (
                store.name,
                name,
            )
            dense += 1
    assert dense > 60
    assert refused > 50


# --------------------------------------------------------------------------------------------
# zarrs


@pytest.mark.parametrize("fmt", FORMATS)
def test_zarrs_strict_reads_every_dense_array(
    stores: dict[tuple[str, int, str], Path], fmt: int
) -> None:
    want = {
        (store, name): _digest_values(array[...], False)
        for (_, f, _), store in stores.items()
        if f == fmt
        for name, array in _arrays(store)
        if not _is_vlen(array)
    }
    vlen = [
        (store, name)
        for (_, f, _), store in stores.items()
        if f == fmt
        for name, array in _arrays(store)
        if _is_vlen(array)
    ]
    pipeline = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
    with zarr.config.set(pipeline):
        for (store, name), digest in want.items():
            array = zarr.open_array(store / name, mode="r")
            assert _digest_values(array[...], False) == digest, (store.name, name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for store, name in vlen[:3]:  # zarrs has no variable-length bytes (documented)
                with pytest.raises(Exception) as info:
                    zarr.open_array(store / name, mode="r")[...]
                # zarrs' UnsupportedDataTypeError (v3) / UnsupportedMetadataError (v2)
                assert "Unsupported" in type(info.value).__name__
    assert len(want) > 60
