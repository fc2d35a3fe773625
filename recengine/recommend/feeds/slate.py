"""Assembling a feed from several ranked lists: proportional slots, suppression, diversity."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.orm import Session

from recengine.features.tfidf import SparseVector
from recengine.index.related.view import Hits
from recengine.recommend.feeds.interests import Interest
from recengine.recommend.lists.criterion import Articles, DuplicateCriterion, anonymous
from recengine.recommend.lists.curation import Curation
from recengine.recommend.lists.facts import Facts, SqlFacts
from recengine.recommend.lists.listing import Texts, hit_vectors, with_clusters
from recengine.recommend.lists.suppress import Reason, closest_duplicate
from recengine.recommend.live import Snapshot


@dataclass(frozen=True)
class Entry:
    id: int
    part: int
    row: int
    score: float
    fingerprint: int
    cluster: int
    interest: Interest | None  # None: a fresh article
    pinned: bool = False  # an editor's pin of one of the interest's reads


@dataclass(frozen=True)
class Cut:
    id: int
    reason: Reason
    kept_before: int = 0  # entries kept when it was cut: a page shows the cuts made within it

    @property
    def duplicate_of(self) -> int:
        return self.reason.duplicate_of


@dataclass
class _Queue:
    interest: Interest | None
    hits: Hits
    articles: Articles
    pinned: int = 0  # the first `pinned` hits are pins
    slots: int = 0
    next: int = 0

    @property
    def share(self) -> float:
        return self.interest.share if self.interest is not None else 1.0


@dataclass
class Slate:
    """The feed being built: ``kept`` entries in feed order and the ``suppressed`` ones."""

    snap: Snapshot
    anchors: Articles
    criterion: DuplicateCriterion
    max_pair_similarity: float
    k: int
    curation: Curation = field(default_factory=Curation)
    texts: Texts | None = None  # texts for the criterion (``recommend.lists.criterion``), if read
    facts: Facts | None = None  # clusters (``recommend.lists.facts``); None: SQL's, in the session
    kept: list[Entry] = field(default_factory=list)
    suppressed: list[Cut] = field(default_factory=list)
    _queues: list[_Queue] = field(default_factory=list)
    _seen: set[int] = field(default_factory=set)
    _kept_articles: Articles | None = None  # the kept entries for the criterion, until one more

    @property
    def kept_articles(self) -> Articles:
        """The kept entries as the criterion sees them, built once per entry kept (so their
        stored vectors are stacked once, ``Articles.cosines``, not once per candidate)."""
        if self._kept_articles is None:
            self._kept_articles = self._as_articles(self.kept)
        return self._kept_articles

    def __len__(self) -> int:
        return len(self.kept)

    def offer(
        self, session: Session, interest: Interest | None, hits: Hits, pinned: int = 0
    ) -> None:
        """Queue a ranked list (best first; its first ``pinned`` hits are pins) of one interest
        (None: fresh articles). Excluded articles are left out (``Curation``)."""
        pins = set(hits.ids[:pinned].tolist())
        hits = self.curation.without_excluded(session, hits)
        pinned = next((j for j, a in enumerate(hits.ids.tolist()) if a not in pins), len(hits))
        vectors = hit_vectors(self.snap, hits)
        facts = self.facts if self.facts is not None else SqlFacts(session)
        articles = with_clusters(facts, hits.ids, hits.fingerprints, vectors, self.texts)
        self._queues.append(_Queue(interest, hits, articles, pinned))

    def fill(self) -> None:
        """Take entries in D'Hondt order of the queues' shares until ``k`` or none are left."""
        while len(self.kept) < self.k and self._queues:
            queue = max(self._queues, key=lambda q: q.share / (q.slots + 1))
            entry = self._next(queue)
            if entry is None:
                self._queues.remove(queue)
                continue
            self.kept.append(entry)
            self._kept_articles = None
            queue.slots += 1
        self._queues.clear()

    def all_ids(self) -> list[int]:
        ids = [e.id for e in self.kept]
        ids += [c.id for c in self.suppressed] + [c.duplicate_of for c in self.suppressed]
        for e in self.kept:
            ids += list(e.interest.examples) if e.interest is not None else []
        return sorted(set(ids))

    def _next(self, queue: _Queue) -> Entry | None:
        """The queue's best candidate that is new, no duplicate, and not too similar."""
        while queue.next < len(queue.hits):
            i = queue.next
            queue.next += 1
            article_id = int(queue.hits.ids[i])
            if article_id in self._seen:
                continue
            self._seen.add(article_id)
            entry = Entry(
                article_id,
                int(queue.hits.part[i]),
                int(queue.hits.row[i]),
                float(queue.hits.scores[i]),
                int(queue.articles.fingerprints[i]),
                int(queue.articles.clusters[i]),
                queue.interest,
                i < queue.pinned,
            )
            if self._blocked(entry.id):
                continue
            if not self._duplicate(entry) and (entry.pinned or not self._too_similar(entry)):
                return entry
        return None

    def _blocked(self, article_id: int) -> bool:
        """Blocked with a read article or with an item above (editors' ``block``)."""
        if not self.curation.blocked:
            return False
        others = self.anchors.ids.tolist() + [e.id for e in self.kept]
        return self.curation.blocks_any(article_id, others)

    def _duplicate(self, entry: Entry) -> bool:
        one = self._as_articles([entry])
        for others in (self.anchors, self.kept_articles):
            reason = closest_duplicate(one, others, self.criterion, self.curation)
            if reason is not None:
                self.suppressed.append(Cut(entry.id, reason, len(self.kept)))
                return True
        return False

    def _as_articles(self, entries: list[Entry]) -> Articles:
        def vector(j: int) -> SparseVector:
            return anonymous(*self.snap.view.vector(entries[j].part, entries[j].row))

        return Articles(
            np.array([e.id for e in entries], np.int64),
            np.array([e.fingerprint for e in entries], np.uint64),
            np.array([e.cluster for e in entries], np.int64),
            vector,
            self.texts,
        )

    def _too_similar(self, entry: Entry) -> bool:
        if not self.kept or self.max_pair_similarity >= 1.0:
            return False
        mine = anonymous(*self.snap.view.vector(entry.part, entry.row))
        return bool((self.kept_articles.cosines(mine) > self.max_pair_similarity).any())
