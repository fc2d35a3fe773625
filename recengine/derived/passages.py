"""The passage index (the near-duplicate stage's second candidate source) as a kind the follower
keeps in step with SQL.

Rows: ``id``, ``title`` and ``content`` of every live article whose text has terms under the
version (the same articles as the radius index, so the two sources cover one set). The kind
computes each article's passage hashes from its text (``text.neardup.compare.article_passages``:
clean, boilerplate stripped as ``features.strip_boilerplate`` says, quoted reply text removed): they
are a pure function of the text, so nothing is stored in SQL for them and every process, given the
same rows, holds the same index. A full reindex does not build it from SQL: its workers compute
the same hashes (``text.neardup.compare.clean_passages``) from the text they clean for the
tokenizer, the spool carries them, and :meth:`PassageKind.build_packed` makes the index of them. An
ingest does the same for the articles it writes (``PassageKind.hints``, ``text.neardup.hints``): the
follower of the writing process takes their hashes instead of cleaning each text a second time
(6.5 % of a steady-state ingest of long articles, measured). The file holds ``ids int64 (n,)``,
``rows uint64 (n, 8)`` and ``counts int16 (n,)`` (the passages of each live article), 74 bytes
per article.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from recengine.config import Settings
from recengine.derived.indexes import follower_options, index_directory
from recengine.index.container import Arrays
from recengine.index.follower import Follower
from recengine.index.kind import I64, IndexKind
from recengine.index.neardup.passages import Packed, PassageIndex, passage_rows
from recengine.text.neardup.compare import article_passages
from recengine.text.neardup.hints import TextHints
from recengine.text.neardup.passages import PASSAGE_CHARS, PASSAGES_KEPT, Passages


class PassageKind(IndexKind[PassageIndex]):
    """Articles by passage hash (``index.neardup.passages.PassageIndex``).

    Args:
        stop_df: ``neardup.passage_stop_df`` (a hash held by more articles is ignored).
        strip: ``features.strip_boilerplate``.
    """

    name: ClassVar[str] = "passages"
    fields: ClassVar[tuple[str, ...]] = ("title", "content")
    needs_terms: ClassVar[bool] = True

    def __init__(self, stop_df: int, strip: bool) -> None:
        self.stop_df, self.strip = stop_df, strip
        # The passages of texts an ingest is about to write, computed from the text its
        # analysis cleaned (``Featurizer.analyze_texts``, the same settings): an apply that
        # meets a row with exactly that text takes them.
        self.hints: TextHints[Passages] = TextHints()

    def _passages(self, title: str, content: str) -> Passages:
        found = self.hints.get(title, content)
        return article_passages(title, content, self.strip) if found is None else found

    def params(self) -> dict[str, Any]:
        return {
            "stop_df": self.stop_df,
            "strip_boilerplate": self.strip,
            "chars": PASSAGE_CHARS,
            "kept": PASSAGES_KEPT,
        }

    def build(self, pages: Iterable[Sequence[Any]]) -> PassageIndex:
        return self.build_packed(self._packed(rows) for rows in pages)

    def build_packed(self, parts: Iterable[Packed]) -> PassageIndex:
        """The index of articles whose passages are computed already (each id once, packed by
        ``index.neardup.passages.passage_rows``): a reindex's, from what its workers computed beside
        the tokens (``pipeline.reindex.job``), as :meth:`build`'s from SQL rows."""
        index = PassageIndex(self.stop_df)
        for ids, rows, counts in parts:
            index.add_rows(ids, rows, counts)
        return index

    def apply(self, index: PassageIndex, drops: I64, upserts: Sequence[Any]) -> PassageIndex:
        index.remove(drops)
        if upserts:
            index.add_rows(*self._packed(upserts))
        return index

    def _packed(self, rows: Sequence[Any]) -> Packed:
        """Ids and passages of SQL rows (``id``, ``title``, ``content``)."""
        ids = np.fromiter((r.id for r in rows), np.int64, len(rows))
        found = [self._passages(r.title, r.content) for r in rows]
        return (ids, *passage_rows(found))

    def arrays(self, index: PassageIndex) -> Arrays:
        ids, rows, counts = index.arrays()
        return {"ids": ids, "rows": rows, "counts": counts}

    def restore(self, arrays: Arrays) -> PassageIndex:
        try:
            ids, rows, counts = arrays["ids"], arrays["rows"], arrays["counts"]
        except KeyError as exc:
            raise ValueError(f"no {exc} array") from None
        if ids.dtype != np.int64 or rows.dtype != np.uint64 or counts.dtype != np.int16:
            raise ValueError(f"arrays of {ids.dtype} / {rows.dtype} / {counts.dtype}")
        if rows.shape != (len(ids), PASSAGES_KEPT) or counts.shape != ids.shape:
            raise ValueError(f"shapes {ids.shape} / {rows.shape} / {counts.shape} do not fit")
        if len(counts) and (int(counts.min()) < 0 or int(counts.max()) > PASSAGES_KEPT):
            raise ValueError("passage counts out of range")
        index = PassageIndex(self.stop_df)
        index.add_rows(np.array(ids), np.array(rows), np.array(counts))  # copies the mapping
        return index

    def size(self, index: PassageIndex) -> int:
        return len(index)


def passage_kind(settings: Settings) -> PassageKind:
    """The passage index kind under ``settings``."""
    return PassageKind(settings.neardup.passage_stop_df, settings.features.strip_boilerplate)


def passage_follower(settings: Settings) -> Follower[PassageIndex]:
    """A process's passage index, following SQL; saved every ``index.save_after`` changes."""
    return Follower(
        passage_kind(settings),
        index_directory(settings, PassageKind.name),
        save_after=settings.index.save_after,
        **follower_options(settings),
    )
