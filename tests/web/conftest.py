"""Fixtures of the HTTP tests: an app on a migrated database (SQLite and PostgreSQL), a client.

The app is the real one from ``create_app``; only the settings differ between tests. ``KEY`` is
the API key writes send.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings, load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.text.words.tokenize import Tokenizer
from recengine.web import create_app
from tests.conftest import make_settings
from tests.factories import javaguide_records
from tests.templates import load

KEY = "test-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(tmp_path, database_url, api_key=KEY)


@pytest.fixture
def make_app(settings: Settings, engine: Engine, tokenizer: Tokenizer) -> Callable[..., Flask]:
    """Apps on the test database with some settings changed: ``make_app(related={"max_k": 5})``."""

    def build(**overrides: Any) -> Flask:
        data = settings.model_dump(mode="json")
        for key, value in overrides.items():
            data[key] = {**data[key], **value} if isinstance(value, dict) else value
        return create_app(load_settings(data), tokenizer=tokenizer)

    return build


@pytest.fixture
def app(make_app: Callable[..., Flask], request: pytest.FixtureRequest) -> Flask:
    """The app with the default settings. A test that also takes a ``corpus`` has it loaded
    first (cloned from a template: ``tests/templates.py``), so that the app opens on it as a
    server started on an existing database does."""
    if "corpus" in request.fixturenames:
        request.getfixturevalue("corpus")
    return make_app()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def corpus_size() -> int:
    """Articles in ``corpus`` (a module that needs more overrides this fixture)."""
    return 30


@pytest.fixture
def corpus(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path, corpus_size: int
) -> list[dict[str, Any]]:
    """The first ``corpus_size`` real JavaGuide articles, ingested."""
    records = javaguide_records(data_dir, corpus_size)
    load(factory, featurizer, records)
    return records
