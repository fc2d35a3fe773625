"""New words in the product (``tokenizer.new_words``; ``pipeline.reindex.new_words``): found by a
full reindex in a sample of the corpus, stored with the IDF model, and used by every analysis under
that model (the reindex's own passes and workers, later ingests in new processes), alike in
both tokenizer backends."""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.hashing import TermHasher
from recengine.features.tfidf import IdfModel, SparseVector
from recengine.pipeline.demo_corpus import inews_records
from recengine.pipeline.featurize import Featurizer, model_params, text_of
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.ingest.readers import RawRecord
from recengine.pipeline.reindex import new_words
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.incremental import reindex_incremental
from recengine.pipeline.reindex.new_words import _sample, discover, words_in
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.report.data import gather
from recengine.report.render import render_html
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.rows.features import load_model_payload
from recengine.storage.state import read_state
from recengine.text.words.newwords import DiscoveryParams, NewWord, discover_words
from recengine.text.words.tokenize import Tokenizer, build_tokenizer
from tests.conftest import make_settings
from tests.recommend.test_related_dense import vectors_of
from tests.templates import migrate_cloned
from tests.text.test_tokenize_backends import sampled_texts

ON = {"new_words": True, "new_words_min_count": 5}


def news(limit: int) -> list[dict[str, Any]]:
    return [{**r, "published_at": "2024-01-01T00:00:00Z"} for r in inews_records(limit=limit)]


def active_model(factory: sessionmaker[Session]) -> tuple[IdfModel, dict[str, Any]]:
    with factory() as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        payload, params = load_model_payload(session=session, version=version)
    return IdfModel.from_bytes(payload), params


def vectors(factory: sessionmaker[Session]) -> dict[str, SparseVector]:
    """Every live article's stored vector under the active model, by caller id."""
    return {name: SparseVector.from_bytes(blob) for name, blob in vectors_of(factory).items()}


@contextmanager
def news_database(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer, n: int, workers: int = 1, **words: Any
) -> Iterator[tuple[Settings, sessionmaker[Session], list[dict[str, Any]]]]:
    """A new database with ``n`` real news articles ingested and reindexed (on ``workers``
    processes) under these tokenizer settings: ``(settings, factory, records)``."""
    settings = make_settings(tmp_path, database_url, tokenizer=words)
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    records = news(n)
    Ingester(factory, Featurizer(settings, tokenizer)).ingest_records(records)
    with AnalysisPool(settings, workers=workers) as pool:
        reindex(factory=factory, featurizer=Featurizer(settings, tokenizer), pool=pool)
    try:
        yield settings, factory, records
    finally:
        engine.dispose()


def test_a_model_keeps_its_words_and_old_models_still_read() -> None:
    plain = IdfModel(n_docs=3, df={"数据": 2, "python": 1})
    worded = IdfModel(n_docs=3, df={"数据": 2, "蔡英文": 1}, words=("比特币", "蔡英文"))
    back = IdfModel.from_bytes(worded.to_bytes())
    assert (back.n_docs, dict(back.df), back.words) == (3, dict(worded.df), worded.words)
    # a model without words keeps the first format: what stored models hold reads as before
    assert IdfModel.from_bytes(plain.to_bytes()).words == ()
    assert plain.to_bytes() == IdfModel(n_docs=3, df=dict(plain.df)).to_bytes()
    assert IdfModel.from_bytes(IdfModel(0, {}, words=("区块链",)).to_bytes()).words == ("区块链",)


def test_settings_off_leave_model_params_as_they_were(tmp_path: Path) -> None:
    off = make_settings(tmp_path, "sqlite://")
    on = make_settings(tmp_path, "sqlite://", tokenizer=ON)
    assert "new_words" not in model_params(off)["tokenizer"]  # models fitted before stay valid
    assert model_params(on)["tokenizer"]["new_words"]["min_count"] == 5


@pytest.mark.slow
def test_both_backends_cut_alike_with_discovered_words(
    tokenizer: Tokenizer, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The words discovered in real news and technical texts, added to both backends, cut the
    texts alike. The technical texts are ``sampled_texts`` (the backends' comparison's: every
    kind of character and foreign word of tests/data, 46% of its characters), as the checks
    are the same per text; the news are whole (most of the words, and the fragments)."""
    texts = [t for _, t in sampled_texts(data_dir)]
    texts += [text_of(r["title"], r["content"]) for r in news(1500)]
    base = tokenizer
    # the candidates words_in drew its words from, kept as its discover_words returned them (a
    # second discovery over the same texts cost ~2 s of CPU)
    candidates: set[str] = set()

    def discovering(*args: Any, **kwargs: Any) -> list[NewWord]:
        found = discover_words(*args, **kwargs)
        candidates.update(w.word for w in found)
        return found

    monkeypatch.setattr(new_words, "discover_words", discovering)
    words = list(words_in(texts, base, DiscoveryParams()))
    assert len(words) > 200 and "比特币" in words  # names and terms of the news, tech terms
    # fragments of dictionary words are candidates, but not words: 南省 of 河南省, 湖南省
    assert {"南省", "委书记"} <= candidates - set(words)
    settings = make_settings(Path("unused"), "sqlite://").tokenizer
    fast = build_tokenizer(settings, words)
    ref = build_tokenizer(settings.model_copy(update={"backend": "jieba"}), words)
    checked = texts[::3]  # a third of the texts, news and tech alike (pure-Python jieba is slow)
    joined = sum(w in fast.tokens(t) for t in checked for w in words[:50] if w in t)
    assert joined > 50  # the words do come out whole
    assert [t for t in checked if fast.tokens(t) != ref.tokens(t)] == []


@pytest.mark.slow
def test_a_reindex_fits_words_that_every_later_analysis_uses(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer
) -> None:
    # reindexed on 2 workers: they tokenize with the words too
    database = news_database(tmp_path, database_url, tokenizer, 600, workers=2, **ON)
    with database as (settings, factory, records):
        check_a_model_with_words(settings, factory, records, tokenizer)


def check_a_model_with_words(
    settings: Settings,
    factory: sessionmaker[Session],
    records: list[dict[str, Any]],
    tokenizer: Tokenizer,
) -> None:
    model, params = active_model(factory)
    assert params["tokenizer"]["new_words"]["sample"] == 20_000
    assert len(model.words) > 20 and list(model.words) == sorted(set(model.words))
    assert not any(tokenizer.knows(w) for w in model.words)
    assert model.words == discover(factory, Featurizer(settings, tokenizer))  # reproducible
    stored = vectors(factory)
    hashes = dict(zip(model.words, TermHasher().hashes(list(model.words)).tolist(), strict=True))
    terms = {h for v in stored.values() for h in v.hashes.tolist()}
    whole = {w for w in model.words if hashes[w] in terms}
    assert len(whole) > len(model.words) // 2  # stored vectors hold them as terms
    # A new process's ingest (a new featurizer, told nothing) tokenizes with the model's words:
    # a copy of a stored article gets the very vector of its original.
    rich = max(records, key=lambda r: sum(w in r["content"] for w in whole))
    fresh = Ingester(factory, Featurizer(settings, tokenizer))
    fresh.ingest_records([{**rich, "id": "copy-of-rich"}])
    after = vectors(factory)
    assert after["copy-of-rich"].hashes.tolist() == after[rich["id"]].hashes.tolist()
    assert set(after["copy-of-rich"].hashes.tolist()) & {hashes[w] for w in whole}
    # the report says what the model found
    summary = render_html(gather(factory, database="test", hamming_k=3, sample=100))
    assert f"{len(model.words):,} words beside the dictionary" in summary
    assert html.escape(model.words[0]) in summary


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_without_the_words_the_same_texts_cut_otherwise(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer
) -> None:
    """The check above is not vacuous: with discovery off, the words' hashes are not terms."""
    with news_database(tmp_path, database_url, tokenizer, 600) as (_, factory, _records):
        check_the_words_absent(tmp_path, database_url, factory, tokenizer)


def check_the_words_absent(
    tmp_path: Path, database_url: str, factory: sessionmaker[Session], tokenizer: Tokenizer
) -> None:
    assert active_model(factory)[0].words == ()
    on = make_settings(tmp_path, database_url, tokenizer=ON)
    words = discover(factory, Featurizer(on, tokenizer))
    hashes = set(TermHasher().hashes(list(words)).tolist())
    terms = {h for v in vectors(factory).values() for h in v.hashes.tolist()}
    assert words and not hashes & terms
    # the sample: spread over the corpus, within its character budget
    small = on.tokenizer.model_copy(update={"new_words_sample": 100, "new_words_max_chars": 20_000})
    texts = _sample(factory, small)
    sizes = [len(a) + len(b) for a, b in texts]
    assert sum(sizes[:-1]) < 20_000 <= sum(sizes) and len(texts) < 100
    with factory() as session:
        ids = dict(session.execute(select(Article.title, Article.id)).all())
    picked = sorted(ids[title] for title, _ in texts)
    assert picked[-1] - picked[0] > 400  # from the whole corpus, not its first articles


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_ingest_that_straddles_a_reindex_stores_what_the_new_words_give(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer
) -> None:
    """A batch analysed under one model and written after a reindex switched to a model with
    other words is analysed again with the new words (ingest analyses a batch before it
    writes the one before it: the switch can fall between)."""
    with news_database(tmp_path, database_url, tokenizer, 300, **ON) as database:
        check_a_straddling_batch(*database, tokenizer)


def check_a_straddling_batch(
    settings: Settings,
    factory: sessionmaker[Session],
    records: list[dict[str, Any]],
    tokenizer: Tokenizer,
) -> None:
    first = active_model(factory)[0].words
    rich = max(records, key=lambda r: sum(w in r["content"] for w in first))
    assert sum(w in rich["content"] for w in first) >= 3
    kept = [rich["id"], *(r["id"] for r in records[:10] if r["id"] != rich["id"])]

    def feed() -> Iterator[RawRecord]:
        yield RawRecord(1, data={**rich, "id": "copy"})  # analysed now, with the first words
        # before it is written: the corpus shrinks and a reindex switches to other words
        writer = Ingester(factory, Featurizer(settings, tokenizer))
        writer.delete([r["id"] for r in records if r["id"] not in kept])
        reindex(factory=factory, featurizer=Featurizer(settings, tokenizer))
        yield RawRecord(2, data={**records[1], "id": "late"})

    settings_one = settings.model_copy(
        update={"ingest": settings.ingest.model_copy(update={"batch_size": 1})}
    )
    Ingester(factory, Featurizer(settings_one, tokenizer)).ingest_raw(feed())
    assert active_model(factory)[0].words != first
    after = vectors(factory)
    assert after["copy"].hashes.tolist() == after[rich["id"]].hashes.tolist()


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_incremental_reindex_recomputes_with_the_models_words(
    tmp_path: Path, database_url: str, tokenizer: Tokenizer
) -> None:
    with news_database(tmp_path, database_url, tokenizer, 300, **ON) as database:
        check_an_incremental_run(*database, tokenizer)


def check_an_incremental_run(
    settings: Settings,
    factory: sessionmaker[Session],
    records: list[dict[str, Any]],
    tokenizer: Tokenizer,
) -> None:
    words = active_model(factory)[0].words
    rich = max(records, key=lambda r: sum(w in r["content"] for w in words))
    before = vectors(factory)[rich["id"]]
    with factory() as session:  # its features go missing: the incremental run recomputes them
        article = session.scalars(select(Article.id).where(Article.external_id == rich["id"])).one()
        session.execute(
            ArticleFeatures.__table__.delete().where(ArticleFeatures.article_id == article)
        )
        session.commit()
    result = reindex_incremental(factory=factory, featurizer=Featurizer(settings, tokenizer))
    assert (result.mode, result.recomputed) == ("incremental", 1)
    assert vectors(factory)[rich["id"]].hashes.tolist() == before.hashes.tolist()
