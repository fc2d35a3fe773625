"""Models of a reader's data endpoints: the history (``GET /api/v1/users/<user>/events``) and
its erasure (``DELETE /api/v1/users/<user>``); see ``recommend.feeds.retention``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReaderEventOut(_Out):
    id: int = Field(description="The event's id (the order events were stored in).")
    article: str
    title: str
    kind: str
    at: str = Field(description="When the reader read it (ISO 8601, UTC).")
    deleted: bool = Field(description="The article has been deleted since (the event is kept).")


class ReaderEventsOut(_Out):
    """Every stored event of the reader (a data-access request), oldest stored first."""

    user: str
    events: list[ReaderEventOut]
    next_after: int | None = Field(description="Pass as `after` for the next page (None: last).")


class ReaderEventsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    after: int = Field(0, ge=0, le=2**63 - 1, description="Only events with a larger id.")
    limit: int = Field(1_000, ge=1, le=10_000)


class ReaderErased(_Out):
    user: str
    erased: int = Field(description="Events deleted (0: none were stored; erasing is idempotent).")
