"""A reindex killed with SIGKILL (or stopped with Ctrl-C) mid-way, in a real subprocess.

While it runs and after it dies, queries keep answering from the old model; rerunning it resumes
and ends in exactly the state an uninterrupted reindex gives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex import checkpoints
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import ArticleFeatures, IdfModelRow
from recengine.storage.rows.features import features_of, load_model_payload
from recengine.storage.state import read_state
from tests.factories import csl_records, javaguide_records
from tests.templates import load_cloned

RECENGINE = str(Path(sys.executable).with_name("recengine"))
# The reindex is started through this, so that it takes Ctrl-C as a terminal gives it however
# the suite itself was started. A runner started in the background of a script (``scripts/test
# &``: no job control) has SIGINT ignored, a child inherits that across exec, and CPython installs
# its KeyboardInterrupt handler only when SIGINT is not ignored: the reindex would then never
# see the test's SIGINT and the test would time out (both Ctrl-C tests failed so in a suite run
# in the background, and passed in the foreground). The wrapper restores the default
# disposition, then becomes the command (same pid, so signals reach it).
SIGINT_DEFAULT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


def full_state(factory: sessionmaker[Session]) -> dict[str, Any]:
    """Everything a reindex produces, independent of version numbers."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        model = IdfModel.from_bytes(load_model_payload(session=session, version=version)[0])
        rows = session.execute(
            select(ArticleFeatures.article_id, ArticleFeatures.fingerprint, ArticleFeatures.vector)
            .where(ArticleFeatures.model_version == version)
            .order_by(ArticleFeatures.article_id)
        ).all()
        versions = session.scalars(select(IdfModelRow.version)).all()
    return {
        "n_docs": model.n_docs,
        "df": dict(model.df),
        "features": [tuple(r) for r in rows],
        "versions": len(versions),
    }


class Reader:
    """A client querying the old state while the reindex runs."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory
        with factory() as session:
            self.version = read_state(session=session).active_model_version
            assert self.version is not None
            self.sample = list(range(1, 650, 9))
            self.answer = self.ask(session)
        self.queries = 0

    def ask(self, session: Session) -> list[Any]:
        assert self.version is not None
        return sorted(
            tuple(r)
            for r in features_of(session=session, version=self.version, article_ids=self.sample)
        )

    def check(self) -> None:
        with self.factory() as session:
            assert read_state(session=session).active_model_version == self.version
            assert self.ask(session) == self.answer
        self.queries += 1


@pytest.fixture
def corpus(factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path) -> None:
    """500 real abstracts indexed, then 100 real articles ingested under that old model
    (built once per database kind, then cloned: ``tests/templates.py``). The reindexes the
    tests interrupt run in batches of 10 (``environment``): the latest hold point, 40 batches
    tokenized, is 400 articles in, with 200 still to go. (The tests had twice as many, 1,200,
    through which each of their reindexes, up to three a test, went for the same checks.)"""
    records = csl_records(data_dir, 500) + javaguide_records(data_dir, 100)
    load_cloned(factory, featurizer, records, _indexed_then_ingested)


def _indexed_then_ingested(
    factory: sessionmaker[Session], featurizer: Featurizer, records: Sequence[dict[str, Any]]
) -> None:
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(list(records[:500]))
    reindex(factory=factory, featurizer=featurizer, batch_size=500)
    ingester.ingest_records(list(records[500:]))


def environment(settings: Settings, hold: str | None = None) -> dict[str, str]:
    env = {
        **os.environ,
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
        "RECENGINE_REINDEX__WORKERS": "2",
        "RECENGINE_REINDEX__BATCH_SIZE": "10",
    }
    env.pop(checkpoints.ENV, None)
    if hold is not None:
        env[checkpoints.ENV] = f"{hold}:{settings.data_dir.parent / 'holds'}"
    return env


def pending_features(factory: sessionmaker[Session], active: int | None) -> int:
    with factory() as session:
        return (
            session.scalar(select(func.count()).where(ArticleFeatures.model_version != active)) or 0
        )


def run_until(
    settings: Settings,
    reader: Reader,
    hold: str,
    sig: int,
    timeout: float = 300,
    old_state_while_held: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Start ``recengine reindex`` held at checkpoint ``hold`` (``pipeline.reindex.checkpoints``);
    query the old state until it is there, then send ``sig`` while it waits.

    The reindex cannot run past the point however the machine schedules the two processes,
    and a few queries are made while it is held.
    """
    reached = settings.data_dir.parent / "holds" / f"{hold.partition('@')[0]}.reached"
    proc = subprocess.Popen(
        [*SIGINT_DEFAULT, RECENGINE, "reindex"],
        env=environment(settings, hold),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    group = os.getpgid(proc.pid)
    try:
        deadline = time.monotonic() + timeout
        while not reached.exists():
            assert proc.poll() is None, f"reindex ended before the hold: {proc.communicate()}"
            assert time.monotonic() < deadline, "the reindex never reached the hold point"
            if old_state_while_held:  # (a switch before the hold point changes the state)
                reader.check()
            time.sleep(0.01)
        for _ in range(6 if old_state_while_held else 0):
            reader.check()
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
        wait_group_empty(group)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        if proc.poll() is None:
            proc.kill()


def wait_group_empty(group: int) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError("reindex worker processes outlived the reindex")


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # pass 1 only reads SQL
def test_kill_9_while_tokenizing_then_rerun(
    corpus: None, settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    reader = Reader(factory)
    spool = settings.data_dir / "reindex" / "spool.bin"

    def killed() -> None:  # the spool the rerun resumes from was well under way
        assert spool.stat().st_size > 30_000

    kill_rerun_compare(settings, factory, featurizer, reader, "tokenized@40", killed)


@pytest.mark.slow
def test_kill_9_while_writing_then_rerun(
    corpus: None, settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    reader = Reader(factory)

    def killed() -> None:  # more than 100 rows of the new version were written
        assert pending_features(factory, reader.version) > 100

    kill_rerun_compare(settings, factory, featurizer, reader, "written@11", killed)


def kill_rerun_compare(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    reader: Reader,
    hold: str,
    killed_state: Callable[[], None],
) -> None:
    killed = run_until(settings, reader, hold, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    reader.check()  # the old state still answers after the crash
    assert reader.queries > 5
    killed_state()

    rerun = subprocess.run(
        [RECENGINE, "reindex"], env=environment(settings), capture_output=True, text=True
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "resumed and finished 600 articles" in rerun.stdout
    resumed = full_state(factory)
    assert not (settings.data_dir / "reindex" / "job.json").exists()

    reindex(factory=factory, featurizer=featurizer, resume=False)  # uninterrupted reference
    assert full_state(factory) == resumed
    assert resumed["versions"] == 1 and len(resumed["features"]) == 600


def test_the_reindex_takes_ctrl_c_even_when_the_suite_ignores_it() -> None:
    """What the Ctrl-C tests rely on, checked as a runner started in the background is."""
    shows = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        plain = subprocess.run([sys.executable, "-c", shows], capture_output=True, text=True)
        wrapped = subprocess.run(
            [*SIGINT_DEFAULT, sys.executable, "-c", shows], capture_output=True, text=True
        )
    finally:
        signal.signal(signal.SIGINT, before)
    assert plain.stdout.strip() == "False"  # what a child of such a runner inherits
    assert wrapped.stdout.strip() == "True", wrapped.stderr


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_ctrl_c_stops_cleanly_and_leaves_the_old_state(
    corpus: None, settings: Settings, factory: sessionmaker[Session]
) -> None:
    reader = Reader(factory)
    stopped = run_until(settings, reader, "written@6", signal.SIGINT)
    assert stopped.returncode == 130, stopped.stderr
    assert "interrupted" in stopped.stderr and "Traceback" not in stopped.stderr
    assert "active" not in stopped.stderr  # not reported as switched
    reader.check()  # the old state still answers
    assert pending_features(factory, reader.version) > 50


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_ctrl_c_after_the_switch_says_the_reindex_took_effect(
    corpus: None, settings: Settings, factory: sessionmaker[Session]
) -> None:
    reader = Reader(factory)
    assert reader.version is not None
    stopped = run_until(settings, reader, "switched", signal.SIGINT, old_state_while_held=False)
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert f"IDF model version {reader.version + 1} is active" in stopped.stderr
    with factory() as session:
        assert read_state(session=session).active_model_version == reader.version + 1
