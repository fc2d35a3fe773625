"""Reading near-duplicate clusters: the duplicates of one article, and every cluster.

Clusters come from SQL (``cluster_members``), which ingest and reindex keep right, so every
process answers the same without an index. For a reviewer, each duplicate of an article comes
with the verdict of :class:`recengine.features.neardup.NearDupCriterion` on the pair: the Hamming
distance of the fingerprints, the rule that matched (resemblance or containment of the texts'
character shingles) with its figures, the cosine of the TF-IDF vectors and the terms that
contribute most to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from recengine.errors import ModelMissing, NotFound
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.storage.models import Article
from recengine.storage.rows.articles import get_article
from recengine.storage.rows.clusters import MemberRow, canonical_of, iter_members, members_of
from recengine.storage.rows.features import features_of
from recengine.storage.state import read_state
from recengine.text.neardup.compare import Compared


@dataclass(frozen=True)
class Duplicate:
    """One other article of the cluster, judged against the asked-for article.

    Attributes:
        id: its caller id.
        canonical: whether it is the cluster's canonical article.
        distance: Hamming distance of its fingerprint to the asked-for article's.
        resemblance: Jaccard index of the two texts' character shingles.
        rule: the rule of the criterion that matched: ``"resemblance"`` or ``"containment"``
            (``""``: the pair no longer meets the criterion, e.g. after an edit).
        containment: share of the smaller text's shingles inside the larger.
        coverage: share of the larger text's shingles the smaller covers.
        cosine: cosine of the two TF-IDF vectors.
        shared_terms: the terms contributing most to that cosine.
        distance_to_canonical: as stored in the cluster (0 for the canonical itself).
        joined_by: the rule that joined it to its canonical when the cluster was formed, with
            its figure (``joined_score``): ``"resemblance"`` / ``"containment"``; ``""`` for
            the canonical itself and for rows stored before the rule was kept.
    """

    id: str
    canonical: bool
    distance: int
    resemblance: float
    cosine: float
    shared_terms: tuple[str, ...]
    distance_to_canonical: int
    rule: str
    containment: float
    coverage: float
    joined_by: str = ""
    joined_score: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "shared_terms": list(self.shared_terms)}


@dataclass(frozen=True)
class DuplicatesOf:
    """The cluster of an article: its canonical and every other member, canonical first."""

    article: str
    canonical: str
    duplicates: list[Duplicate]

    def as_dict(self) -> dict[str, Any]:
        return {
            "article": self.article,
            "canonical": self.canonical,
            "duplicates": [d.as_dict() for d in self.duplicates],
        }


def duplicates_of(
    *,
    session: Session,
    external_id: str,
    criterion: NearDupCriterion,
    compared: Callable[[str, str], Compared],
) -> DuplicatesOf:
    """The near-duplicates of the article with caller id ``external_id``.

    Args:
        session: an open session.
        external_id: the article's caller id.
        criterion: the near-duplicate criterion (``NearDupCriterion.from_settings``).
        compared: ``(title, content) -> Compared``, what the decision compares of a text
            (``Featurizer.compared``).

    Raises:
        NotFound: no live article has that id. ModelMissing: no IDF model yet (no article has
            a fingerprint, so no cluster could be formed: an empty answer would be wrong).
    """
    article = get_article(session=session, external_id=external_id)
    if article is None:
        raise NotFound.article(external_id)
    require_model(session)
    row = canonical_of(session=session, article_id=article.id)
    head = row.canonical_id if row else article.id
    rows = members_of(session=session, canonical_id=head)
    stored = {r.article_id: r for r in rows}
    cluster = {head: 0, **{r.article_id: r.distance for r in rows}}
    cluster.pop(article.id)
    version = read_state(session=session).active_model_version
    feats = {
        r.article_id: (r.fingerprint, SparseVector.from_bytes(r.vector))
        for r in features_of(
            session=session, version=version or 0, article_ids=[article.id, *cluster]
        )
    }
    articles = {a.id: a for a in _articles(session, [article.id, head, *cluster])}
    sh = {i: compared(a.title, a.content) for i, a in articles.items()}
    out = []
    for other, to_canonical in cluster.items():
        if other not in feats or article.id not in feats:
            continue
        fa, va = feats[article.id]
        fb, vb = feats[other]
        verdict = criterion.judge(fa, va, fb, vb, sh[article.id], sh[other])
        out.append(
            Duplicate(
                articles[other].external_id,
                other == head,
                verdict.distance,
                round(verdict.resemblance or 0.0, 4),
                round(verdict.cosine, 4),
                verdict.shared_terms,
                to_canonical,
                verdict.rule,
                round(verdict.containment or 0.0, 4),
                round(verdict.coverage or 0.0, 4),
                *_joined(stored.get(other)),
            )
        )
    out.sort(key=lambda d: (not d.canonical, d.distance, d.id))
    return DuplicatesOf(external_id, articles[head].external_id, out)


def require_model(session: Session) -> None:
    """Raise ModelMissing, as related lists do, while no IDF model has been fitted (after
    ``recengine ingest --no-reindex``): clusters are formed from fingerprints, so none exist
    yet, and an empty list would read as "no duplicates"."""
    if read_state(session=session).active_model_version is None:
        raise ModelMissing("no IDF model yet: run `recengine reindex`")  # as live.LiveIndex


def clusters(*, session: Session) -> Iterator[dict[str, Any]]:
    """Every cluster of two or more: ``{"canonical": id, "members": [{"id", "distance",
    "score", "rule"}, ...]}``, members by distance to the canonical, then id (``rule``: the
    rule that joined the member, ``score`` its figure; ``""`` in rows older than the rule).

    Raises:
        ModelMissing: no IDF model yet (when the first cluster is asked for).
    """
    require_model(session)
    current: dict[str, Any] | None = None
    for page in iter_members(session=session):
        for canonical, member, distance, score, rule in page:
            if current is None or current["canonical"] != canonical:
                if current is not None:
                    yield _sorted(current)
                current = {"canonical": canonical, "members": []}
            current["members"].append(
                {
                    "id": member,
                    "distance": distance,
                    "score": round(score or 0.0, 4),
                    "rule": rule or "",
                }
            )
    if current is not None:
        yield _sorted(current)


def _joined(row: MemberRow | None) -> tuple[str, float]:
    """``(rule, figure)`` with which a stored member joined its canonical."""
    if row is None or not row.rule:
        return "", 0.0
    return row.rule, round(row.score or 0.0, 4)


def _sorted(cluster: dict[str, Any]) -> dict[str, Any]:
    cluster["members"].sort(key=lambda m: (m["distance"], m["id"]))
    return cluster


def _articles(session: Session, ids: list[int]) -> list[Article]:
    return [a for i in ids if (a := session.get(Article, i)) is not None]
