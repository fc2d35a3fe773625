"""``recengine article show|list|delete``: stored articles from a shell.

The same use cases, rules and JSON bodies as ``GET /api/v1/articles/<id>``, ``GET
/api/v1/articles?after=&limit=`` and ``DELETE /api/v1/articles/<id>`` (``recommend.articles``,
``pipeline.ingest.ingester.Ingester.delete``): a deleted article is not found, deleting one leaves
every list at once and updates its cluster in the same transaction, and storing it again brings it
back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.params import BIGINT_MAX, Integer

if TYPE_CHECKING:
    from recengine.cli.context import CliContext

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: the body of the HTTP endpoint.",
)


def _echo_json(body: dict[str, Any]) -> None:
    click.echo(json.dumps(body, ensure_ascii=False, indent=2))


@click.group()
def article() -> None:
    """Stored articles: show one, list them page by page, delete one."""


@article.command("show")
@click.argument("article_id")
@FORMAT
@click.pass_obj
def show_command(ctx: CliContext, article_id: str, fmt: str) -> None:
    """The stored article ARTICLE_ID (json: the body of GET /api/v1/articles/<id>)."""
    from recengine.recommend.articles import show_article
    from recengine.storage.db import transaction

    with transaction(ctx.factory) as session:
        body = show_article(session=session, external_id=article_id)
    if fmt == "json":
        _echo_json(body)
        return
    from recengine.jsontext import printable

    shown = ("id", "title", "url", "category", "author", "published_at", "image", "summary")
    for name in (*shown, "updated_at"):
        if body[name] is not None:
            click.echo(f"{name + ':':14}{printable(str(body[name]), 200)}")
    if body["tags"]:
        click.echo(f"{'tags:':14}{', '.join(printable(t, 60) for t in body['tags'])}")
    click.echo()
    click.echo(body["content"])


@article.command("list")
@click.option(
    "--cursor",
    type=Integer(0, BIGINT_MAX),
    default=0,
    help="Articles after this cursor: the next_after of the page before (0: the first page).",
)
@click.option("--limit", type=Integer(1, 1_000), default=100, show_default=True)
@FORMAT
@click.pass_obj
def list_command(ctx: CliContext, cursor: int, limit: int, fmt: str) -> None:
    """Live articles in storage order, a page at a time (json: the body of GET
    /api/v1/articles: {"articles": [...], "next_after": cursor or null})."""
    from recengine.cli.output import titled
    from recengine.recommend.articles import list_articles
    from recengine.storage.db import transaction

    with transaction(ctx.factory) as session:
        page = list_articles(session=session, after=cursor, limit=limit)
    if fmt == "json":
        _echo_json(page)
        return
    for entry in page["articles"]:
        click.echo(titled(entry["id"], {entry["id"]: entry["title"]}))
    if page["next_after"] is not None:  # on stderr: a pipe of ids stays ids
        click.echo(f"more: recengine article list --cursor {page['next_after']}", err=True)


@article.command("delete")
@click.argument("article_id")
@FORMAT
@click.pass_obj
def delete_command(ctx: CliContext, article_id: str, fmt: str) -> None:
    """Delete ARTICLE_ID: it leaves every list and feed at once; storing it again brings it
    back (json: the body of DELETE /api/v1/articles/<id>)."""
    from recengine.pipeline.ingest.ingester import Ingester
    from recengine.recommend.lists.params import check_id

    with Ingester(ctx.factory, ctx.featurizer) as ingester:
        ingester.delete([check_id(article_id)])
        ingester.dedup.save()  # the near-duplicate index, as of this commit
    body = {"id": article_id, "deleted": True}
    if fmt == "json":
        _echo_json(body)
    else:
        click.echo(f"deleted {article_id}")
