"""Write spots.h5ad, the AnnData fixture of tests/formats/test_h5ad.py (run with anndata).

Synthetic data made here (no third-party content): 300 spots with 2-D spatial coordinates,
a 3-D ``spatial_3d`` embedding, and obs columns of every kind AnnData writes: categorical
(unordered with an unused category, ordered, with missing values), string, integer, float32,
boolean and nullable integer.  ``python make_spots.py`` with anndata installed rewrites it.
"""

from __future__ import annotations

from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd

rng = np.random.default_rng(27)
n = 300
types = pd.Categorical(
    rng.choice(["neuron", "astrocyte", "microglia"], n),
    categories=["neuron", "astrocyte", "microglia", "unused"],
)
layer = pd.Categorical(
    rng.choice(["L1", "L2/3", "L4"], n), categories=["L1", "L2/3", "L4"], ordered=True
)
region = pd.Categorical(np.where(rng.random(n) < 0.1, None, rng.choice(["CA1", "CA3"], n)))
obs = pd.DataFrame(
    {
        "cell_type": types,
        "layer": layer,
        "region": region,
        "n_counts": rng.integers(100, 5000, n).astype(np.int64),
        "total": rng.random(n).astype(np.float32),
        "in_tissue": rng.random(n) < 0.8,
        "n_genes": pd.array(
            np.where(rng.random(n) < 0.05, None, rng.integers(1, 50, n)), dtype="Int64"
        ),
    },
    index=[f"spot-{i:04d}" for i in range(n)],
)
adata = ad.AnnData(
    X=rng.random((n, 5)).astype(np.float32),
    obs=obs,
    var=pd.DataFrame(index=[f"gene{i}" for i in range(5)]),
)
adata.obsm["spatial"] = rng.uniform(0, 2000, (n, 2))
adata.obsm["spatial_3d"] = rng.uniform(0, 500, (n, 3)).astype(np.float32)
adata.uns["title"] = "synthetic spots for zarr-vectors tests"
adata.write_h5ad(Path(__file__).with_name("spots.h5ad"))
