"""The live index follows SQL: processes converge, saved files are used or rebuilt, reindexes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from tests.factories import javaguide_records
from tests.recommend.test_related import delete_article, repost
from tests.templates import load


def with_related(settings: Settings, **related: Any) -> Settings:
    return settings.model_copy(update={"related": settings.related.model_copy(update=related)})


def with_index(settings: Settings, **index: Any) -> Settings:
    return settings.model_copy(update={"index": settings.index.model_copy(update=index)})


def answers(index: LiveIndex, factory: sessionmaker[Session], queries: list[str]) -> list[Any]:
    service = RelatedArticles(index.settings, index)
    out = []
    with factory() as session:
        for q in queries:
            out.append(service.related(q, session=session, k=8))
    return out


@pytest.fixture
def records(data_dir: Path) -> list[dict[str, Any]]:
    return javaguide_records(data_dir, 80)


def test_processes_with_different_histories_give_the_same_answers(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    load(factory, featurizer, records[:40])
    # "process" a merges all the time, b never, c only starts at the end (from a's saved file)
    a = LiveIndex(with_related(settings, delta_max_rows=2, max_parts=2), factory, background=False)
    b = LiveIndex(
        with_index(with_related(settings, delta_max_rows=10**6, max_parts=64), persist=False),
        factory,
        background=False,
    )
    queries = [r["id"] for r in records[:40:7]]
    ingester = Ingester(factory, featurizer)
    steps: list[Any] = [
        lambda: ingester.ingest_records(records[40:45]),
        lambda: ingester.ingest_records([{**records[3], "content": records[60]["content"]}]),
        lambda: delete_article(factory, records[10]["id"]),
        lambda: ingester.ingest_records(records[45:70]),
        lambda: ingester.ingest_records([repost(records[0], 1), repost(records[14], 1)]),
        lambda: delete_article(factory, records[44]["id"]),
    ]
    assert answers(a, factory, queries) == answers(b, factory, queries)
    for step in steps:
        step()
        assert answers(a, factory, queries) == answers(b, factory, queries)
    assert len(a.stats()) and b.stats()["segments"] > a.stats()["segments"]
    c = LiveIndex(settings, factory, background=False)
    assert answers(c, factory, queries) == answers(b, factory, queries)


def test_a_damaged_or_missing_file_is_rebuilt_from_sql(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    load(factory, featurizer, records[:30])
    queries = [records[0]["id"], records[9]["id"]]
    expected = answers(LiveIndex(settings, factory, background=False), factory, queries)
    files = sorted((settings.data_dir / "index" / "related").glob("*.idx"))
    assert len(files) == 1
    data = bytearray(files[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    files[0].write_bytes(bytes(data))
    assert answers(LiveIndex(settings, factory, background=False), factory, queries) == expected
    for f in files:
        f.unlink()
    assert answers(LiveIndex(settings, factory, background=False), factory, queries) == expected


def test_servers_keep_answering_during_a_rebuild_and_then_switch(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    load(factory, featurizer, records[:30])
    index = LiveIndex(settings, factory, background=True)
    answers(index, factory, [records[0]["id"]])
    old = index.stats()["version"]
    Ingester(factory, featurizer).ingest_records(records[30:40])
    reindex(factory=factory, featurizer=featurizer)
    answers(index, factory, [records[35]["id"]])  # answered while the new index is built
    index.wait(60)
    after = answers(index, factory, [records[0]["id"], records[35]["id"]])
    assert index.stats()["version"] == old + 1
    fresh = LiveIndex(settings, factory, background=False)
    assert after == answers(fresh, factory, [records[0]["id"], records[35]["id"]])


class FakeClock:
    """``time`` for index.follower with a ``monotonic`` the test moves (no sleeps: a loaded
    machine can take longer than any interval between two real calls)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_a_sync_interval_delays_changes_by_at_most_that(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr("recengine.index.follower.time", clock)
    load(factory, featurizer, records[:20])
    index = LiveIndex(with_index(settings, sync_interval_s=0.5), factory, background=False)
    first = answers(index, factory, [records[0]["id"]])
    Ingester(factory, featurizer).ingest_records([repost(records[0], 1)])
    clock.now += 0.4
    assert answers(index, factory, [records[0]["id"]]) == first  # within the interval: stale
    clock.now += 0.2
    assert answers(index, factory, [records[0]["id"]]) != first


def test_one_answer_reads_the_state_row_once_for_both_indexes(
    settings: Settings,
    engine: Engine,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    load(factory, featurizer, records[:20])
    index = LiveIndex(settings, factory, background=False)
    answers(index, factory, [records[0]["id"]])  # opened
    reads: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM engine_state" in statement:
            reads.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    with factory() as session:
        snap = index.current(session=session)
    assert len(reads) == 1 and snap.dense is not None
    Ingester(factory, featurizer).ingest_records([repost(records[0], 1)])
    reads.clear()
    with factory() as session:
        snap = index.current(session=session)
    # both indexes caught up with the write from that one check
    assert len(reads) == 1 and index.dense.held is not None
    assert index.follower.held is not None
    assert index.dense.held.seq == index.follower.held.seq == snap.seq


def test_compaction_is_weighed_once_per_index_not_per_read(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every read syncs; the compaction check (a count of live rows, ~0.4 ms at 1M) runs only
    when the index a follower holds is a new one."""
    load(factory, featurizer, records[:20])
    index = LiveIndex(settings, factory, background=False)
    answers(index, factory, [records[0]["id"]])
    asked: list[str] = []
    for follower in (index.follower, index.dense):
        kind = type(follower.kind)
        real = kind.compaction_due

        def counted(self: Any, held: Any, real: Any = real, name: str = kind.__name__) -> bool:
            asked.append(name)
            return bool(real(self, held))

        monkeypatch.setattr(kind, "compaction_due", counted)
    answers(index, factory, [records[0]["id"], records[1]["id"], records[2]["id"]])
    assert asked == []
    Ingester(factory, featurizer).ingest_records([repost(records[0], 1)])
    first = answers(index, factory, [records[0]["id"]])
    assert sorted(asked) == sorted(
        {type(index.follower.kind).__name__, type(index.dense.kind).__name__}
    )
    asked.clear()
    assert answers(index, factory, [records[0]["id"]]) == first and asked == []
