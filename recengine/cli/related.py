"""``recengine related ID``: the related articles of one article, the HTTP endpoint's body."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from recengine.cli.context import CliContext


@click.command()
@click.argument("article_id")
@click.option("-k", "k", type=int, default=None, help="Results wanted (default related.default_k).")
@click.option("--offset", type=int, default=0, show_default=True, help="Results skipped.")
@click.option("--exclude", multiple=True, help="An article id never to return (repeatable).")
@click.option("--category", "categories", multiple=True, help="Only this category (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Only articles with this tag (repeatable).")
@click.option("--after", "published_after", help="Published at or after (ISO 8601).")
@click.option("--before", "published_before", help="Published before (ISO 8601).")
@click.option(
    "--min-score",
    type=float,
    default=None,
    help="Lowest score shown (0-1; default related.min_score, 0 = no floor).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: the body of GET /api/v1/articles/<id>/related.",
)
@click.pass_obj
def related(ctx: CliContext, /, article_id: str, fmt: str, **options: Any) -> None:
    """Articles related to ARTICLE_ID, near-duplicates suppressed (and listed)."""
    from recengine.recommend.live import LiveIndex
    from recengine.recommend.related import RelatedArticles
    from recengine.storage.db import transaction

    index = LiveIndex(ctx.settings, ctx.factory, background=False)
    options = {name: value for name, value in options.items() if value not in (None, ())}
    with transaction(ctx.factory) as session:
        body = RelatedArticles(ctx.settings, index).related(article_id, session=session, **options)
    if fmt == "json":
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    _print(body)


def _print(body: dict[str, Any]) -> None:
    click.echo(f"related to {body['article']}:")
    if not body["items"]:
        click.echo("  (none)")
    for n, entry in enumerate(body["items"], 1):
        terms = ", ".join(t["term"] for t in entry["reasons"]["shared_terms"])
        click.echo(f"{n:3}. {entry['score']:.4f}  {entry['id']}  {entry['title']}")
        if terms:
            click.echo(f"       shared: {terms}")
    floor = body["floor"]
    if floor["dropped"]:
        click.echo(f"  ({floor['dropped']} more below the relevance floor {floor['min_score']:g})")
    if body["suppressed"]:
        click.echo("suppressed near-duplicates:")
        for s in body["suppressed"]:
            click.echo(
                f"     {s['id']}  duplicate of {s['duplicate_of']} (distance {s['distance']})"
            )
