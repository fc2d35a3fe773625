"""Passage index: which stored articles share a passage hash with a text (the second candidate
source of the near-duplicate stage, see :mod:`recengine.text.neardup.passages`).

Postings are kept as one array of ``(hash, id)`` pairs sorted by hash (a bulk build is one
sort; a query is a binary search per passage), plus a tail of recent additions, sorted on its
own, that is merged in when it outgrows an eighth of the base (amortised O(log n) per
addition). Removing or replacing an id leaves its old postings dead until a quarter are dead
and the arrays are rebuilt from the live articles; queries skip dead postings (an id's posting
counts only while that hash is among the id's current passages).

**Stop passages**: a hash held by more than ``stop_df`` live articles (boilerplate, site
chrome, a slogan) yields no candidates: it would make every article of a site a candidate of
every other, and verification would reject them anyway. Which hashes are stop depends on the
corpus, so two processes that have applied the same changes answer the same.

Array contracts: ids ``int64 (n,)``; passages ``uint64 (<= m,)`` per article; pairs as in
:class:`recengine.index.neardup.radius.Pairs` (``a < b``, sorted, once each).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from recengine.index.neardup.radius import IdArray, Pairs

HashArray = npt.NDArray[np.uint64]
# Articles' passages packed (``passage_rows``): ids int64 (n,), rows uint64 (n, width), counts
# int16 (n,): what add_rows takes.
Packed = tuple[IdArray, HashArray, npt.NDArray[np.int16]]
_MERGE_MIN = 4_096
_COMPACT_FRACTION = 0.25
PASSAGES_KEPT = 8  # text.neardup.passages.PASSAGES_KEPT (index may not import text)


class PassageIndex:
    """Articles by passage hash, with upserts and removals by id.

    Args:
        stop_df: a hash held by more than this many live articles gives no candidates.
        width: the most passages an article has (``text.neardup.passages.PASSAGES_KEPT``).

    Raises:
        ValueError: ``stop_df < 2`` or ``width < 1``.

    Example:
        >>> index = PassageIndex(stop_df=2)
        >>> index.add([1, 2, 3], [np.array([5, 7], np.uint64), np.array([7], np.uint64),
        ...                        np.array([5, 9], np.uint64)])
        >>> index.query(np.array([5], np.uint64)).tolist()
        [1, 3]
        >>> [(int(a), int(b)) for a, b in zip(index.pairs().a, index.pairs().b)]
        [(1, 2), (1, 3)]
    """

    def __init__(self, stop_df: int = 200, width: int = PASSAGES_KEPT) -> None:
        if stop_df < 2:
            raise ValueError(f"stop_df must be >= 2, got {stop_df}")
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.stop_df, self.width = stop_df, width
        self._hashes: HashArray = np.zeros(0, np.uint64)  # sorted by (hash, id), with _ids
        self._ids: IdArray = np.zeros(0, np.int64)
        self._tail_h: list[HashArray] = []
        self._tail_i: list[IdArray] = []
        self._tail_n = 0
        self._tail_sorted: tuple[HashArray, IdArray] | None = None
        # Current passages by id (dense, as SQL keys are): row i holds count[i] hashes.
        self._current = np.zeros((0, width), np.uint64)
        self._count = np.full(0, -1, np.int16)  # -1: not stored
        self._n = 0
        self._dead = 0

    def __len__(self) -> int:
        return self._n

    def __contains__(self, article_id: int) -> bool:
        return 0 <= article_id < len(self._count) and self._count[article_id] >= 0

    def passages(self, article_id: int) -> HashArray | None:
        if article_id not in self:
            return None
        return self._current[article_id, : self._count[article_id]].copy()

    def arrays(self) -> tuple[IdArray, HashArray, npt.NDArray[np.int16]]:
        """``(ids int64 (n,), rows uint64 (n, width), counts int16 (n,))`` of the live articles
        by id: the whole state (:meth:`add_rows` of them gives an equal index)."""
        live = np.flatnonzero(self._count >= 0).astype(np.int64)
        return live, self._current[live].copy(), self._count[live].copy()

    def add(self, ids: Sequence[int] | IdArray, passages: Sequence[HashArray]) -> None:
        """Add (or replace) articles with their passage hashes (at most ``width`` each)."""
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(id_arr) != len(passages):
            raise ValueError(f"{len(id_arr)} ids but {len(passages)} passage arrays")
        self.add_rows(id_arr, *passage_rows(passages, self.width))

    def add_rows(self, ids: IdArray, rows: HashArray, counts: npt.NDArray[np.int16]) -> None:
        """Bulk form of :meth:`add`: ``rows`` ``uint64 (n, width)`` of distinct hashes, the
        first ``counts[j]`` of row ``j`` used (a build from SQL passes all at once)."""
        if len(ids) and (int(ids.min()) < 0 or len(_sorted_distinct(ids)) != len(ids)):
            raise ValueError("ids must be distinct and non-negative")
        self._forget(ids)
        self._grow(int(ids.max()) + 1 if len(ids) else 0)
        self._current[ids], self._count[ids] = rows, counts
        self._n += len(ids)
        used = np.arange(self.width)[None, :] < counts[:, None]
        self._tail_h.append(rows[used])
        self._tail_i.append(np.broadcast_to(ids[:, None], rows.shape)[used].copy())
        self._tail_n += int(used.sum())
        self._tail_sorted = None
        if self._tail_n > max(_MERGE_MIN, len(self._hashes) // 8) or self._too_dead():
            self._merge()

    def remove(self, ids: Iterable[int] | IdArray) -> None:
        """Forget ``ids`` (those not stored are ignored); their postings turn dead."""
        arr = np.fromiter(ids, np.int64) if not isinstance(ids, np.ndarray) else ids
        self._forget(_sorted_distinct(arr.astype(np.int64, copy=False)))
        if self._too_dead():
            self._merge()

    def _too_dead(self) -> bool:
        return self._dead > _COMPACT_FRACTION * max(1, len(self._hashes) + self._tail_n)

    def _forget(self, ids: IdArray) -> None:
        """Mark the stored ones of distinct ``ids`` removed, vectorised (a build from SQL
        passes 10M ids at once; a per-id loop was most of the 10M build)."""
        ids = ids[(ids >= 0) & (ids < len(self._count))]
        held = ids[self._count[ids] >= 0]
        self._dead += int(self._count[held].sum(dtype=np.int64))
        self._count[held] = -1
        self._n -= len(held)

    def query(self, passages: HashArray, exclude: int | None = None) -> IdArray:
        """Sorted distinct live ids sharing a non-stop passage with ``passages`` (without
        ``exclude``, which still counts towards a hash's article count)."""
        q = np.unique(np.asarray(passages, dtype=np.uint64))
        parts = [
            (np.searchsorted(h, q, "left"), np.searchsorted(h, q, "right"), ids)
            for h, ids in ((self._hashes, self._ids), self._sorted_tail())
        ]
        found: list[IdArray] = []
        for j in range(len(q)):
            runs = [ids[lo[j] : hi[j]] for lo, hi, ids in parts if hi[j] > lo[j]]
            if not runs or sum(map(len, runs)) - self._dead > self.stop_df:
                continue  # none, or a stop passage however many of its postings are dead
            hits = runs[0] if len(runs) == 1 else np.concatenate(runs)
            if self._dead or len(runs) > 1:  # replaced or removed articles leave stale postings
                hits = self._current_holders(np.unique(hits), q[j])
            if len(hits) <= self.stop_df:
                found.append(hits)
        if not found:
            return np.zeros(0, np.int64)
        out = np.unique(np.concatenate(found))
        return out[out != exclude] if exclude is not None else out

    def _current_holders(self, ids: IdArray, h: np.uint64) -> IdArray:
        """Those of ``ids`` stored now with ``h`` among their passages."""
        rows, counts = self._current[ids], self._count[ids]
        used = np.arange(self.width)[None, :] < counts[:, None]
        held: IdArray = ids[((rows == h) & used).any(axis=1)]
        return held

    def _sorted_tail(self) -> tuple[HashArray, IdArray]:
        if self._tail_sorted is None:
            hashes = np.concatenate([*self._tail_h, np.zeros(0, np.uint64)])
            ids = np.concatenate([*self._tail_i, np.zeros(0, np.int64)])
            order = np.lexsort((ids, hashes))
            self._tail_sorted = (hashes[order], ids[order])
        return self._tail_sorted

    def _grow(self, size: int) -> None:
        if size <= len(self._count):
            return
        cap = max(size, 2 * len(self._count), 1_024)
        current = np.zeros((cap, self.width), np.uint64)
        current[: len(self._current)] = self._current
        count = np.full(cap, -1, np.int16)
        count[: len(self._count)] = self._count
        self._current, self._count = current, count

    def pairs(self) -> Pairs:
        """Self-join: every unordered pair of live ids sharing a non-stop passage, once."""
        self._dead = self._dead or (1 if self._tail_n else 0)
        self._merge()  # a rebuild from the live articles: no dead postings left
        starts = np.flatnonzero(np.r_[True, self._hashes[1:] != self._hashes[:-1]])
        lengths = np.diff(np.r_[starts, len(self._hashes)])
        keep = (lengths >= 2) & (lengths <= self.stop_df)
        starts, lengths = starts[keep], lengths[keep]
        a_parts, b_parts = [], []
        # Offset d pairs each posting with the one d places later in its run: every pair of
        # a run of length L once, for d = 1 .. L - 1 (only runs longer than d take part).
        order = np.argsort(-lengths, kind="stable")
        starts, lengths = starts[order], lengths[order]
        for d in range(1, int(lengths.max()) if len(lengths) else 1):
            runs = int(np.searchsorted(-lengths, -d, side="left"))  # runs with length > d
            if not runs:
                break
            pos = _positions(starts[:runs], lengths[:runs] - d)
            a_parts.append(self._ids[pos])
            b_parts.append(self._ids[pos + d])
        if not a_parts:
            return _pairs(np.zeros(0, np.int64), np.zeros(0, np.int64))
        return _pairs(np.concatenate(a_parts), np.concatenate(b_parts))

    def _merge(self) -> None:
        """Fold the tail into the sorted arrays; with dead postings, rebuild from the live."""
        if self._dead:
            live = np.flatnonzero(self._count > 0)
            counts = self._count[live]
            used = np.arange(self.width)[None, :] < counts[:, None]
            hashes = self._current[live][used]
            ids = np.broadcast_to(live[:, None], (len(live), self.width))[used].astype(np.int64)
        elif self._tail_n:
            hashes = np.concatenate([self._hashes, *self._tail_h])
            ids = np.concatenate([self._ids, *self._tail_i])
        else:
            return
        order = np.lexsort((ids, hashes))
        self._hashes, self._ids = hashes[order], ids[order]
        self._tail_h, self._tail_i, self._tail_n, self._dead = [], [], 0, 0
        self._tail_sorted = None


def passage_rows(
    passages: Sequence[HashArray], width: int = PASSAGES_KEPT
) -> tuple[HashArray, npt.NDArray[np.int16]]:
    """Articles' passage hashes packed as :meth:`PassageIndex.add_rows` takes them: ``rows
    uint64 (n, width)`` of distinct hashes, ascending, zero-padded, and ``counts int16 (n,)``
    (72 bytes per article: what a reindex's workers ship and spool instead of the texts).

    Raises:
        ValueError: an article has more than ``width`` distinct hashes.
    """
    rows = np.zeros((len(passages), width), np.uint64)
    counts = np.zeros(len(passages), np.int16)
    for j, p in enumerate(passages):
        arr = np.unique(np.asarray(p, dtype=np.uint64))
        if len(arr) > width:
            raise ValueError(f"{len(arr)} passages for one article, at most {width}")
        rows[j, : len(arr)], counts[j] = arr, len(arr)
    return rows, counts


def _sorted_distinct(ids: IdArray) -> IdArray:
    """``np.unique(ids)`` by a plain sort: numpy 2's hash-based ``unique`` took ~1 s per
    million ids (a 10M build checked its ids twice), its vectorised sort ~0.03 s."""
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return ids
    ordered = np.sort(ids)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]]


def _positions(starts: IdArray, counts: IdArray) -> IdArray:
    """``concat(range(s, s + c))`` for each start ``s`` and count ``c``, vectorised."""
    total = int(counts.sum())
    run = np.repeat(np.arange(len(counts)), counts)
    first = np.cumsum(counts) - counts
    return (starts[run] + (np.arange(total) - first[run])).astype(np.int64)


def _pairs(a: IdArray, b: IdArray) -> Pairs:
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    key = np.unique(np.stack([lo[keep], hi[keep]], axis=1), axis=0)
    return Pairs(key[:, 0].copy(), key[:, 1].copy(), np.zeros(len(key), dtype=np.uint8))
