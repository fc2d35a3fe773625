"""Full local reindex: refit the IDF model on every live article and recompute every feature.

Steps (each resumable, see ``reindex_job``), inside one reindex run (``reindex_run``: the lock,
the pool, the deduplicator, and the tail every engine shares), after the cards of articles
stored before cards existed, or derived by another rule, are derived (``pipeline.reindex.cards``):

0. **new words** (``tokenizer.new_words``; ``pipeline.reindex.new_words``): the words the dictionary
   lacks, found in a sample of the corpus, recorded in the job; everything below tokenizes
   with them, and they are saved with the model;
1. **pass 1**: live articles stream from SQL in short keyset-paged read transactions, are cleaned
   and tokenized on every core (``parallel.AnalysisPool``), and their term counts are spooled to
   ``<data_dir>/reindex/spool.bin`` while document frequencies are counted; then the IDF model
   is fitted and saved under a **new** version, not yet active;
2. **pass 2**: vectors and fingerprints are computed from the spool (on the pool too) and written
   under the new version, one transaction per batch;
3. **the tail** (``pipeline.reindex.switch``): articles written since the reindex started are caught
   up, the new version's indexes are built (the passage index of the passage hashes pass 1
   spooled beside the term counts: no text is read or cleaned again) and its clusters
   computed (a full recluster, ``dedup.Deduplicator.cluster_all``), all outside the writers'
   lock; then one short switch transaction under it, and the new version's index files are
   published.

Readers never see a half-built state: until the switch commits they use the old version, whose
rows nothing here touches. ``kill -9`` or Ctrl-C at any point leaves the old state as it was plus
unused rows of the new version; the next run (``resume=True``, the default) continues where the
interrupted one stopped and ends in the same state as an uninterrupted run; with ``resume=False``
it discards them and starts over.

Memory is bounded: pages of ``batch_size`` articles, a bounded number in flight on the pool, and
term counts on disk rather than in memory. The fitted model records the change sequence it was
fitted at (``params["fit"]``), which incremental reindexing uses to measure drift.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from recengine.derived.passages import PassageKind, passage_kind
from recengine.features.tfidf import IdfModel
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import (
    Featurizer,
    Words,
    model_params,
)
from recengine.pipeline.reindex.cards import fill_cards
from recengine.pipeline.reindex.checkpoints import checkpoint
from recengine.pipeline.reindex.job import Asked, JobRecord, Task, spooled_passages
from recengine.pipeline.reindex.new_words import discover
from recengine.pipeline.reindex.pool import AnalysisPool, Item
from recengine.pipeline.reindex.run import ReindexRun, reindex_run
from recengine.pipeline.reindex.switch import Seed
from recengine.pipeline.reindex.versions import (
    Progress,
    QuietProgress,
    ReindexResult,
    database_name,
    drop_stale_versions,
    fit_params,
    freshness,
    reusable_version,
    store_features,
)
from recengine.storage.db import transaction
from recengine.storage.rows.articles import count_live, texts_after
from recengine.storage.rows.features import (
    embeddings_after,
    load_model_payload,
    max_article_id,
    model_versions,
    save_model,
)
from recengine.storage.state import read_state

__all__ = ["Progress", "QuietProgress", "ReindexResult", "reindex"]


def reindex(
    *,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    batch_size: int = 1_000,
    progress: Progress | None = None,
    pool: AnalysisPool | None = None,
    data_dir: Path | None = None,
    resume: bool = True,
    dedup: Deduplicator | None = None,
    if_stale: bool = False,
) -> ReindexResult:
    """Rebuild the IDF model, all features and the near-duplicate clusters; switch readers to
    them atomically and publish the new version's index files.

    With ``if_stale``, only when the active model is not what the rebuild would make
    (``versions.freshness``) or an interrupted reindex waits: otherwise nothing is done and
    the result says why (``mode="current"``); a rebuild's result says why it ran.

    Args:
        factory: session factory.
        featurizer: tokenizer and feature settings (used in this process).
        batch_size: articles per read page, pool task and write transaction.
        progress: told about phases and articles done.
        pool: where text analysis runs (default: this process only).
        data_dir: where the job state lives (default: ``settings.data_dir``).
        resume: continue an interrupted reindex of the same database and settings.
        dedup: cluster maintenance (built from the featurizer's settings when omitted).
        if_stale: rebuild only what is not up to date (see above).

    Raises:
        ReindexBusy: another reindex is running on the same data directory.
    """
    with reindex_run(
        factory=factory,
        featurizer=featurizer,
        batch_size=batch_size,
        progress=progress,
        pool=pool,
        data_dir=data_dir,
        dedup=dedup,
    ) as run:
        if not if_stale:
            return _full(run, resume)
        fresh = freshness(run.factory, run.featurizer.settings)
        why = fresh.why
        if fresh.current and fresh.version is not None:
            if run.jobs.load() is None:
                # cards are no part of the model: those stale by another summary_chars are
                # derived all the same (nothing else is rebuilt)
                fill_cards(run.factory, run.featurizer.settings, run.progress)
                return ReindexResult(
                    fresh.version, fresh.n_docs, fresh.n_terms, 0, mode="current", reason=why
                )
            why = "an unfinished reindex was there"
        return replace(_full(run, resume), reason=why)


def _full(run: ReindexRun, resume: bool) -> ReindexResult:
    fill_cards(run.factory, run.featurizer.settings, run.progress)
    job, resumed = _open_job(run, resume)
    if job.version is None:
        model = _pass1(run, _words_of(run, job))
        with transaction(run.factory) as session:
            job.version = save_model(
                session=session,
                payload=model.to_bytes(),
                n_docs=model.n_docs,
                n_terms=len(model.df),
                params=fit_params(run.featurizer.settings, job.start_seq, job.engine),
                now=datetime.now(UTC),
            )
        job.extra["spool_bytes"] = run.jobs.spool_size()
        run.jobs.save(job)
    else:
        with transaction(run.factory) as session:
            model = IdfModel.from_bytes(load_model_payload(session=session, version=job.version)[0])
        run.use_words(model.words)  # for the switch's catch-up
    version = run.version = job.version
    _pass2(run, model, version)
    caught_up = run.finish(
        model,
        version,
        job.start_seq,
        clusters=lambda index, _seq: run.dedup.cluster_all(
            run.factory,
            version,
            index,
            run.pool.compared_many if run.pool.parallel else None,
            run.kept,
        ),
        seeds={PassageKind.name: _spooled_passages(run, job.start_seq)},
    )
    return ReindexResult(version, model.n_docs, len(model.df), caught_up, resumed)


def _open_job(run: ReindexRun, resume: bool) -> tuple[JobRecord, bool]:
    """The job to run: the interrupted one when it can be resumed, else a new one.

    Whatever an older, abandoned job left in SQL (models and features of versions that are
    neither active nor the resumed job's) is deleted here.
    """
    with transaction(run.factory) as session:
        state = read_state(session=session)
    new = JobRecord(
        database=database_name(run.factory),
        params=model_params(run.featurizer.settings),
        start_seq=state.seq,
        started_at=datetime.now(UTC).isoformat(),
    )
    old = run.jobs.load() if resume else None
    usable = old is not None and old.matches(new) and old.start_seq <= state.seq
    if old is not None and old.version is not None and usable:
        usable = (
            old.version != state.active_model_version
            and old.extra.get("spool_bytes") == run.jobs.spool_size()
            and old.version in _versions(run)
        )
    job = old if usable and old is not None else new
    drop_stale_versions(run.factory, keep={state.active_model_version, job.version})
    if job is new:
        run.jobs.clear()
        run.jobs.save(new)
    return job, job is not new


def _versions(run: ReindexRun) -> list[int]:
    with transaction(run.factory) as session:
        return model_versions(session=session)


def _words_of(run: ReindexRun, job: JobRecord) -> Words:
    """The new words of the job (``pipeline.reindex.new_words``), which the run now tokenizes with:
    those a resumed job found before it stopped (what it spooled was tokenized with them),
    else discovered now and recorded in the job."""
    if "words" in job.extra:
        words: Words = tuple(job.extra["words"])
    else:
        if run.featurizer.settings.tokenizer.new_words:
            run.progress.start("new words", None)
        words = discover(run.factory, run.featurizer)
        job.extra["words"] = list(words)
        run.jobs.save(job)
    run.use_words(words)
    return words


def _pass1(run: ReindexRun, words: Words) -> IdfModel:
    """Tokenize every live article (after what an interrupted run spooled) with the dictionary
    and ``words``; fit the IDF."""
    df: Counter[str] = Counter()
    n_docs, last = 0, 0
    for batch in run.jobs.batches():  # a resumed job: what is spooled is done
        df.update(batch.analyzed.counts.doc_frequencies())
        n_docs, last = n_docs + len(batch.ids), batch.ids[-1]
    with transaction(run.factory) as session:
        total = count_live(session=session)
    run.progress.start("tokenize", max(total, n_docs), n_docs)
    size = page_size(run.batch_size, run.pool.workers, total - n_docs)
    asked: deque[list[tuple[int, int]] | None] = deque()  # (id, seq) of each page in flight
    pages = _pages(run.factory, last, size)
    reuse = reusable_version(run.factory, run.featurizer)
    tasks = _knowing(run.factory, _asking(run, pages, asked), reuse)
    with run.jobs.open_spool() as spool:
        for record in run.pool.spool_batches(tasks):
            df.update(record.df)
            n_docs += record.n_docs
            run.jobs.append_payload(spool, record.payload)
            keys = asked.popleft() or []
            if record.compared is not None:
                for (i, seq), text in zip(keys, record.compared, strict=True):
                    run.kept.put(i, seq, text)
            if record.spilled is not None:
                path, where = record.spilled
                run.kept.add(path, keys, where)
            run.progress.update(record.n_docs)
            checkpoint("tokenized")
    return IdfModel(n_docs=n_docs, df=dict(df), words=words)


def _asking(
    run: ReindexRun,
    pages: Iterator[list[tuple[int, str, str, int]]],
    asked: deque[list[tuple[int, int]] | None],
) -> Iterator[tuple[list[Item], Asked]]:
    """The pages as pool tasks asking for what is compared of their texts too (the leader
    pass verifies most articles of a corpus whose candidates crowd): returned for the pages
    whose shingles fit what is left of ``run.kept``'s budget (about 8 bytes per character of
    title and content, an overestimate: markup and whitespace make none), spilled to the job
    directory for the others (``pipeline.reindex.spill``); with ``reindex.spill_compared`` off,
    returned until the budget is spent (the last page's texts that overflow it are dropped).
    ``asked`` gets, per page in order, the ``(id, seq)`` of its articles when it asked, else
    None."""
    budget = run.kept.budget
    spilling = run.featurizer.settings.reindex.spill_compared
    for page in pages:
        compare: Asked = False
        cost = sum(8 * (len(title) + len(content)) for _, title, content, _ in page)
        # in memory: a page that fits, or (nothing spilled) one while any budget is left
        if cost <= budget or (budget > 0 and not spilling):
            compare = True
            budget -= cost
        elif spilling:
            compare = run.jobs.path
        asked.append([(i, seq) for i, _, _, seq in page] if compare else None)
        yield [(i, title, content) for i, title, content, _ in page], compare


def _knowing(
    factory: sessionmaker[Session], tasks: Iterator[tuple[list[Item], Asked]], version: int | None
) -> Iterator[Task]:
    """The tasks with the encoder vectors ``version`` holds for their items (none when None)."""
    for items, compare in tasks:
        if version is None or not items:
            yield items, compare
            continue
        with transaction(factory) as session:
            rows = embeddings_after(
                session=session, version=version, after_id=items[0][0] - 1, upto_id=items[-1][0]
            )
        stored = {r.id: (r.text_hash, r.embedding) for r in rows}
        yield items, compare, [stored.get(i) for i, _, _ in items]


def _spooled_passages(run: ReindexRun, start_seq: int) -> Seed:
    """The new version's passage index, of the passage hashes pass 1 spooled: what a build
    from SQL as of ``start_seq`` holds (every spooled text was read after it; the switch
    catches up what changed since), without reading or cleaning a text again."""
    kind = passage_kind(run.featurizer.settings)
    return Seed(kind.build_packed(spooled_passages(run.jobs.batches())), start_seq)


def page_size(batch_size: int, workers: int, articles: int) -> int:
    """Articles per page of pass 1 (one pool task, one spool record, one write of pass 2):
    ``batch_size``, or with several workers fewer, so that ``articles`` make at least four
    pages per worker and the last ones leave no worker idle for long (a 55 MB corpus of long
    articles was three pages of 1,000: one of two workers idled through the third); never
    under 64 articles (or ``batch_size``, if smaller), whose fixed costs per page would show.
    """
    if workers <= 1:
        return batch_size
    return min(batch_size, max(64, -(-articles // (4 * workers))))


def _pages(
    factory: sessionmaker[Session], after: int, size: int
) -> Iterator[list[tuple[int, str, str, int]]]:
    """Live articles' ``(id, title, content, seq)`` with id > ``after``, in id order, one short
    read transaction per page."""
    while True:
        with transaction(factory) as session:
            rows = texts_after(session=session, after_id=after, limit=size)
        if not rows:
            return
        after = rows[-1].id
        yield [(r.id, r.title, r.content, r.seq) for r in rows]


def _pass2(run: ReindexRun, model: IdfModel, version: int) -> None:
    """Features of every spooled article under ``version``, after those already written."""
    with transaction(run.factory) as session:
        written = max_article_id(session=session, version=version)
    run.progress.start("write", model.n_docs)
    records = run.jobs.payloads()
    for n, rows in run.pool.features_of_spool(records, model, run.jobs.path, written):
        store_features(run.factory, version, rows)
        run.progress.update(n)
        checkpoint("written")
