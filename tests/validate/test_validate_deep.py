"""L3–L5 of the validator: every check id fires on the damage it names, clean stores of every
geometry type (and their pyramids) give no findings, and the chunk scan streams in batches."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.cli import app
from zarr_vectors.core.multiscale import write_multiscale_metadata
from zarr_vectors.core.payload.chain import element_codec
from zarr_vectors.core.payload.rows import PayloadArray
from zarr_vectors.spec.conventions import Severity
from zarr_vectors.testing import strategies as zst
from zarr_vectors.types.graphs import write_graph
from zarr_vectors.types.meshes import write_meshes
from zarr_vectors.types.skeletons import write_skeletons
from zarr_vectors.validate import _levelview, validate
from zarr_vectors.validate._context import MAX_REPEATS

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared damage kit in tests/reliability
from reliability._damage import KINDS, Damage, _grid_mesh, fresh, write_kind

D = 3

# ---------------------------------------------------------------------------------------------
# clean stores


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_written_stores_are_clean_at_level_5(kind: str, fmt: int) -> None:
    d = fresh(kind, fmt)  # type: ignore[arg-type]
    assert validate(d.store, level=5).findings == ()
    sparsity = None if kind == "points_plain" else [1.0, 0.5]
    zv.build_pyramid(d.store, [(1, 1, 5), (5, 5, 5)], object_sparsity=sparsity)
    report = validate(d.store, level=5)
    assert report.findings == (), str(report)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"shards": (2, 2, 2)}, id="sharded"),
        pytest.param({"compressor": None}, id="uncompressed"),
        pytest.param({"compressor": {"*": None, "vertices": "default"}}, id="mixed-codecs"),
    ],
)
@pytest.mark.parametrize("kind", ["points", "polylines", "mesh"])
def test_store_variants_are_clean(kind: str, options: dict[str, Any]) -> None:
    d = fresh(kind, 3, **options)
    report = validate(d.store, level=5)
    assert report.findings == (), str(report)


def test_local_and_zip_stores_are_clean(tmp_path: Path) -> None:
    for name in ("s.zarrvectors", "s.zip"):
        write_kind("polylines", str(tmp_path / name))
        report = validate(str(tmp_path / name), level=5)
        assert report.findings == (), str(report)


def test_streamed_store_is_clean() -> None:
    store = MemoryStore()
    rng = np.random.default_rng(3)
    with zv.open_writer(store, "polyline", chunk_shape=(25.0,) * 3, bin_shape=(5.0,) * 3) as w:
        for _ in range(3):
            w.append([rng.uniform(0, 100, (9, 3)) for _ in range(4)])
    assert validate(store, level=5).findings == ()


_C = (10.0, 10.0)


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_valid_stores_are_clean(data: st.DataObject) -> None:
    """Whatever the writers accept validates clean at every level (no false positives)."""
    kind = data.draw(st.sampled_from(["points", "paths", "trees", "graph", "mesh"]))
    store = MemoryStore()
    opts: dict[str, Any] = {"chunk_shape": _C, "bin_shape": (2.5, 5.0)}
    if kind == "points":
        pts = data.draw(zst.point_arrays(_C, max_points=30))
        zv.write_points(store, pts, **opts)
    elif kind == "paths":
        case = data.draw(zst.ragged_paths(_C, min_paths=1))
        zv.write_polylines(store, case.positions, offsets=case.offsets, **opts)
    elif kind == "trees":
        tree = data.draw(zst.trees(_C))
        write_skeletons(store, tree.positions, tree.parents, **opts)
    elif kind == "graph":
        g = data.draw(zst.graphs(_C))
        write_graph(store, g.positions, g.edges, **opts)
    else:
        m = data.draw(zst.meshes(_C))
        write_meshes(store, m.positions, m.faces, **opts)
    report = validate(store, level=5)
    assert report.findings == (), str(report)


# ---------------------------------------------------------------------------------------------
# damage helpers


def _occupied_with(d: Damage, path: str, min_rows: int = 1, level: str = "0") -> int:
    for flat in d.occupied(level):
        if len(d.rows(f"{level}/{path}", flat)) >= min_rows:
            return flat
    raise AssertionError(f"no chunk of {path} has {min_rows} rows")


def edit_rows(
    d: Damage, path: str, fn: Callable[[Any], Any], min_rows: int = 1, level: str = "0"
) -> None:
    """Apply ``fn`` to the rows of the first chunk of ``path`` holding ``min_rows`` rows."""
    flat = _occupied_with(d, path, min_rows, level)
    rows = d.rows(f"{level}/{path}", flat)
    d.set_rows(f"{level}/{path}", flat, fn(rows))


def edit_dense(d: Damage, path: str, fn: Callable[[Any], Any]) -> None:
    arr = d.dense(path)
    out = fn(arr)
    d.set_dense(path, arr if out is None else out)


def set_attr(d: Damage, node: str, key: str, value: Any) -> None:
    d.edit_attrs(node, lambda a: a.__setitem__(key, value))


def set_and_rebuild(d: Damage, node: str, key: str, value: Any) -> None:
    """Set a level attribute and rebuild ``multiscales`` from the levels (consistent L2)."""
    set_attr(d, node, key, value)
    write_multiscale_metadata(d.root())


def copy_level(d: Damage, src: str, dst: str, ratio: tuple[int, ...], **attrs: Any) -> None:
    """Copy level ``src`` to a new level ``dst`` (a coarse level built from ``dst - 1``)."""
    for key in d.keys(f"{src}/"):
        data = d.get(key)
        assert data is not None
        d.put(f"{dst}/" + key.removeprefix(f"{src}/"), data)

    def update(a: dict[str, Any]) -> None:
        a.update(level=int(dst), bin_ratio=list(ratio), bin_shape=[5.0 * r for r in ratio])
        a.update(coarsening={"method": "bin_mean", "source_level": int(dst) - 1})
        a.update(attrs)

    d.edit_attrs(dst, update)
    write_multiscale_metadata(d.root())


def shift(delta: float) -> Callable[[Any], Any]:
    def apply(rows: Any) -> Any:
        rows[0, 0] += delta
        return rows

    return apply


def setitem(index: Any, value: Any) -> Callable[[Any], Any]:
    def apply(rows: Any) -> Any:
        rows[index] = value
        return rows

    return apply


def reverse(records: Any) -> Any:
    """Swap the two endpoints of 2-endpoint cross-chunk records."""
    return np.c_[records[:, D + 1 :], records[:, : D + 1]]


def tiny_skeleton(extra_edge: tuple[int, int] | None = None, swap: bool = False) -> Damage:
    """Two 3-node chains in one chunk; optionally add an edge or rewire one across trees."""
    store = MemoryStore()
    pos = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3], [5, 5, 5], [6, 6, 6], [7, 7, 7.0]])
    write_skeletons(store, pos, np.array([-1, 0, 1, -1, 3, 4]), chunk_shape=(50.0,) * 3)
    d = Damage(store)
    links = d.rows("0/links", 0)
    if extra_edge is not None:
        links = np.vstack([links, np.array(extra_edge, dtype=links.dtype)])
    if swap:
        links[0, 1] = 4  # node 1's parent becomes node 4, in the other tree
    d.set_rows("0/links", 0, links)
    return d


def mesh_two_objects_joined() -> Damage:
    store = MemoryStore()
    pos = np.random.default_rng(0).uniform(0, 40, (6, 3))
    write_meshes(store, pos, np.array([[0, 1, 2], [3, 4, 5]]), chunk_shape=(50.0,) * 3)
    d = Damage(store)
    d.set_rows("0/links", 0, setitem((1, 0), 0)(d.rows("0/links", 0)))
    return d


def write_empty_element(d: Damage) -> None:
    """Store an element with no rows for a chunk that holds nothing."""
    pa: PayloadArray = d.payload("0/vertices")
    empty = next(f for f in range(int(np.prod(pa.array.shape))) if f not in d.occupied())
    fast = element_codec(pa.array)
    assert fast is not None
    d.put(d.chunk_key("0/vertices", empty), fast[0].encode(b""))


def pyramid(kind: str, ratios: list[tuple[int, ...]], **kw: Any) -> Damage:
    d = fresh(kind)
    zv.build_pyramid(d.store, ratios, **kw)
    return d


def relabel_as_line(d: Damage) -> None:
    set_attr(d, "", "geometry_type", "line")


# ---------------------------------------------------------------------------------------------
# the table of damages


@dataclass(frozen=True)
class Case:
    """A store, a damage, and the finding it must produce."""

    check: str
    kind: str
    damage: Callable[[Damage], None] | None = None
    severity: Severity = Severity.ERROR
    build: Callable[[], Damage] | None = None
    path: str | None = None
    """Expected prefix of the finding's path."""


CASES = [
    # L3: dense object index
    Case(
        "L3.dense.decode",
        "polylines",
        lambda d: d.put("0/object_index/offsets/c/0", b"not zstd"),
        path="/0/object_index",
    ),
    Case(
        "L3.object_index.offsets",
        "polylines",
        lambda d: edit_dense(d, "0/object_index/offsets", lambda a: a.__setitem__(-1, a[-1] + 1)),
    ),
    Case(
        "L3.object_index.offsets",
        "polylines",
        lambda d: edit_dense(d, "0/object_index/offsets", lambda a: a.__setitem__(2, 0)),
    ),
    Case(
        "L3.object_index.manifest",
        "polylines",
        lambda d: edit_dense(d, "0/object_index/manifest", lambda a: a[:, :-1]),
    ),
    Case(
        "L3.manifest.range",
        "polylines",
        lambda d: edit_dense(d, "0/object_index/manifest", lambda a: a.__setitem__((0, D), 999)),
        path="/0/object_index/manifest[0]",
    ),
    Case(
        "L3.manifest.range",
        "points",
        lambda d: edit_dense(d, "0/object_index/manifest", lambda a: a.__setitem__((0, 0), 99)),
    ),
    Case(
        "L3.manifest.range",
        "graph",
        lambda d: edit_dense(d, "0/object_index/manifest", lambda a: a.__setitem__((0, D + 1), 0)),
    ),
    Case(
        "L3.object_attributes.align",
        "polylines",
        lambda d: edit_dense(d, "0/object_attributes/length", lambda a: a[:-1]),
    ),
    Case(
        "L3.groupings.index",
        "polylines",
        lambda d: edit_dense(d, "0/groupings/members", lambda a: a.__setitem__(0, 99)),
    ),
    Case(
        "L3.groupings.index",
        "polylines",
        lambda d: edit_dense(d, "0/groupings/offsets", lambda a: a.__setitem__(-1, 9)),
    ),
    Case("L3.groupings.index", "polylines", lambda d: set_attr(d, "0/groupings", "names", ["a"])),
    Case(
        "L3.groupings_attributes.align",
        "polylines",
        lambda d: edit_dense(d, "0/groupings_attributes/g", lambda a: np.r_[a, a]),
    ),
    # L3: payloads
    Case(
        "L3.payload.decode",
        "points",
        lambda d: d.put(d.chunk_key("0/vertices", d.occupied()[0]), b"\x28\xb5\x2f\xfdjunk"),
        path="/0/vertices[",
    ),
    Case(
        "L3.payload.decode",
        "polylines",
        lambda d: d.put(d.chunk_key("0/vertex_fragments", d.occupied()[1]), b""),
    ),
    Case(
        "L3.payload.rows",
        "graph",
        lambda d: edit_rows(d, "vertices", lambda r: r.tobytes()[:-5]),
        path="/0/vertices[",
    ),
    Case("L3.payload.rows", "mesh", lambda d: edit_rows(d, "links", lambda r: r.tobytes() + b"x")),
    Case("L3.chunk.empty_written", "points", write_empty_element, Severity.WARNING),
    Case(
        "L3.vertex_counts.match",
        "points_plain",
        lambda d: edit_dense(d, "0/vertex_counts", lambda a: a.__setitem__((0, 0, 0), 99)),
        path="/0/vertex_counts[0,0,0]",
    ),
    Case(
        "L3.vertex_counts.match",
        "skeleton",
        lambda d: d.delete(d.chunk_key("0/vertices", d.occupied()[0])),
    ),
    Case("L3.vertices.finite", "points", lambda d: edit_rows(d, "vertices", setitem(0, np.nan))),
    Case(
        "L3.vertices.chunk",
        "lines",
        lambda d: edit_rows(d, "vertices", shift(30.0)),
        path="/0/vertices[",
    ),
    Case(
        "L3.fragments.tile",
        "points",
        lambda d: edit_rows(d, "vertex_fragments", setitem((0, 2), 1)),
    ),
    Case(
        "L3.fragments.tile",
        "polylines",
        lambda d: edit_rows(d, "vertex_fragments", setitem((-1, 3), 2**40)),
    ),
    Case("L3.fragments.tile", "mesh", lambda d: edit_rows(d, "vertex_fragments", lambda r: r[1:])),
    Case(
        "L3.fragments.bin",
        "points_plain",
        lambda d: edit_rows(
            d, "vertex_fragments", lambda r: setitem((0, 0), (r[0, 0] + 1) % 125)(r)
        ),
    ),
    Case(
        "L3.fragments.object",
        "points",
        lambda d: edit_rows(d, "vertex_fragments", setitem((0, 1), 10)),
    ),
    Case(
        "L3.fragments.object",
        "points_plain",
        lambda d: edit_rows(d, "vertex_fragments", setitem((0, 1), 0)),
    ),
    Case(
        "L3.manifest.tile",
        "polylines",
        lambda d: edit_dense(
            d,
            "0/object_index/manifest",
            lambda a: a.__setitem__(
                (np.argmax(a[:, -1] > 1), D + 1), a[np.argmax(a[:, -1] > 1), -1] - 1
            ),
        ),
    ),
    Case(
        "L3.manifest.tile",
        "points",
        lambda d: edit_rows(
            d, "vertex_fragments", lambda r: setitem((0, 1), (r[0, 1] + 1) % 10)(r)
        ),
    ),
    Case(
        "L3.attributes.align",
        "points",
        lambda d: edit_rows(d, "attributes/intensity", lambda r: np.r_[r, r[:1]]),
        path="/0/attributes/intensity[",
    ),
    Case(
        "L3.link_attributes.align",
        "graph",
        lambda d: edit_rows(d, "link_attributes/w", lambda r: r[1:]),
    ),
    Case(
        "L3.cross_chunk_link_attributes.align",
        "graph",
        lambda d: edit_rows(d, "cross_chunk_link_attributes/w", lambda r: np.r_[r, r[:1]]),
    ),
    Case("L3.links.range", "skeleton", lambda d: edit_rows(d, "links", setitem((0, 1), -1))),
    Case("L3.links.range", "mesh", lambda d: edit_rows(d, "links", setitem((0, 2), 10**6))),
    Case(
        "L3.cross_chunk_links.width",
        "polylines",
        lambda d: set_attr(d, "0/cross_chunk_links", "endpoints", 3),
    ),
    Case("L3.cross_chunk_links.width", "graph", lambda d: set_attr(d, "", "geometry_type", "mesh")),
    Case(
        "L3.cross_chunk_links.owner",
        "polylines",
        lambda d: edit_rows(
            d, "cross_chunk_links", lambda r: setitem((0, slice(0, D)), r[0, D + 1 : 2 * D + 1])(r)
        ),
    ),
    Case(
        "L3.cross_chunk_links.chunk",
        "graph",
        lambda d: edit_rows(d, "cross_chunk_links", setitem((0, D + 1), 10**6)),
    ),
    Case(
        "L3.cross_chunk_links.row",
        "mesh",
        lambda d: edit_rows(d, "cross_chunk_links", setitem((0, 2 * D + 1), 10**6)),
    ),
    Case(
        "L3.cross_chunk_links.local",
        "graph",
        lambda d: edit_rows(
            d,
            "cross_chunk_links",
            lambda r: setitem((0, slice(D + 1, 2 * D + 2)), np.r_[r[0, :D], 0])(r),
        ),
        Severity.WARNING,
    ),
    Case("L3.level.vertex_count", "points", lambda d: set_attr(d, "0", "vertex_count", 7)),
    Case("L3.level.chunk_count", "graph", lambda d: set_attr(d, "0", "chunk_count", 1)),
    Case("L3.level.object_count", "polylines", lambda d: set_attr(d, "0", "object_count", 99)),
    # L4
    Case(
        "L4.skeleton.parents",
        "skeleton",
        lambda d: edit_rows(d, "links", lambda r: setitem((1, 0), r[0, 0])(r), min_rows=2),
    ),
    Case("L4.skeleton.cycle", "skeleton", build=lambda: tiny_skeleton(extra_edge=(0, 2))),
    Case("L4.skeleton.cycle", "skeleton", build=lambda: tiny_skeleton(extra_edge=(3, 3))),
    Case(
        "L4.skeleton.cross_object",
        "skeleton",
        build=lambda: tiny_skeleton(swap=True),
        path="/0/links[0,0,0]",
    ),
    Case("L4.mesh.cross_object", "mesh", build=mesh_two_objects_joined),
    Case(
        "L4.mesh.degenerate",
        "mesh",
        lambda d: edit_rows(d, "links", lambda r: setitem((0, 1), r[0, 0])(r)),
        Severity.WARNING,
    ),
    Case(
        "L4.graph.self_loop",
        "graph",
        lambda d: edit_rows(d, "links", lambda r: setitem((0, 1), r[0, 0])(r)),
        Severity.WARNING,
    ),
    Case(
        "L4.polyline.join_missing",
        "polylines",
        lambda d: edit_rows(d, "cross_chunk_links", lambda r: r[1:]),
        path="/0/cross_chunk_links[",
    ),
    Case("L4.polyline.join_missing", "lines", lambda d: d.delete_dir("0/cross_chunk_links")),
    Case(
        "L4.polyline.join_duplicate",
        "polylines",
        lambda d: edit_rows(d, "cross_chunk_links", lambda r: np.r_[r, r[:1]]),
    ),
    Case(
        "L4.polyline.join_dangling",
        "polylines",
        lambda d: edit_rows(d, "cross_chunk_links", lambda r: np.r_[r, reverse(r[:1])]),
    ),
    Case(
        "L4.polyline.join_dangling",
        "lines",
        lambda d: edit_rows(d, "cross_chunk_links", lambda r: np.r_[r, reverse(r[:1])]),
    ),
    Case("L4.line.vertices", "polylines", relabel_as_line),
    # L5
    Case(
        "L5.pyramid.vertex_count",
        "points",
        build=lambda: pyramid("points", [(5, 5, 5)]),
        damage=lambda d: copy_level(d, "0", "2", (5, 5, 5)),
    ),
    Case(
        "L5.pyramid.bin_ratio",
        "points",
        build=lambda: pyramid("points", [(1, 1, 5), (5, 5, 5)]),
        damage=lambda d: set_attr(d, "2", "bin_ratio", [1, 1, 1]),
    ),
    Case(
        "L5.pyramid.object_sparsity",
        "polylines",
        build=lambda: pyramid("polylines", [(5, 5, 5)], object_sparsity=0.5),
        damage=lambda d: copy_level(d, "0", "2", (5, 5, 5), object_sparsity=0.5),
    ),
    Case(
        "L5.pyramid.object_sparsity",
        "points_plain",
        build=lambda: pyramid("points_plain", [(5, 5, 5)]),
        damage=lambda d: set_and_rebuild(d, "1", "object_sparsity", 0.5),
    ),
    Case(
        "L5.pyramid.sparsity_order",
        "polylines",
        build=lambda: pyramid("polylines", [(1, 1, 5), (5, 5, 5)], object_sparsity=0.5),
        damage=lambda d: set_and_rebuild(d, "2", "object_sparsity", 0.9),
    ),
    Case(
        "L5.pyramid.object_ids",
        "polylines",
        build=lambda: pyramid("polylines", [(5, 5, 5)]),
        damage=lambda d: edit_dense(d, "1/object_index/offsets", lambda a: np.r_[a, a[-1]]),
    ),
    Case(
        "L5.pyramid.object_subset",
        "polylines",
        build=lambda: pyramid("polylines", [(5, 5, 1)], object_sparsity=0.5),
        damage=lambda d: copy_level(d, "0", "2", (5, 5, 5), object_sparsity=0.5),
    ),
    Case(
        "L5.level.coarsening",
        "polylines",
        build=lambda: pyramid("polylines", [(5, 5, 5)]),
        damage=lambda d: d.edit_attrs("1", lambda a: a.pop("coarsening")),
        severity=Severity.WARNING,
    ),
    Case(
        "L5.level.coarsening",
        "points",
        build=lambda: pyramid("points", [(5, 5, 5)]),
        damage=lambda d: d.edit_attrs("1", lambda a: a.pop("sparsity_strategy")),
        severity=Severity.WARNING,
    ),
]


def _case_id(case: Case) -> str:
    return f"{case.check}-{case.kind}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_damage_gives_its_finding(case: Case) -> None:
    d = case.build() if case.build is not None else fresh(case.kind)
    if case.damage is not None:
        case.damage(d)
    report = validate(d.store, level=5)
    hits = [f for f in report.findings if f.check == case.check]
    assert hits, f"expected {case.check}, got:\n{report}"
    assert all(f.severity is case.severity for f in hits), str(report)
    if case.path is not None:
        assert any(f.path.startswith(case.path) for f in hits), [f.path for f in hits]
    assert all(f.message for f in hits)
    if case.severity is Severity.ERROR:
        assert not report.ok
    # the finding belongs to the level that introduces it, not to shallower runs
    level = int(case.check[1])
    assert case.check not in validate(d.store, level=level - 1).checks()


def test_warning_only_damage_keeps_report_ok() -> None:
    d = fresh("points")
    write_empty_element(d)
    report = validate(d.store, level=3)
    assert report.ok
    assert report.checks() == {"L3.chunk.empty_written"}


def test_chunk_findings_name_array_and_chunk() -> None:
    d = fresh("points_plain")
    edit_rows(d, "vertices", shift(30.0))
    (finding,) = [f for f in validate(d.store, level=3).findings if f.check == "L3.vertices.chunk"]
    coords = d.payload("0/vertices")
    flat = d.occupied()[0]
    idx = np.unravel_index(flat, coords.array.shape)
    assert finding.path == "/0/vertices[" + ",".join(str(int(i)) for i in idx) + "]"
    assert "chunk" in finding.message
    assert "vertex row 0" in finding.message


# ---------------------------------------------------------------------------------------------
# errors never stop the run; repeats are capped; streaming


def test_many_problems_are_all_reported() -> None:
    d = fresh("polylines")
    d.put(d.chunk_key("0/vertices", d.occupied()[-1]), b"junk")
    edit_rows(d, "attributes/t", lambda r: r[1:], level="0")
    edit_dense(d, "0/object_attributes/length", lambda a: a[:2])
    set_attr(d, "0", "object_count", 0)
    d.put("0/.zattrs", b"{}")
    checks = validate(d.store, level=5).checks()
    assert {
        "L1.format.mixed",
        "L3.payload.decode",
        "L3.attributes.align",
        "L3.object_attributes.align",
        "L3.level.object_count",
    } <= checks


def test_repeated_findings_are_capped() -> None:
    d = fresh("points_plain")
    chunks = d.occupied()
    assert len(chunks) > MAX_REPEATS + 2
    for flat in chunks:
        d.put(d.chunk_key("0/vertices", flat), b"junk")
    findings = [f for f in validate(d.store, level=3).findings if f.check == "L3.payload.decode"]
    assert len(findings) == MAX_REPEATS + 1
    summary = findings[-1]
    assert summary.path == "/0/vertices"
    assert f"{len(chunks) - MAX_REPEATS} more" in summary.message


def test_chunk_scan_streams_in_bounded_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    d = fresh("polylines")
    edit_rows(d, "vertex_fragments", setitem((0, 2), 1))
    edit_rows(d, "cross_chunk_links", lambda r: r[1:])
    expected = validate(d.store, level=5).findings
    sizes: list[int] = []
    original = PayloadArray.read

    def spy(self: PayloadArray, flats: Any) -> Any:
        sizes.append(len(flats))
        return original(self, flats)

    monkeypatch.setattr(_levelview, "BATCH_CHUNKS", 3)
    monkeypatch.setattr(PayloadArray, "read", spy)
    assert validate(d.store, level=5).findings == expected
    assert sizes
    assert max(sizes) <= 3


def test_no_not_implemented_note_remains() -> None:
    d = fresh("points")
    for level in (3, 4, 5):
        assert validate(d.store, level=level).findings == ()


@pytest.mark.parametrize(("damaged", "code"), [(False, 0), (True, 1)])
def test_cli_deep_levels_exit_codes(tmp_path: Path, damaged: bool, code: int) -> None:
    path = tmp_path / "p.zarrvectors"
    write_kind("polylines", str(path))
    if damaged:
        key = next(p for p in (path / "0" / "cross_chunk_links" / "c").rglob("*") if p.is_file())
        key.unlink()
    result = CliRunner().invoke(app, ["validate", str(path), "--level", "5", "--json"])
    assert result.exit_code == code, result.output
    if damaged:
        assert "L4.polyline.join_missing" in result.stdout


# ---------------------------------------------------------------------------------------------
# Draco and the documentation


def test_draco_vertices_are_decoded() -> None:
    pytest.importorskip("DracoPy")
    store = MemoryStore()
    write_meshes(store, *_grid_mesh(), encoding="draco", chunk_shape=(25.0,) * 3)
    assert validate(store, level=5).findings == ()
    d = Damage(store)
    flat = d.occupied()[0]
    raw = d.payload("0/vertices").read(np.array([flat]))[0]
    d.set_rows("0/vertices", flat, raw[:-7])
    assert "L3.payload.decode" in validate(store, level=3).checks()


_GENERATED = {
    "L3.level.vertex_count",
    "L3.level.chunk_count",
    "L3.level.object_count",
    "L3.attributes.align",
    "L3.link_attributes.align",
    "L3.cross_chunk_link_attributes.align",
}


def test_docs_list_every_check_id() -> None:
    root = Path(__file__).parents[2]
    pattern = re.compile(r"\"(L[1-5]\.[a-z_]+\.[a-z0-9_]+)\"")
    in_code = {
        m
        for src in (root / "src/zarr_vectors/validate").glob("*.py")
        for m in pattern.findall(src.read_text())
    }
    table = re.compile(r"^\| `(L[1-5]\.[a-z_]+\.[a-z0-9_]+)` \|", re.MULTILINE)
    documented = set(table.findall((root / "docs/validation.md").read_text()))
    assert in_code - documented == set(), "undocumented check ids"
    assert documented - in_code - _GENERATED == set(), "documented ids the code never emits"
