"""What every command needs, built lazily from settings once per invocation.

Nothing heavy is imported here at module level: ``recengine --help`` and every command's
``--help`` load this module, and must start in a fraction of a second (SQLAlchemy, numpy and the
tokenizer are imported by the properties that need them).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from recengine.config import Settings
    from recengine.pipeline.featurize import Featurizer


class CliContext:
    """Settings, engine, session factory and featurizer of one command.

    Args:
        settings: the settings, or a function that loads them on first use (so a command's
            ``--help`` never reads configuration).
    """

    def __init__(self, settings: Settings | Callable[[], Settings]) -> None:
        self._settings = settings

    @cached_property
    def settings(self) -> Settings:
        loaded = self._settings
        return loaded() if callable(loaded) else loaded

    @cached_property
    def engine(self) -> Engine:
        from recengine.storage.db import make_engine

        return make_engine(self.settings.resolved_database_url)

    @cached_property
    def factory(self) -> sessionmaker[Session]:
        """Sessions of a database whose schema is current (else SchemaOutOfDate)."""
        from recengine.storage.db import make_session_factory
        from recengine.storage.migrate import check_schema

        check_schema(self.engine)
        return make_session_factory(self.engine)

    @cached_property
    def featurizer(self) -> Featurizer:
        from recengine.pipeline.featurize import Featurizer

        return Featurizer(self.settings)
