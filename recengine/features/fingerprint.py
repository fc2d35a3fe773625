"""Document fingerprints: the weighted 64-bit simhash of a document's TF-IDF terms.

Two methods, chosen by ``features.simhash_top_n``:

* ``0`` (the default): every term of the document, weight ``tf * idf``
  (:func:`count_fingerprints`). Measured on real reposts (BENCHMARKS.md), this keeps a lightly
  edited copy closest to its original: a changed sentence moves the fingerprint by its share of
  the total weight only, while a top-N cut lets it push other terms in or out of the set;
* ``N > 0``: the top-N terms of the stored vector with their weights (:func:`fingerprints`),
  the original method of DESIGN.md (top 20).

Scaling every weight of a document by the same factor leaves each sign, and so the fingerprint,
unchanged, so unnormalised ``tf * idf`` and unit vectors agree on the same terms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from recengine.features.counts import TermCounts
from recengine.features.hashing import TermHasher
from recengine.features.simhash import simhash_many
from recengine.features.tfidf import IdfModel, SparseVector


def fingerprints(vectors: Sequence[SparseVector], top_n: int) -> npt.NDArray[np.uint64]:
    """``uint64 (len(vectors),)`` simhash fingerprints over each vector's ``top_n`` terms.

    Raises:
        ValueError: ``top_n`` is not positive.
    """
    if top_n < 1:
        raise ValueError(f"top_n must be >= 1, got {top_n}")
    return simhash_many([v.hashes[:top_n] for v in vectors], [v.weights[:top_n] for v in vectors])


def count_fingerprints(
    counts: Sequence[Mapping[str, int]], model: IdfModel, hasher: TermHasher
) -> npt.NDArray[np.uint64]:
    """``uint64 (len(counts),)`` simhash fingerprints over every term, weight ``tf * idf``
    (:func:`batch_fingerprints` of one term -> count mapping per document)."""
    return batch_fingerprints(TermCounts.from_dicts(counts, hasher), model)


def batch_fingerprints(
    counts: TermCounts, model: IdfModel, idf: npt.NDArray[np.float64] | None = None
) -> npt.NDArray[np.uint64]:
    """``uint64 (len(counts),)`` simhash fingerprints over every term, weight ``tf * idf``.

    Weights are divided by each document's largest (which changes no sign) and rounded to
    float32, as the simhash's exact-sum argument needs. The whole batch is weighed at once.

    Args:
        counts: the documents' term counts.
        model: the IDF model (unknown terms get its ``unknown_idf``).
        idf: ``float64 (V,)`` the idf of ``counts.terms`` when the caller has it already.
    """
    if not len(counts):
        return np.zeros(0, dtype=np.uint64)
    idf = model.idf_of(counts.terms) if idf is None else idf
    weights = counts.counts.astype(np.float64) * idf[counts.index]
    sizes = counts.sizes
    filled = sizes > 0
    top = np.ones(len(counts))
    if len(weights):
        top[filled] = np.maximum.reduceat(weights, counts.indptr[:-1][filled])
    scaled = (weights / np.repeat(top, sizes)).astype(np.float32)
    hashes = counts.hashes[counts.index]
    bounds = counts.indptr[1:-1]
    return simhash_many(np.split(hashes, bounds), np.split(scaled, bounds))
