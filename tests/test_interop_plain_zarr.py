"""A ZVF store is readable by plain zarr-python with no zarr_vectors import (FORMAT.md §1, §6).

The reader runs in a subprocess so the absence of ``zarr_vectors`` is real: the script finds the
seed's required root attributes in the root node's attributes (a real ``.zattrs`` file in Zarr
v2, ``zarr.json["attributes"]`` in v3), reads every ``0/vertices`` element as bytes, decodes it
as little-endian rows of width D with the dtype named in the array attributes, checks each row
lies in its chunk, and saves the rows; the test compares them with the input as a multiset.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.testing import assert_points_equal

PLAIN_ZARR_READER = r"""
import json, sys, warnings, zipfile
from pathlib import Path

import numpy as np
import zarr
from zarr.errors import UnstableSpecificationWarning

warnings.simplefilter("error")
# zarr-python 3.1 has no final v3 spec for variable-length bytes; that warning only
warnings.filterwarnings("ignore", category=UnstableSpecificationWarning)

path, zarr_format, out = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
REQUIRED = ["zarr_vectors_version", "geometry_type", "spatial_dims", "base_bin_shape",
            "chunk_shape", "multiscales"]

if path.suffix == ".zip":
    store = zarr.storage.ZipStore(path, mode="r")
    def read_file(key):
        with zipfile.ZipFile(path) as zf:
            return zf.read(key)
else:
    store = str(path)
    def read_file(key):
        return (path / key).read_bytes()

root = zarr.open_group(store, mode="r")
assert root.metadata.zarr_format == zarr_format, root.metadata.zarr_format
attrs = root.attrs.asdict()
missing = [k for k in REQUIRED if k not in attrs]
assert not missing, f"missing root attributes {missing}"
if zarr_format == 2:
    on_disk = json.loads(read_file(".zattrs"))  # the seed's "root .zattrs" is a real file
else:
    on_disk = json.loads(read_file("zarr.json"))["attributes"]
assert on_disk == attrs
assert attrs["zarr_vectors_version"] == "1.0"
assert attrs["geometry_type"] == "point_cloud"
ms = attrs["multiscales"][0]
assert ms["type"] == "zarr_vectors_multiscale"
assert ms["datasets"][0]["path"] == "0" and ms["datasets"][0]["bin_ratio"] == [1] * len(ms["axes"])

d = attrs["spatial_dims"]
chunk = np.asarray(attrs["chunk_shape"], dtype=np.float64)
origin = np.asarray(attrs["chunk_grid"]["origin"])
vertices = root["0/vertices"]
counts = np.asarray(root["0/vertex_counts"][...])
dtype = np.dtype(vertices.attrs["dtype"])
width = vertices.attrs["width"]
assert width == d and vertices.attrs["encoding"] == "raw" and dtype.byteorder in "<|="
assert dtype.kind == "f" and dtype.byteorder != ">"
assert vertices.shape == tuple(attrs["chunk_grid"]["shape"]) == counts.shape

payloads = vertices[...]
rows = []
for index in np.ndindex(vertices.shape):
    blob = payloads[index]
    assert isinstance(blob, bytes), type(blob)
    assert len(blob) % (dtype.itemsize * width) == 0
    block = np.frombuffer(blob, dtype=dtype.newbyteorder("<")).reshape(-1, width)
    assert len(block) == counts[index], (index, len(block), counts[index])
    expected_chunk = origin + np.asarray(index)
    got_chunk = np.floor(block.astype(np.float64) / chunk)
    assert (got_chunk == expected_chunk).all(), (index, block)
    rows.append(block)

points = np.concatenate(rows) if rows else np.zeros((0, d), dtype)
np.save(out, points.astype(dtype))
assert not any(m.startswith("zarr_vectors") for m in sys.modules), "zarr_vectors was imported"
print(json.dumps({"rows": len(points), "chunks": int((counts > 0).sum())}))
"""


def run_plain_zarr(path: Path, zarr_format: int, out: Path) -> dict[str, int]:
    proc = subprocess.run(
        [sys.executable, "-c", PLAIN_ZARR_READER, str(path), str(zarr_format), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("zarr_format", "suffix", "dtype"),
    [
        (2, ".zarrvectors", np.float32),
        (3, ".zarrvectors", np.float64),
        (2, ".zip", np.float64),
        (3, ".zip", np.float32),
    ],
    ids=["v2-dir-f4", "v3-dir-f8", "v2-zip-f8", "v3-zip-f4"],
)
def test_plain_zarr_reads_the_points(
    tmp_path: Path, zarr_format: int, suffix: str, dtype: type[np.floating]
) -> None:
    rng = np.random.default_rng(7)
    pos = rng.uniform(-25.0, 25.0, size=(300, 3)).astype(dtype)
    pos[:5] = [[0.0, 0.0, 0.0], [10.0, -10.0, 20.0], [-0.0, 5.0, -20.0], [10.0, 10.0, 10.0],
               [0.0, 0.0, 0.0]]  # fmt: skip
    path = tmp_path / f"s{suffix}"
    zv.write_points(
        str(path), pos, chunk_shape=(10.0, 10.0, 10.0), bin_shape=(5.0, 5.0, 2.5),
        zarr_format=zarr_format, attributes={"intensity": np.arange(300, dtype=np.uint16)},
    )  # fmt: skip
    if zarr_format == 2 and suffix != ".zip":
        assert (path / ".zattrs").is_file()
    out = tmp_path / "recovered.npy"
    report = run_plain_zarr(path, zarr_format, out)
    recovered = np.load(out)
    assert report["rows"] == len(pos)
    assert recovered.dtype == pos.dtype
    assert_points_equal(zv.Points(recovered), zv.Points(pos))


def test_the_reader_script_has_no_zarr_vectors_import() -> None:
    assert "import zarr_vectors" not in PLAIN_ZARR_READER
    assert "from zarr_vectors" not in PLAIN_ZARR_READER
