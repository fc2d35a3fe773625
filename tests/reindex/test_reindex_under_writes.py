"""A reindex beside a steady writer (issue 13): it completes on SQLite and PostgreSQL, and no
write waits long for it (the switch is short; the recluster runs before it, outside the lock).

The reindex is the real command in its own process; the writer another process posting one
article at a time, eight a second, as an API worker would.
"""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from bench.paced_writer import PacedWriter
from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.state import read_state
from tests.factories import csl_records, javaguide_records
from tests.reindex.test_reindex_interrupt import RECENGINE, environment


@pytest.mark.slow
def test_a_reindex_completes_beside_a_writer_and_no_write_waits_long(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> None:
    Ingester(factory, featurizer).ingest_records(csl_records(data_dir, 1000))
    reindex(factory=factory, featurizer=featurizer)
    overrides = {"database_url": settings.resolved_database_url, "data_dir": str(settings.data_dir)}
    writer = PacedWriter(overrides, javaguide_records(data_dir, 100), rate=8)
    try:
        env = {**environment(settings), "RECENGINE_REINDEX__BATCH_SIZE": "200"}
        done = subprocess.run(
            [RECENGINE, "reindex"], env=env, capture_output=True, text=True, timeout=900
        )
    finally:
        writes = writer.stop()
    assert done.returncode == 0, done.stderr
    assert "reindexed" in done.stdout
    assert not writes.errors, writes.errors[:3]
    durations = writes.durations
    print("writes beside the reindex:", writes.summary())
    assert len(durations) >= 8  # the writer wrote all along the reindex
    assert statistics.median(durations) < 0.5, writes.summary()
    assert max(durations) < 3.0, writes.summary()  # generous: a loaded machine, 2 cores shared
    # What the reindex blocked the writer for: its waits for the writers' lock. On a quiet
    # machine under 50 ms (a write takes 30-50 ms); the bound scales with what a write takes in
    # this run, as a reference measured beside it: on 2 cores overloaded 2x by other tests,
    # writes took 112 ms at the median and the longest wait 1.15 s.
    assert max(writes.waits) < max(1.0, 20 * statistics.median(durations)), writes.summary()
    with factory() as session:
        assert read_state(session=session).active_model_version == 2
