"""Synthetic benchmark data sets and the ``.npz`` files consumed by the runners.

Every generator is vectorised NumPy (no per-vertex Python loops) and
deterministic for a given ``seed``.  Each returns a small frozen dataclass
holding flat arrays; :func:`save_task_npz` writes the arrays together with the
query parameters (chunk shape, bounding box, ...) in the layout documented in
``benchmarks/upstream/runner.py``.

npz keys written by :func:`save_task_npz`
-----------------------------------------
All tasks
    ``chunk_shape`` (3,) float64, ``bbox_min`` (3,) float64,
    ``bbox_max`` (3,) float64, optional ``bin_shape`` (3,) float64,
    optional ``query_object`` () int64 (object id for single-object reads).
points
    ``positions`` (N, 3) float32, ``attr_a`` (N,) float32, ``attr_b`` (N,) float32.
streamlines
    ``positions`` (V, 3) float32, ``offsets`` (n + 1,) int64,
    ``attr`` (V,) float32 (per vertex).
skeletons
    ``positions`` (V, 3) float32, ``parents`` (V,) int64 (global node index,
    ``-1`` for roots), ``offsets`` (n + 1,) int64 (node range of each tree).
graph
    ``positions`` (V, 3) float32, ``edges`` (E, 2) int64.
mesh
    ``vertices`` (V, 3) float32, ``faces`` (F, 3) int64 (global vertex
    indices), ``vertex_offsets`` (n + 1,) int64, ``face_offsets`` (n + 1,) int64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

__all__ = [
    "GraphData",
    "MeshData",
    "PointsData",
    "SkeletonsData",
    "StreamlinesData",
    "TaskData",
    "bbox_fraction",
    "chunk_shape_for",
    "make_graph",
    "make_mesh_set",
    "make_points",
    "make_skeletons",
    "make_streamlines",
    "save_task_npz",
]


# ---------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PointsData:
    """A point cloud with two float32 per-point attributes.

    Attributes
    ----------
    positions : ndarray of float32, shape (N, 3)
        Point coordinates.
    attr_a, attr_b : ndarray of float32, shape (N,)
        Per-point attributes.
    """

    task: ClassVar[str] = "points"
    positions: F32
    attr_a: F32
    attr_b: F32

    @property
    def n_vertices(self) -> int:
        """Number of points."""
        return int(self.positions.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the task arrays keyed by their npz names."""
        return {"positions": self.positions, "attr_a": self.attr_a, "attr_b": self.attr_b}


@dataclass(frozen=True)
class StreamlinesData:
    """Streamlines stored flat: all vertices plus CSR-style offsets.

    Attributes
    ----------
    positions : ndarray of float32, shape (V, 3)
        Concatenated vertices of all streamlines.
    offsets : ndarray of int64, shape (n + 1,)
        Streamline ``i`` is ``positions[offsets[i]:offsets[i + 1]]``.
    attr : ndarray of float32, shape (V,)
        One per-vertex scalar (FA-like, in ``[0, 1]``).
    """

    task: ClassVar[str] = "streamlines"
    positions: F32
    offsets: I64
    attr: F32

    @property
    def n_vertices(self) -> int:
        """Total number of vertices."""
        return int(self.positions.shape[0])

    @property
    def n_objects(self) -> int:
        """Number of streamlines."""
        return int(self.offsets.shape[0] - 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the task arrays keyed by their npz names."""
        return {"positions": self.positions, "offsets": self.offsets, "attr": self.attr}


@dataclass(frozen=True)
class SkeletonsData:
    """A forest of skeleton trees.

    Attributes
    ----------
    positions : ndarray of float32, shape (V, 3)
        Node positions of all trees, tree after tree.
    parents : ndarray of int64, shape (V,)
        Global index of each node's parent, ``-1`` for a root.  Parents always
        precede their children and stay inside the same tree.
    offsets : ndarray of int64, shape (n + 1,)
        Tree ``i`` owns nodes ``offsets[i]:offsets[i + 1]``; its root is the
        first node of that range.
    """

    task: ClassVar[str] = "skeletons"
    positions: F32
    parents: I64
    offsets: I64

    @property
    def n_vertices(self) -> int:
        """Total number of nodes."""
        return int(self.positions.shape[0])

    @property
    def n_objects(self) -> int:
        """Number of trees."""
        return int(self.offsets.shape[0] - 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the task arrays keyed by their npz names."""
        return {"positions": self.positions, "parents": self.parents, "offsets": self.offsets}


@dataclass(frozen=True)
class GraphData:
    """A spatial graph.

    Attributes
    ----------
    positions : ndarray of float32, shape (V, 3)
        Node positions.
    edges : ndarray of int64, shape (E, 2)
        Directed edge list ``(source, target)``; no self loops.
    """

    task: ClassVar[str] = "graph"
    positions: F32
    edges: I64

    @property
    def n_vertices(self) -> int:
        """Number of nodes."""
        return int(self.positions.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the task arrays keyed by their npz names."""
        return {"positions": self.positions, "edges": self.edges}


@dataclass(frozen=True)
class MeshData:
    """A set of triangle meshes concatenated into one vertex / face table.

    Attributes
    ----------
    vertices : ndarray of float32, shape (V, 3)
        Vertex positions, mesh after mesh.
    faces : ndarray of int64, shape (F, 3)
        Triangles as *global* vertex indices.
    vertex_offsets : ndarray of int64, shape (n + 1,)
        Mesh ``i`` owns vertices ``vertex_offsets[i]:vertex_offsets[i + 1]``.
    face_offsets : ndarray of int64, shape (n + 1,)
        Mesh ``i`` owns faces ``face_offsets[i]:face_offsets[i + 1]``.
    """

    task: ClassVar[str] = "mesh"
    vertices: F32
    faces: I64
    vertex_offsets: I64
    face_offsets: I64

    @property
    def n_vertices(self) -> int:
        """Total number of vertices."""
        return int(self.vertices.shape[0])

    @property
    def n_objects(self) -> int:
        """Number of meshes."""
        return int(self.vertex_offsets.shape[0] - 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the task arrays keyed by their npz names."""
        return {
            "vertices": self.vertices,
            "faces": self.faces,
            "vertex_offsets": self.vertex_offsets,
            "face_offsets": self.face_offsets,
        }


TaskData = PointsData | StreamlinesData | SkeletonsData | GraphData | MeshData


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _unit(v: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Normalise vectors along the last axis."""
    v = np.asarray(v, dtype=np.float64)
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.asarray(v / np.maximum(norm, 1e-12), dtype=np.float64)


def _segmented_cumsum(x: npt.NDArray[np.floating], offsets: I64) -> npt.NDArray[np.float64]:
    """Cumulative sum along axis 0 restarted at every segment start.

    Parameters
    ----------
    x : ndarray, shape (V, ...)
        Values to accumulate.
    offsets : ndarray of int64, shape (n + 1,)
        Segment boundaries, ``offsets[0] == 0`` and ``offsets[-1] == V``.

    Returns
    -------
    ndarray of float64, shape (V, ...)
        Per-segment inclusive cumulative sums.
    """
    x = np.asarray(x, dtype=np.float64)
    total = np.cumsum(x, axis=0)
    starts = offsets[:-1]
    before = total[starts] - x[starts]
    return np.asarray(total - np.repeat(before, np.diff(offsets), axis=0), dtype=np.float64)


def _tree_path_sum(steps: npt.NDArray[np.float64], parents: I64) -> npt.NDArray[np.float64]:
    """Sum ``steps`` along the path from each node up to its root.

    Uses pointer jumping (``O(V log depth)``), fully vectorised.

    Parameters
    ----------
    steps : ndarray of float64, shape (V, 3)
        Per-node displacement from its parent (the root's step is its start).
    parents : ndarray of int64, shape (V,)
        Parent indices, ``-1`` for roots.

    Returns
    -------
    ndarray of float64, shape (V, 3)
        ``out[i] = steps[i] + out[parents[i]]``.
    """
    acc = steps.copy()
    ptr = parents.copy()
    active = ptr >= 0
    while active.any():
        idx = np.flatnonzero(active)
        acc[idx] += acc[ptr[idx]]
        ptr[idx] = ptr[ptr[idx]]
        active = ptr >= 0
    return acc


def _fold_into_box(
    pos: npt.NDArray[np.float64], lo: npt.ArrayLike, hi: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """Reflect coordinates back into ``[lo, hi]`` (triangle-wave folding).

    Folding is a piecewise isometry, so curves stay continuous and step
    lengths are preserved except at the (rare) fold points.
    """
    lo = np.asarray(lo, dtype=np.float64)
    width = np.asarray(hi, dtype=np.float64) - lo
    m = np.mod(pos - lo, 2.0 * width)
    return np.asarray(lo + np.where(m > width, 2.0 * width - m, m), dtype=np.float64)


def chunk_shape_for(
    positions: npt.NDArray[np.floating], n_chunks_per_axis: int = 8
) -> npt.NDArray[np.float64]:
    """Return a cubic chunk shape giving about ``n_chunks_per_axis`` chunks per axis.

    Parameters
    ----------
    positions : ndarray, shape (N, 3)
        Coordinates to be chunked.
    n_chunks_per_axis : int, optional
        Target number of chunks along the longest axis.

    Returns
    -------
    ndarray of float64, shape (3,)
        Chunk edge lengths (all equal), rounded up to a multiple of 1.
    """
    lo = positions.min(axis=0).astype(np.float64)
    hi = positions.max(axis=0).astype(np.float64)
    side = float(np.ceil(np.max(hi - lo) / n_chunks_per_axis))
    return np.full(3, max(side, 1.0))


def bbox_fraction(
    positions: npt.NDArray[np.floating],
    fraction: float = 0.1,
    centre: npt.ArrayLike | None = None,
) -> tuple[F64, F64]:
    """Return a box covering about ``fraction`` of the data's bounding volume.

    Parameters
    ----------
    positions : ndarray, shape (N, 3)
        Coordinates.
    fraction : float, optional
        Target volume fraction of the axis-aligned bounding box.
    centre : array_like, shape (3,), optional
        Box centre; defaults to the centre of the data's bounds.  Pass a data
        point for sparse data (e.g. meshes) so the box is not empty.

    Returns
    -------
    tuple of ndarray
        ``(bbox_min, bbox_max)``, float64 arrays of shape (3,).
    """
    lo = positions.min(axis=0).astype(np.float64)
    hi = positions.max(axis=0).astype(np.float64)
    mid = (lo + hi) / 2.0 if centre is None else np.asarray(centre, dtype=np.float64)
    half = (hi - lo) * fraction ** (1.0 / 3.0) / 2.0
    return mid - half, mid + half


def save_task_npz(
    path: str | Path,
    data: TaskData,
    *,
    chunk_shape: npt.ArrayLike,
    bbox_min: npt.ArrayLike,
    bbox_max: npt.ArrayLike,
    bin_shape: npt.ArrayLike | None = None,
    query_object: int | None = None,
) -> Path:
    """Write ``data`` plus query parameters as an uncompressed ``.npz``.

    Parameters
    ----------
    path : str or Path
        Output file (``.npz``).
    data : PointsData, StreamlinesData, SkeletonsData, GraphData or MeshData
        The data set; its ``task`` decides the array keys (see module docstring).
    chunk_shape : array_like, shape (3,)
        Spatial chunk shape for chunked stores.
    bbox_min, bbox_max : array_like, shape (3,)
        Inclusive corners of the bounding-box query.
    bin_shape : array_like, shape (3,), optional
        Optional sub-chunk bin shape.
    query_object : int, optional
        Object id used for single-object reads (default: middle object).

    Returns
    -------
    Path
        The written path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = dict(data.arrays())
    arrays["task"] = np.array(data.task)
    arrays["chunk_shape"] = np.asarray(chunk_shape, dtype=np.float64).reshape(3)
    arrays["bbox_min"] = np.asarray(bbox_min, dtype=np.float64).reshape(3)
    arrays["bbox_max"] = np.asarray(bbox_max, dtype=np.float64).reshape(3)
    if bin_shape is not None:
        arrays["bin_shape"] = np.asarray(bin_shape, dtype=np.float64).reshape(3)
    if query_object is not None:
        arrays["query_object"] = np.asarray(query_object, dtype=np.int64)
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return path


# ---------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------


def make_points(n: int = 1_000_000, seed: int = 0, box: float = 1000.0) -> PointsData:
    """Generate a clustered point cloud in a ``box``-sided cube.

    Half of the points are uniform in the cube, half are drawn from 64
    anisotropic Gaussian clusters (clipped to the cube), which gives both
    dense and sparse chunks.

    Parameters
    ----------
    n : int, optional
        Number of points.
    seed : int, optional
        Random seed.
    box : float, optional
        Cube side length; coordinates lie in ``[0, box]``.

    Returns
    -------
    PointsData
        Positions plus ``attr_a`` (intensity-like, ``[0, 1)``) and ``attr_b``
        (standard normal) attributes.
    """
    rng = np.random.default_rng(seed)
    n_uniform = n // 2
    n_cluster = n - n_uniform
    uniform = rng.uniform(0.0, box, size=(n_uniform, 3))
    n_clusters = 64
    centres = rng.uniform(0.1 * box, 0.9 * box, size=(n_clusters, 3))
    sigmas = rng.uniform(0.01 * box, 0.05 * box, size=(n_clusters, 3))
    which = rng.integers(0, n_clusters, size=n_cluster)
    clustered = centres[which] + rng.standard_normal((n_cluster, 3)) * sigmas[which]
    pos = np.clip(np.concatenate([uniform, clustered]), 0.0, box)
    pos = pos[rng.permutation(n)].astype(np.float32)
    attr_a = rng.random(n, dtype=np.float32)
    attr_b = rng.standard_normal(n, dtype=np.float32)
    return PointsData(positions=pos, attr_a=attr_a, attr_b=attr_b)


def make_streamlines(
    n: int = 100_000,
    n_vertices: int = 100,
    seed: int = 0,
    step: float = 1.0,
    vary_length: bool = True,
) -> StreamlinesData:
    """Generate smooth tractography-like streamlines in a ~200 mm brain-like box.

    Seeds lie inside an ellipsoid (radii 70 x 85 x 60 mm centred at
    (100, 110, 75) mm).  Directions follow a smoothed random walk on the
    sphere and vertices are placed every ``step`` mm; curves leaving the
    brain box ``[30, 170] x [25, 195] x [15, 135]`` mm are reflected back in.

    Parameters
    ----------
    n : int, optional
        Number of streamlines.
    n_vertices : int, optional
        Mean number of vertices per streamline.
    seed : int, optional
        Random seed.
    step : float, optional
        Step length in mm.
    vary_length : bool, optional
        If true, lengths are uniform in ``[n_vertices // 2, 3 * n_vertices // 2]``
        (mean ``n_vertices``); otherwise every streamline has ``n_vertices``.

    Returns
    -------
    StreamlinesData
        Flat positions, ``(n + 1,)`` offsets and a per-vertex FA-like scalar.
    """
    rng = np.random.default_rng(seed)
    if vary_length:
        lengths = rng.integers(max(2, n_vertices // 2), 3 * n_vertices // 2 + 1, size=n)
    else:
        lengths = np.full(n, max(2, n_vertices), dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    seg = np.repeat(np.arange(n), lengths)

    radii = np.array([70.0, 85.0, 60.0])
    centre = np.array([100.0, 110.0, 75.0])
    u = _unit(rng.standard_normal((n, 3))) * rng.random((n, 1)) ** (1.0 / 3.0)
    starts = centre + u * radii
    d0 = _unit(rng.standard_normal((n, 3)))

    # Direction = initial direction + integrated (smoothed) noise, renormalised.
    noise = rng.standard_normal((total, 3)) * 0.08
    noise[offsets[:-1]] = 0.0
    dirs = _unit(d0[seg] + _segmented_cumsum(noise, offsets))
    disp = dirs * step
    disp[offsets[:-1]] = 0.0
    pos = starts[seg] + _segmented_cumsum(disp, offsets)
    pos = _fold_into_box(pos, centre - radii, centre + radii)

    idx_in_seg = np.arange(total) - np.repeat(offsets[:-1], lengths)
    phase = rng.uniform(0, 2 * np.pi, size=n)[seg]
    fa = 0.45 + 0.25 * np.sin(idx_in_seg * (step / 15.0) + phase)
    fa += rng.standard_normal(total) * 0.03
    attr = np.clip(fa, 0.0, 1.0).astype(np.float32)
    return StreamlinesData(positions=pos.astype(np.float32), offsets=offsets, attr=attr)


def make_skeletons(
    n: int = 1000,
    nodes: int = 1000,
    seed: int = 0,
    box: float = 1000.0,
    branch_prob: float = 0.02,
    step: float = 1.0,
) -> SkeletonsData:
    """Generate a forest of random neuron-like trees.

    Each node's parent is the previous node (continuing the branch) except,
    with probability ``branch_prob``, a uniformly random earlier node of the
    same tree (a branch point).  Each branch gets a persistent direction;
    positions are the root position plus the sum of steps along the path to
    the root (computed by vectorised pointer jumping), folded back into the
    ``box`` cube.

    Parameters
    ----------
    n : int, optional
        Number of trees.
    nodes : int, optional
        Nodes per tree.
    seed : int, optional
        Random seed.
    box : float, optional
        Roots are uniform in ``[0.1 box, 0.9 box]^3``.
    branch_prob : float, optional
        Probability that a node starts a new branch.
    step : float, optional
        Mean step length between a node and its parent.

    Returns
    -------
    SkeletonsData
        Positions, global parent indices (``-1`` roots) and per-tree offsets.
    """
    rng = np.random.default_rng(seed)
    nodes = max(1, nodes)
    total = n * nodes
    offsets = np.arange(n + 1, dtype=np.int64) * nodes
    local = np.tile(np.arange(nodes, dtype=np.int64), n)
    base = np.repeat(offsets[:-1], nodes)

    is_branch = (rng.random(total) < branch_prob) & (local > 1)
    rand_parent = np.floor(rng.random(total) * np.maximum(local, 1)).astype(np.int64)
    local_parent = np.where(is_branch, rand_parent, local - 1)
    parents = np.where(local == 0, -1, base + local_parent)

    # One persistent direction per branch (a branch starts at every root and
    # at every branching node); jitter each step.
    branch_start = is_branch | (local == 0)
    branch_id = np.cumsum(branch_start) - 1
    branch_dir = _unit(rng.standard_normal((int(branch_start.sum()), 3)))
    steps = _unit(branch_dir[branch_id] + 0.8 * rng.standard_normal((total, 3))) * step
    roots = rng.uniform(0.1 * box, 0.9 * box, size=(n, 3))
    steps[local == 0] = roots
    pos = _fold_into_box(_tree_path_sum(steps, parents), 0.0, box)
    return SkeletonsData(positions=pos.astype(np.float32), parents=parents, offsets=offsets)


def _morton_keys(cells: npt.NDArray[np.int64], bits: int = 21) -> npt.NDArray[np.uint64]:
    """Interleave the bits of 3-D integer cell coordinates (Z-order keys)."""
    key = np.zeros(cells.shape[0], dtype=np.uint64)
    c = cells.astype(np.uint64)
    for b in range(bits):  # loop over bits, not vertices
        for axis in range(3):
            bit = (c[:, axis] >> np.uint64(b)) & np.uint64(1)
            key |= bit << np.uint64(3 * b + axis)
    return key


def make_graph(
    n_nodes: int = 1_000_000,
    seed: int = 0,
    box: float = 1000.0,
    k: int = 3,
    long_range_fraction: float = 0.01,
) -> GraphData:
    """Generate a random geometric-ish spatial graph.

    Nodes are uniform in a ``box`` cube.  Nodes are sorted along a Z-order
    (Morton) curve over a fine grid and every node is linked to its ``k``
    successors along the curve, which connects mostly spatial neighbours; a
    small fraction of extra random long-range edges is added.

    Parameters
    ----------
    n_nodes : int, optional
        Number of nodes.
    seed : int, optional
        Random seed.
    box : float, optional
        Cube side length.
    k : int, optional
        Successors linked per node along the curve (about ``k`` edges per node).
    long_range_fraction : float, optional
        Extra random edges as a fraction of ``n_nodes``.

    Returns
    -------
    GraphData
        Positions (in random node order) and a ``(E, 2)`` edge list.
    """
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.0, box, size=(n_nodes, 3)).astype(np.float32)
    cells_per_axis = max(1, round((n_nodes / 4.0) ** (1.0 / 3.0)))
    cells = np.minimum((pos / box * cells_per_axis).astype(np.int64), cells_per_axis - 1)
    order = np.argsort(_morton_keys(cells), kind="stable")
    parts = [np.stack([order[:-j], order[j:]], axis=1) for j in range(1, min(k, n_nodes - 1) + 1)]
    n_long = int(n_nodes * long_range_fraction)
    if n_long and n_nodes > 1:
        src = rng.integers(0, n_nodes, size=n_long)
        dst = (src + rng.integers(1, n_nodes, size=n_long)) % n_nodes
        parts.append(np.stack([src, dst], axis=1))
    edges = np.concatenate(parts).astype(np.int64) if parts else np.zeros((0, 2), np.int64)
    edges = edges[rng.permutation(edges.shape[0])]
    return GraphData(positions=pos, edges=edges)


def make_mesh_set(
    total_vertices: int = 1_000_000,
    seed: int = 0,
    box: float = 1000.0,
    subdivisions: tuple[int, ...] = (3, 4, 5),
    roughness: float = 0.08,
) -> MeshData:
    """Generate a set of bumpy closed surfaces (displaced icospheres).

    Icosphere templates come from :func:`trimesh.creation.icosphere`; copies
    are scaled, displaced radially by smooth random "blob" noise (so they look
    like marching-cubes cell surfaces rather than perfect spheres) and placed
    at random centres.  The subdivision level cycles through
    ``subdivisions`` until about ``total_vertices`` vertices are reached.

    Parameters
    ----------
    total_vertices : int, optional
        Approximate total number of vertices.
    seed : int, optional
        Random seed.
    box : float, optional
        Mesh centres are uniform in ``[0.05 box, 0.95 box]^3``.
    subdivisions : tuple of int, optional
        Icosphere subdivision levels to mix (``10 * 4**s + 2`` vertices each).
    roughness : float, optional
        Relative amplitude of the radial displacement.

    Returns
    -------
    MeshData
        Concatenated vertices, global faces and per-mesh offsets.
    """
    import trimesh  # local import: only the mesh generator needs it

    rng = np.random.default_rng(seed)
    templates = {s: trimesh.creation.icosphere(subdivisions=s, radius=1.0) for s in subdivisions}
    sizes = {s: len(templates[s].vertices) for s in subdivisions}
    per_cycle = sum(sizes.values())
    n_cycles = max(1, math.ceil(total_vertices / per_cycle))
    counts = dict.fromkeys(subdivisions, n_cycles)
    # Trim the largest level so the total stays close to the target.
    excess = n_cycles * per_cycle - total_vertices
    big = max(subdivisions)
    counts[big] = max(1, counts[big] - excess // sizes[big])

    verts_parts: list[npt.NDArray[np.float64]] = []
    faces_parts: list[I64] = []
    nv_parts: list[I64] = []
    nf_parts: list[I64] = []
    v_base = 0
    for s in subdivisions:
        m = counts[s]
        if m <= 0:
            continue
        tv = np.asarray(templates[s].vertices, dtype=np.float64)
        tf = np.asarray(templates[s].faces, dtype=np.int64)
        nv, nf = tv.shape[0], tf.shape[0]
        # Smooth radial displacement: sum of 3 random low-order "blobs".
        lobes = _unit(rng.standard_normal((m, 3, 3)))
        amp = rng.uniform(0.0, roughness, size=(m, 3))
        cosang = np.einsum("vd,mkd->mvk", tv, lobes)
        bump = 1.0 + np.einsum("mk,mvk->mv", amp, cosang**2)
        radius = rng.uniform(4.0, 12.0, size=m) * (1.0 + s / 4.0)
        centre = rng.uniform(0.05 * box, 0.95 * box, size=(m, 3))
        v = tv[None] * (bump * radius[:, None])[..., None] + centre[:, None, :]
        f = tf[None] + (v_base + np.arange(m, dtype=np.int64) * nv)[:, None, None]
        verts_parts.append(v.reshape(-1, 3))
        faces_parts.append(f.reshape(-1, 3))
        nv_parts.append(np.full(m, nv, dtype=np.int64))
        nf_parts.append(np.full(m, nf, dtype=np.int64))
        v_base += m * nv
    vertex_offsets = np.concatenate([[0], np.cumsum(np.concatenate(nv_parts))]).astype(np.int64)
    face_offsets = np.concatenate([[0], np.cumsum(np.concatenate(nf_parts))]).astype(np.int64)
    return MeshData(
        vertices=np.concatenate(verts_parts).astype(np.float32),
        faces=np.concatenate(faces_parts),
        vertex_offsets=vertex_offsets,
        face_offsets=face_offsets,
    )
