"""Adding and removing overrides in tests (through the use case, in a transaction of its own)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.recommend.overrides import NewOverride, Overrides


def add(
    factory: sessionmaker[Session],
    kind: str,
    article: str,
    other: str | None = None,
    *,
    overrides: Overrides | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Add one override; returns the use case's answer (``override``, ``created``...)."""
    new = NewOverride.parse(kind, article, other, by=fields.pop("by", "test"), **fields)
    return (overrides or Overrides(factory)).add(new)


def remove(
    factory: sessionmaker[Session], override_id: int, *, overrides: Overrides | None = None
) -> dict[str, Any]:
    return (overrides or Overrides(factory)).remove(override_id)


def listing(factory: sessionmaker[Session], **kw: Any) -> list[dict[str, Any]]:
    with factory() as session:
        return Overrides(factory).listing(session=session, **kw)
