"""Near-duplicate clusters in SQL: found at ingest, right after deletes and updates, no chaining,
independent of ingest order, and equal to a full recluster."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli.context import CliContext
from recengine.cli.main import main
from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion, Verdict
from recengine.features.tfidf import SparseVector
from recengine.pipeline.clusters.leader_rule import Edge, assign, rank_key
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.duplicates import duplicates_of
from recengine.storage.db import make_engine, make_session_factory, transaction
from recengine.storage.models import ClusterMember
from recengine.storage.state import begin_write
from recengine.text.neardup.compare import Compared
from recengine.text.words.tokenize import Tokenizer
from tests.conftest import make_settings
from tests.neardup_helpers import check_invariants, clusters, corpus
from tests.templates import migrate_cloned


def _bases_then_reposts(
    factory: sessionmaker[Session], featurizer: Featurizer, bases: list, reposts: list
) -> Ingester:
    """Bases, a reindex (the first model), then the reposts ingested incrementally."""
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases)
    reindex(factory=factory, featurizer=featurizer)
    ingester.ingest_records(reposts)
    return ingester


def test_reposts_join_their_original_at_ingest(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings, data_dir: Path
) -> None:
    bases, reposts = corpus(data_dir, 40, 8)
    _bases_then_reposts(factory, featurizer, bases, reposts)
    found = clusters(factory)
    for r in reposts:
        assert found[r["id"]][0] == r["id"].split("-", 1)[1]
    check_invariants(factory, NearDupCriterion.from_settings(settings))
    with factory() as session:
        dup = duplicates_of(
            session=session,
            external_id=bases[0]["id"],
            criterion=NearDupCriterion.from_settings(settings),
            compared=featurizer.compared,
        )
    assert dup.canonical == bases[0]["id"]
    assert reposts[0]["id"] in {d.id for d in dup.duplicates}
    assert all(d.resemblance >= 0.5 and d.shared_terms for d in dup.duplicates)


def test_incremental_clusters_equal_a_full_recluster(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    bases, reposts = corpus(data_dir, 30, 10)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases[:20])
    reindex(factory=factory, featurizer=featurizer)
    for batch in (reposts[5:], bases[20:], reposts[:5]):
        ingester.ingest_records(batch)
    # a repost published before its original takes over as canonical
    ingester.ingest_records([{**bases[1], "published_at": "2025-01-01T00:00:00+00:00"}])
    incremental = clusters(factory)
    with transaction(factory) as session:
        begin_write(session=session)
        ingester.dedup.recluster(session)
    assert clusters(factory) == incremental
    assert incremental[bases[1]["id"]][0] == reposts[1]["id"]


def test_deletes_and_updates_keep_clusters_right(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings, data_dir: Path
) -> None:
    bases, reposts = corpus(data_dir, 20, 3)
    second = {**reposts[0], "id": "second-repost", "published_at": "2024-06-01T00:00:00+00:00"}
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases)
    reindex(factory=factory, featurizer=featurizer)
    ingester.ingest_records([*reposts, second])
    head = bases[0]["id"]
    assert clusters(factory)[second["id"]][0] == head
    ingester.delete([head])  # the canonical goes: the earliest repost takes over
    assert clusters(factory)[second["id"]][0] == reposts[0]["id"]
    assert head not in clusters(factory)
    other = {**reposts[1], "content": bases[10]["content"], "title": bases[10]["title"]}
    ingester.ingest_records([other])  # rewritten: it now duplicates another article
    assert clusters(factory)[other["id"]][0] == bases[10]["id"]
    assert bases[1]["id"] not in clusters(factory)
    check_invariants(factory, NearDupCriterion.from_settings(settings))
    with factory() as session:
        canonicals = set(session.scalars(select(ClusterMember.canonical_id)).all())
    assert len(canonicals) == 3


def _ingest_in_order(
    tmp_path: Path, name: str, tokenizer: Tokenizer, seed_records: list, rest: list
) -> dict[str, tuple[str, int]]:
    settings = make_settings(tmp_path / name, f"sqlite:///{tmp_path / name}.db")
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    featurizer = Featurizer(settings, tokenizer)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(seed_records)
    reindex(factory=factory, featurizer=featurizer)
    for i in range(0, len(rest), 3):
        ingester.ingest_records(rest[i : i + 3])
    found = clusters(factory)
    engine.dispose()
    return found


def test_same_corpus_same_clusters_whatever_the_ingest_order(
    tmp_path: Path, tokenizer: Tokenizer, data_dir: Path
) -> None:
    bases, reposts = corpus(data_dir, 30, 10)
    rest = bases[10:] + reposts
    shuffled = list(rest)
    random.Random(4).shuffle(shuffled)
    first = _ingest_in_order(tmp_path, "a", tokenizer, bases[:10], rest)
    second = _ingest_in_order(tmp_path, "b", tokenizer, bases[:10], shuffled)
    assert first == second and len(first) == 10


def test_leader_clustering_never_chains() -> None:
    # a~b and b~c, but not a~c: c must not join a's cluster through b
    ranks = {1: rank_key(1, None), 2: rank_key(2, None), 3: rank_key(3, None)}
    members = assign(ranks, [Edge(1, 2, 3, 0.95), Edge(2, 3, 3, 0.95)])
    assert [(m.article_id, m.canonical_id) for m in members] == [(2, 1)]
    members = assign(ranks, [Edge(1, 2, 3, 0.95), Edge(2, 3, 3, 0.95), Edge(1, 3, 5, 0.91)])
    assert [(m.article_id, m.canonical_id) for m in members] == [(2, 1), (3, 1)]


def test_criterion_needs_both_steps() -> None:
    def vec(terms: dict[str, float]) -> SparseVector:
        import numpy as np

        from recengine.features.hashing import term_hash

        w = np.array(list(terms.values()), dtype=np.float32)
        w /= np.linalg.norm(w)
        h = np.array([term_hash(t) for t in terms], dtype=np.uint64)
        return SparseVector(tuple(terms), h, w)

    c = NearDupCriterion(k=3, min_cosine=0.9, min_resemblance=0.5)
    a = vec({"索引": 3.0, "数据库": 2.0, "查询": 1.0})
    b = vec({"索引": 3.0, "数据库": 2.0, "优化": 0.2})
    assert c.judge(0, a, 0b111, b).duplicate  # vectors only: the cosine decides
    far: Verdict = c.judge(0, a, 0b1111, b)
    assert not far.duplicate and far.distance == 4 and far.score > 0.9
    assert far.shared_terms == ("索引", "数据库") and far.resemblance is None
    assert not c.judge(0, a, 0, vec({"缓存": 1.0})).duplicate
    c = NearDupCriterion(k=3, min_cosine=0.9, min_resemblance=0.5, min_body_chars=0)
    text = Compared.of_text("数据库索引的设计与查询优化，以及B+树的结构。")
    edited = Compared.of_text("数据库索引的设计与查询优化，以及B+树的结构和页分裂。")
    other = Compared.of_text("数据库索引的设计：哈希索引适合等值查询。")
    with_text = c.judge(0, a, 0b111, b, text, edited)  # texts given: they decide
    assert with_text.duplicate and with_text.score == with_text.resemblance > 0.5
    assert with_text.rule == "resemblance"
    assert not c.judge(0, a, 0b111, b, text, other).duplicate  # same topic, other text
    # texts decide at any distance: the radius only bounds where candidates come from
    assert c.judge(0, a, (1 << 40) - 1, b, text, text).duplicate


def test_duplicates_command_prints_clusters(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings, data_dir: Path
) -> None:
    bases, reposts = corpus(data_dir, 20, 3)
    _bases_then_reposts(factory, featurizer, bases, reposts)
    runner = CliRunner()
    result = runner.invoke(main, ["duplicates", "--format", "jsonl"], obj=CliContext(settings))
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert {c["canonical"] for c in lines} == {b["id"] for b in bases[:3]}
    expected = {b["id"]: [f"repost{i}-{b['id']}"] for i, b in enumerate(bases[:3])}
    for c in lines:
        assert [m["id"] for m in c["members"]] == expected[c["canonical"]]
        assert isinstance(c["members"][0]["distance"], int)
    one = runner.invoke(
        main, ["duplicates", "--id", reposts[0]["id"], "--format", "json"], obj=CliContext(settings)
    )
    assert json.loads(one.output)["canonical"] == bases[0]["id"]
    missing = runner.invoke(main, ["duplicates", "--id", "nope"], obj=CliContext(settings))
    assert missing.exit_code == 2 and "no article" in missing.output

    # text, for people: ids with their titles, the cluster's members indented below
    text = runner.invoke(main, ["duplicates"], obj=CliContext(settings)).output.splitlines()
    first = bases[0]
    title = " ".join(first["title"].split())
    title = title if len(title) <= 60 else title[:60] + "..."
    at = text.index(f"{first['id']}  {title}")
    assert text[at + 1].startswith(f"    repost0-{first['id']}  ") and "distance " in text[at + 1]
    one_text = runner.invoke(
        main, ["duplicates", "--id", reposts[0]["id"]], obj=CliContext(settings)
    )
    assert one_text.output.startswith(f"near-duplicates of {reposts[0]['id']}  ")
    assert f"  {first['id']}  " in one_text.output and "canonical, distance" in one_text.output


def test_pure_cluster_function_equals_the_sql_path(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings, data_dir: Path
) -> None:
    import numpy as np

    from recengine.pipeline.clusters.leader_rule import cluster_corpus
    from recengine.storage.models import Article, ArticleFeatures

    bases, reposts = corpus(data_dir, 20, 4)
    _bases_then_reposts(factory, featurizer, bases, reposts)
    with factory() as session:
        rows = session.execute(
            select(ArticleFeatures.article_id, ArticleFeatures.fingerprint, ArticleFeatures.vector)
        ).all()
        articles = {a.id: a for a in session.scalars(select(Article))}
    dates = {i: a.published_at for i, a in articles.items()}
    names = {i: a.external_id for i, a in articles.items()}
    members = cluster_corpus(
        np.array([r[0] for r in rows], dtype=np.int64),
        np.array([r[1] for r in rows], dtype=np.uint64),
        {r[0]: rank_key(r[0], dates[r[0]]) for r in rows},
        {r[0]: SparseVector.from_bytes(r[2]) for r in rows},
        NearDupCriterion.from_settings(settings),
        {i: featurizer.compared(a.title, a.content) for i, a in articles.items()},
    )
    assert {names[m.article_id]: (names[m.canonical_id], m.distance) for m in members} == (
        clusters(factory)
    )
