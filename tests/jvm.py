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


def use_small_jvms() -> None:
    """Start every Spark JVM of this process and its children with :data:`FLAGS` (unless the
    environment already says how to start them)."""
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-java-options '{FLAGS}' pyspark-shell")
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", FLAGS)
