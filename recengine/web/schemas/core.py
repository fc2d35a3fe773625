"""Pydantic models of the HTTP contract: they validate requests and generate ``/openapi.json``.

One set of models does both (through spectree), so the published document can never drift from
what the service accepts. Limits that are settings (batch sizes, ``k``, ``offset``) are part of
the models: :func:`build_models` makes the request models of one deployment, so its
``/openapi.json`` states its own limits (``maxItems``, ``maximum``).

The article record is :class:`recengine.pipeline.ingest.records.ArticleRecord`, the same model that
validates JSON Lines files: one record format for files and HTTP.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    RootModel,
    Tag,
    TypeAdapter,
    WithJsonSchema,
    model_validator,
)

from recengine.config import Settings
from recengine.pipeline.ingest.record_schema import ID_PATTERN
from recengine.pipeline.ingest.records import ArticleRecord, limited_record
from recengine.recommend.lists.params import DECIMAL, INTEGER
from recengine.times import TIME_SCHEMA, TIME_TEXT_SCHEMA, parse_time

# The caller's id of an article or a reader: 1-255 characters, not all blank, no control
# characters (the string form of the record's id).
ExternalId = Annotated[str, Field(min_length=1, max_length=255, pattern=ID_PATTERN)]


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    return text


# Free text that is stored (an override's reason, its author): no NUL. PostgreSQL cannot store
# NUL in text and SQLite can; both refuse it, as the article record and ids do.
StoredText = Annotated[
    str, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": r"^[^\x00]*$"})
]


def _ascii_number(pattern: re.Pattern[str], what: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, str) and not pattern.fullmatch(value):
            raise ValueError(f"must be {what} written in ASCII digits (0-9)")
        return value

    return check


# Numbers in a query string: ASCII digits only, as in paths (pydantic alone also takes
# " 3", "3.0" and "1_000" for an integer).
QueryInt = Annotated[int, BeforeValidator(_ascii_number(INTEGER, "an integer"))]
_ASCII_DECIMAL = BeforeValidator(_ascii_number(DECIMAL, "a number"))

# A stored row's id (a signed 64-bit key).
RowId = Annotated[int, Field(ge=1, le=2**63 - 1)]

# Times by the one rule of ``recengine.times``, so HTTP, the CLI and Python accept the same
# values. In a body: parsed here (a time without an offset stays naive; the use case reads it in
# ``ingest.naive_timezone``). In a query string: passed on as text to the use case, which parses.
TimeValue = Annotated[
    datetime | None, BeforeValidator(lambda v: parse_time(v, None)), WithJsonSchema(TIME_SCHEMA)
]
TimeText = Annotated[str | None, WithJsonSchema(TIME_TEXT_SCHEMA)]

# Path parameters, by name: validated with these and published with their JSON schema.
PATH_PARAMETERS: dict[str, TypeAdapter[Any]] = {
    "article_id": TypeAdapter(ExternalId),
    "user": TypeAdapter(ExternalId),
    "override_id": TypeAdapter(RowId),
}


def _shape(value: Any) -> str:
    """Discriminates "one object" from "a batch" so errors name only the shape that was sent."""
    return "batch" if isinstance(value, list) else "one"


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors -----------------------------------------------------------------------------------


class ErrorDetail(_Out):
    code: str = Field(description="Stable machine-readable name, e.g. not_found, invalid_request.")
    message: str = Field(description="What went wrong, for a person.")


class ErrorBody(_Out):
    """Every error: ``{"error": {"code": "...", "message": "..."}}``."""

    error: ErrorDetail


# -- articles ---------------------------------------------------------------------------------


class ArticleOut(_Out):
    """A stored article: the record as sent, plus when it was stored."""

    id: str
    title: str
    content: str
    url: str | None
    tags: list[str]
    category: str | None
    author: str | None
    published_at: datetime | None
    image: str | None = Field(None, description="The record's image, as given (null: none).")
    summary: str | None = Field(None, description="The record's summary, as given (null: none).")
    created_at: datetime
    updated_at: datetime


class ArticleBrief(_Out):
    """A stored article in a listing (no text: ``GET /api/v1/articles/<id>`` has it)."""

    id: str
    title: str
    url: str | None
    category: str | None
    published_at: datetime | None
    updated_at: datetime


class ArticlesOut(_Out):
    articles: list[ArticleBrief] = Field(description="Live articles in storage order.")
    next_after: int | None = Field(description="Pass as `after` for the next page (None: last).")


class ArticlesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    after: int = Field(
        0, ge=0, le=2**63 - 1, description="The cursor: next_after of the page before."
    )
    limit: int = Field(100, ge=1, le=1_000, description="Articles per page.")


class UpsertResult(_Out):
    """What one POST did. ``read = inserted + updated + unchanged + superseded``."""

    read: int
    inserted: int
    updated: int
    unchanged: int
    superseded: int = Field(description="Records overridden by a later record of the same id.")
    features_pending: int = Field(
        description="Articles stored without features because no IDF model exists yet."
    )
    ids: list[str] = Field(description="Ids of the articles inserted or updated.")
    ignored_fields: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per article id, the fields left out of its record (with ingest.extra_fields "
        '= "report"; by default a record with a field that is not an article field is refused).',
    )


class Deleted(_Out):
    id: str
    deleted: Literal[True] = True


# -- related, duplicates, feed ----------------------------------------------------------------


class RelatedItem(_Out):
    id: str
    title: str
    url: str | None
    score: float = Field(
        description="The ranking's score, 0..1 (the list is in its order). In a related list: "
        "(1 - w) x cosine of the TF-IDF vectors + w x cosine of the dense (LSA) vectors, "
        "w = related.dense_weight (the TF-IDF cosine alone when w = 0 or the model has no "
        "dense part); in an A/B test the variant may add category and tag parts. In a feed: "
        "the cosine to the reader's interest the item was found for (0 for a fresh article). "
        "Times reasons.freshness when related.half_life_days is set; 0 for a fallback item. "
        "With related.diversity the first items are in diversified (MMR) order."
    )
    reasons: dict[str, Any] = Field(
        description="Why it was chosen: shared_terms (each term's share of the score), dense "
        "(the dense part's share), same_category, shared_tags; pinned: an editor's pin; "
        "freshness: the factor its age multiplied the score by; fallback (newest or "
        "most_clicked): it fills a list shorter than related.min_items; in feeds "
        "because_you_read, interest_share, or fresh (a reader with no history)."
    )
    # What a card shows (additive: a client that reads none of these is unaffected).
    image: str | None = Field(
        None,
        description="A thumbnail: the record's image when a page may load it, else the first "
        "http(s), protocol-relative or site-relative image of its content; null: none. Stored "
        "as found: apply the url rule of README (http(s) only) before showing it.",
    )
    summary: str | None = Field(
        None,
        description="Plain text (never markup): the record's summary, else its text cut at a "
        "sentence end within ingest.summary_chars characters; null before it was derived.",
    )
    published_at: datetime | None = Field(None, description="When it was published (UTC).")
    category: str | None = Field(None, description="Its category.")


class SuppressedItem(_Out):
    id: str
    duplicate_of: str = Field(description="The article it duplicates.")
    distance: int = Field(description="Hamming distance of the 64-bit simhash fingerprints.")
    rule: Literal["resemblance", "containment", "cosine", "editor", "cluster"] = Field(
        description="The rule that made the two the same article: the texts' resemblance or "
        "containment, as verified when the cluster was formed (or, for two articles outside "
        "one cluster with similar vectors, when the list was made); the stored vectors' cosine "
        "(within the radius, outside clusters); an editor's override; or cluster "
        "membership (a row stored before rules were kept)."
    )
    score: float | None = Field(
        description="That rule's figure (resemblance, containment or cosine, 0..1); null "
        "for an editor's override given at list time and for cluster rows without a rule."
    )
    via: str | None = Field(
        description="The cluster's canonical article when neither of the two is it: rule "
        "and score are then those of this article's join to the canonical; null otherwise."
    )


class Floor(_Out):
    min_score: float = Field(description="The relevance floor applied (0 = none).")
    dropped: int = Field(description="Places of this page left empty because of the floor.")


class RelatedOut(_Out):
    article: str
    items: list[RelatedItem]
    suppressed: list[SuppressedItem]
    floor: Floor = Field(description="The relevance floor: a list can be shorter than k.")
    variant: str = Field(
        description='The A/B ranking variant of this list ("default" with no test): report '
        "it with the list's feedback."
    )


class Duplicate(_Out):
    """Another article of the cluster, judged against the asked-for article."""

    id: str
    canonical: bool = Field(description="Whether it is the cluster's canonical article.")
    distance: int = Field(description="Hamming distance of its fingerprint to the article's.")
    resemblance: float = Field(description="Jaccard index of the two texts' character shingles.")
    cosine: float = Field(description="Cosine of the two TF-IDF vectors.")
    shared_terms: list[str] = Field(description="The terms contributing most to that cosine.")
    distance_to_canonical: int = Field(description="As stored in the cluster (0: canonical).")
    joined_by: str = Field(
        description="The rule that joined it to its canonical when its cluster was formed: "
        '"resemblance" or "containment" ("" for the canonical itself).'
    )
    joined_score: float = Field(description="That rule's figure when it joined (0 for none).")
    rule: str = Field(
        description='The rule of the criterion that matched: "resemblance" or "containment" '
        '("" when the pair no longer meets it).'
    )
    containment: float = Field(
        description="Share of the smaller text's shingles inside the larger text."
    )
    coverage: float = Field(description="Share of the larger text's shingles the smaller covers.")


class DuplicatesOut(_Out):
    """The article's near-duplicate cluster (the body of ``recengine duplicates --id``)."""

    article: str
    canonical: str = Field(
        description="The cluster's canonical article (the article itself when it has none)."
    )
    duplicates: list[Duplicate] = Field(description="The other members, canonical first.")


class FeedOut(_Out):
    """A reader's feed: items as in related lists; what was left out as a near-duplicate."""

    user: str
    items: list[RelatedItem]
    suppressed: list[SuppressedItem]


# -- reader events ----------------------------------------------------------------------------


class EventIn(BaseModel):
    """One reader event: the reader read ``article`` at ``at`` (default: when it is received)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    article: ExternalId
    kind: Literal["read"] = "read"
    at: Annotated[TimeValue, Field(description="When (default: when it is received).")] = None


class EventsRecorded(_Out):
    user: str
    recorded: int


# -- health -----------------------------------------------------------------------------------


class DatabaseHealth(_Out):
    reachable: bool
    schema_current: Annotated[bool | None, Field(description="Its schema is this code's.")] = None
    seq: Annotated[int | None, Field(description="Change sequence number of the last write.")] = (
        None
    )
    model_version: Annotated[int | None, Field(description="Active IDF model version.")] = None
    error: str | None = None


class HealthOut(_Out):
    """The service's health: the same from every worker for the same database state."""

    status: Literal["ok", "degraded", "unavailable"] = Field(
        description="degraded: serving, with something missing (see problems); unavailable: "
        "the database is down or its schema is not this code's (503)."
    )
    version: str = Field(description="recengine's version.")
    database: DatabaseHealth
    problems: list[str] = Field(description="What makes the status not ok, for a person.")


class LiveOut(_Out):
    """Liveness: the process answers HTTP (nothing else is looked at)."""

    status: Literal["ok"]
    version: str


# -- request models that depend on the deployment's limits ------------------------------------


Label = Annotated[str, Field(min_length=1, max_length=255)]


# Query parameters that take several values (of every operation): repeated, or separated by
# literal commas (``web.api.paths.query_pairs``). tests/web/api/test_query_strings.py checks that it
# names every list of every query model.
LIST_PARAMETERS = frozenset({"exclude", "categories", "category", "tags", "tag", "kind"})
_LIST_HELP = " Repeat the parameter, or separate values with commas (a comma in a value: %2C)."
FILTER_HELP = {
    "exclude": "Article ids to leave out." + _LIST_HELP,
    "categories": "Only these categories (also: category)." + _LIST_HELP,
    "tags": "Only articles with one of these (also: tag)." + _LIST_HELP,
}


def _declare_aliases(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Publish each other spelling of a parameter (``ALIASES``) with its parameter's schema."""
    properties = schema.get("properties", {})
    for alias, name in getattr(model, "ALIASES", {}).items():
        if name in properties:
            found = dict(properties[name])
            found["description"] = f"The command line's spelling of {name}" + (
                ", added to its values." if name in LIST_PARAMETERS else " (give one, not both)."
            )
            found.pop("title", None)
            properties[alias] = found


class Filters(BaseModel):
    """Restrictions of related lists and feeds (repeat a list parameter for several values).

    The command line's spellings are accepted too (``tag``, ``category``, ``after``,
    ``before``, published as parameters of their own); any other name is refused
    (``routing`` names it), never silently ignored.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_declare_aliases)
    ALIASES: ClassVar[dict[str, str]] = {
        "tag": "tags",
        "category": "categories",
        "after": "published_after",
        "before": "published_before",
    }

    exclude: list[ExternalId] = Field(default_factory=list, description=FILTER_HELP["exclude"])
    categories: list[Label] = Field(default_factory=list, description=FILTER_HELP["categories"])
    tags: list[Label] = Field(default_factory=list, description=FILTER_HELP["tags"])
    published_after: TimeText = Field(None, description="Published at or after (also: after).")
    published_before: TimeText = Field(None, description="Published before (also: before).")
    min_score: Annotated[float, Field(ge=0.0, le=1.0), _ASCII_DECIMAL] | None = Field(
        None,
        description="Smallest score shown (default the server's related.min_score for related"
        " lists, feed.min_score for feeds; 0 = no floor).",
    )

    @model_validator(mode="before")
    @classmethod
    def _spellings(cls, data: Any) -> Any:
        """``?tag=a&tags=b`` is ``tags=[a, b]``; ``?after=`` is ``published_after``."""
        if not isinstance(data, dict) or not cls.ALIASES.keys() & data.keys():
            return data
        data = dict(data)
        for alias, name in cls.ALIASES.items():
            if alias not in data:
                continue
            value = data.pop(alias)
            if name in ("tags", "categories"):
                data[name] = [*_listed(data.get(name)), *_listed(value)]
            elif name in data:
                raise ValueError(f"give {name} or {alias}, not both")
            else:
                data[name] = value
        return data

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword filters of ``RelatedArticles.related`` and ``ReaderFeeds.feed``."""
        return self.model_dump(exclude={"k", "offset", "reader", "session"})


class RelatedQuery(Filters):
    """Query of ``GET /api/v1/articles/<id>/related`` (limits from settings, see build_models)."""

    k: QueryInt = 10
    offset: QueryInt = 0
    reader: ExternalId | None = Field(
        None, description="The reader's id, when the page knows one: splits A/B traffic."
    )
    session: ExternalId | None = Field(
        None,
        description="A session id (the widget's per-tab one): splits A/B traffic when no "
        "reader id is given.",
    )


class FeedQuery(Filters):
    k: QueryInt = 20
    offset: QueryInt = 0


class ArticleUpsert(RootModel[Any]):
    """One article record, or a batch (a JSON array) stored atomically."""

    def records(self) -> list[ArticleRecord]:
        root = self.root
        return list(root) if isinstance(root, list) else [root]


class EventsIn(RootModel[Any]):
    """One event, or a batch (a JSON array) stored atomically."""

    def events(self) -> list[EventIn]:
        root = self.root
        return list(root) if isinstance(root, list) else [root]


def batch_size(limit: int, setting: str, noun: str) -> BeforeValidator:
    """Refuse a JSON array of more than ``limit`` items, naming the setting, before any item
    is validated (pydantic's own check says "List should have at most 500 items after
    validation", once it has validated all of them)."""

    def check(value: Any) -> Any:
        if isinstance(value, list) and len(value) > limit:
            raise ValueError(
                f"a batch holds at most {limit} {noun} ({setting}), got {len(value)}: "
                "send it in several requests"
            )
        return value

    return BeforeValidator(check)


def _listed(value: Any) -> list[Any]:
    return [] if value is None else list(value) if isinstance(value, list) else [value]


def query_names(model: type[BaseModel]) -> set[str]:
    """The query parameters a model takes: its fields and their accepted other spellings."""
    aliases: dict[str, str] = getattr(model, "ALIASES", {})
    return set(model.model_fields) | set(aliases)


@dataclass(frozen=True)
class Models:
    """The request models of one deployment (limits taken from its settings)."""

    article_upsert: type[ArticleUpsert]
    events_in: type[EventsIn]
    related_query: type[RelatedQuery]
    feed_query: type[FeedQuery]


# The settings sections build_models reads, and the models built per their values: a process
# that builds several apps (the tests build one per test) builds each set of classes once,
# and spectree's schemas of them are generated once too (``web.api.routing``).
_READS = {"web", "related", "feed", "ingest"}
_BUILT: dict[str, Models] = {}


def build_models(settings: Settings) -> Models:
    """Request models with this deployment's limits: they validate and they are published."""
    key = settings.model_dump_json(include=_READS)
    if key not in _BUILT:
        if len(_BUILT) >= 32:
            _BUILT.clear()
        _BUILT[key] = _build_models(settings)
    return _BUILT[key]


def _build_models(settings: Settings) -> Models:
    web, related, feed = settings.web, settings.related, settings.feed
    values = related.max_filter_values

    def listed(name: str) -> Any:
        return Field(default_factory=list, max_length=values, description=FILTER_HELP[name])

    # refuses unknown fields, or (ingest.extra_fields = "report") leaves them out, listed; and
    # a record over ingest.max_record_bytes, as a file's is (web.max_body_bytes bounds the body)
    record = limited_record(settings.ingest.extra_fields, settings.ingest.max_record_bytes)

    class ArticleUpsertModel(ArticleUpsert):
        root: Annotated[
            Annotated[record, Tag("one")]  # type: ignore[valid-type]
            | Annotated[
                list[record],  # type: ignore[valid-type]
                Field(min_length=1, max_length=web.max_batch),
                batch_size(web.max_batch, "web.max_batch", "articles"),
                Tag("batch"),
            ],
            Discriminator(_shape),
        ]

    class EventsInModel(EventsIn):
        root: Annotated[
            Annotated[EventIn, Tag("one")]
            | Annotated[
                list[EventIn],
                Field(min_length=1, max_length=web.max_events),
                batch_size(web.max_events, "web.max_events", "events"),
                Tag("batch"),
            ],
            Discriminator(_shape),
        ]

    class RelatedQueryModel(RelatedQuery):
        k: QueryInt = Field(related.default_k, ge=1, le=related.max_k, description="Items wanted.")
        offset: QueryInt = Field(
            0, ge=0, le=related.max_offset, description="Items to skip (paging)."
        )
        exclude: list[ExternalId] = listed("exclude")
        categories: list[Label] = listed("categories")
        tags: list[Label] = listed("tags")

    class FeedQueryModel(FeedQuery):
        k: QueryInt = Field(feed.default_k, ge=1, le=feed.max_k, description="Items wanted.")
        offset: QueryInt = Field(0, ge=0, le=feed.max_offset, description="Items to skip (paging).")
        exclude: list[ExternalId] = listed("exclude")
        categories: list[Label] = listed("categories")
        tags: list[Label] = listed("tags")

    for cls, name in (
        (ArticleUpsertModel, "ArticleUpsert"),
        (EventsInModel, "EventsIn"),
        (RelatedQueryModel, "RelatedQuery"),
        (FeedQueryModel, "FeedQuery"),
    ):
        cls.__name__ = cls.__qualname__ = name
    return Models(ArticleUpsertModel, EventsInModel, RelatedQueryModel, FeedQueryModel)
