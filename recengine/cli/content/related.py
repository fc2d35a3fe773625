"""``recengine related ID``: the related articles of one article, the HTTP endpoint's body."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.content.listing import checked, list_options

if TYPE_CHECKING:
    from recengine.cli.context import CliContext


@click.command()
@click.argument("article_id")
@list_options("Results", "related")
@click.pass_obj
def related(ctx: CliContext, /, article_id: str, fmt: str, **options: Any) -> None:
    """Articles related to ARTICLE_ID, near-duplicates suppressed (and listed).

    --format json prints the body of GET /api/v1/articles/<id>/related.
    """
    from recengine.cli.output import print_ranked
    from recengine.recommend.live import LiveIndex
    from recengine.recommend.related import RelatedArticles
    from recengine.storage.db import transaction

    options = checked(ctx.settings, "related", options)
    index = LiveIndex(ctx.settings, ctx.factory, background=False)
    with transaction(ctx.factory) as session:
        service = RelatedArticles(ctx.settings, index)
        body = service.related(article_id, session=session, **options)
        if fmt == "json":
            click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        else:
            print_ranked(f"related to {body['article']}:", body, session)
