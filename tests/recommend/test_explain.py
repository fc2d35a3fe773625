"""The shared terms of an explanation (``recommend.lists.explain``): the largest products of
the query's and the item's weights, ties by the query's order, only the terms shown named."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from recengine.features.tfidf import SparseVector
from recengine.recommend.lists.explain import SharedTerms


def _vector(draw: st.DrawFn, pool: list[int]) -> SparseVector:
    hashes = draw(st.lists(st.sampled_from(pool), unique=True, max_size=12))
    weights = draw(
        st.lists(st.sampled_from([0.1, 0.25, 0.5]), min_size=len(hashes), max_size=len(hashes))
    )
    terms = tuple(f"词{h}" for h in hashes)
    return SparseVector(terms, np.array(hashes, np.uint64), np.array(weights, np.float32))


@given(st.data())
def test_shared_terms_are_the_largest_products_ties_by_the_querys_order(data: Any) -> None:
    """Against the definition written out: every shared term's product, largest first, ties
    to the term earlier in the query vector; named lazily, by position."""
    pool = list(range(1, 30))
    query = _vector(data.draw, pool)
    item = _vector(data.draw, pool)
    limit = data.draw(st.integers(0, 6))
    asked: list[list[int]] = []

    def names(positions: Any) -> list[str]:
        asked.append(positions.tolist())
        return [query.terms[i] for i in positions.tolist()]

    got = SharedTerms(query, names).of(item.hashes, item.weights, limit, 0.7)
    theirs = dict(zip(item.hashes.tolist(), item.weights.tolist(), strict=True))
    products = [
        (-(0.7 * float(w) * float(theirs[h])), i, query.terms[i])
        for i, (h, w) in enumerate(zip(query.hashes.tolist(), query.weights, strict=True))
        if h in theirs
    ]
    want = [{"term": t, "weight": round(-p, 6)} for p, _, t in sorted(products)[:limit]]
    assert got == want
    assert sum(len(a) for a in asked) == len(got)  # only the terms shown were named


@given(st.data())
def test_a_pages_items_together_are_each_item_alone_and_each_term_is_named_once(
    data: Any,
) -> None:
    """``of_items`` (a page's items in one pass, as a related list explains them) gives what
    ``of`` gives each item alone, scales included, and names each term shown once per page."""
    pool = list(range(1, 20))
    query = _vector(data.draw, pool)
    items = [
        (v.hashes, v.weights, data.draw(st.sampled_from([1.0, 0.7, 0.35])))
        for v in (_vector(data.draw, pool) for _ in range(data.draw(st.integers(0, 5))))
    ]
    limit = data.draw(st.integers(0, 6))
    asked: list[int] = []

    def names(positions: Any) -> list[str]:
        asked.extend(positions.tolist())
        return [query.terms[i] for i in positions.tolist()]

    got = SharedTerms(query, names).of_items(items, limit)
    assert got == [SharedTerms(query).of(h, w, limit, s) for h, w, s in items]
    shown = {t["term"] for terms in got for t in terms}
    assert sorted(asked) == sorted({query.terms.index(t) for t in shown})
