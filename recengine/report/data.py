"""What the report shows, gathered from SQL (and a FAISS scan of the stored fingerprints).

* nearest-neighbour Hamming distances: for a random sample of live articles (``sample``, all
  of them when the corpus is smaller), the distance to the closest *other* fingerprint among all
  live articles, found exactly with a FAISS ``IndexBinaryFlat`` scan (cost: sample x corpus
  popcounts, about 10 s for 10,000 x 1M on one core);
* clusters as stored in ``cluster_members``: sizes, the largest with their canonical titles;
* top terms by document frequency, from the active IDF model;
* suppression: every member of a cluster of size s hides the s - 1 others from its related
  list, so a cluster suppresses s(s - 1) (article, duplicate) recommendations;
* reader feedback: CTR by A/B variant and by slot over the last ``days`` days with counters
  (``report.ctr``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session, sessionmaker

from recengine.features.tfidf import IdfModel
from recengine.report.ctr import CtrReport, ctr_report
from recengine.storage.db import transaction
from recengine.storage.rows.features import load_model_payload
from recengine.storage.rows.feedback import last_day, totals_by
from recengine.storage.rows.stats import (
    Counts,
    cluster_members_of,
    cluster_sizes,
    corpus_counts,
    latest_titles,
    live_fingerprints,
    member_distances,
    titles,
    urls_of,
)
from recengine.storage.state import read_state


@dataclass(frozen=True)
class Cluster:
    canonical: tuple[str, str]  # (external id, title)
    size: int  # canonical included
    members: list[tuple[str, str, int]]  # (external id, title, distance), closest first


@dataclass
class ReportData:
    generated_at: datetime
    database: str
    hamming_k: int
    counts: Counts
    version: int | None = None
    model: dict[str, Any] = field(default_factory=dict)
    nn_distances: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, np.uint8))
    cluster_sizes: list[int] = field(default_factory=list)
    largest: list[Cluster] = field(default_factory=list)
    top_terms: list[tuple[str, int, float]] = field(default_factory=list)
    ctr: CtrReport | None = None
    member_distances: list[int] = field(default_factory=list)  # every member to its canonical
    urls: dict[str, str] = field(default_factory=dict)  # external id -> url, articles shown
    lang: str = "und"  # the corpus's language (BCP 47): "zh", "en", or "und" when unknown

    @property
    def in_clusters(self) -> int:
        return sum(self.cluster_sizes)

    @property
    def hidden_duplicates(self) -> int:
        """Articles that are not the canonical copy of their cluster."""
        return sum(s - 1 for s in self.cluster_sizes)

    @property
    def suppressed_pairs(self) -> int:
        """(article, duplicate) recommendations suppressed: s(s - 1) per cluster of size s."""
        return sum(s * (s - 1) for s in self.cluster_sizes)

    @property
    def near_fraction(self) -> float:
        """Share of sampled articles with another article within ``hamming_k`` bits."""
        if not len(self.nn_distances):
            return 0.0
        return float(np.mean(self.nn_distances <= self.hamming_k))


def gather(
    factory: sessionmaker[Session],
    *,
    database: str,
    hamming_k: int,
    sample: int = 10_000,
    largest: int = 20,
    terms: int = 40,
    seed: int = 1,
    variants: Sequence[str] = ("default",),
    days: int = 28,
    described: Mapping[str, str] | None = None,
) -> ReportData:
    """Everything the report shows, read in short transactions (``variants``: the A/B test's,
    control first; ``days``: of feedback, ending on the last day with counters; ``described``:
    what each variant's ranking changes, shown beside its CTR)."""
    with transaction(factory) as session:
        version = read_state(session=session).active_model_version
        data = ReportData(
            generated_at=datetime.now(UTC),
            database=database,
            hamming_k=hamming_k,
            counts=corpus_counts(session=session, version=version),
            version=version,
        )
        if version is not None:
            payload, params = load_model_payload(session=session, version=version)
            model = IdfModel.from_bytes(payload)
            data.model = {
                "n_docs": model.n_docs,
                "n_terms": len(model.df),
                "words": list(model.words),
                **params.get("fit", {}),
            }
            data.top_terms = top_terms(model, terms)
            rows = live_fingerprints(session=session, version=version)
            fps = np.fromiter((r[1] for r in rows), dtype=np.uint64, count=len(rows))
            data.nn_distances = nearest_distances(fps, sample, seed)
        sizes = cluster_sizes(session=session)
        data.cluster_sizes = sorted((n + 1 for n in sizes.values()), reverse=True)
        data.largest, data.urls = _largest(session, sizes, largest)
        data.member_distances = member_distances(session=session)
        data.lang = corpus_lang(latest_titles(session=session, limit=LANG_SAMPLE))
        data.ctr = _feedback(session, variants, days, described)
    return data


def _feedback(
    session: Session, variants: Sequence[str], days: int, described: Mapping[str, str] | None
) -> CtrReport | None:
    last = last_day(session=session)
    if last is None:
        return None
    first = last - timedelta(days=days - 1)
    rows = totals_by(session=session, first=first, last=last)
    return ctr_report(rows, variants, (first.isoformat(), last.isoformat()), described)


def top_terms(model: IdfModel, n: int) -> list[tuple[str, int, float]]:
    """The ``n`` terms in most documents: ``(term, df, idf)``, ties by term."""
    best = sorted(model.df.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [(term, df, model.idf(term)) for term, df in best]


def nearest_distances(
    fingerprints: npt.NDArray[np.uint64], sample: int, seed: int = 1
) -> npt.NDArray[np.uint8]:
    """Hamming distance from each sampled fingerprint to its closest other one (exact scan).

    Args:
        fingerprints: ``uint64 (n,)`` all live fingerprints.
        sample: how many to query (all when ``n`` is smaller).

    Returns:
        ``uint8 (min(n, sample),)``; empty when ``n < 2``.
    """
    import faiss

    n = len(fingerprints)
    if n < 2:
        return np.zeros(0, np.uint8)
    codes = np.ascontiguousarray(fingerprints.astype("<u8")).view(np.uint8).reshape(n, 8)
    index = faiss.IndexBinaryFlat(64)
    index.add(codes)
    chosen = np.arange(n) if n <= sample else np.array(random.Random(seed).sample(range(n), sample))
    distances, labels = index.search(codes[chosen], 2)
    # The query itself is one of the two hits (distance 0) unless exact copies tie with it.
    other = np.where(labels[:, 0] == chosen, distances[:, 1], distances[:, 0])
    result: npt.NDArray[np.uint8] = other.astype(np.uint8)
    return result


def _largest(
    session: Session, sizes: dict[int, int], n: int
) -> tuple[list[Cluster], dict[str, str]]:
    """The ``n`` largest clusters, and the urls of the articles they show (by external id)."""
    top = sorted(sizes, key=lambda c: (-sizes[c], c))[:n]
    members = cluster_members_of(session=session, canonical_ids=top)
    names = titles(session=session, article_ids=top)
    grouped: dict[int, list[tuple[str, str, int]]] = {c: [] for c in top}
    ids = titles(session=session, article_ids=[m.article_id for m in members])
    for m in members:
        grouped[m.canonical_id].append((ids[m.article_id][0], m.title, m.distance))
    shown = [Cluster(names[c], sizes[c] + 1, grouped[c][:10]) for c in top]
    external = {**{i: t[0] for i, t in ids.items()}, **{i: t[0] for i, t in names.items()}}
    urls = urls_of(session=session, article_ids=list(external))
    return shown, {external[i]: url for i, url in urls.items()}


LANG_SAMPLE = 500  # latest titles read to tell the corpus's language


def corpus_lang(sample: Sequence[str]) -> str:
    """``"zh"`` when at least half of the titles have a Han character, else ``"en"`` when they
    have Latin letters, else ``"und"`` (undetermined, BCP 47). Chinese tech titles mix in
    English words (Spring Boot 入门), so any Han character marks a title as Chinese."""
    texts = [t for t in sample if t.strip()]
    if not texts:
        return "und"
    han = sum(1 for t in texts if _HAN.search(t))
    if 2 * han >= len(texts):
        return "zh"
    return "en" if any(_LATIN.search(t) for t in texts) else "und"


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
