"""``recengine reader show|delete USER``: a reader's data from a shell
(``recommend.feeds.retention``).

The same use cases as ``GET /api/v1/users/<user>/events`` (a data-access request: every stored
event, deleted articles included) and ``DELETE /api/v1/users/<user>`` (erasure: every event
deleted; nothing else in the database is kept by reader).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from recengine.cli.context import CliContext
    from recengine.recommend.feeds.retention import ReaderData

PAGE = 10_000


def _readers(ctx: CliContext) -> ReaderData:
    from recengine.recommend.feeds.retention import ReaderData

    return ReaderData(ctx.settings, ctx.factory)


@click.group()
def reader() -> None:
    """A reader's data: show what they read, or delete (erase) it."""


@reader.command("show")
@click.argument("user")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: the body of GET /api/v1/users/<user>/events, every page in one.",
)
@click.pass_obj
def show_command(ctx: CliContext, user: str, fmt: str) -> None:
    """Every stored event of reader USER (what they read and when), oldest stored first."""
    from recengine.storage.db import transaction

    readers, events, after = _readers(ctx), [], 0
    with transaction(ctx.factory) as session:
        while True:
            page = readers.history(user, session=session, after_id=after, limit=PAGE)
            events += page["events"]
            if page["next_after"] is None:
                break
            after = page["next_after"]
    body: dict[str, Any] = {"user": page["user"], "events": events, "next_after": None}
    if fmt == "json":
        click.echo(json.dumps(body, ensure_ascii=False, indent=2))
        return
    click.echo(f"reader {body['user']}: {len(events)} event(s) stored")
    for e in events:
        gone = "  (article deleted)" if e["deleted"] else ""
        click.echo(f"{e['at']}  {e['kind']}  {e['article']}  {e['title']}{gone}")


@reader.command("delete")
@click.argument("user")
@click.pass_obj
def delete_command(ctx: CliContext, user: str) -> None:
    """Erase reader USER: every stored event is deleted (0 when none were stored)."""
    erased = _readers(ctx).erase(user)
    click.echo(f"erased reader {erased['user']}: {erased['erased']} event(s) deleted")
