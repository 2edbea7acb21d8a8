"""A Dask LocalCluster as the kit's tests and benchmarks start one: ``workers`` processes of one thread each
(each grading child runs torch on one thread), quiet, with no dashboard, and on a machine with a GPU each
worker declared a GPU worker (``--resources GPU=1``), so that the class is graded on the devices a local run
grades on. Yields the cluster and the address ``grade-all --executor`` takes."""
from __future__ import annotations

import logging
from contextlib import contextmanager

import torch


@contextmanager
def local_cluster(workers: int = 2, **options):
    from distributed import LocalCluster

    gpu = {"resources": {"GPU": 1}} if torch.cuda.is_available() else {}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR, **gpu, **options) as cluster:
        yield cluster, "dask://" + cluster.scheduler_address.removeprefix("tcp://")
