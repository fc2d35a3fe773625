"""Related articles through the Python API, on SQLite and PostgreSQL, on real JavaGuide text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, delete, event, insert
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import InvalidRequest, ModelMissing, NotFound
from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming
from recengine.pipeline.demo_corpus import inews_records
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.lists.criterion import DuplicateCriterion
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.storage.models import ArticleFeatures, ClusterMember
from recengine.storage.rows.articles import get_article, soft_delete
from recengine.storage.rows.overrides import mark_changed
from recengine.storage.state import begin_write, read_state
from tests.factories import CARD, javaguide_records, record
from tests.templates import load

FOOTER = "\n\n本文转载自 JavaGuide，转载请注明出处。欢迎关注公众号获取更多面试资料。"


def repost(rec: dict[str, Any], n: int) -> dict[str, Any]:
    """A near-duplicate the way reposting makes one: same text, a footer, another id."""
    return {**rec, "id": f"repost-{n}-{rec['id']}", "content": rec["content"] + FOOTER}


def live_related(settings: Settings, factory: sessionmaker[Session]) -> RelatedArticles:
    """One process's related-articles service, following the database in the foreground (each
    answer first applies the committed writes it has not seen, so tests need no waiting)."""
    return RelatedArticles(settings, LiveIndex(settings, factory, background=False))


def loaded_service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> RelatedArticles:
    """``records`` ingested and reindexed, and a service over them."""
    load(factory, featurizer, records)
    return live_related(settings, factory)


def delete_article(factory: sessionmaker[Session], external_id: str) -> None:
    with factory() as session, session.begin():
        state = begin_write(session=session)
        article = get_article(session=session, external_id=external_id)
        assert article is not None
        soft_delete(session=session, article_id=article.id, seq=state.seq, now=datetime.now(UTC))


def ask(service: RelatedArticles, factory: sessionmaker[Session], aid: str, **kw: Any) -> Any:
    with factory() as session:
        return service.related(aid, session=session, **kw)


def dated_records(data_dir: Path, n: int) -> list[dict[str, Any]]:
    """The first ``n`` JavaGuide records, each dated a day of January 2024 (by its position)."""
    records = javaguide_records(data_dir, n)
    for i, r in enumerate(records):
        r["published_at"] = f"2024-01-{1 + i % 28:02d}T08:00:00+00:00"
    return records


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    records = dated_records(data_dir, 60)
    return [*records, repost(records[0], 1), repost(records[0], 2), repost(records[5], 1)]


@pytest.fixture
def service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> RelatedArticles:
    return loaded_service(settings, factory, featurizer, corpus)


def ids(body: dict[str, Any]) -> list[str]:
    return [entry["id"] for entry in body["items"]]


def test_body_has_exactly_the_contract_shape(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    body = ask(service, factory, corpus[0]["id"], k=5)
    assert set(body) == {"article", "items", "suppressed", "floor", "variant"}
    assert body["floor"] == {"min_score": 0.04, "dropped": 0}
    assert body["variant"] == "default"  # no A/B test configured
    assert body["article"] == corpus[0]["id"] and len(body["items"]) == 5
    for entry in body["items"]:
        assert set(entry) == {"id", "title", "url", "score", "reasons", *CARD}
        assert 0 < entry["score"] <= 1 and entry["reasons"]["shared_terms"]
        assert sum(t["weight"] for t in entry["reasons"]["shared_terms"]) <= entry["score"] + 1e-6
    scores = [e["score"] for e in body["items"]]
    assert scores == sorted(scores, reverse=True)
    # the query's two reposts are suppressed as its duplicates, with their distances
    assert {s["id"] for s in body["suppressed"]} == {
        f"repost-{n}-{corpus[0]['id']}" for n in (1, 2)
    }
    for s in body["suppressed"]:
        assert set(s) == {"id", "duplicate_of", "distance", "rule", "score", "via"}
        assert s["duplicate_of"] == corpus[0]["id"] and 0 <= s["distance"] <= 8
        # in the query's cluster, joined by the texts' resemblance (header/footer reposts)
        assert s["rule"] == "resemblance" and 0.45 <= s["score"] <= 1 and s["via"] is None
    assert corpus[0]["id"] not in ids(body)


def test_a_repost_of_an_item_is_shown_once(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    # corpus[5] and its repost are both related to whatever corpus[5] is related to
    body = ask(service, factory, corpus[6]["id"], k=30)
    shown = ids(body)
    pair = {corpus[5]["id"], f"repost-1-{corpus[5]['id']}"}
    assert len(pair & set(shown)) <= 1
    if pair & set(shown):
        kept = (pair & set(shown)).pop()
        cut = next(s for s in body["suppressed"] if s["id"] in pair)
        assert {"id": (pair - {kept}).pop(), "duplicate_of": kept, "via": None} == {
            k: cut[k] for k in ("id", "duplicate_of", "via")
        }
        assert cut["rule"] == "resemblance" and 0.45 <= cut["score"] <= 1


def test_the_original_takes_the_place_of_a_copy_that_outranks_it(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    # a later copy of an item, headed by the query's own opening: it shares more words with
    # the query than its original does, so it outranks it
    query = corpus[6]
    first = ask(loaded_service(settings, factory, featurizer, corpus), factory, query["id"], k=5)
    original = next(r for r in corpus if r["id"] == first["items"][0]["id"])
    copy = {
        **original,
        "id": "copy-of-original",
        "content": query["content"][:300] + "\n\n" + original["content"],
        "published_at": "2024-03-01T08:00:00+00:00",
    }
    Ingester(factory, featurizer).ingest_records([copy])
    service = live_related(settings, factory)
    body = ask(service, factory, query["id"], k=5)
    assert ids(body)[0] == original["id"] and copy["id"] not in ids(body)
    cut = next(s for s in body["suppressed"] if s["id"] == copy["id"])
    assert cut["duplicate_of"] == original["id"] and cut["rule"] in ("resemblance", "containment")
    # today's rule as a setting: the best-scoring copy wins
    best_wins = settings.model_copy(
        update={"related": settings.related.model_copy(update={"prefer_canonical": False})}
    )
    body = ask(live_related(best_wins, factory), factory, query["id"], k=5)
    assert ids(body)[0] == copy["id"] and original["id"] not in ids(body)
    assert {"id": original["id"], "duplicate_of": copy["id"]}.items() <= next(
        s for s in body["suppressed"] if s["id"] == original["id"]
    ).items()


LONE = {
    "id": "lone",
    "title": "Slow-cooked beef stew",
    "content": "Brown the beef, add onions, carrots and red wine, then simmer for three hours. "
    "A Java developer shared this recipe.",
}


def test_a_lone_article_gets_an_empty_list_not_junk(
    service: RelatedArticles,
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
) -> None:
    Ingester(factory, featurizer).ingest_records([LONE])
    service = live_related(settings, factory)
    # without a floor the list is filled with Java articles on one shared word each
    # ("java", "add", "three", ...)
    junk = ask(service, factory, "lone", k=5, min_score=0)
    assert len(junk["items"]) == 5 and junk["floor"] == {"min_score": 0.0, "dropped": 0}
    assert all(len(e["reasons"]["shared_terms"]) == 1 for e in junk["items"])
    assert max(e["score"] for e in junk["items"]) < settings.related.min_score
    body = ask(service, factory, "lone", k=5)  # the server's floor (related.min_score)
    assert body["items"] == [] and body["floor"] == {"min_score": 0.04, "dropped": 5}


def test_the_floor_cuts_the_page_and_counts_what_it_dropped(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    aid = corpus[10]["id"]
    whole = ask(service, factory, aid, k=40, min_score=0)["items"]
    floor = (whole[14]["score"] + whole[15]["score"]) / 2  # 15 items above it
    for offset, shown in ((0, 10), (10, 5), (20, 0)):
        body = ask(service, factory, aid, k=10, offset=offset, min_score=floor)
        assert body["items"] == whole[offset : offset + shown]
        assert body["floor"] == {"min_score": floor, "dropped": 10 - shown}


def test_paging_and_k_limits(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    aid = corpus[10]["id"]
    whole = ids(ask(service, factory, aid, k=20))
    assert ids(ask(service, factory, aid, k=10)) == whole[:10]
    assert ids(ask(service, factory, aid, k=10, offset=10)) == whole[10:20]
    assert ids(ask(service, factory, aid, k="3", offset="2")) == whole[2:5]
    for bad in ({"k": 0}, {"k": 101}, {"k": "ten"}, {"offset": -1}, {"min_score": 2}):
        with pytest.raises(InvalidRequest):
            ask(service, factory, aid, **bad)
    with pytest.raises(InvalidRequest, match="unknown"):
        ask(service, factory, aid, colour="red")
    with pytest.raises(NotFound):
        ask(service, factory, "no-such-article")


def test_filters(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    aid = corpus[10]["id"]
    by_id = {r["id"]: r for r in corpus}
    # the filters on their own: no relevance floor (min_score=0) unless the test sets one
    base = ids(ask(service, factory, aid, k=10))
    body = ask(service, factory, aid, k=10, exclude=base[:3])
    assert not set(base[:3]) & set(ids(body)) and ids(body)[:7] == base[3:10]

    category = corpus[20]["category"]
    body = ask(service, factory, aid, k=50, categories=[category], min_score=0)
    assert ids(body) and all(by_id[i]["category"] == category for i in ids(body))

    tag = corpus[10]["tags"][0]
    body = ask(service, factory, aid, k=50, tags=[tag], min_score=0)
    assert all(tag in by_id[i]["tags"] for i in ids(body))

    body = ask(
        service,
        factory,
        aid,
        k=50,
        min_score=0,
        published_after="2024-01-10T00:00:00Z",
        published_before=datetime(2024, 1, 20, tzinfo=UTC),
    )
    days = [int(by_id[i]["published_at"][8:10]) for i in ids(body)]
    assert days and all(10 <= d < 20 for d in days)

    scores = [e["score"] for e in ask(service, factory, aid, k=50, min_score=0)["items"]]
    middle = len(scores) // 2
    cut = (scores[middle] + scores[middle + 1]) / 2  # between two shown (rounded) scores
    body = ask(service, factory, aid, k=50, min_score=cut)
    assert [e["score"] for e in body["items"]] == [s for s in scores if s >= cut]
    with pytest.raises(InvalidRequest):
        ask(service, factory, aid, published_after="2024-02-01", published_before="2024-01-01")


def test_new_article_is_related_and_shows_up_in_others_lists_at_once(
    service: RelatedArticles,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    a, b, c = corpus[30], corpus[31], corpus[50]
    # Related to a, not a copy of it: half of a's text beside as much of another article's
    # (half of a alone is an excerpt, a's near-duplicate under the containment rule).
    half = len(a["content"]) // 2
    content = a["content"][:half] + "\n\n" + c["content"][:half]
    new = {"id": "brand-new", "title": a["title"] + " 续", "content": content}
    ask(service, factory, a["id"])  # the index is built and in use
    Ingester(factory, featurizer).ingest_records([new])  # no reindex
    body = ask(service, factory, "brand-new", k=5)
    assert body["items"] and a["id"] in ids(body)
    assert "brand-new" in ids(ask(service, factory, a["id"], k=5))
    # an update moves it: now it is b's text
    Ingester(factory, featurizer).ingest_records([{**new, "content": b["content"]}])
    assert "brand-new" not in ids(ask(service, factory, a["id"], k=5))
    assert "brand-new" in ids(ask(service, factory, b["id"], k=5)) or any(
        s["id"] == "brand-new" for s in ask(service, factory, b["id"], k=5)["suppressed"]
    )


def test_deleted_articles_never_appear(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    aid = corpus[12]["id"]
    before = ids(ask(service, factory, aid, k=10))
    delete_article(factory, before[0])
    after = ask(service, factory, aid, k=10)
    assert before[0] not in ids(after) and ids(after)[:9] == before[1:]
    assert all(s["id"] != before[0] for s in after["suppressed"])
    with pytest.raises(NotFound):
        ask(service, factory, before[0])


def test_no_model_is_a_clear_error(settings: Settings, factory: sessionmaker[Session]) -> None:
    service = live_related(settings, factory)
    with pytest.raises(ModelMissing):
        ask(service, factory, "a1")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # suppression is Python
def test_no_list_on_the_whole_real_corpus_holds_two_copies_of_one_article(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    """Every article of JavaGuide asks for its list: no two articles of a list (the query
    included) are what the criterion on their texts calls the same article, at any distance
    (``bench.related_quality``'s near-duplicate pairs; the real corpus has paywall stubs and
    pages that contain much of another)."""
    records = javaguide_records(data_dir, 10_000)
    service = loaded_service(settings, factory, featurizer, records)
    criterion = NearDupCriterion.from_settings(settings)
    texts = {r["id"]: featurizer.compared(r["title"], r["content"]) for r in records}
    shown = 0
    with factory() as session:
        for r in records:
            listed = [r["id"], *ids(service.related(r["id"], session=session, k=10))]
            shown += len(listed) - 1
            for i, a in enumerate(listed):
                for b in listed[i + 1 :]:
                    d = criterion.decide(0, 0, texts[a], texts[b])
                    assert not d.duplicate, (a, b, d)
    assert len(records) > 400 and shown > 9 * len(records)


# Stories of the demo corpus whose copies clustering leaves apart (leader clustering joins an
# article only through its cluster's canonical): found by ``bench.list_duplicates``.
_STORIES = ("雅好", "石家庄奥迪", "殉职")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # suppression is Python
def test_copies_that_clustering_leaves_apart_are_not_shown_twice(
    settings: Settings, engine: Engine, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    """Real news: the copies of three stories among 400 other articles. With the text check
    off, some related list shows two copies of one story, and some reader who read one copy is
    offered another in the feed (the defect); as shipped, no list and no feed does, and each
    cut names the text rule that matched. The texts a list compares are read in one query."""
    records = list(inews_records())
    stories = [r for r in records if any(s in r["title"] for s in _STORIES)]
    corpus = stories + [r for r in records[:1500:3] if r not in stories][:400]
    service = loaded_service(settings, factory, featurizer, corpus)
    unchecked = live_related(settings, factory)
    unchecked.criterion = DuplicateCriterion(unchecked.criterion.judge, None)
    feeds = ReaderFeeds(settings, service.index)
    unchecked_feeds = ReaderFeeds(settings, service.index)
    unchecked_feeds.criterion = unchecked.criterion
    criterion = NearDupCriterion.from_settings(settings)
    texts = {r["id"]: featurizer.compared(r["title"], r["content"]) for r in corpus}

    def copies(body: dict[str, Any], query: str) -> list[tuple[str, str]]:
        listed = [query, *ids(body)]
        return [
            (a, b)
            for i, a in enumerate(listed)
            for b in listed[i + 1 :]
            if criterion.decide(0, 0, texts[a], texts[b]).duplicate
        ]

    reads: list[str] = []  # statements that read articles' texts
    event.listen(
        engine,
        "before_cursor_execute",
        lambda _c, _k, statement, *_: reads.append(statement) if "content" in statement else 0,
    )
    before, after, rules, text_reads = [], [], set(), []
    feeds_before, feeds_after, feed_rules = [], [], set()
    for r in stories:
        with factory.begin() as session:  # a reader who has read this copy only
            feeds.record_reads(f"reader-{r['id']}", [r["id"]], session=session)
        with factory() as session:
            before += copies(unchecked.related(r["id"], session=session, k=10), r["id"])
            reads.clear()
            body = service.related(r["id"], session=session, k=10)
            text_reads.append(len(reads))
            after += copies(body, r["id"])
            rules |= {s["rule"] for s in body["suppressed"]}
            reader = f"reader-{r['id']}"
            feeds_before += copies(unchecked_feeds.feed(reader, session=session, k=10), r["id"])
            feed = feeds.feed(reader, session=session, k=10)
            feeds_after += copies(feed, r["id"])
            feed_rules |= {s["rule"] for s in feed["suppressed"]}
    assert len(stories) >= 6 and before and feeds_before, "the corpus no longer shows the defect"
    assert after == [] and feeds_after == []
    assert set(text_reads) == {0, 1}  # one query for the texts a list compares, when any
    assert rules & {"resemblance", "containment"} and feed_rules & {"resemblance", "containment"}


def test_cluster_members_are_suppressed_whatever_their_distance(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    aid = corpus[40]["id"]
    shown = ids(ask(service, factory, aid, k=6))
    with factory() as session:
        internal = {
            r["id"]: get_article(session=session, external_id=r["id"]).id  # type: ignore[union-attr]
            for r in corpus
        }
    # clustering put the query with shown[0], and shown[1] with shown[2]
    # (a canonical article has no row of its own: its members point at it)
    clusters = [(internal[shown[0]], internal[aid]), (internal[shown[2]], internal[shown[1]])]
    with factory() as session, session.begin():  # as a writer does: the members get a seq
        state = begin_write(session=session)
        session.execute(
            insert(ClusterMember),
            [
                {
                    "article_id": a,
                    "canonical_id": c,
                    "distance": 9,
                    "model_version": state.active_model_version,
                }
                for a, c in clusters
            ],
        )
        mark_changed(session=session, article_ids=[a for a, _ in clusters], seq=state.seq)
    body = ask(service, factory, aid, k=6)
    assert shown[0] not in ids(body) and shown[2] not in ids(body) and shown[1] in ids(body)
    reasons = {s["id"]: s["duplicate_of"] for s in body["suppressed"]}
    assert reasons[shown[0]] == aid and reasons[shown[2]] == shown[1]
    # rows written without a rule (as before rules were kept): the cluster is the reason
    for s in body["suppressed"]:
        if s["id"] in (shown[0], shown[2]):
            assert (s["rule"], s["score"], s["via"]) == ("cluster", None, None)
    with factory() as session, session.begin():
        state = begin_write(session=session)
        session.execute(delete(ClusterMember))
        mark_changed(session=session, article_ids=[a for a, _ in clusters], seq=state.seq)


def test_a_reindex_switches_the_index_to_the_new_model(
    settings: Settings,
    service: RelatedArticles,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> None:
    aid = corpus[3]["id"]
    before = ask(service, factory, aid, k=10, min_score=0)
    Ingester(factory, featurizer).ingest_records([record(900 + i) for i in range(5)])
    reindex(factory=factory, featurizer=featurizer)
    after = ask(service, factory, aid, k=10, min_score=0)
    with factory() as session:
        version = read_state(session=session).active_model_version
    assert service.index.stats()["version"] == version
    fresh = live_related(settings, factory)
    assert ask(fresh, factory, aid, k=10, min_score=0) == after
    assert len(set(ids(after)) & set(ids(before))) >= 7  # five short articles change little


def test_query_vector_comes_from_sql(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    # fingerprints in the body's distances are those stored for the articles
    body = ask(service, factory, corpus[0]["id"], k=3)
    with factory() as session:
        prints = {r.article_id: r.fingerprint for r in session.query(ArticleFeatures).all()}
        ext = {
            r["id"]: get_article(session=session, external_id=r["id"]).id  # type: ignore[union-attr]
            for r in corpus
        }
    for s in body["suppressed"]:
        assert s["distance"] == hamming(prints[ext[s["id"]]], prints[ext[s["duplicate_of"]]])
