"""What an override may not say: the checks :class:`recommend.overrides.Overrides` runs before
it stores a new decision, each refusing with ``Conflict`` (409) and saying why.

**Contradictions of the duplicate overrides** (:func:`check_groups`). ``same_article``
overrides join articles into groups (transitively: A = B and B = C make A = C); a
``not_duplicate`` may not separate two articles of one group, in its pair form (A, C) or in its
one-article form (C against every article, which would separate C from A and B), and a
``same_article`` may not join a group holding such a pair or such an article. Were either
stored, the clusters (which follow the groups) and the lists (which read the pair's own
overrides) would disagree: ``duplicates --id A`` listing C while A's list shows C.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from recengine.errors import Conflict
from recengine.storage.overrides import NOT_DUPLICATE, SAME_ARTICLE, relations_touching


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
