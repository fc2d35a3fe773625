"""Index layer: in-memory search structures over arrays and int64 ids (no ORM, no SQL).

* :mod:`.related`: the candidate index of related articles (segments, postings, exact scoring);
* :mod:`.neardup`: near-duplicate candidates (the exact simhash radius index, its block
  tables, the passage index);
* :mod:`.dense`: dense vectors and their FAISS index (:mod:`.dense_kernels`: their exact
  inner products, compiled; :mod:`.pairwise`: numpy's summation order, which both compiled
  scorings keep);
* :mod:`.briefs`: what a list shows of each article and its cluster, with :mod:`.vocabulary`
  (term names by hash), so a list reads no SQL;
* what every derived index shares: :mod:`.follower` (kept in step with SQL), :mod:`.kind`,
  :mod:`.container` (the file format), :mod:`.layered` (main + delta segments), :mod:`.ids`,
  :mod:`.held` (what the read path computes once, bounded).
"""
