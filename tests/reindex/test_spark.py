"""The Spark engine on a real local Spark (Java 17): the same answer as the local engine.

One SparkSession (``local[2]``, the session fixture ``spark`` of ``tests/conftest.py``) serves
every test of this module and of ``test_overrides_clusters``: a JVM start costs seconds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.derived.dense import DenseKind, dense_params
from recengine.features.encoder import from_bytes
from recengine.features.tfidf import IdfModel
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.demo_corpus import inews_records
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.spark.cards import stale_ranges
from recengine.pipeline.reindex.spark.job import SparkInput, spark_reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.models import Article, ArticleFeatures, ClusterMember
from recengine.storage.rows.features import load_model_payload
from recengine.storage.rows.index_rows import SqlIndexRows
from recengine.storage.state import read_state
from recengine.text.words.tokenize import Tokenizer
from tests.conftest import make_settings
from tests.factories import csl_records, javaguide_records, write_jsonl
from tests.index.test_passage_candidates import partial_copies
from tests.reindex.test_cards import forget_cards, stored_cards
from tests.templates import migrate_cloned


def engine_state(factory: sessionmaker[Session]) -> tuple[IdfModel, dict[str, Any], dict[int, Any]]:
    """The active model, its stored params and every article's (fingerprint, vector)."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        payload, params = load_model_payload(session=session, version=version)
        rows = session.execute(
            select(
                ArticleFeatures.article_id,
                ArticleFeatures.fingerprint,
                ArticleFeatures.vector,
                ArticleFeatures.n_tokens,
            ).where(ArticleFeatures.model_version == version)
        ).all()
    return IdfModel.from_bytes(payload), params, {r[0]: tuple(r[1:]) for r in rows}


def dense_state(factory: sessionmaker[Session], settings: Settings) -> tuple[Any, Any, Any]:
    """The active version's LSA model and the dense vectors of every article, as a process
    following SQL builds them: ``(model, ids, vectors)``."""
    kind = DenseKind(dense_params(settings))
    with factory() as session:
        rows = SqlIndexRows(session)
        version = read_state(session=session).active_model_version
        assert version is not None
        bound = kind.for_version(rows, version)
        live = rows.live(
            version=version, fields=kind.fields, needs_terms=True, after_id=0, limit=10**6
        )
        state = bound.build([live])
    assert state.model is not None
    ids = state.index.main.ids
    return state.model, ids, state.index.lookup(ids)[1]


def assert_same_dense_part(local: Any, distributed: Any) -> None:
    """Same LSA model and same dense vectors, to float32 tolerance."""
    (lmodel, lids, lvec), (smodel, sids, svec) = local, distributed
    assert smodel.dims == lmodel.dims == 64
    assert np.array_equal(smodel.hashes, lmodel.hashes)
    np.testing.assert_allclose(smodel.components, lmodel.components, atol=1e-5)
    assert np.array_equal(sids, lids)
    np.testing.assert_allclose(svec, lvec, atol=1e-5)
    assert np.abs(lvec).sum() > 0


def indexed(
    factory: sessionmaker[Session], featurizer: Featurizer, records: list[dict[str, Any]]
) -> tuple[IdfModel, dict[str, Any], dict[int, Any]]:
    """Ingest ``records``, reindex locally; the resulting state."""
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    return engine_state(factory)


def assert_same_results(local: Any, distributed: Any) -> None:
    (lmodel, lparams, lrows), (smodel, sparams, srows) = local, distributed
    assert smodel.n_docs == lmodel.n_docs
    assert dict(smodel.df) == dict(lmodel.df)
    for term in lmodel.df:  # identical IDF values (to float tolerance)
        assert math.isclose(smodel.idf(term), lmodel.idf(term), rel_tol=1e-12)
    assert (lparams["fit"]["engine"], sparams["fit"]["engine"]) == ("local", "spark")
    assert srows.keys() == lrows.keys()
    assert {k: v[0] for k, v in srows.items()} == {k: v[0] for k, v in lrows.items()}
    assert srows == lrows  # vectors and token counts too


def reposts(records: list[dict[str, Any]], n_max: int = 300) -> list[dict[str, Any]]:
    """Reposts of real articles as sites make them: header, footer, re-titled, re-dated."""
    out = []
    for n, r in enumerate(records[:: max(1, len(records) // n_max)][:n_max]):
        copy = {**r, "id": f"repost-{n}", "title": "转载：" + r["title"]}
        copy["content"] = f"<p>本文转载自技术社区，原文链接见文末。</p>{r['content']}<p>（完）</p>"
        copy["published_at"] = f"2024-0{1 + n % 9}-15T08:00:00+08:00"  # some earlier, some later
        out.append(copy)
    return out


def clusters(factory: sessionmaker[Session]) -> list[tuple[int, int, int, float]]:
    with factory() as session:
        rows = session.execute(
            select(
                ClusterMember.article_id,
                ClusterMember.canonical_id,
                ClusterMember.distance,
                ClusterMember.score,
            ).order_by(ClusterMember.article_id)
        ).all()
    return [(a, c, d, round(s or 0.0, 6)) for a, c, d, s in rows]


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_spark_and_local_engines_agree_on_real_articles(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
) -> None:
    records = csl_records(data_dir) + javaguide_records(data_dir, 429)
    # Excerpts and digests too: pairs that only the passage index finds.
    partial = partial_copies(javaguide_records(data_dir, 40))
    Ingester(factory, featurizer).ingest_records(records + reposts(records) + partial)
    reindex(factory=factory, featurizer=featurizer)
    local, local_clusters = engine_state(factory), clusters(factory)
    local_dense = dense_state(factory, settings)
    assert len(local[2]) == 2429 + 300 + 40
    assert len({c for _, c, _, _ in local_clusters}) >= 250  # most reposts found
    with factory() as session:
        names = dict(session.execute(select(Article.id, Article.external_id)).all())
    head = {names[a]: names[c] for a, c, _, _ in local_clusters}
    together = [
        head.get(p["id"], p["id"]) == head.get(source, source) != p["id"]
        or head.get(source) == p["id"]
        for p in partial
        for source in [p["id"].split("-", 1)[1]]
    ]
    assert sum(together) >= 35  # with its source (either may be the canonical)
    result = spark_reindex(
        spark=spark, factory=factory, featurizer=featurizer, url=settings.resolved_database_url
    )
    assert (result.n_docs, result.n_terms) == (2769, len(local[0].df))
    assert_same_results(local, engine_state(factory))
    assert clusters(factory) == local_clusters
    assert_same_dense_part(local_dense, dense_state(factory, settings))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_spark_derives_the_cards_rows_stored_before_lack(
    spark: Any,
    factory: sessionmaker[Session],
    settings: Settings,
    tokenizer: Tokenizer,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    """The executors derive, in id ranges, the cards a local reindex would (whatever the
    job's input: cards come from the stored articles)."""
    ranged = make_settings(tmp_path, settings.database_url, spark={"read_partition_rows": 100})
    featurizer = Featurizer(ranged, tokenizer)
    Ingester(factory, featurizer).ingest_records(javaguide_records(data_dir, 250))
    derived = stored_cards(factory)
    forget_cards(factory)
    assert len(stale_ranges(factory, ranged)) == 3
    spark_reindex(
        spark=spark, factory=factory, featurizer=featurizer, url=ranged.resolved_database_url
    )
    assert stored_cards(factory) == derived


@pytest.mark.slow
def test_spark_reads_an_export_and_fills_what_it_lacks(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    records = javaguide_records(data_dir, 120)
    local = indexed(factory, featurizer, records)
    extra = {"id": "not-in-the-database", "title": "孤儿", "content": "不在库里的文章"}
    export = write_jsonl(tmp_path / "export.jsonl", [*records[:100], extra])
    result = spark_reindex(
        spark=spark,
        factory=factory,
        featurizer=featurizer,
        url=settings.resolved_database_url,
        source_input=SparkInput(export),
    )
    # The IDF is fitted on what Spark read (100 articles); the 20 the export lacks are
    # computed on the driver, so every article has features under the new model.
    assert result.n_docs == 100 and "20 articles missing from the input" in result.reason
    model, _, rows = engine_state(factory)
    assert len(rows) == 120 and model.n_docs == 100
    assert rows != local[2]


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_cli_spark_engine_and_parquet_export(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    records = javaguide_records(data_dir, 60)
    local = indexed(factory, featurizer, records)
    parquet = tmp_path / "articles.parquet"
    spark.createDataFrame(
        [(r["id"], r["title"], r["content"]) for r in records],
        "id string, title string, content string",
    ).write.parquet(str(parquet))
    result = CliRunner().invoke(
        main, ["reindex", "--engine", "spark", "--input", str(parquet)], obj=CliContext(settings)
    )
    assert result.exit_code == 0, result.output
    assert "reindexed 60 articles" in result.output
    assert_same_results(local, engine_state(factory))
    assert spark.sparkContext._jsc is not None  # the caller's session was left running
    bad = CliRunner().invoke(
        main, ["reindex", "--engine", "spark", "--incremental"], obj=CliContext(settings)
    )
    assert bad.exit_code == 2 and "--incremental is for the local engine" in bad.output
    json.dumps(result.output)


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_articles_changed_while_spark_runs_are_clustered_like_a_local_run(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
) -> None:
    records = javaguide_records(data_dir, 80)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(records + reposts(records)[:20])
    reindex(factory=factory, featurizer=featurizer)

    class Writer:
        """Between the Spark stage and the switch, a writer adds reposts and deletes one."""

        def start(self, phase: str, total: int | None, done: int = 0) -> None:
            if phase == "catch-up":
                late = [{**r, "id": f"late-{r['id']}"} for r in reposts(records)[20:30]]
                ingester.ingest_records(late)
                ingester.delete([records[0]["id"]])

        def update(self, n: int) -> None:
            pass

    spark_reindex(
        spark=spark,
        factory=factory,
        featurizer=featurizer,
        url=settings.resolved_database_url,
        progress=Writer(),
    )
    after_spark = clusters(factory)
    dedup = Deduplicator(settings)
    with dedup.pending(), factory.begin() as session:  # the local engine's full recluster
        dedup.recluster(session)
    assert after_spark == clusters(factory)
    assert len(after_spark) >= 25
    with factory() as session:
        late = session.scalars(select(Article.id).where(Article.external_id.like("late-%")))
        assert set(late) <= {a for a, *_ in after_spark} | {c for _, c, *_ in after_spark}


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_spark_and_local_agree_with_new_words_a_weighted_title_and_stop_terms(
    spark: Any, tmp_path: Path, database_url: str, tokenizer: Tokenizer
) -> None:
    settings = make_settings(
        tmp_path,
        database_url,
        tokenizer={"new_words": True},
        features={"title_weight": 2, "max_df": 0.5},
    )
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    featurizer = Featurizer(settings, tokenizer)
    records = [{**r, "published_at": "2024-01-01T00:00:00Z"} for r in inews_records(limit=400)]
    local = indexed(factory, featurizer, records)
    assert len(local[0].words) > 20
    spark_reindex(
        spark=spark,
        factory=factory,
        featurizer=Featurizer(settings, tokenizer),
        url=settings.resolved_database_url,
    )
    distributed = engine_state(factory)
    assert distributed[0].words == local[0].words
    assert_same_results(local, distributed)  # the executors tokenized with the words too
    engine.dispose()


def stored_embeddings(factory: sessionmaker[Session]) -> dict[int, bytes | None]:
    with factory() as session:
        version = read_state(session=session).active_model_version
        rows = session.execute(
            select(ArticleFeatures.article_id, ArticleFeatures.embedding).where(
                ArticleFeatures.model_version == version
            )
        ).all()
    return {r[0]: r[1] for r in rows}


def test_spark_executors_encode_as_the_local_engine_does(
    spark: Any, tmp_path: Path, database_url: str, tokenizer: Tokenizer, data_dir: Path
) -> None:
    """``dense.encoder = "use"``: the executors encode each article's title and lead, and the
    stored vectors, the LSA model and the dense vectors equal the local engine's (to float16 /
    float32 rounding); an article whose vector is stored under the active version for its
    text keeps it (``versions.reusable_version``, as the local engine's pass 1 does), so half
    are encoded here: the other half's vectors were taken away. 100 articles (at 3 per
    dimension, room for the 32 dimensions asked), in 4 partitions over both executors: the
    equality is per article, so more (the test had 200, for 64 dimensions) only encode more
    of the same on both sides."""
    settings = make_settings(
        tmp_path, database_url, dense={"encoder": "use", "min_articles": 50, "dims": 32}
    )
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    local = indexed(factory, Featurizer(settings, tokenizer), javaguide_records(data_dir, 100))
    local_embeddings, local_dense = stored_embeddings(factory), dense_state(factory, settings)
    assert len(local_embeddings) == 100 and None not in local_embeddings.values()
    ids = sorted(local_embeddings)
    taken = ids[::2]
    with factory.begin() as session:
        session.execute(
            update(ArticleFeatures)
            .where(ArticleFeatures.article_id.in_(taken))
            .values(embedding=None)
        )
    result = spark_reindex(
        spark=spark,
        factory=factory,
        featurizer=Featurizer(settings, tokenizer),
        url=settings.resolved_database_url,
    )
    assert result.encoded == len(taken) == 50
    assert_same_results(local, engine_state(factory))
    spark_embeddings = stored_embeddings(factory)
    assert spark_embeddings.keys() == local_embeddings.keys()
    kept = [i for i in ids if i not in taken]
    assert [spark_embeddings[i] for i in kept] == [local_embeddings[i] for i in kept]
    np.testing.assert_allclose(
        from_bytes([spark_embeddings[i] for i in taken]),
        from_bytes([local_embeddings[i] for i in taken]),
        atol=2e-3,
    )
    (lmodel, lids, lvec), (smodel, sids, svec) = local_dense, dense_state(factory, settings)
    assert lvec.shape[1] == svec.shape[1] == 32 + 512
    assert np.array_equal(smodel.hashes, lmodel.hashes) and np.array_equal(sids, lids)
    np.testing.assert_allclose(svec, lvec, atol=2e-3)
    engine.dispose()
