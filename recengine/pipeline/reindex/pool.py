"""Text analysis on every core: clean + tokenize -> term counts in a pool of worker processes.

Tokenization dominates the cost of ingest and reindex (DESIGN.md: jieba ~1 MB/s per core, rjieba
much faster but still the largest stage), and it holds the GIL, so threads do not help: worker
processes do. The pool is shared by reindex (whole corpus) and ingest (large batches).

* Each worker builds its :class:`~recengine.pipeline.featurize.Featurizer` (a dictionary load of
  about a second) **once**, in the pool initializer, and reuses it for every batch.
* The caller feeds batches; at most ``max_inflight`` of them are submitted and not yet consumed,
  so memory stays bounded whatever the corpus size (never all texts at once). Results come back
  in input order.
* Workers ignore SIGINT (Ctrl-C reaches the whole process group; the parent decides) and exit on
  their own when the parent dies, even by ``kill -9`` (they watch their parent pid), so an
  interrupted reindex leaves no orphan processes behind.
* ``workers <= 1`` runs in the calling process: no pool, no start-up cost, same results.
* A worker leaves without the interpreter's teardown (:func:`_exit_at_once`): a spawned
  process ends with ``sys.exit``, which frees every object it made one by one.

The start method is ``spawn``: not ``fork``, because the parent may hold threads (progress bar,
database pools) that a forked child would inherit half-locked; not ``forkserver``, because its
workers are children of the fork server, which outlives a parent killed by ``kill -9`` as long as
the workers do (they hold its liveness pipe), so they could not notice the death.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TypeVar

from recengine.config import Settings
from recengine.errors import RecengineError
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import (
    Analyzed,
    FeatureRow,
    Featurizer,
    TextAnalysis,
    TextStats,
    Words,
)
from recengine.pipeline.reindex.job import Item as Item
from recengine.pipeline.reindex.job import (
    ModelFile,
    Spooled,
    Task,
    features_of_record,
    spool_task,
)
from recengine.text.neardup.compare import Compared

A = TypeVar("A")
R = TypeVar("R")

_worker: Featurizer | None = None
_DIED = (
    "a text-analysis worker process died (killed, or out of memory?); nothing was switched: "
    "run the command again (a reindex resumes where it stopped)"
)


class WorkerDied(RecengineError):
    """A worker process of the pool ended abruptly."""

    code = "worker_died"


_worker_model: tuple[ModelFile, IdfModel] | None = None


def resolve_workers(workers: int) -> int:
    """``workers`` as configured, ``0`` meaning every core this process may run on."""
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    if workers:
        return workers
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class AnalysisPool:
    """Runs :meth:`Featurizer.analyze` / :meth:`Featurizer.count` on ``workers`` processes.

    Args:
        settings: the tokenizer settings every worker builds its featurizer from.
        workers: processes; 0 = every core; 1 = in the calling process.
        featurizer: the in-process featurizer used when ``workers == 1`` (built when omitted).
        max_inflight: batches submitted but not yet consumed (default ``2 * workers``).

    Use as a context manager, or call :meth:`close`; workers start on first use.
    """

    def __init__(
        self,
        settings: Settings,
        workers: int = 0,
        featurizer: Featurizer | None = None,
        max_inflight: int | None = None,
    ) -> None:
        self.settings = settings
        self.workers = resolve_workers(workers)
        self.max_inflight = max_inflight or 2 * self.workers
        if self.max_inflight < 1:
            raise ValueError(f"max_inflight must be >= 1, got {max_inflight}")
        self._local = featurizer
        self._executor: ProcessPoolExecutor | None = None
        self._words: Words = ()

    def __enter__(self) -> AnalysisPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def parallel(self) -> bool:
        return self.workers > 1

    def use_words(self, words: Sequence[str]) -> None:
        """Analyse with the dictionary and ``words`` from now on (``Featurizer.use_words``):
        running workers, built with other words, are stopped; the next task starts new ones."""
        words = tuple(words)
        if self._local is not None:
            self._local.use_words(words)
        if words != self._words:
            self._words = words
            self.close()

    def analyze_batches(
        self, batches: Iterable[Sequence[Item]]
    ) -> Iterator[list[tuple[int, TextStats]]]:
        """Per batch of ``(id, title, content)``, the ``(id, stats)`` pairs, in input order.

        Batches are pulled from ``batches`` only as results are consumed (bounded memory).
        """
        if not self.parallel:
            featurizer = self._featurizer()
            for batch in batches:
                yield _pairs(featurizer, batch)
            return
        yield from self._ordered(_analyze_batch, batches)

    def features_batches(
        self,
        batches: Iterable[Sequence[tuple[int, TextStats]]],
        model: IdfModel,
        scratch: Path,
    ) -> Iterator[list[tuple[int, FeatureRow]]]:
        """Per batch of ``(id, stats)``, the ``(id, features)`` under ``model``, in input order.

        Workers do not receive the model with every batch: it is written once to a file in
        the ``scratch`` directory, and each worker loads it once.
        """
        if not self.parallel:
            featurizer = self._featurizer()
            for batch in batches:
                rows = featurizer.features([s for _, s in batch], model)
                yield list(zip((i for i, _ in batch), rows, strict=True))
            return
        file = ModelFile.write(scratch / f"model-{os.getpid()}-{id(model)}.bin", model)
        try:
            yield from self._ordered(_features_batch, ((file, b) for b in batches))
        finally:
            file.path.unlink(missing_ok=True)

    def spool_batches(self, batches: Iterable[Task]) -> Iterator[Spooled]:
        """Per task (a batch of ``(id, title, content)``, what it asks, and optionally the
        encoder vectors it may reuse: ``reindex_job.Task``), its spool record
        (:class:`Spooled`, with what is compared of its texts when the batch asks for it:
        returned or spilled to a file of the worker's, ``reindex_job.spool_batch``), in input
        order; like
        :meth:`analyze_batches`, with the pickling and the document-frequency count done by
        the workers."""
        if not self.parallel:
            featurizer = self._featurizer()
            for task in batches:
                yield spool_task(featurizer, task)
            return
        yield from self._ordered(_spool_batch, batches)

    def features_of_spool(
        self, payloads: Iterable[bytes], model: IdfModel, scratch: Path, after_id: int
    ) -> Iterator[tuple[int, list[tuple[int, FeatureRow]]]]:
        """Per spool record, :func:`features_of_record`, in input order. The records go to the
        workers as the bytes they are on disk; the model as a file (see
        :meth:`features_batches`)."""
        if not self.parallel:
            featurizer = self._featurizer()
            for payload in payloads:
                yield features_of_record(featurizer, payload, model, after_id)
            return
        file = ModelFile.write(scratch / f"model-{os.getpid()}-{id(model)}.bin", model)
        try:
            tasks = ((file, payload, after_id) for payload in payloads)
            yield from self._ordered(_record_features, tasks)
        finally:
            file.path.unlink(missing_ok=True)

    def count_texts(self, texts: Sequence[str]) -> Analyzed:
        """Hashes and term counts of already cleaned texts (see ``featurize.text_of``), split
        across workers."""
        if not self.parallel or len(texts) < 2:
            return self._featurizer().count_many(texts)
        return Analyzed.concat(list(self._ordered(_count_texts, _split(texts, self.workers))))

    def compared_many(self, items: Sequence[tuple[str, str]]) -> list[Compared]:
        """:meth:`Featurizer.compared` of ``(title, content)`` pairs read from SQL, split
        across the workers, in order: the texts a block of the reindex's leader pass may
        verify (``verify.BlockTexts``), which its parent would otherwise clean and shingle
        alone while the workers idle."""
        if not self.parallel or len(items) < 2:
            return self._featurizer().compared_many(items)
        chunks = _split(items, 2 * self.workers)  # two tasks a worker: none idles long
        return [c for part in self._ordered(_compared_items, chunks) for c in part]

    def analyze_async(self, items: Sequence[tuple[str, str]]) -> Callable[[], TextAnalysis]:
        """Start :meth:`Featurizer.analyze_texts` of ``(title, content)`` pairs, split across
        the workers; the returned function waits for the result. In-process
        (``workers <= 1``) the work is done before this returns."""
        if not self.parallel or len(items) < 2:
            done = self._featurizer().analyze_texts(items)
            return lambda: done
        futures = [self._pool().submit(_analyze_items, c) for c in _split(items, self.workers)]

        def result() -> TextAnalysis:
            try:
                parts = [f.result() for f in futures]
            except BrokenProcessPool as exc:
                self._executor = None
                raise WorkerDied(_DIED) from exc
            return TextAnalysis.concat(parts)

        return result

    def close(self) -> None:
        """Stop the workers (also on an exception in the caller: nothing keeps running)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _featurizer(self) -> Featurizer:
        if self._local is None:
            self._local = Featurizer(self.settings)
            self._local.use_words(self._words)
        return self._local

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(self.settings, self._words),
            )
        return self._executor

    def _ordered(self, fn: Callable[[A], R], batches: Iterable[A]) -> Iterator[R]:
        """``fn`` over ``batches`` on the pool, results in order, at most max_inflight pending."""
        pending: deque[Future[R]] = deque()
        try:
            for batch in batches:
                pending.append(self._pool().submit(fn, batch))  # starts workers on first use
                if len(pending) >= self.max_inflight:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool as exc:
            self._executor = None
            raise WorkerDied(_DIED) from exc
        finally:
            for future in pending:  # the caller stopped early or failed: drop queued work
                future.cancel()


def _split(items: Sequence[A], parts: int) -> list[Sequence[A]]:
    """``items`` in at most ``parts`` consecutive slices of equal size (the last shorter)."""
    size = max(1, -(-len(items) // parts))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _init_worker(settings: Settings, words: Words) -> None:
    """Pool initializer: build the featurizer once; ignore Ctrl-C; die with the parent."""
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    atexit.register(_exit_at_once)
    _worker = Featurizer(settings)
    _worker.use_words(words)
    _worker.tokenizer  # noqa: B018 -- the dictionary loads now, while the parent reads a batch


def _exit_at_once() -> None:
    """A worker's last act (registered by :func:`_init_worker`, so it runs before the exit
    handlers registered earlier): leave without the interpreter's teardown.

    A spawned worker ends with ``sys.exit``, whose finalisation frees one by one every object
    the worker made (the dictionary's tables, the vocabulary, numpy's and numba's modules):
    about a second of wall time at the end of a reindex with 2 workers, spent while the parent
    waits for the pool to close (``bench.reindex_phases``, BENCHMARKS.md issue 50 item 2), for
    memory the kernel frees at once. Nothing is left to write by then: each result went back
    as its task ended (the executor's result queue writes to its pipe at once, no feeder
    thread), spill files are closed after each write, and the standard streams are flushed
    here.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # closed or replaced
            stream.flush()
    os._exit(0)


def _watch_parent(ppid: int) -> None:
    """Exit when the process that made the pool dies: the kernel then reparents us.

    Checked by parent pid, not by signalling the parent: a parent killed by ``kill -9`` stays a
    zombie until its own parent reaps it, and still answers ``kill(pid, 0)``.
    """
    while True:
        time.sleep(0.5)
        if os.getppid() != ppid:
            os._exit(1)


def _this_worker() -> Featurizer:
    if _worker is None:
        raise RuntimeError("analysis worker used before its initializer ran")
    return _worker


def _pairs(featurizer: Featurizer, batch: Sequence[Item]) -> list[tuple[int, TextStats]]:
    stats = featurizer.analyze_many([(title, content) for _, title, content in batch]).stats()
    return list(zip((i for i, _, _ in batch), stats, strict=True))


def _analyze_batch(batch: Sequence[Item]) -> list[tuple[int, TextStats]]:
    return _pairs(_this_worker(), batch)


def _spool_batch(task: Task) -> Spooled:
    return spool_task(_this_worker(), task)


def _worker_model_of(file: ModelFile) -> IdfModel:
    """The model of ``file``, loaded once per worker."""
    global _worker_model
    if _worker_model is None or _worker_model[0] != file:
        _worker_model = (file, file.load())
    return _worker_model[1]


def _features_batch(
    task: tuple[ModelFile, Sequence[tuple[int, TextStats]]],
) -> list[tuple[int, FeatureRow]]:
    file, batch = task
    rows = _this_worker().features([s for _, s in batch], _worker_model_of(file))
    return list(zip((i for i, _ in batch), rows, strict=True))


def _record_features(
    task: tuple[ModelFile, bytes, int],
) -> tuple[int, list[tuple[int, FeatureRow]]]:
    file, payload, after_id = task
    return features_of_record(_this_worker(), payload, _worker_model_of(file), after_id)


def _analyze_items(items: Sequence[tuple[str, str]]) -> TextAnalysis:
    return _this_worker().analyze_texts(items)


def _count_texts(texts: Sequence[str]) -> Analyzed:
    return _this_worker().count_many(texts)


def _compared_items(items: Sequence[tuple[str, str]]) -> list[Compared]:
    return _this_worker().compared_many(items)
