"""What a reindex prints when it is done, for every engine: the summary line (its progress
while it runs is ``cli.progress``)."""

from __future__ import annotations

import click

from recengine.pipeline.reindex.versions import ReindexResult


def echo_result(result: ReindexResult) -> None:
    if result.mode == "current":
        click.echo(
            f"up to date, nothing done: {result.reason} (`recengine reindex --force` rebuilds "
            "anyway)"
        )
        return
    if result.mode == "incremental":
        click.echo(
            f"incremental reindex: {result.recomputed} changed articles recomputed under IDF "
            f"model version {result.version} ({result.reason})"
        )
        return
    click.echo(
        ("resumed and finished" if result.resumed else "reindexed")
        + f" {result.n_docs} articles: IDF model version {result.version}, "
        f"{result.n_terms} terms"
        + (f", {result.caught_up} written meanwhile caught up" if result.caught_up else "")
        + (
            f", {result.encoded} texts encoded (the others' stored vectors kept)"
            if result.encoded is not None
            else ""
        )
        + (f" ({result.reason})" if result.reason else "")
    )
