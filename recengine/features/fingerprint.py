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

    Args:
        counts: per document, term -> count.
        model: the IDF model (unknown terms get its ``unknown_idf``).
        hasher: the shared term-hash cache.
    """
    idf = model.idf_table
    hashes, weights = [], []
    for doc in counts:
        terms = list(doc)
        tf = np.fromiter(doc.values(), dtype=np.float64, count=len(terms))
        w = tf * np.fromiter(map(idf.__getitem__, terms), dtype=np.float64, count=len(terms))
        hashes.append(hasher.hashes(terms))
        weights.append((w / w.max() if len(w) else w).astype(np.float32))
    return simhash_many(hashes, weights)
