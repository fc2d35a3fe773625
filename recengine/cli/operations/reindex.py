"""``recengine reindex``: rebuild the IDF model, vectors and fingerprints from SQL.

On a terminal, a progress bar per counted phase (articles done, rate, ETA) and a line for each
other phase; in a pipe or a CI log, plain lines: each phase's start and end, and its count every
ten seconds (``cli.progress``). The summary line goes to standard output.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from recengine.cli.params import Integer

if TYPE_CHECKING:
    from recengine.cli.context import CliContext
    from recengine.pipeline.reindex.versions import ReindexResult


def run(
    ctx: CliContext,
    *,
    incremental: bool = False,
    workers: int | None = None,
    resume: bool = True,
    force: bool = False,
) -> ReindexResult:
    """Reindex locally with a progress bar; print and return the summary. A full reindex
    whose result would be the active model (nothing changed since its fit, same settings)
    does nothing and says why, unless ``force``."""
    from recengine.cli.operations.reindex_output import echo_result
    from recengine.cli.progress import PhaseProgress
    from recengine.pipeline.reindex.full import reindex as run_reindex
    from recengine.pipeline.reindex.incremental import reindex_incremental
    from recengine.pipeline.reindex.pool import AnalysisPool

    settings = ctx.settings
    bar = PhaseProgress("reindex")
    pool = AnalysisPool(
        settings,
        workers=settings.reindex.workers if workers is None else workers,
        featurizer=ctx.featurizer,
    )
    try:
        with pool:
            engine = partial(
                reindex_incremental if incremental else partial(run_reindex, if_stale=not force),
                factory=ctx.factory,
                featurizer=ctx.featurizer,
                batch_size=settings.reindex.batch_size,
                progress=bar,
                pool=pool,
                resume=resume,
            )
            result = engine()
    finally:
        bar.close()
    echo_result(result)
    return result


@click.command()
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="Run on this machine, or as an Apache Spark job (needs the `spark` extra).",
)
@click.option(
    "--incremental",
    is_flag=True,
    help="Recompute only articles changed since the last reindex, unless the IDF model is due "
    "for a refit (reindex.refit_drift); local engine only.",
)
@click.option(
    "--workers",
    type=Integer(0, 1_024),
    default=None,
    help="Processes for tokenizing (0 = every core; default: reindex.workers).",
)
@click.option(
    "--resume/--no-resume",
    default=True,
    show_default=True,
    help="Continue an interrupted reindex, or discard it and start over.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Rebuild even when the active model is up to date (no article changed since its fit, "
    "same settings), which is otherwise reported and left as it is (the Spark engine always "
    "rebuilds: its --input may hold other texts).",
)
@click.option("--master", default=None, help="Spark master (default: spark.master).")
@click.option(
    "--input",
    "input_path",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="Spark: read articles from a Parquet or JSON Lines export instead of the database.",
)
@click.pass_obj
def reindex(
    ctx: CliContext,
    engine: str,
    incremental: bool,
    workers: int | None,
    resume: bool,
    force: bool,
    master: str | None,
    input_path: Path | None,
) -> None:
    """Rebuild IDF, vectors and fingerprints from the stored articles.

    Readers keep using the previous model until the new one is complete; an interrupted
    reindex (Ctrl-C, kill -9) changes nothing they see and is resumed by running it again.
    When nothing changed since the active model was fitted, with the same settings, there is
    nothing to rebuild: it says so and exits 0 (--force rebuilds anyway).
    """
    if engine == "spark":
        if incremental:
            raise click.UsageError("--incremental is for the local engine")
        from recengine.cli.operations import spark  # imports pyspark: only when asked for

        spark.run(ctx, master=master, input_path=input_path)
        return
    if master or input_path:
        raise click.UsageError("--master and --input are for --engine spark")
    if force and incremental:
        raise click.UsageError(
            "--force is for a full reindex (--incremental recomputes only what changed)"
        )
    run(ctx, incremental=incremental, workers=workers, resume=resume, force=force)
