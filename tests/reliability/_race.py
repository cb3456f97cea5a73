"""Worker side of the two-process race tests: write a store when told, report the outcome.

Run in spawned processes, so only module-level functions live here.
"""

from __future__ import annotations

import traceback
from multiprocessing.synchronize import Barrier
from typing import Any

import numpy as np
import numpy.typing as npt

import zarr_vectors as zv


def payload(worker: int) -> npt.NDArray[np.float32]:
    """The points worker ``worker`` writes: distinct per worker, so the winner is known."""
    rng = np.random.default_rng(worker)
    return rng.uniform(0, 100, (3_000, 3)).astype(np.float32)


def race_worker(
    worker: int,
    jobs: Any,
    results: Any,
    barrier: Barrier,
    storage_options: dict[str, Any] | None,
) -> None:
    """Write each path from ``jobs`` once every worker is ready; put (path, worker, outcome)."""
    pos = payload(worker)
    while True:
        job = jobs.get()
        if job is None:
            return
        path, overwrite = job
        barrier.wait()
        try:
            zv.write_points(
                path,
                pos,
                chunk_shape=(25.0, 25.0, 25.0),
                overwrite=overwrite,
                storage_options=storage_options,
            )
            outcome = "ok"
        except zv.StoreExistsError:
            outcome = "StoreExistsError"
        except BaseException:  # noqa: BLE001  # reported to the test, which fails on it
            outcome = traceback.format_exc()
        results.put((path, worker, outcome))
