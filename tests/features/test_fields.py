"""The title's weight (``features.title_weight``) and corpus stop-terms (``features.max_df``): what
the stored vectors are made of, the same through ingest and reindex, fingerprints untouched by
the stop-terms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.features.hashing import TermHasher
from recengine.features.tfidf import IdfModel, SparseVector
from recengine.pipeline.featurize import Featurizer, model_params, text_hash, text_of
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.rows.features import load_model_payload
from recengine.storage.state import read_state
from recengine.text.words.tokenize import Tokenizer
from tests.conftest import make_settings
from tests.factories import javaguide_records
from tests.templates import migrate_cloned


def indexed(
    tmp_path: Path,
    database_url: str,
    tokenizer: Tokenizer,
    records: list[dict[str, Any]],
    **features: Any,
) -> tuple[sessionmaker[Session], Featurizer]:
    """A new database with ``records`` ingested and reindexed under these feature settings."""
    settings = make_settings(tmp_path, database_url, features=features)
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    featurizer = Featurizer(settings, tokenizer)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    return factory, featurizer


def stored(factory: sessionmaker[Session]) -> tuple[IdfModel, dict[str, tuple[int, SparseVector]]]:
    """The active model, and each article's (fingerprint, vector) by caller id."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        model = IdfModel.from_bytes(load_model_payload(session=session, version=version)[0])
        rows = session.execute(
            select(Article.external_id, ArticleFeatures.fingerprint, ArticleFeatures.vector)
            .join(ArticleFeatures, ArticleFeatures.article_id == Article.id)
            .where(ArticleFeatures.model_version == version)
        ).all()
    return model, {name: (fp, SparseVector.from_bytes(blob)) for name, fp, blob in rows}


def test_the_title_counts_as_often_as_its_weight(tmp_path: Path, tokenizer: Tokenizer) -> None:
    title, body = "数据库索引优化", "<p>数据库的优化从索引开始。</p>"
    plain = Featurizer(make_settings(tmp_path, "sqlite://"), tokenizer)
    heavy = Featurizer(
        make_settings(tmp_path, "sqlite://", features={"title_weight": 3}), tokenizer
    )
    once, thrice = plain.analyze(title, body), heavy.analyze(title, body)
    assert once.counts == {"数据库": 2, "索引": 2, "优化": 2}
    assert thrice.counts == {"数据库": 4, "索引": 4, "优化": 4}
    # the text's hash stays the text's: whether to recompute an article does not depend on it
    assert once.text_hash == thrice.text_hash == text_hash(text_of(title, body))
    assert heavy.analyze_many([(title, body)]).stats()[0] == thrice
    assert heavy.analyze_texts([(title, body)]).analyzed.stats()[0] == thrice
    params = model_params(heavy.settings)["features"]
    assert (
        params["title_weight"] == 3
        and "title_weight" not in model_params(plain.settings)["features"]
    )


def test_a_weighted_title_is_stored_alike_by_reindex_and_ingest(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 60)
    factory, featurizer = indexed(tmp_path / "w", database_url, tokenizer, records, title_weight=3)
    vectors = stored(factory)[1]
    Ingester(factory, Featurizer(featurizer.settings, tokenizer)).ingest_records(
        [{**records[7], "id": "copy"}]
    )
    after = stored(factory)[1]
    assert after["copy"][1].hashes.tolist() == after[records[7]["id"]][1].hashes.tolist()
    plain = stored(
        indexed(tmp_path / "p", "sqlite:///" + str(tmp_path / "p.db"), tokenizer, records)[0]
    )[1]
    title_terms = set(
        TermHasher().hashes(list(tokenizer.term_counts(records[7]["title"]))).tolist()
    )

    def title_share(v: SparseVector) -> float:  # the weight the title's terms carry
        return float(
            sum(
                w
                for h, w in zip(v.hashes.tolist(), v.weights.tolist(), strict=True)
                if h in title_terms
            )
        )

    assert title_share(vectors[records[7]["id"]][1]) > title_share(plain[records[7]["id"]][1])


def test_corpus_stop_terms_leave_the_vectors_not_the_fingerprints(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 80)
    factory, _ = indexed(tmp_path / "s", database_url, tokenizer, records, max_df=0.3)
    model, cut = stored(factory)
    frequent = {t for t, d in model.df.items() if d > 0.3 * model.n_docs}
    assert len(frequent) > 5  # not vacuous: the corpus has such terms
    stop = set(TermHasher().hashes(sorted(frequent)).tolist())
    assert not any(stop & set(v.hashes.tolist()) for _, v in cut.values())
    full = stored(
        indexed(tmp_path / "f", "sqlite:///" + str(tmp_path / "f.db"), tokenizer, records)[0]
    )[1]
    assert any(stop & set(v.hashes.tolist()) for _, v in full.values())
    assert {k: fp for k, (fp, _) in cut.items()} == {k: fp for k, (fp, _) in full.items()}
