"""The reindex as an Apache Spark job (``recengine reindex --engine spark``; the ``spark`` extra).

The same computation as the local engine, by the same code: executors call recengine's own
``Featurizer`` (clean, tokenize, TF-IDF, simhash), so both engines give identical IDF values,
vectors and fingerprints (``tests/reindex/test_spark.py`` checks it on real articles).

* ``session``: the SparkSession (``local[*]`` here, any master on a cluster);
* ``source``: articles from the database in id-range partitions read by the executors, or from
  Parquet / JSON Lines exports;
* ``compute``: per-partition analysis (one featurizer per Python worker), the distributed
  document-frequency count, vectors and fingerprints, the bulk write back to SQL;
* ``cards``: what lists show of the articles whose card is missing or stale, derived by tasks;
* ``neardup``: near-duplicate pairs by the exact permuted-block join;
* ``job``: the driver: new model version, write-back, catch-up and atomic switch (shared with
  the local engine), and ``python -m recengine.pipeline.reindex.spark.job`` for ``spark-submit``.

Nothing here imports pyspark at module import time of the rest of recengine: only these modules
need the extra.
"""
