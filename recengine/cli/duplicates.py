"""``recengine duplicates``: every near-duplicate cluster, or the duplicates of one article."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from recengine.cli.context import CliContext


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "jsonl"]),
    default="text",
    show_default=True,
    help="jsonl: one JSON object per cluster, for scripts.",
)
@click.option("--id", "article_id", default=None, help="Show the duplicates of this article.")
@click.pass_obj
def duplicates(ctx: CliContext, fmt: str, article_id: str | None) -> None:
    """List near-duplicate clusters of two or more articles, canonical first.

    jsonl lines: {"canonical": "id", "members": [{"id": "...", "distance": 2, "score": 0.97}]}
    (distance: Hamming distance of the fingerprints to the canonical's; score: the
    verification score, resemblance of the two texts' character shingles). With --id, the
    article's cluster with each member judged against it.
    """
    from recengine.features.neardup import NearDupCriterion
    from recengine.recommend.duplicates import clusters, duplicates_of
    from recengine.storage.db import transaction

    with transaction(ctx.factory) as session:
        if article_id is not None:
            criterion = NearDupCriterion.from_settings(ctx.settings)
            found = duplicates_of(
                session=session,
                external_id=article_id,
                criterion=criterion,
                text=ctx.featurizer.text,
            )
            click.echo(json.dumps(found.as_dict(), ensure_ascii=False, indent=None))
            return
        for cluster in clusters(session=session):
            if fmt == "jsonl":
                click.echo(json.dumps(cluster, ensure_ascii=False))
            else:
                members = ", ".join(
                    f"{m['id']} (d={m['distance']}, resemblance={m['score']:.3f})"
                    for m in cluster["members"]
                )
                click.echo(f"{cluster['canonical']}: {members}")
