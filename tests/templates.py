"""Loaded databases built once per test process and cloned into each test that loads the same.

Ingesting a corpus and reindexing it (tokenize, fit, fingerprint, cluster, build the indexes)
is the costliest set-up of the suite, and dozens of tests load the very same records on each
database. :func:`load_cloned` does it once per process and key, into a *template* (a SQLite
file or a PostgreSQL database, and a data directory), then gives each test a copy: SQLite's
online backup of the file, PostgreSQL's ``CREATE DATABASE ... TEMPLATE`` (a file-level copy made
by the server), and a copy of the data directory. The copy is exactly what the load would have
written (the same ``database_id`` too, so the copied index files are the template's current
ones); what a test checks of a load is unchanged, and a test that loads into a database that
is no longer empty still loads the slow way (a clone would replace what it wrote).

The same goes for the schema alone: most tests start from a migrated, empty database
(``tests/conftest.py``'s ``engine``), and running the migrations costs ~0.2 s on SQLite and
~1 s on PostgreSQL. :func:`migrate_cloned` migrates once per process and database kind, then
copies that template the same way; each copy takes an identity of its own through the
product's :func:`~recengine.storage.state.new_identity` (what migration 0002 runs), so two
databases of one test are as distinct as two migrated ones (a PostgreSQL database that a test
migrates is created as the copy at once: :func:`create_migrated`). The tests of the migrations
themselves still run them (``upgrade``).

The templates are dropped at the end of the session (:func:`drop_templates`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.storage.state import new_identity, read_state

Build = Callable[[sessionmaker[Session], Featurizer, Sequence[dict[str, Any]]], None]


class _Template(NamedTuple):
    url: str
    data_dir: Path


_templates: dict[str, _Template] = {}
_root: Path | None = None


def load_cloned(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: Sequence[dict[str, Any]],
    build: Build,
) -> None:
    """What ``build(factory, featurizer, records)`` writes, cloned from a template.

    ``build`` is the load itself (e.g. ingest ``records``, then reindex); it runs on the real
    database when that is not freshly migrated and empty, and once per key into the template.
    """
    engine = factory.kw["bind"]
    data_dir = featurizer.settings.data_dir
    if not _is_fresh(factory, data_dir):
        build(factory, featurizer, records)
        return
    key = _key(engine, featurizer, records, build)
    template = _templates.get(key) or _build_template(key, engine, featurizer, records, build)
    engine.dispose()  # no connection may stay open on a database being replaced
    _copy(template.url, engine)
    shutil.copytree(template.data_dir, data_dir, dirs_exist_ok=True)


def load(
    factory: sessionmaker[Session], featurizer: Featurizer, records: Sequence[dict[str, Any]]
) -> None:
    """``records`` ingested, then reindexed (cloned from the process's template of the same
    load when the database is fresh: ``tests/templates.py``)."""
    load_cloned(factory, featurizer, records, ingest_and_reindex)


def ingest_and_reindex(
    factory: sessionmaker[Session], featurizer: Featurizer, records: Sequence[dict[str, Any]]
) -> None:
    Ingester(factory, featurizer).ingest_records(list(records))
    reindex(factory=factory, featurizer=featurizer)


def drop_templates() -> None:
    """Drop every PostgreSQL template and remove the template files."""
    for template in _templates.values():
        url = make_url(template.url)
        if url.get_backend_name() == "postgresql":
            with admin_connection(url) as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
    _templates.clear()
    if _root is not None:
        shutil.rmtree(_root, ignore_errors=True)


def migrate_cloned(engine: Engine) -> None:
    """The schema at head on ``engine``'s new, empty database (as ``upgrade(engine)`` makes
    it), copied from the process's migrated template, with a new ``database_id``."""
    template = schema_template(engine)
    engine.dispose()
    _copy(template, engine)
    with engine.begin() as connection:
        new_identity(connection)


def schema_template(engine: Engine) -> str:
    """The URL of the process's migrated template of ``engine``'s kind (built if need be)."""
    key = f"schema-{engine.dialect.name}"
    return (_templates.get(key) or _build_schema_template(key, engine)).url


def create_migrated(url: str) -> None:
    """Create the PostgreSQL database of ``url`` as :func:`migrate_cloned` makes it, in one
    ``CREATE DATABASE ... TEMPLATE`` (creating an empty database first costs as much again)."""
    engine = make_engine(url)
    try:
        source = make_url(schema_template(engine)).database
        with admin_connection(engine.url) as conn:
            conn.execute(text(f'CREATE DATABASE "{engine.url.database}" TEMPLATE "{source}"'))
        with engine.begin() as connection:
            new_identity(connection)
    finally:
        engine.dispose()


def _build_schema_template(key: str, engine: Engine) -> _Template:
    url, folder = _new_template(key, engine)
    template_engine = make_engine(url)
    try:
        upgrade(template_engine)
    finally:
        template_engine.dispose()
    _templates[key] = _Template(url, folder / "data")
    return _templates[key]


def _new_template(key: str, engine: Engine) -> tuple[str, Path]:
    """The URL of a new template database of ``engine``'s kind, and its folder."""
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="recengine-templates-"))
    folder = _root / key
    folder.mkdir(parents=True, exist_ok=True)
    if engine.dialect.name == "sqlite":
        return f"sqlite:///{folder / 'template.db'}", folder
    name = f"recengine_tmpl_{key}_{uuid.uuid4().hex[:6]}".replace("-", "_")
    with admin_connection(engine.url) as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    return engine.url.set(database=name).render_as_string(hide_password=False), folder


def _copy(template_url: str, engine: Engine) -> None:
    """Replace ``engine``'s database (no connection open on it) with a copy of the template's."""
    if engine.dialect.name == "sqlite":
        _copy_sqlite(make_url(template_url).database or "", engine.url.database or "")
    else:
        _copy_postgres(engine, make_url(template_url).database or "")


def _is_fresh(factory: sessionmaker[Session], data_dir: Path) -> bool:
    with factory() as session:
        if read_state(session=session).seq != 0:
            return False
    return not data_dir.exists() or not any(data_dir.iterdir())


def _key(
    engine: Engine, featurizer: Featurizer, records: Sequence[dict[str, Any]], build: Build
) -> str:
    """What the load depends on: the database kind, the records, every setting but where the
    database and data live, the tokenizer backend, and which load."""
    settings = featurizer.settings.model_dump_json(exclude={"data_dir", "database_url"})
    parts = [
        engine.dialect.name,
        json.dumps(list(records), sort_keys=True, default=str),
        settings,
        type(featurizer.tokenizer.backend).__name__,
        f"{build.__module__}.{build.__qualname__}",
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def _build_template(
    key: str,
    engine: Engine,
    featurizer: Featurizer,
    records: Sequence[dict[str, Any]],
    build: Build,
) -> _Template:
    url, folder = _new_template(key, engine)
    settings = featurizer.settings.model_copy(
        update={"data_dir": folder / "data", "database_url": url}
    )
    template_engine = make_engine(url)
    try:
        migrate_cloned(template_engine)
        build(
            make_session_factory(template_engine),
            Featurizer(settings, featurizer.tokenizer),
            records,
        )
    finally:
        template_engine.dispose()
    (folder / "data").mkdir(parents=True, exist_ok=True)
    _templates[key] = _Template(url, folder / "data")
    return _templates[key]


def _copy_sqlite(source: str, target: str) -> None:
    """SQLite's online backup, page for page: rows still in the write-ahead log count too."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def _copy_postgres(engine: Engine, template: str) -> None:
    name = engine.url.database
    with admin_connection(engine.url) as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'))


@contextmanager
def admin_connection(url: Any) -> Iterator[Connection]:
    """An autocommit connection to the maintenance database of ``url``'s server (to create and
    drop databases: the tests' own and the templates)."""
    admin = create_engine(make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            yield conn
    finally:
        admin.dispose()
