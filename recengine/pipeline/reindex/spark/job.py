"""The Spark reindex, driver side: the same versioned, atomic protocol as the local engine.

1. the reindex run's prologue (``pipeline.reindex.run``: the data directory's lock, the pool,
   the deduplicator); drop what an abandoned run left in SQL; the missing and stale cards
   derived on the executors (``spark.cards``);
2. Spark: articles -> ``(id, TextStats)`` per partition (persisted, tokenized once) -> the
   distributed document-frequency count -> the IDF model, saved under a new, inactive version;
3. Spark: vectors and fingerprints per partition with the broadcast model, written back to SQL in
   bulk by the executors (many rows per INSERT, one transaction per ``spark.write_batch`` rows);
4. driver: features for live articles the input lacked, then the tail every engine shares
   (``pipeline.reindex.switch``): the catch-up of articles changed since the start, the new
   version's local indexes, its clusters by the local engine's own full recluster
   (``dedup.Deduplicator.cluster_all``: the leader pass over the block tables, each article
   verified against the canonicals in its reach, a clique of n copies costing about n
   verifications), all before the switch; then the short switch and the published index files.

The clusters are the local engine's by construction, whatever the input (an article changed
while Spark ran, one the input lacked). Verifying every candidate pair on the executors, as
earlier versions did, cost n^2 / 2 verifications on a clique of n templated pages and shipped
every edge to the driver (issue 13); the driver's leader pass reads the texts it verifies from
SQL, a block at a time.

Interrupted (driver killed, Ctrl-C), it leaves the old state serving and unused rows of the new
version, which the next reindex of either engine removes; run it again to finish.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer, Words
from recengine.pipeline.reindex.new_words import discover
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.pipeline.reindex.run import reindex_run
from recengine.pipeline.reindex.spark import compute, source
from recengine.pipeline.reindex.spark.cards import fill_cards_on
from recengine.pipeline.reindex.versions import (
    Progress,
    ReindexResult,
    drop_stale_versions,
    fill_missing,
    fit_params,
    reusable_version,
)
from recengine.storage.db import transaction
from recengine.storage.rows.features import save_model
from recengine.storage.state import read_state


@dataclass(frozen=True)
class SparkInput:
    """Where articles come from: the database (``path=None``) or an export file / folder."""

    path: Path | None = None


def spark_reindex(
    *,
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    url: str,
    source_input: SparkInput = SparkInput(),
    pool: AnalysisPool | None = None,
    progress: Progress | None = None,
    dedup: Deduplicator | None = None,
) -> ReindexResult:
    """Run the reindex on ``spark``; returns what the local engine returns.

    Args:
        spark: a SparkSession (``session.spark_session``).
        factory: the driver's session factory of the database at ``url``.
        featurizer: the driver's featurizer (catch-up); executors build their own from the same
            settings.
        url: the database URL, as executors must reach it.
        source_input: read the database, or an export.
        pool: the driver's analysis pool for the (small) local steps.
        progress: told about the driver-side phases.
        dedup: the near-duplicate cluster maintenance (built from the settings when omitted).
    """
    settings = featurizer.settings
    with reindex_run(
        factory=factory,
        featurizer=featurizer,
        batch_size=settings.reindex.batch_size,
        progress=progress,
        pool=pool,
        dedup=dedup,
    ) as run:
        with transaction(factory) as session:
            start = read_state(session=session)
        run.jobs.clear()
        drop_stale_versions(factory, keep={start.active_model_version})
        run.progress.start("cards", None)
        fill_cards_on(spark, factory, url, settings, compute.settings_blob(settings))
        words = discover(factory, featurizer)  # the driver reads the sample a local run reads
        run.use_words(words)  # for the missing articles and the catch-up computed here
        model, version, encoded = _fit_and_write(
            spark, factory, featurizer, url, source_input, start.seq, words
        )
        run.version = version
        filled = fill_missing(factory, run.pool, model, version, run.batch_size, run.jobs.path)
        caught_up = run.finish(
            model,
            version,
            start.seq,
            clusters=lambda index, _seq: run.dedup.cluster_all(factory, version, index),
        )
    reason = f"{len(filled)} articles missing from the input computed locally" if filled else ""
    return ReindexResult(
        version, model.n_docs, len(model.df), caught_up, reason=reason, encoded=encoded
    )


def _fit_and_write(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    url: str,
    source_input: SparkInput,
    start_seq: int,
    words: Words,
) -> tuple[IdfModel, int, int | None]:
    """Steps 2 and 3: model fitted and saved, features written; returns the model, its
    version and how many texts the executors encoded (None with the encoder off): the
    others kept the vectors stored under the active version (``versions.reusable_version``).
    """
    from pyspark import StorageLevel

    settings = featurizer.settings
    blob = compute.settings_blob(settings)
    if source_input.path is None:
        rows = source.from_database(spark, factory, url, settings.spark.read_partition_rows)
    else:
        rows = source.from_export(spark, source_input.path, url)
    if settings.spark.partitions:
        rows = rows.repartition(settings.spark.partitions)
    reuse = reusable_version(factory, featurizer)
    # counted where each partition is analysed; the analysis is persisted below, so computed
    # once (an executor lost meanwhile would count its partitions again)
    encoded = spark.sparkContext.accumulator(0)
    stats = rows.mapPartitions(
        lambda part: compute.analyze_partition(blob, words, part, url, reuse, encoded)
    )
    stats.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        partitions = max(1, stats.getNumPartitions())
        n_docs, df = compute.document_frequencies(stats, partitions)
        model = IdfModel(n_docs=n_docs, df=df, words=words)
        with transaction(factory) as session:
            version = save_model(
                session=session,
                payload=model.to_bytes(),
                n_docs=model.n_docs,
                n_terms=len(model.df),
                params=fit_params(settings, start_seq, "spark"),
                now=datetime.now(UTC),
            )
        payload = model.to_bytes()
        digest = hashlib.sha256(payload).hexdigest()
        shared = spark.sparkContext.broadcast(payload)
        size = settings.spark.write_batch
        features = stats.mapPartitions(
            lambda part: compute.features_partition(blob, digest, shared, part)
        )
        features.mapPartitions(lambda part: compute.write_partition(url, version, size, part)).sum()
        shared.destroy()
    finally:
        stats.unpersist()
    return model, version, (int(encoded.value) if featurizer.encodes else None)
