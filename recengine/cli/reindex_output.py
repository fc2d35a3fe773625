"""What a reindex shows on the command line, for every engine: progress bars and the summary.

A progress bar per phase (articles done, rate, ETA) is drawn on a terminal only: in CI or when
stderr is redirected the command prints just its summary line.
"""

from __future__ import annotations

import sys

import click
from tqdm import tqdm

from recengine.pipeline.versions import ReindexResult


class BarProgress:
    """One tqdm bar per phase on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bar: tqdm[None] | None = None

    def start(self, phase: str, total: int | None, done: int = 0) -> None:
        self.close()
        self._bar = tqdm(
            total=total,
            initial=done,
            unit="doc",
            desc=f"reindex: {phase}",
            disable=not self.enabled,
            dynamic_ncols=True,
            smoothing=0.1,
        )

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def echo_result(result: ReindexResult) -> None:
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
        + (f" ({result.reason})" if result.reason else "")
    )
