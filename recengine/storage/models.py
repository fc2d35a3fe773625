"""SQLAlchemy 2.0 typed models: the schema ``migrations/`` creates.

Tables:

* ``articles``: what callers sent, keyed internally by an integer and externally by their id;
  soft-deleted (``deleted_at``) so that indexes following ``seq`` see deletions too.
* ``article_features``: per article and IDF model version, the TF-IDF vector and fingerprint.
  Keyed by version so that a reindex can write a whole new version while readers use the
  active one, then switch in one transaction.
* ``idf_models``: fitted IDF models (document frequencies), versioned.
* ``model_parts``: what else a reindex fits for a version (the LSA model of the dense part of
  related lists, ``name = "lsa"``), one row per (version, name), gone with the version.
* ``engine_state``: one row: the change sequence counter, the active model version and the
  database's identity (a random id made by the migration; index files and reindex jobs name
  it, so a file is never used with another database whatever the URL looks like). Every
  write transaction increments ``seq`` first (``UPDATE ... RETURNING``): that row lock orders
  writers, so sequence numbers become visible in commit order and a reader that has seen
  ``seq = s`` has seen every change up to ``s`` (no gaps for an index catching up).
* ``cluster_members``: near-duplicate clusters (article -> its canonical article), per model
  version like the features: a reindex writes its version's clusters before the switch.
* ``reader_events``: what readers read, for feeds; each event once (reader, time, article, kind).
* ``overrides``: editors' decisions that every computation honours (``storage.rows.overrides``):
  keyed by internal article ids, so they survive every reindex; soft deletion keeps an
  override's article row, so an override naming a deleted article is kept (and reported).
  Override ids are never reused (SQLite ``AUTOINCREMENT``, PostgreSQL's sequence): editors and
  scripts act on them (remove, paging cursors).
* ``feedback_counts``: what readers did with related lists, as daily counters per list
  article, variant and slot (``storage.rows.feedback``): rows are bounded by days x live articles x
  variants x slots, whatever the traffic.
* ``engagement_counts``: impressions, clicks and examinations (impressions weighed by the
  chance their slot was looked at) of an item in a list article's list, per day
  (``storage.rows.engagement``): at most ``feedback.max_items_per_list`` items per list
  article a day (per writing process), kept ``signals.engagement_days``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Date,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from recengine.storage.types import UInt64, UTCDateTime

# SQLite only auto-increments an "INTEGER PRIMARY KEY"; PostgreSQL gets a 64-bit key.
BigIntKey = BigInteger().with_variant(Integer(), "sqlite")
JsonList = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {datetime: UTCDateTime(), str: Text()}


class Article(Base):
    __tablename__ = "articles"

    id: Mapped[int] = mapped_column(BigIntKey, primary_key=True, autoincrement=True)
    external_id: Mapped[str] = mapped_column(String(255), unique=True)
    title: Mapped[str] = mapped_column(default="")
    content: Mapped[str] = mapped_column(default="")
    url: Mapped[str | None]
    tags: Mapped[list[str]] = mapped_column(JsonList, default=list)
    category: Mapped[str | None] = mapped_column(String(255))
    author: Mapped[str | None] = mapped_column(String(255))
    published_at: Mapped[datetime | None]
    image: Mapped[str | None]  # as the record gave them (None: not given)
    summary: Mapped[str | None]
    # What a list's card shows (pipeline.cards): the image a page may load (the given
    # one, else the content's first) and the summary (the given one, else cut from the text),
    # derived by the rule ``card_rule`` names; all None until derived (rows stored before
    # migration 0010: the next reindex derives them).
    card_image: Mapped[str | None]
    card_summary: Mapped[str | None]
    card_rule: Mapped[str | None] = mapped_column(String(32))
    # sha256 of the record as received: an identical re-ingest is "unchanged", nothing written.
    record_hash: Mapped[str] = mapped_column(String(64))
    # sha256 of the cleaned text: exact duplicates, and whether features must be recomputed.
    text_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    deleted_at: Mapped[datetime | None]
    seq: Mapped[int] = mapped_column(BigInteger, index=True)


class ArticleFeatures(Base):
    __tablename__ = "article_features"

    article_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True
    )
    model_version: Mapped[int] = mapped_column(
        ForeignKey("idf_models.version", ondelete="CASCADE"), primary_key=True, index=True
    )
    fingerprint: Mapped[int] = mapped_column(UInt64())
    # features.tfidf.SparseVector.to_bytes(): term hashes, weights, terms.
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    n_tokens: Mapped[int] = mapped_column(Integer)
    # features.encoder.to_bytes(): the sentence encoder's vector of the title and lead (float16),
    # when the version's dense part has the encoder (dense.encoder = "use"); else NULL.
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class IdfModelRow(Base):
    __tablename__ = "idf_models"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime]
    n_docs: Mapped[int] = mapped_column(BigInteger)
    n_terms: Mapped[int] = mapped_column(BigInteger)
    # The settings the model and its vectors were computed with (tokenizer, features).
    params: Mapped[dict[str, Any]] = mapped_column(JSON().with_variant(JSONB(), "postgresql"))
    # features.tfidf.IdfModel.to_bytes()
    payload: Mapped[bytes] = mapped_column(LargeBinary)


class ModelPart(Base):
    __tablename__ = "model_parts"

    model_version: Mapped[int] = mapped_column(
        ForeignKey("idf_models.version", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime]
    # How it was fitted (sample size, dimensions...), for reports.
    params: Mapped[dict[str, Any]] = mapped_column(JSON().with_variant(JSONB(), "postgresql"))
    payload: Mapped[bytes] = mapped_column(LargeBinary)


class EngineState(Base):
    __tablename__ = "engine_state"
    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    active_model_version: Mapped[int | None] = mapped_column(
        ForeignKey("idf_models.version", ondelete="SET NULL")
    )
    database_id: Mapped[str] = mapped_column(String(32))


class ClusterMember(Base):
    __tablename__ = "cluster_members"
    __table_args__ = (
        Index("ix_cluster_members_version_canonical", "model_version", "canonical_id"),
    )

    model_version: Mapped[int] = mapped_column(
        ForeignKey("idf_models.version", ondelete="CASCADE"), primary_key=True
    )
    article_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True
    )
    canonical_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE")
    )
    distance: Mapped[int] = mapped_column(Integer)
    score: Mapped[float | None] = mapped_column(Float)
    # The rule of the criterion that joined the member to its canonical (``score`` is its
    # figure): "resemblance" or "containment" (features.neardup), "editor" when an editor's
    # cluster override put it there (pipeline.clusters.constraints); None in rows written before the
    # rule was stored (migration 0005).
    rule: Mapped[str | None] = mapped_column(String(16))


class ReaderEvent(Base):
    __tablename__ = "reader_events"
    __table_args__ = (
        # An event is stored once (a retried request adds nothing; storage.rows.events.add_events);
        # its first columns also serve a reader's events by time.
        Index("uq_reader_events_once", "user_id", "at", "article_id", "kind", unique=True),
        # The retention's deletions (events.retention_days) find the oldest events by time.
        Index("ix_reader_events_at", "at"),
    )

    id: Mapped[int] = mapped_column(BigIntKey, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(255))
    article_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(32), default="read")
    at: Mapped[datetime]


class Override(Base):
    __tablename__ = "overrides"
    __table_args__ = (
        Index("ix_overrides_article_kind", "article_id", "kind"),
        Index("ix_overrides_other_kind", "other_id", "kind"),
        # Ids are never reused (editors and scripts act on them): SQLite's AUTOINCREMENT
        # remembers the largest id handed out; PostgreSQL's sequence never goes back.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigIntKey, primary_key=True, autoincrement=True)
    # storage.rows.overrides.KINDS
    kind: Mapped[str] = mapped_column(String(32))
    article_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE")
    )
    # The pair's other article (pairs of symmetric kinds are stored smaller id first); None
    # for kinds about one article.
    other_id: Mapped[int | None] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE")
    )
    # Pins: the editor's order (smaller first).
    position: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(default="")
    created_by: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime]


class FeedbackCount(Base):
    __tablename__ = "feedback_counts"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    article_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    variant: Mapped[str] = mapped_column(String(64), primary_key=True)
    slot: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    impressions: Mapped[int] = mapped_column(BigInteger, default=0)
    clicks: Mapped[int] = mapped_column(BigInteger, default=0)


class EngagementCount(Base):
    __tablename__ = "engagement_counts"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    source_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    item_id: Mapped[int] = mapped_column(
        BigIntKey, ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    impressions: Mapped[int] = mapped_column(BigInteger, default=0)
    clicks: Mapped[int] = mapped_column(BigInteger, default=0)
    # sum over the impressions of their slot's examination probability (pipeline.feedback)
    examined: Mapped[float] = mapped_column(Float, default=0.0)
