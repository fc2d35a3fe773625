"""Use cases that read: related articles, duplicates, reader feeds, and their live index.

* :mod:`.related` (``RelatedArticles``), :mod:`.feed` (``ReaderFeeds``), :mod:`.duplicates`,
  :mod:`.articles`: the use cases the edges call, over :mod:`.live` (``LiveIndex``: one
  process's index, following SQL) and :mod:`.answers` (the cache of computed answers);
* :mod:`.export`: every related list written as files for static sites (over ``related``);
* :mod:`.lists`: what every list shares (filters, candidates with their clusters, duplicate
  suppression, editors' curation, reasons, the blend of parts);
* :mod:`.feeds`: a reader's interests, the slate a feed is assembled in, the retention of
  readers' data;
* :mod:`.signals`: ranking steps beyond the text the use cases call (freshness, diversity,
  the fallback of short lists);
* :mod:`.overrides` / :mod:`.override_rules`: adding, removing and checking editors' overrides;
  :mod:`.ranking`: the A/B variants of related lists.

The use cases import ``lists``, ``feeds`` and ``signals``; ``feeds`` and ``signals`` import
``lists``, ``lists`` imports only ``live`` (the index snapshot it reads).
"""
