"""Use cases that write: ingest, reindex, and keeping near-duplicate clusters right.

Sessions are opened per batch. Folders, each one concept:

* :mod:`~recengine.pipeline.ingest`: records in (files, HTTP bodies), upserted with their
  features, one transaction per batch;
* :mod:`~recengine.pipeline.reindex`: the versioned rebuild of every feature and index from
  SQL (local or Spark), resumable after a kill, switched atomically;
* :mod:`~recengine.pipeline.clusters`: near-duplicate clusters kept right, by a write
  (incrementally) and by a reindex (the full leader pass), under editors' constraints.

Beside them: :mod:`~recengine.pipeline.featurize` (text -> counts -> vector + fingerprint, what
all three share), :mod:`~recengine.pipeline.cards` (what a list's card shows of an article, derived
by ingest and reindex), :mod:`~recengine.pipeline.feedback` (reader feedback counters, group commit)
and :mod:`~recengine.pipeline.demo_corpus`. ``ingest`` and ``reindex`` use ``clusters``;
``clusters`` imports neither (``pyproject.toml``'s import contracts hold it).
"""
