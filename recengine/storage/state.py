"""The single ``engine_state`` row: change sequence, active IDF model version, database id."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache

from sqlalchemy import Connection, Select, Update, select, update
from sqlalchemy.orm import Session

from recengine.storage.models import EngineState
from recengine.storage.notify import announce


@dataclass(frozen=True)
class State:
    seq: int
    active_model_version: int | None
    database_id: str = ""


def begin_write(*, session: Session) -> State:
    """Take the next change sequence number; call first in every write transaction.

    The ``UPDATE`` locks the state row until the transaction ends, so writers are ordered and
    sequence numbers commit in order (on SQLite it also takes the database write lock up front,
    before any read, which avoids the deferred-transaction upgrade deadlock). The active model
    version is read under the same lock, so features written in this transaction are known to
    belong to the model that is active when it commits.
    """
    row = session.execute(
        update(EngineState)
        .where(EngineState.id == 1)
        .values(seq=EngineState.seq + 1)
        .returning(EngineState.seq, EngineState.active_model_version, EngineState.database_id)
    ).one()
    announce(session)  # listening servers learn of the change when it commits
    return State(*row)


def lock_writers(*, session: Session) -> None:
    """Take the writers' lock without a new sequence number: for a write transaction that
    reads before it writes and changes no article (a reindex writing its new version's rows).

    On SQLite a transaction that reads, then writes after another process committed, fails at
    once with "database is locked" (its read snapshot is stale: no wait can fix it). Taking the
    lock first makes it wait its turn like any writer instead.
    """
    session.execute(_lock_statement())


@cache
def _lock_statement() -> Update:
    return update(EngineState).where(EngineState.id == 1).values(seq=EngineState.seq)


def read_state(*, session: Session) -> State:
    """The state row as this transaction sees it."""
    return State(*session.execute(_read_statement()).one())


def state_statement() -> Select[int, int | None, str]:
    """The statement :func:`read_state` runs (``seq, active_model_version, database_id``)."""
    return _read_statement()


@cache
def _read_statement() -> Select[int, int | None, str]:
    """Built once: every related query reads the state first, and building costs more than
    running it."""
    return select(EngineState.seq, EngineState.active_model_version, EngineState.database_id).where(
        EngineState.id == 1
    )


def set_active_model(*, session: Session, version: int) -> None:
    """Switch readers and writers to ``version`` (inside a transaction begun with begin_write)."""
    session.execute(
        update(EngineState).where(EngineState.id == 1).values(active_model_version=version)
    )


def new_identity(connection: Connection) -> str:
    """Give the database a new random identity (``engine_state.database_id``) and return it.

    Migration 0002 gives every database its identity this way. A copy of a database (of the
    file, a dump restored) keeps the identity, so that the index files built for it still
    apply; a copy meant to be a database of its own (the test suite's copies of a migrated
    template) takes a new one, and index files built for the original are not used with it.
    Run inside a transaction of ``connection``; it does not commit.
    """
    database_id = uuid.uuid4().hex
    connection.execute(update(EngineState).values(database_id=database_id))
    return database_id
