"""Every reindex derives the cards articles lack (stored before cards existed) or hold by
another rule, locally (full and incremental); the Spark engine's are in test_spark.py."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.cards import card_rule
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.cards import fill_cards
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.incremental import reindex_incremental
from recengine.storage.models import Article
from recengine.storage.rows.articles import write_cards
from recengine.text.words.tokenize import Tokenizer
from tests.conftest import make_settings
from tests.factories import javaguide_records


def stored_cards(factory: sessionmaker[Session]) -> dict[str, tuple[str | None, ...]]:
    with factory() as session:
        rows = session.execute(
            select(Article.external_id, Article.card_image, Article.card_summary, Article.card_rule)
        ).all()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def forget_cards(factory: sessionmaker[Session]) -> None:
    """The articles as a database upgraded from before cards holds them: no card."""
    with factory() as session, session.begin():
        session.execute(update(Article).values(card_image=None, card_summary=None, card_rule=None))


def test_a_full_reindex_derives_the_cards_rows_stored_before_lack(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 30)
    Ingester(factory, featurizer).ingest_records(records)
    derived = stored_cards(factory)
    assert sum(image is not None for image, _, _ in derived.values()) >= 10  # Markdown images
    forget_cards(factory)
    reindex(factory=factory, featurizer=featurizer)
    assert stored_cards(factory) == derived  # what ingest derives, the reindex derives


def test_an_incremental_reindex_derives_them_by_a_new_summary_length(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    tmp_path: Path,
    settings: Settings,
    tokenizer: Tokenizer,
) -> None:
    Ingester(factory, featurizer).ingest_records(javaguide_records(data_dir, 20))
    reindex(factory=factory, featurizer=featurizer)
    shorter = make_settings(tmp_path, settings.database_url, ingest={"summary_chars": 40})
    result = reindex_incremental(factory=factory, featurizer=Featurizer(shorter, tokenizer))
    assert result.mode == "incremental"
    found = stored_cards(factory)
    assert {rule for _, _, rule in found.values()} == {card_rule(40)}
    assert all(len(text or "") <= 40 for _, text, _ in found.values())
    assert fill_cards(factory, shorter) == 0  # nothing stale is left


def test_an_article_written_meanwhile_keeps_its_writers_card(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    Ingester(factory, featurizer).ingest_records(javaguide_records(data_dir, 2))
    with factory() as session:
        first = session.execute(select(Article.id, Article.seq).order_by(Article.id)).first()
    assert first is not None
    before = stored_cards(factory)
    stale = {"card_image": "/old.png", "card_summary": "old", "card_rule": "0:1"}
    with factory() as session, session.begin():  # read at an older seq: not written
        write_cards(session=session, rows=[{"id": first.id, "seq": first.seq - 1, **stale}])
    assert stored_cards(factory) == before
    with factory() as session, session.begin():  # read at its seq: written
        write_cards(session=session, rows=[{"id": first.id, "seq": first.seq, **stale}])
    assert ("/old.png", "old", "0:1") in stored_cards(factory).values()


def test_a_reindex_with_nothing_to_rebuild_still_derives_stale_cards(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    tmp_path: Path,
    settings: Settings,
    tokenizer: Tokenizer,
) -> None:
    """Cards are no part of the model: a full reindex that finds the model up to date (README's
    sequence) still derives the cards a new summary length made stale, and nothing else."""
    Ingester(factory, featurizer).ingest_records(javaguide_records(data_dir, 20))
    reindex(factory=factory, featurizer=featurizer)
    shorter = make_settings(tmp_path, settings.database_url, ingest={"summary_chars": 40})
    result = reindex(factory=factory, featurizer=Featurizer(shorter, tokenizer), if_stale=True)
    assert result.mode == "current"
    found = stored_cards(factory)
    assert {rule for _, _, rule in found.values()} == {card_rule(40)}
    assert fill_cards(factory, shorter) == 0
