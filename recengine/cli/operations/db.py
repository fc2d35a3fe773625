"""``recengine db upgrade``: create or migrate the schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from recengine.cli.context import CliContext


@click.group()
def db() -> None:
    """Database schema commands."""


@db.command("upgrade")
@click.pass_obj
def upgrade_command(ctx: CliContext) -> None:
    """Create the schema, or migrate it to this version's (safe to run again)."""
    from recengine.storage.migrate import current_revision, upgrade

    engine = ctx.creating().engine
    before = current_revision(engine)
    upgrade(engine)
    after = current_revision(engine)
    where = ctx.database
    if before == after:
        click.echo(f"schema of {where} is current (revision {after})")
    else:
        click.echo(f"schema of {where} upgraded: {before or 'empty'} -> {after}")
