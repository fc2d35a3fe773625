"""Near-duplicate clusters kept right: what makes two articles one, and who leads a cluster.

The rule (:mod:`.leader_rule`): articles in publication order join the earliest canonical they
are a near-duplicate of (verified pairs, :mod:`.verify`); the same rule under editors'
overrides is :mod:`.constraints`. Both are kept right two ways, with the same result:

* by a write, with work bounded by the change: :mod:`.leader_updates` (plain) and
  :mod:`.constraints_updates` / :mod:`.constraints_relink` (constrained), planned against what
  SQL holds by :mod:`.plan`; editors' cluster overrides enter through :mod:`.overrides`;
* by a reindex, for every article at once: :mod:`.leader_pass` (rank blocks) and
  :mod:`.constraints_pass`.

:mod:`.upkeep` (``Deduplicator``) is the entry point ingest and reindex call. Dependencies run
from ``upkeep`` down to ``leader_rule``; nothing here imports ``pipeline.reindex`` or
``pipeline.ingest``.
"""
