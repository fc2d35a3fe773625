"""Models of the editorial overrides and reader feedback endpoints (validation and OpenAPI).

Kept apart from ``web.schemas.core`` (articles, lists, health) but built the same way: request
models with this deployment's limits come from :func:`build_editorial_models`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, RootModel, Tag

from recengine.config import Settings
from recengine.web.schemas.core import ExternalId, QueryInt, StoredText, batch_size

OverrideKind = Literal["not_duplicate", "same_article", "canonical", "pin", "block", "exclude"]
KIND_HELP = (
    "not_duplicate: the pair (or, without other, the article against all) is never a "
    "near-duplicate; same_article: the pair is one article (one cluster); canonical: the "
    "article is its cluster's canonical copy; pin: other is shown first in article's related "
    "list (by position); block: the pair is never shown together; exclude: the article is "
    "never shown in a related list or feed (it is not deleted)."
)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _OverrideFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    article: ExternalId
    reason: StoredText = Field("", max_length=2_000, description="Why (shown to other editors).")
    by: StoredText = Field("api", min_length=1, max_length=255, description="Who decided.")


class ArticleOverride(_OverrideFields):
    """canonical: the article is its cluster's canonical copy; exclude: never shown in a
    related list or feed (it is not deleted)."""

    kind: Literal["canonical", "exclude"]


class NotDuplicateOverride(_OverrideFields):
    """The pair is never a near-duplicate; without ``other``, the article is nobody's."""

    kind: Literal["not_duplicate"]
    other: ExternalId | None = Field(None, description="The pair's other article.")


class PairOverride(_OverrideFields):
    """same_article: the pair is one article (one cluster); block: never shown together."""

    kind: Literal["same_article", "block"]
    other: ExternalId = Field(description="The pair's other article (not the article itself).")


class PinOverride(_OverrideFields):
    """``other`` is shown first in ``article``'s related list, at ``position`` among its pins."""

    kind: Literal["pin"]
    other: ExternalId = Field(description="The pinned article (not the article itself).")
    position: int | None = Field(
        None, ge=0, description="Place among the article's pins (0 = first; default last)."
    )


class OverrideIn(RootModel[Any]):
    """An editorial decision to store (its fields depend on its ``kind``)."""

    root: Annotated[
        ArticleOverride | NotDuplicateOverride | PairOverride | PinOverride,
        Field(discriminator="kind", description=KIND_HELP),
    ]

    def parts(self) -> tuple[str, str, str | None, int | None, str, str]:
        """``(kind, article, other, position, reason, by)``."""
        r = self.root
        return (
            r.kind,
            r.article,
            getattr(r, "other", None),
            getattr(r, "position", None),
            r.reason,
            r.by,
        )


class OverrideOut(_Out):
    id: int
    kind: OverrideKind
    article: str
    other: str | None
    article_title: str = Field(description="The article's title (editors read titles, not ids).")
    other_title: str | None = Field(description="The other article's title (None: no other).")
    position: int | None
    reason: str
    by: str
    at: str = Field(description="When it was stored (ISO 8601, UTC).")
    active: bool = Field(description="False while it names a deleted article (it is kept).")
    deleted: list[str] = Field(description="The deleted articles it names.")


class OverrideAdded(_Out):
    override: OverrideOut
    created: bool = Field(description="False: the same override existed (a pin may have moved).")
    replaced: list[int] = Field(description="Ids of the overrides this one replaced.")


class OverrideRemoved(_Out):
    override: OverrideOut
    removed: Literal[True] = True


class OverridesOut(_Out):
    overrides: list[OverrideOut]
    next_after: int | None = Field(description="Pass as `after` for the next page (None: last).")


class OverridesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: list[OverrideKind] = Field(
        default_factory=list,
        description="Only these kinds (repeat the parameter, or separate kinds with commas).",
    )
    article: ExternalId | None = Field(None, description="Only overrides naming this article.")
    after: QueryInt = Field(0, ge=0, le=2**63 - 1, description="Only overrides with a larger id.")
    limit: QueryInt = Field(100, ge=1, le=1_000)


class FeedbackEvent(BaseModel):
    """What a reader did with a related list: saw it (one impression per slot shown) or
    clicked the item in ``slot``. The list's ``variant`` is the one its body named."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["impression", "click"]
    article: ExternalId = Field(description="The article whose related list it was.")
    variant: str = Field(min_length=1, max_length=64)
    slot: int = Field(ge=0, description="0-based position of the item in the list.")
    item: ExternalId | None = Field(
        None,
        description="The article shown (or clicked) in that slot: counted for it in that list "
        "too, which ranks lists by their readers' clicks (related.engagement_weight). "
        "Optional: without it only the list's slot counters count the event.",
    )


_FeedbackEvent = FeedbackEvent


class FeedbackIn(RootModel[Any]):
    """One event, or a batch (a JSON array). Sent as ``text/plain`` by ``navigator.sendBeacon``
    (a cross-origin beacon cannot send ``application/json``): the body is JSON either way."""

    def events(self) -> list[_FeedbackEvent]:
        root = self.root
        return list(root) if isinstance(root, list) else [root]


class FeedbackCounted(_Out):
    counted: int = Field(description="Events committed to the daily counters.")


@dataclass(frozen=True)
class EditorialModels:
    feedback_in: type[FeedbackIn]


def build_editorial_models(settings: Settings, variants: Sequence[str]) -> EditorialModels:
    """The feedback body of this deployment: its variant names, slots below ``related.max_k``
    and at most ``feedback.max_events`` events."""
    return _editorial_models(settings.feedback.max_events, settings.related.max_k, tuple(variants))


@lru_cache(maxsize=32)
def _editorial_models(limit: int, slots: int, variants: tuple[str, ...]) -> EditorialModels:
    """Built once per set of limits and names (a process that builds several apps, as the
    tests do, builds the classes once: ``build_models``)."""
    names: Any = Literal[variants]

    class FeedbackEvent(_FeedbackEvent):  # named as published (and in error messages)
        variant: names = Field(description="The variant the list's body named.")
        slot: int = Field(ge=0, lt=slots, description="0-based position of the item in the list.")

    class FeedbackInModel(FeedbackIn):
        root: Annotated[
            Annotated[FeedbackEvent, Tag("one")]
            | Annotated[
                list[FeedbackEvent],
                Field(min_length=1, max_length=limit),
                batch_size(limit, "feedback.max_events", "events"),
                Tag("batch"),
            ],
            Discriminator(lambda v: "batch" if isinstance(v, list) else "one"),
        ]

    FeedbackInModel.__name__ = FeedbackInModel.__qualname__ = "FeedbackIn"
    return EditorialModels(FeedbackInModel)
