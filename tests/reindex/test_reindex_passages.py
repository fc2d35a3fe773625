"""A full reindex makes the new version's passage index of the passage hashes its workers
computed beside the tokens (the spool), not from SQL: on real text it equals the index built
from SQL, with articles written, edited and deleted during the reindex too, and no text is
cleaned again for it; a seed that does not fit SQL is rebuilt, never trusted."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy.orm import Session, sessionmaker

import recengine.derived.passages as derived_passages
import recengine.features.neardup as neardup
import recengine.pipeline.clusters.leader_pass as rank_blocks
import recengine.pipeline.clusters.verify as judging
import recengine.pipeline.featurize as featurize
import recengine.pipeline.reindex.full as reindex_module
from recengine.config import Settings
from recengine.derived.passages import passage_follower, passage_kind
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.index.follower import Follower
from recengine.index.neardup.passages import PassageIndex
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer, compared_of
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool, Item
from recengine.storage.rows.index_rows import index_rows
from recengine.text.neardup.compare import Compared, article_passages
from tests.factories import csl_records, javaguide_records
from tests.index.test_passage_candidates import partial_copies
from tests.neardup_helpers import clusters
from tests.recommend.test_related import delete_article


def real_corpus(data_dir: Path) -> list[dict[str, Any]]:
    """Long real articles, excerpts and digests of some (they share passages), short abstracts."""
    bases = javaguide_records(data_dir, 24)
    return bases + partial_copies(bases[:8]) + csl_records(data_dir, 40)


def from_sql(settings: Settings, factory: sessionmaker[Session]) -> PassageIndex:
    """The active version's passage index built from SQL (a follower without files)."""
    follower = Follower(passage_kind(settings), None)
    with index_rows(factory) as rows:
        held = follower.sync(rows)
    assert held is not None and follower.stats.rebuilds == 1
    return held.index


def published(settings: Settings, factory: sessionmaker[Session]) -> PassageIndex:
    """The passage index file the reindex published, as a server loads it."""
    follower = passage_follower(settings)
    with index_rows(factory) as rows:
        held = follower.sync(rows)
    assert held is not None and follower.stats.loads == 1 and follower.stats.rebuilds == 0
    return held.index


def assert_same(a: PassageIndex, b: PassageIndex) -> None:
    for x, y in zip(a.arrays(), b.arrays(), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    pa, pb = a.pairs(), b.pairs()
    assert np.array_equal(pa.a, pb.a) and np.array_equal(pa.b, pb.b)


@pytest.fixture
def cleaned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts the passage kind computes passages of from SQL rows (the real
    function runs; only its calls are counted)."""
    calls = [0]

    def counted(title: str, content: str, strip: bool = True) -> Any:
        calls[0] += 1
        return article_passages(title, content, strip)

    monkeypatch.setattr(derived_passages, "article_passages", counted)
    return calls


def test_reindex_passage_index_equals_the_one_built_from_sql(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    cleaned: list[int],
) -> None:
    records = real_corpus(data_dir)
    Ingester(factory, featurizer).ingest_records(records)
    cleaned[0] = 0
    reindex(factory=factory, featurizer=featurizer, batch_size=16)
    assert cleaned[0] == 0  # the switch read and cleaned no text for the passage index
    reindexed = published(settings, factory)
    rebuilt = from_sql(settings, factory)
    assert cleaned[0] == len(records)  # every article has terms: the build cleaned each
    assert len(reindexed) == len(records) and len(reindexed.pairs().a) > 0
    assert_same(reindexed, rebuilt)


class Writer:
    """Progress that writes between the reindex's batches: edits the text of an article
    already spooled, adds one, deletes one (each once, at the given updates)."""

    def __init__(self, at: dict[int, Callable[[], None]]) -> None:
        self.at, self.updates = at, 0

    def start(self, phase: str, total: int | None, done: int = 0) -> None:
        pass

    def update(self, n: int) -> None:
        self.updates += 1
        if (write := self.at.pop(self.updates, None)) is not None:
            write()


def test_changes_during_the_reindex_are_in_its_passage_index(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    cleaned: list[int],
) -> None:
    records = real_corpus(data_dir)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(records)
    donor = javaguide_records(data_dir, 30)[-1]
    first, second, third = records[0], records[30], records[3]
    writes: dict[int, Callable[[], None]] = {
        1: lambda: ingester.ingest_records([{**first, "content": donor["content"]}]),
        2: lambda: ingester.ingest_records([{**donor, "id": "new-during-reindex"}]),
        3: lambda: delete_article(factory, third["id"]),
        8: lambda: ingester.ingest_records([{**second, "content": first["content"]}]),
    }
    writer = Writer(writes)
    cleaned[0] = 0
    reindex(factory=factory, featurizer=featurizer, batch_size=16, progress=writer)
    assert not writes  # every write happened, during pass 1 and pass 2
    assert cleaned[0] <= 2 * 3  # only the changed articles, by the catch-up and the rounds
    assert_same(published(settings, factory), from_sql(settings, factory))


def test_a_seed_that_does_not_fit_sql_is_rebuilt(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
) -> None:
    Ingester(factory, featurizer).ingest_records(real_corpus(data_dir)[:20])
    reindex(factory=factory, featurizer=featurizer)
    built = from_sql(settings, factory)
    with index_rows(factory) as rows:
        seq, version, database = rows.position()
    assert version is not None
    ids, hashes, counts = built.arrays()
    for seed, fits in ((built, True), (PassageIndex(built.stop_df), False)):
        follower = Follower(passage_kind(settings), None)
        follower.seed(seed, version=version, seq=seq, database=database)
        with index_rows(factory) as rows:
            held = follower.sync(rows)
        assert held is not None
        assert (follower.stats.seeded, follower.stats.rebuilds) == ((1, 0) if fits else (0, 1))
        for x, y in zip(held.index.arrays(), (ids, hashes, counts), strict=True):
            assert np.array_equal(x, y)


def asking_nothing(
    run: Any, pages: Iterator[list[tuple[int, str, str, int]]], asked: deque[Any]
) -> Iterator[tuple[list[Item], bool]]:
    """``reindex._asking`` as when the corpus is past the budget from its first page."""
    for page in pages:
        asked.append(None)
        yield [(i, title, content) for i, title, content, _ in page], False


@pytest.fixture
def compared_from_sql(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The texts a verification computes what it compares of from SQL rows (the real function
    runs; only its calls are recorded)."""
    calls: list[tuple[str, str]] = []

    def recorded(title: str, content: str, strip: bool = True) -> Compared:
        calls.append((title, content))
        return compared_of(title, content, strip)

    monkeypatch.setattr(judging, "compared_of", recorded)
    return calls


def test_the_word_points_of_the_analysis_give_what_is_compared(
    settings: Settings, data_dir: Path
) -> None:
    """What a verification takes from an ingest's analysis is what it would compute from the
    stored text: on real long articles, excerpts and abstracts, equal arrays."""
    records = real_corpus(data_dir)
    items = [(r["title"], r["content"]) for r in records]
    done = Featurizer(settings).analyze_texts(items)
    for (title, content), points, passages in zip(items, done.points, done.passages, strict=True):
        a, b = points.compared(), compared_of(title, content)
        assert np.array_equal(a.shingles, b.shingles) and np.array_equal(a.title, b.title)
        assert a.body_chars == b.body_chars and len(a.shingles) > 0
        assert np.array_equal(passages, article_passages(title, content))


@pytest.mark.parametrize("workers", [1, 2])
def test_an_ingest_hands_what_it_computed_to_the_index_and_verification(
    settings: Settings,
    factory: sessionmaker[Session],
    data_dir: Path,
    cleaned: list[int],
    compared_from_sql: list[tuple[str, str]],
    workers: int,
) -> None:
    """With a model, an ingest computes each text's passages and word points beside its tokens
    (in the pool's workers too) and its process's passage index and verifications take them: no
    written text is cleaned again for either (the stored candidates they are compared with are
    read from SQL), the index equals the one built from SQL, and the excerpts and digests of
    stored articles are found as their duplicates; an edited text gets its own."""
    small = settings.model_copy(
        update={"ingest": settings.ingest.model_copy(update={"parallel_min_batch": 8})}
    )
    featurizer = Featurizer(small)
    records = real_corpus(data_dir)
    Ingester(factory, featurizer).ingest_records(records[:20])
    reindex(factory=factory, featurizer=featurizer)
    with AnalysisPool(small, workers=workers, featurizer=featurizer) as pool:
        ingester = Ingester(factory, featurizer, pool=pool)
        cleaned[0] = 0
        compared_from_sql.clear()
        ingester.ingest_records(records[20:])
        found = clusters(factory)
        head = {i: found.get(i, (i,))[0] for i in (r["id"] for r in records)}
        pairs = [(c["id"], c["id"].split("-", 1)[1]) for c in partial_copies(records[:8])]
        assert all(head[c] == head[s] for c, s in pairs), "a copy missed at ingest"
        edited = {**records[0], "content": records[1]["content"] + "\n\n补上的一段。"}
        ingester.ingest_records([edited])
        assert cleaned[0] == 0
        written = {(r["title"], r["content"]) for r in [*records[20:], edited]}
        assert compared_from_sql and not written & set(compared_from_sql)
        with index_rows(factory) as rows:
            held = ingester.dedup.passages.sync(rows)
    assert held is not None and len(held.index) == len(records)
    assert_same(held.index, from_sql(settings, factory))


def test_clusters_are_decided_without_the_vectors_cosine(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every clustering path has both texts, so the texts decide and the vectors' cosine (a
    third of a verification's cost) is never computed, neither by an ingest's verification nor
    by a full reindex's leader pass; the excerpts and digests are still found, and
    the explained verdict (the duplicates API's) still carries the cosine."""
    calls: list[int] = []
    real_cosine = neardup.cosine

    def counted(a: Any, b: Any) -> Any:
        calls.append(1)
        return real_cosine(a, b)

    monkeypatch.setattr(neardup, "cosine", counted)
    records = real_corpus(data_dir)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(records[:20])
    reindex(factory=factory, featurizer=featurizer)
    ingester.ingest_records(records[20:])
    reindex(factory=factory, featurizer=featurizer)
    found = clusters(factory)
    head = {i: found.get(i, (i,))[0] for i in (r["id"] for r in records)}
    pairs = [(c["id"], c["id"].split("-", 1)[1]) for c in partial_copies(records[:8])]
    assert all(head[c] == head[s] for c, s in pairs) and len(pairs) >= 8
    assert calls == []
    a, b = (featurizer.compared(r["title"], r["content"]) for r in records[:2])
    vector = SparseVector(("词",), np.array([7], np.uint64), np.array([1.0], np.float32))
    criterion = NearDupCriterion.from_settings(settings)
    verdict = criterion.judge(0, vector, 0, vector, a, b)
    assert verdict.cosine == pytest.approx(1.0) and calls == [1]
    decision = criterion.decide(0, 0, a, b)
    assert (verdict.duplicate, verdict.score, verdict.rule) == (
        decision.duplicate,
        decision.score,
        decision.rule,
    )


def test_the_leader_pass_compares_on_the_pool_s_workers(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    compared_from_sql: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With two workers, what a full reindex's leader pass compares of the texts it reads from
    SQL is computed on the workers, a block at once (none in the parent), and the clusters are
    those the one-process reindex makes, the excerpts and digests with their sources. The
    parent then never tokenizes: it loads no dictionary. (Pass 1 hands nothing compared on
    here, as when the corpus is past ``reindex.kept_compared_mb``.)"""
    monkeypatch.setattr(reindex_module, "_asking", asking_nothing)
    records = real_corpus(data_dir)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    alone = clusters(factory)
    assert compared_from_sql, "the one-process leader pass compares in the parent"
    compared_from_sql.clear()
    built: list[Any] = []
    monkeypatch.setattr(featurize, "build_tokenizer", lambda s: built.append(s))
    parent = Featurizer(settings)
    with AnalysisPool(settings, workers=2) as pool:
        reindex(factory=factory, featurizer=parent, pool=pool)
    assert compared_from_sql == [] and built == []
    assert clusters(factory) == alone
    copies = [(c["id"], c["id"].split("-", 1)[1]) for c in partial_copies(records[:8])]
    head = {i: alone.get(i, (i,))[0] for i in (r["id"] for r in records)}
    assert all(head[c] == head[s] for c, s in copies)


@pytest.mark.parametrize("budget", [256, 0])
def test_the_leader_pass_compares_each_text_once_across_blocks(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    compared_from_sql: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    budget: int,
) -> None:
    """Blocks of 8 articles: the dated copies lead (rank order), their sources come in the
    next blocks and reposts of the sources at the very end, so a copy is met again by a block
    far from the last one that needed it. What was compared of a text in one block serves
    every later block that meets it again, so each text is read and compared once; with no
    budget for that they are computed again; either way the clusters are those of one block
    for everything. (Pass 1 hands nothing compared on here, as when the corpus is past the
    budget.)"""
    monkeypatch.setattr(reindex_module, "_asking", asking_nothing)
    records = real_corpus(data_dir)
    reposts = [
        {**r, "id": f"repost-{r['id']}", "content": "转载自某网站。\n\n" + r["content"]}
        for r in records[:8]
    ]
    Ingester(factory, featurizer).ingest_records(records + reposts)
    reindex(factory=factory, featurizer=featurizer)
    whole = clusters(factory)
    monkeypatch.setattr(rank_blocks, "BLOCK", 8)
    kept = settings.model_copy(
        update={"reindex": settings.reindex.model_copy(update={"kept_compared_mb": budget})}
    )
    compared_from_sql.clear()
    reindex(factory=factory, featurizer=featurizer, dedup=Deduplicator(kept))
    assert clusters(factory) == whole
    repeated = len(compared_from_sql) - len(set(compared_from_sql))
    assert len(compared_from_sql) > 8
    assert repeated == 0 if budget else repeated > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_pass_1_hands_what_is_compared_to_the_leader_pass(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    compared_from_sql: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    workers: int,
) -> None:
    """What a full reindex's pass 1 cleans for the tokens also gives what the leader pass
    compares: in memory within ``reindex.kept_compared_mb``, spilled to disk past it
    (``pipeline.reindex.spill``). The leader pass then reads and cleans no text again; without the
    spill it does for the texts past the budget. The clusters are the same every way
    (excerpts and digests with their sources), and no spill file outlives its reindex."""
    records = real_corpus(data_dir)
    on_workers: list[tuple[str, str]] = []  # what the leader pass has the pool compare
    compared_many = AnalysisPool.compared_many

    def counted(pool: AnalysisPool, items: Sequence[tuple[str, str]]) -> list[Compared]:
        on_workers.extend(items)
        return compared_many(pool, items)

    monkeypatch.setattr(AnalysisPool, "compared_many", counted)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)  # 256 MB: the whole corpus
    assert compared_from_sql == []
    whole = clusters(factory)
    copies = [(c["id"], c["id"].split("-", 1)[1]) for c in partial_copies(records[:8])]
    head = {i: whole.get(i, (i,))[0] for i in (r["id"] for r in records)}
    assert all(head[c] == head[s] for c, s in copies)
    read_again = {}
    # nothing kept in memory; a part of the first page of 16 long articles; each with the
    # rest spilled and without (one pool for the four: what its workers do is the same)
    with AnalysisPool(settings, workers=workers) as pool:
        for mb, spill in ((0, False), (1, False), (0, True), (1, True)):
            change = {"kept_compared_mb": mb, "spill_compared": spill}
            small = settings.model_copy(
                update={"reindex": settings.reindex.model_copy(update=change)}
            )
            compared_from_sql.clear()
            on_workers.clear()
            reindex(factory=factory, featurizer=Featurizer(small), pool=pool, batch_size=16)
            assert clusters(factory) == whole
            assert list((settings.data_dir / "reindex").glob("compared-*")) == []
            read_again[mb, spill] = len(compared_from_sql) + len(on_workers)
    assert read_again[0, False] > read_again[1, False] > 0
    assert read_again[0, True] == read_again[1, True] == 0
