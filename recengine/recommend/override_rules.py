"""What an override may not say: the checks :class:`recommend.overrides.Overrides` runs before
it stores a new decision, each refusing with ``Conflict`` (409) and saying why.

* **Contradictions of the duplicate overrides** (:func:`check_groups`). ``same_article``
  overrides join articles into groups (transitively: A = B and B = C make A = C); a
  ``not_duplicate`` may not separate two articles of one group, in its pair form (A, C) or in
  its one-article form (C against every article, which would separate C from A and B), and a
  ``same_article`` may not join a group holding such a pair or such an article. Were either
  stored, the clusters (which follow the groups) and the lists (which read the pair's own
  overrides) would disagree: ``duplicates --id A`` listing C while A's list shows C.
* **A pin that could never show** (:class:`DuplicatePins`). A related list never shows a
  near-duplicate of its article, pinned or not; a pin of one would be stored and never
  applied. It is refused, with the criterion's reason (one cluster, the texts' rule and
  figure, or the fingerprints and cosine), exactly as the list would decide the pair
  (``recommend.lists.criterion`` with the texts, corrected by the editors' ``not_duplicate`` /
  ``same_article`` overrides as ``recommend.lists.curation`` does). An editor who disagrees with the
  verdict says so first (``not_duplicate`` of the pair), and the pin is then accepted.
"""

from __future__ import annotations

import numpy as np
from sqlalchemy.orm import Session

from recengine.config import Settings
from recengine.errors import Conflict
from recengine.features.tfidf import SparseVector
from recengine.recommend.lists.criterion import DuplicateCriterion, Matches
from recengine.recommend.lists.curation import Curation, pair
from recengine.recommend.lists.facts import SqlFacts
from recengine.recommend.lists.listing import Texts, with_clusters
from recengine.storage.rows.index_source import features_by_id
from recengine.storage.rows.overrides import NOT_DUPLICATE, SAME_ARTICLE, relations_touching
from recengine.storage.state import read_state


def check_groups(session: Session, kind: str, a: int, b: int | None) -> None:
    """Refuse a ``not_duplicate`` (pair or one article) inside one ``same_article`` group, or a
    ``same_article`` that would join such a pair, or an article marked a duplicate of nothing,
    into one group (ids internal and normalised).

    Raises:
        Conflict: with what contradicts it.
    """
    if kind not in (NOT_DUPLICATE, SAME_ARTICLE):
        return
    skip = (a, b) if b is not None else None  # the pair's own same_article is replaced
    group_a = same_article_group(session, a, skip)
    if kind == NOT_DUPLICATE:
        if b is None and len(group_a) > 1:
            raise Conflict(
                f"this article is joined to {len(group_a) - 1} other(s) by same_article "
                "overrides: a not_duplicate against every article would separate them; remove "
                "those first, or give the pair that is not the same article"
            )
        if b is not None and b in group_a:
            raise Conflict(
                "these articles are joined by same_article overrides: remove those first"
            )
        return
    assert b is not None  # same_article names a pair (NewOverride.parse)
    joined = group_a | same_article_group(session, b, skip)
    for r in relations_touching(session=session, article_ids=sorted(joined), kinds=[NOT_DUPLICATE]):
        if r.other_id is None:
            raise Conflict(
                "an article this would join is marked not_duplicate of every article: remove "
                "that override first"
            )
        inside = r.article_id in joined and r.other_id in joined
        if inside and {r.article_id, r.other_id} != {a, b}:  # that one is replaced
            raise Conflict(
                "a not_duplicate override separates two articles this would join: remove it first"
            )


def same_article_group(
    session: Session, article_id: int, skip: tuple[int, int] | None = None
) -> set[int]:
    """The articles joined to ``article_id`` by ``same_article`` overrides (itself included),
    not counting the pair ``skip`` (normalised)."""
    group, frontier = {article_id}, {article_id}
    while frontier:
        found = relations_touching(
            session=session, article_ids=sorted(frontier), kinds=[SAME_ARTICLE]
        )
        reached = {
            x
            for r in found
            if (r.article_id, r.other_id) != skip
            for x in (r.article_id, r.other_id)
            if x is not None
        }
        frontier = reached - group
        group |= reached
    return group


class DuplicatePins:
    """Refuses a pin of a near-duplicate of the pinning article (see the module docstring).

    Args:
        settings: the near-duplicate criterion's settings, and ``features.strip_boilerplate``
            (what of the texts is compared).
    """

    def __init__(self, settings: Settings) -> None:
        self.criterion = DuplicateCriterion.from_settings(settings)
        self.strip = settings.features.strip_boilerplate

    def check(self, session: Session, article_id: int, other_id: int) -> None:
        """Raises ``Conflict`` when a list of ``article_id`` would suppress ``other_id``."""
        why = self.why(session, article_id, other_id)
        if why is not None:
            raise Conflict(
                f"the pinned article is a near-duplicate of the article ({why}): a related list "
                "never shows a copy of its article, so the pin would never show; pin another "
                "article, or first store not_duplicate for the pair if they are not the same"
            )

    def why(self, session: Session, a: int, b: int) -> str | None:
        """Why a list of ``a`` suppresses ``b`` as its near-duplicate (None: it does not)."""
        curation = Curation.of_articles(session, [a, b])
        joined = "a same_article override joins them"
        version = read_state(session=session).active_model_version
        found = features_by_id(session=session, version=version or 0, ids=[a, b])
        if a not in found or b not in found:  # no model yet, or not featurized yet
            return joined if pair(a, b) in curation.together else None
        texts = Texts(session, self.strip)
        vectors = {i: SparseVector.from_bytes(found[i].vector) for i in (a, b)}
        facts = SqlFacts(session)
        others = with_clusters(
            facts,
            np.array([b], np.int64),
            np.array([found[b].fingerprint], np.uint64),
            lambda _j: vectors[b],
            texts,
        )
        cluster = int(facts.clusters(np.array([a], np.int64))[0])
        matches = self.criterion.match(
            int(found[a].fingerprint), cluster, lambda: vectors[a], others, lambda: texts(a)
        )
        verdict = curation.correct(a, others.ids, matches.duplicate)
        if not verdict[0]:
            return None
        return _reason(matches) if matches.duplicate[0] else joined


def _reason(matches: Matches) -> str:
    """The criterion's reason for its one verdict, as an editor reads it."""
    if matches.same_cluster[0]:
        return "they are in one near-duplicate cluster"
    rule = str(matches.text_rule[0])
    if rule:
        return f"their texts' {rule} is {float(matches.text_score[0]):.2f}"
    return (
        f"fingerprints {int(matches.distance[0])} bits apart, cosine {float(matches.cosine[0]):.2f}"
    )
