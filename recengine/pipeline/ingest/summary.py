"""What an ingest reports: counts per outcome, the rejected records (the first
:data:`MAX_REJECTIONS_KEPT`, with their line numbers and reasons) and the records stored with
fields left out (``ingest.extra_fields = "report"``; the first as many, with those fields)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_REJECTIONS_KEPT = 1_000


@dataclass(frozen=True)
class Rejection:
    line: int
    id: str | None
    reason: str


@dataclass(frozen=True)
class LeftOut:
    """A record stored without some of its fields (not article fields)."""

    line: int
    id: str
    fields: tuple[str, ...]


@dataclass
class IngestSummary:
    """Counts of one ingest. ``read`` = inserted + updated + unchanged + superseded + rejected."""

    read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    features_pending: int = 0
    changed_ids: list[int] = field(default_factory=list)
    ignored: int = 0  # records read with fields left out (``ingest.extra_fields = "report"``)
    ignored_fields: list[LeftOut] = field(default_factory=list)

    def reject(self, line: int, record_id: str | None, reason: str) -> None:
        self.rejected += 1
        if len(self.rejections) < MAX_REJECTIONS_KEPT:
            self.rejections.append(Rejection(line, record_id, reason))

    def ignore(self, line: int, record_id: str, fields: tuple[str, ...]) -> None:
        self.ignored += 1
        if len(self.ignored_fields) < MAX_REJECTIONS_KEPT:
            self.ignored_fields.append(LeftOut(line, record_id, fields))

    def as_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "inserted": self.inserted,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "superseded": self.superseded,
            "rejected": self.rejected,
            "features_pending": self.features_pending,
            "rejections": [r.__dict__ for r in self.rejections],
            "ignored": self.ignored,
            "ignored_fields": [
                {"line": r.line, "id": r.id, "fields": list(r.fields)} for r in self.ignored_fields
            ],
        }
