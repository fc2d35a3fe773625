"""What lists show and suppress of each article, as a kind the follower keeps in step with SQL.

Rows: each live article's caller id, title, url, card, publication time, category and tags,
the terms of its stored vector (their names: ``index.vocabulary``), with its member row under
the version (an outer join,
``storage.rows.index_rows``): the ``index.briefs.Briefs`` a related list reads instead of SQL
(``recommend.related``).

Why following ``articles.seq`` is enough: every column read here changes with the article's
``seq``, its member row included (writers give the articles a cluster plan re-decides the
write's ``seq``, ``pipeline.clusters.upkeep``), except the card when a reindex derives it again
under another rule (``pipeline.reindex.cards``): a brief whose ``card_rule`` is not the one of
this process's settings is therefore read from SQL when shown (``recommend.lists.facts``).
Saved after builds and compactions, like the related index (the file holds every title).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

from recengine.config import Settings
from recengine.derived.indexes import follower_options, index_directory
from recengine.derived.rows import epoch
from recengine.features.tfidf import named_terms
from recengine.index.briefs import Brief, Briefs, briefs_from_arrays, build_briefs
from recengine.index.container import Arrays
from recengine.index.follower import Follower
from recengine.index.kind import I64, IndexKind
from recengine.times import utc_text


class BriefKind(IndexKind[Briefs]):
    """Every live article's brief under a model version (see the module docstring).

    Args:
        delta_max: changed articles held beside the main part before a compaction is due.
    """

    name: ClassVar[str] = "briefs"
    reads_clusters: ClassVar[bool] = True
    fields: ClassVar[tuple[str, ...]] = (
        "external_id",
        "title",
        "url",
        "card_image",
        "card_summary",
        "card_rule",
        "published_at",
        "category",
        "tags",
        "canonical_id",
        "member_rule",
        "member_score",
        "member_distance",
        "vector",
    )

    def __init__(self, delta_max: int) -> None:
        self.delta_max = delta_max

    def params(self) -> dict[str, Any]:
        return {"format": 3}

    def build(self, pages: Iterable[Sequence[Any]]) -> Briefs:
        rows = [r for page in pages for r in page]
        return build_briefs([brief_of(r) for r in rows], _terms(rows))

    def apply(self, index: Briefs, drops: I64, upserts: Sequence[Any]) -> Briefs:
        return index.with_changes(drops, [brief_of(r) for r in upserts], _terms(upserts))

    def arrays(self, index: Briefs) -> Arrays:
        return index.arrays()

    def comparable(self, index: Briefs) -> Arrays:
        """Without the vocabulary: it keeps the names of terms of deleted articles (never
        wrong, never read), so how much of it a process holds depends on its history."""
        whole = self.arrays(index)
        return {k: v for k, v in whole.items() if not k.startswith("vocabulary.")}

    def restore(self, arrays: Arrays) -> Briefs:
        return briefs_from_arrays(arrays)

    def size(self, index: Briefs) -> int:
        return len(index)

    def describe(self, index: Briefs) -> dict[str, Any]:
        return {"changed": len(index.changes)}

    def nbytes(self, index: Briefs) -> int:
        return index.nbytes()

    def compaction_due(self, index: Briefs) -> bool:
        return len(index.changes) > self.delta_max

    def compact(self, index: Briefs) -> Briefs:
        return index.compacted()


def brief_of(row: Any) -> Brief:
    """The brief of an index row with :attr:`BriefKind.fields` (its member row's columns NULL
    when it is a canonical or alone)."""
    tags = tuple(t for t in (row.tags or ()) if isinstance(t, str))
    member = row.canonical_id is not None
    return Brief(
        int(row.id),
        row.external_id,
        row.title,
        row.url,
        row.card_image,
        row.card_summary,
        row.card_rule,
        utc_text(row.published_at),
        epoch(row.published_at),
        row.category,
        tags,
        row.member_rule if member else None,
        None if row.member_score is None else float(row.member_score),
        int(row.member_distance) if member else 0,
        int(row.seq),
        int(row.canonical_id) if member else int(row.id),
    )


def _terms(rows: Sequence[Any]) -> Iterator[tuple[int, str]]:
    """``(hash, term)`` of every term of the rows' stored vectors."""
    for row in rows:
        yield from named_terms(row.vector)


def brief_follower(settings: Settings, *, background: bool) -> Follower[Briefs]:
    """A process's briefs following SQL; saved after builds and compactions only."""
    return Follower(
        BriefKind(settings.related.delta_max_rows),
        index_directory(settings, BriefKind.name),
        save_after=None,
        background=background,
        **follower_options(settings),
    )
