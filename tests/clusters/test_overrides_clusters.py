"""Editors' cluster overrides (``not_duplicate``, ``same_article``, ``canonical``) honoured by
ingest, by incremental and full reindex and by a second process, on SQLite and PostgreSQL, on
real JavaGuide text; the constrained leader clustering against the plain one."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.clusters.constraints import ClusterRules, constrained_assign
from recengine.pipeline.clusters.leader_rule import Edge, assign
from recengine.pipeline.clusters.verify import PairJudge
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.spark.job import spark_reindex
from recengine.recommend.overrides import Overrides
from recengine.storage.db import transaction
from recengine.storage.models import Article, ClusterMember
from recengine.storage.rows.articles import ids_changed_between
from recengine.storage.rows.index_source import internal_ids
from recengine.storage.state import begin_write, read_state
from tests.clusters.test_leader_pass import weather
from tests.neardup_helpers import clusters, corpus, repost
from tests.overrides_helpers import add, listing, remove
from tests.templates import load


def _random_graph(rng: random.Random, n: int) -> tuple[dict[int, Any], list[Edge]]:
    ranks = {i: (0, float(rng.randrange(1_000)), i) for i in range(n)}
    edges = [
        Edge(a, b, rng.randrange(4), rng.random())
        for a in range(n)
        for b in range(a + 1, n)
        if rng.random() < 0.08
    ]
    return ranks, edges


def test_without_overrides_the_constrained_rule_is_the_plain_rule() -> None:
    rng = random.Random(16)
    for _ in range(200):
        ranks, edges = _random_graph(rng, rng.randrange(2, 40))
        assert constrained_assign(ranks, edges, ClusterRules()) == assign(ranks, edges)


def test_constraints_hold_on_random_graphs() -> None:
    """Every must-link pair shares a canonical, no cannot-link pair does (unless must-links
    join it: a contradiction the write side refuses), a clustered pinned article is its
    cluster's canonical unless an earlier-ranked pinned one is."""
    rng = random.Random(17)
    for _ in range(200):
        n = rng.randrange(3, 40)
        ranks, edges = _random_graph(rng, n)
        pairs = [tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randrange(6))]
        apart = frozenset(p for p in pairs[::2])
        together = tuple(Edge(a, b, 9, 0.1) for a, b in pairs[1::2] if (a, b) not in apart)
        leaders = frozenset(rng.sample(range(n), 2))
        rules = ClusterRules(apart=apart, together=together, leaders=leaders)
        rows = constrained_assign(ranks, edges, rules, lambda a, b: (7, 0.0))
        head = {m.article_id: m.canonical_id for m in rows}
        canonical = head.get  # canonical(x, x): a canonical or a singleton has no row

        for e in together:
            assert canonical(e.a, e.a) == canonical(e.b, e.b)
        for a, b in apart:
            if b not in _joined(together, a):  # else a contradiction: same_article wins
                assert canonical(a, a) != canonical(b, b)
        for x in leaders:
            if x in head:  # a member: no other pinned article may rank earlier in its cluster
                mates = [y for y in ranks if canonical(y, y) == head[x]]
                assert head[x] in leaders and ranks[head[x]] < ranks[x]
                assert all(y not in leaders or ranks[y] >= ranks[head[x]] for y in mates)


def heads(found: dict[str, tuple[str, int]]) -> dict[str, str]:
    """member -> canonical, without the distances (a new model's fingerprints differ)."""
    return {member: canonical for member, (canonical, _) in found.items()}


def _joined(together: tuple[Edge, ...], start: int) -> set[int]:
    """The articles ``together`` pairs join to ``start`` (itself included)."""
    group, grew = {start}, True
    while grew:
        grew = False
        for e in together:
            if (e.a in group) != (e.b in group):
                group |= {e.a, e.b}
                grew = True
    return group


def _overrides(ingester: Ingester, factory: sessionmaker[Session]) -> Overrides:
    return Overrides(factory, ingester.dedup)


def _full_recluster(factory: sessionmaker[Session], ingester: Ingester) -> dict[str, Any]:
    with transaction(factory) as session:
        begin_write(session=session)
        ingester.dedup.recluster(session)
    return clusters(factory)


@pytest.fixture
def loaded(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]]:
    bases, reposts = corpus(data_dir, 24, 6)
    load(factory, featurizer, bases + reposts[:4])
    return Ingester(factory, featurizer), bases, reposts


def test_each_cluster_override_through_ingest_and_reindex(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    loaded: tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ingester, bases, reposts = loaded
    found = clusters(factory)
    assert found[reposts[0]["id"]][0] == bases[0]["id"]  # the criterion accepts the pair
    assert bases[7]["id"] not in found and bases[8]["id"] not in found  # and rejects this one
    editors = _overrides(ingester, factory)
    add(factory, "not_duplicate", bases[0]["id"], reposts[0]["id"], overrides=editors)
    add(factory, "same_article", bases[7]["id"], bases[8]["id"], overrides=editors)
    add(factory, "canonical", reposts[2]["id"], overrides=editors)
    add(factory, "not_duplicate", reposts[3]["id"], overrides=editors)  # against all

    def check(found: dict[str, Any]) -> None:
        assert reposts[0]["id"] not in found
        assert found[bases[8]["id"]][0] == bases[7]["id"]  # earlier-published one leads
        assert found[bases[2]["id"]][0] == reposts[2]["id"]
        assert reposts[2]["id"] not in found
        assert reposts[3]["id"] not in found and bases[3]["id"] not in found
        assert found[reposts[1]["id"]][0] == bases[1]["id"]  # untouched clusters stay

    check(clusters(factory))  # in force from the commit
    # ingest: another repost of bases[0] and of bases[3], and new ones; the overrides hold
    more = [repost(bases[0], 90, 20), repost(bases[3], 91, 21), *reposts[4:]]
    ingester.ingest_records(more)
    check(clusters(factory))
    assert clusters(factory)[more[0]["id"]][0] == bases[0]["id"]
    assert clusters(factory)[more[1]["id"]][0] == bases[3]["id"]
    incremental = clusters(factory)
    assert _full_recluster(factory, ingester) == incremental  # incremental == full
    reindex(factory=factory, featurizer=featurizer)  # a new model version, clusters rebuilt
    assert heads(clusters(factory)) == heads(incremental)  # (its fingerprints differ a little)
    # removing them brings back what the criterion says
    for row in listing(factory):
        if row["kind"] != "pin":
            remove(factory, row["id"], overrides=editors)
    after = clusters(factory)
    assert after[reposts[0]["id"]][0] == bases[0]["id"]
    assert bases[8]["id"] not in after and reposts[2]["id"] in after
    assert after[reposts[3]["id"]][0] == bases[3]["id"]
    assert _full_recluster(factory, ingester) == after


def test_not_duplicate_never_chains_through_a_third_article(
    factory: sessionmaker[Session],
    loaded: tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """Kept apart by an editor, two reposts of one article never end up side by side under
    it: the later one is a canonical of its own."""
    ingester, bases, _ = loaded
    twin = {**bases[5], "id": "twin-of-5", "published_at": "2024-06-01T00:00:00+00:00"}
    ingester.ingest_records([twin])
    assert clusters(factory)[twin["id"]][0] == bases[5]["id"]
    editors = _overrides(ingester, factory)
    add(factory, "same_article", bases[5]["id"], bases[9]["id"], overrides=editors)
    add(factory, "not_duplicate", bases[9]["id"], twin["id"], overrides=editors)
    found = clusters(factory)
    assert found[bases[9]["id"]][0] == bases[5]["id"]
    assert twin["id"] not in found
    assert _full_recluster(factory, ingester) == found


def test_override_of_a_deleted_article_is_kept_reported_and_back_when_restored(
    factory: sessionmaker[Session],
    loaded: tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ingester, bases, _ = loaded
    editors = _overrides(ingester, factory)
    add(factory, "same_article", bases[10]["id"], bases[11]["id"], overrides=editors)
    assert clusters(factory)[bases[11]["id"]][0] == bases[10]["id"]
    ingester.delete([bases[10]["id"]])
    (row,) = listing(factory, kinds=["same_article"])
    assert row["active"] is False and row["deleted"] == [bases[10]["id"]]
    assert bases[11]["id"] not in clusters(factory)
    assert _full_recluster(factory, ingester) == clusters(factory)
    ingester.ingest_records([bases[10]])  # stored again: the override is in force again
    assert clusters(factory)[bases[11]["id"]][0] == bases[10]["id"]
    (row,) = listing(factory, kinds=["same_article"])
    assert row["active"] is True


def test_an_override_marks_its_articles_changed_for_a_reindex_running_meanwhile(
    factory: sessionmaker[Session],
    loaded: tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ingester, bases, _ = loaded
    with factory() as session:
        before = read_state(session=session).seq
        ids = internal_ids(session=session, external_ids=[bases[12]["id"], bases[13]["id"]])
    added = add(
        factory,
        "same_article",
        bases[12]["id"],
        bases[13]["id"],
        overrides=_overrides(ingester, factory),
    )
    with factory() as session:
        after = read_state(session=session).seq
        assert set(ids_changed_between(session=session, after_seq=before, upto_seq=after)) == set(
            ids.values()
        )
    remove(factory, added["override"]["id"], overrides=_overrides(ingester, factory))
    with factory() as session:
        again = read_state(session=session).seq
        assert set(ids_changed_between(session=session, after_seq=after, upto_seq=again)) == set(
            ids.values()
        )


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_spark_and_local_engines_honour_the_same_overrides(
    spark: Any,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    loaded: tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    ingester, bases, reposts = loaded
    editors = _overrides(ingester, factory)
    add(factory, "not_duplicate", bases[0]["id"], reposts[0]["id"], overrides=editors)
    add(factory, "same_article", bases[7]["id"], bases[8]["id"], overrides=editors)
    add(factory, "canonical", reposts[2]["id"], overrides=editors)
    add(factory, "not_duplicate", reposts[3]["id"], overrides=editors)
    reindex(factory=factory, featurizer=featurizer)
    local = clusters(factory)
    assert reposts[0]["id"] not in local and local[bases[8]["id"]][0] == bases[7]["id"]
    assert local[bases[2]["id"]][0] == reposts[2]["id"] and reposts[3]["id"] not in local
    spark_reindex(
        spark=spark, factory=factory, featurizer=featurizer, url=settings.resolved_database_url
    )
    assert clusters(factory) == local  # the same rows, distances included (same model)


def _rules(factory: sessionmaker[Session]) -> dict[str, str | None]:
    """member external id -> the stored rule that joined it."""
    with factory() as session:
        names = {r[0]: r[1] for r in session.execute(select(Article.id, Article.external_id))}
        return {names[r.article_id]: r.rule for r in session.scalars(select(ClusterMember))}


def test_a_repost_arriving_later_follows_the_editors_cluster(
    factory: sessionmaker[Session],
    loaded: tuple[Ingester, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """The bounded incremental path alone would leave a repost of the later article of a
    same_article pair on its own (its candidate is a member, not a canonical); under the
    override it joins the pair's cluster, as a full recluster says, and the rows an editor
    made say so in their rule."""
    ingester, bases, _ = loaded
    editors = _overrides(ingester, factory)
    add(factory, "same_article", bases[14]["id"], bases[15]["id"], overrides=editors)
    assert _rules(factory)[bases[15]["id"]] == "editor"
    copy = repost(bases[15], 93, 23)
    ingester.ingest_records([copy])
    found = clusters(factory)
    assert found[bases[15]["id"]][0] == bases[14]["id"]
    assert found[copy["id"]][0] == bases[14]["id"]
    assert _rules(factory)[copy["id"]] == "editor"  # no verified edge to the canonical
    assert _full_recluster(factory, ingester) == found
    # a repost of an article no override names still takes the bounded path's answer
    plain = repost(bases[16], 94, 24)
    ingester.ingest_records([plain])
    assert clusters(factory)[plain["id"]][0] == bases[16]["id"]
    assert _rules(factory)[plain["id"]] not in (None, "editor")


def _rows(factory: sessionmaker[Session]) -> dict[str, tuple[str, int, str | None]]:
    """member external id -> (canonical external id, distance, rule): every stored figure."""
    with factory() as session:
        names = {r[0]: r[1] for r in session.execute(select(Article.id, Article.external_id))}
        return {
            names[r.article_id]: (names[r.canonical_id], r.distance, r.rule)
            for r in session.scalars(select(ClusterMember))
        }


def test_a_templated_cluster_an_editor_touched_costs_a_few_verifications_per_write(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Templated pages (each a near-duplicate of the others), the canonical of their cluster
    pinned to a later page, one page not_duplicate against all and one pair kept apart: one
    more page verifies a few pairs (the component of every pair verified was ~1,800), and the
    rows equal a full recluster's, figures and rules included."""
    bases, _ = corpus(data_dir, 6, 0)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases + weather(60, 0))
    reindex(factory=factory, featurizer=featurizer)
    before = clusters(factory)
    pinned = next(name for name, (head, _) in before.items() if name.startswith("weather-"))
    head = before[pinned][0]
    size = 1 + sum(1 for h, _ in before.values() if h == head)
    calls = []
    decision = PairJudge.decision

    def counted(self: PairJudge, a: int, b: int, loaded: Any) -> Any:
        calls.append((a, b))
        return decision(self, a, b, loaded)

    monkeypatch.setattr(PairJudge, "decision", counted)
    editors = _overrides(ingester, factory)
    add(factory, "canonical", pinned, overrides=editors)
    assert len(calls) <= 3 * size  # every row re-pointed once (the component: size^2 / 2)
    lone = next(n for n, (h, _) in before.items() if h == head and n != pinned)
    calls.clear()
    add(factory, "not_duplicate", lone, overrides=editors)
    assert len(calls) <= 8
    found = clusters(factory)
    assert pinned not in found and found[head][0] == pinned and lone not in found
    assert _full_recluster(factory, ingester) == found
    calls.clear()
    page = weather(1, 60)[0]
    ingester.ingest_records([page])
    assert len(calls) <= 8
    after = _rows(factory)
    assert page["id"] in after and after[head][0] == pinned and lone not in after
    _full_recluster(factory, ingester)
    assert _rows(factory) == after
