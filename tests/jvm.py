"""The JVM options of the tests' Spark processes (local Spark, and the standalone cluster's
master, workers, driver and executors).

They are small and short-lived (a job of a few hundred articles): the client compiler only
and the serial collector start them faster than the server defaults. Measured on the cluster
test, quiet machine: 49.6 / 51.2 s -> 38.3 / 38.0 / 36.2 s; on tests/reindex/test_spark.py 53.5 ->
46.7 s. The product keeps the JVM's defaults: a real job runs long enough for the optimising
compiler to pay.
"""

from __future__ import annotations

import os

FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# A Python worker merges a shuffle's values in memory until its whole process (RSS) passes
# spark.python.worker.memory (512m), then spills each merge to disk with a full gc.collect().
# The tests' workers are reused across tests and hold the sentence encoder (~200 MB) and a
# featurizer per test's settings: past 512m, every merge spilled (tests/reindex/test_spark.py:
# 64 spills, 6.8 s of gc.collect in the workers' 29 s of profiled CPU; their CPU for the file
# 56 -> 38 s). The merges themselves are a few MB: with room, nothing spills; the answers are
# the same either way.
PYTHON_WORKER_MEMORY = "spark.python.worker.memory=2g"


def use_small_jvms() -> None:
    """Start every Spark JVM of this process and its children with :data:`FLAGS`, and its Python
    workers with :data:`PYTHON_WORKER_MEMORY` (unless the environment already says how to
    start them)."""
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS",
        f"--conf {PYTHON_WORKER_MEMORY} --driver-java-options '{FLAGS}' pyspark-shell",
    )
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", FLAGS)
