"""What the views share: settings, the database, the ingester, and one session per request.

One :class:`Services` per app (per gunicorn worker), kept in ``app.extensions``. The session of
a request is opened on first use and closed (rolled back if not committed) when the request
ends, whatever happened; the error handlers discard it early.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, current_app, g, request
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.pipeline.featurize import Featurizer, compared_of
from recengine.pipeline.feedback import FeedbackCounter
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.feeds.retention import Expiry, ReaderData
from recengine.recommend.live import LiveIndex
from recengine.recommend.override_rules import DuplicatePins
from recengine.recommend.overrides import Overrides
from recengine.recommend.ranking import Variants
from recengine.recommend.related import RelatedArticles
from recengine.storage.notify import ChangeListener
from recengine.storage.walwatch import WalWatch
from recengine.text.neardup.compare import Compared
from recengine.text.neardup.kept import KeptTexts
from recengine.text.words.tokenize import Tokenizer
from recengine.web.schemas.core import Models

if TYPE_CHECKING:
    from recengine.index.follower import Follower
    from recengine.web.metrics import Metrics

EXTENSION = "recengine"


@dataclass
class Services:
    """Per-app state. ``tokenizer`` is built on first write unless one is given (tests share)."""

    settings: Settings
    engine: Engine
    factory: sessionmaker[Session]
    models: Models
    tokenizer: Tokenizer | None = None
    metrics: Metrics | None = None
    listener: ChangeListener | WalWatch | None = field(default=None, repr=False)
    _ingester: Ingester | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @cached_property
    def index(self) -> LiveIndex:
        """This worker's related-articles index (loads or builds on first use, then follows SQL;
        rebuilds after a reindex happen in the background while the old index answers)."""
        return LiveIndex(self.settings, self.factory, background=True)

    def opened_index(self) -> LiveIndex | None:
        """:attr:`index` if it has been built (None: the first read will build it)."""
        return self.__dict__.get("index")

    @cached_property
    def kept_texts(self) -> KeptTexts:
        """What lists and feeds compare of stored texts, kept across answers (one store)."""
        return KeptTexts(self.settings.related.kept_compared_mb << 20)

    @cached_property
    def related(self) -> RelatedArticles:
        return RelatedArticles(self.settings, self.index, self.kept_texts)

    @cached_property
    def feeds(self) -> ReaderFeeds:
        return ReaderFeeds(self.settings, self.index, self.kept_texts)

    @cached_property
    def readers(self) -> ReaderData:
        """Readers' data: a reader's history and its erasure, and the retention."""
        return ReaderData(self.settings, self.factory)

    @cached_property
    def expiry(self) -> Expiry:
        """This worker's runs of the retention of reader events (``events.retention_days``)."""
        return Expiry(self.readers)

    @cached_property
    def overrides(self) -> Overrides:
        """Editorial overrides; cluster overrides recluster what they touch in their own
        transaction, with the ingester's near-duplicate index; pins of near-duplicates are
        refused."""
        return Overrides(self.factory, self.ingester.dedup, DuplicatePins(self.settings))

    @cached_property
    def variants(self) -> Variants:
        return Variants.from_settings(self.settings)

    @cached_property
    def feedback(self) -> FeedbackCounter:
        """This worker's feedback counter (its commit thread starts with the first event)."""
        return FeedbackCounter(self.settings, self.factory, self.variants.names)

    @cached_property
    def version(self) -> str:
        return package_version()

    @cached_property
    def criterion(self) -> NearDupCriterion:
        """The near-duplicate verdict (Hamming radius + cosine) of these settings."""
        return NearDupCriterion.from_settings(self.settings)

    def listen_for_changes(self) -> None:
        """In a serving worker: follow the database's changes without a query per request
        (``index.listen``): PostgreSQL's notifications (``storage.notify``), SQLite's WAL-index
        header (``storage.walwatch``), so reads stop checking SQL while nothing changes.
        Idempotent."""
        if self.listener is not None:
            return
        metrics = self.metrics

        def changed() -> None:
            if metrics is not None:
                metrics.notifications.inc()

        def connected(live: bool) -> None:
            if metrics is not None:
                metrics.listening.set(int(live))

        self.listener = self.index.follow_changes(changed, connected)

    @property
    def ingester(self) -> Ingester:
        """Built on first use; gthread workers serve on several threads, so under a lock."""
        if self._ingester is None:
            with self._lock:
                if self._ingester is None:
                    featurizer = Featurizer(self.settings, self.tokenizer)
                    # Requests tokenize in the worker itself: a process pool per gunicorn
                    # worker would compete with the other workers for the same cores.
                    pool = AnalysisPool(self.settings, workers=1, featurizer=featurizer)
                    self._ingester = Ingester(self.factory, featurizer, pool=pool)
        return self._ingester

    def followers(self) -> dict[str, Follower[Any]]:
        """The derived indexes this worker has opened so far, by kind."""
        opened: list[Follower[Any]] = []
        index = self.opened_index()
        if index is not None:
            opened += [index.follower, index.dense, index.briefs]
        if self._ingester is not None:
            dedup = self._ingester.dedup
            opened += [dedup.index, dedup.passages, dedup.canonicals]
        return {follower.kind.name: follower for follower in opened}

    def compared(self, title: str, content: str) -> Compared:
        """What the near-duplicate decision compares of an article (no tokenizer needed)."""
        return compared_of(title, content, self.settings.features.strip_boilerplate)


@cache
def package_version() -> str:
    """recengine's version as installed ("0" in a checkout that is not installed); read once
    (the package's metadata is read from disk)."""
    try:
        return version("recengine")
    except PackageNotFoundError:
        return "0"


def init_app(app: Flask, services: Services) -> None:
    app.extensions[EXTENSION] = services
    app.teardown_appcontext(_close_session)
    app.after_request(_after_write)


WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _after_write(response: Response) -> Response:
    """A write answered here is in this worker's next read, notification or not: the index
    follower checks the position again (``Follower.notified``)."""
    if request.method in WRITES and response.status_code < 400:
        found = services()
        if "index" in found.__dict__:
            found.index.follower.notified()
            found.index.dense.notified()
    return response


def services_of(app: object) -> Services | None:
    """The services of a recengine app (None for any other WSGI app, e.g. one wrapped in
    middleware that hides it)."""
    extensions = getattr(app, "extensions", None)
    found = extensions.get(EXTENSION) if isinstance(extensions, dict) else None
    return found if isinstance(found, Services) else None


def settings_of(app: object) -> Settings | None:
    """The settings of a recengine app (None for any other WSGI app)."""
    found = services_of(app)
    return found.settings if found is not None else None


def services() -> Services:
    """The services of the app handling the current request."""
    found: Services = current_app.extensions[EXTENSION]
    return found


def session() -> Session:
    """This request's read session (writes go through pipeline functions and own theirs)."""
    if "session" not in g:
        g.session = services().factory()
    current: Session = g.session
    return current


def discard_session() -> None:
    """Roll back and close this request's session (after an error)."""
    current: Session | None = g.pop("session", None)
    if current is not None:
        current.rollback()
        current.close()


def _close_session(_exc: BaseException | None) -> None:
    current: Session | None = g.pop("session", None)
    if current is not None:
        current.close()
