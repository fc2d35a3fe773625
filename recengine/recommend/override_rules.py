"""What an override may not say: the checks :class:`recommend.overrides.Overrides` runs before
it stores a new decision, each refusing with ``Conflict`` (409) and saying why.

``same_article`` overrides join articles into groups (transitively: A = B and B = C make
A = C); a ``not_duplicate`` pair may not separate two articles of one group, and a
``same_article`` may not join a group holding such a pair (:func:`check_groups`).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from recengine.errors import Conflict
from recengine.storage.overrides import NOT_DUPLICATE, SAME_ARTICLE, relations_touching


def check_groups(session: Session, kind: str, a: int, b: int | None) -> None:
    """Refuse a ``not_duplicate`` pair inside one ``same_article`` group, or a
    ``same_article`` that would join a ``not_duplicate`` pair into one."""
    if b is None or kind not in (NOT_DUPLICATE, SAME_ARTICLE):
        return
    skip = (a, b)  # the pair's own same_article is replaced, not a conflict
    group_a, group_b = same_article_group(session, a, skip), same_article_group(session, b, skip)
    if kind == NOT_DUPLICATE:
        if b in group_a:
            raise Conflict(
                "these articles are joined by same_article overrides: remove those first"
            )
        return
    joined = group_a | group_b
    for r in relations_touching(session=session, article_ids=sorted(joined), kinds=[NOT_DUPLICATE]):
        inside = r.other_id is not None and r.article_id in joined and r.other_id in joined
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
