"""``recengine feed USER`` and ``recengine events USER ID...``: readers from the command line.

The same use cases as ``GET /api/v1/users/<user>/feed`` and ``POST /api/v1/users/<user>/events``
(``recommend.feed.ReaderFeeds``), with the same rules and the same JSON bodies.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.content.listing import checked, in_words, list_options

if TYPE_CHECKING:
    from recengine.cli.context import CliContext
    from recengine.recommend.feed import ReaderFeeds


def _feeds(ctx: CliContext) -> ReaderFeeds:
    # Imported here: the index pulls in numpy and the database, which `recengine --help` and
    # the other commands do not need at start-up.
    from recengine.recommend.feed import ReaderFeeds
    from recengine.recommend.live import LiveIndex

    return ReaderFeeds(ctx.settings, LiveIndex(ctx.settings, ctx.factory, background=False))


@click.command()
@click.argument("user")
@list_options("Items", "feed")
@click.pass_obj
def feed(ctx: CliContext, /, user: str, fmt: str, **options: Any) -> None:
    """The de-duplicated feed of reader USER, from what they read (`recengine events`).

    --format json prints the body of GET /api/v1/users/<user>/feed.
    """
    from recengine.cli.output import print_ranked
    from recengine.storage.db import transaction

    options = checked(ctx.settings, "feed", options)
    with transaction(ctx.factory) as session:
        body = _feeds(ctx).feed(user, session=session, **options)
        if fmt == "json":
            click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        else:
            print_ranked(f"feed of {body['user']}:", body, session)


@click.command()
@click.argument("user")
@click.argument("article_ids", nargs=-1, required=True)
@click.option(
    "--at",
    default=None,
    help="When they were read (ISO 8601 or Unix seconds, as in records; default: now).",
)
@click.pass_obj
def events(ctx: CliContext, /, user: str, article_ids: tuple[str, ...], at: str | None) -> None:
    """Record that reader USER read ARTICLE_IDS (all or none: an unknown id changes nothing)."""
    from recengine.errors import InvalidRequest
    from recengine.recommend.lists.params import check_time
    from recengine.storage.db import transaction

    try:
        check_time(at, "at", ctx.settings.ingest.zone)
    except InvalidRequest as exc:
        raise click.BadParameter(in_words(str(exc), "at"), param_hint="'--at'") from None
    with transaction(ctx.factory) as session:
        recorded = _feeds(ctx).record_reads(user, list(article_ids), session=session, at=at)
    click.echo(f"recorded {recorded} read(s) for {user}")
