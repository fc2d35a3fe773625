"""Related lists read no overrides while none exists, and honour one added through another node
from the next answer that sees its sequence (``recommend.lists.curation.OverridePresence``), on
SQLite and PostgreSQL, on real JavaGuide text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.lists.curation import OverridePresence
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.state import read_state
from tests.factories import javaguide_records
from tests.overrides_helpers import add, remove
from tests.recommend.test_related import ask, ids, loaded_service
from tests.templates import load


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    return javaguide_records(data_dir, 40)


@pytest.fixture
def other_node(settings: Settings, engine: Engine) -> Iterator[sessionmaker[Session]]:
    """Sessions of another process or node: an engine of its own on the same database."""
    other = make_engine(settings.resolved_database_url)
    yield make_session_factory(other)
    other.dispose()


@pytest.fixture
def override_statements(engine: Engine) -> list[str]:
    """Every statement this node runs that reads or writes the overrides table."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "overrides" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    return seen


@pytest.fixture
def service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> RelatedArticles:
    return loaded_service(settings, factory, featurizer, corpus)


def test_no_override_means_no_override_reads_and_one_added_elsewhere_holds_next_answer(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
    other_node: sessionmaker[Session],
    override_statements: list[str],
) -> None:
    query = corpus[0]["id"]
    before = ask(service, factory, query, k=5, min_score=0)
    override_statements.clear()
    assert ask(service, factory, query, k=5, min_score=0) == before
    assert override_statements == []  # the fast path: nothing read at an unchanged sequence
    top, low = ids(before)[0], ids(ask(service, factory, query, k=30, min_score=0))[-1]
    excluded = add(other_node, "exclude", top)
    after = ask(service, factory, query, k=5, min_score=0)
    assert top not in ids(after)  # the other node's override, in this node's next answer
    add(other_node, "pin", query, low)
    assert ids(ask(service, factory, query, k=5, min_score=0))[0] == low
    remove(other_node, excluded["override"]["id"])
    assert top in ids(ask(service, factory, query, k=5, min_score=0))


def test_the_last_override_removed_brings_the_fast_path_back(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
    other_node: sessionmaker[Session],
    override_statements: list[str],
) -> None:
    query = corpus[0]["id"]
    before = ask(service, factory, query, k=5, min_score=0)
    blocked = add(other_node, "block", query, ids(before)[1])
    assert ids(before)[1] not in ids(ask(service, factory, query, k=5, min_score=0))
    remove(other_node, blocked["override"]["id"])
    assert ask(service, factory, query, k=5, min_score=0) == before
    override_statements.clear()
    assert ask(service, factory, query, k=5, min_score=0) == before
    assert override_statements == []


def test_an_override_is_honoured_from_the_check_that_sees_its_sequence(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
    other_node: sessionmaker[Session],
) -> None:
    """With change notifications the index skips its check until one arrives: the override
    waits for it like every other change (the documented delay), then holds."""
    query = corpus[0]["id"]
    top = ids(ask(service, factory, query, k=5, min_score=0))[0]
    follower = service.index.follower
    follower.follow_notifications(lambda: True, 3_600.0)
    ask(service, factory, query, k=5, min_score=0)  # checked: the skip starts now
    add(other_node, "exclude", top)
    assert top in ids(ask(service, factory, query, k=5, min_score=0))  # no notification yet
    follower.notified()
    assert top not in ids(ask(service, factory, query, k=5, min_score=0))


def test_presence_is_read_once_per_sequence(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
    other_node: sessionmaker[Session],
) -> None:
    load(factory, featurizer, corpus[:5])
    presence = OverridePresence()
    with factory() as session:
        seq = read_state(session=session).seq
        assert not presence.exist(session, seq)
        assert not presence.exist(session, seq)
    assert presence.reads == 1
    add(other_node, "exclude", corpus[1]["id"])
    with factory() as session:
        assert not presence.exist(session, seq)  # a caller whose check is older: as of it
        now = read_state(session=session).seq
        assert presence.exist(session, now)
        assert presence.exist(session, now)
    assert presence.reads == 2 and now > seq
