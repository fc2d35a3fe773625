"""``recengine reindex --engine spark``: the reindex as a Spark job, then the same atomic switch.

Runs with a local master (``--master local[*]``, the default ``spark.master``) or on a cluster,
either by naming its master or under ``spark-submit``
(``recengine/cli/operations/spark_submit.py``). Spark must reach the database from its executors,
with the same URL.
"""

from __future__ import annotations

import sys
from pathlib import Path

from recengine.cli.context import CliContext
from recengine.cli.operations.reindex_output import echo_result
from recengine.cli.progress import PhaseProgress
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.pipeline.reindex.spark.job import SparkInput, spark_reindex
from recengine.pipeline.reindex.spark.session import spark_session
from recengine.pipeline.reindex.versions import ReindexResult


def run(ctx: CliContext, *, master: str | None, input_path: Path | None) -> ReindexResult:
    settings = ctx.settings
    factory = ctx.factory  # checks the schema before Spark starts
    spark, created = spark_session(settings.spark, master, progress=sys.stderr.isatty())
    bar = PhaseProgress("reindex")
    try:
        with AnalysisPool(settings, settings.reindex.workers, ctx.featurizer) as pool:
            result = spark_reindex(
                spark=spark,
                factory=factory,
                featurizer=ctx.featurizer,
                url=settings.resolved_database_url,
                source_input=SparkInput(input_path),
                pool=pool,
                progress=bar,
            )
    finally:
        bar.close()
        if created:
            spark.stop()
    echo_result(result)
    return result
