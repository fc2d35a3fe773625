"""Pieces every list shares (related lists and feeds): filters, clusters, items.

* :func:`to_row_filter`: validated request filters -> the index's ``RowFilter``;
* :func:`above`: the prefix of a ranked list above a score;
* :func:`with_clusters`: candidates with their cluster (``recommend.lists.facts``);
* :class:`Texts`: what the criterion compares of articles' texts, read when first wanted;
* :func:`hit_vectors`: stored vectors of hits, read from the index when asked for;
* :func:`item`: one entry of a body's ``items``;
* :func:`cut_entries`: the body's ``suppressed`` entries, each with the rule that matched;
* :func:`hits_in_order`: given articles scored against a query, in the given order (pins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from recengine.derived.rows import epoch, label_hashes
from recengine.features.tfidf import SparseVector
from recengine.index.briefs import Brief
from recengine.index.related.view import Hits, RowFilter
from recengine.recommend.lists.criterion import Articles, TextSource, VectorAt, anonymous
from recengine.recommend.lists.curation import take
from recengine.recommend.lists.facts import Facts
from recengine.recommend.lists.params import Filters
from recengine.recommend.lists.reasons import Reasons
from recengine.recommend.lists.suppress import Reason
from recengine.recommend.live import Snapshot
from recengine.storage.rows.articles import stored_texts
from recengine.text.neardup.compare import Compared, article_compared
from recengine.text.neardup.kept import KeptTexts


def to_row_filter(facts: Facts, filters: Filters, exclude: Sequence[int]) -> RowFilter:
    """The index filter of validated request filters (caller ids -> internal ids)."""
    excluded = list(exclude) + list(facts.internal(list(filters.exclude)).values())
    return RowFilter(
        exclude_ids=np.array(sorted(set(excluded)), dtype=np.int64),
        categories=label_hashes(filters.categories) if filters.categories else None,
        tags=label_hashes(filters.tags) if filters.tags else None,
        published_after=epoch(filters.published_after) if filters.published_after else None,
        published_before=epoch(filters.published_before) if filters.published_before else None,
    )


def above(hits: Hits, min_score: float) -> Hits:
    """The prefix of ``hits`` (best first) scoring at least ``min_score``."""
    if min_score <= 0:
        return hits
    return hits.take(slice(0, int(np.searchsorted(-hits.scores, -min_score, side="right"))))


def with_clusters(
    facts: Facts,
    ids: npt.NDArray[np.int64],
    prints: npt.NDArray[np.uint64],
    vector: VectorAt,
    texts: TextSource | None = None,
) -> Articles:
    """Articles with their cluster (``recommend.lists.facts``: held in memory, or read from
    ``cluster_members``); with ``texts`` (:class:`Texts`) given, with what the criterion
    compares of their texts too (``recommend.lists.criterion`` decides on the texts the few
    pairs it needs)."""
    ids = np.asarray(ids, np.int64)
    return Articles(ids, np.asarray(prints, np.uint64), facts.clusters(ids), vector, texts)


class Texts:
    """``article id -> what is compared of its text`` (``text.neardup.compare``; ``strip``:
    ``features.strip_boilerplate``), read from SQL through ``session`` and computed once for
    the whole answer, however many lists or rounds ask (a deleted article's stored text still
    says what it was). The texts :meth:`want` names are read together with the next one asked
    for, in one query (a list's walk often asks for none: then nothing is read); what is
    compared is computed only for the texts asked for.

    With ``kept`` (the process's :class:`~recengine.text.neardup.kept.KeptTexts`) and ``seq_of``
    (the ``seq`` of an article's last change as the list's snapshot holds it, None when it holds
    none: ``Facts.seq_of``), what was compared for an earlier list is taken again without
    reading SQL, and what is computed here is kept under the ``seq`` SQL gave with the text."""

    def __init__(
        self,
        session: Session,
        strip: bool,
        kept: KeptTexts | None = None,
        seq_of: Callable[[int], int | None] | None = None,
    ) -> None:
        self._session, self._strip = session, strip
        self._kept, self._seq_of = kept, seq_of
        self._wanted: set[int] = set()
        self._read: dict[int, tuple[str, str, int]] = {}
        self._done: dict[int, Compared] = {}

    def want(self, articles: Iterable[int]) -> None:
        self._wanted.update(a for a in articles if not self._held(a))

    def __call__(self, article: int) -> Compared:
        if article not in self._done and not self._held(article):
            if article not in self._read:
                unread = {a for a in self._wanted if a not in self._done and a not in self._read}
                ids = sorted(unread | {article})
                found = stored_texts(session=self._session, article_ids=ids)
                self._read.update({a: found.get(a, ("", "", -1)) for a in ids})
                self._wanted.clear()
            title, content, seq = self._read.pop(article)
            self._done[article] = article_compared(title, content, self._strip)
            if self._kept is not None and seq >= 0:
                self._kept.put(article, seq, self._done[article])
        return self._done[article]

    def _held(self, article: int) -> bool:
        """Whether the article's text is known here, taken from ``kept`` if it holds it."""
        if article in self._done:
            return True
        if self._kept is None or self._seq_of is None:
            return False
        seq = self._seq_of(article)
        found = None if seq is None else self._kept.get(article, seq)
        if found is not None:
            self._done[article] = found
        return found is not None


def hit_vectors(snap: Snapshot, hits: Hits) -> VectorAt:
    """``j -> stored vector of hits[j]``, read from the index when asked for."""

    def vector(j: int) -> SparseVector:
        return anonymous(*snap.view.vector(int(hits.part[j]), int(hits.row[j])))

    return vector


def item(brief: Brief, score: float, reasons: Reasons) -> dict[str, Any]:
    """One entry of ``items`` (``reasons``: the kinds of ``recommend.lists.reasons``), with
    what a card shows of it (its brief: its stored card, ``pipeline.cards``)."""
    return {
        "id": brief.external_id,
        "title": brief.title,
        "url": brief.url,
        "score": round(score, 6),
        "reasons": reasons,
        "image": brief.card_image,
        "summary": brief.card_summary,
        "published_at": brief.published_at,
        "category": brief.category,
    }


def cut_entries(
    facts: Facts, cuts: Sequence[tuple[int, Reason]], external: Mapping[int, str]
) -> list[dict[str, Any]]:
    """The ``suppressed`` entries of ``(article id, reason)`` cuts: ``{"id", "duplicate_of",
    "distance", "rule", "score", "via"}`` (cuts naming an article not in ``external``, i.e.
    deleted since, are left out).

    ``rule`` is the one that made the two the same article: ``"resemblance"`` or
    ``"containment"`` of the texts (``score`` its figure) when they are in one cluster, as
    stored with the cluster row when the member joined its canonical; ``"editor"`` when an
    editor's override did (``score`` null, or the texts' resemblance for a stored row);
    ``"cosine"`` (of the stored vectors, ``score``) for a pair outside clusters within the
    radius; ``"cluster"`` (``score`` null) for a row stored before rules were kept. ``via``
    is the cluster's canonical when neither of the two is it: the rule and figure are then
    those of the suppressed article's join to that canonical (the pair itself was never
    compared); otherwise null."""
    cuts = [(a, r) for a, r in cuts if a in external and r.duplicate_of in external]
    clustered = [x for a, r in cuts if r.rule == "cluster" for x in (a, r.duplicate_of)]
    rows = facts.members(clustered) if clustered else {}
    out: list[dict[str, Any]] = []
    vias: list[int | None] = []
    for article, reason in cuts:
        rule, score, via = reason.rule, reason.score, None
        row = rows.get(article) or rows.get(reason.duplicate_of)
        if rule == "cluster" and row is not None:
            rule, score = row.rule or "cluster", _figure(row.score) if row.rule else None
            if article in rows and reason.duplicate_of in rows:
                via = row.canonical_id
        vias.append(via)
        out.append(
            {
                "id": external[article],
                "duplicate_of": external[reason.duplicate_of],
                "distance": reason.distance,
                "rule": rule,
                "score": score,
            }
        )
    names = dict(external)
    missing = [v for v in vias if v is not None and v not in names]
    if missing:
        names.update({i: b.external_id for i, b in facts.briefs(missing).items()})
    for entry, via in zip(out, vias, strict=True):
        entry["via"] = names.get(via) if via is not None else None
    return out


def _figure(score: float | None) -> float | None:
    return None if score is None else round(score, 4)


def hits_in_order(
    snap: Snapshot,
    ids: Sequence[int],
    q_hashes: npt.NDArray[np.uint64],
    q_weights: npt.NDArray[np.float32],
    row_filter: RowFilter,
) -> Hits:
    """The articles ``ids`` that are in the index and pass ``row_filter``, each scored exactly
    against the query, in the order of ``ids`` (not by score: the editor's order of pins)."""
    where = [w for w in (snap.view.locate(a) for a in ids) if w is not None]
    where = [
        w for w in where if row_filter.allows(snap.view.parts[w[0]].segment, np.array([w[1]]))[0]
    ]
    parts = np.array([w[0] for w in where], np.intp)
    rows = np.array([w[1] for w in where], np.intp)
    scored = snap.view.score(parts, rows, q_hashes, q_weights)
    order = {a: j for j, a in enumerate(ids)}
    return take(scored, sorted(range(len(scored)), key=lambda j: order[int(scored.ids[j])]))
