"""A separate process holding one follower of a derived index kind, driven over a pipe.

Used by ``tests/index/test_index_conformance.py``: two of these play two server processes. Each
holds the follower of one kind (for the near-duplicate candidate kinds, radius and passages,
the one its ingester's clusters use, so writes sync it inside their transactions) and runs
the operations it is sent.

A process serves one test after another (``open`` ... ``close``): a spawned interpreter's
imports and dictionary load cost about a second of CPU, and the module's 20 tests started 40 of
them. Each ``open`` builds the engine, follower, deduplicator and ingester anew from the test's
settings; only the tokenizer is kept, as a server process keeps its one tokenizer
(``web.services``) across requests.
"""

from __future__ import annotations

from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from recengine.config import Settings, load_settings
from recengine.derived.registry import followers
from recengine.index.follower import Follower
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory, transaction
from recengine.storage.rows.articles import get_article, soft_delete
from recengine.storage.rows.index_rows import SqlIndexRows
from recengine.storage.state import begin_write
from recengine.text.words.tokenize import Tokenizer, build_tokenizer


class Rollback(Exception):
    """Raised inside a write transaction to roll it back after the index saw it."""


def canonical(follower: Follower[Any]) -> dict[str, bytes]:
    """The held index in a form that does not depend on how it was reached: compacted (one
    segment for segmented kinds), as its comparable arrays' bytes (``IndexKind.comparable``)."""
    held = follower.held
    assert held is not None
    arrays = follower.kind.comparable(held.index)
    out = {k: np.ascontiguousarray(v).tobytes() + str(v.dtype).encode() for k, v in arrays.items()}
    return {**out, "size": str(follower.kind.size(held.index)).encode()}


def serve(conn: Connection) -> None:
    """Serve tests from ``conn`` until ``("stop",)``: each ``("open", overrides, kind)`` is
    answered, then its operations run (:func:`follow`) until ``("close",)``."""
    tokenizers: dict[str, Tokenizer] = {}  # by their settings (the same for every test now)
    try:
        while True:
            op, *args = conn.recv()
            if op == "stop":
                break
            assert op == "open", f"expected open, got {op}"
            overrides, kind = args
            settings = load_settings(overrides)
            key = settings.tokenizer.model_dump_json()
            if key not in tokenizers:
                tokenizers[key] = build_tokenizer(settings.tokenizer)
            follow(conn, settings, kind, Featurizer(settings, tokenizers[key]))
    finally:
        conn.close()


def follow(conn: Connection, settings: Settings, kind: str, featurizer: Featurizer) -> None:
    """Hold a new follower of ``kind`` and run operations from ``conn`` on it until
    ``("close",)``; answer each with its result (``close`` once all is released)."""
    engine = make_engine(settings.resolved_database_url)
    factory = make_session_factory(engine)
    follower = followers(settings)[kind]
    # the candidate indexes of clusters, and the canonicals' one
    sources = {"neardup": "index", "passages": "passages", "canonicals": "canonicals"}
    dedup = Deduplicator(settings, **({sources[kind]: follower} if kind in sources else {}))
    ingester = Ingester(factory, featurizer, dedup=dedup)

    def sync() -> dict[str, bytes]:
        with transaction(factory) as session:
            assert follower.sync(SqlIndexRows(session)) is not None
        return canonical(follower)

    def rollback(external_id: str) -> bool:
        """Delete an article in a transaction the index syncs with, then roll it back."""
        try:
            with follower.pending(), transaction(factory) as session:
                state = begin_write(session=session)
                article = get_article(session=session, external_id=external_id)
                if article is not None:
                    now = datetime.now(UTC)
                    soft_delete(session=session, article_id=article.id, seq=state.seq, now=now)
                follower.sync(SqlIndexRows(session))
                raise Rollback
        except Rollback:
            return follower.held is None  # forgotten: it held a change that never happened

    ops = {
        "ingest": lambda records: ingester.ingest_records(records).inserted,
        "delete": lambda ids: ingester.delete(ids),
        "reindex": lambda: reindex(factory=factory, featurizer=featurizer, dedup=dedup).version,
        "rollback": rollback,
        "sync": sync,
        "stats": lambda: follower.stats.__dict__,
    }
    try:
        while True:
            op, *args = conn.recv()
            if op == "close":
                break
            try:
                conn.send(("ok", ops[op](*args)))
            except Exception as exc:  # the test fails with the worker's error
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        ingester.close()
        engine.dispose()
    conn.send(("ok", None))
