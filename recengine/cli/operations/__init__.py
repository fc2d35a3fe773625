"""Commands that run the service: the schema (``db``), ``ingest``, ``reindex`` (local and
Spark: :mod:`.spark`, :mod:`.spark_submit`, what both print: :mod:`.reindex_output`),
``serve``, ``demo`` (ingest, reindex and serve in one) and ``report``. ``demo`` imports
``reindex`` and ``serve``; ``ingest`` imports ``reindex`` (the first model's fit)."""
