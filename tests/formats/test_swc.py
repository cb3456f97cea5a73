"""SWC files: parse a hand-written file, and file -> store -> file node for node.

The fixture file follows the SWC format (Cannon et al. 1998; neuromorpho.org's standardised
SWC): header comments, ``n T x y z R P`` per sample, ids that are positive but not contiguous,
parent ``-1`` for roots, and here three roots (soma, a detached axon piece, a lone marker).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import GeometryError, InvalidInputError
from zarr_vectors.formats.swc import (
    SwcData,
    read_swc,
    skeleton_to_swc,
    store_to_swc,
    swc_to_store,
    write_swc,
)
from zarr_vectors.types.skeletons import read_skeletons

SWC = """\
# ORIGINAL_SOURCE written by hand from the SWC specification
# CREATURE test neuron
# SCALE 1.0 1.0 1.0
#
#  n T x y z R P
1 1 0.0 0.0 0.0 5.0 -1
3 3 0.0 5.5 0.0 1.25 1
7 3 0.0 10.25 1.5 0.75 3
8 3 2.0 12.0 1.5 0.5 7
9 3 -2.0 12.0 1.5 0.5 7
20 2 0.0 -5.0 0.0 1.1 1
21 2 0.0 -15.0 0.5 0.8 20
100 2 30.0 -30.0 0.0 0.6 -1
101 2 31.5 -31.0 0.0 0.6 100
102 2 33.0 -33.0 0.0 0.55 101
4 6 -7.25 3.0 2.0 0.1 -1
"""


@pytest.fixture
def swc_file(tmp_path: Path) -> Path:
    path = tmp_path / "neuron.swc"
    path.write_text(SWC)
    return path


def test_read_hand_written_file(swc_file: Path) -> None:
    d = read_swc(swc_file)
    assert d.header == (
        " ORIGINAL_SOURCE written by hand from the SWC specification",
        " CREATURE test neuron",
        " SCALE 1.0 1.0 1.0",
        "",
        "  n T x y z R P",
    )
    assert d.ids.tolist() == [1, 3, 7, 8, 9, 20, 21, 100, 101, 102, 4]
    assert d.types.tolist() == [1, 3, 3, 3, 3, 2, 2, 2, 2, 2, 6]
    assert d.parents.tolist() == [-1, 1, 3, 7, 7, 1, 20, -1, 100, 101, -1]
    assert d.parent_index.tolist() == [-1, 0, 1, 2, 2, 0, 5, -1, 7, 8, -1]
    assert d.positions[3].tolist() == [2.0, 12.0, 1.5]
    assert d.radii[9] == 0.55
    assert len(d) == 11


def test_file_store_file_node_for_node(swc_file: Path, tmp_path: Path, zarr_format: int) -> None:
    store = MemoryStore()
    summary = swc_to_store(
        swc_file, store, object_ids=[9001], chunk_shape=(4, 4, 4), zarr_format=zarr_format
    )
    assert (summary.object_count, summary.vertex_count) == (1, 11)
    assert zv.open_store(store).attrs["swc_compatible"] is True
    sks = read_skeletons(store)
    assert sks.parents.tolist() == [-1, 0, 1, 2, 2, 0, 5, -1, 7, 8, -1]  # file order kept
    assert sks.radius is not None
    assert sks.radius.dtype == np.float32
    assert sks.attributes["swc_id"].dtype == np.int64
    out = tmp_path / "back.swc"
    back = store_to_swc(store, out, object_id=9001)
    assert out.read_text() == SWC  # header, ids, types, coordinates, radii, parents
    assert back.ids.tolist() == read_swc(swc_file).ids.tolist()


def test_loose_formatting_and_comments_between_samples(tmp_path: Path) -> None:
    path = tmp_path / "loose.swc"
    path.write_text("#h\n\n1\t1  0 0 0   2 -1\n# middle\n2 3 1e1 0 0 1 1   # trailing note\n")
    d = read_swc(path)
    assert d.header == ("h", " middle")
    assert d.positions.tolist() == [[0.0, 0.0, 0.0], [10.0, 0.0, 0.0]]
    store = MemoryStore()
    swc_to_store(path, store, chunk_shape=(4, 4, 4))
    again = store_to_swc(store, None)
    assert again.header == d.header
    assert again.parents.tolist() == [-1, 1]


def test_several_files_become_several_skeletons(swc_file: Path) -> None:
    other = SwcData.from_parent_index(
        [[0, 0, 0], [1, 1, 1], [2, 2, 2]],
        [-1, 0, 1],
        ids=[5, 6, 7],
        types=[1, 3, 3],
        radii=[1.0, 0.5, 0.25],
        header=["second neuron"],
    )
    store = MemoryStore()
    swc_to_store(
        [swc_file, other], store, object_ids=np.array([10, 20], np.uint64), chunk_shape=(4, 4, 4)
    )
    sks = read_skeletons(store)
    assert len(sks) == 2
    assert sks.object_ids.tolist() == [10, 20]
    d = skeleton_to_swc(read_skeletons(store, object_ids=[20])[0])
    assert d.ids.tolist() == [5, 6, 7]
    assert d.parents.tolist() == [-1, 5, 6]
    assert d.header == ("second neuron",)
    assert d.radii.tolist() == [1.0, 0.5, 0.25]
    with pytest.raises(
        InvalidInputError, match="2 skeletons and an SWC file holds one: choose it with object_id="
    ):
        store_to_swc(store, None)


def test_skeleton_without_swc_attributes(tmp_path: Path) -> None:
    store = MemoryStore()
    zv_pos = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    from zarr_vectors.types.skeletons import write_skeletons

    write_skeletons(store, zv_pos, [-1, 0], chunk_shape=(1, 1, 1))
    d = store_to_swc(store, tmp_path / "plain.swc")
    assert (tmp_path / "plain.swc").read_text() == "1 0 0.0 0.0 0.0 1.0 -1\n2 0 1.0 0.0 0.0 1.0 1\n"
    assert d.ids.tolist() == [1, 2]
    flat = MemoryStore()
    write_skeletons(flat, zv_pos[:, :2], [-1, 0], chunk_shape=(1, 1))
    with pytest.raises(InvalidInputError, match="3-D"):
        store_to_swc(flat, None)


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("1 1 0 0 0 1\n", InvalidInputError, "7 columns"),
        ("1 1 0 0 0 1 -1\n2 1 0 0 0 1\n", InvalidInputError, "not an SWC file"),
        ("1.5 1 0 0 0 1 -1\n", InvalidInputError, "integers"),
        ("1 1 0 0 0 1 -1\n1 1 0 0 0 1 1\n", InvalidInputError, "id 1 is repeated"),
        ("x y\n", InvalidInputError, "not an SWC file"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, error: type[Exception], match: str) -> None:
    path = tmp_path / "bad.swc"
    path.write_text(text)
    with pytest.raises(error, match=match):
        read_swc(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1 1 0 0 0 1 -1\n2 1 0 0 0 1 5\n", "sample 2: parent 5 is not a sample id"),
        ("1 1 0 0 0 1 2\n2 1 0 0 0 1 1\n", "cycle"),
    ],
)
def test_bad_trees(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.swc"
    path.write_text(text)
    with pytest.raises(GeometryError, match=match):
        swc_to_store(path, MemoryStore(), chunk_shape=(1, 1, 1))


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.swc"
    path.write_text("# nothing here\n")
    d = read_swc(path)
    assert len(d) == 0
    assert d.header == (" nothing here",)
    out = tmp_path / "out.swc"
    write_swc(out, d)
    assert out.read_text() == "# nothing here\n"


def test_float_round_trip(tmp_path: Any) -> None:
    rng = np.random.default_rng(0)
    d = SwcData.from_parent_index(
        rng.normal(size=(50, 3)) * 1e3, np.arange(-1, 49), radii=rng.random(50)
    )
    write_swc(tmp_path / "f.swc", d)
    back = read_swc(tmp_path / "f.swc")
    np.testing.assert_array_equal(back.positions, d.positions)
    np.testing.assert_array_equal(back.radii, d.radii)
    np.testing.assert_array_equal(back.parents, d.parents)
