"""Building the SparkSession for a reindex."""

from __future__ import annotations

import os
import sys
from typing import Any

from recengine.config import SparkSettings
from recengine.errors import ConfigError


def require_pyspark() -> Any:
    """The ``pyspark`` module, or a clear error naming the extra to install."""
    try:
        import pyspark
    except ImportError as exc:
        raise ConfigError(
            "the Spark engine needs PySpark: pip install 'recengine[spark]' (and Java 17+)"
        ) from exc
    return pyspark


def spark_session(
    settings: SparkSettings, master: str | None = None, progress: bool = False
) -> tuple[Any, bool]:
    """A SparkSession for the reindex (``getOrCreate``: under spark-submit, the submitted one).

    Returns:
        ``(session, created)``: ``created`` is False when a session was already running (a
        caller's, or spark-submit's), which the caller should then leave running.

    Args:
        settings: the ``[spark]`` settings.
        master: overrides ``settings.master``; ignored when a session already exists.
        progress: show Spark's console progress bar (on a terminal).

    Python workers run this interpreter (so they import this recengine) and are reused across
    tasks, which is what lets each keep its tokenizer for the whole job.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    if existing is not None:
        return existing, False

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName("recengine-reindex")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", str(progress).lower())
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", settings.driver_memory)
        .config("spark.sql.shuffle.partitions", str(settings.partitions or 8))
    )
    # Under spark-submit the JVM is already up (it set PYSPARK_GATEWAY_PORT) with the master
    # given on its command line: keep that one unless told otherwise.
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master or settings.master)
        if (master or settings.master).startswith("local"):
            # Everything on this machine: listen on the loopback interface only.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1"
            )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True
