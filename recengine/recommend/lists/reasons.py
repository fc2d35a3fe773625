"""Every kind of reason an item of a related list or a feed can carry, in one type.

An item's ``reasons`` says why it is in the list. Producers build a :class:`Reasons` (mypy
refuses a key that is not declared here), and every output that shows a list (the command
line's text, JSON, the HTTP bodies) reads the kinds from here: ``tests/cli/test_cli_reasons.py``
walks :data:`REASON_KINDS` and fails for a kind that some output cannot print.

Kinds:

* ``shared_terms``: ``[{"term", "weight"}]``, the terms that contributed most to the score
  (each term's share of it);
* ``dense``: the dense (semantic) part's share of the score (0.0 without a dense part);
* ``same_category``: the item shares the query article's category;
* ``shared_tags``: the query article's tags the item has too;
* ``pinned``: an editor pinned the item (related lists: to the query article; feeds: to a
  read article);
* ``because_you_read``: feeds: the reader's reads of the interest the item answers (ids);
* ``interest_share``: feeds: that interest's share of the reader's history (0-1);
* ``fresh``: feeds: one of the newest articles, filling a feed its reader's history could
  not (no history, or too little related to it);
* ``freshness``: the factor (0-1] the item's score was multiplied by for its age
  (``related.half_life_days``, ``recommend.signals.freshness``): against the article's date in
  lists, against now in feeds; the other shares are scaled by it too;
* ``fallback``: related lists: the item fills a list shorter than ``related.min_items``
  (``recommend.signals.fallback``), taken from the article's category by ``"newest"`` or
  ``"most_clicked"`` (score 0: it was not ranked).
* ``coread``: readers of the list's article also read this one: the co-read part's share of the
  score (``recommend.signals.coreads``);
* ``engagement``: the share of the score its readers' clicks gave (negative: clicked less often
  than the site's average; ``recommend.signals.engagement``);
* ``explore``: placed in one of the list's exploring slots rather than by its score
  (``recommend.signals.exploration``).
"""

from __future__ import annotations

from typing import Any, TypedDict, get_type_hints


class Reasons(TypedDict, total=False):
    """The ``reasons`` of one item (only the kinds that apply to it are present)."""

    shared_terms: list[dict[str, Any]]
    dense: float
    same_category: bool
    shared_tags: list[str]
    pinned: bool
    because_you_read: list[str]
    interest_share: float
    fresh: bool
    freshness: float
    fallback: str
    coread: float
    engagement: float
    explore: bool


REASON_KINDS: tuple[str, ...] = tuple(get_type_hints(Reasons))
