"""Switching readers to a new model version while writers keep writing: the end of every reindex
that fits a new model (local and Spark engines).

Before the switch, features of the new version exist for every article as of the reindex's
start. What happens next, in order (``switch_to``):

1. **catch-up** outside the writers' lock: articles changed since the start are read in a short
   read transaction, analysed outside any transaction, and their features written in a short
   write transaction (never a read then a write in one transaction: on SQLite a commit by
   another process in between fails the write with "database is locked");
2. **derived indexes** of the new version (``derived.registry``: near-duplicates, passages,
   related, ...) are built from SQL, as of the position the catch-up reached, except those the
   reindex made itself (``Switch.seeds``: the local engine's passage index, from its spool),
   which are caught up to it from the position they were made at;
3. **clusters** of the new version are computed and written under it, outside the lock
   (``clusters(candidates, seq)``: the local engine's full recluster, or Spark's verified
   pairs);
4. **rounds**: the articles changed since the last round get their features, their place in
   the new version's candidate indexes (radius and passages) and their clusters, until a
   round finds only a few;
5. **the switch**, one short transaction under the writers' lock (``state.begin_write``): the
   last few catch up, the active version changes, their clusters are updated. Its work is
   bounded by what was written during the last round, not by the corpus;
6. **publish**: every derived index of the new version is caught up and saved, so servers
   load the files instead of building (each kind's build lock is held from before the switch
   until its file is saved: a process that needs the new version waits, then loads it). The
   kinds that read cluster rows (``IndexKind.reads_clusters``: the canonicals, the briefs),
   which the reindex writes without a ``seq``, are built here, after the switch, not in step 2.

An index of the new version may hold stale rows of articles that changed after the position it
was rewound to (``Follower.rewind``): their features of the new version are written later
without a new ``seq``, and the follower applies them again then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.derived.neardup import NearDupKind
from recengine.derived.passages import PassageKind
from recengine.derived.registry import followers
from recengine.features.tfidf import IdfModel
from recengine.index.follower import Follower
from recengine.index.neardup.candidates import Candidates
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.checkpoints import checkpoint
from recengine.pipeline.reindex.versions import Progress, store_features, write_features
from recengine.storage.db import transaction
from recengine.storage.rows.articles import changed_since, ids_changed_between
from recengine.storage.rows.index_rows import SqlIndexRows, index_rows
from recengine.storage.state import begin_write, lock_writers, set_active_model

SMALL_ROUND = 32  # articles: a round this small ends the rounds (the switch does the rest)
MAX_ROUNDS = 20

# (the new version's candidate indexes as of seq, seq) -> its clusters written under it
Clusters = Callable[[Candidates, int], object]
# The followers of the candidate sources (radius, passages), in that order.
Sources = tuple[Follower[Any], Follower[Any]]


@dataclass(frozen=True)
class Seed:
    """An index of the new version that the reindex made itself, holding what a build from
    SQL as of change ``seq`` would hold (``Follower.seed``): the local engine's passage index,
    of the passage hashes its workers computed beside the tokens."""

    index: Any
    seq: int


@dataclass
class Switch:
    """What the switch needs: the database, the analysis, the new model and its version, and
    the indexes of the version made already (by kind name; the others are built from SQL)."""

    factory: sessionmaker[Session]
    featurizer: Featurizer
    dedup: Deduplicator
    model: IdfModel
    version: int
    batch_size: int
    progress: Progress
    caught_up: int = 0
    seeds: Mapping[str, Seed] = field(default_factory=dict)


def switch_to(switch: Switch, start_seq: int, clusters: Clusters) -> int:
    """Catch up, build and cluster the new version, switch to it, publish its indexes.

    Returns:
        How many article rows the catch-up recomputed.
    """
    switch.progress.start("catch-up", None)
    seq = _catch_up_outside(switch, start_seq)
    indexes = followers(switch.featurizer.settings)
    for name, follower in indexes.items():
        if follower.kind.reads_clusters:
            continue  # follows cluster rows the reindex writes without a seq: built after
        with index_rows(switch.factory) as rows:
            seed = switch.seeds.get(name)
            if seed is not None:
                database = rows.position()[2]
                follower.seed(seed.index, version=switch.version, seq=seed.seq, database=database)
            follower.sync(rows, version=switch.version)
        follower.rewind(seq)
    near: Sources = (indexes[NearDupKind.name], indexes[PassageKind.name])
    switch.progress.start("clusters", None)
    clusters(_candidates(near), seq)
    for _ in range(MAX_ROUNDS):
        seq, changed = _round(switch, near, seq)
        if changed <= SMALL_ROUND:
            break
    checkpoint("prepared")
    switch.progress.start("switch", None)
    with ExitStack() as locks:
        held = {name: locks.enter_context(ExitStack()) for name in indexes}
        for name, follower in indexes.items():
            held[name].enter_context(follower.build_lock())
        _switch(switch, near, seq)
        checkpoint("switched")
        switch.progress.start("publish", None)
        for name, follower in indexes.items():  # candidates first: writers wait for them
            _publish(switch.factory, follower)
            held[name].close()
    return switch.caught_up


def _catch_up_outside(switch: Switch, seq: int) -> int:
    """Features of the new version for every article changed after ``seq``, until none is
    left; returns the ``seq`` of the last one (``seq`` itself when there was none)."""
    position, last = (seq + 1, 0), seq  # (seq + 1, 0): just after every row of seq
    while True:
        with transaction(switch.factory) as session:
            rows = changed_since(session=session, after=position, limit=switch.batch_size)
        if not rows:
            return last  # (rows of one seq commit together: all of last's are done)
        store_features(switch.factory, switch.version, _features(switch, rows))
        position, last = (rows[-1].seq, rows[-1].id), rows[-1].seq
        switch.caught_up += len(rows)
        switch.progress.update(len(rows))


def _features(switch: Switch, rows: Any) -> list[Any]:
    stats = [switch.featurizer.analyze(r.title, r.content) for r in rows]
    computed = switch.featurizer.features(stats, switch.model)
    return [(r.id, f) for r, f in zip(rows, computed, strict=True)]


def _round(switch: Switch, near: Sources, seq: int) -> tuple[int, int]:
    """One round outside the lock: what changed after ``seq`` gets its features, its place in
    the candidate indexes and its clusters. Returns ``(new seq, articles changed)``."""
    upto = _catch_up_outside(switch, seq)
    if upto == seq:
        return seq, 0
    for follower in near:
        with index_rows(switch.factory) as rows:
            follower.sync(rows, version=switch.version)
        follower.rewind(upto)
    with transaction(switch.factory) as session:  # reading: no lock held meanwhile
        changed = ids_changed_between(session=session, after_seq=seq, upto_seq=upto)
        plan = switch.dedup.plan_version(session, changed, switch.version, _candidates(near))
    with transaction(switch.factory) as session:  # only this process writes the new version
        lock_writers(session=session)
        plan.write(session)
    return upto, len(changed)


def _switch(switch: Switch, near: Sources, seq: int) -> None:
    """The switch transaction, under the writers' lock: the last changes, then the switch."""
    with transaction(switch.factory) as session:
        state = begin_write(session=session)
        position = (seq + 1, 0)
        while rows := changed_since(session=session, after=position, limit=switch.batch_size):
            write_features(session, switch.version, _features(switch, rows))
            position = (rows[-1].seq, rows[-1].id)
            switch.caught_up += len(rows)
        set_active_model(session=session, version=switch.version)
        for follower in near:  # the new version is active in this transaction
            held = follower.sync(SqlIndexRows(session))
            assert held is not None and held.version == switch.version
        changed = ids_changed_between(session=session, after_seq=seq, upto_seq=state.seq)
        if changed:
            switch.dedup.update_version(session, changed, switch.version, _candidates(near))


def publish_all(factory: sessionmaker[Session], featurizer: Featurizer) -> None:
    """Build the active version's indexes from SQL and save their files: the last step of a
    switch, for a reindex interrupted after it (``reindex_run.finish_after_switch``)."""
    for follower in followers(featurizer.settings).values():
        _publish(factory, follower)


def _publish(factory: sessionmaker[Session], follower: Follower[Any]) -> None:
    if follower.kind.reads_clusters:
        follower.invalidate()  # the new version's rows are all in now: built from them
    with index_rows(factory) as rows:
        follower.sync(rows)
    follower.save()


def _candidates(near: Sources) -> Candidates:
    radius, passages = near[0].held, near[1].held
    assert radius is not None and passages is not None
    return Candidates(radius.index, passages.index)
