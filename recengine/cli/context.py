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

    Only commands that create a database (``db upgrade``, ``demo``) call :meth:`creating`
    first; every other command uses an existing one and, when there is none (the wrong folder),
    says which file it looked for instead of creating an empty one.

    Args:
        settings: the settings, or a function that loads them on first use (so a command's
            ``--help`` never reads configuration).
    """

    def __init__(self, settings: Settings | Callable[[], Settings]) -> None:
        self._settings = settings
        self._create = False

    @cached_property
    def settings(self) -> Settings:
        loaded = self._settings
        return loaded() if callable(loaded) else loaded

    def creating(self) -> CliContext:
        """Allow the engine to create a missing SQLite file (before ``engine`` is first used)."""
        self._create = True
        return self

    @cached_property
    def engine(self) -> Engine:
        from recengine.storage.db import make_engine

        return make_engine(self.settings.resolved_database_url, create=self._create)

    @property
    def database(self) -> str:
        """The database, as shown to a person (password hidden, SQLite path absolute)."""
        from recengine.storage.db import describe_url

        return describe_url(self.settings.resolved_database_url)

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
