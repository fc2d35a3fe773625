"""Why an article was recommended: the shared terms that contributed most to its cosine."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.features.tfidf import SparseVector


def shared_terms(
    query: SparseVector,
    hashes: npt.NDArray[np.uint64],
    weights: npt.NDArray[np.float32],
    limit: int,
    scale: float = 1.0,
) -> list[dict[str, Any]]:
    """The ``limit`` terms with the largest ``q_t * d_t``, as ``{"term", "weight"}``.

    ``weight`` is the term's share of the score, ``scale * q_t * d_t`` (the products sum to the
    cosine; ``scale`` is the TF-IDF part's weight in a blended score), so an editor sees which
    words made two articles related. Ties go to the term that comes first in the query vector
    (its stored order).
    """
    if limit <= 0 or not len(query) or not len(hashes):
        return []
    _, qi, di = np.intersect1d(query.hashes, hashes, assume_unique=True, return_indices=True)
    contrib = scale * query.weights[qi].astype(np.float64) * weights[di].astype(np.float64)
    order = np.lexsort((qi, -contrib))[:limit]
    return [{"term": query.terms[int(qi[j])], "weight": round(float(contrib[j]), 6)} for j in order]
