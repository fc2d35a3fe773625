"""The worker's request threads, and the native libraries' thread pools beside them."""

from __future__ import annotations

import concurrent.futures
import os
import queue
import threading
from collections.abc import Callable
from typing import Any


def limit_native_threads(count: int) -> None:
    """At most ``count`` threads in each native library's pool (OpenBLAS, OpenMP) of this
    worker (``web.native_threads``; 0: the libraries' own defaults, one per core).

    A worker's parallelism is its request threads and its sibling workers: a pool of one
    thread per core in every worker only contends for the same cores. Measured on a 2-core
    machine, 2 workers at 150 related lists/s over 2,529 real articles: half the worker's time
    was OpenBLAS's threads waiting for each other in the lists' small pairwise product
    (``recommend.lists.suppress.pairwise_cosines``). Libraries loaded already are limited through
    threadpoolctl; those loaded later (FAISS's OpenMP on the first search) read the
    environment when they load."""
    if count <= 0:
        return
    from threadpoolctl import threadpool_limits

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(count)
    threadpool_limits(limits=count)


class Pool:
    """``size`` daemon threads running jobs (daemon: a stuck job must not keep a worker alive)."""

    def __init__(self, size: int) -> None:
        self.jobs: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]]]
        self.jobs = queue.SimpleQueue()
        for n in range(size):
            threading.Thread(target=self._work, name=f"recengine-{n}", daemon=True).start()

    def submit(self, job: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.jobs.put((future, job))
        return future

    def _work(self) -> None:
        while True:
            future, job = self.jobs.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:  # handed to the loop, which logs it
                    future.set_exception(exc)
