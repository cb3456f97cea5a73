"""Link spans: per-span extremes and owners equal a brute-force computation."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_vectors.core.links import spans as spans_module
from zarr_vectors.core.links.spans import LinkSpans


@pytest.mark.parametrize("n_links", [0, 1, 7, 8, 9, 8 * 5, 8 * 5 + 3, 1000])
@pytest.mark.parametrize("k", [2, 3])
def test_extremes_equal_brute_force(monkeypatch: pytest.MonkeyPatch, n_links: int, k: int) -> None:
    monkeypatch.setattr(spans_module, "_REDUCE_SPANS", 3)  # several reduction blocks
    rng = np.random.default_rng(n_links * k)
    links = rng.integers(-3, 500, (n_links, k)).astype(np.int64)
    s = LinkSpans.of(links, 8)
    assert s.links is links
    want = [(links[a : a + 8].min(), links[a : a + 8].max()) for a in range(0, n_links, 8)]
    assert list(zip(s.low.tolist(), s.high.tolist(), strict=True)) == want
    lo, hi = LinkSpans.extremes(links.astype(np.uint32), 8)  # the input's own dtype kept
    assert lo.dtype == np.uint32
    assert hi.dtype == np.uint32


def test_owners_equal_brute_force() -> None:
    rng = np.random.default_rng(1)
    n = 300
    run_start = np.concatenate([[0], np.sort(rng.choice(np.arange(1, n), 40, replace=False))])
    run_position = rng.integers(0, 9, len(run_start))
    run_of = np.searchsorted(run_start, np.arange(n), side="right") - 1
    base = np.repeat(rng.integers(0, n, 50), 4)  # each span of 4 links around one vertex
    links = np.clip(base[:, None] + rng.integers(-3, 4, (200, 3)), -2, n + 1)
    s = LinkSpans.of(links, 4)
    got = s.owners(run_start, run_position, n)
    for i in range(len(got)):
        block = links[4 * i : 4 * i + 4].reshape(-1)
        inside = bool((block >= 0).all() and (block < n).all())
        one = inside and len(set(run_of[block].tolist())) == 1
        assert got[i] == (run_position[run_of[block[0]]] if one else -1)
    assert (got >= 0).any()
    assert (got < 0).any()
