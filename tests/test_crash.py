"""kill -9 in the middle of an ingest: every committed batch is whole, and a rerun completes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest import Ingester
from recengine.pipeline.reindex import reindex
from recengine.storage.models import Article, ArticleFeatures
from tests.factories import javaguide_records, write_jsonl

BATCH = 20
RECENGINE = str(Path(sys.executable).with_name("recengine"))  # the installed console script


def count(factory: sessionmaker[Session], table: type) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(table)) or 0


def test_kill_during_ingest_loses_nothing_acknowledged(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    records = javaguide_records(data_dir, 150)  # 3 x 150 copies: 23 batches, killed after ~3
    Ingester(factory, featurizer).ingest_records(records[:BATCH])
    reindex(factory=factory, featurizer=featurizer)  # a model, so each batch writes features
    copies = [{**r, "id": f"{k}/{r['id']}"} for k in range(3) for r in records]
    path = write_jsonl(tmp_path / "big.jsonl", copies)
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
        "RECENGINE_INGEST__BATCH_SIZE": str(BATCH),
    }
    proc = subprocess.Popen(
        [RECENGINE, "ingest", str(path)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while count(factory, Article) < BATCH + 3 * BATCH and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    articles, features = count(factory, Article), count(factory, ArticleFeatures)
    assert BATCH < articles < BATCH + 3 * len(records), "killed too early or too late"
    assert articles % BATCH == 0  # only whole batches were committed
    assert features == articles  # and each with its features

    done = subprocess.run(
        [RECENGINE, "ingest", str(path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert count(factory, Article) == BATCH + 3 * len(records)
    assert count(factory, ArticleFeatures) == BATCH + 3 * len(records)
