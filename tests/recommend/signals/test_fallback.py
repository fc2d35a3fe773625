"""Fallback (``related.min_items``): a short list is filled with the newest (or most clicked)
articles of its category, never the article, an item or a near-duplicate of either, within the
request's filters and the editors' exclusions, the same on every page."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.index.related.view import Hits, RowFilter
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.lists.curation import Curation
from recengine.recommend.lists.facts import facts_of
from recengine.recommend.lists.listing import Texts
from recengine.recommend.lists.query import load_query
from recengine.recommend.lists.suppress import Picked
from recengine.recommend.signals.fallback import Anchor, Need, fill
from recengine.storage.db import transaction
from recengine.storage.rows.feedback import add_counts, article_ids
from tests.overrides_helpers import add
from tests.recommend.signals.corpus import article, ask, service, with_related
from tests.templates import load

FOOTER = "\n本文转载自运维周刊，版权归原作者所有，转载请注明出处并保留本段声明。"


def ops(aid: str, keys: tuple[str, ...], day: int | None) -> dict[str, Any]:
    """An article of the category 运维 published on ``day`` May 2024 (None: undated); an id
    ending in ``-copy`` is a repost (the same text, a footer)."""
    when = None if day is None else f"2024-05-{day:02d}T08:00:00+00:00"
    out = article(aid, keys, when, category="运维")
    if aid.endswith("-copy"):  # a repost keeps the title
        out["content"] += FOOTER
        out["title"] = out["title"].replace("-copy", "")
    return out


CORPUS = [
    ops("lone", ("ops", "a", "b"), 1),  # the article: one related item only
    ops("lone-copy", ("ops", "a", "b"), 7),  # a repost of it, the newest of the category
    ops("item", ("ops", "h"), None),  # its only related article
    ops("n1", ("split", "c"), 5),
    ops("n1-copy", ("split", "c"), 6),  # newer than its original
    ops("n2", ("java", "d"), 4),
    ops("n3", ("front", "e"), 3),
    ops("undated", ("cache", "f"), None),
    article("elsewhere", ("tx", "g"), "2024-05-09T08:00:00+00:00"),  # newest, another category
]


@pytest.fixture
def loaded(settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer) -> Settings:
    load(factory, featurizer, CORPUS)
    return with_related(settings, min_items=4)


def ids(body: dict[str, Any]) -> list[str]:
    return [i["id"] for i in body["items"]]


def test_a_short_list_is_filled_with_the_newest_of_its_category_never_a_duplicate(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    assert ids(ask(service(with_related(loaded, min_items=0), factory), factory, "lone")) == [
        "item"
    ]
    related = service(loaded, factory)
    body = ask(related, factory, "lone")
    # the repost of the article and the newer copy of n1 are the newest, yet never shown: the
    # first duplicates the article, the second gives way to its original
    assert ids(body) == ["item", "n1", "n2", "n3"]
    assert body["items"][0]["score"] > 0 and "fallback" not in body["items"][0]["reasons"]
    for entry in body["items"][1:]:
        assert entry["score"] == 0.0
        assert entry["reasons"] == {"fallback": "newest", "same_category": True}
    cut = {s["id"]: s["duplicate_of"] for s in body["suppressed"]}
    assert cut == {"lone-copy": "lone", "n1-copy": "n1"}
    # every page cuts the same list; a page past it is empty
    pages = [ask(related, factory, "lone", k=1, offset=n) for n in range(5)]
    assert [i for page in pages for i in ids(page)] == ids(body)
    assert {s["id"] for page in pages for s in page["suppressed"]} == set(cut)
    # a list long enough is left alone
    assert ids(ask(service(with_related(loaded, min_items=1), factory), factory, "lone")) == [
        "item"
    ]


def test_the_fill_keeps_to_the_request_filters_and_the_editors(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    related = service(loaded, factory)
    assert ids(ask(related, factory, "lone", exclude=["n2"])) == ["item", "n1", "n3", "undated"]
    # the request asks for another category than the article's: nothing can fill
    assert ids(ask(related, factory, "lone", categories=["数据库"])) == []
    assert ids(ask(related, factory, "lone", published_after="2024-05-04")) == ["n1", "n2"]
    add(factory, "exclude", "n1")  # as in any list, its copy is another article: it may show
    assert ids(ask(related, factory, "lone")) == ["item", "n1-copy", "n2", "n3"]
    add(factory, "exclude", "n1-copy")
    assert ids(ask(related, factory, "lone")) == ["item", "n2", "n3", "undated"]


def test_most_clicked_comes_first_then_the_newest(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    today = datetime.now(UTC).date()
    with transaction(factory) as session:
        internal = article_ids(session=session, external_ids=["n3", "undated", "elsewhere"])
        add_counts(
            session=session,
            counts={
                (today, internal["n3"], "default", 0): (100, 2),
                (today, internal["undated"], "default", 1): (100, 5),
                (today, internal["elsewhere"], "default", 0): (100, 9),  # another category
            },
        )
    related = service(with_related(loaded, fallback="most_clicked"), factory)
    body = ask(related, factory, "lone")
    assert ids(body) == ["item", "undated", "n3", "n1"]
    assert [i["reasons"]["fallback"] for i in body["items"][1:]] == [
        "most_clicked",
        "most_clicked",
        "newest",
    ]


def test_the_fill_suppresses_what_duplicates_the_article_itself(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    """The fill's own suppression, without the list's (which cut the article's repost first
    in the test above): the repost, the newest of the category, is cut as the article's copy."""
    related = service(loaded, factory)
    with factory() as session:
        snap = related.index.current(session=session)
        query = load_query(session, snap, "lone")
        nothing = Hits(*(np.zeros(0, t) for t in (np.intp, np.intp, np.int64, float, np.uint64)))
        filled = fill(
            session,
            snap,
            nothing,
            Picked(),
            Anchor(query.id, query.fingerprint, query.vector, query.category),
            Need(4, "newest", 200, 28, RowFilter(exclude_ids=np.array([query.id]))),
            related.criterion,
            Curation.none(),
            Texts(session, True),
            facts_of(snap, session, related.card_rule),
        )
        names = article_ids(session=session, external_ids=[r["id"] for r in CORPUS])
    external = {v: k for k, v in names.items()}
    kept = [external[int(filled.hits.ids[i])] for i in filled.picked.kept]
    assert kept == ["n1", "n2", "n3", "undated"]
    cut = {external[int(filled.hits.ids[s.position])]: s for s in filled.picked.suppressed}
    assert cut["lone-copy"].duplicate_of == query.id and cut["n1-copy"].duplicate_of == names["n1"]
