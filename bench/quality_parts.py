"""The parts of the related-articles ranking, each on its own and the default, as the product
answers (``RelatedArticles.related``: candidates, exact blend, suppression, floor): the table
``bench.related_quality`` prints first.

:data:`PARTS` is the table, one :class:`Part` an entry: a name and the settings it changes over
the shipped defaults, split in what a reindex depends on (``index``: one database per distinct
value, shared by the parts that ask the same) and what a list reads at query time (``query``).
A new ranking part is one more entry (and, if it needs data beside the articles, a ``prepare``
that writes it into the database before the lists are asked for).

Every corpus's queries are all its articles; "tuning" / "held out" are the halves of
``bench.related_parts.half_of`` (seed 11): defaults are chosen on the tuning half, the held-out
half is reported. "near-dup pairs" counts pairs inside lists (query and items) that are
near-duplicates (same cluster, or the ``features.neardup`` criterion on the texts).

Human similarity: Pearson r between the Lee et al. (2005) ratings of 50 news documents and the
part's score of each pair (``(1 - w) * TF-IDF cosine + w * dense cosine``, the list's score
before suppression), the 50 indexed with the 300 background documents gensim ships beside them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from bench.corpus import Doc
from bench.related_common import Stored, database
from bench.related_parts import half_of
from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles

K = 10
Overrides = dict[str, dict[str, Any]]


def stopwords_before_issue_49() -> str:
    """A file of the builtin stopwords as they were before issue 49 (function words only for
    English): the list up to the Glasgow list's block."""
    text = (resources.files("recengine.resources") / "stopwords.txt").read_text("utf-8")
    before = text.split("# English, continued", 1)[0]
    fd, path = tempfile.mkstemp(suffix="-stopwords.txt")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(before)
    return path


@dataclass(frozen=True)
class Part:
    """One row: settings over the shipped defaults (``{"section": {"setting": value}}``)."""

    name: str
    index: Overrides = field(default_factory=dict)
    query: Overrides = field(default_factory=dict)


def parts(old_stopwords: str) -> list[Part]:
    """The table (see the module docstring); ``old_stopwords``: the list before issue 49."""
    return [
        Part("default (as shipped)"),
        Part(
            "today's default (before issue 49)",
            index={"tokenizer": {"stopwords": old_stopwords}, "dense": {"encoder": "lsa"}},
        ),
        Part("TF-IDF alone", index={"dense": {"encoder": "lsa"}}, query=_weight(0.0)),
        Part("+ LSA (dense.encoder = lsa)", index={"dense": {"encoder": "lsa"}}),
        Part(
            "+ LSA, dense_weight 0.4",
            index={"dense": {"encoder": "lsa"}},
            query=_weight(0.4),
        ),
        Part("+ encoder alone (share 1)", index={"dense": {"encoder": "use", "encoder_share": 1}}),
        Part("+ LSA + encoder (encoder = use)", index={"dense": {"encoder": "use"}}),
        Part(
            "+ LSA + encoder, dense_weight 0.4",
            index={"dense": {"encoder": "use"}},
            query=_weight(0.4),
        ),
        Part(
            "+ LSA + encoder, dense_weight 0.5",
            index={"dense": {"encoder": "use"}},
            query=_weight(0.5),
        ),
        Part("English: function words only", index={"tokenizer": {"stopwords": old_stopwords}}),
    ]


def _weight(w: float) -> Overrides:
    return {"related": {"dense_weight": w}}


def with_query(settings: Settings, query: Overrides) -> Settings:
    """``settings`` with the ``query`` overrides applied section by section."""
    update = {
        section: getattr(settings, section).model_copy(update=values)
        for section, values in query.items()
    }
    return settings.model_copy(update=update)


def _key(overrides: Overrides) -> str:
    return repr(sorted((s, sorted(v.items())) for s, v in overrides.items()))


def evaluate_parts(
    table: list[Part], docs: list[Doc], same: Callable[[Doc, Doc], bool], base: Overrides
) -> dict[str, dict[str, float]]:
    """Each part's p@10 (all, tuning, held out), near-duplicate pairs and mean list length."""
    out: dict[str, dict[str, float]] = {}
    held = np.array([half_of(d.id) == "held-out" for d in docs])
    groups: dict[str, list[Part]] = {}
    for part in table:
        groups.setdefault(_key({**base, **part.index}), []).append(part)
    for members in groups.values():
        with database(docs, **{**base, **members[0].index}) as (settings, factory):
            stored = Stored.read(factory)
            row = {e: i for i, e in enumerate(stored.external)}
            by_id = {d.id: d for d in docs}
            featurizer = Featurizer(settings)
            texts = [featurizer.compared(by_id[e].title, by_id[e].content) for e in stored.external]
            judge = NearDupCriterion.from_settings(settings)
            live = LiveIndex(settings, factory, background=False)
            for part in members:
                service = RelatedArticles(with_query(settings, part.query), live)
                scores, pairs, lengths = [], 0, []
                with factory() as session:
                    for q in docs:
                        items = service.related(q.id, session=session, k=K)["items"]
                        rows = [row[e["id"]] for e in items]
                        scores.append(sum(same(q, by_id[e["id"]]) for e in items) / K)
                        pairs += stored.duplicate_pairs([row[q.id], *rows], judge, texts)
                        lengths.append(len(rows))
                s = np.array(scores)
                out[part.name] = {
                    "p@10": float(s.mean()),
                    "tuning": float(s[~held].mean()),
                    "held": float(s[held].mean()),
                    "dup_pairs": pairs,
                    "mean_len": float(np.mean(lengths)),
                }
    return out


def human_similarity(
    table: list[Part], docs: list[Doc], background: list[Doc], ratings: Any, base: Overrides
) -> dict[str, float]:
    """Each part's Pearson r with the human ratings of the pairs of ``docs``."""
    out: dict[str, float] = {}
    upper = np.triu_indices(len(docs), 1)
    for part in table:
        with database(docs + background, **{**base, **part.index}) as (settings, factory):
            settings = with_query(settings, part.query)
            stored = Stored.read(factory)
            rows = [stored.external.index(d.id) for d in docs]
            x = stored.matrix[rows]
            sparse = (x @ x.T).toarray()
            score = sparse
            w = settings.related.dense_weight
            snap = LiveIndex(settings, factory, background=False)
            with factory() as session:
                dense = snap.current(session=session).dense
            if dense is not None and dense.dims and w > 0:
                _, z = dense.index.lookup(stored.internal[rows])
                z64 = z.astype(np.float64)
                score = (1 - w) * sparse + w * (z64 @ z64.T)
            out[part.name] = float(np.corrcoef(score[upper], ratings[upper])[0, 1])
    return out


def report_parts(name: str, result: dict[str, dict[str, float]]) -> None:
    print(f"\n{name}: each part on its own and the default (the product's lists, k = {K})")
    print(
        f"  {'part':<40} {'p@10':>7} {'tuning':>7} {'held out':>9} {'near-dup pairs':>15} "
        f"{'mean list':>10}"
    )
    for part, m in result.items():
        print(
            f"  {part:<40} {m['p@10']:>7.4f} {m['tuning']:>7.4f} {m['held']:>9.4f} "
            f"{int(m['dup_pairs']):>15} {m['mean_len']:>10.2f}"
        )


def cleanup(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)
