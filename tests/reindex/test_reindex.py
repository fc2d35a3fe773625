"""Local reindex: idempotent, and nothing written during a reindex is left behind."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import page_size, reindex
from recengine.storage.models import ArticleFeatures, IdfModelRow
from recengine.storage.state import read_state
from tests.factories import javaguide_records, record


def features(factory: sessionmaker[Session]) -> dict[int, tuple[int, bytes]]:
    with factory() as session:
        rows = session.execute(
            select(ArticleFeatures.article_id, ArticleFeatures.fingerprint, ArticleFeatures.vector)
        ).all()
    return {r[0]: (r[1], r[2]) for r in rows}


def test_reindex_twice_gives_the_same_state(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    Ingester(factory, featurizer).ingest_records(javaguide_records(data_dir, 30))
    first = reindex(factory=factory, featurizer=featurizer, batch_size=8)
    state1 = features(factory)
    second = reindex(factory=factory, featurizer=featurizer, batch_size=5)
    assert second.version != first.version
    assert features(factory) == state1
    with factory() as session:
        versions = session.scalars(select(IdfModelRow.version)).all()
        assert versions == [second.version]  # old versions are dropped after the switch
        assert read_state(session=session).active_model_version == second.version
        payload = session.scalar(select(IdfModelRow.payload))
    assert payload is not None and IdfModel.from_bytes(payload).n_docs == 30


def test_articles_written_during_reindex_are_caught_up(
    factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records([record(i) for i in range(10)])
    reindex(factory=factory, featurizer=featurizer)
    written: list[int] = []
    calls = iter(range(3))

    class Writer:
        """Runs between reindex batches: a concurrent writer adds one article, changes another."""

        def start(self, phase: str, total: int | None, done: int = 0) -> None:
            pass

        def update(self, n: int) -> None:
            if (k := next(calls, None)) is not None:
                summary = ingester.ingest_records(
                    [
                        record(100 + k, content=f"<p>并发写入的新文章 {k}</p>"),
                        record(k, title=f"改过的标题 {k}"),
                    ]
                )
                written.extend(summary.changed_ids)

    result = reindex(factory=factory, featurizer=featurizer, batch_size=3, progress=Writer())
    assert result.caught_up >= 3
    state = features(factory)
    with factory() as session:
        active = read_state(session=session).active_model_version
        versions = set(session.scalars(select(ArticleFeatures.model_version)).all())
    assert versions == {active}
    assert set(written) <= set(state)
    assert len(state) == 13


def test_pages_of_pass_1_leave_no_worker_idle_for_long() -> None:
    # One process: the configured batch. Several: at least four pages per worker, so that the
    # last page keeps one worker busy for an eighth of the work at most, not under 64 articles.
    assert page_size(1000, 1, 2419) == 1000
    sizes = {workers: page_size(1000, workers, 2419) for workers in (2, 3)}
    assert sizes == {2: 303, 3: 202}
    assert all(-(-2419 // size) >= 4 * workers for workers, size in sizes.items())
    assert page_size(1000, 2, 1_000_000) == 1000
    assert page_size(1000, 2, 100) == 64 and page_size(10, 2, 100) == 10
