"""The candidate index of related articles as a kind the follower keeps in step with SQL.

Rows: each live article's stored vector, fingerprint, publication date, category and tags
(``derived.rows.to_rows``). The index is a main segment plus small delta segments
(``index.layered``): a change marks the rows it replaces dead and adds a small segment; when the
deltas outgrow ``related.delta_max_rows`` every live row is merged into a new main segment (in a
background thread in servers) and saved. Files hold every part and its alive mask,
memory-mapped on load so processes share the pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from recengine.config import RelatedSettings, Settings
from recengine.derived.indexes import follower_options, index_directory
from recengine.derived.rows import to_rows
from recengine.index import layered
from recengine.index.container import Arrays
from recengine.index.follower import Follower
from recengine.index.kind import I64, IndexKind
from recengine.index.related.segment import build_segment, concat_rows, empty_rows
from recengine.index.related.view import IndexView


class RelatedKind(IndexKind[IndexView]):
    """The candidate index of related articles: segments of articles' vectors and postings."""

    name: ClassVar[str] = "related"
    fields: ClassVar[tuple[str, ...]] = (
        "published_at",
        "category",
        "tags",
        "fingerprint",
        "vector",
    )

    def __init__(self, related: RelatedSettings) -> None:
        self.related = related

    def params(self) -> dict[str, Any]:
        return {"index_terms": self.related.index_terms}

    def build(self, pages: Iterable[Sequence[Any]]) -> IndexView:
        rows = concat_rows([to_rows(page) for page in pages] or [empty_rows()])
        return IndexView((layered.whole(build_segment(rows, self.related.index_terms)),))

    def apply(self, index: IndexView, drops: I64, upserts: Sequence[Any]) -> IndexView:
        added = build_segment(to_rows(upserts), self.related.index_terms) if upserts else None
        changed = np.concatenate([drops, np.fromiter((r.id for r in upserts), np.int64)])
        return layered.with_changes(index, changed, added, self.related.max_parts)

    def arrays(self, index: IndexView) -> Arrays:
        return layered.view_arrays(index)

    def restore(self, arrays: Arrays) -> IndexView:
        return layered.view_from_arrays(arrays, self.related.index_terms)

    def size(self, index: IndexView) -> int:
        return len(index)

    def describe(self, index: IndexView) -> dict[str, Any]:
        return {"segments": len(index.parts)}

    def nbytes(self, index: IndexView) -> int:
        return sum(p.segment.nbytes + p.alive.nbytes for p in index.parts)

    def compaction_due(self, index: IndexView) -> bool:
        return layered.compaction_due(index, self.related.delta_max_rows)

    def compact(self, index: IndexView) -> IndexView:
        return layered.compacted(index)


def related_follower(settings: Settings, *, background: bool) -> Follower[IndexView]:
    """A process's related-articles index following SQL; saved after builds and compactions
    only (the file is large); ``background``: open new versions and compact in a thread."""
    return Follower(
        RelatedKind(settings.related),
        index_directory(settings, RelatedKind.name),
        save_after=None,
        background=background,
        **follower_options(settings),
    )
