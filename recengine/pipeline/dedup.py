"""Keeping near-duplicate clusters in SQL right: at ingest (incremental) and at reindex (all).

Clusters are stored per IDF model version (``storage.clusters``); readers see the active one.

At ingest, inside the batch's write transaction and after its features are written,
:meth:`Deduplicator.update` re-decides exactly the articles a change can affect
(:func:`recengine.pipeline.leader.relink`: the changed articles, the members of a canonical
that changed or went, and the later articles a new canonical may take over), in rank order.
Work per write is bounded by the candidates of the written article, not by the size of the
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
on which the canonicals so far are marked (:func:`~recengine.pipeline.rank_blocks.leader_blocks`,
:mod:`recengine.index.blocks`: a cluster of n copies costs about n look-ups answered by one
canonical and n verifications, not n^2 / 2 pairs); texts
are read a block of articles at a time and rows written in short transactions. The articles
changed meanwhile are then brought up to date with :meth:`update_version`, the last few inside
the switch (``pipeline.switch``). :meth:`recluster` does the same in one transaction for the active
version (a reference for tests and repairs).

Every one of these paths, the Spark engine's included (:meth:`cluster_edges`), applies the
editors' cluster overrides (``not_duplicate``, ``same_article``, ``canonical``) by the same
rule (``pipeline.cluster_rules``): the plain paths above wherever no override can matter, the
whole component where one can (``pipeline.override_clusters``). An override change
recomputes the component of the articles it names (:meth:`regroup`) and marks them changed
(``recommend.overrides``), so a reindex running meanwhile catches them up like an edit.

The index of writers is the process's near-duplicate :class:`~recengine.index.follower.Follower`.
Call :meth:`Deduplicator.prepare` before a write transaction: a first use or a model switch
then loads (or builds) the index outside the writers' lock, and the sync inside the
transaction only applies the last few changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.neardup import canonical_follower, neardup_follower
from recengine.derived.passages import passage_follower
from recengine.features.neardup import NearDupCriterion, Verdict
from recengine.features.tfidf import SparseVector
from recengine.index.candidates import Candidates
from recengine.index.follower import Follower
from recengine.index.neardup import IdArray, NearDupIndex
from recengine.index.passages import PassageIndex
from recengine.pipeline.clustering import Edge, Member, rank_key
from recengine.pipeline.featurize import compared_of
from recengine.pipeline.leader import Ids, Rank, relink
from recengine.pipeline.override_clusters import (
    constrained_rows,
    overridden,
    override_region,
    regroup,
)
from recengine.pipeline.rank_blocks import leader_blocks, rank_order
from recengine.storage.articles import titles_and_contents
from recengine.storage.clusters import (
    MemberRow,
    canonicals_of,
    delete_version,
    insert_rows,
    live_published,
    member_ids,
    members_of_all,
    not_members,
    published,
    replace_member_rows,
)
from recengine.storage.db import transaction
from recengine.storage.features import features_of
from recengine.storage.index_rows import SqlIndexRows, index_rows
from recengine.storage.overrides import CLUSTER_KINDS, mark_changed, relations_of_kinds
from recengine.storage.state import begin_write, read_state
from recengine.text.compare import Compared

WRITE_CHUNK = 1_000  # cluster rows per short write transaction (a reindex, before its switch)
_UNKNOWN, _MEMBER, _FREE = -1, 0, 1  # stored status of an id, as read in one plan

Reading = Callable[[], AbstractContextManager[Session]]


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
        self.criterion = NearDupCriterion.from_settings(settings)
        self.index = index or neardup_follower(settings)
        self.passages = passages or passage_follower(settings)
        self.canonicals = canonicals or canonical_follower(settings)
        self.k = settings.features.hamming_k
        self.strip = settings.features.strip_boilerplate

    @contextmanager
    def pending(self) -> Iterator[None]:
        """Wrap a write transaction that calls :meth:`update` (see ``Follower.pending``)."""
        with ExitStack() as stack:
            for follower in self._followers():
                stack.enter_context(follower.pending())
            yield

    @contextmanager
    def writing(self, factory: sessionmaker[Session]) -> Iterator[None]:
        """:meth:`prepare`, then :meth:`pending`: around a write transaction of another kind
        of change that calls :meth:`regroup` (an editor's cluster override)."""
        self.prepare(factory)
        with self.pending():
            yield

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
        plan = self.plan_version(session, seeds, version, index)
        return self._write_active(session, plan, state.seq, index)

    def regroup(self, session: Session, changed: Iterable[int]) -> int:
        """Recompute the whole components of ``changed`` articles under the active version's
        cluster overrides, in the caller's (write) transaction (an override was added or
        removed); returns the rows written."""
        state = read_state(session=session)
        version = state.active_model_version
        if version is None:
            return 0
        judging = _Judging(self, session, version)
        index = self.synced(session)
        nodes, members = regroup(session, version, index, changed, judging)
        plan = ClusterPlan(version, sorted(nodes), [_row(m) for m in members])
        return self._write_active(session, plan, state.seq, index)

    def update_version(
        self, session: Session, changed: Iterable[int], version: int, index: Candidates
    ) -> int:
        """Re-decide what ``changed`` articles affect under ``version``, with ``index`` (that
        version's candidate indexes); returns the rows written."""
        return self.plan_version(session, changed, version, index).write(session)

    def plan_version(
        self, session: Session, changed: Iterable[int], version: int, index: Candidates
    ) -> ClusterPlan:
        """What :meth:`update_version` would write, read in ``session`` and not written yet.

        For a version only this process writes (a reindex's new one, before its switch): the
        reading can run in a read transaction and the writing in a short write transaction.
        """
        seeds = set(changed)
        live = {i for i in seeds if i in index}
        view = _SqlView(session, index, version, self, live)
        decided = relink(view, live, seeds - live)
        if _near(override_region(session, version), decided, view.looked, index):
            judging = _Judging(self, session, version)
            nodes, members = regroup(session, version, index, seeds, judging)
            return ClusterPlan(version, sorted(nodes), [_row(m) for m in members])
        rows = [_row(m) for m in decided.values() if m is not None]
        return ClusterPlan(version, sorted(decided), rows)

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

    def cluster_all(self, factory: sessionmaker[Session], version: int, index: Candidates) -> int:
        """Every cluster of ``version`` by a full recluster of ``index``, read and written in
        short transactions (a reindex, before its switch: readers do not see the version yet).

        Returns:
            The rows written.
        """
        members = self._leaders(lambda: transaction(factory), index, version)
        return self._write_version(factory, version, members)

    def cluster_edges(
        self, factory: sessionmaker[Session], version: int, edges: Sequence[Edge]
    ) -> int:
        """Clusters of ``version`` from verified ``edges`` (e.g. Spark's), replacing every row
        of that version in short transactions; returns the rows written."""
        with transaction(factory) as session:
            members = self._assign(session, version, edges)
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
        (``index``: as synced before the plan). The articles that became or stopped being
        members get ``seq`` (usually the written articles, which have it already), so every
        process's index of canonicals reads them again, this process's included."""
        written = plan.write(session)
        mark_changed(session=session, article_ids=plan.flipped(index), seq=seq)
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

    def _leaders(self, reading: Reading, index: Candidates, version: int) -> list[MemberRow]:
        """Every cluster of ``index`` by :func:`leader_blocks`: the articles in rank order, each
        decided against the canonicals in its reach (the radius index's articles, with the
        passage pairs as the other candidates)."""
        ids, fps = index.radius.arrays()
        with reading() as session:
            ids, fps = rank_order(
                ids, fps, lambda part: published(session=session, article_ids=part)
            )
        block = _Block(self, reading, version)
        extra = index.passage_pairs()
        plain = leader_blocks(ids, fps, index.radius.k, extra, block.verify, block.prefetch)
        with reading() as session:
            members = overridden(session, version, index, plain, _Judging(self, session, version))
        return [_row(m) for m in members]

    def _assign(self, session: Session, version: int, edges: Sequence[Edge]) -> list[MemberRow]:
        """Rows from every verified edge of ``version`` (Spark's) under every cluster override."""
        relations = relations_of_kinds(session=session, kinds=CLUSTER_KINDS)
        judging = _Judging(self, session, version)
        return [_row(m) for m in constrained_rows(session, edges, relations, judging)]

    def _judge(self, x: int, c: int, loaded: _Loaded) -> Edge | None:
        fps, vectors = loaded.fps, loaded.vectors
        if x not in fps or c not in fps:
            return None
        tx, tc = loaded.compared(x, self.strip), loaded.compared(c, self.strip)
        v = self.criterion.judge(fps[x], vectors[x], fps[c], vectors[c], tx, tc)
        return Edge(min(x, c), max(x, c), v.distance, v.score, v.rule) if v.duplicate else None

    def _load(self, session: Session, version: int, ids: set[int], loaded: _Loaded) -> None:
        """Add the fingerprints, vectors and texts of those of ``ids`` not in ``loaded`` yet
        (what is compared of a text is computed when a verification first needs it)."""
        missing = sorted(ids - loaded.fps.keys())
        if not missing:
            return
        rows = features_of(session=session, version=version, article_ids=missing)
        loaded.fps.update({r.article_id: r.fingerprint for r in rows})
        loaded.vectors.update({r.article_id: SparseVector.from_bytes(r.vector) for r in rows})
        texts = titles_and_contents(session=session, article_ids=[r.article_id for r in rows])
        loaded.raw.update(texts)


class _Judging:
    """:class:`recengine.pipeline.override_clusters.Judging` over one transaction."""

    def __init__(self, dedup: Deduplicator, session: Session, version: int) -> None:
        self.dedup, self.session, self.version = dedup, session, version
        self.loaded = _Loaded()

    def prefetch(self, ids: set[int]) -> None:
        self.dedup._load(self.session, self.version, ids, self.loaded)

    def known(self, article_id: int) -> bool:
        return article_id in self.loaded.fps

    def verdict(self, a: int, b: int) -> Verdict | None:
        self.prefetch({a, b})
        fps, vectors = self.loaded.fps, self.loaded.vectors
        if a not in fps or b not in fps:
            return None
        strip = self.dedup.strip
        ta, tb = self.loaded.compared(a, strip), self.loaded.compared(b, strip)
        return self.dedup.criterion.judge(fps[a], vectors[a], fps[b], vectors[b], ta, tb)


class _Block:
    """Texts of one block of the leader pass, loaded at once (in a read of their own); what
    the next block needs too is kept (a canonical most blocks meet is compared once), the
    rest dropped."""

    def __init__(self, dedup: Deduplicator, reading: Reading, version: int) -> None:
        self.dedup, self.reading, self.version = dedup, reading, version
        self.loaded = _Loaded()

    def prefetch(self, ids: set[int]) -> None:
        self.loaded = self.loaded.keep(ids)
        with self.reading() as session:
            self.dedup._load(session, self.version, ids, self.loaded)

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        # Both are in the block's prefetch (leader_blocks's contract); one without features
        # under the version is no duplicate.
        return self.dedup._judge(article_id, canonical_id, self.loaded)


class _SqlView:
    """:class:`recengine.pipeline.leader.ClusterView` over SQL (rows of one model version) and
    that version's index, for one write transaction (what it reads is cached for it)."""

    def __init__(
        self,
        session: Session,
        index: Candidates,
        version: int,
        dedup: Deduplicator,
        batch: Iterable[int] = (),
    ) -> None:
        self.session, self.index, self.version, self.dedup = session, index, version, dedup
        self.loaded = _Loaded()
        self.batch = set(batch)  # the written articles: loaded together at the first verify
        self.found: dict[int, IdArray] = {}
        self.looked: set[int] = set()  # the articles whose candidates were looked at
        self.heads_index = index.canonicals  # the canonicals at the start (None: read SQL)
        # What was read of the stored rows (they do not change while the plan is made): a
        # batch of templated pages has the whole cluster among the candidates of each page,
        # and each member's status is read once per batch, not once per page.
        self.status = np.full(0, _UNKNOWN, np.int8)  # by id: _UNKNOWN, _MEMBER or _FREE
        self.heads: dict[int, int] = {}  # member -> stored canonical

    def candidates(self, article_id: int) -> IdArray:
        self.looked.add(article_id)
        if article_id not in self.found:
            self.found[article_id] = self.index.of(article_id)
        return self.found[article_id]

    def canonical_candidates(self, article_id: int) -> IdArray:
        self.looked.add(article_id)
        return self.index.of_canonicals(article_id)

    def among_candidates(self, article_id: int, ids: Ids) -> IdArray:
        return self.index.among(article_id, np.asarray(ids, dtype=np.int64))

    def stored(self, article_ids: Sequence[int]) -> Mapping[int, int]:
        ids = self._known(article_ids)
        if self.heads_index is not None:  # those in it have no row: no need to ask
            ids = ids[~self.heads_index.contains_many(ids)]
        maybe = set(ids[self.status[ids] != _FREE].tolist())  # members and the unknown
        unknown = sorted(i for i in maybe if i not in self.heads)
        if unknown:
            found = canonicals_of(session=self.session, version=self.version, article_ids=unknown)
            self.heads.update(found)
            self.status[unknown] = _FREE
            self.status[list(found)] = _MEMBER
        return {i: self.heads[i] for i in ids.tolist() if i in self.heads}

    def unclustered(self, article_ids: Ids) -> Sequence[int]:
        ids = self._known(article_ids)
        if self.heads_index is not None:  # candidates are indexed: in it = no member row
            heads: list[int] = np.unique(ids[self.heads_index.contains_many(ids)]).tolist()
            return heads
        unknown = np.unique(ids[self.status[ids] == _UNKNOWN])
        if len(unknown):
            free = not_members(
                session=self.session, version=self.version, article_ids=unknown.tolist()
            )
            self.status[unknown] = _MEMBER
            self.status[free] = _FREE
        free_ids: list[int] = np.unique(ids[self.status[ids] == _FREE]).tolist()
        return free_ids

    def _known(self, article_ids: Ids) -> IdArray:
        """``article_ids`` as an array, the status table grown to hold them."""
        ids = np.asarray(article_ids, dtype=np.int64).reshape(-1)
        top = int(ids.max()) + 1 if len(ids) else 0
        if top > len(self.status):
            grown = np.full(max(top, 2 * len(self.status)), _UNKNOWN, np.int8)
            grown[: len(self.status)] = self.status
            self.status = grown
        return ids

    def members(self, canonical_ids: Sequence[int]) -> Sequence[int]:
        return members_of_all(
            session=self.session, version=self.version, canonical_ids=canonical_ids
        )

    def ranks(self, article_ids: Sequence[int]) -> Mapping[int, Rank]:
        dates = live_published(session=self.session, article_ids=article_ids)
        return {i: rank_key(i, d) for i, d in dates.items()}

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        wanted = {article_id, canonical_id} | self.batch  # one read for a batch of reposts
        self.batch = set()
        self.dedup._load(self.session, self.version, wanted, self.loaded)
        return self.dedup._judge(article_id, canonical_id, self.loaded)


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster rows of ``version`` to replace: the member rows of ``nodes`` (the articles
    re-decided) by ``members`` (those of them that are members now)."""

    version: int
    nodes: list[int]
    members: list[MemberRow]

    def flipped(self, index: Candidates) -> list[int]:
        """The nodes whose presence among ``index``'s canonicals (as of before the plan) the
        plan changes: members that were canonicals, canonicals that were members (all the
        nodes when ``index`` holds no canonicals)."""
        nodes = np.asarray(self.nodes, dtype=np.int64)
        if index.canonicals is None:
            return self.nodes
        members = np.fromiter((r.article_id for r in self.members), np.int64, len(self.members))
        was = index.canonicals.contains_many(nodes)
        now = index.radius.contains_many(nodes) & ~np.isin(nodes, members)
        flipped: list[int] = nodes[was != now].tolist()
        return flipped

    def write(self, session: Session) -> int:
        """Replace the rows (in the caller's write transaction); returns how many."""
        replace_member_rows(
            session=session, version=self.version, article_ids=self.nodes, rows=self.members
        )
        return len(self.members)


@dataclass
class _Loaded:
    fps: dict[int, int] = field(default_factory=dict)
    vectors: dict[int, SparseVector] = field(default_factory=dict)
    raw: dict[int, tuple[str, str]] = field(default_factory=dict)  # title, content
    texts: dict[int, Compared] = field(default_factory=dict)

    def keep(self, ids: set[int]) -> _Loaded:
        """What is loaded of ``ids`` (a new holder: the rest is dropped)."""
        out = _Loaded()
        for i in ids & self.fps.keys():
            out.fps[i], out.vectors[i] = self.fps[i], self.vectors[i]
            if i in self.texts:
                out.texts[i] = self.texts[i]
            elif i in self.raw:
                out.raw[i] = self.raw[i]
        return out

    def compared(self, article_id: int, strip: bool) -> Compared:
        """What the decision compares of a loaded article (computed once)."""
        found = self.texts.get(article_id)
        if found is None:
            title, content = self.raw.pop(article_id)
            found = self.texts[article_id] = compared_of(title, content, strip)
        return found


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
