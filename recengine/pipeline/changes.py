"""Recording what readers read: one transaction, started with ``begin_write`` (so it takes the
next change sequence number and is ordered with every other writer), that changes nothing when
it raises."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import NotFound
from recengine.storage.articles import find_existing
from recengine.storage.db import transaction
from recengine.storage.reader_events import add_events
from recengine.storage.state import begin_write

SHOWN_MISSING = 5


@dataclass(frozen=True)
class ReadEvent:
    """One reader event. ``at`` defaults to the time it is recorded."""

    article: str
    kind: str = "read"
    at: datetime | None = None


def record_events(
    *, factory: sessionmaker[Session], user_id: str, events: Sequence[ReadEvent]
) -> int:
    """Store a reader's events, all or none; returns how many were stored.

    Raises:
        NotFound: an event names an article that does not exist or was deleted (nothing is
            stored; the message lists the first few such ids).
    """
    if not events:
        return 0
    now = datetime.now(UTC)
    wanted = list(dict.fromkeys(e.article for e in events))
    with transaction(factory) as session:
        begin_write(session=session)
        found = find_existing(session=session, external_ids=wanted)
        missing = [a for a in wanted if a not in found or found[a].deleted]
        if missing:
            listed = ", ".join(repr(a) for a in missing[:SHOWN_MISSING])
            extra = len(missing) - SHOWN_MISSING
            more = f" and {extra} more" if extra > 0 else ""
            raise NotFound(f"unknown article ids: {listed}{more}")
        add_events(
            session=session,
            rows=[
                {
                    "user_id": user_id,
                    "article_id": found[e.article].id,
                    "kind": e.kind,
                    "at": e.at or now,
                }
                for e in events
            ],
        )
    return len(events)
