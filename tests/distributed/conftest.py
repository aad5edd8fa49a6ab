"""The Dask cluster the distributed tests share: a LocalCluster of two worker processes
(one thread each), one per test module; tests that use it skip when Dask is missing."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():  # noqa: ANN201
    distributed = pytest.importorskip("distributed")
    import logging

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0",
                                       silence_logs=logging.ERROR)  # fmt: skip
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
