"""What an ingest's verifications read and compute. What a writing process compared of stored
texts is kept from one write to the next (``ingest.kept_compared_mb``,
``pipeline.clusters.verify.KeptTexts``): a bulk ingest whose batches verify against the same
canonicals compares each of them once, and an edited article is compared again, never from what was
kept of its old text (the clusters equal a full recluster). What a batch's decisions need from SQL
is read for the whole batch at once, not per decision (``pipeline.clusters.plan``)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

import recengine.pipeline.clusters.plan as cluster_view
import recengine.pipeline.clusters.verify as judging
from recengine.config import Settings
from recengine.pipeline.clusters.upkeep import ClusterPlan, Deduplicator
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import transaction
from recengine.storage.rows.clusters import live_published
from recengine.storage.rows.index_source import fingerprints_and_seqs
from recengine.storage.state import begin_write, read_state
from recengine.text.neardup.compare import compared
from recengine.text.neardup.kept import KeptTexts
from recengine.text.words.tokenize import Tokenizer
from tests.factories import csl_records, javaguide_records
from tests.neardup_helpers import clusters
from tests.reindex.test_reindex_passages import compared_from_sql  # noqa: F401 (a fixture)

_HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 2_000)]
HEADS = (
    "转载自某网站。\n\n",
    "本文转自技术社区，版权归原作者所有。\n\n",
    "来源：公众号 后端开发\n\n",
)


def reposts_of(sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Three reposts of each source (a header added), in batches of one repost of each source:
    every batch verifies the new articles against the same stored canonicals."""
    return [
        {**s, "id": f"repost{v}-{s['id']}", "content": head + s["content"]}
        for v, head in enumerate(HEADS)
        for s in sources
    ]


def ingest_settings_with(settings: Settings, **ingest: Any) -> Settings:
    return settings.model_copy(update={"ingest": settings.ingest.model_copy(update=ingest)})


def ingester_with(
    settings: Settings, tokenizer: Tokenizer, factory: sessionmaker[Session], mb: int
) -> Ingester:
    """An ingester writing batches of 8 records, keeping ``mb`` MB of compared texts."""
    mine = ingest_settings_with(settings, batch_size=8, kept_compared_mb=mb)
    return Ingester(factory, Featurizer(mine, tokenizer), Deduplicator(mine))


def stored_sources(
    ingester: Ingester, factory: sessionmaker[Session], data_dir: Path
) -> list[dict[str, Any]]:
    """8 long real articles stored beside 30 short ones, the first model fitted on them."""
    sources = javaguide_records(data_dir, 8)
    ingester.ingest_records(sources + csl_records(data_dir, 30))
    reindex(factory=factory, featurizer=ingester.featurizer)
    return sources


def recluster(factory: sessionmaker[Session], ingester: Ingester) -> dict[str, tuple[str, int]]:
    with transaction(factory) as session:
        begin_write(session=session)
        ingester.dedup.recluster(session)
    return clusters(factory)


@pytest.mark.parametrize("mb", [128, 0])
def test_a_bulk_ingest_compares_each_stored_canonical_once(
    settings: Settings,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
    data_dir: Path,
    compared_from_sql: list[tuple[str, str]],  # noqa: F811
    mb: int,
) -> None:
    ingester = ingester_with(settings, tokenizer, factory, mb)
    sources = stored_sources(ingester, factory, data_dir)
    compared_from_sql.clear()
    ingester.ingest_records(reposts_of(sources))  # 3 batches
    heads = {i: c for i, (c, _) in clusters(factory).items()}
    assert len(heads) == 3 * len(sources)
    assert all(heads[f"repost{v}-{s['id']}"] == s["id"] for v in range(3) for s in sources)
    titles = [title for title, _ in compared_from_sql]  # the new ones came with hints
    assert sorted(set(titles)) == sorted(s["title"] for s in sources)
    assert len(titles) == (len(sources) if mb else 3 * len(sources))
    assert recluster(factory, ingester) == clusters(factory)


def test_an_edited_canonical_is_compared_again_not_taken_from_what_was_kept(
    settings: Settings,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
    data_dir: Path,
    compared_from_sql: list[tuple[str, str]],  # noqa: F811
) -> None:
    sources = javaguide_records(data_dir, 10)
    ingester = ingester_with(settings, tokenizer, factory, 128)
    ingester.ingest_records(sources[:8] + csl_records(data_dir, 30))
    reindex(factory=factory, featurizer=ingester.featurizer)
    ingester.ingest_records(reposts_of(sources[:8])[:16])
    kept = ingester.dedup.kept
    assert len(kept) >= 8  # the sources, and the reposts compared as they were written
    # half of its text replaced: still a candidate of its copies (shared passages), no
    # longer their article (resemblance ~1/3, containment ~1/2)
    text, other = sources[0]["content"], sources[9]["content"]
    edited = {**sources[0], "content": text[: len(text) // 2] + other[: len(text) // 2]}
    ingester.ingest_records([edited])
    compared_from_sql.clear()
    ingester.ingest_records(reposts_of(sources[:8])[16:])  # a third repost of each
    incremental = clusters(factory)
    assert all(c != sources[0]["id"] for c, _ in incremental.values())  # its copies left it
    assert recluster(factory, ingester) == incremental
    assert all(content != sources[0]["content"].strip() for _, content in compared_from_sql)


def test_kept_texts_stay_within_their_budget_least_recently_used_out_first() -> None:
    rng = random.Random(3)
    texts = {i: compared("", "".join(rng.choices(_HAN, k=300 * i))) for i in range(1, 6)}
    size = sum(t.shingles.nbytes + t.title.nbytes for t in texts.values())
    kept = KeptTexts(size // 2)
    for i, text in texts.items():
        kept.put(i, 7, text)
        kept.get(1, 7)  # the first stays in use
    assert kept.get(1, 7) is texts[1] and kept.get(1, 8) is None  # another seq: not it
    assert kept.get(2, 7) is None and kept.get(5, 7) is texts[5]
    assert len(KeptTexts(0)) == 0
    nothing = KeptTexts(0)
    nothing.put(1, 1, texts[1])
    assert len(nothing) == 0 and nothing.get(1, 1) is None
    with pytest.raises(ValueError, match="budget"):
        KeptTexts(-1)


def test_a_batch_reads_what_its_decisions_need_at_once(
    settings: Settings,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch of 24 reposts of 8 stored articles, and 40 other new articles: the fingerprints
    and texts of the candidates, and their ranks, come in one read each for the batch (a
    decision each read them before), with the clusters a full recluster makes."""
    ingester = ingester_with(settings, tokenizer, factory, 128)
    sources = stored_sources(ingester, factory, data_dir)
    reads: list[str] = []

    def counted(name: str, fn: Any) -> Any:
        def read(**kwargs: Any) -> Any:
            reads.append(name)
            return fn(**kwargs)

        return read

    monkeypatch.setattr(judging, "fingerprints_and_seqs", counted("fps", fingerprints_and_seqs))
    monkeypatch.setattr(cluster_view, "live_published", counted("ranks", live_published))
    batch = ingest_settings_with(settings, batch_size=64)
    ingester = Ingester(factory, Featurizer(batch, tokenizer), Deduplicator(batch))
    ingester.ingest_records(reposts_of(sources) + csl_records(data_dir, 70)[30:])
    heads = {i: c for i, (c, _) in clusters(factory).items()}
    assert all(heads[f"repost{v}-{s['id']}"] == s["id"] for v in range(3) for s in sources)
    assert reads.count("fps") <= 3 and reads.count("ranks") <= 3, reads
    assert recluster(factory, ingester) == clusters(factory)


def test_what_a_rolled_back_write_compared_of_its_own_texts_is_not_kept(
    settings: Settings,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write's ``seq`` that rolls back is given to the next write, which may store another
    text under it: what the failed write compared of its own (uncommitted) texts must not be
    kept; what it compared of committed texts may be. A committed write keeps its own."""
    ingester = ingester_with(settings, tokenizer, factory, 128)
    sources = stored_sources(ingester, factory, data_dir)
    with transaction(factory) as session:
        committed = read_state(session=session).seq

    def failing(self: ClusterPlan, session: Session) -> int:
        raise RuntimeError("the disk is full")

    with monkeypatch.context() as patch:
        patch.setattr(ClusterPlan, "write", failing)
        with pytest.raises(RuntimeError, match="disk"):
            ingester.ingest_records(reposts_of(sources)[:8])
    kept = ingester.dedup.kept
    assert len(kept) >= 8  # the sources (committed) were kept
    assert all(seq <= committed for _, seq in kept.held())
    ingester.ingest_records(reposts_of(sources)[:8])  # the same seq again, now committed
    assert any(seq > committed for _, seq in kept.held())
    assert recluster(factory, ingester) == clusters(factory)


def test_a_write_transaction_keeps_its_own_texts_only_at_commit() -> None:
    text = compared("", "".join(random.Random(1).choices(_HAN, k=400)))
    kept = KeptTexts(1 << 20)
    written = kept.writing(10)
    written.put(1, 9, text)  # committed before: kept now
    written.put(2, 10, text)  # this write's: held back
    assert kept.get(1, 9) is text and kept.get(2, 10) is None and written.get(2, 10) is None
    written.commit()
    assert kept.get(2, 10) is text
