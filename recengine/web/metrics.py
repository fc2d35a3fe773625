"""``GET /metrics``: the service's figures in Prometheus' text format (prometheus-client).

What is measured:

* ``recengine_http_request_duration_seconds{endpoint, method, status}``: a histogram of the
  time the app took per request (``endpoint`` is the route, e.g.
  ``/api/v1/articles/<id:article_id>/related``; ``unmatched`` for unknown paths), and
  ``recengine_http_rejected_total{code}``: requests answered by the worker itself before the
  app (503 ``overloaded``, 503 ``timeout``, 408, 413, 431...);
* ``recengine_cache_requests_total{cache, result}`` (``hit``, ``miss``, ``not_modified``) and
  the cache's ``entries`` / ``bytes`` (``recengine.recommend.answers``);
* per index kind: ``recengine_index_seq`` (the change sequence the least caught-up worker's
  index reflects), ``recengine_index_lag`` (the database's sequence minus that: changes not yet
  applied), ``recengine_index_age_seconds`` (since a worker last checked the database),
  ``recengine_index_articles`` and ``recengine_index_bytes`` (memory, mapped pages included);
* ``recengine_database_seq``, ``recengine_model_version`` and the reindex seen from SQL:
  ``recengine_reindex_pending`` (1 while a model newer than the active one exists),
  ``recengine_reindex_articles_written`` / ``recengine_reindex_articles_total`` (pass 2);
* ``recengine_gc_full_collection_seconds``: a histogram of the workers' full garbage
  collections (every request of a worker waits for one; ``recengine.web.server.collector``). What is
  frozen is not published: counting it walks every frozen object (``gc.get_freeze_count``: 14
  ms with the GIL held for 400,000 of them), which once a second set the p99 of health checks
  (5 -> 17 ms, measured).

**Several worker processes.** gunicorn's workers are separate processes; a scrape reaches one.
``recengine serve`` (and gunicorn with ``-c python:recengine.web.server.gunicorn_conf``) runs
prometheus-client's multiprocess mode: the master names a fresh directory
(``PROMETHEUS_MULTIPROC_DIR``, in ``data_dir/metrics/<master pid>/``) before it forks, each
worker's values live in memory-mapped files there, and a scrape sums counters and histograms
over every worker (gauges: the minimum or maximum over live workers, as named above). Without
that directory (tests, plain gunicorn) each app keeps its own registry. prometheus-client is
imported when an app is built, never before the master has set the directory, since its
choice of mode is made at import.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from recengine.storage.rows.stats import reindex_progress
from recengine.storage.state import read_state

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from recengine.index.follower import Follower

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds. Cache hits take ~1 ms, uncached related lists 5-50 ms, writes up to seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
PUBLISH_EVERY_S = 1.0  # index age is published at most this often per worker


class Metrics:
    """One app's metrics (see the module docstring). Thread-safe (prometheus-client is)."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.directory = os.environ.get(MULTIPROC_ENV) or None
        unregistered: dict[str, Any] = {"registry": None}
        self.requests = Histogram(
            "recengine_http_request_duration_seconds",
            "Time the app took to answer, by route, method and status.",
            ["endpoint", "method", "status"],
            buckets=BUCKETS,
            **unregistered,
        )
        self.rejected = Counter(
            "recengine_http_rejected",
            "Requests answered by the worker before the app (overload, timeouts, limits).",
            ["code"],
            **unregistered,
        )
        self.cache_requests = Counter(
            "recengine_cache_requests",
            "Cacheable reads by cache and result (hit, miss, not_modified).",
            ["cache", "result"],
            **unregistered,
        )
        self.cache_entries = Gauge(
            "recengine_cache_entries",
            "Answers held in the process-local caches (summed over workers).",
            ["cache"],
            multiprocess_mode="livesum",
            **unregistered,
        )
        self.cache_bytes = Gauge(
            "recengine_cache_bytes",
            "Bytes held by the process-local caches (summed over workers).",
            ["cache"],
            multiprocess_mode="livesum",
            **unregistered,
        )
        self.index_seq = Gauge(
            "recengine_index_seq",
            "Change sequence the least caught-up worker's index reflects.",
            ["kind"],
            multiprocess_mode="livemin",
            **unregistered,
        )
        self.index_checked = Gauge(
            "recengine_index_checked_timestamp_seconds",
            "When the least recently checked worker's index last read the database position.",
            ["kind"],
            multiprocess_mode="livemin",
            **unregistered,
        )
        self.index_articles = Gauge(
            "recengine_index_articles",
            "Articles in the index (largest over workers).",
            ["kind"],
            multiprocess_mode="livemax",
            **unregistered,
        )
        self.index_bytes = Gauge(
            "recengine_index_bytes",
            "Memory of one copy of the index, mapped file pages included (largest over workers).",
            ["kind"],
            multiprocess_mode="livemax",
            **unregistered,
        )
        self.notifications = Counter(
            "recengine_change_notifications",
            "Changes learnt of without a query (PostgreSQL LISTEN; SQLite: the WAL header moved),"
            " summed over workers.",
            **unregistered,
        )
        self.listening = Gauge(
            "recengine_change_listener_connected",
            "1 when every live worker follows changes without a query per request (PostgreSQL"
            " LISTEN connected; SQLite: the WAL header watched).",
            multiprocess_mode="livemin",
            **unregistered,
        )
        self.position_reads = Counter(
            "recengine_index_position_reads",
            "Reads of the database position by index followers (the per-request check, or "
            "after a change notification).",
            ["kind"],
            **unregistered,
        )
        self.gc_pauses = Histogram(
            "recengine_gc_full_collection_seconds",
            "Full garbage collections of the workers (each pauses every request of its worker).",
            buckets=BUCKETS,
            **unregistered,
        )
        self._reads: dict[str, int] = {}
        self._published: dict[str, tuple[Any, ...]] = {}
        self._published_at: dict[str, float] = {}

    def _own(self) -> list[Any]:
        return [
            self.requests,
            self.rejected,
            self.cache_requests,
            self.cache_entries,
            self.cache_bytes,
            self.index_seq,
            self.index_checked,
            self.index_articles,
            self.index_bytes,
            self.notifications,
            self.listening,
            self.position_reads,
            self.gc_pauses,
        ]

    def observe(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, method, str(status)).observe(seconds)

    def publish_collections(self, pauses: list[float]) -> None:
        """A worker's full collections since its last tick, seconds each."""
        for seconds in pauses:
            self.gc_pauses.observe(seconds)

    def publish_indexes(self, followers: Mapping[str, Follower[Any]]) -> None:
        """Index gauges of this worker, written when an index changed (and its check time at
        most every ``PUBLISH_EVERY_S``): a cheap call per request."""
        now = time.monotonic()
        for kind, follower in followers.items():
            held = follower.held
            state = (id(held.index), held.seq) if held is not None else (None, None)
            if state != self._published.get(kind):
                self._published[kind] = state
                report = follower.report()
                self.index_seq.labels(kind).set(report["seq"] or 0)
                self.index_articles.labels(kind).set(report["articles"])
                self.index_bytes.labels(kind).set(report["bytes"])
            reads = follower.position_reads
            if reads != self._reads.get(kind, 0):
                self.position_reads.labels(kind).inc(max(0, reads - self._reads.get(kind, 0)))
                self._reads[kind] = reads
            if now - self._published_at.get(kind, -PUBLISH_EVERY_S) >= PUBLISH_EVERY_S:
                self._published_at[kind] = now
                checked = follower.checked_at()
                if checked is not None:
                    self.index_checked.labels(kind).set(checked)

    def render(self, *, session: Session) -> bytes:
        """The text exposition of every metric (every worker's, in multiprocess mode)."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry(auto_describe=False)
        if self.directory:
            MultiProcessCollector(registry, path=self.directory)  # type: ignore[no-untyped-call]
        else:
            for metric in self._own():
                registry.register(metric)
        families = list(registry.collect())
        families += scrape_time(session, families)
        return bytes(generate_latest(_Families(families)))


class _Families:
    """A registry-shaped holder of collected families (``generate_latest`` calls collect)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def scrape_time(session: Session, families: list[Metric]) -> list[Metric]:
    """What is read when scraped: the database position, lag and age per kind, the reindex."""
    from prometheus_client.core import GaugeMetricFamily

    state = read_state(session=session)
    out = [
        _gauge("recengine_database_seq", "The database's change sequence.", state.seq),
        _gauge(
            "recengine_model_version",
            "The active IDF model version (0: none yet).",
            state.active_model_version or 0,
        ),
    ]
    seqs, checked = (
        _by_kind(families, "recengine_index_seq"),
        _by_kind(families, "recengine_index_checked_timestamp_seconds"),
    )
    lag = GaugeMetricFamily(
        "recengine_index_lag",
        "Changes committed that the least caught-up worker's index has not applied yet.",
        labels=["kind"],
    )
    for kind, seq in sorted(seqs.items()):
        lag.add_metric([kind], max(0.0, state.seq - seq))
    age = GaugeMetricFamily(
        "recengine_index_age_seconds",
        "Seconds since the least recently checked worker's index read the database position.",
        labels=["kind"],
    )
    now = time.time()
    for kind, when in sorted(checked.items()):
        age.add_metric([kind], max(0.0, now - when))
    progress = reindex_progress(session=session, active=state.active_model_version)
    out += [
        lag,
        age,
        _gauge(
            "recengine_reindex_pending",
            "1 while an IDF model newer than the active one exists (a reindex in pass 2 or later, "
            "or interrupted after pass 1).",
            int(progress.version is not None),
        ),
        _gauge(
            "recengine_reindex_articles_written",
            "Articles whose features the pending reindex has written.",
            progress.written,
        ),
        _gauge(
            "recengine_reindex_articles_total",
            "Live articles the pending reindex has to write (0: none pending).",
            progress.live,
        ),
    ]
    return out


def _gauge(name: str, documentation: str, value: float) -> Metric:
    from prometheus_client.core import GaugeMetricFamily

    return GaugeMetricFamily(name, documentation, value=value)


def _by_kind(families: list[Metric], name: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in families:
        if family.name != name:
            continue
        for sample in family.samples:
            kind = sample.labels.get("kind")
            if kind is not None:  # several workers' samples: the gauge mode merged them
                found[kind] = min(found.get(kind, sample.value), sample.value)
    return found


# -- the multiprocess directory (gunicorn's master) ----------------------------------------


def prepare_directory(data_dir: Path) -> Path | None:
    """Name a fresh multiprocess directory for this server before workers fork; None when the
    environment names one already (it is the operator's, and left alone)."""
    if os.environ.get(MULTIPROC_ENV):
        return None
    root = data_dir / "metrics"
    _remove_stale(root)
    directory = root / str(os.getpid())
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(directory)
    return directory


def worker_exited(pid: int) -> None:
    """gunicorn's ``child_exit``: drop the live gauges of a worker that is gone."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def _remove_stale(root: Path) -> None:
    """Directories of servers whose master is gone (killed: it could not clean up)."""
    if not root.is_dir():
        return
    for entry in root.iterdir():
        if entry.name.isdigit() and not _alive(int(entry.name)):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
