"""The reindex job directory: torn spool tails, the lock, stale jobs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.features.counts import TermCounts
from recengine.features.hashing import TermHasher
from recengine.index.neardup.passages import passage_rows
from recengine.pipeline.featurize import Analyzed, Featurizer, TextStats
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.job import JobDir, JobRecord, ReindexBusy, SpoolBatch
from recengine.storage.rows.features import model_versions
from tests.factories import record


def batch(start: int) -> SpoolBatch:
    ids = list(range(start, start + 3))
    counts = TermCounts.from_dicts([{"词": i + 1, "w": 1} for i in ids], TermHasher())
    passages = passage_rows([np.array([7 * i + 1, 7 * i + 2], np.uint64) for i in ids])
    return SpoolBatch(ids, Analyzed([f"h{i}" for i in ids], counts), passages)


def contents(batches: Iterable[SpoolBatch]) -> list[tuple[list[int], list[TextStats], Any]]:
    return [(b.ids, b.analyzed.stats(), [p.tolist() for p in b.passages]) for b in batches]


def test_a_torn_spool_tail_is_cut_off(tmp_path: Path) -> None:
    jobs = JobDir(tmp_path)
    with jobs.open_spool() as spool:
        jobs.append(spool, batch(0))
        jobs.append(spool, batch(3))
    whole = jobs.spool_size()
    with jobs.spool_path.open("ab") as handle:
        handle.write(b"\x40\x00\x00\x00\x00\x00\x00\x00\x01\x02")  # a crash mid-record
    assert contents(jobs.batches()) == contents([batch(0), batch(3)])
    with jobs.open_spool() as spool:  # resuming appends after the last whole record
        assert jobs.spool_path.stat().st_size == whole
        jobs.append(spool, batch(6))
    assert contents(jobs.batches()) == contents([batch(0), batch(3), batch(6)])
    jobs.clear()
    assert list(jobs.batches()) == [] and jobs.load() is None


def test_job_file_round_trip_and_identity(tmp_path: Path) -> None:
    jobs = JobDir(tmp_path)
    job = JobRecord(database="sqlite:///x.db", params={"a": 1}, start_seq=4, started_at="t")
    jobs.save(job)
    assert jobs.load() == job
    assert job.matches(JobRecord("sqlite:///x.db", {"a": 1}, 9, "u"))
    assert not job.matches(JobRecord("sqlite:///y.db", {"a": 1}, 4, "t"))
    assert not job.matches(JobRecord("sqlite:///x.db", {"a": 2}, 4, "t"))
    jobs.job_path.write_text("{not json")
    assert jobs.load() is None  # an unreadable job is discarded, not trusted


def test_one_reindex_at_a_time(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings
) -> None:
    Ingester(factory, featurizer).ingest_records([record(i) for i in range(3)])
    holder = JobDir(settings.data_dir)
    holder.lock()
    try:
        with pytest.raises(ReindexBusy, match="another reindex is running"):
            reindex(factory=factory, featurizer=featurizer)
        result = CliRunner().invoke(main, ["reindex"], obj=CliContext(settings))
        assert result.exit_code == 2 and "another reindex is running" in result.output
    finally:
        holder.unlock()
    assert reindex(factory=factory, featurizer=featurizer).n_docs == 3


def test_leftovers_of_an_abandoned_run_are_removed(
    factory: sessionmaker[Session], featurizer: Featurizer, settings: Settings
) -> None:
    Ingester(factory, featurizer).ingest_records([record(i) for i in range(3)])
    first = reindex(factory=factory, featurizer=featurizer)
    stale = reindex(factory=factory, featurizer=featurizer)  # then pretend it was never active
    jobs = JobDir(settings.data_dir)
    jobs.save(JobRecord("elsewhere", {}, 0, "t", version=first.version))  # another database's
    result = reindex(factory=factory, featurizer=featurizer)
    assert not result.resumed
    with factory() as session:
        assert model_versions(session=session) == [result.version]
    assert stale.version < result.version
