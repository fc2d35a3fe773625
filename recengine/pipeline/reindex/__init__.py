"""The versioned reindex: every feature, model and index rebuilt from SQL, then switched.

* :mod:`.full` runs a full local reindex (``recengine reindex``), :mod:`.incremental` the
  changed articles only, :mod:`.spark` the same passes as a Spark job; all three share the
  prologue and tail of :mod:`.run`;
* :mod:`.job` is the state on disk that lets a killed reindex resume, :mod:`.checkpoints` the
  named points tests hold it at, :mod:`.spill` what pass 1 compared past the memory budget;
* :mod:`.pool` analyses texts on every core (ingest uses it too);
* the fits: :mod:`.new_words` (words the dictionary lacks), :mod:`.dense_fit` (the dense
  part's model), both from a :mod:`.sample` spread over ids;
* :mod:`.versions` writes features under the new model version and :mod:`.switch` moves every
  reader to it while writers keep writing.

Dependencies run from ``full`` / ``incremental`` / ``spark`` through ``run`` to the rest;
``pipeline.clusters`` is used for the clusters, never the reverse.
"""
