"""``recengine reindex``: rebuild the IDF model, vectors and fingerprints from SQL."""

from __future__ import annotations

import sys

import click
from tqdm import tqdm

from recengine.cli.context import CliContext
from recengine.pipeline.reindex import reindex as run_reindex
from recengine.recommend.live import LiveIndex
from recengine.storage.articles import count_live
from recengine.storage.db import transaction


def run(ctx: CliContext) -> None:
    """Reindex with a progress bar on a terminal (quiet otherwise, e.g. in CI)."""
    with transaction(ctx.factory) as session:
        total = count_live(session=session)
    with tqdm(total=2 * total, unit="doc", disable=not sys.stderr.isatty(), desc="reindex") as bar:
        result = run_reindex(
            factory=ctx.factory,
            featurizer=ctx.featurizer,
            batch_size=ctx.settings.ingest.batch_size,
            progress=bar.update,
        )
    click.echo(
        f"reindexed {result.n_docs} articles: IDF model version {result.version}, "
        f"{result.n_terms} terms"
        + (f", {result.caught_up} written meanwhile caught up" if result.caught_up else "")
    )
    if ctx.settings.related.persist:
        # Build and save the related-articles index now, so that servers switching to the new
        # model load it instead of each building it (recommend.live).
        with transaction(ctx.factory) as session:
            snap = LiveIndex(ctx.settings, ctx.factory, background=False).current(session=session)
        click.echo(f"related-articles index: {len(snap.view)} articles, saved")


@click.command()
@click.pass_obj
def reindex(ctx: CliContext) -> None:
    """Rebuild IDF, vectors and fingerprints from the stored articles."""
    run(ctx)
