"""``recengine duplicates``: every near-duplicate cluster, or the duplicates of one article."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.output import titled

if TYPE_CHECKING:
    from recengine.cli.context import CliContext
    from recengine.recommend.duplicates import DuplicatesOf


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "jsonl"]),
    default="text",
    show_default=True,
    help='text: for people, with titles; json: one JSON document ({"clusters": [...]}; with '
    "--id the body of GET /api/v1/articles/<id>/duplicates); jsonl: one JSON object per line "
    "(per cluster), for scripts and pipes.",
)
@click.option("--id", "article_id", default=None, help="Show the duplicates of this article.")
@click.pass_obj
def duplicates(ctx: CliContext, fmt: str, article_id: str | None) -> None:
    """List near-duplicate clusters of two or more articles, canonical first.

    A cluster: {"canonical": "id", "members": [{"id": "...", "distance": 2, "score": 0.97}]}
    (distance: Hamming distance of the fingerprints to the canonical's; score: the
    verification score, resemblance of the two texts' character shingles). With --id, the
    article's cluster with each member judged against it.
    """
    from recengine.features.neardup import NearDupCriterion
    from recengine.recommend.duplicates import clusters, duplicates_of
    from recengine.storage.db import transaction
    from recengine.storage.rows.articles import titles_of

    with transaction(ctx.factory) as session:
        if article_id is not None:
            found = duplicates_of(
                session=session,
                external_id=article_id,
                criterion=NearDupCriterion.from_settings(ctx.settings),
                compared=ctx.featurizer.compared,
            )
            if fmt == "text":
                ids = [found.article, *(d.id for d in found.duplicates)]
                _print_one(found, titles_of(session=session, external_ids=ids))
            else:
                click.echo(json.dumps(found.as_dict(), ensure_ascii=False))
            return
        if fmt == "json":
            _print_document(clusters(session=session))
            return
        for cluster in clusters(session=session):
            if fmt == "text":
                ids = [cluster["canonical"], *(m["id"] for m in cluster["members"])]
                _print_cluster(cluster, titles_of(session=session, external_ids=ids))
            else:
                click.echo(json.dumps(cluster, ensure_ascii=False))


def _print_document(found: Iterable[dict[str, Any]]) -> None:
    """``{"clusters": [...]}``, written cluster by cluster (a corpus may have millions)."""
    click.echo('{"clusters": [', nl=False)
    for n, cluster in enumerate(found):
        click.echo(("," if n else "") + "\n  " + json.dumps(cluster, ensure_ascii=False), nl=False)
    click.echo("\n]}")


def _print_cluster(cluster: dict[str, Any], titles: dict[str, str]) -> None:
    click.echo(titled(cluster["canonical"], titles))
    for m in cluster["members"]:
        detail = f"distance {m['distance']}, resemblance {m['score']:.3f}"
        click.echo(f"    {titled(m['id'], titles)}  ({detail})")


def _print_one(found: DuplicatesOf, titles: dict[str, str]) -> None:
    click.echo(f"near-duplicates of {titled(found.article, titles)}:")
    if not found.duplicates:
        click.echo("  (none)")
    for d in found.duplicates:
        role = "canonical, " if d.canonical else ""
        detail = (
            f"{role}distance {d.distance}, resemblance {d.resemblance:.3f}, cosine {d.cosine:.3f}"
        )
        click.echo(f"  {titled(d.id, titles)}  ({detail})")
