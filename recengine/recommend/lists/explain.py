"""Why an article was recommended: the shared terms that contributed most to its cosine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.features.tfidf import SparseVector
from recengine.index.ids import sorted_find
from recengine.recommend.lists.reasons import Reasons

# positions in the query vector -> their terms (a vector held by hashes only names its terms
# when asked: ``index.vocabulary``)
Namer = Callable[[npt.NDArray[np.intp]], Sequence[str]]

# one item's stored vector and the factor its shares are scaled by: ``(hashes uint64 (n,),
# weights float32 (n,), scale)``
Item = tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32], float]


class SharedTerms:
    """The shared terms of one query vector with each of several items' stored vectors.

    The query's hashes are sorted once; a page's items are then looked up together (one
    ``searchsorted`` and one sort for all of them, not a few numpy calls per item), and only
    the terms shown are named, each once per page (``names``: the query's terms at
    positions, default its ``terms``)."""

    def __init__(self, query: SparseVector, names: Namer | None = None) -> None:
        self.query = query
        self._order = np.argsort(query.hashes, kind="stable")
        self._sorted = query.hashes[self._order]
        self._names = names or (lambda positions: [query.terms[int(i)] for i in positions])

    def of(
        self,
        hashes: npt.NDArray[np.uint64],
        weights: npt.NDArray[np.float32],
        limit: int,
        scale: float = 1.0,
    ) -> list[dict[str, Any]]:
        """The ``limit`` terms with the largest ``q_t * d_t``, as ``{"term", "weight"}``.

        ``weight`` is the term's share of the score, ``scale * q_t * d_t`` (the products sum to
        the cosine; ``scale`` is the TF-IDF part's weight in a blended score), so an editor
        sees which words made two articles related. Ties go to the term that comes first in
        the query vector (its stored order).
        """
        return self.of_items([(hashes, weights, scale)], limit)[0]

    def of_items(self, items: Sequence[Item], limit: int) -> list[list[dict[str, Any]]]:
        """:meth:`of` for each of ``items``, in order: the same terms and figures."""
        if limit <= 0 or not len(self._sorted) or not items:
            return [[] for _ in items]
        hashes = np.concatenate([h for h, _, _ in items])
        weights = np.concatenate([w for _, w, _ in items])
        owner = np.repeat(np.arange(len(items)), [len(h) for h, _, _ in items])
        scales = np.array([s for _, _, s in items], np.float64)
        at = sorted_find(self._sorted, hashes)  # the query's hashes are distinct
        found = np.flatnonzero(at >= 0)
        qi, of = self._order[at[found]], owner[found]
        q = self.query.weights[qi].astype(np.float64)
        contrib = scales[of] * q * weights[found].astype(np.float64)
        order = np.lexsort((qi, -contrib, of))  # by item, then largest share, then query order
        starts = np.searchsorted(of[order], np.arange(len(items) + 1))
        shown = [
            order[starts[i] : min(starts[i + 1], starts[i] + limit)] for i in range(len(items))
        ]
        picked = np.concatenate(shown)
        terms, back = np.unique(qi[picked], return_inverse=True)
        named = self._names(terms)  # each term shown on the page named once
        pairs = [
            {"term": named[t], "weight": round(c, 6)}
            for t, c in zip(back.tolist(), contrib[picked].tolist(), strict=True)
        ]
        ends = np.cumsum([len(rows) for rows in shown]).tolist()
        return [pairs[e - len(rows) : e] for rows, e in zip(shown, ends, strict=True)]

    def assign(self, reasons: Sequence[Reasons], items: Sequence[Item], limit: int) -> None:
        """Set the ``shared_terms`` of each of ``reasons`` to its item's (:meth:`of_items`):
        a page's reasons are made item by item, their shared terms then found together."""
        for each, terms in zip(reasons, self.of_items(items, limit), strict=True):
            each["shared_terms"] = terms
