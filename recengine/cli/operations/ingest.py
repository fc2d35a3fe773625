"""``recengine ingest FILE``: upsert articles from JSON Lines, CSV or TSV."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from recengine.errors import InvalidRecord
from recengine.jsontext import printable

if TYPE_CHECKING:
    from recengine.cli.context import CliContext
    from recengine.pipeline.ingest.ingester import IngestSummary
    from recengine.pipeline.ingest.readers import Format

SHOWN_REJECTIONS = 20
INPUT_FORMATS = ("jsonl", "json", "csv", "tsv")
OLD_INPUT_FORMATS = ("jsonl", "csv", "tsv")  # what `ingest --format` took before it named output


class _Output(click.Choice):  # type: ignore[type-arg]
    """``text`` or ``json``; also, unlisted, an input format (``--format jsonl``), which is what
    ``ingest --format`` meant before it named the output as every other command's does."""

    def __init__(self) -> None:
        super().__init__(["text", "json", *OLD_INPUT_FORMATS])

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[text|json]"


@click.command()
@click.argument(
    "file", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path)
)
@click.option(
    "--input-format",
    "fmt",
    type=click.Choice(INPUT_FORMATS),
    default=None,
    help="Input format (default: from the file extension; json for standard input).",
)
@click.option(
    "--columns",
    default=None,
    help="Column names of a headerless CSV/TSV, comma-separated (e.g. id,title,content).",
)
@click.option(
    "--format",
    "output",
    type=_Output(),
    default="text",
    show_default=True,
    help="Output: text, or json (the summary as one JSON object).",
)
@click.option("--json", "as_json", is_flag=True, hidden=True)  # --format json, as before
@click.option(
    "--reindex/--no-reindex",
    default=True,
    show_default=True,
    help="Fit the first IDF model right away when the database has none yet.",
)
@click.pass_obj
def ingest(
    ctx: CliContext,
    file: Path,
    fmt: Format | None,
    columns: str | None,
    output: str,
    as_json: bool,
    reindex: bool,
) -> None:
    """Upsert the articles of FILE by their id.

    FILE holds JSON Lines (.jsonl, one object per line), JSON (.json: an array of records, or
    records one after another, indented or not) or CSV/TSV with a header row; - reads standard
    input (JSON unless --input-format says otherwise). Bad records are reported with their line
    number and skipped; the rest go in, one transaction per batch. Exit status 1 when any
    record was rejected.
    """
    if output in OLD_INPUT_FORMATS:  # `--format jsonl`: the input format, as this option once was
        if fmt is not None and fmt != output:
            raise click.UsageError(f"--format {output} and --input-format {fmt} disagree")
        fmt, output = cast("Format", output), "text"
    as_json = as_json or output == "json"
    from recengine.cli.progress import PhaseProgress
    from recengine.pipeline.ingest.ingester import Ingester
    from recengine.pipeline.ingest.readers import read_file, read_stream

    names = [c.strip() for c in columns.split(",")] if columns else None
    size, extra = ctx.settings.ingest.max_record_bytes, ctx.settings.ingest.extra_fields
    stdin = str(file) == "-"
    progress = PhaseProgress("ingest", "records")
    try:
        if stdin:  # no extension to tell the format: JSON reads JSON Lines, arrays and objects
            raw = read_stream(sys.stdin.buffer, fmt or "json", size, names, extra)
        else:
            raw = read_file(file, fmt, size, names, extra)
        with Ingester(ctx.factory, ctx.featurizer) as ingester:  # stops its workers, if any
            summary = ingester.ingest_raw(raw, progress)
    except UnicodeDecodeError as exc:
        raise InvalidRecord(f"{file}: not UTF-8 ({exc.reason})") from None
    finally:
        progress.close()
    ingester.dedup.save()  # the near-duplicate index, as of the last committed batch
    _print(summary, "standard input" if stdin else str(file), as_json)
    if reindex:
        _settle(ctx)
    elif summary.features_pending:
        click.echo(
            f"{summary.features_pending} articles wait for features: run `recengine reindex`",
            err=True,
        )
    if summary.rejected:
        sys.exit(1)


def _settle(ctx: CliContext) -> None:
    """The first IDF model, whenever the database has articles and none (after this ingest, or
    an earlier one killed before its first fit switched: the reindex resumes it); and the end
    of a reindex interrupted after its switch. So the same command run again after a kill ends
    where an uninterrupted run would have."""
    from recengine.cli.operations import reindex as reindex_cmd
    from recengine.pipeline.reindex.run import finish_after_switch, needs_first_model

    if needs_first_model(ctx.factory):
        click.echo("no IDF model yet: fitting the first one on the stored articles", err=True)
        reindex_cmd.run(ctx, force=True)
    elif (version := finish_after_switch(ctx.factory, ctx.featurizer)) is not None:
        click.echo(
            f"finished the reindex interrupted after its switch to IDF model version {version}: "
            "index files saved, the old version's rows and the job removed",
            err=True,
        )


def _print(summary: IngestSummary, file: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(summary.as_dict(), ensure_ascii=False))
        return
    click.echo(
        f"{file}: read {summary.read}, inserted {summary.inserted}, updated {summary.updated}, "
        f"unchanged {summary.unchanged}, rejected {summary.rejected}"
        + (f", superseded in file {summary.superseded}" if summary.superseded else "")
        + (f", with fields left out {summary.ignored}" if summary.ignored else "")
    )
    for r in summary.rejections[:SHOWN_REJECTIONS]:
        where = f"line {r.line}" + (f" (id {r.id})" if r.id else "")
        click.echo(f"  rejected {where}: {r.reason}", err=True)
    if summary.rejected > SHOWN_REJECTIONS:
        click.echo(f"  ... and {summary.rejected - SHOWN_REJECTIONS} more rejected", err=True)
    for left in summary.ignored_fields[:SHOWN_REJECTIONS]:
        fields = ", ".join(f"'{printable(f, 40)}'" for f in left.fields)
        click.echo(f"  left out of line {left.line} (id {printable(left.id)}): {fields}", err=True)
    if summary.ignored > SHOWN_REJECTIONS:
        click.echo(
            f"  ... and {summary.ignored - SHOWN_REJECTIONS} more with fields left out", err=True
        )
