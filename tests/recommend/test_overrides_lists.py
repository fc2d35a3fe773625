"""Editors' overrides in related lists and feeds (pins, blocks, exclusions, duplicate verdicts),
through the Python API, on SQLite and PostgreSQL, on real JavaGuide text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import Conflict, InvalidRequest, NotFound
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.overrides import NewOverride
from recengine.recommend.related import RelatedArticles
from tests.overrides_helpers import add, listing, remove
from tests.recommend.test_related import (
    ask,
    dated_records,
    delete_article,
    ids,
    loaded_service,
    repost,
)


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    records = dated_records(data_dir, 60)
    return [*records, repost(records[0], 1)]


@pytest.fixture
def service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> RelatedArticles:
    return loaded_service(settings, factory, featurizer, corpus)


def full(service: RelatedArticles, factory: sessionmaker[Session], aid: str) -> list[str]:
    """Every item of the list (no floor, as long as it gets)."""
    return ids(ask(service, factory, aid, k=100, min_score=0))


def test_pins_come_first_in_the_editors_order_and_stay_under_the_floor(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query = corpus[0]["id"]
    ranked = full(service, factory, query)
    low, lower = ranked[-1], ranked[-2]  # least related: below the default floor
    before = ask(service, factory, query, k=5)
    assert low not in ids(before) and lower not in ids(before)
    add(factory, "pin", query, low, reason="editor's pick")
    add(factory, "pin", query, lower, position=0)  # before the first pin
    body = ask(service, factory, query, k=5)
    assert ids(body)[:2] == [lower, low]
    assert all(e["reasons"].get("pinned") for e in body["items"][:2])
    assert not any(e["reasons"].get("pinned") for e in body["items"][2:])
    # the rest is the list as it was, minus nothing but the places the pins took
    assert ids(body)[2:] == ids(before)[:3]
    assert body["items"][1]["score"] < 0.04  # never cut by the floor
    # paging goes through the pins, then the ranked items; a pin is not shown twice
    second = ask(service, factory, query, k=3, offset=1)
    assert ids(second) == [low, *ids(before)[:2]]
    assert len(set(full(service, factory, query))) == len(full(service, factory, query))


def test_a_pin_moves_and_a_repeated_pin_changes_nothing(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query, a, b = corpus[0]["id"], corpus[10]["id"], corpus[20]["id"]
    first = add(factory, "pin", query, a)
    add(factory, "pin", query, b)
    again = add(factory, "pin", query, a, position=5)  # moved to the end
    assert not again["created"] and again["override"]["id"] == first["override"]["id"]
    assert ids(ask(service, factory, query, k=2)) == [b, a]
    remove(factory, again["override"]["id"])
    assert ids(ask(service, factory, query, k=1)) == [b]
    assert [o["position"] for o in listing(factory, kinds=["pin"])] == [0]


def test_a_pinned_duplicate_is_still_suppressed(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query = corpus[0]["id"]
    copy = f"repost-1-{query}"
    add(factory, "pin", query, copy)
    body = ask(service, factory, query, k=5)
    assert copy not in ids(body)
    assert {"id": copy, "duplicate_of": query} in [
        {k: s[k] for k in ("id", "duplicate_of")} for s in body["suppressed"]
    ]


def test_blocked_pairs_are_never_shown_together(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query = corpus[1]["id"]
    before = ids(ask(service, factory, query, k=10, min_score=0))
    top, second, third = before[:3]
    add(factory, "block", top, query, reason="unrelated in fact")
    after = ids(ask(service, factory, query, k=10, min_score=0))
    assert top not in after and after[:2] == [second, third]
    assert query not in full(service, factory, top)  # either way
    # two items blocked with each other: the lower one leaves the list
    add(factory, "block", second, third)
    assert ids(ask(service, factory, query, k=3, min_score=0))[:1] == [second]
    assert third not in ids(ask(service, factory, query, k=10, min_score=0))


def test_block_and_pin_replace_each_other(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query, other = corpus[0]["id"], corpus[30]["id"]
    pin = add(factory, "pin", query, other)
    block = add(factory, "block", other, query)
    assert block["replaced"] == [pin["override"]["id"]]
    assert other not in full(service, factory, query)
    again = add(factory, "pin", query, other)
    assert again["replaced"] == [block["override"]["id"]]
    assert ids(ask(service, factory, query, k=1)) == [other]
    assert [o["kind"] for o in listing(factory)] == ["pin"]


def test_an_excluded_article_leaves_every_list_but_keeps_its_own(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    queries = [r["id"] for r in corpus[:20]]
    lists = {q: full(service, factory, q) for q in queries}
    target = lists[queries[0]][0]
    assert sum(target in found for found in lists.values()) > 3
    add(factory, "exclude", target, reason="legal request")
    add(factory, "pin", queries[1], target)  # an exclusion beats a pin
    for q in queries:
        assert target not in full(service, factory, q)
    assert full(service, factory, target)  # its own page keeps its list
    # excluded, it hides nothing: the next item moves up
    assert full(service, factory, queries[0])[0] == lists[queries[0]][1]


def test_not_duplicate_and_same_article_correct_suppression(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query = corpus[0]["id"]
    copy = f"repost-1-{query}"
    assert copy not in full(service, factory, query)
    add(factory, "not_duplicate", query, copy, reason="a different edition")
    assert full(service, factory, query)[0] == copy
    # "same article" for a pair the criterion calls different: suppressed as a duplicate
    related = full(service, factory, corpus[3]["id"])[0]
    answer = add(factory, "same_article", corpus[3]["id"], related)
    body = ask(service, factory, corpus[3]["id"], k=10, min_score=0)
    assert related not in ids(body)
    (cut,) = [s for s in body["suppressed"] if s["id"] == related]
    assert cut["rule"] == "editor" and cut["duplicate_of"] == corpus[3]["id"]
    # the two kinds on one pair replace each other
    undo = add(factory, "not_duplicate", related, corpus[3]["id"])
    assert undo["replaced"] == [answer["override"]["id"]]
    assert full(service, factory, corpus[3]["id"])[0] == related


def test_an_article_that_is_nobodys_duplicate(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query = corpus[0]["id"]
    copy = f"repost-1-{query}"
    add(factory, "not_duplicate", copy)  # against all
    assert full(service, factory, query)[0] == copy
    assert full(service, factory, copy)[0] == query


def test_an_override_naming_a_deleted_article_is_kept_and_reported(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    query, pinned = corpus[0]["id"], corpus[40]["id"]
    added = add(factory, "pin", query, pinned, reason="see also")
    assert added["override"]["active"] and added["override"]["deleted"] == []
    delete_article(factory, pinned)
    assert pinned not in full(service, factory, query)  # the list works without it
    (kept,) = listing(factory)
    assert kept["id"] == added["override"]["id"]
    assert not kept["active"] and kept["deleted"] == [pinned]
    assert kept["reason"] == "see also" and kept["by"] == "test"
    # an override may still name it (it exists, deleted); an unknown id is refused
    add(factory, "exclude", pinned)
    with pytest.raises(NotFound):
        add(factory, "exclude", "no-such-article")


def test_invalid_overrides_are_refused_and_change_nothing(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    a, b, c = (r["id"] for r in corpus[:3])
    for args, kw in [
        (("pin", a), {}),  # a pair kind needs the other article
        (("exclude", a, b), {}),
        (("block", a, a), {}),
        (("dislike", a), {}),
        (("pin", a, b), {"position": -1}),
        (("block", a, b), {"position": 1}),
        (("exclude", a), {"by": " "}),
        (("exclude", a), {"reason": "x" * 2001}),
    ]:
        with pytest.raises(InvalidRequest):
            NewOverride.parse(*args, **{"by": "ed", **kw})
    add(factory, "same_article", a, b)
    add(factory, "same_article", b, c)
    with pytest.raises(Conflict):
        add(factory, "not_duplicate", a, c)  # a and c are one article through b
    add(factory, "not_duplicate", a, corpus[5]["id"])
    with pytest.raises(Conflict):
        add(factory, "same_article", c, corpus[5]["id"])  # would join a and corpus[5]
    assert [o["kind"] for o in listing(factory)] == ["same_article"] * 2 + ["not_duplicate"]


@pytest.fixture
def feeds(
    service: RelatedArticles, settings: Settings, factory: sessionmaker[Session]
) -> ReaderFeeds:
    return ReaderFeeds(settings, service.index)


def test_feeds_honour_pins_blocks_and_exclusions(
    feeds: ReaderFeeds,
    service: RelatedArticles,
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
) -> None:
    read = corpus[2]["id"]
    with factory() as session, session.begin():
        feeds.record_reads("ann", [read], session=session)

    def feed() -> list[dict[str, Any]]:
        with factory() as session:
            items: list[dict[str, Any]] = feeds.feed("ann", session=session, k=10)["items"]
            return items

    before = [e["id"] for e in feed()]
    ranked = full(service, factory, read)
    pinned = next(a for a in reversed(ranked) if a not in before)
    add(factory, "pin", read, pinned)
    items = feed()
    assert items[0]["id"] == pinned and items[0]["reasons"]["pinned"]
    add(factory, "exclude", before[0])
    add(factory, "block", read, before[1])
    shown = [e["id"] for e in feed()]
    assert before[0] not in shown and before[1] not in shown and shown[0] == pinned
    # blocked with an item above: the lower one is skipped
    add(factory, "block", shown[1], shown[2])
    assert shown[2] not in [e["id"] for e in feed()]
