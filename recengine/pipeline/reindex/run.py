"""One reindex run: the prologue and tail that full, incremental and Spark reindexes share.

Each engine does its own middle (tokenize, fit, write features, or recompute changed articles in
place); around it, :func:`reindex_run` is the same for all:

* **prologue**: the data directory's reindex lock (one reindex at a time; a second one fails at
  once with ``ReindexBusy``), the analysis pool (the caller's, or one made here and closed at
  the end), the deduplicator, the progress receiver;
* **tail** (:meth:`ReindexRun.finish`, for engines that fit a new model): the dense part's LSA
  model fitted on the new version's stored vectors (``pipeline.reindex.dense_fit``), the switch to
  the new version with its catch-up, clusters and published indexes (``pipeline.reindex.switch``),
  the removal of the old version in short transactions, the job record cleared;
* **always**: the pool closed and the lock released, however the run ends. An interrupt
  (Ctrl-C) after the switch committed is reported as such (``InterruptedAfterSwitch``): the
  database is asked, since the stack cannot tell. What such a run left undone (index files,
  the old version's rows, its job record) :func:`finish_after_switch` does; ``recengine ingest``
  calls it, and the next reindex would clear the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer, Words
from recengine.pipeline.reindex.dense_fit import fit_dense
from recengine.pipeline.reindex.job import JobDir, ReindexBusy
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.pipeline.reindex.spill import SpilledTexts
from recengine.pipeline.reindex.switch import Clusters, Seed, Switch, publish_all, switch_to
from recengine.pipeline.reindex.versions import (
    Progress,
    QuietProgress,
    database_name,
    drop_stale_versions,
    raise_if_switched,
)
from recengine.storage.db import transaction
from recengine.storage.rows.articles import count_live
from recengine.storage.state import read_state


@dataclass
class ReindexRun:
    """What every step of one reindex needs (made by :func:`reindex_run`)."""

    factory: sessionmaker[Session]
    featurizer: Featurizer
    pool: AnalysisPool
    jobs: JobDir
    batch_size: int
    progress: Progress
    dedup: Deduplicator
    # what is compared of texts the leader pass will verify, kept from pass 1 on (in memory
    # within reindex.kept_compared_mb, spilled to disk past it: pipeline.reindex.spill), so the
    # leader pass neither reads nor cleans them again
    kept: SpilledTexts
    version: int | None = None  # the new model's, once saved (to report an interrupt right)

    def use_words(self, words: Words) -> None:
        """Analyse texts with ``words`` (the model's being fitted or kept: ``IdfModel.words``),
        here and on the pool's workers."""
        self.featurizer.use_words(words)
        self.pool.use_words(words)

    def finish(
        self,
        model: IdfModel,
        version: int,
        start_seq: int,
        clusters: Clusters,
        seeds: Mapping[str, Seed] | None = None,
    ) -> int:
        """Switch to ``version`` (see ``pipeline.reindex.switch``), drop the old version, clear the
        job.

        Args:
            model: the new IDF model, whose features are written as of ``start_seq``.
            clusters: writes the new version's clusters from its near-duplicate index.
            seeds: indexes of the version made already, by kind (``Switch.seeds``).

        Returns:
            How many article rows the catch-up recomputed.
        """
        self.version = version
        self.progress.start("dense model", None)
        fit_dense(self.factory, self.featurizer.settings.dense, version)
        switch = Switch(
            self.factory,
            self.featurizer,
            self.dedup,
            model,
            version,
            self.batch_size,
            self.progress,
            seeds=seeds or {},
        )
        caught_up = switch_to(switch, start_seq, clusters)
        self.progress.start("cleanup", None)
        drop_stale_versions(self.factory, keep={version})
        self.jobs.clear()
        return caught_up


@contextmanager
def reindex_run(
    *,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    batch_size: int,
    progress: Progress | None = None,
    pool: AnalysisPool | None = None,
    data_dir: Path | None = None,
    dedup: Deduplicator | None = None,
) -> Iterator[ReindexRun]:
    """The prologue and the ending of a reindex run (see the module docstring).

    Raises:
        ReindexBusy: another reindex holds the data directory's lock.
        ValueError: ``batch_size < 1``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    settings = featurizer.settings
    jobs = JobDir(data_dir or settings.data_dir)
    jobs.lock()
    own_pool = pool is None
    dedup = dedup or Deduplicator(settings)
    run = ReindexRun(
        factory,
        featurizer,
        pool or AnalysisPool(settings, workers=1, featurizer=featurizer),
        jobs,
        batch_size,
        progress or QuietProgress(),
        dedup,
        SpilledTexts(dedup.leader_texts(), jobs.path),
    )
    try:
        yield run
    except KeyboardInterrupt:
        raise_if_switched(factory, run.version)
        raise
    finally:
        if own_pool:
            run.pool.close()
        run.kept.close()  # after the workers: none writes a spill file any more
        jobs.unlock()


def needs_first_model(factory: sessionmaker[Session]) -> bool:
    """Whether live articles wait for a first IDF model: none is active (never fitted, or the
    first fit was interrupted before its switch: a reindex resumes it)."""
    with transaction(factory) as session:
        if read_state(session=session).active_model_version is not None:
            return False
        return count_live(session=session) > 0


def finish_after_switch(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path | None = None
) -> int | None:
    """Finish a reindex interrupted after its switch committed (kill -9, Ctrl-C): publish the
    index files of the version it made active, remove the old version's rows, clear its job
    record and spool, as its tail would have.

    Returns:
        That version; None when no such reindex is there (or another reindex holds the lock).
    """
    jobs = JobDir(data_dir or featurizer.settings.data_dir)
    if jobs.load() is None:
        return None
    try:
        jobs.lock()
    except ReindexBusy:
        return None
    try:
        job = jobs.load()
        with transaction(factory) as session:
            active = read_state(session=session).active_model_version
        if job is None or job.version is None or job.version != active:
            return None
        if job.database != database_name(factory):
            return None
        publish_all(factory, featurizer)
        drop_stale_versions(factory, keep={active})
        jobs.clear()
        return active
    finally:
        jobs.unlock()
