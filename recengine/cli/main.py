"""Entry point: the click group, settings, and turning every expected error into a clear message.

Exit codes: 0 success; 1 the command ran but some input was rejected (details printed);
2 usage error or bad input that stopped the command (nothing was changed); 70 an internal error
(run with ``--debug`` for the traceback); 75 the database was busy (locked by another writer
for too long: nothing was changed, try again).

Start-up is kept short: the commands are listed with their one-line help from
:data:`COMMANDS` and a command's module is imported only when that command runs (or shows its
own ``--help``); settings are read on first use. ``recengine --help`` imports click and this
module, nothing else (``tests/test_cli_startup.py`` checks both).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from recengine.cli.context import CliContext
from recengine.errors import RecengineError

EXIT_REJECTED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later
BUSY_MESSAGE = (
    "error: the database is busy: another process held its write lock for longer than the "
    "wait allows (SQLite takes one writer at a time); nothing was changed, try again"
)


# name -> (module, attribute, one-line help as `recengine --help` lists it). The help must be
# the command's own short help (tests/test_cli_startup.py compares them).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "db": ("recengine.cli.db", "db", "Database schema commands."),
    "demo": (
        "recengine.cli.demo",
        "demo",
        "Create the database, ingest and index the demo corpus, then serve it.",
    ),
    "duplicates": (
        "recengine.cli.duplicates",
        "duplicates",
        "List near-duplicate clusters of two or more articles, canonical first.",
    ),
    "ingest": ("recengine.cli.ingest", "ingest", "Upsert the articles of FILE by their id."),
    "reindex": (
        "recengine.cli.reindex",
        "reindex",
        "Rebuild IDF, vectors and fingerprints from the stored articles.",
    ),
    "related": (
        "recengine.cli.related",
        "related",
        "Articles related to ARTICLE_ID, near-duplicates suppressed (and listed).",
    ),
    "report": (
        "recengine.cli.report",
        "report",
        "Write an HTML report: nearest-neighbour distances, clusters, top terms, suppression.",
    ),
    "serve": (
        "recengine.cli.serve",
        "serve",
        "Serve the HTTP API, /widget.js and the demo page with gunicorn.",
    ),
}


class _Group(click.Group):
    """Loads commands on demand; turns domain and database errors into one-line messages
    instead of tracebacks."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute, _ = COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from :data:`COMMANDS`, without importing any command (laid out
        as ``click.Group.format_commands`` lays out the commands' own short help)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, short_help(self, ctx, name, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except RecengineError as exc:
            _fail(ctx, f"error: {exc}", EXIT_BAD_INPUT)
        except OSError as exc:  # unreadable files, full disks, permissions
            _fail(ctx, f"error: {exc}", EXIT_BAD_INPUT)
        except KeyboardInterrupt as exc:
            detail = str(exc)  # e.g. pipeline.versions.InterruptedAfterSwitch
            _fail(ctx, f"interrupted {detail}" if detail else "interrupted", 130)
        except Exception as exc:
            _database_error(ctx, exc)
            _fail(ctx, f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL)


def short_help(group: click.Group, ctx: click.Context, name: str, limit: int) -> str:
    """A command's one-line help: from :data:`COMMANDS` when it is not loaded yet."""
    if name in COMMANDS and name not in group.commands:
        return click.Command(name, help=COMMANDS[name][2]).get_short_help_str(limit)
    command = group.get_command(ctx, name)
    return command.get_short_help_str(limit) if command is not None else ""


def _database_error(ctx: click.Context, exc: Exception) -> None:
    """Report a SQLAlchemy error (SQLAlchemy is only imported by commands that used it)."""
    errors = sys.modules.get("sqlalchemy.exc")
    if errors is None:
        return
    if isinstance(exc, errors.OperationalError):
        from recengine.storage.db import is_busy

        if is_busy(exc):
            _fail(ctx, BUSY_MESSAGE, EXIT_BUSY)
        _fail(ctx, f"error: cannot use the database: {exc.orig}", EXIT_BAD_INPUT)
    if isinstance(exc, errors.SQLAlchemyError):
        _fail(ctx, f"error: database error: {exc}", EXIT_INTERNAL)


def _fail(ctx: click.Context, message: str, code: int) -> None:
    debug = ctx.find_root().params.get("debug")
    if debug:
        raise
    click.echo(message, err=True)
    if code == EXIT_INTERNAL:
        click.echo("run again with --debug for the traceback", err=True)
    sys.exit(code)


@click.group(cls=_Group)
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """recengine: near-duplicate detection and related articles for article sites.

    Settings come from config/defaults.toml, the file named by RECENGINE_CONFIG and RECENGINE_*
    variables (RECENGINE_DATABASE_URL, RECENGINE_DATA_DIR, ...).
    """
    if ctx.obj is None:
        ctx.obj = CliContext(_load_settings)  # read when a command first needs them


def _load_settings() -> Any:
    from recengine.config import load_settings

    return load_settings()
