"""SQL rows -> the index's arrays, and request values -> the index's hashed filter values.

Categories and tags enter the index as 64-bit hashes of their exact strings (the term hash of
``features.hashing``): the index then needs no string tables, and a filter value is hashed the
same way at query time. Publication times become Unix seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.features.hashing import term_hash
from recengine.features.tfidf import SparseVector
from recengine.index.related.segment import NO_DATE, NO_LABEL, Rows, empty_rows


@lru_cache(maxsize=65_536)
def label_hash(label: str) -> int:
    """Hash of a category or tag (never :data:`NO_LABEL`); cached, labels repeat a lot."""
    return term_hash(label) or 1


def label_hashes(labels: Iterable[str]) -> npt.NDArray[np.uint64]:
    return np.array(sorted({label_hash(x) for x in labels}), dtype=np.uint64)


def epoch(when: datetime | None) -> int:
    """Unix seconds of an aware datetime; :data:`NO_DATE` for None."""
    return NO_DATE if when is None else int(when.timestamp())


def to_rows(records: Sequence[Any]) -> Rows:
    """Index rows from SQL rows with ``id, published_at, category, tags, fingerprint, vector``.

    Raises:
        ValueError: a stored vector is damaged.
    """
    if not records:
        return empty_rows()
    n = len(records)
    vectors = [SparseVector.arrays_from_bytes(r.vector) for r in records]
    tags = [[label_hash(t) for t in (r.tags or ()) if isinstance(t, str)] for r in records]
    return Rows(
        ids=np.fromiter((r.id for r in records), dtype=np.int64, count=n),
        fingerprints=np.fromiter((r.fingerprint for r in records), dtype=np.uint64, count=n),
        published=np.fromiter((epoch(r.published_at) for r in records), np.int64, count=n),
        category=np.fromiter(
            (label_hash(r.category) if r.category else NO_LABEL for r in records),
            dtype=np.uint64,
            count=n,
        ),
        tag_indptr=_indptr(len(t) for t in tags),
        tag_hashes=np.fromiter((h for t in tags for h in t), dtype=np.uint64),
        vec_indptr=_indptr(len(h) for h, _ in vectors),
        vec_hashes=np.concatenate([h for h, _ in vectors]).astype(np.uint64),
        vec_weights=np.concatenate([w for _, w in vectors]).astype(np.float32),
    )


def _indptr(lengths: Iterable[int]) -> npt.NDArray[np.int64]:
    sizes = np.fromiter(lengths, dtype=np.int64)
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out
