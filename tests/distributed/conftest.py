"""One real LocalCluster (2 worker processes, 1 thread each) shared by the distributed tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from distributed import Client, LocalCluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        host="127.0.0.1",
    ) as c:
        yield c


@pytest.fixture(scope="session")
def client(cluster: LocalCluster) -> Iterator[Client]:
    with Client(cluster) as c:
        yield c
