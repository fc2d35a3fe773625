"""The analysis pool: same results as in-process, bounded memory, no orphan workers."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from recengine.config import Settings, load_settings
from recengine.features.tfidf import fit_idf
from recengine.index.neardup.passages import passage_rows
from recengine.pipeline.featurize import Featurizer, compared_of, text_of
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool, Item, WorkerDied, resolve_workers
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.models import Article, ArticleFeatures
from recengine.text.neardup.compare import article_passages
from tests.factories import javaguide_records
from tests.templates import migrate_cloned


@pytest.fixture(scope="module")
def plain_settings() -> Settings:
    return load_settings()


@pytest.fixture(scope="module")
def items(data_dir: Path) -> list[Item]:
    return [(n, r["title"], r["content"]) for n, r in enumerate(javaguide_records(data_dir, 120))]


def batches(items: list[Item], size: int) -> list[list[Item]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def test_pool_gives_what_one_process_gives(
    plain_settings: Settings, items: list[Item], tmp_path: Path
) -> None:
    serial = AnalysisPool(plain_settings, workers=1)
    expected = [pair for b in serial.analyze_batches(batches(items, 7)) for pair in b]
    with AnalysisPool(plain_settings, workers=2) as pool:
        got = [pair for b in pool.analyze_batches(batches(items, 7)) for pair in b]
        assert got == expected  # same ids, same order, same counts and hashes
        texts = [text_of(t, c) for _, t, c in items]
        assert pool.count_texts(texts).stats() == [s for _, s in expected]
        model = fit_idf(s.counts for _, s in expected)
        stats = batches([(i, s) for i, s in expected], 9)  # type: ignore[arg-type]
        parallel = [r for b in pool.features_batches(stats, model, tmp_path) for r in b]
    local = [r for b in serial.features_batches(stats, model, tmp_path) for r in b]
    assert parallel == local
    assert [i for i, _ in parallel] == [i for i, _, _ in items]
    assert list(tmp_path.iterdir()) == []  # the model file for the workers is removed


def test_spool_records_and_their_features_match_one_process(
    plain_settings: Settings, items: list[Item], tmp_path: Path
) -> None:
    """The reindex path: workers pickle the spool records and count document frequencies;
    features come from the records as stored, skipping what a resumed run already wrote."""
    serial = AnalysisPool(plain_settings, workers=1)
    expected = [pair for b in serial.analyze_batches(batches(items, 7)) for pair in b]
    with AnalysisPool(plain_settings, workers=2) as pool:
        asked = [(b, k % 2 == 0) for k, b in enumerate(batches(items, 7))]  # every other one
        records = list(pool.spool_batches(asked))
        local_records = list(serial.spool_batches(asked))
        assert [(r.n_docs, r.df) for r in records] == [(r.n_docs, r.df) for r in local_records]
        # what is compared of the texts, where asked: what a verification computes from SQL
        for (batch, compare), record in zip(asked, records, strict=True):
            assert (record.compared is not None) == compare
            for (_, t, c), got_text in zip(batch, record.compared or [], strict=compare):
                want_text = compared_of(t, c, plain_settings.features.strip_boilerplate)
                assert np.array_equal(got_text.shingles, want_text.shingles)
                assert np.array_equal(got_text.title, want_text.title)
                assert got_text.body_chars == want_text.body_chars
        spooled = [pickle.loads(r.payload) for r in records]
        assert [p for b in spooled for p in zip(b.ids, b.analyzed.stats(), strict=True)] == expected
        # the passages the workers computed beside the tokens: those a build from SQL computes
        strip = plain_settings.features.strip_boilerplate
        want = passage_rows([article_passages(t, c, strip) for _, t, c in items])
        got = [np.concatenate(part) for part in zip(*(b.passages for b in spooled), strict=True)]
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
        assert int(want[1].min()) > 0
        assert [r.n_docs for r in records] == [len(b) for b in batches(items, 7)]
        df: Counter[str] = Counter()
        for r in records:
            df.update(r.df)
        model = fit_idf(s.counts for _, s in expected)
        assert dict(df) == model.df
        after = items[40][0]  # a resumed pass 2: ids <= after are written already
        payloads = [r.payload for r in records]
        parallel = list(pool.features_of_spool(payloads, model, tmp_path, after))
    local = list(serial.features_of_spool(payloads, model, tmp_path, after))
    assert parallel == local
    assert [n for n, _ in parallel] == [r.n_docs for r in records]
    want = [r for b in serial.features_batches([expected], model, tmp_path) for r in b]
    assert [row for _, rows in parallel for row in rows] == [r for r in want if r[0] > after]


def test_batches_are_pulled_only_as_results_are_consumed(
    plain_settings: Settings, items: list[Item]
) -> None:
    pulled = 0

    def source() -> Iterator[list[Item]]:
        nonlocal pulled
        for batch in batches(items, 4):
            pulled += 1
            yield batch

    with AnalysisPool(plain_settings, workers=2, max_inflight=3) as pool:
        results = pool.analyze_batches(source())
        next(results)
        assert pulled == 3  # max_inflight batches submitted, one of them consumed
        next(results)
        assert pulled == 4
        results.close()


def test_in_process_mode_uses_the_given_featurizer(
    plain_settings: Settings, items: list[Item]
) -> None:
    featurizer = Featurizer(plain_settings)
    pool = AnalysisPool(plain_settings, workers=1, featurizer=featurizer)
    assert not pool.parallel
    assert pool.count_texts(["机器学习 数据库"]).stats()[0].counts == {
        "机器": 1,
        "学习": 1,
        "数据库": 1,
    }
    assert resolve_workers(0) >= 1
    with pytest.raises(ValueError, match="workers"):
        resolve_workers(-1)


CHILD = """
import os, sys, time
from recengine.config import load_settings
from recengine.pipeline.reindex.pool import AnalysisPool
pool = AnalysisPool(load_settings(), workers=2)
pool.count_texts(["数据库 索引"] * 4)
print(os.getpid(), flush=True)
time.sleep(60)
"""


def test_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert child.stdout is not None
        assert int(child.stdout.readline()) == child.pid
        group = os.getpgid(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _group_alive(group):
            time.sleep(0.1)
        assert not _group_alive(group), "pool workers outlived their parent"
    finally:
        if child.poll() is None:
            child.kill()


class _Mark:
    """Writes its file when it is freed: by a worker's interpreter teardown, if it has one."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __del__(self) -> None:
        Path(self.path).write_text("freed at the teardown")


_MARKS: list[_Mark] = []


def _keep_a_mark(path: str) -> int:
    _MARKS.append(_Mark(path))  # held by the module until the process ends
    return os.getpid()


def test_workers_leave_without_the_interpreters_teardown(
    plain_settings: Settings, items: list[Item], tmp_path: Path
) -> None:
    """A spawned worker's ``sys.exit`` would free everything it made, one object at a time
    (about a second at the end of a reindex); it leaves at once instead, its results given."""
    with AnalysisPool(plain_settings, workers=2) as pool:
        paths = [tmp_path / f"mark-{n}" for n in range(4)]
        pids = {pool._pool().submit(_keep_a_mark, str(p)).result() for p in paths}
        got = [pair for b in pool.analyze_batches(batches(items[:20], 5)) for pair in b]
    assert pids and os.getpid() not in pids
    assert [i for i, _ in got] == [i for i, _, _ in items[:20]]  # every result came back
    assert not [p.name for p in paths if p.exists()]


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _ingest_state(tmp_path: Path, name: str, workers: int, records: list[dict[str, object]]) -> Any:
    settings = load_settings(
        {
            "data_dir": str(tmp_path / name),
            "ingest": {"workers": workers, "parallel_min_batch": 8, "batch_size": 50},
        }
    )
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    with Ingester(factory, Featurizer(settings)) as ingester:
        ingester.ingest_records(records[:20])
        reindex(factory=factory, featurizer=ingester.featurizer)
        summary = ingester.ingest_records(records[20:])  # vectorised at ingest, in the pool
        assert ingester.pool.parallel == (workers > 1)
    assert summary.inserted == len({r["id"] for r in records}) - 20
    with factory() as session:
        rows = session.execute(
            select(
                Article.external_id,
                Article.text_hash,
                ArticleFeatures.fingerprint,
                ArticleFeatures.vector,
                ArticleFeatures.n_tokens,
            )
            .join(ArticleFeatures, ArticleFeatures.article_id == Article.id)
            .order_by(Article.external_id)
        ).all()
    engine.dispose()
    return [tuple(r) for r in rows]


def test_ingest_in_the_pool_stores_what_in_process_ingest_stores(
    tmp_path: Path, data_dir: Path
) -> None:
    records = javaguide_records(data_dir, 140)
    pooled = _ingest_state(tmp_path, "pooled", 2, records)
    assert pooled == _ingest_state(tmp_path, "local", 1, records)
    assert len(pooled) == 140


def test_pipelined_batches_see_the_batch_written_before(tmp_path: Path, data_dir: Path) -> None:
    """Batch n + 1 is analysed before batch n is written: an id of batch n changed again in
    batch n + 1 is still an update of what batch n wrote, pooled or not."""
    records = javaguide_records(data_dir, 80)
    again = {**records[30], "content": records[30]["content"] + "\n\n补充：索引与事务。"}
    same = dict(records[31])
    pooled = _ingest_state(tmp_path, "pooled", 2, [*records, again, same])
    local = _ingest_state(tmp_path, "local", 1, [*records, again, same])
    assert pooled == local and len(pooled) == 80
    first = {r[0]: r for r in _ingest_state(tmp_path, "first", 1, records)}
    changed = [rid for rid, *rest in pooled if first[rid] != (rid, *rest)]
    assert changed == [again["id"]]  # the update was written; the unchanged copy was not


def test_a_worker_killed_mid_run_is_a_clear_error(
    plain_settings: Settings, items: list[Item]
) -> None:
    with AnalysisPool(plain_settings, workers=2) as pool:
        results = pool.analyze_batches(batches(items * 20, 4))
        next(results)
        executor = pool._executor
        assert executor is not None
        os.kill(next(iter(executor._processes)), signal.SIGKILL)
        with pytest.raises(WorkerDied, match="worker process died"):
            for _ in results:
                pass
        assert pool.count_texts(["数据库 索引"] * 4).stats()[0].counts == {"数据库": 1, "索引": 1}
