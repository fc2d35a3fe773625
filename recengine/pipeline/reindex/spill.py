"""What pass 1 of a reindex compared of texts past the memory budget, on disk for the leader pass.

The leader pass verifies most articles of a corpus whose candidates crowd, and what it compares
of a text (its shingles: ~8 bytes per character) is costly to compute: cleaning, quoted
replies, word points and shingles, ~1 ms for an average article. Pass 1 has each text clean
anyway (for its tokens), so it hands what is compared of the first texts to the leader pass in
memory, within ``reindex.kept_compared_mb`` (``text.neardup.kept.KeptTexts``). Past that budget the
leader pass used to read and compute the texts again, many of them several times over (a text
dropped from the store is computed again when a later block meets it): at 100,000 articles of
the resampled paragraph mix that was 42 % of the reindex's time (BENCHMARKS.md).

So the texts past the budget are **spilled**: whoever analysed a page (a pool worker, or the
reindex's own process) appends each text's shingle and title hashes to a file of its own in the
job directory (``compared-<pid>.bin``, raw ``uint64``, no framing: a file that lives as long as
one run and is never trusted across runs) and hands back only where they lie. The leader pass
reads one text's arrays with one ``preadv`` into a fresh array: no cleaning, no hashing; the
operating system's page cache holds what memory allows, the disk the rest (about 2.7x the
UTF-8 text of the spilled articles: ~12 KB for an average article).

The files are removed when the run ends, and with the job directory's other temporaries when
a new job starts (a run killed mid-way leaves them behind: never read, since the index of
where each text lies is this process's memory only).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from recengine.text.neardup.compare import Compared

if TYPE_CHECKING:  # not at run time: pool workers spill, and judging imports SQLAlchemy
    from recengine.text.neardup.kept import KeptTexts

PREFIX = "compared-"
_COLUMNS = 6  # SpilledTexts' table: seq, file, then Where's four fields


class Where(NamedTuple):
    """Where one text's arrays lie in a spill file: ``shingles`` hashes at byte ``offset``,
    then ``title`` hashes; ``body_chars`` as :class:`~recengine.text.neardup.compare.Compared` has
    it."""

    offset: int
    shingles: int
    title: int
    body_chars: int


def spill_path(folder: Path) -> Path:
    """This process's spill file in ``folder`` (one per process: no two writers share one)."""
    return folder / f"{PREFIX}{os.getpid()}.bin"


def spill(folder: Path, texts: Sequence[Compared]) -> tuple[str, list[Where]]:
    """Append ``texts``' arrays to this process's spill file in ``folder``; its path and where
    each text lies, in order. Not synced: the file is scratch of one run."""
    path = spill_path(folder)
    where = []
    with path.open("ab") as handle:
        offset = handle.tell()
        for text in texts:
            handle.write(text.shingles.tobytes())
            handle.write(text.title.tobytes())
            where.append(Where(offset, len(text.shingles), len(text.title), text.body_chars))
            offset += 8 * (len(text.shingles) + len(text.title))
    return str(path), where


def remove_spills(folder: Path) -> None:
    """Remove every spill file of ``folder`` (this run's or an earlier, killed one's)."""
    for path in folder.glob(f"{PREFIX}*.bin"):
        path.unlink(missing_ok=True)


class SpilledTexts:
    """A :class:`~recengine.pipeline.clusters.verify.KeptTexts` store (what was compared, in memory)
    and what pass 1 spilled to disk past its budget, by ``(article id, seq)``: the leader
    pass's store of compared texts (``verify.Kept``). What the pass compares itself goes to
    memory; a text spilled at another ``seq`` (changed since pass 1 read it) is not used.

    Close it (or use it as a context manager): the files are removed.
    """

    def __init__(self, kept: KeptTexts, folder: Path) -> None:
        self.kept, self.folder = kept, folder
        # by article id: seq, file (index in _fds; -1: not spilled), then Where's fields: 48
        # bytes an id up to the largest spilled (ids are dense), where a dictionary of tuples
        # took ~290 bytes a spilled text (290 MB at 1M articles)
        self._at = np.full((0, _COLUMNS), -1, np.int64)
        self._files: dict[str, int] = {}  # path -> index in _fds
        self._fds: list[int] = []

    @property
    def budget(self) -> int:
        """The memory store's budget in bytes (pass 1 hands texts in memory up to it)."""
        return self.kept.budget

    def __enter__(self) -> SpilledTexts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, path: str, keys: Sequence[tuple[int, int]], where: Sequence[Where]) -> None:
        """Record that the texts of ``keys`` (``(article id, seq)``) lie in ``path`` as
        :func:`spill` wrote them."""
        file = self._files.get(path)
        if file is None:
            file = self._files[path] = len(self._fds)
            self._fds.append(os.open(path, os.O_RDONLY))
        if not keys:
            return
        ids = np.fromiter((i for i, _ in keys), np.int64, len(keys))
        top = int(ids.max()) + 1
        if top > len(self._at):
            grown = np.full((max(top, 2 * len(self._at)), _COLUMNS), -1, np.int64)
            grown[: len(self._at)] = self._at
            self._at = grown
        rows = [(seq, file, *at) for (_, seq), at in zip(keys, where, strict=True)]
        self._at[ids] = np.array(rows, np.int64)

    def get(self, article_id: int, seq: int) -> Compared | None:
        """The text kept in memory for the article at ``seq``, else the one spilled at it."""
        found = self.kept.get(article_id, seq)
        if found is not None:
            return found
        if article_id >= len(self._at):
            return None
        spilled_seq, file, offset, shingles, title, body_chars = self._at[article_id].tolist()
        if file < 0 or spilled_seq != seq:
            return None
        both = np.empty(shingles + title, np.uint64)
        if os.preadv(self._fds[file], [both.data], offset) != both.nbytes:
            return None  # cut short (the disk filled up): computed again instead
        return Compared(both[:shingles], both[shingles:], body_chars)

    def put(self, article_id: int, seq: int, text: Compared) -> None:
        """Keep ``text`` in memory (:meth:`KeptTexts.put`)."""
        self.kept.put(article_id, seq, text)

    def close(self) -> None:
        """Close the files and remove every spill file of the folder."""
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self._files.clear()
        self._at = np.full((0, _COLUMNS), -1, np.int64)
        remove_spills(self.folder)
