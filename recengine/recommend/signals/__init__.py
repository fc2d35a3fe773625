"""Ranking signals beyond the text: steps a related list or a feed calls on its ranked candidates.

From the articles themselves:

* :mod:`.freshness`: ``related.half_life_days``: a candidate's score decays by its age against
  the article's (feeds: against now), ``2 ** (-age / half_life)``;
* :mod:`.diversity`: ``related.diversity``: maximal marginal relevance over the top candidates
  (each next item trades its score against its likeness to the items above);
* :mod:`.fallback`: ``related.min_items``: a list left shorter than that (after suppression and
  the floor) is filled with the newest or most-clicked articles of its category, through the
  same suppression;
* :mod:`.params`: the values of these three a list uses (``related.*`` or its A/B variant's).

From what readers do with the lists:

* :mod:`.scoring`: the step a related list calls after its content ranking (co-read
  candidates, the co-read part, the engagement boost, exploration), the weights of a list
  (``related.*`` or its A/B variant's) and what the answer cache must know of them;
* :mod:`.engagement`: position-debiased, Beta-smoothed click rates of an item in a list (the
  engagement counters of ``pipeline.feedback``) and the bounded boost;
* :mod:`.exploration`: Thompson sampling of a bounded share of slots, seeded per list;
* :mod:`.coreads`: "readers of this also read", from reader events (normalised, pruned);
* :mod:`.window`: totals over the last days kept in memory, today's refreshed as it goes.

Each is one step the use cases (``recommend.related``, ``recommend.feed``) call, and each is a
parameter an A/B variant may set (``recommend.ranking``). They import ``lists`` and ``live``
(reasons, the blend of parts, suppression), never a use case or ``ranking``.
"""
