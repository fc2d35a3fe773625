"""Keeping near-duplicate clusters in SQL right: at ingest (incremental) and at reindex (all).

Clusters are stored per IDF model version (``storage.rows.clusters``); readers see the active one.

At ingest, inside the batch's write transaction and after its features are written,
:meth:`Deduplicator.update` re-decides exactly the articles a change can affect
(:func:`recengine.pipeline.clusters.leader_updates.relink`: the changed articles, the members of a
canonical that changed or went, and the later articles a new canonical may take over), in rank
order. Work per write is bounded by the candidates of the written article, not by the size of the
cluster it joins: it is verified against the earlier canonicals among its candidates only (the
cluster invariant "every member within the criterion of its canonical" needs nothing more).
The canonicals among its candidates come from a radius index of the canonicals alone (the
process's ``derived.neardup.CanonicalKind`` follower), so a write into a cluster of any size
looks at its few canonicals, never at its members. The result equals a full recluster. Rows
are replaced in the same transaction, so a crash leaves the batch and its clusters both in or
both out; the articles whose member row came or went get the write's ``seq``
(:meth:`ClusterPlan.write`), so every process's index of canonicals follows them like an edit.

At reindex, :meth:`Deduplicator.cluster_all` computes every cluster of the new version before
the switch, outside the writers' lock, by the same rule, without enumerating the pairs of a
cluster: the articles in rank order, a block at a time, each verified against the canonicals in
its reach until one passes, those of earlier blocks found in block tables of every fingerprint
on which the canonicals so far are marked
(:func:`~recengine.pipeline.clusters.leader_pass.leader_blocks`,
:mod:`recengine.index.neardup.blocks`: a cluster of n copies costs about n look-ups answered by one
canonical and n verifications, not n^2 / 2 pairs); texts are read a block of articles at a time and
rows written in short transactions. The articles changed meanwhile are then brought up to date with
:meth:`update_version`, the last few inside the switch (``pipeline.reindex.switch``).
:meth:`recluster` does the same in one transaction for the active version (a reference for tests and
repairs).

Every one of these paths (the Spark engine's reindex clusters with :meth:`cluster_all` too)
applies the editors' cluster overrides (``not_duplicate``, ``same_article``, ``canonical``) by
the same rule (``pipeline.clusters.constraints``), with work bounded the same way: the full
recluster is the same leader pass driven by the rules (``pipeline.clusters.constraints_pass``), and
a write near an article an override names re-decides with ``relink`` over the pass's state under the
rules (``pipeline.clusters.constraints_updates``); no path verifies every pair of a cluster an
editor touched (``pipeline.clusters.overrides``). An override change re-decides the articles it
names the same way (:meth:`regroup`) and marks them changed (``recommend.overrides``), so a reindex
running meanwhile catches them up like an edit.

Every path verifies a pair the same way, from the version's stored features and texts
(``pipeline.clusters.verify``); the write path sees SQL and the indexes through
``pipeline.clusters.plan``.

The index of writers is the process's near-duplicate :class:`~recengine.index.follower.Follower`.
Call :meth:`Deduplicator.prepare` before a write transaction: a first use or a model switch
then loads (or builds) the index outside the writers' lock, and the sync inside the
transaction only applies the last few changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.neardup import canonical_follower, neardup_follower
from recengine.derived.passages import PassageKind, passage_follower
from recengine.features.neardup import MERGE, NearDupCriterion
from recengine.index.follower import Follower
from recengine.index.neardup.candidates import Candidates
from recengine.index.neardup.passages import PassageIndex
from recengine.index.neardup.radius import NearDupIndex
from recengine.pipeline.clusters.constraints_pass import ruled_leader_blocks
from recengine.pipeline.clusters.constraints_relink import ruled_relink
from recengine.pipeline.clusters.leader_pass import leader_blocks, rank_order
from recengine.pipeline.clusters.leader_rule import Member
from recengine.pipeline.clusters.leader_updates import relink
from recengine.pipeline.clusters.overrides import cluster_rules, override_region, with_partners
from recengine.pipeline.clusters.plan import SqlClusterView
from recengine.pipeline.clusters.verify import (
    BlockTexts,
    CompareMany,
    Kept,
    PairJudge,
    Reading,
    TransactionJudging,
)
from recengine.pipeline.featurize import TextAnalysis
from recengine.storage.db import transaction
from recengine.storage.rows.clusters import (
    MemberRow,
    delete_version,
    insert_rows,
    member_ids,
    member_rows,
    published,
    replace_member_rows,
)
from recengine.storage.rows.index_rows import SqlIndexRows, index_rows
from recengine.storage.rows.overrides import mark_changed
from recengine.storage.state import begin_write, read_state
from recengine.text.neardup.kept import KeptTexts, WrittenTexts

WRITE_CHUNK = 1_000  # cluster rows per short write transaction (a reindex, before its switch)


class Deduplicator:
    """Cluster maintenance for one process (holds its synced index).

    Args:
        settings: candidate radius, verification thresholds, index files.
        index: a synced radius index to share; built from settings if omitted.
        passages: a synced passage index to share (the second candidate source); likewise.
        canonicals: a synced radius index of the canonicals to share; likewise.
    """

    def __init__(
        self,
        settings: Settings,
        index: Follower[NearDupIndex] | None = None,
        passages: Follower[PassageIndex] | None = None,
        canonicals: Follower[NearDupIndex] | None = None,
    ) -> None:
        self.judge = PairJudge(
            NearDupCriterion.from_settings(settings), settings.features.strip_boilerplate
        )
        self.index = index or neardup_follower(settings)
        self.passages = passages or passage_follower(settings)
        self.canonicals = canonicals or canonical_follower(settings)
        self.k = settings.features.hamming_k
        self.kept_bytes = settings.reindex.kept_compared_mb << 20  # the leader pass's texts
        # what writes compared of stored texts, kept from one write to the next
        self.kept = KeptTexts(settings.ingest.kept_compared_mb << 20)
        self._committing = threading.local()  # this thread's WrittenTexts, kept at commit

    @contextmanager
    def pending(self) -> Iterator[None]:
        """Wrap a write transaction that calls :meth:`update` (see ``Follower.pending``); what
        its plans compared of the texts it wrote is kept once it committed."""
        writes: list[WrittenTexts] = []
        self._committing.writes = writes
        try:
            with ExitStack() as stack:
                for follower in self._followers():
                    stack.enter_context(follower.pending())
                yield
            for written in writes:
                written.commit()
        finally:
            self._committing.writes = None

    @contextmanager
    def writing(self, factory: sessionmaker[Session]) -> Iterator[None]:
        """:meth:`prepare`, then :meth:`pending`: around a write transaction of another kind
        of change that calls :meth:`regroup` (an editor's cluster override)."""
        self.prepare(factory)
        with self.pending():
            yield

    def hint(self, items: Sequence[tuple[str, str]], done: TextAnalysis) -> None:
        """What was computed of ``(title, content)`` texts an ingest is about to write, beside
        their tokens (``text.neardup.hints``): their passages for the passage index
        (``derived.passages.PassageKind.hints``), their word points for verification."""
        kind = self.passages.kind
        if isinstance(kind, PassageKind):
            kind.hints.put(items, done.passages)
        self.judge.hints.put(items, done.points)

    def prepare(self, factory: sessionmaker[Session]) -> None:
        """Bring the indexes up to date in a read transaction of their own: call before a write
        transaction, so that a load or build after a model switch happens outside its lock."""
        for follower in self._followers():
            with index_rows(factory) as rows:
                follower.sync(rows)

    def synced(self, session: Session) -> Candidates:
        """The candidate indexes (and the canonicals' one) caught up with ``session``'s
        transaction (its own writes included)."""
        rows = SqlIndexRows(session)
        near, passages = self.index.sync(rows), self.passages.sync(rows)
        heads = self.canonicals.sync(rows)
        if near is None or passages is None or heads is None:
            return Candidates(NearDupIndex(self.k), PassageIndex(), NearDupIndex(self.k))
        return Candidates(near.index, passages.index, heads.index)

    def update(self, session: Session, changed: Iterable[int]) -> int:
        """Re-decide what ``changed`` articles (new, edited or deleted) affect under the active
        version, in the caller's (write) transaction; returns the rows written."""
        seeds = set(changed)
        state = read_state(session=session)
        version = state.active_model_version
        if not seeds or version is None:
            return 0
        index = self.synced(session)
        plan = self.plan_version(session, seeds, version, index, self._writing(state.seq))
        return self._write_active(session, plan, state.seq, index)

    def regroup(self, session: Session, changed: Iterable[int]) -> int:
        """Re-decide what ``changed`` articles affect under the active version's cluster
        overrides as they now are, in the caller's (write) transaction (an override naming
        them was added or removed); returns the rows written."""
        state = read_state(session=session)
        version = state.active_model_version
        if version is None:
            return 0
        index = self.synced(session)
        named = {i for i in changed if i in index}
        kept = self._writing(state.seq)
        plan = self._ruled_plan(session, version, index, named, set(), kept, moved=False)
        return self._write_active(session, plan, state.seq, index)

    def leader_texts(self) -> KeptTexts:
        """A store for what a leader pass compares (``reindex.kept_compared_mb``): a reindex
        makes it before its pass 1, which fills it (``pipeline.reindex.run``)."""
        return KeptTexts(self.kept_bytes)

    def _writing(self, seq: int) -> Kept:
        """The kept texts as this thread's write transaction of ``seq`` sees them: what it
        compares of texts it wrote is kept when :meth:`pending` sees it commit (outside
        :meth:`pending`, never)."""
        written = self.kept.writing(seq)
        writes: list[WrittenTexts] | None = getattr(self._committing, "writes", None)
        if writes is not None:
            writes.append(written)
        return written

    def update_version(
        self, session: Session, changed: Iterable[int], version: int, index: Candidates
    ) -> int:
        """Re-decide what ``changed`` articles affect under ``version``, with ``index`` (that
        version's candidate indexes); returns the rows written."""
        return self.plan_version(session, changed, version, index).write(session)

    def plan_version(
        self,
        session: Session,
        changed: Iterable[int],
        version: int,
        index: Candidates,
        kept: Kept | None = None,
    ) -> ClusterPlan:
        """What :meth:`update_version` would write, read in ``session`` and not written yet.

        For a version only this process writes (a reindex's new one, before its switch): the
        reading can run in a read transaction and the writing in a short write transaction.
        ``kept``: where what is compared is kept (the process's store by default; a write
        transaction's view of it when the texts were written in ``session``).
        """
        seeds = set(changed)
        live = {i for i in seeds if i in index}
        kept = self.kept if kept is None else kept
        view = SqlClusterView(session, index, version, self.judge, live, kept)
        decided = relink(view, live, seeds - live)
        if _near(override_region(session, version), decided, view.looked, index):
            return self._ruled_plan(session, version, index, live, seeds - live, kept)
        rows = [_row(m) for m in decided.values() if m is not None]
        return ClusterPlan(version, sorted(decided), rows)

    def _ruled_plan(
        self,
        session: Session,
        version: int,
        index: Candidates,
        changed: set[int],
        removed: set[int],
        kept: Kept,
        moved: bool = True,
    ) -> ClusterPlan:
        """The plan under the cluster overrides (``pipeline.clusters.constraints_updates``):
        ``changed`` and ``removed`` articles re-decided with those the overrides name with them (an
        override change names its articles as ``changed``, with ``moved`` False: no rank moved)."""
        judging = TransactionJudging(self.judge, session, version)
        rules = cluster_rules(session, judging, lambda ids: ids[index.radius.contains_many(ids)])
        seeds = {i for i in with_partners(session, changed | removed) if i in index} - removed
        view = SqlClusterView(session, index, version, self.judge, changed, kept)
        suspects = () if moved else changed  # an override removed may have pinned one
        rows = ruled_relink(view, rules, seeds, removed, suspects, moved)
        members = [_row(m) for m in rows.values() if m is not None]
        return ClusterPlan(version, sorted(rows), sorted(members, key=lambda r: r.article_id))

    def recluster(self, session: Session) -> int:
        """Replace every cluster row of the active version by a full recluster, in the
        caller's transaction; returns the rows written."""
        version = read_state(session=session).active_model_version
        if version is None:
            return 0
        index = self.synced(session)
        before = member_ids(session=session, version=version)
        delete_version(session=session, version=version)
        members = self._leaders(lambda: nullcontext(session), index, version)
        insert_rows(session=session, version=version, rows=members)
        nodes = sorted(set(before) | {m.article_id for m in members})
        mark_changed(session=session, article_ids=nodes, seq=begin_write(session=session).seq)
        self.canonicals.invalidate()
        return len(members)

    def cluster_all(
        self,
        factory: sessionmaker[Session],
        version: int,
        index: Candidates,
        many: CompareMany | None = None,
        kept: Kept | None = None,
    ) -> int:
        """Every cluster of ``version`` by a full recluster of ``index``, read and written in
        short transactions (a reindex, before its switch: readers do not see the version yet).

        Args:
            many: computes what is compared of a block's texts at once (the reindex's pool
                when it has several workers; ``verify.BlockTexts``).
            kept: what is compared of texts already (a reindex's pass 1 fills it), and where
                the pass keeps what it compares; a store of ``reindex.kept_compared_mb`` when
                omitted.

        Returns:
            The rows written.
        """
        members = self._leaders(lambda: transaction(factory), index, version, many, kept)
        return self._write_version(factory, version, members)

    def save(self) -> None:
        """Write the index files (call after the transaction committed)."""
        for follower in self._followers():
            follower.save()

    def _followers(self) -> tuple[Follower[Any], ...]:
        return self.index, self.passages, self.canonicals

    def _write_active(
        self, session: Session, plan: ClusterPlan, seq: int, index: Candidates
    ) -> int:
        """Write a plan of the active version in the write transaction of ``seq``
        (``index``: as synced before the plan). Every article whose member row the plan
        changes gets ``seq`` (usually the written articles, which have it already), so every
        process's indexes that read member rows read them again (``IndexKind.reads_clusters``:
        the canonicals, those that became or stopped being members; the briefs, whose
        canonical, rule or figure changed), this process's included."""
        changed = plan.changed(session)
        written = plan.write(session)
        mark_changed(session=session, article_ids=changed, seq=seq)
        self.canonicals.rewind(seq - 1)
        return written

    def _write_version(
        self, factory: sessionmaker[Session], version: int, members: Sequence[MemberRow]
    ) -> int:
        while True:
            with transaction(factory) as session:
                if not delete_version(session=session, version=version, limit=WRITE_CHUNK):
                    break
        for start in range(0, len(members), WRITE_CHUNK):
            with transaction(factory) as session:
                insert_rows(
                    session=session, version=version, rows=members[start : start + WRITE_CHUNK]
                )
        return len(members)

    def _leaders(
        self,
        reading: Reading,
        index: Candidates,
        version: int,
        many: CompareMany | None = None,
        kept: Kept | None = None,
    ) -> list[MemberRow]:
        """Every cluster of ``index`` by :func:`leader_blocks`: the articles in rank order, each
        decided against the canonicals in its reach (the radius index's articles, with the
        passage pairs as the other candidates). It verifies a pair per candidate of every
        article: the compiled count of shared shingles pays for its start-up here."""
        MERGE.buy()
        ids, fps = index.radius.arrays()
        with reading() as session:
            ids, fps = rank_order(
                ids, fps, lambda part: published(session=session, article_ids=part)
            )
        kept = self.leader_texts() if kept is None else kept
        block = BlockTexts(self.judge, reading, version, many, kept)
        extra = index.passage_pairs()
        with reading() as session:
            judging = TransactionJudging(self.judge, session, version)
            rules = cluster_rules(session, judging, lambda named: named[np.isin(named, ids)])
        if rules.empty:
            members = leader_blocks(ids, fps, index.radius.k, extra, block.verify, block.prefetch)
        else:
            members = ruled_leader_blocks(
                ids,
                fps,
                index.radius.k,
                extra,
                rules,
                index,
                block.verify,
                block.measure,
                block.prefetch,
            )
        return [_row(m) for m in members]


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster rows of ``version`` to replace: the member rows of ``nodes`` (the articles
    re-decided) by ``members`` (those of them that are members now)."""

    version: int
    nodes: list[int]
    members: list[MemberRow]

    def changed(self, session: Session) -> list[int]:
        """The nodes whose member row (of the active version, which the plan is of) the plan
        changes: added, removed, or another canonical, distance, figure or rule."""
        before = member_rows(session=session, article_ids=self.nodes)
        after = {m.article_id: m for m in self.members}
        return [n for n in self.nodes if before.get(n) != after.get(n)]

    def write(self, session: Session) -> int:
        """Replace the rows (in the caller's write transaction); returns how many."""
        replace_member_rows(
            session=session, version=self.version, article_ids=self.nodes, rows=self.members
        )
        return len(self.members)


def _near(
    region: set[int], decided: Mapping[int, Member | None], looked: set[int], index: Candidates
) -> bool:
    """Whether a plan re-decided or looked at a candidate in the override ``region``."""
    if not region:
        return False
    if not region.isdisjoint(decided):
        return True
    named = np.array(sorted(region), dtype=np.int64)
    return any(len(index.among(x, named)) for x in sorted(looked))


def _row(m: Member) -> MemberRow:
    return MemberRow(m.article_id, m.canonical_id, m.distance, m.score, m.rule or None)
