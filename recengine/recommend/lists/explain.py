"""Why an article was recommended: the shared terms that contributed most to its cosine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.features.tfidf import SparseVector
from recengine.index.ids import sorted_find

# positions in the query vector -> their terms (a vector held by hashes only names its terms
# when asked: ``index.vocabulary``)
Namer = Callable[[npt.NDArray[np.intp]], Sequence[str]]


class SharedTerms:
    """The shared terms of one query vector with each of several items' stored vectors.

    The query's hashes are sorted once, so each item costs one ``searchsorted`` of its own
    terms (not a sort of both); only the terms shown are named (``names``: the query's terms at
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
        if limit <= 0 or not len(self._sorted) or not len(hashes):
            return []
        at = sorted_find(self._sorted, hashes)  # the query's hashes are distinct
        found = at >= 0
        qi, di = self._order[at[found]], np.flatnonzero(found)
        q = self.query.weights[qi].astype(np.float64)
        contrib = scale * q * weights[di].astype(np.float64)
        order = np.lexsort((qi, -contrib))[:limit]
        names = self._names(qi[order])
        return [
            {"term": name, "weight": round(float(contrib[j]), 6)}
            for name, j in zip(names, order.tolist(), strict=True)
        ]


def shared_terms(
    query: SparseVector,
    hashes: npt.NDArray[np.uint64],
    weights: npt.NDArray[np.float32],
    limit: int,
    scale: float = 1.0,
) -> list[dict[str, Any]]:
    """:meth:`SharedTerms.of` for one item."""
    return SharedTerms(query).of(hashes, weights, limit, scale)
