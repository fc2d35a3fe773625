"""Incremental reindex: changed articles only, unless drift calls for a refit."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.incremental import reindex_incremental
from recengine.storage.models import ArticleFeatures
from recengine.storage.rows.features import load_model_payload
from recengine.storage.state import read_state
from tests.factories import javaguide_records, record


def active_features(factory: sessionmaker[Session]) -> dict[int, tuple[int, bytes]]:
    with factory() as session:
        version = read_state(session=session).active_model_version
        rows = session.execute(
            select(
                ArticleFeatures.article_id, ArticleFeatures.fingerprint, ArticleFeatures.vector
            ).where(ArticleFeatures.model_version == version)
        ).all()
    return {r[0]: (r[1], r[2]) for r in rows}


def test_incremental_without_a_model_runs_a_full_reindex(
    factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    Ingester(factory, featurizer).ingest_records([record(i) for i in range(4)])
    result = reindex_incremental(factory=factory, featurizer=featurizer)
    assert (result.mode, result.n_docs, result.reason) == ("full", 4, "no IDF model yet")


def test_only_changed_and_missing_articles_are_recomputed(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(javaguide_records(data_dir, 40))
    full = reindex(factory=factory, featurizer=featurizer)
    unchanged = reindex_incremental(factory=factory, featurizer=featurizer)
    assert (unchanged.mode, unchanged.recomputed, unchanged.version) == (
        "incremental",
        0,
        full.version,
    )
    ingester.ingest_records([record(1), record(2, content="<p>缓存穿透与布隆过滤器</p>")])
    with factory() as session:  # an article whose features went missing is recomputed too
        session.execute(ArticleFeatures.__table__.delete().where(ArticleFeatures.article_id == 5))
        session.commit()
    before = active_features(factory)
    with factory() as session:
        seq_before = read_state(session=session).seq
    result = reindex_incremental(factory=factory, featurizer=featurizer)
    assert (result.mode, result.recomputed, result.version) == ("incremental", 3, full.version)
    after = active_features(factory)
    assert set(after) == set(before) | {5}
    assert {k: v for k, v in after.items() if k != 5} == before  # ingest already had them right
    with factory() as session:
        params = load_model_payload(session=session, version=full.version)[1]
        assert params["fit"]["indexed_seq"] == seq_before
    again = reindex_incremental(factory=factory, featurizer=featurizer)
    assert again.recomputed == 0  # nothing changed since the last (incremental) reindex


def test_drift_beyond_the_limit_refits(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    ingester = Ingester(factory, featurizer)
    records = javaguide_records(data_dir, 30)
    ingester.ingest_records(records[:20])
    first = reindex(factory=factory, featurizer=featurizer)
    ingester.ingest_records(records[20:22])  # 2 of 20 = 10%: not more than the limit
    kept = reindex_incremental(factory=factory, featurizer=featurizer, refit_drift=0.1)
    assert (kept.mode, kept.version, kept.recomputed) == ("incremental", first.version, 2)
    ingester.ingest_records(records[22:])  # 10 of 20 changed since the fit: refit
    refit = reindex_incremental(factory=factory, featurizer=featurizer, refit_drift=0.1)
    assert refit.mode == "full" and refit.version != first.version and refit.n_docs == 30
    assert "drift 50.0%" in refit.reason
    assert len(active_features(factory)) == 30
