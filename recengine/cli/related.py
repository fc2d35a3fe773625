"""``recengine related ID``: the related articles of one article, the HTTP endpoint's body."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.params import Integer, Number

if TYPE_CHECKING:
    from recengine.cli.context import CliContext


def filter_options(floor: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--exclude, --category, --tag, --after, --before, --min-score: the filters of related lists
    and feeds, as on HTTP (``exclude``, ``categories``, ``tags``, ``published_after``, ...).

    Args:
        floor: the setting whose value is the default of --min-score (named in its help).
    """

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        return _with_filters(command, floor)

    return decorate


def _with_filters(command: Callable[..., Any], floor: str) -> Callable[..., Any]:
    for option in reversed(
        (
            click.option(
                "--exclude", multiple=True, help="An article id never to return (repeatable)."
            ),
            click.option(
                "--category", "categories", multiple=True, help="Only this category (repeatable)."
            ),
            click.option(
                "--tag", "tags", multiple=True, help="Only articles with this tag (repeatable)."
            ),
            click.option(
                "--after",
                "published_after",
                help="Published at or after (ISO 8601 or Unix seconds, as in records).",
            ),
            click.option("--before", "published_before", help="Published before (as --after)."),
            click.option(
                "--min-score",
                type=Number(0.0, 1.0),
                default=None,
                help=f"Lowest score shown (0-1; default {floor}, 0 = no floor).",
            ),
            click.option(
                "--format",
                "fmt",
                type=click.Choice(["text", "json"]),
                default="text",
                show_default=True,
                help="json: the body of the HTTP endpoint.",
            ),
        )
    ):
        command = option(command)
    return command


def given(options: dict[str, Any]) -> dict[str, Any]:
    """The filter options the user gave (click passes every option, most as None or ())."""
    return {name: value for name, value in options.items() if value not in (None, ())}


@click.command()
@click.argument("article_id")
@click.option(
    "-k", "k", type=Integer(), default=None, help="Results wanted (default related.default_k)."
)
@click.option("--offset", type=Integer(), default=0, show_default=True, help="Results skipped.")
@filter_options(floor="related.min_score")
@click.pass_obj
def related(ctx: CliContext, /, article_id: str, fmt: str, **options: Any) -> None:
    """Articles related to ARTICLE_ID, near-duplicates suppressed (and listed).

    --format json prints the body of GET /api/v1/articles/<id>/related.
    """
    from recengine.cli.output import print_ranked
    from recengine.recommend.live import LiveIndex
    from recengine.recommend.related import RelatedArticles
    from recengine.storage.db import transaction

    index = LiveIndex(ctx.settings, ctx.factory, background=False)
    with transaction(ctx.factory) as session:
        service = RelatedArticles(ctx.settings, index)
        body = service.related(article_id, session=session, **given(options))
        if fmt == "json":
            click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        else:
            print_ranked(f"related to {body['article']}:", body, session)
