"""``recengine override list|add|remove``: editors' overrides from a shell, JSON out.

The same use cases, checks and JSON shapes as ``/api/v1/overrides`` (``recommend.overrides``):
a cluster override recomputes the clusters it touches in its own transaction, every process
sees it from the commit on. Bad input (an unknown kind or article, a contradiction) is a
one-line error and exit code 2, and changes nothing.
"""

from __future__ import annotations

import getpass
import json
from typing import TYPE_CHECKING, Any

import click

from recengine.cli.params import Integer

if TYPE_CHECKING:
    from recengine.cli.context import CliContext
    from recengine.recommend.overrides import Overrides


def _use_cases(ctx: CliContext) -> Overrides:
    from recengine.pipeline.clusters.upkeep import Deduplicator
    from recengine.recommend.override_rules import DuplicatePins
    from recengine.recommend.overrides import Overrides

    return Overrides(ctx.factory, Deduplicator(ctx.settings), DuplicatePins(ctx.settings))


def _echo(payload: dict[str, Any]) -> None:
    click.echo(json.dumps(payload, ensure_ascii=False))


def _default_by() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in this environment: --by is then required
        return ""


@click.group()
def override() -> None:
    """Editors' overrides (list, add, remove), printed as JSON.

    Kinds: not_duplicate (a pair, or one article against all), same_article (a pair),
    canonical (one article), pin (ARTICLE OTHER: OTHER first in ARTICLE's related list),
    block (a pair never shown together), exclude (one article, from every list and feed).
    """


@override.command("list")
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable).")
@click.option("--article", default=None, help="Only overrides naming this article.")
@click.option(
    "--cursor",
    type=Integer(0),
    default=0,
    help="Only overrides with a larger id: the next_after of the page before.",
)
@click.option("--after", "old_cursor", type=Integer(0), default=None, hidden=True)  # --cursor
@click.option("--limit", type=Integer(1, 10_000), default=1_000, show_default=True)
@click.pass_obj
def list_command(
    ctx: CliContext,
    kinds: tuple[str, ...],
    article: str | None,
    cursor: int,
    old_cursor: int | None,
    limit: int,
) -> None:
    """Print {"overrides": [...], "next_after": id or null}, as the HTTP API does.

    Each override: id, kind, article, other, article_title, other_title, position, reason, by,
    at, active (false when it names a deleted article: kept, in force again if the article is
    stored again), deleted.
    Pages: pass next_after as --cursor (?after= over HTTP) for the next one.
    """
    from recengine.storage.db import transaction

    after = cursor if old_cursor is None else old_cursor

    with transaction(ctx.factory) as session:
        found = _use_cases(ctx).listing(
            session=session, kinds=kinds or None, article=article, after_id=after, limit=limit
        )
    full = len(found) == limit
    _echo({"overrides": found, "next_after": found[-1]["id"] if found and full else None})


@override.command("add")
@click.argument("kind")
@click.argument("article")
@click.argument("other", required=False)
@click.option("--position", type=Integer(0), default=None, help="pin: place in the pinned order.")
@click.option("--reason", default="", help="Why (kept with the override).")
@click.option("--by", default=_default_by, show_default="the user name", help="Who decided.")
@click.pass_obj
def add_command(
    ctx: CliContext,
    kind: str,
    article: str,
    other: str | None,
    position: int | None,
    reason: str,
    by: str,
) -> None:
    """Store an override: {"override": {...}, "created": bool, "replaced": [ids]}."""
    from recengine.recommend.overrides import NewOverride

    new = NewOverride.parse(kind, article, other, position=position, reason=reason, by=by)
    _echo(_use_cases(ctx).add(new))


@override.command("remove")
@click.argument("override_id", type=Integer(1))
@click.pass_obj
def remove_command(ctx: CliContext, override_id: int) -> None:
    """Delete an override: {"override": {...}} as it was."""
    _echo({"override": _use_cases(ctx).remove(override_id)})
