"""Full local reindex: refit the IDF model on every live article and recompute every feature.

Readers never see a half-built state. The new model gets a new version and its features are
written under that version while the active version keeps serving; the switch is one small
transaction (taken with the writers' lock, see ``storage.state.begin_write``). Articles written
while the reindex runs are caught up (their ``seq`` is newer than the one the reindex started
from) before and again inside that final transaction, so none is left behind. An interrupted
reindex leaves only unused rows of a version nobody reads; the next run deletes them.

Memory is bounded: texts stream from SQL in batches, and the term counts of pass 1 are spooled to
a temporary file so pass 2 does not tokenize again.
"""

from __future__ import annotations

import pickle
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.pipeline.dedup import Deduplicator
from recengine.pipeline.featurize import Featurizer, TextStats, model_params
from recengine.storage.articles import changed_since, texts_after
from recengine.storage.db import transaction
from recengine.storage.features import drop_other_versions, replace_features, save_model
from recengine.storage.state import begin_write, read_state, set_active_model

Progress = Callable[[int], None]


@dataclass(frozen=True)
class ReindexResult:
    version: int
    n_docs: int
    n_terms: int
    caught_up: int


def reindex(
    *,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    batch_size: int = 1_000,
    progress: Progress | None = None,
    dedup: Deduplicator | None = None,
) -> ReindexResult:
    """Rebuild the IDF model, all features and the near-duplicate clusters; switch readers to
    them atomically.

    Args:
        factory: session factory.
        featurizer: tokenizer and feature settings.
        batch_size: articles per read / write transaction.
        progress: called with the number of articles just processed (pass 1 and pass 2).
        dedup: cluster maintenance (built from the featurizer's settings when omitted); the
            clusters are recomputed under the new model inside the switch transaction.
    """
    dedup = dedup or Deduplicator(featurizer.settings)
    with transaction(factory) as session:
        start = read_state(session=session)
    with tempfile.TemporaryFile(prefix="recengine-reindex-") as spool:
        model = _analyze_all(factory, featurizer, batch_size, spool, progress)
        with transaction(factory) as session:
            version = save_model(
                session=session,
                payload=model.to_bytes(),
                n_docs=model.n_docs,
                n_terms=len(model.df),
                params=model_params(featurizer.settings),
                now=datetime.now(UTC),
            )
        spool.seek(0)
        for stats in _unspool(spool):
            with transaction(factory) as session:
                _write_features(session, featurizer, model, version, stats)
            if progress:
                progress(len(stats))
    with dedup.pending():
        caught_up = _catch_up(factory, featurizer, model, version, start.seq, batch_size, dedup)
    dedup.save()
    return ReindexResult(version, model.n_docs, len(model.df), caught_up)


def _analyze_all(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    batch_size: int,
    spool: IO[bytes],
    progress: Progress | None,
) -> IdfModel:
    """Pass 1: tokenize every live article, count document frequencies, spool the counts."""
    df: Counter[str] = Counter()
    n_docs, last = 0, 0
    while True:
        with transaction(factory) as session:  # one short read transaction per page
            rows = texts_after(session=session, after_id=last, limit=batch_size)
        if not rows:
            return IdfModel(n_docs=n_docs, df=dict(df))
        stats = [(row.id, featurizer.analyze(row.title, row.content)) for row in rows]
        for _, s in stats:
            df.update(s.counts.keys())
        n_docs += len(stats)
        last = rows[-1].id
        pickle.dump(stats, spool, protocol=pickle.HIGHEST_PROTOCOL)
        if progress:
            progress(len(stats))


def _unspool(spool: IO[bytes]) -> Iterator[list[tuple[int, TextStats]]]:
    while True:
        try:
            yield pickle.load(spool)
        except EOFError:
            return


def _write_features(
    session: Session,
    featurizer: Featurizer,
    model: IdfModel,
    version: int,
    stats: Sequence[tuple[int, TextStats]],
) -> None:
    rows = featurizer.features([s for _, s in stats], model)
    replace_features(
        session=session,
        version=version,
        rows=[
            {
                "article_id": aid,
                "fingerprint": f.fingerprint,
                "vector": f.vector,
                "n_tokens": f.n_tokens,
            }
            for (aid, _), f in zip(stats, rows, strict=True)
        ],
    )


def _catch_up(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    model: IdfModel,
    version: int,
    seq: int,
    batch_size: int,
    dedup: Deduplicator,
) -> int:
    """Recompute articles changed since ``seq`` under the new model, switch to it, recluster."""
    # (seq + 1, 0) is the position just after every row of sequence number seq.
    position, done = (seq + 1, 0), 0

    def step(session: Session) -> bool:
        nonlocal position, done
        rows = changed_since(session=session, after=position, limit=batch_size)
        if not rows:
            return False
        stats = [(r.id, featurizer.analyze(r.title, r.content)) for r in rows]
        _write_features(session, featurizer, model, version, stats)
        position, done = (rows[-1].seq, rows[-1].id), done + len(rows)
        return True

    more = True
    while more:  # outside the writers' lock: may take a while if writers are busy
        with transaction(factory) as session:
            more = step(session)
    with transaction(factory) as session:  # under the lock: the last few, then the switch
        begin_write(session=session)
        while step(session):
            pass
        set_active_model(session=session, version=version)
        drop_other_versions(session=session, keep=version)
        dedup.recluster(session)
    return done
