"""Ranking signals beyond the text: steps a related list or a feed calls on its ranked candidates.

* :mod:`.freshness`: ``related.half_life_days``: a candidate's score decays by its age against
  the article's (feeds: against now), ``2 ** (-age / half_life)``;
* :mod:`.diversity`: ``related.diversity``: maximal marginal relevance over the top candidates
  (each next item trades its score against its likeness to the items above);
* :mod:`.fallback`: ``related.min_items``: a list left shorter than that (after suppression and
  the floor) is filled with the newest or most-clicked articles of its category, through the
  same suppression.

Each is one step the use cases (``recommend.related``, ``recommend.feed``) call, and each is a
parameter an A/B variant may set (``recommend.ranking``). They import ``lists`` and ``live``,
never a use case.
"""
