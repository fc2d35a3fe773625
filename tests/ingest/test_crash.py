"""kill -9 in the middle of an ingest: every committed batch is whole, and a rerun completes it;
a first ingest killed anywhere (its batches, its first model fit) converges when run again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex import checkpoints
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import (
    Article,
    ArticleFeatures,
    ClusterMember,
    IdfModelRow,
    ModelPart,
)
from recengine.storage.rows.features import load_model_payload
from recengine.storage.state import read_state
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


# -- the first ingest, killed at each named point, then run again ------------------------------

FIRST = 60  # real articles: 3 ingest batches of 20, then a first fit in pages of 10
POINTS = ["ingested@2", "tokenized@3", "written@3", "prepared", "switched"]


def first_state(factory: sessionmaker[Session], data_dir: Path) -> dict[str, Any]:
    """What a first ingest leaves, by the caller's ids (row ids and versions aside)."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        ids = {i: e for i, e in session.execute(select(Article.id, Article.external_id))}
        model = None
        if version is not None:
            model = IdfModel.from_bytes(load_model_payload(session=session, version=version)[0])
        features = session.execute(
            select(
                ArticleFeatures.article_id, ArticleFeatures.fingerprint, ArticleFeatures.vector
            ).where(ArticleFeatures.model_version == version)
        ).all()
        members = session.execute(
            select(
                ClusterMember.article_id, ClusterMember.canonical_id, ClusterMember.distance
            ).where(ClusterMember.model_version == version)
        ).all()
        parts = session.execute(
            select(ModelPart.name, ModelPart.payload).where(ModelPart.model_version == version)
        ).all()
        return {
            "articles": sorted(ids.values()),
            "model": None if model is None else (model.n_docs, dict(model.df)),
            "versions": len(session.scalars(select(IdfModelRow.version)).all()),
            "features": {ids[a]: (f, v) for a, f, v in features},
            "clusters": {ids[a]: (ids[c], d) for a, c, d in members},
            "parts": dict(parts),
            "job left": (data_dir / "reindex" / "job.json").exists(),
            "index files": sorted(
                p.parent.name for p in (data_dir / "index").glob(f"*/*-v{version or 0:09d}-*.idx")
            ),
        }


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_a_first_ingest_killed_at_any_point_converges_when_run_again(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    tmp_path: Path,
    point: str,
) -> None:
    """kill -9 of ``recengine ingest`` into an empty database (and its reindex workers) while it
    ingests or fits its first model; the same command run again ends in the state of an
    uninterrupted run (before, a kill during the fit left no model behind an "unchanged")."""
    path = write_jsonl(tmp_path / "posts.jsonl", javaguide_records(data_dir, FIRST))
    holds = tmp_path / "holds"
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
        "RECENGINE_INGEST__BATCH_SIZE": "20",
        "RECENGINE_REINDEX__BATCH_SIZE": "10",
        "RECENGINE_REINDEX__WORKERS": "2",
    }
    env.pop(checkpoints.ENV, None)
    proc = subprocess.Popen(
        [RECENGINE, "ingest", str(path)],
        env={**env, checkpoints.ENV: f"{point}:{holds}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its pool's workers too: the whole group is killed
    )
    reached = holds / f"{point.partition('@')[0]}.reached"
    deadline = time.monotonic() + 300
    while not reached.exists():
        assert proc.poll() is None, f"ended before {point}: {proc.communicate()[1][-2000:]!r}"
        assert time.monotonic() < deadline, f"never reached {point}"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    again = subprocess.run(
        [RECENGINE, "ingest", str(path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    rerun = first_state(factory, settings.data_dir)
    assert rerun["model"] is not None and len(rerun["features"]) == FIRST
    # the rerun's state serves a command (in this process: a third process start per case,
    # ~2 s, would show nothing more than the rerun's own start did)
    related = CliRunner().invoke(main, ["related", "javaguide/README.md"], obj=CliContext(settings))
    assert related.exit_code == 0, related.output

    reindex(factory=factory, featurizer=featurizer, resume=False)  # the uninterrupted state
    assert first_state(factory, settings.data_dir) == rerun
