"""Derived indexes: every index recengine keeps beside SQL, each a *kind* of one follower.

``index.follower.Follower`` is the state machine that keeps a process's copy of an index in
step with SQL (first use and model switch, catch-up, size check, files, rollback);
``index.kind.IndexKind`` is what a kind supplies (build from rows, apply drops and upserts, its
arrays, its parameters). The kinds live here, above ``index`` and ``features``, because turning
stored rows into an index needs both (vectors are decoded with ``features``):

* :mod:`recengine.derived.neardup`: the exact radius index over fingerprints (near-duplicates);
* :mod:`recengine.derived.passages`: the passage index (near-duplicates' second candidate
  source);
* :mod:`recengine.derived.related`: the candidate index of related articles (segments);
* :mod:`recengine.derived.dense`: the dense (LSA) vectors of articles and their FAISS index;
* :mod:`recengine.derived.briefs`: what lists show and suppress of each article (card, labels,
  cluster) and the names of its terms;
* :mod:`recengine.derived.indexes`: where their files live;
* :mod:`recengine.derived.registry`: the set of them a reindex publishes after its switch.

A new kind subclasses ``IndexKind`` here and joins :func:`recengine.derived.registry.followers`;
the follower, the file container and the reindex need no change.
"""
