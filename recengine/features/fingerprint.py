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
from itertools import chain

import numpy as np
import numpy.typing as npt

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
    """``uint64 (len(counts),)`` simhash fingerprints over every term, weight ``tf * idf``.

    Weights are divided by each document's largest (which changes no sign) and rounded to
    float32, as the simhash's exact-sum argument needs. The whole batch is weighed at once
    (one pass over all terms) rather than document by document.

    Args:
        counts: per document, term -> count.
        model: the IDF model (unknown terms get its ``unknown_idf``).
        hasher: the shared term-hash cache.
    """
    if not counts:
        return np.zeros(0, dtype=np.uint64)
    sizes = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
    total = int(sizes.sum())
    terms = list(chain.from_iterable(counts))
    tf = np.fromiter(chain.from_iterable(d.values() for d in counts), np.float64, count=total)
    idf = np.fromiter(map(model.idf_table.__getitem__, terms), np.float64, count=total)
    weights = tf * idf
    starts = np.cumsum(sizes) - sizes
    filled = sizes > 0
    top = np.ones(len(counts))
    if total:
        top[filled] = np.maximum.reduceat(weights, starts[filled])
    weights = (weights / np.repeat(top, sizes)).astype(np.float32)
    hashes = hasher.hashes(terms)
    bounds = np.cumsum(sizes)[:-1]
    return simhash_many(np.split(hashes, bounds), np.split(weights, bounds))
