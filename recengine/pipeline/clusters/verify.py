"""Verifying candidate pairs of one model version from what SQL stores
(``pipeline.clusters.upkeep``).

Every clustering path decides a pair the same way: both articles' fingerprints under the
version, and what the criterion compares of their texts
(``features.neardup.NearDupCriterion.decide``). :class:`PairJudge` reads those for a set of
articles at once into a :class:`Loaded` holder (the compared text is computed when a
verification first needs it) and judges pairs from it; the holders differ by how long what they
read is kept:

* :class:`TransactionJudging`: everything read in one transaction (the measured
  ``same_article`` pairs of the rules, ``pipeline.clusters.overrides.Judging``);
* :class:`BlockTexts`: one block of the reindex's leader pass at a time, in reads of its own
  (``pipeline.clusters.leader_pass.leader_blocks``);
* ``pipeline.clusters.plan.SqlClusterView``: one write transaction's plan (ingest).

Computing what is compared of a stored text (cleaning, quoted replies, shingles: ~1-3 ms for a
long article) costs far more than reading it, and the same canonical is verified again and
again: by the blocks of a leader pass far apart, by the batches of one bulk ingest (a 55 MB
ingest of long articles compared 1,774 distinct stored texts 4,659 times, BENCHMARKS.md). A
:class:`KeptTexts` store keeps what was compared, least recently used out first, within a
memory budget, keyed by the article and the ``seq`` of its last change, so a kept value is
never used for a text that changed since.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy.orm import Session

from recengine.features.neardup import Decision, NearDupCriterion
from recengine.pipeline.clusters.leader_rule import Edge
from recengine.pipeline.featurize import compared_of
from recengine.storage.rows.articles import titles_and_contents
from recengine.storage.rows.index_source import fingerprints_and_seqs
from recengine.text.neardup.compare import Compared, WordPoints
from recengine.text.neardup.hints import TextHints
from recengine.text.neardup.kept import KeptTexts

Reading = Callable[[], AbstractContextManager[Session]]
# What is compared of many (title, content) pairs, in order: ``PairJudge.compared`` of each
# without hints (``parallel.AnalysisPool.compared_many``).
CompareMany = Callable[[list[tuple[str, str]]], list[Compared]]


class Kept(Protocol):
    """Where what is compared of loaded texts is kept: :class:`KeptTexts`, or a write
    transaction's :class:`WrittenTexts`."""

    def get(self, article_id: int, seq: int) -> Compared | None: ...

    def put(self, article_id: int, seq: int, text: Compared) -> None: ...


@dataclass
class Loaded:
    """What was read of some articles under one version, by article id: fingerprints and texts
    (the texts decide; the vectors are not read), and the ``seq`` each text was read at.
    ``kept``: where what is compared of them is kept beyond this holder (see
    :class:`KeptTexts`)."""

    fps: dict[int, int] = field(default_factory=dict)
    raw: dict[int, tuple[str, str]] = field(default_factory=dict)  # title, content
    texts: dict[int, Compared] = field(default_factory=dict)
    seqs: dict[int, int] = field(default_factory=dict)
    kept: Kept = field(default_factory=lambda: KeptTexts(0))

    def keep(self, ids: set[int]) -> Loaded:
        """What is loaded of ``ids`` (a new holder, the same ``kept``: the rest is dropped)."""
        out = Loaded(kept=self.kept)
        for i in ids & self.fps.keys():
            out.fps[i], out.seqs[i] = self.fps[i], self.seqs[i]
            if i in self.texts:
                out.texts[i] = self.texts[i]
            elif i in self.raw:
                out.raw[i] = self.raw[i]
        return out

    def compared(self, article_id: int, compute: Callable[[str, str], Compared]) -> Compared:
        """What the decision compares of a loaded article (``compute`` of its title and
        content, once)."""
        found = self.texts.get(article_id)
        if found is None:
            found = self.put(article_id, compute(*self.raw.pop(article_id)))
        return found

    def put(self, article_id: int, text: Compared) -> Compared:
        """Record what is compared of a loaded article's raw text (and keep it)."""
        self.texts[article_id] = text
        self.kept.put(article_id, self.seqs[article_id], text)
        return text


@dataclass(frozen=True)
class PairJudge:
    """The criterion over stored features and texts (``strip``: ``features.strip_boilerplate``).

    ``hints``: the word points of texts an ingest is about to write, computed from the text its
    analysis cleaned (``Featurizer.analyze_texts``, the same settings; ``text.neardup.hints``): the
    verification of a new article takes them instead of cleaning its text again.
    """

    criterion: NearDupCriterion
    strip: bool
    hints: TextHints[WordPoints] = field(default_factory=TextHints, compare=False)

    def compared(self, title: str, content: str) -> Compared:
        """What the decision compares of a stored text (from its hint when there is one)."""
        points = self.hints.get(title, content)
        return compared_of(title, content, self.strip) if points is None else points.compared()

    def compare_loaded(self, loaded: Loaded, many: CompareMany) -> None:
        """Compute what is compared of every text ``loaded`` holds unread, at once by
        ``many`` (in the reindex: on the pool's workers), except those with a hint (cheaper
        from it, here)."""
        hints = self.hints
        todo = [i for i, (title, body) in loaded.raw.items() if hints.get(title, body) is None]
        for i, found in zip(todo, many([loaded.raw[i] for i in todo]), strict=True):
            loaded.put(i, found)
            del loaded.raw[i]

    def load(self, session: Session, version: int, ids: Iterable[int], loaded: Loaded) -> None:
        """Add the fingerprints and texts of those of ``ids`` not in ``loaded`` yet, in two
        reads for all of them (what is compared of a text is computed when a verification
        first needs it; a text ``loaded.kept`` holds at its current ``seq`` is not read)."""
        missing = sorted(set(ids) - loaded.fps.keys())
        if not missing:
            return
        found = fingerprints_and_seqs(session=session, version=version, ids=missing)
        unread = []
        for i, (fp, seq) in found.items():
            loaded.fps[i], loaded.seqs[i] = fp, seq
            kept = loaded.kept.get(i, seq)
            if kept is not None:
                loaded.texts[i] = kept
            elif i not in loaded.texts:
                unread.append(i)
        loaded.raw.update(titles_and_contents(session=session, article_ids=unread))

    def decision(self, a: int, b: int, loaded: Loaded) -> Decision | None:
        """The criterion's decision on two loaded articles' texts (every clustering path has
        them: the vectors' cosine is not computed); None when either has no features under
        the version."""
        pair = self._pair(a, b, loaded)
        return None if pair is None else self.criterion.decide(*pair)

    def edge(self, x: int, c: int, loaded: Loaded) -> Edge | None:
        """The verified edge of two loaded articles, or None (not duplicates, or unknown):
        :meth:`decision`'s verdict, by the criterion's cheaper ``verify`` (nothing of a pair
        that fails is needed here)."""
        pair = self._pair(x, c, loaded)
        v = None if pair is None else self.criterion.verify(*pair)
        return None if v is None else Edge(min(x, c), max(x, c), v.distance, v.score, v.rule)

    def _pair(self, a: int, b: int, loaded: Loaded) -> tuple[int, int, Compared, Compared] | None:
        """Both articles' fingerprints and compared texts, None when either has no features
        under the version."""
        fps = loaded.fps
        if a not in fps or b not in fps:
            return None
        return fps[a], fps[b], loaded.compared(a, self.compared), loaded.compared(b, self.compared)


class TransactionJudging:
    """:class:`recengine.pipeline.clusters.overrides.Judging` over one transaction."""

    def __init__(self, judge: PairJudge, session: Session, version: int) -> None:
        self.judge, self.session, self.version = judge, session, version
        self.loaded = Loaded()

    def prefetch(self, ids: set[int]) -> None:
        self.judge.load(self.session, self.version, ids, self.loaded)

    def known(self, article_id: int) -> bool:
        return article_id in self.loaded.fps

    def decision(self, a: int, b: int) -> Decision | None:
        self.prefetch({a, b})
        return self.judge.decision(a, b, self.loaded)


class BlockTexts:
    """Texts of one block of the leader pass, loaded at once (in a read of their own).

    What was compared of earlier blocks' texts stays in ``kept`` (``reindex.kept_compared_mb``):
    a canonical that blocks far apart meet (the many articles of a crowd of copies) is read from
    SQL and compared once, not once per block that needs it again. Without it, a
    30,000-article reindex of the resampled paragraph mix computed 83,326 compared texts
    (BENCHMARKS.md). With ``many`` (a pool of several workers), what is compared of the texts
    read is computed there for the whole block at once, not one by one as verifications need
    it."""

    def __init__(
        self,
        judge: PairJudge,
        reading: Reading,
        version: int,
        many: CompareMany | None = None,
        kept: Kept | None = None,
    ) -> None:
        self.judge, self.reading, self.version, self.many = judge, reading, version, many
        self.loaded = Loaded(kept=KeptTexts(0) if kept is None else kept)

    def prefetch(self, ids: set[int]) -> None:
        self.loaded = self.loaded.keep(ids)
        with self.reading() as session:
            self.judge.load(session, self.version, ids, self.loaded)
        if self.many is not None:
            self.judge.compare_loaded(self.loaded, self.many)

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        # Both are in the block's prefetch (leader_blocks's contract); one without features
        # under the version is no duplicate.
        return self.judge.edge(article_id, canonical_id, self.loaded)

    def measure(self, a: int, b: int) -> tuple[int, float]:
        """Distance and score of two prefetched articles (a member row without an edge)."""
        v = self.judge.decision(a, b, self.loaded)
        if v is None:
            raise ValueError(f"no features for {a} or {b}")
        return v.distance, v.score
