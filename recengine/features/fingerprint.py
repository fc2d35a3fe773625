"""Document fingerprints from TF-IDF vectors: the simhash of the top-N weighted terms.

This is the original method of DESIGN.md (top-20 TF-IDF features, weighted 64-bit simhash).
The weights are the vector's own (unit-normalised) TF-IDF weights; scaling every weight of a
document by the same factor leaves each sign, and so the fingerprint, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from recengine.features.simhash import simhash_many
from recengine.features.tfidf import SparseVector


def fingerprints(vectors: Sequence[SparseVector], top_n: int) -> npt.NDArray[np.uint64]:
    """``uint64 (len(vectors),)`` simhash fingerprints over each vector's ``top_n`` terms.

    Raises:
        ValueError: ``top_n`` is not positive.
    """
    if top_n < 1:
        raise ValueError(f"top_n must be >= 1, got {top_n}")
    return simhash_many([v.hashes[:top_n] for v in vectors], [v.weights[:top_n] for v in vectors])
