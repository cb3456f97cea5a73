"""Connected components of vertices joined by links (edges, faces), vectorised.

Used by graphs (objects are components unless given) and meshes (objects are surfaces).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["connected_components"]

IntArray = npt.NDArray[np.int64]


def connected_components(n_vertices: int, links: npt.ArrayLike) -> tuple[IntArray, int]:
    """Label vertices by connected component of (L, k) links (edges k=2, faces k=3).

    Min-label hooking plus pointer jumping: each round hooks the larger root of every link
    edge whose ends have different roots under the smaller one, then compresses paths.  The
    root of a component is its smallest vertex, so components are numbered in input order.

    Returns
    -------
    labels, n
        Component of every vertex (numbered by smallest vertex) and the number of components.

    Examples
    --------
    >>> labels, n = connected_components(5, np.array([[3, 4, 3], [0, 2, 0]]))
    >>> labels.tolist(), n
    ([0, 1, 0, 2, 2], 3)
    >>> connected_components(5, [[3, 1], [4, 0]])[0].tolist()
    [0, 1, 2, 1, 0]
    >>> connected_components(0, np.zeros((0, 3), np.int64))[1]
    0
    """
    dt = np.int32 if n_vertices < 2**31 else np.int64  # half the memory traffic per gather
    label = np.arange(n_vertices, dtype=dt)
    f = np.asarray(links).astype(dt)
    if f.ndim != 2:
        f = f.reshape(-1, 2)
    a, b = f[:, :-1].ravel(), f[:, 1:].ravel()  # chain each link's vertices: k-1 edges
    while a.size:
        la, lb = label[a], label[b]
        live = np.flatnonzero(la != lb)  # an edge whose ends share a root stays joined
        if not live.size:
            break
        if live.size < a.size // 4:  # shrinking costs a copy: only when most edges are done
            a, b, la, lb = a[live], b[live], la[live], lb[live]
        # labels are roots here: hook each larger root under the smallest root it touches
        np.minimum.at(label, np.maximum(la, lb), np.minimum(la, lb))
        while True:
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped
    is_root = label == np.arange(n_vertices, dtype=dt)
    number = np.cumsum(is_root, dtype=np.int64) - 1
    return number[label], int(is_root.sum())
