"""Incremental reindex: recompute only what changed since the last reindex, keep the IDF model.

The active model records the change sequence it was fitted at and the one the last (full or
incremental) reindex covered (``params["fit"]``: ``seq``, ``indexed_seq``). An incremental run:

1. measures **drift**: articles added, edited or deleted since the fit, over the number of
   articles the model was fitted on. Above ``reindex.refit_drift`` (default 0.1, reasons in
   ``config/defaults.toml``) the IDF model is due for a refit and a full reindex runs instead, as
   it does when there is no model yet or the model has no fit record;
2. otherwise recomputes, under the active model and in place, the live articles changed since
   ``indexed_seq`` and any live article that has no features under the active model;
3. records the sequence it covered as the new ``indexed_seq``.

Each batch is tokenized outside the writers' lock and written in a transaction that takes it
(``begin_write``); an article changed again meanwhile is skipped, because its writer already
stored features for its new text under the same model. Readers see each article either before
or after its recomputation, never a mix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Row
from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer, model_params, same_model_settings
from recengine.pipeline.reindex.cards import fill_cards
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool, Item
from recengine.pipeline.reindex.run import ReindexRun, reindex_run
from recengine.pipeline.reindex.versions import WRITE_ROWS, Progress, ReindexResult, write_features
from recengine.storage.db import transaction
from recengine.storage.rows.articles import changed_since, count_changed, live_seqs
from recengine.storage.rows.features import (
    load_model_payload,
    texts_without_features,
    update_model_params,
)
from recengine.storage.state import begin_write, read_state

PageRow = Row[int, str, str, int]  # (id, title, content, seq)
Page = Sequence[PageRow]
Reader = Callable[[Session, PageRow | None], Page]


def drift_of(
    factory: sessionmaker[Session], limit: float
) -> tuple[int | None, dict[str, Any], str | None]:
    """``(active version, its params, why a refit is due or None)``."""
    with transaction(factory) as session:
        version = read_state(session=session).active_model_version
        if version is None:
            return None, {}, "no IDF model yet"
        payload, params = load_model_payload(session=session, version=version)
        fit = params.get("fit")
        if not isinstance(fit, dict) or "seq" not in fit:
            return version, params, "the active model has no fit record"
        changed = count_changed(session=session, after_seq=int(fit["seq"]))
    n_docs = IdfModel.from_bytes(payload).n_docs
    drift = changed / max(1, n_docs)
    if drift > limit:
        return (
            version,
            params,
            (
                f"{changed} of {n_docs} articles changed since the last fit: drift {drift:.1%} > "
                f"reindex.refit_drift {limit:.1%}, IDF refitted"
            ),
        )
    return version, params, None


def reindex_incremental(
    *,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    batch_size: int = 1_000,
    progress: Progress | None = None,
    pool: AnalysisPool | None = None,
    data_dir: Path | None = None,
    resume: bool = True,
    refit_drift: float | None = None,
    dedup: Deduplicator | None = None,
) -> ReindexResult:
    """Recompute changed articles under the active model, or refit when drift is too large.

    The near-duplicate clusters of the recomputed articles are updated in the same
    transactions (``dedup.update``), as ingest does.

    Args: as :func:`~recengine.pipeline.reindex.full.reindex`, plus ``refit_drift`` (default:
    ``settings.reindex.refit_drift``).
    """
    limit = featurizer.settings.reindex.refit_drift if refit_drift is None else refit_drift
    version, params, refit = drift_of(factory, limit)
    wanted = model_params(featurizer.settings)
    if version is not None and refit is None and not same_model_settings(params, wanted):
        refit = "the active model was built with other settings (a changed encoder, tokenizer...)"
    run_args: dict[str, Any] = {
        "factory": factory,
        "featurizer": featurizer,
        "batch_size": batch_size,
        "progress": progress,
        "pool": pool,
        "data_dir": data_dir,
        "dedup": dedup,
    }
    if refit is not None or version is None:
        result = reindex(**run_args, resume=resume)
        return ReindexResult(**{**result.__dict__, "reason": refit or ""})
    with reindex_run(**run_args) as run:  # one reindex at a time, full or incremental
        fill_cards(run.factory, featurizer.settings, run.progress)
        done = _recompute_all(run, version, params)
        run.dedup.save()
    return ReindexResult(
        version, 0, 0, 0, mode="incremental", recomputed=done, reason="IDF model kept"
    )


def _recompute_all(run: ReindexRun, version: int, params: dict[str, Any]) -> int:
    with transaction(run.factory) as session:
        upto = read_state(session=session).seq
        model = IdfModel.from_bytes(load_model_payload(session=session, version=version)[0])
    run.use_words(model.words)  # texts recomputed under the model are cut as its own were
    since = int(params["fit"].get("indexed_seq", params["fit"]["seq"]))
    run.progress.start("changed", None)
    done = 0
    size = run.batch_size
    for reader in (_changed_reader(since, size), _missing_reader(version, size)):
        done += _recompute(run, model, version, reader)
    with transaction(run.factory) as session:
        if begin_write(session=session).active_model_version == version:
            fit = {**params["fit"], "indexed_seq": upto}
            update_model_params(session=session, version=version, params={**params, "fit": fit})
    return done


def _changed_reader(since: int, size: int) -> Reader:
    def read(session: Session, last: PageRow | None) -> Page:
        after = (since + 1, 0) if last is None else (last.seq, last.id)
        return changed_since(session=session, after=after, limit=size)

    return read


def _missing_reader(version: int, size: int) -> Reader:
    def read(session: Session, last: PageRow | None) -> Page:
        after = 0 if last is None else last.id
        return texts_without_features(session=session, version=version, after_id=after, limit=size)

    return read


def _recompute(run: ReindexRun, model: IdfModel, version: int, read: Reader) -> int:
    """Analyze pages on the pool; write each under the lock unless changed again meanwhile."""
    seqs: dict[int, int] = {}

    def pages() -> Iterator[list[Item]]:
        last: PageRow | None = None
        while True:
            with transaction(run.factory) as session:
                rows = read(session, last)
            if not rows:
                return
            last = rows[-1]
            seqs.update({r.id: r.seq for r in rows})
            yield [(r.id, r.title, r.content) for r in rows]

    done = 0
    for batch in run.pool.analyze_batches(pages()):
        for start in range(0, len(batch), WRITE_ROWS):  # short transactions: writers wait little
            part = batch[start : start + WRITE_ROWS]
            features = run.featurizer.features([s for _, s in part], model)
            run.dedup.prepare(run.factory)
            with run.dedup.pending(), transaction(run.factory) as session:
                if begin_write(session=session).active_model_version != version:
                    return done  # a full reindex switched models meanwhile: it covered these
                now = live_seqs(session=session, article_ids=[i for i, _ in part])
                keep = [
                    (i, f)
                    for (i, _), f in zip(part, features, strict=True)
                    if now.get(i) == seqs.pop(i)
                ]
                write_features(session, version, keep)
                run.dedup.update(session, [i for i, _ in keep])
            done += len(keep)
        run.progress.update(len(batch))
    return done
