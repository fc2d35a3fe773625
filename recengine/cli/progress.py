"""What a long command shows while it works, on stderr: never silence, never a broken bar.

On a terminal, a phase with a size (articles to tokenize) is a tqdm bar with rate and ETA, and a
phase that counts as it goes (records stored) a tqdm counter; a phase with nothing to count
(catch-up, clusters, switch) is one line naming it, never an empty ``0doc [?doc/s]`` bar. Off a
terminal (a pipe, a CI log), or on one that reports no width (``0x0``: tqdm would print blank
lines), every phase is plain lines: one when it starts, one every :data:`INTERVAL` seconds
while it counts, and one when it ends with its count and time (unless it counted nothing and
took under :data:`QUICK`). Standard output is never written.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO

import click
from tqdm import tqdm

INTERVAL = 10.0  # seconds between the plain lines of a phase that counts
QUICK = 1.0  # seconds: a phase with nothing counted that ends sooner gets no "done" line


def bars_fit(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal a bar can be drawn on (it reports a width)."""
    try:
        return stream.isatty() and os.get_terminal_size(stream.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):
        return False


class PhaseProgress:
    """The ``Progress`` of a command (``pipeline.reindex.versions.Progress``): phases, then counts.

    Args:
        command: the first word of every line and bar (``reindex``, ``ingest``).
        unit: what is counted (``articles``, ``records``).
        bars: draw tqdm bars (default: when stderr is a terminal with a width).
        interval: seconds between plain lines of a counting phase.
    """

    def __init__(
        self,
        command: str,
        unit: str = "articles",
        *,
        bars: bool | None = None,
        interval: float = INTERVAL,
    ) -> None:
        self.command = command
        self.unit = unit
        self.bars = bars_fit(sys.stderr) if bars is None else bars
        self.interval = interval
        self._bar: tqdm[None] | None = None
        self._phase: str | None = None
        self._total: int | None = None
        self._done = 0
        self._started = 0.0
        self._said = 0.0

    def start(self, phase: str, total: int | None, done: int = 0) -> None:
        self.close()
        self._phase, self._total, self._done = phase, total, done
        self._started = self._said = time.monotonic()
        if self.bars and total is not None:
            self._bar = self._tqdm(total, done)
            return
        size = f" {total:,} {self.unit}" if total is not None else ""
        self._say(f"{phase}{size} ...")

    def update(self, n: int) -> None:
        self._done += n
        if self.bars:
            if self._bar is None:  # a phase that counts without a size: a counter
                self._bar = self._tqdm(None, self._done - n)
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._said >= self.interval:
            self._said = now
            of = f" of {self._total:,}" if self._total else ""
            self._say(f"{self._phase}: {self._done:,}{of} {self.unit} ({self._rate(now)})")

    def close(self) -> None:
        """End the phase under way (the next ``start`` does it too)."""
        if self._phase is None:
            return
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif not self.bars:
            took = time.monotonic() - self._started
            if self._done or took >= QUICK:
                count = f": {self._done:,} {self.unit}" if self._done else ""
                self._say(f"{self._phase} done{count} in {took:.1f} s")
        self._phase = None

    def _tqdm(self, total: int | None, done: int) -> tqdm[None]:
        return tqdm(
            total=total,
            initial=done,
            unit=f" {self.unit}",
            desc=f"{self.command}: {self._phase}",
            dynamic_ncols=True,
            smoothing=0.1,
            file=sys.stderr,
        )

    def _rate(self, now: float) -> str:
        elapsed = max(now - self._started, 1e-9)
        return f"{self._done / elapsed:,.0f} {self.unit}/s"

    def _say(self, text: str) -> None:
        click.echo(f"{self.command}: {text}", err=True)
