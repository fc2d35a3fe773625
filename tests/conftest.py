"""Shared fixtures: settings, real databases (SQLite and PostgreSQL), a tokenizer per backend.

PostgreSQL tests need a server: ``RECENGINE_TEST_POSTGRES_URL`` names one (``scripts/test``
starts a private server and sets it). Without it they fail with that message rather than being
skipped, so a missing server can never pass silently. ``pytest -m "not postgres"`` runs the rest.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings, TokenizerSettings, load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import current_revision
from recengine.text.words.tokenize import Tokenizer, build_tokenizer
from tests.jvm import use_small_jvms
from tests.templates import admin_connection, create_migrated, drop_templates, migrate_cloned

# The real corpora the tests read ship with the repository (tests/data/README.md: sources and
# licences), so a clone anywhere needs nothing outside it.
DATA = Path(__file__).resolve().parent / "data"
PG_ENV = "RECENGINE_TEST_POSTGRES_URL"
use_small_jvms()
# The shipped dense.encoder = "auto" turns the sentence encoder on wherever its package is
# installed, as it is with the test dependencies: the suite pins LSA (for itself and every
# command it starts), and the tests of the encoder ask for it (tests/recommend/
# test_related_encoder.py, tests/reindex/test_spark.py), so each test's figures stay the ones
# it checks and the suite does not encode every corpus it indexes.
os.environ.setdefault("RECENGINE_DENSE__ENCODER", "lsa")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert (DATA / "javaguide" / "javaguide.jsonl").is_file(), f"test corpora missing: {DATA}"
    return DATA


@pytest.fixture(scope="session", autouse=True)
def _loaded_templates() -> Iterator[None]:
    """The templates of loaded databases (``tests/templates.py``) live for the session."""
    yield
    drop_templates()


@pytest.fixture(scope="session")
def tokenizers() -> dict[str, Tokenizer]:
    """One tokenizer per backend for the whole run (a dictionary load takes about a second)."""
    return {b: _tokenizer_of(b) for b in ("rjieba", "jieba")}


@pytest.fixture(scope="session")
def tokenizer() -> Tokenizer:
    return _tokenizer_of("rjieba")


@functools.cache
def _tokenizer_of(backend: str) -> Tokenizer:
    """Built when a test first needs it: pure-Python jieba costs ~2.5 s of a test process's
    start (import and dictionary), and only the backends' comparison uses it."""
    return build_tokenizer(TokenizerSettings(backend=backend))


def _postgres_server_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.fail(
            f"{PG_ENV} is not set: PostgreSQL tests need a server (scripts/test starts one); "
            "run `pytest -m 'not postgres'` to leave them out",
            pytrace=False,
        )
    return url


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards: empty, or for a test that
    uses ``engine``, created migrated (``engine``'s copy of the migrated template, made at once)."""
    server = make_url(_postgres_server_url())
    name = f"recengine_test_{uuid.uuid4().hex[:12]}"
    url = server.set(database=name).render_as_string(hide_password=False)
    if "engine" in request.fixturenames:
        create_migrated(url)
    else:
        with admin_connection(server) as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url
    finally:
        with admin_connection(server) as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test using it runs twice: on a SQLite file and on a real PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def make_settings(tmp_path: Path, database_url: str, **overrides: Any) -> Settings:
    return load_settings(
        {"data_dir": str(tmp_path / "data"), "database_url": database_url, **overrides}
    )


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(tmp_path, database_url)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    """An engine on a migrated, empty database (a copy of the process's migrated template,
    with an identity of its own: ``tests/templates.py``)."""
    eng = make_engine(settings.resolved_database_url)
    if current_revision(eng) is None:  # else created migrated (``postgres_url``)
        migrate_cloned(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return make_session_factory(engine)


@pytest.fixture
def featurizer(settings: Settings, tokenizer: Tokenizer) -> Featurizer:
    return Featurizer(settings, tokenizer)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark (``local[2]``) for every test that needs it in this process: a JVM start
    and its Python workers cost seconds of CPU. Session-scoped, so the files that use it run on
    one xdist worker (``SHARED_SPARK``) and start it once."""
    from recengine.config import SparkSettings
    from recengine.pipeline.reindex.spark.session import spark_session

    session, created = spark_session(SparkSettings(master="local[2]", partitions=4))
    yield session
    if created:
        session.stop()


# Test files using the ``spark`` fixture: ``--dist loadfile`` hands them to one worker as one
# unit (``pytest_xdist_make_scheduler``), so that the session's JVM starts once, not per file.
SHARED_SPARK = ("tests/reindex/test_spark.py", "tests/clusters/test_overrides_clusters.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the files of ``SHARED_SPARK`` in one work unit, and the work
    units handed out in collection order (slow files first, ``pytest_collection_modifyitems``):
    xdist's default ``--loadscope-reorder`` puts the files with most tests first, which left
    the one-test slow files (the Spark cluster, ~50 s) to end the run on one worker."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False

    class SharedSparkScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return SHARED_SPARK[0] if scope in SHARED_SPARK else scope

    return SharedSparkScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding slow tests first (stable: each file keeps its order). ``scripts/test``
    hands whole files to its workers in collection order (pytest-xdist ``--dist loadfile``), so
    the long ones start at once rather than ending the run on one worker while the other
    idles (longest first, the usual greedy schedule)."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)
