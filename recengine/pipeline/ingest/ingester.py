"""Ingest: validated records -> upserted articles with their features, one transaction per batch.

For each batch:

1. validate every record (bad ones are rejected with their line number; the rest go on);
2. read what is stored for the batch's ids (a short read-only transaction);
3. outside any transaction, clean and tokenize the new and changed texts (the expensive part);
4. one write transaction: take the next change sequence number (this orders writers), read the
   rows again under that lock and redo step 3 for any a concurrent writer changed meanwhile,
   then insert / update articles and their features for the active IDF model, and update the
   near-duplicate clusters the batch touches (``pipeline.clusters.upkeep``). A batch commits whole
   or not at all, so a crash leaves every batch (with its clusters) either fully in or fully out.

Upsert by the caller's id: an identical record changes nothing ("unchanged"); a changed record is
rewritten, and its features recomputed only when its text changed; a deleted article that is
ingested again comes back ("inserted"). Within one batch, the last record of an id wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import InvalidRecord, NotFound
from recengine.features.counts import TermCounts
from recengine.jsontext import printable
from recengine.pipeline.cards import Card, card_of
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import (
    Analyzed,
    Featurizer,
    TextAnalysis,
    Words,
    model_params,
    text_hash,
)
from recengine.pipeline.ingest.active_model import ModelCache
from recengine.pipeline.ingest.readers import RawRecord
from recengine.pipeline.ingest.record_fields import field_name
from recengine.pipeline.ingest.records import ArticleRecord, parse_record
from recengine.pipeline.ingest.summary import IngestSummary as IngestSummary
from recengine.pipeline.ingest.summary import Rejection as Rejection
from recengine.pipeline.reindex.checkpoints import checkpoint
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.pipeline.reindex.versions import Progress, QuietProgress
from recengine.storage.db import transaction
from recengine.storage.rows.articles import (
    ExistingArticle,
    find_existing,
    insert_articles,
    soft_delete,
    update_articles,
)
from recengine.storage.rows.features import replace_features
from recengine.storage.state import begin_write, read_state


class Ingester:
    """Upserts batches of records. One per process; holds the tokenizer and the model cache.

    Args:
        factory: session factory of the database.
        featurizer: text -> features.
        dedup: near-duplicate cluster maintenance (built from the settings when omitted).
        pool: where batches of at least ``ingest.parallel_min_batch`` texts are tokenized;
            by default a pool of ``ingest.workers`` processes, started on first use (none when
            ``workers = 1``). Call :meth:`close` (or use ``with``) to stop one it started.
    """

    def __init__(
        self,
        factory: sessionmaker[Session],
        featurizer: Featurizer,
        dedup: Deduplicator | None = None,
        pool: AnalysisPool | None = None,
    ) -> None:
        self.factory = factory
        self.featurizer = featurizer
        self.settings = featurizer.settings
        self.models = ModelCache(model_params(self.settings))
        self.zone = ZoneInfo(self.settings.ingest.naive_timezone)
        self.extra_fields = self.settings.ingest.extra_fields
        self.dedup = dedup or Deduplicator(self.settings)
        self._own_pool = pool is None
        self.pool = pool or AnalysisPool(
            self.settings, workers=self.settings.ingest.workers, featurizer=featurizer
        )

    def __enter__(self) -> Ingester:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes this ingester started (if any)."""
        if self._own_pool:
            self.pool.close()

    def ingest_raw(
        self, raw: Iterable[RawRecord], progress: Progress | None = None
    ) -> IngestSummary:
        """Validate and upsert records read from a file, batch by batch.

        With a pool, batch n + 1 is validated, read and sent to the workers before batch n is
        written, so the analysis of one overlaps the write of the other (batches are still
        written in order, each in its own transaction).

        Args:
            progress: told of one phase, ``records``, then of each batch's records once the
                batch is committed (or rejected whole).
        """
        progress = progress or QuietProgress()
        progress.start("records", None)
        summary = IngestSummary()
        waiting: tuple[_Prepared | None, int] | None = None
        for batch in _batches(raw, self.settings.ingest.batch_size):
            prepared = self._prepare(self._validate(batch, summary), summary)
            if waiting is not None:
                self._commit_counted(*waiting, summary, progress)
            waiting = (prepared, len(batch))
        if waiting is not None:
            self._commit_counted(*waiting, summary, progress)
        return summary

    def _commit_counted(
        self, prepared: _Prepared | None, n: int, summary: IngestSummary, progress: Progress
    ) -> None:
        if prepared is not None:
            self._commit(prepared, summary)
        progress.update(n)

    def _validate(
        self, batch: list[RawRecord], summary: IngestSummary
    ) -> list[tuple[int, ArticleRecord]]:
        valid: list[tuple[int, ArticleRecord]] = []
        for item in batch:
            summary.read += 1
            if item.error is not None or item.data is None:
                summary.reject(item.line, None, item.error or "empty record")
                continue
            try:
                record = parse_record(item.data, self.zone, extra_fields=self.extra_fields)
            except InvalidRecord as exc:
                summary.reject(item.line, _id_of(item.data), str(exc))
                continue
            if record.ignored_fields:
                summary.ignore(item.line, record.id, record.ignored_fields)
            valid.append((item.line, record))
        return valid

    def ingest_records(
        self, records: Iterable[dict[str, Any]], progress: Progress | None = None
    ) -> IngestSummary:
        """Python API: records as dicts (the JSON record); positions count from 1."""
        raw = (RawRecord(n, data=r) for n, r in enumerate(records, 1))
        return self.ingest_raw(raw, progress)

    def upsert_atomic(self, records: list[ArticleRecord]) -> IngestSummary:
        """Upsert already validated records in one transaction (the HTTP API's batch)."""
        summary = IngestSummary(read=len(records))
        prepared = self._prepare(list(enumerate(records, 1)), summary)
        if prepared is not None:
            self._commit(prepared, summary)
        return summary

    def _prepare(
        self, valid: list[tuple[int, ArticleRecord]], summary: IngestSummary
    ) -> _Prepared | None:
        """Everything before the write: the batch's last record per id, what is stored for
        them, and (started, on the pool for a large batch) the analysis of the changed texts.
        """
        latest: dict[str, ArticleRecord] = {}
        for _, record in valid:
            if record.id in latest:
                summary.superseded += 1
            latest[record.id] = record
        if not latest:
            return None
        hashes = {rid: r.record_hash() for rid, r in latest.items()}
        with transaction(self.factory) as session:
            before = find_existing(session=session, external_ids=list(latest))
            version = read_state(session=session).active_model_version
            model = self.models.get(session=session, version=version)
        todo = [rid for rid in latest if _changed(before.get(rid), hashes[rid])]
        summary.unchanged += len(latest) - len(todo)
        if not todo:
            return None
        cards = {rid: self._card(latest[rid]) for rid in todo}  # outside the write lock
        items = [(latest[rid].title, latest[rid].content) for rid in todo]
        # Tokenizing is the expensive part: do it outside the write lock, and not at all while
        # there is no model to use the counts (the first reindex tokenizes everything anyway).
        if model is None:
            digests = [text_hash(self.featurizer.text(t, c)) for t, c in items]
            hashed = Analyzed(digests, TermCounts.empty_rows(len(todo)))
            return _Prepared(latest, hashes, lambda: _Counted(todo, hashed, counted=False), cards)
        self._use_words(model.words)
        if len(todo) < self.settings.ingest.parallel_min_batch:
            result = _ready(self.featurizer.analyze_texts(items))
        else:
            result = self.pool.analyze_async(items)

        def counted() -> _Counted:
            done = result()
            return _Counted(todo, self._hinted(items, done), words=done.words)

        return _Prepared(latest, hashes, counted, cards)

    def _card(self, record: ArticleRecord) -> Card:
        return card_of(
            content=record.content,
            url=record.url,
            image=record.image,
            summary=record.summary,
            summary_chars=self.settings.ingest.summary_chars,
        )

    def _use_words(self, words: Words) -> None:
        """Tokenize with the active model's words (``IdfModel.words``), here and on the pool."""
        self.featurizer.use_words(words)
        self.pool.use_words(words)

    def _hinted(self, items: list[tuple[str, str]], done: TextAnalysis) -> Analyzed:
        """The term counts of ``done``, what was computed beside them handed to the cluster
        upkeep (whose passage index and verification then need not clean these texts again)."""
        self.dedup.hint(items, done)
        return done.analyzed

    def _commit(self, prepared: _Prepared, summary: IngestSummary) -> None:
        counted = prepared.counted()
        if counted.counted:
            self.dedup.prepare(self.factory)  # a load or build happens here, not under the lock
        with self.dedup.pending(), transaction(self.factory) as session:
            self._write(session, prepared, counted, summary)
        checkpoint("ingested")

    def delete(self, external_ids: list[str]) -> int:
        """Soft-delete articles by caller id, in one transaction; their clusters are updated.

        Returns:
            How many live articles were deleted.

        Raises:
            NotFound: none of the ids names a live article (nothing is changed).
        """
        self.dedup.prepare(self.factory)
        with self.dedup.pending(), transaction(self.factory) as session:
            state = begin_write(session=session)
            found = find_existing(session=session, external_ids=external_ids)
            live = [a.id for a in found.values() if not a.deleted]
            if not live:
                raise NotFound.article(external_ids[0] if external_ids else "")
            now = datetime.now(UTC)
            for article_id in live:
                soft_delete(session=session, article_id=article_id, seq=state.seq, now=now)
            self.dedup.update(session, live)
        return len(live)

    def _write(
        self, session: Session, prepared: _Prepared, counted: _Counted, summary: IngestSummary
    ) -> None:
        latest, hashes = prepared.latest, prepared.hashes
        state = begin_write(session=session)
        now = datetime.now(UTC)
        existing = find_existing(session=session, external_ids=counted.ids)
        inserts, updates, feature_ids = [], [], []
        for rid, digest in zip(counted.ids, counted.analyzed.text_hashes, strict=True):
            old = existing.get(rid)
            if not _changed(old, hashes[rid]):  # a concurrent writer stored the same record
                summary.unchanged += 1
                continue
            row = _row(latest[rid], hashes[rid], digest, state.seq, now)
            row.update(prepared.cards[rid].columns())
            if old is None:
                inserts.append({**row, "created_at": now})
                summary.inserted += 1
            else:
                updates.append({**row, "id": old.id, "deleted_at": None})
                summary.inserted += old.deleted
                summary.updated += not old.deleted
            if old is None or old.deleted or old.text_hash != digest:
                feature_ids.append(rid)
        ids = insert_articles(session=session, rows=inserts)
        update_articles(session=session, rows=updates)
        ids.update({rid: existing[rid].id for rid in existing})
        changed = [ids[rid] for rid in counted.ids if rid in ids]
        summary.changed_ids.extend(changed)
        model = self.models.get(session=session, version=state.active_model_version)
        if model is None or state.active_model_version is None:
            summary.features_pending += len(feature_ids)
            return
        # a model appeared since the read phase, or a reindex switched to one with other words
        if not counted.counted or counted.words != model.words:
            self._use_words(model.words)
            items = [(latest[rid].title, latest[rid].content) for rid in counted.ids]
            analyzed = self.featurizer.analyze_many(items, words=model.words)
            counted = _Counted(counted.ids, analyzed, words=model.words)
        row = {rid: k for k, rid in enumerate(counted.ids)}
        analyzed = counted.analyzed.take([row[rid] for rid in feature_ids])
        rows = self.featurizer.features_of(analyzed.counts, model, analyzed.embeddings)
        replace_features(
            session=session,
            version=state.active_model_version,
            rows=[
                {
                    "article_id": ids[rid],
                    "fingerprint": f.fingerprint,
                    "vector": f.vector,
                    "n_tokens": f.n_tokens,
                    "embedding": f.embedding,
                }
                for rid, f in zip(feature_ids, rows, strict=True)
            ],
        )
        self.dedup.update(session, changed)


@dataclass(frozen=True)
class _Counted:
    """The analysed texts of a batch's changed records, by caller id (``counted``: with term
    counts, else text hashes only)."""

    ids: list[str]
    analyzed: Analyzed
    counted: bool = True
    words: Words = ()  # the words the texts were tokenized with


@dataclass(frozen=True)
class _Prepared:
    """A batch ready to be written once its analysis (maybe running on the pool) is done."""

    latest: dict[str, ArticleRecord]
    hashes: dict[str, str]
    counted: Callable[[], _Counted]
    cards: dict[str, Card]  # of the records to write


def _ready(done: TextAnalysis) -> Callable[[], TextAnalysis]:
    return lambda: done


def _changed(old: ExistingArticle | None, record_hash: str) -> bool:
    return old is None or old.deleted or old.record_hash != record_hash


def _row(
    record: ArticleRecord, record_hash: str, text_hash: str, seq: int, now: datetime
) -> dict[str, Any]:
    return {
        "external_id": record.id,
        "title": record.title,
        "content": record.content,
        "url": record.url,
        "tags": list(record.tags),
        "category": record.category,
        "author": record.author,
        "published_at": record.published_at,
        "image": record.image,
        "summary": record.summary,
        "record_hash": record_hash,
        "text_hash": text_hash,
        "updated_at": now,
        "seq": seq,
    }


def _id_of(data: dict[str, Any]) -> str | None:
    """A rejected record's id for the report, printable (it may be what made it bad)."""
    value = next((v for k, v in data.items() if isinstance(k, str) and field_name(k) == "id"), None)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 63:
        value = str(value)
    return printable(value) if isinstance(value, str) and value else None


def _batches(items: Iterable[RawRecord], size: int) -> Iterator[list[RawRecord]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
