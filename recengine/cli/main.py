"""Entry point: the click group, settings, and turning every expected error into a clear message.

Exit codes: 0 success; 1 the command ran but some input was rejected (details printed);
2 usage error or bad input that stopped the command (nothing was changed); 70 an internal error
(run with ``--debug`` for the traceback); 75 the database was busy (locked by another writer
for too long: nothing was changed, try again).
"""

from __future__ import annotations

import sys
from typing import Any

import click
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from recengine.cli.context import CliContext
from recengine.config import load_settings
from recengine.errors import RecengineError
from recengine.storage.db import is_busy

EXIT_REJECTED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later
BUSY_MESSAGE = (
    "error: the database is busy: another process held its write lock for longer than the "
    "wait allows (SQLite takes one writer at a time); nothing was changed, try again"
)


class _Group(click.Group):
    """Turns domain and database errors into one-line messages instead of tracebacks."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except RecengineError as exc:
            _fail(ctx, f"error: {exc}", EXIT_BAD_INPUT)
        except OSError as exc:  # unreadable files, full disks, permissions
            _fail(ctx, f"error: {exc}", EXIT_BAD_INPUT)
        except OperationalError as exc:
            if is_busy(exc):
                _fail(ctx, BUSY_MESSAGE, EXIT_BUSY)
            _fail(ctx, f"error: cannot use the database: {exc.orig}", EXIT_BAD_INPUT)
        except SQLAlchemyError as exc:
            _fail(ctx, f"error: database error: {exc}", EXIT_INTERNAL)
        except KeyboardInterrupt as exc:
            detail = str(exc)  # e.g. pipeline.versions.InterruptedAfterSwitch
            _fail(ctx, f"interrupted {detail}" if detail else "interrupted", 130)
        except Exception as exc:
            _fail(ctx, f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL)


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
        try:
            ctx.obj = CliContext(load_settings())
        except RecengineError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_BAD_INPUT)


def _register() -> None:
    from recengine.cli import db, demo, duplicates, ingest, reindex, related, report, serve

    main.add_command(db.db)
    main.add_command(demo.demo)
    main.add_command(duplicates.duplicates)
    main.add_command(ingest.ingest)
    main.add_command(reindex.reindex)
    main.add_command(related.related)
    main.add_command(report.report)
    main.add_command(serve.serve)


_register()
