"""The near-duplicate stage's candidates: the simhash radius index and the passage index together.

Two sources, one answer (issue 12): the radius search (``index.neardup.radius``) is the fast path
for whole-article reposts; the passage index (``index.neardup.passages``) finds the partial copies
the radius misses (an excerpt or a digest lies 10-16 bits from its source). An article's
candidates are the union of both; the self-join is the union of both self-joins. Verification
(``features.neardup``) decides every candidate the same way whichever source found it, so the
clusters do not depend on which source found a pair.

A third, optional index holds the *canonicals* alone (``derived.neardup.CanonicalKind``): a write
asks :meth:`Candidates.of_canonicals` for the candidates it may join, which is a search of that
index plus the passage hits it holds, however many members the clusters around have (a
templated page type puts every page within the radius of every other: :meth:`Candidates.of`
returns the whole cluster). :meth:`Candidates.among` answers "which of these are candidates"
without a search (the few articles a write turned into canonicals).

Array contracts: ids ``int64``; :class:`~recengine.index.neardup.radius.Pairs` as there (``a < b``,
sorted, once each; the distances of pairs only the passages found are the fingerprints'
Hamming distance too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.index.neardup.passages import PassageIndex
from recengine.index.neardup.radius import IdArray, NearDupIndex, Pairs


@dataclass(frozen=True)
class Candidates:
    """Both candidate sources of one model version (``passages`` None: the radius alone;
    ``canonicals``: the radius index of the canonicals among ``radius``'s articles, when the
    caller follows one)."""

    radius: NearDupIndex
    passages: PassageIndex | None = None
    canonicals: NearDupIndex | None = None

    def __contains__(self, article_id: int) -> bool:
        return article_id in self.radius

    def fingerprint(self, article_id: int) -> int | None:
        return self.radius.fingerprint(article_id)

    def of(self, article_id: int) -> IdArray:
        """Sorted distinct stored ids that are candidates of a stored article (not itself)."""
        fp = self.radius.fingerprint(article_id)
        if fp is None:
            return np.zeros(0, np.int64)
        found = [self.radius.search(fp)[0], self._passage_hits(article_id)]
        out = np.unique(np.concatenate(found))
        kept: IdArray = out[out != article_id]
        return kept

    def of_canonicals(self, article_id: int) -> IdArray:
        """:meth:`of` restricted to the articles of ``canonicals`` (sorted, distinct), without
        listing the rest; :meth:`of` itself when there is no such index."""
        fp = self.radius.fingerprint(article_id)
        heads = self.canonicals
        if heads is None or fp is None:
            return self.of(article_id)
        found = [heads.search(fp)[0], self._passage_hits(article_id)]
        out = np.unique(np.concatenate(found))
        kept: IdArray = out[heads.contains_many(out) & (out != article_id)]
        return kept

    def among(self, article_id: int, ids: IdArray) -> IdArray:
        """Those of ``ids`` that are candidates of ``article_id`` (in :meth:`of`), in order."""
        fp = self.radius.fingerprint(article_id)
        if fp is None or not len(ids):
            return np.zeros(0, np.int64)
        hit = self.radius.within(fp, ids) | np.isin(ids, self._passage_hits(article_id))
        kept: IdArray = ids[hit & self.radius.contains_many(ids) & (ids != article_id)]
        return kept

    def _passage_hits(self, article_id: int) -> IdArray:
        """Stored ids sharing a (non-stop) passage with a stored article (itself included)."""
        held = None if self.passages is None else self.passages.passages(article_id)
        if held is None or not len(held) or self.passages is None:
            return np.zeros(0, np.int64)
        more = self.passages.query(held)
        kept: IdArray = more[self.radius.contains_many(more)]  # both index the same articles
        return kept

    def of_radius(self, article_id: int) -> IdArray:
        """The radius search's candidates alone (a stored article's, without itself)."""
        fp = self.radius.fingerprint(article_id)
        hits = np.zeros(0, np.int64) if fp is None else np.sort(self.radius.search(fp)[0])
        kept: IdArray = hits[hits != article_id]
        return kept

    def pairs(self) -> Pairs:
        """Self-join: every unordered pair of stored ids either source yields, once."""
        near = self.radius.pairs()
        if self.passages is None:
            return near
        more = self.passage_pairs()
        a, b = np.concatenate([near.a, more.a]), np.concatenate([near.b, more.b])
        key = np.unique(np.stack([a, b], axis=1), axis=0).reshape(-1, 2)
        return self._measured(key[:, 0].copy(), key[:, 1].copy())

    def passage_pairs(self) -> Pairs:
        """The passage source's self-join alone, among the radius index's articles (its pairs
        are bounded by the stop rule: a passage pairs at most ``stop_df`` articles)."""
        if self.passages is None:
            return self._measured(np.zeros(0, np.int64), np.zeros(0, np.int64))
        more = self.passages.pairs()
        both = np.isin(more.a, self._ids()) & np.isin(more.b, self._ids())
        return self._measured(more.a[both], more.b[both])

    def _measured(self, a: IdArray, b: IdArray) -> Pairs:
        """Pairs ``(a, b)`` with their fingerprints' Hamming distances."""
        fps = self._fingerprints()
        return Pairs(a, b, np.bitwise_count(fps[a] ^ fps[b]).astype(np.uint8))

    def _ids(self) -> IdArray:
        return self.radius.arrays()[0]

    def _fingerprints(self) -> npt.NDArray[np.uint64]:
        """Fingerprints by id (a dense array: ids are SQL keys)."""
        ids, fps = self.radius.arrays()
        dense = np.zeros(int(ids.max()) + 1 if len(ids) else 0, np.uint64)
        dense[ids] = fps
        return dense
