"""What every command needs, built lazily from settings once per invocation."""

from __future__ import annotations

from functools import cached_property

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import check_schema


class CliContext:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def engine(self) -> Engine:
        return make_engine(self.settings.resolved_database_url)

    @cached_property
    def factory(self) -> sessionmaker[Session]:
        """Sessions of a database whose schema is current (else SchemaOutOfDate)."""
        check_schema(self.engine)
        return make_session_factory(self.engine)

    @cached_property
    def featurizer(self) -> Featurizer:
        return Featurizer(self.settings)
