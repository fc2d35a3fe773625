"""The Spark reindex, driver side: the same versioned, atomic protocol as the local engine.

1. take the reindex lock of the data directory; drop what an abandoned run left in SQL;
2. Spark: articles -> ``(id, TextStats)`` per partition (persisted, tokenized once) -> the
   distributed document-frequency count -> the IDF model, saved under a new, inactive version;
3. Spark: vectors and fingerprints per partition with the broadcast model, written back to SQL in
   bulk by the executors (many rows per INSERT, one transaction per ``spark.write_batch`` rows);
   near-duplicate pairs by the exact permuted-block join, verified on the executors by the
   local engine's criterion (``spark.neardup``);
4. driver: features for live articles the input lacked, then the catch-up of articles changed
   since the start and the atomic switch, by the local engine's own code; in the switch
   transaction the clusters are formed from Spark's pairs by the local engine's canonical rule
   (``pipeline.clustering.assign``), and the local near-duplicate index is built.

Interrupted (driver killed, Ctrl-C), it leaves the old state serving and unused rows of the new
version, which the next reindex of either engine removes; run it again to finish.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import IdfModel
from recengine.pipeline.clustering import Edge, assign, rank_key
from recengine.pipeline.dedup import Deduplicator
from recengine.pipeline.featurize import Featurizer, model_params
from recengine.pipeline.parallel import AnalysisPool
from recengine.pipeline.reindex_job import JobDir
from recengine.pipeline.spark import compute, source
from recengine.pipeline.spark.neardup import verified_edges
from recengine.pipeline.versions import (
    Progress,
    QuietProgress,
    ReindexResult,
    catch_up_and_switch,
    drop_stale_versions,
    fill_missing,
    fit_params,
)
from recengine.storage.articles import ids_changed_since
from recengine.storage.clusters import MemberRow, delete_all, insert_rows, published
from recengine.storage.db import transaction
from recengine.storage.features import save_model
from recengine.storage.fingerprints import SqlFingerprints
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
    jobs = JobDir(settings.data_dir)
    jobs.lock()
    own = pool is None
    pool = pool or AnalysisPool(settings, workers=1, featurizer=featurizer)
    progress = progress or QuietProgress()
    dedup = dedup or Deduplicator(settings)
    try:
        with transaction(factory) as session:
            start = read_state(session=session)
        jobs.clear()
        drop_stale_versions(factory, keep={start.active_model_version})
        model, version, edges = _fit_and_write(
            spark, factory, featurizer, url, source_input, start.seq
        )
        batch = settings.reindex.batch_size
        filled = fill_missing(factory, pool, model, version, batch, jobs.path)
        with dedup.pending():
            caught_up = catch_up_and_switch(
                factory,
                featurizer,
                model,
                version,
                start.seq,
                batch,
                progress,
                on_switch=lambda session, _: switch_clusters(
                    session, edges, start.seq, filled, dedup
                ),
            )
        dedup.save()
    finally:
        if own:
            pool.close()
        jobs.unlock()
    reason = f"{len(filled)} articles missing from the input computed locally" if filled else ""
    return ReindexResult(version, model.n_docs, len(model.df), caught_up, reason=reason)


def _fit_and_write(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    url: str,
    source_input: SparkInput,
    start_seq: int,
) -> tuple[IdfModel, int, list[Edge]]:
    """Steps 2 and 3: model fitted and saved, features written, near-duplicates verified."""
    from pyspark import StorageLevel

    settings = featurizer.settings
    blob = compute.settings_blob(settings)
    if source_input.path is None:
        rows = source.from_database(spark, factory, url, settings.spark.read_partition_rows)
    else:
        rows = source.from_export(spark, source_input.path, url)
    if settings.spark.partitions:
        rows = rows.repartition(settings.spark.partitions)
    stats = rows.mapPartitions(lambda part: compute.analyze_partition(blob, part))
    stats.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        partitions = max(1, stats.getNumPartitions())
        n_docs, df = compute.document_frequencies(stats, partitions)
        model = IdfModel(n_docs=n_docs, df=df)
        with transaction(factory) as session:
            version = save_model(
                session=session,
                payload=model.to_bytes(),
                n_docs=model.n_docs,
                n_terms=len(model.df),
                params=fit_params(model_params(settings), start_seq, "spark"),
                now=datetime.now(UTC),
            )
        payload = model.to_bytes()
        digest = hashlib.sha256(payload).hexdigest()
        shared = spark.sparkContext.broadcast(payload)
        size = settings.spark.write_batch
        features = stats.mapPartitions(
            lambda part: compute.features_partition(blob, digest, shared, part)
        )
        features.persist(StorageLevel.MEMORY_AND_DISK)
        features.mapPartitions(lambda part: compute.write_partition(url, version, size, part)).sum()
        edges = verified_edges(
            features,
            lambda wanted: rows.filter(lambda r: r[0] in wanted.value).mapPartitions(
                lambda part: compute.shingles_partition(blob, part)
            ),
            NearDupCriterion.from_settings(settings),
            partitions,
        )
        features.unpersist()
        shared.destroy()
    finally:
        stats.unpersist()
    return model, version, edges


def switch_clusters(
    session: Session,
    edges: Sequence[Edge],
    start_seq: int,
    filled: Sequence[int],
    dedup: Deduplicator,
) -> None:
    """Inside the switch transaction: clusters from Spark's verified pairs, then the local index.

    Pairs touching an article changed since the job started (edited, added or deleted while
    Spark ran) are left out; once the local index is built, ``dedup.update`` recomputes exactly
    the components those articles, and the ``filled`` ones Spark did not see, are in, which
    gives what a full recluster gives.
    """
    changed = set(ids_changed_since(session=session, after_seq=start_seq)) | set(filled)
    kept = [e for e in edges if e.a not in changed and e.b not in changed]
    ids = sorted({x for e in kept for x in (e.a, e.b)})
    dates = published(session=session, article_ids=ids)
    members = assign({i: rank_key(i, dates.get(i)) for i in ids}, kept)
    delete_all(session=session)
    insert_rows(
        session=session,
        rows=[MemberRow(m.article_id, m.canonical_id, m.distance, m.score) for m in members],
    )
    dedup.index.sync(SqlFingerprints(session))  # the local index build
    if changed:
        dedup.update(session, sorted(changed))
