"""Entry point: the click group, settings, and turning every expected error into a clear message.

Exit codes: 0 success; 1 the command ran but some input was rejected (details printed);
2 usage error, bad setting or bad input that stopped the command (nothing was changed); 70 an
internal error (run with ``--debug`` for the traceback); 75 the database was busy (locked by
another writer for too long: nothing was changed, try again); 141 the output pipe was closed (as
``recengine duplicates | head`` does), silently, as for any Unix tool.

Start-up is kept short: the commands are listed with their one-line help from
:data:`COMMANDS` and a command's module is imported only when that command runs (or shows its
own ``--help``); settings are read on first use. ``recengine --help`` imports click and this
module, nothing else (``tests/cli/test_cli_startup.py`` checks both).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from recengine.cli.context import CliContext
from recengine.cli.params import utf8_checked
from recengine.errors import RecengineError

EXIT_REJECTED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `seq 1000000 | head -1`
BUSY_MESSAGE = (
    "error: the database is busy: another process held its write lock for longer than the "
    "wait allows (SQLite takes one writer at a time); nothing was changed, try again"
)


# name -> (module, attribute, one-line help as `recengine --help` lists it). The help must be
# the command's own short help (tests/cli/test_cli_startup.py compares them).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "article": (
        "recengine.cli.content.article",
        "article",
        "Stored articles: show one, list them page by page, delete one.",
    ),
    "db": ("recengine.cli.operations.db", "db", "Database schema commands."),
    "demo": (
        "recengine.cli.operations.demo",
        "demo",
        "Create the database, ingest and index the demo corpus, then serve it.",
    ),
    "duplicates": (
        "recengine.cli.content.duplicates",
        "duplicates",
        "List near-duplicate clusters of two or more articles, canonical first.",
    ),
    "events": (
        "recengine.cli.content.feed",
        "events",
        "Record that reader USER read ARTICLE_IDS (all or none: an unknown id changes nothing).",
    ),
    "export": (
        "recengine.cli.content.export",
        "export",
        "Write related lists as files for static-site generators (Hugo, Hexo, Jekyll).",
    ),
    "feed": (
        "recengine.cli.content.feed",
        "feed",
        "The de-duplicated feed of reader USER, from what they read (`recengine events`).",
    ),
    "ingest": (
        "recengine.cli.operations.ingest",
        "ingest",
        "Upsert the articles of FILE by their id.",
    ),
    "reindex": (
        "recengine.cli.operations.reindex",
        "reindex",
        "Rebuild IDF, vectors and fingerprints from the stored articles.",
    ),
    "override": (
        "recengine.cli.content.override",
        "override",
        "Editors' overrides (list, add, remove), printed as JSON.",
    ),
    "reader": (
        "recengine.cli.content.reader",
        "reader",
        "A reader's data: show what they read, or delete (erase) it.",
    ),
    "related": (
        "recengine.cli.content.related",
        "related",
        "Articles related to ARTICLE_ID, near-duplicates suppressed (and listed).",
    ),
    "report": (
        "recengine.cli.operations.report",
        "report",
        "Write an HTML report: nearest-neighbour distances, clusters, top terms, suppression.",
    ),
    "serve": (
        "recengine.cli.operations.serve",
        "serve",
        "Serve the HTTP API, /widget.js and the demo page with gunicorn.",
    ),
}


class _Group(click.Group):
    """Loads commands on demand; turns domain and database errors into one-line messages
    instead of tracebacks."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``--debug`` is taken wherever it is typed (``recengine related x --debug``, as the
        internal error's hint reads), up to a ``--`` that ends the options."""
        if ctx.parent is None:
            args = _debug_first(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute, _ = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(utf8_checked(command), cmd_name)
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
        except BrokenPipeError:  # `recengine duplicates | head`: the reader has gone
            _closed_pipe()
        except RecengineError as exc:
            _fail(ctx, f"error: {exc}", EXIT_BAD_INPUT)
        except OSError as exc:  # unreadable files, full disks, permissions
            _fail(ctx, f"error: {exc}", EXIT_BAD_INPUT)
        except KeyboardInterrupt as exc:
            detail = str(exc)  # e.g. pipeline.reindex.versions.InterruptedAfterSwitch
            _fail(ctx, f"interrupted {detail}" if detail else "interrupted", 130)
        except Exception as exc:
            _database_error(ctx, exc)
            _fail(ctx, f"internal error: {_brief(exc)}", EXIT_INTERNAL)


def _debug_first(args: list[str]) -> list[str]:
    """``args`` with every ``--debug`` before the ``--`` that ends the options moved first."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[1:end]:
        return args
    rest = [a for a in args[:end] if a != "--debug"]
    return ["--debug", *rest, *args[end:]]


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
        reason = _brief(exc.orig, with_type=False)
        _fail(ctx, f"error: cannot use the database {_database(ctx)}: {reason}", EXIT_BAD_INPUT)
    if type(exc) is errors.DatabaseError:
        # The driver's own DatabaseError, none of its kinds: the file is not a database, or a
        # damaged one (SQLite: "file is not a database", "database disk image is malformed").
        reason = _brief(getattr(exc, "orig", exc), with_type=False)
        _fail(ctx, f"error: cannot use the database {_database(ctx)}: {reason}", EXIT_BAD_INPUT)
    if isinstance(exc, errors.SQLAlchemyError):
        # Never the statement or its parameters: a batch's values would fill the screen.
        orig = getattr(exc, "orig", None)
        cause = orig if isinstance(exc, errors.StatementError) and orig else exc
        _fail(ctx, f"error: database error: {_brief(cause)}", EXIT_INTERNAL)


def _brief(exc: BaseException | None, *, with_type: bool = True) -> str:
    """``Type: first line of the message``, at most 300 characters."""
    if exc is None:
        return "unknown"
    lines = str(exc).strip().splitlines()
    if not with_type and lines:
        text = lines[0]
    else:
        text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _database(ctx: click.Context) -> str:
    obj = ctx.find_root().obj
    try:
        return obj.database if isinstance(obj, CliContext) else ""
    except Exception:  # settings that cannot be read: the message still says what failed
        return ""


def _closed_pipe() -> None:
    """Exit as a Unix tool killed by SIGPIPE does: no message, status 128 + 13.

    What is still buffered for stdout can never be written: point stdout at /dev/null so the
    interpreter's final flush does not print a second error.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(EXIT_CLOSED_PIPE)


def _fail(ctx: click.Context, message: str, code: int) -> None:
    debug = ctx.find_root().params.get("debug")
    if debug:
        raise
    click.echo(message, err=True)
    if code == EXIT_INTERNAL:
        click.echo("run again with --debug for the traceback", err=True)
    sys.exit(code)


@click.group(cls=_Group)
@click.version_option(package_name="recengine", message="recengine %(version)s")
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
