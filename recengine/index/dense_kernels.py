"""The compiled exact inner products of the dense part (numba; loaded by
:mod:`recengine.index.dense` once they pay for themselves, ``recengine.rental``).

``dense_dots`` gives, bit for bit, what ``np.sum(vectors[rows].astype(np.float64) * query,
axis=1)`` gives: each product in float64, each row's products summed in numpy's pairwise order
(``index.pairwise``; ``np.sum`` over a contiguous row starts from 0.0), without the gathered
copy and the two float64 temporaries of ``(n, d)`` each: at 500 rows of 576 dimensions,
0.7 against 11 ms at load 7 (``BENCHMARKS.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from recengine.index.pairwise import pairwise_sum


@njit(cache=True, nogil=True)
def dense_dots(vectors: Any, rows: Any, query: Any) -> Any:
    """``float64 (len(rows),)``: the inner product of each row ``vectors[rows[i]]``
    (``float32 (n, d)``) with ``query`` (``float64 (d,)``)."""
    d = vectors.shape[1]
    products = np.empty(d, np.float64)
    out = np.empty(len(rows), np.float64)
    for i in range(len(rows)):
        r = rows[i]
        for j in range(d):
            products[j] = np.float64(vectors[r, j]) * query[j]
        out[i] = pairwise_sum(products, 0, d)
    return out
