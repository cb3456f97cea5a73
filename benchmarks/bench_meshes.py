"""Mesh benchmark: ours vs binary PLY (trimesh) and upstream zarr-vectors 0.2.0.

One process, one data set (:func:`benchmarks.datasets.make_mesh_set`: bumpy closed icosphere
surfaces of 642 / 2,562 / 10,242 vertices, radius ~5-40, centres uniform in
``[50, 950]^3``, about ``--n`` vertices in all, default 1M).  Our store is written with
``zv.write_meshes(store, vertices, faces, object_ids=<mesh index per vertex>)`` once per chunk
configuration (``--configs``).  Queries:

* full read (functional ``zv.read_meshes`` and open Reader ``zv.open(store).read()``);
* one mesh by id: ``--ids`` random ids (fixed seed), one call each, functional
  ``zv.read_meshes(store, object_ids=[q])`` and open Reader; for every id the chunk files the
  read opened are counted (untimed, by spying on our payload I/O:
  :mod:`benchmarks.chunk_reads`) and compared with the chunks the mesh occupies
  (``floor(v / chunk_shape)`` of its vertices);
* central box: :func:`~benchmarks.datasets.bbox_fraction` ``(v, 0.01)`` centred on the middle
  vertex (1 % of the volume) -- the box the peers and upstream answer.

Peers (trimesh, binary little-endian PLY, ``process=False``):

* ``ply-binary`` -- all meshes concatenated in **one** PLY file (:func:`peers.bench_ply_mesh`);
  it has no per-object index, so no by-id read;
* ``ply-per-mesh`` -- **one PLY file per mesh** (``<id>.ply``); full read = load every file and
  concatenate, one mesh by id = load its file, box = full read + mask.
* ``zv-upstream`` -- the ``mesh`` task of ``benchmarks/upstream/runner.py`` on the same data
  and the first configuration's chunk shape.  Upstream's ``read_meshes`` ignores ``object_ids``
  (returns every mesh): recorded as a failed check, its time shown in its own row.

Usage::

    python -m benchmarks.bench_meshes --repeat 3 --upstream-repeat 1
    python -m benchmarks.bench_meshes --n 20000 --repeat 1 --no-upstream
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import datasets as ds
from benchmarks import peers
from benchmarks.bench_points import parse_configs
from benchmarks.objects import (
    READ_CHUNK_ROWS,
    file_peer_extra,
    match_rows,
    object_chunk_stats,
    time_dir_writes,
)
from benchmarks.ours import (
    BBox,
    ZvConfig,
    _make_result,
    add_common_args,
    half_open_mask,
    keep_upstream,
    median_time,
    median_time_cpu,
    object_reads,
    prepare_workdir,
    run_upstream_task,
    sample_ids,
    store_stem,
    time_each,
    write_stores,
    zv_version,
)
from benchmarks.peers import BenchResult, disk_usage
from benchmarks.report import (
    Op,
    Target,
    chunk_table,
    cpu_ratio,
    fmt_seconds,
    render_configs,
    save_run,
)

Arr = npt.NDArray[Any]

OPS = (
    Op("write", "write_s", "write_s"),
    Op("full read (functional)", "read_s", "read_s"),
    Op("full read (open Reader)", "extra:read_open_s", "read_s"),
    Op("one mesh by id (functional, median)", "object_read_s", "object_read_s"),
    Op("one mesh by id (open Reader, median)", "extra:object_open_s", "object_read_s"),
    Op("one mesh by id (open Reader, p90)", "extra:object_open_p90_s", "object_read_s"),
    Op(
        "one mesh by id vs upstream's by-id call (returns all meshes)",
        "extra:object_open_s",
        "extra:object_read_all_s",
    ),
    Op("bbox central 1 % (functional)", "bbox_read_s", "bbox_read_s"),
    Op("bbox central 1 % (open Reader)", "extra:bbox_central_open_s", "bbox_read_s"),
    Op("write — process CPU", "extra:write_cpu_s", "extra:write_cpu_s"),
    Op("full read functional — process CPU", "extra:read_cpu_s", "extra:read_cpu_s"),
    Op("one mesh functional — CPU median", "extra:object_func_cpu_s", None),
    Op("one mesh open Reader — CPU median", "extra:object_open_cpu_s", None),
)
CHUNK_ROWS = (
    ("object_vertices_mean", "vertices per queried mesh (mean)"),
    ("object_chunks_occupied_mean", "chunks a mesh occupies (mean)"),
    ("object_chunks_occupied_max", "chunks a mesh occupies (max)"),
    *READ_CHUNK_ROWS,
    ("object_reads_only_own_chunks", "ids whose reads stayed in their own chunks (fraction)"),
    ("object_reads_all_own_chunks", "ids whose reads read all their chunks (fraction)"),
)
WRITE_SPEEDUP = 10.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(p, n=1_000_000, repeat=3, upstream_repeat=1)
    p.add_argument(
        "--configs",
        default="250,250:zstd,100",
        help="chunk/bin[:compressor] list (default %(default)s)",
    )
    p.add_argument("--ids", type=int, default=50, help="random ids for one-mesh reads")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------
# Checks (outside the timed regions)
# ---------------------------------------------------------------------------


def canonical_faces(faces: Arr) -> npt.NDArray[np.int64]:
    """Rotate each face so its smallest index comes first (orientation kept), sort rows."""
    f = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    if f.shape[0] == 0:
        return f
    shift = np.argmin(f, axis=1)
    cols = (np.arange(3)[None, :] + shift[:, None]) % 3
    f = np.take_along_axis(f, cols, axis=1)
    return f[np.lexsort(f.T[::-1])]


def check_subset(
    data: ds.MeshData, vert_ids: npt.NDArray[np.int64], faces: Arr, res_v: Arr, res_f: Arr
) -> tuple[bool, bool]:
    """(vertices ok, faces ok): ``res_v`` = input vertices ``vert_ids`` (any order), faces set.

    ``faces`` are the expected faces in input (global) indices; ``res_f`` index ``res_v``.
    """
    mapping = match_rows(data.vertices[vert_ids], np.asarray(res_v, dtype=np.float32))
    if mapping is None:
        return False, False
    got = vert_ids[mapping][np.asarray(res_f, dtype=np.int64)]
    return True, bool(np.array_equal(canonical_faces(got), canonical_faces(faces)))


def check_objects(data: ds.MeshData, res: Any, ids: npt.NDArray[np.int64]) -> bool:
    """Whether a ``Meshes`` result holds exactly meshes ``ids`` (in order), whole."""
    if not np.array_equal(np.asarray(res.object_ids), ids):
        return False
    nv = np.diff(data.vertex_offsets)[ids]
    nf = np.diff(data.face_offsets)[ids]
    if not (
        np.array_equal(res.offsets, np.concatenate([[0], np.cumsum(nv)]))
        and np.array_equal(res.face_offsets, np.concatenate([[0], np.cumsum(nf)]))
    ):
        return False
    vert_ids = np.concatenate(
        [np.arange(data.vertex_offsets[q], data.vertex_offsets[q + 1]) for q in ids]
    ).astype(np.int64)
    faces = np.concatenate(
        [data.faces[data.face_offsets[q] : data.face_offsets[q + 1]] for q in ids]
    )
    v_ok, f_ok = check_subset(data, vert_ids, faces, res.vertices, res.faces)
    return v_ok and f_ok


def box_expectation(data: ds.MeshData, box: BBox) -> tuple[npt.NDArray[np.int64], Arr]:
    """Input vertices in the half-open box and the faces with all three of them inside."""
    mask = half_open_mask(data.vertices, box)
    return np.flatnonzero(mask).astype(np.int64), data.faces[mask[data.faces].all(axis=1)]


# ---------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------


def bench_zv_meshes(
    data: ds.MeshData,
    workdir: Path,
    config: ZvConfig,
    box: BBox,
    ids: npt.NDArray[np.int64],
    repeat: int,
    keep_all: bool = False,
) -> BenchResult:
    """``write_meshes`` / ``read_meshes`` / ``zv.open(...).read`` on one configuration."""
    import zarr_vectors as zv

    stem = store_stem(config, "mesh-")
    obj = np.repeat(np.arange(data.n_objects, dtype=np.int64), np.diff(data.vertex_offsets))

    def write(path: Path) -> Any:
        return zv.write_meshes(
            str(path),
            data.vertices,
            data.faces,
            vertex_object_ids=obj,
            chunk_shape=config.chunk_shape,
            bin_shape=config.bin_shape,
            compressor=config.compressor,
        )

    path, summary, timings, extra = write_stores(write, workdir, stem, repeat, keep_all)
    store = str(path)
    everything = np.arange(data.n_objects, dtype=np.int64)

    timings["read_s"], extra["read_cpu_s"], full = median_time_cpu(
        lambda: zv.read_meshes(store), repeat
    )
    checks = {"full_read": check_objects(data, full, everything)}
    extra["full_read_input_order"] = float(np.array_equal(full.vertices, data.vertices))
    del full
    reader = zv.open(store)
    extra["read_open_s"], full = median_time(lambda: reader.read(), repeat)
    checks["full_read_open"] = check_objects(data, full, everything)
    del full

    timings["object_read_s"], obj_checks, obj_extra = object_reads(
        ids,
        lambda q: zv.read_meshes(store, object_ids=[q]),
        lambda q: reader.read(object_ids=[q]),
        lambda res, want: check_objects(data, res, want),
    )
    checks.update(obj_checks)
    extra.update(obj_extra)

    n_box_rep = max(repeat, 5)
    timings["bbox_read_s"], res = median_time(lambda: zv.read_meshes(store, bbox=box), n_box_rep)
    vert_ids, exp_faces = box_expectation(data, box)
    v_ok, f_ok = check_subset(data, vert_ids, exp_faces, res.vertices, res.faces)
    checks["bbox_vertices"], checks["bbox_faces"] = v_ok, f_ok
    extra["bbox_vertices"] = float(len(vert_ids))
    extra["bbox_faces"] = float(len(exp_faces))
    reader.read(bbox=box)  # warm
    extra["bbox_central_open_s"], res = median_time(lambda: reader.read(bbox=box), n_box_rep)
    v_ok, f_ok = check_subset(data, vert_ids, exp_faces, res.vertices, res.faces)
    checks["bbox_open"] = v_ok and f_ok
    del res

    reads = {
        "open": lambda q: reader.read(object_ids=[q]),
        "func": lambda q: zv.read_meshes(store, object_ids=[q]),
    }
    chunk_keys = [key for key, _label in CHUNK_ROWS]
    extra.update(
        object_chunk_stats(
            store, data.vertices, data.vertex_offsets, ids, config.chunk_shape, reads, chunk_keys
        )
    )
    reader.close()
    return _make_result(
        fmt=config.label,
        task="mesh",
        n_vertices=data.n_vertices,
        n_objects=data.n_objects,
        timings=timings,
        path=path,
        checks=checks,
        extra=extra,
        n_chunks=int(summary.chunk_count),
    )


# ---------------------------------------------------------------------------
# PLY, one file per mesh
# ---------------------------------------------------------------------------


def _ply_name(i: int) -> str:
    return f"{i:06d}.ply"


def bench_ply_per_mesh(
    data: ds.MeshData, workdir: Path, box: BBox, ids: npt.NDArray[np.int64], repeat: int
) -> BenchResult:
    """One binary PLY per mesh (trimesh): write all, read all, read one file per id, box."""
    import trimesh

    path = workdir / "meshes-ply-per-mesh"
    n = data.n_objects
    voff, foff = data.vertex_offsets, data.face_offsets

    def write() -> None:
        path.mkdir(parents=True)
        for i in range(n):
            v = data.vertices[voff[i] : voff[i + 1]]
            f = data.faces[foff[i] : foff[i + 1]] - voff[i]
            mesh = trimesh.Trimesh(vertices=v, faces=f, process=False)
            mesh.export(str(path / _ply_name(i)), file_type="ply", encoding="binary")

    def read_one(i: int) -> tuple[Arr, Arr]:
        mesh = trimesh.load_mesh(str(path / _ply_name(i)), process=False)
        return np.asarray(mesh.vertices), np.asarray(mesh.faces)

    def read_all() -> tuple[Arr, Arr]:
        vs: list[Arr] = []
        fs: list[Arr] = []
        base = 0
        for i in range(n):
            v, f = read_one(i)
            vs.append(v)
            fs.append(f + base)
            base += len(v)
        return np.concatenate(vs), np.concatenate(fs)

    def bbox_read() -> tuple[Arr, Arr]:
        v, f = read_all()
        mask = half_open_mask(v, box)
        remap = np.cumsum(mask) - 1
        return v[mask], remap[f[mask[f].all(axis=1)]]

    write_s, write_cpu = time_dir_writes(write, path, repeat)
    timings: dict[str, float | None] = {"write_s": write_s}
    timings["read_s"], read_cpu, (v, f) = median_time_cpu(read_all, repeat)
    checks = {
        "full_read": bool(
            np.array_equal(v.astype(np.float32), data.vertices) and np.array_equal(f, data.faces)
        )
    }
    o_times, o_res = time_each([lambda q=q: read_one(int(q)) for q in ids])
    ok = True
    for q, (ov, of) in zip(ids.tolist(), o_res, strict=True):
        ok = ok and np.array_equal(ov.astype(np.float32), data.vertices[voff[q] : voff[q + 1]])
        ok = ok and np.array_equal(of + voff[q], data.faces[foff[q] : foff[q + 1]])
    checks["object_read"] = bool(ok)
    timings["object_read_s"] = statistics.median(o_times)
    timings["bbox_read_s"], (bv, bf) = median_time(bbox_read, repeat)
    vert_ids, exp_faces = box_expectation(data, box)
    v_ok, f_ok = check_subset(data, vert_ids, exp_faces, bv, bf)
    checks["bbox_read"] = v_ok and f_ok
    size, count = disk_usage(path)
    return BenchResult(
        library="trimesh",
        version=trimesh.__version__,
        fmt="ply-per-mesh",
        task="mesh",
        n_vertices=data.n_vertices,
        n_objects=n,
        write_s=timings["write_s"],
        read_s=timings["read_s"],
        bbox_read_s=timings["bbox_read_s"],
        object_read_s=timings["object_read_s"],
        size_bytes=size,
        file_count=count,
        correct=all(checks.values()),
        note="one binary PLY per mesh; "
        + (f"vertices stored as {v.dtype}" if v.dtype != np.float32 else "float32 vertices")
        + "; bbox = load all + mask",
        checks=tuple(checks.items()),
        extra=file_peer_extra(o_times, write_cpu, read_cpu),
    )


# ---------------------------------------------------------------------------
# Upstream, targets, rendering
# ---------------------------------------------------------------------------


def evaluate(ours: Sequence[BenchResult], peer_res: Sequence[BenchResult]) -> list[Target]:
    """The issue's mesh targets, per configuration."""
    up = next((r for r in peer_res if r.fmt == "zv-upstream"), None)
    targets: list[Target] = []
    for r in ours:
        if up is not None and up.write_s and r.write_s:
            speed = up.write_s / r.write_s
            targets.append(
                Target(
                    f"mesh write ≥ 10× faster than upstream [{r.fmt}]",
                    speed >= WRITE_SPEEDUP,
                    f"{fmt_seconds(r.write_s)} vs upstream {fmt_seconds(up.write_s)} "
                    f"({up.n_chunks} chunks) = {speed:.1f}× faster; process CPU "
                    f"{cpu_ratio(r, up, 'write_cpu_s')}",
                )
            )
        only = r.get_extra("object_reads_only_own_chunks")
        if only is not None:
            targets.append(
                Target(
                    f"reading one mesh touches only its chunks [{r.fmt}]",
                    only == 1.0,
                    f"{only:.0%} of {r.get_extra('n_object_queries'):.0f} ids (functional and "
                    f"open Reader) read payloads of their own chunks only; mean "
                    f"{r.get_extra('object_chunks_read_open_mean'):.2f} chunks read vs "
                    f"{r.get_extra('object_chunks_occupied_mean'):.2f} occupied "
                    f"({r.get_extra('object_files_read_open_mean'):.1f} payload files)",
                )
            )
    return targets


def render(results: Sequence[BenchResult], targets: Sequence[Target], notes: Sequence[str]) -> str:
    """Markdown: one timing table per configuration, chunk reads, sizes, correctness, targets."""
    ours = [r for r in results if r.fmt.startswith("zv ")]
    chunks = chunk_table(ours, CHUNK_ROWS, "one-mesh reads")
    return render_configs(
        results, targets, notes, OPS, middle=["## Chunks read by one-mesh reads", chunks]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print markdown, optionally write JSON."""
    args = parse_args(argv)
    work = prepare_workdir(args, "meshes")
    configs = parse_configs(args.configs)
    data = ds.make_mesh_set(args.n, seed=args.seed)
    box = ds.bbox_fraction(data.vertices, 0.01, centre=data.vertices[data.n_vertices // 2])
    rng = np.random.default_rng(args.seed + 1)
    ids = sample_ids(rng, data.n_objects, args.ids)
    print(
        f"# meshes: {data.n_objects:,} meshes, {data.n_vertices:,} vertices, "
        f"{len(data.faces):,} faces; repeat {args.repeat}, zarr-vectors {zv_version()}, "
        f"workdir {work}",
        flush=True,
    )

    ours = [bench_zv_meshes(data, work, cfg, box, ids, args.repeat, args.keep) for cfg in configs]
    peer_res = [
        peers.bench_ply_mesh(data, work, box, args.repeat),
        bench_ply_per_mesh(data, work, box, ids, args.repeat),
    ]
    notes = [
        (
            "ply-binary = all meshes in one PLY (no per-object index); ply-per-mesh = one PLY "
            "file per mesh. PLY boxes are inclusive, ours half-open (no vertex lies on a face)."
        )
    ]
    if args.upstream:
        up_repeat = args.upstream_repeat or args.repeat
        up = run_upstream_task(
            data, work, configs[0], box, up_repeat, query_object=int(ids[0]), write_repeat=1
        )
        keep_upstream(up, peer_res, notes)

    targets = evaluate(ours, peer_res)
    print(render([*ours, *peer_res], targets, notes))
    save_run(
        args,
        script="bench_meshes",
        work=work,
        results=[*ours, *peer_res],
        targets=targets,
        extra={
            "notes": notes,
            "central_box": [box[0].tolist(), box[1].tolist()],
            "query_ids": ids.tolist(),
        },
    )
    return 0 if all(r.correct for r in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
