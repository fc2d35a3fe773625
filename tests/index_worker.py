"""A separate process holding followers of derived index kinds, driven over a pipe.

Used by ``tests/index/test_index_conformance.py``: two of these play two server processes. Each
holds a follower of every kind it is opened with (for the near-duplicate candidate kinds,
radius and passages, and the canonicals' index, the ones its ingester's clusters use, so
writes sync them inside their transactions, as in a server) and runs the operations it is
sent; the answers of ``sync``, ``rollback`` and ``stats`` are by kind.

A process serves one test after another (``open`` ... ``close``): a spawned interpreter's
imports and dictionary load cost about a second of CPU, and two a test added up. Each ``open``
builds the engine, followers, deduplicator and ingester anew from the test's settings; only the
tokenizer is kept, as a server process keeps its one tokenizer (``web.services``) across
requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
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
            overrides, kinds = args
            settings = load_settings(overrides)
            key = settings.tokenizer.model_dump_json()
            if key not in tokenizers:
                tokenizers[key] = build_tokenizer(settings.tokenizer)
            follow(conn, settings, kinds, Featurizer(settings, tokenizers[key]))
    finally:
        conn.close()


def follow(
    conn: Connection, settings: Settings, kinds: Sequence[str], featurizer: Featurizer
) -> None:
    """Hold a new follower of each of ``kinds`` and run operations from ``conn`` on them until
    ``("close",)``; answer each with its result (``close`` once all is released)."""
    engine = make_engine(settings.resolved_database_url)
    factory = make_session_factory(engine)
    every = followers(settings)
    held = {kind: every[kind] for kind in kinds}
    # the candidate indexes of clusters, and the canonicals' one
    sources = {"neardup": "index", "passages": "passages", "canonicals": "canonicals"}
    dedup = Deduplicator(settings, **{sources[k]: f for k, f in held.items() if k in sources})
    ingester = Ingester(factory, featurizer, dedup=dedup)

    def sync() -> dict[str, dict[str, bytes]]:
        with transaction(factory) as session:
            for follower in held.values():
                assert follower.sync(SqlIndexRows(session)) is not None
        return {kind: canonical(follower) for kind, follower in held.items()}

    def rollback(external_id: str) -> dict[str, bool]:
        """Delete an article in a transaction the indexes sync with, then roll it back."""
        try:
            with ExitStack() as pending:
                for follower in held.values():
                    pending.enter_context(follower.pending())
                session = pending.enter_context(transaction(factory))
                state = begin_write(session=session)
                article = get_article(session=session, external_id=external_id)
                if article is not None:
                    now = datetime.now(UTC)
                    soft_delete(session=session, article_id=article.id, seq=state.seq, now=now)
                for follower in held.values():
                    follower.sync(SqlIndexRows(session))
                raise Rollback
        except Rollback:
            # forgotten: each held a change that never happened
            return {kind: follower.held is None for kind, follower in held.items()}

    ops = {
        "ingest": lambda records: ingester.ingest_records(records).inserted,
        "delete": lambda ids: ingester.delete(ids),
        "reindex": lambda: reindex(factory=factory, featurizer=featurizer, dedup=dedup).version,
        "rollback": rollback,
        "sync": sync,
        "stats": lambda: {kind: follower.stats.__dict__ for kind, follower in held.items()},
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
