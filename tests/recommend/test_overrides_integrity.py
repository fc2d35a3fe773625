"""Overrides keep their meaning: ids are never reused, contradictions are refused, a pin that
could never show is refused, and storing what is stored already changes nothing (not even the
change sequence every cache is keyed by); on SQLite and PostgreSQL, on real JavaGuide text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import Conflict, NotFound
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.override_rules import DuplicatePins
from recengine.recommend.overrides import Overrides
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.storage.models import Override
from recengine.storage.state import read_state
from tests.overrides_helpers import add, listing, remove
from tests.recommend.test_reader_data import _article as old_article
from tests.recommend.test_related import ask, dated_records, ids, loaded_service, repost


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    records = dated_records(data_dir, 30)
    return [*records, repost(records[0], 1)]


@pytest.fixture
def service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> RelatedArticles:
    return loaded_service(settings, factory, featurizer, corpus)


def test_override_ids_are_never_reused(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    """Removing the newest override and adding another gives a new id: a retried delete or a
    listing cursor never lands on another decision."""
    first = add(factory, "exclude", corpus[1]["id"])["override"]["id"]
    newest = add(factory, "exclude", corpus[2]["id"])["override"]["id"]
    remove(factory, newest)
    again = add(factory, "exclude", corpus[3]["id"])["override"]["id"]
    assert again > newest > first
    with pytest.raises(NotFound):
        remove(factory, newest)  # the retried delete: gone, and nothing else is removed
    assert [o["id"] for o in listing(factory, after_id=newest)] == [again]


def test_the_migration_keeps_every_override_and_its_id(database_url: str) -> None:
    """0007 rebuilds SQLite's table: rows keep their ids, and new ids continue above them."""
    engine = make_engine(database_url)
    upgrade(engine, "0006")
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session, session.begin():
        article_id = old_article(session, "a")  # the columns of revision 0006 only
        for i in (1, 2, 3):
            session.add(
                Override(
                    kind="exclude",
                    article_id=article_id,
                    created_by="ed",
                    created_at=now,
                    reason=f"r{i}",
                )
            )
    upgrade(engine)
    with make_session_factory(engine)() as session, session.begin():
        kept = session.execute(select(Override.id, Override.reason).order_by(Override.id)).all()
        assert [tuple(r) for r in kept] == [(1, "r1"), (2, "r2"), (3, "r3")]
        session.execute(delete(Override).where(Override.id == 3))
        new = Override(kind="exclude", article_id=article_id, created_by="ed", created_at=now)
        session.add(new)
        session.flush()
        assert new.id == 4
    engine.dispose()


def seq_of(factory: sessionmaker[Session]) -> int:
    with factory() as session:
        return read_state(session=session).seq


@pytest.mark.parametrize(
    ("kind", "pair"),
    [("exclude", False), ("pin", True), ("block", True), ("same_article", True)],
)
def test_storing_an_override_again_changes_nothing_not_even_the_sequence(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
    kind: str,
    pair: bool,
) -> None:
    """Every worker's answers are cached by change sequence: an add that changes nothing must
    not take a sequence number (it would empty every cache of every worker)."""
    a, b = corpus[4]["id"], corpus[9]["id"] if pair else None
    first = add(factory, kind, a, b)
    assert first["created"]
    before = seq_of(factory)
    again = add(factory, kind, a, b, reason="said twice")
    assert not again["created"] and again["override"] == first["override"]
    assert seq_of(factory) == before
    if kind == "pin":
        add(factory, "pin", a, corpus[10]["id"])
        moved_at = seq_of(factory)
        add(factory, "pin", a, b, position=0)  # where it is already
        assert seq_of(factory) == moved_at
        add(factory, "pin", a, b, position=1)  # a real move takes a number
        assert seq_of(factory) == moved_at + 1


def test_a_not_duplicate_against_all_inside_a_same_article_group_is_refused(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    """same_article(A, B) + same_article(B, C) make A, B, C one article: not_duplicate C (of
    every article) would leave C in A's cluster while A's list shows it. Refused, like the
    pair form; so is the reverse order, and nothing is stored or changed."""
    a, b, c, p, q = (corpus[i]["id"] for i in (3, 6, 8, 12, 14))
    add(factory, "same_article", a, b)
    add(factory, "same_article", b, c)
    add(factory, "same_article", p, q)
    stored, seq = listing(factory), seq_of(factory)
    for alone in (c, a, p):
        with pytest.raises(Conflict, match="same_article"):
            add(factory, "not_duplicate", alone)
    with pytest.raises(Conflict, match="same_article"):
        add(factory, "not_duplicate", a, c)  # the pair form, as before
    assert listing(factory) == stored and seq_of(factory) == seq

    lone = corpus[20]["id"]
    add(factory, "not_duplicate", lone)
    stored, seq = listing(factory), seq_of(factory)
    for other in (corpus[22]["id"], c):  # joining it to one article, or into a group
        with pytest.raises(Conflict, match="not_duplicate of every article"):
            add(factory, "same_article", other, lone)
    assert listing(factory) == stored and seq_of(factory) == seq


def test_a_pin_of_a_near_duplicate_is_refused_with_why(
    settings: Settings,
    service: RelatedArticles,
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
) -> None:
    """A list never shows a copy of its article: such a pin would be stored and never
    applied. Refused (409) with the criterion's reason, unless the editor first says the pair
    is not the same article."""
    checked = Overrides(factory, pins=DuplicatePins(settings))
    query, copy = corpus[0]["id"], f"repost-1-{corpus[0]['id']}"
    assert copy in {s["id"] for s in ask(service, factory, query, k=5)["suppressed"]}
    seq = seq_of(factory)
    with pytest.raises(Conflict, match=r"near-duplicate of the article \(.*(cluster|texts)"):
        add(factory, "pin", query, copy, overrides=checked)
    with pytest.raises(Conflict, match="near-duplicate"):
        add(factory, "pin", copy, query, overrides=checked)  # either way round
    assert listing(factory) == [] and seq_of(factory) == seq
    other = corpus[7]["id"]
    assert add(factory, "pin", query, other, overrides=checked)["created"]  # an ordinary pin

    add(factory, "not_duplicate", query, copy, overrides=checked)  # the editor disagrees
    assert add(factory, "pin", query, copy, overrides=checked, position=0)["created"]
    assert ids(ask(service, factory, query, k=3))[:2] == [copy, other]  # and it shows
