"""``recengine report``: an HTML report of the corpus for site editors (PNG plots, tables)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from recengine.cli.params import Integer

if TYPE_CHECKING:
    from recengine.cli.context import CliContext


@click.command()
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("recengine-report"),
    show_default=True,
    help="Folder for index.html and its PNG plots.",
)
@click.option(
    "--sample",
    type=Integer(1, 100_000_000),
    default=10_000,
    show_default=True,
    help="Articles whose nearest neighbour is searched (exactly) for the histogram.",
)
@click.option(
    "--days",
    type=Integer(1, 36_500),
    default=28,
    show_default=True,
    help="Days of reader feedback (CTR by variant and slot), up to the last day counted.",
)
@click.option(
    "--site",
    default=None,
    metavar="URL",
    help="The site's address (https://blog.example.com), to link articles stored with a "
    "site-relative url (/news/123); without it only absolute http(s) urls are links.",
)
@click.pass_obj
def report(ctx: CliContext, output: Path, sample: int, days: int, site: str | None) -> None:
    """Write an HTML report: nearest-neighbour distances, clusters, top terms, suppression.

    With reader feedback counted, also the CTR by A/B variant and by slot with 95 % intervals,
    and whether each variant's difference from the control is significant.
    """
    from recengine.recommend.ranking import Variants
    from recengine.report.data import gather
    from recengine.report.render import require_plotting, write_report

    require_plotting()  # before reading the whole corpus, and before creating the folder
    if site is not None and not re.match(r"https?://[^/\s]+", site):
        raise click.BadParameter(f"{site!r} is not an http(s) address", param_hint="'--site'")
    variants = Variants.from_settings(ctx.settings)
    data = gather(
        ctx.factory,
        database=ctx.database,
        hamming_k=ctx.settings.features.hamming_k,
        sample=sample,
        variants=variants.names,
        days=days,
        described=variants.described(),
    )
    page = write_report(data, output, site)
    click.echo(
        f"report written to {page}: {data.counts.live} live articles, "
        f"{len(data.cluster_sizes)} duplicate clusters, {data.suppressed_pairs} suppressed "
        "recommendations"
    )
    for comparison in data.ctr.comparisons if data.ctr else []:
        click.echo(comparison.statement)
