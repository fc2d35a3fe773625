"""Exact near-duplicate index: every stored 64-bit fingerprint within Hamming distance k.

Built on FAISS ``IndexBinaryMultiHash`` (see :mod:`recengine.index.neardup.layout` for why its
searches are exact and how the tables are chosen). FAISS's binary ``range_search`` keeps distances
*strictly below* the radius, so a search for ``<= k`` asks it for ``k + 1``.

FAISS's hash index cannot remove entries, so the index keeps its own arrays, by *position* (the
label FAISS stores): ``ids_[pos]`` the caller's id and ``alive_[pos]``. Removing or replacing an
id marks its old position dead; searches drop dead positions, so a deleted or updated article
never comes back. When dead positions exceed a quarter of all, the FAISS index is rebuilt from
the live ones (amortised O(1) per change). The table layout is chosen for the number of stored
fingerprints and chosen again (tables rebuilt) each time that number doubles.

Measured (BENCHMARKS.md, 2 shared cores): 10M fingerprints, k = 3 (the default radius): single
query p50 0.04 ms, p99 0.08 ms, self-join 45 s, build 28 s, 1.1-1.5 GiB idle; k = 8: ~50x
slower per query at 10M (3 tables with 2 flipped bits) and a self-join of hours. Every planted
pair found.

Array contracts: ids ``int64 (n,)``, non-negative and dense (SQL primary keys: the id -> position
map is an array of ``max id + 1`` entries); fingerprints ``uint64 (n,)``; distances ``uint8``.

Example:
    >>> import numpy as np
    >>> index = NearDupIndex(k=3)
    >>> index.add(np.array([1, 2, 3]), np.array([0b0, 0b111, 0b1111], dtype=np.uint64))
    >>> ids, dist = index.search(0)
    >>> sorted(zip(ids.tolist(), dist.tolist()))
    [(1, 0), (2, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.index.neardup.layout import Layout, choose_layout

IdArray = npt.NDArray[np.int64]
FpArray = npt.NDArray[np.uint64]
DistArray = npt.NDArray[np.uint8]

MAX_ID = 1 << 40  # ids index a dense position array; SQL keys stay far below this
_QUERY_CHUNK = 1 << 18  # queries per FAISS call in batch searches: bounds result memory
_COMPACT_FRACTION = 0.25
_MIN_COMPACT = 1_024


@dataclass(frozen=True)
class RangeResult:
    """Results of a batch search, CSR style: query ``i``'s hits are ``[lims[i], lims[i+1])``.

    Attributes:
        lims: ``int64 (m + 1,)``.
        ids: ``int64 (lims[-1],)`` matching ids.
        distances: ``uint8 (lims[-1],)`` their Hamming distances to the query.
    """

    lims: npt.NDArray[np.int64]
    ids: IdArray
    distances: DistArray

    def hits(self, i: int) -> tuple[IdArray, DistArray]:
        start, stop = int(self.lims[i]), int(self.lims[i + 1])
        return self.ids[start:stop], self.distances[start:stop]


@dataclass(frozen=True)
class Pairs:
    """Every unordered pair within the radius once: ``a[j] < b[j]``, sorted by ``(a, b)``."""

    a: IdArray
    b: IdArray
    distances: DistArray

    def __len__(self) -> int:
        return len(self.a)


def as_codes(fps: FpArray) -> npt.NDArray[np.uint8]:
    """``uint64 (n,)`` -> FAISS binary codes ``uint8 (n, 8)`` (little-endian: bit i of the int is
    bit i of the code, so FAISS's bit blocks are blocks of the integer's bits)."""
    return np.ascontiguousarray(np.asarray(fps, dtype="<u8")).view(np.uint8).reshape(-1, 8)


def _check_ids(ids: npt.ArrayLike) -> IdArray:
    arr = np.asarray(ids)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"ids must be a 1-d integer array, got {arr.dtype} {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= MAX_ID):
        raise ValueError(f"ids must be in [0, 2**40), got {arr.min()}..{arr.max()}")
    return arr


def _check_fps(fps: npt.ArrayLike, n: int) -> FpArray:
    arr = np.asarray(fps)
    if arr.shape != (n,) or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"need {n} uint64 fingerprints, got {arr.dtype} {arr.shape}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise ValueError("fingerprints are unsigned: convert signed BIGINT values first")
    return arr.astype(np.uint64)


class NearDupIndex:
    """An exact radius index over 64-bit fingerprints, with upserts and removals by id.

    Args:
        k: the largest radius searches may ask for (the layout is exact for it).
        layout: force a table layout (must be exact for ``k``); chosen per size otherwise.

    Raises:
        ValueError: ``k`` is not in ``[0, 63]`` or the layout is not exact for ``k``.
    """

    def __init__(self, k: int, layout: Layout | None = None) -> None:
        if not 0 <= k < 64:
            raise ValueError(f"k must be in [0, 63], got {k}")
        if layout is not None and not layout.exact_for(k):
            raise ValueError(f"{layout} does not find every fingerprint within {k} bits")
        self.k = k
        self._forced = layout
        self._fps: FpArray = np.zeros(0, np.uint64)
        self._ids: IdArray = np.zeros(0, np.int64)
        self._alive = np.zeros(0, bool)
        self._pos = np.full(0, -1, np.int64)  # id -> position, -1 = absent
        self._size = 0  # positions used
        self._dead = 0
        self._build(np.zeros(0, np.int64), np.zeros(0, np.uint64))

    # -- state -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._size - self._dead

    def __contains__(self, article_id: int) -> bool:
        return 0 <= article_id < len(self._pos) and self._pos[article_id] >= 0

    def contains_many(self, ids: IdArray) -> npt.NDArray[np.bool_]:
        """``article_id in self`` for each of ``ids``, vectorised."""
        inside = (ids >= 0) & (ids < len(self._pos))
        out = np.zeros(len(ids), dtype=bool)
        out[inside] = self._pos[ids[inside]] >= 0
        return out

    @property
    def layout(self) -> Layout:
        return self._layout

    def fingerprint(self, article_id: int) -> int | None:
        """The stored fingerprint of ``article_id``, or None."""
        if article_id not in self:
            return None
        return int(self._fps[self._pos[article_id]])

    def within(self, fp: int, ids: IdArray, k: int | None = None) -> npt.NDArray[np.bool_]:
        """For each of ``ids``: stored, and within Hamming ``<= k`` of ``fp`` (what
        :meth:`search` would return among them, without searching every table).

        Raises:
            ValueError: a radius the index cannot answer exactly.
        """
        radius = self._radius(k)
        out = self.contains_many(ids)
        stored = self._fps[self._pos[ids[out]]]
        out[out] = np.bitwise_count(stored ^ np.uint64(fp)) <= radius
        return out

    def arrays(self) -> tuple[IdArray, FpArray]:
        """Live ``(ids, fingerprints)``, sorted by id (copies)."""
        live = np.flatnonzero(self._alive[: self._size])
        order = np.argsort(self._ids[live], kind="stable")
        return self._ids[live][order], self._fps[live][order]

    def memory_bytes(self) -> int:
        """Approximate memory: arrays, FAISS code storage and hash-table entries."""
        arrays = self._fps.nbytes + self._ids.nbytes + self._alive.nbytes + self._pos.nbytes
        faiss_bytes = self._size * 8 + self._size * 8 * self._layout.nhash
        keys = int(self._faiss.hashtable_size()) if self._size else 0  # type: ignore[attr-defined]
        return arrays + faiss_bytes + keys * 64

    # -- changes -----------------------------------------------------------------------------

    def add(self, ids: npt.ArrayLike, fps: npt.ArrayLike) -> None:
        """Insert or replace: an id already present gets the new fingerprint.

        Args:
            ids: ``int64 (n,)``, each at most once.
            fps: ``uint64 (n,)``.

        Raises:
            ValueError: shapes or dtypes are wrong, an id repeats or is out of range.
        """
        id_arr = _check_ids(ids)
        fp_arr = _check_fps(fps, len(id_arr))
        if len(np.unique(id_arr)) != len(id_arr):
            raise ValueError("an id appears twice in one add")
        if not len(id_arr):
            return
        self.remove(id_arr)
        if self._forced is None and len(self) + len(id_arr) > 2 * max(self._layout_n, 512):
            # grown past the size the tables were chosen for: rebuild with a layout for it
            old_ids, old_fps = self.arrays()
            self._build(np.concatenate([old_ids, id_arr]), np.concatenate([old_fps, fp_arr]))
            return
        self._reserve(self._size + len(id_arr), int(id_arr.max()))
        start, stop = self._size, self._size + len(id_arr)
        self._fps[start:stop] = fp_arr
        self._ids[start:stop] = id_arr
        self._alive[start:stop] = True
        self._pos[id_arr] = np.arange(start, stop)
        self._faiss.add(as_codes(fp_arr))
        self._size = stop

    def remove(self, ids: npt.ArrayLike) -> int:
        """Remove ids (absent ones are ignored). Returns how many were present."""
        id_arr = _check_ids(ids)
        id_arr = id_arr[id_arr < len(self._pos)]
        pos = self._pos[id_arr]
        pos = np.unique(pos[pos >= 0])
        if not len(pos):
            return 0
        self._alive[pos] = False
        self._pos[self._ids[pos]] = -1
        self._dead += len(pos)
        if self._dead >= max(_MIN_COMPACT, _COMPACT_FRACTION * self._size):
            self.compact()
        return len(pos)

    def compact(self) -> None:
        """Rebuild the FAISS tables from the live entries only (layout re-chosen for the size)."""
        ids, fps = self.arrays()
        self._build(ids, fps)

    # -- searches ----------------------------------------------------------------------------

    def search(self, fp: int, k: int | None = None) -> tuple[IdArray, DistArray]:
        """Every stored id within Hamming ``<= k`` of ``fp`` (itself included if stored).

        Returns:
            ``(ids int64, distances uint8)``, nearest first, ties by id.
        """
        result = self.search_many(np.array([fp], dtype=np.uint64), k)
        return result.ids, result.distances

    def search_many(self, fps: npt.ArrayLike, k: int | None = None) -> RangeResult:
        """Batch :meth:`search` (FAISS runs the queries on all cores).

        Args:
            fps: ``uint64 (m,)`` query fingerprints.
            k: radius, at most the index's ``k`` (default: the index's).

        Raises:
            ValueError: bad fingerprints or a radius the index cannot answer exactly.
        """
        radius = self._radius(k)
        arr = np.asarray(fps)
        queries = _check_fps(arr, arr.shape[0] if arr.ndim == 1 else -1)
        lims_parts, id_parts, dist_parts, offset = [np.zeros(1, np.int64)], [], [], 0
        for start in range(0, len(queries), _QUERY_CHUNK):
            lims, ids, dists = self._range(queries[start : start + _QUERY_CHUNK], radius)
            lims_parts.append(lims[1:] + offset)
            id_parts.append(ids)
            dist_parts.append(dists)
            offset += len(ids)
        return RangeResult(
            lims=np.concatenate(lims_parts),
            ids=np.concatenate(id_parts) if id_parts else np.zeros(0, np.int64),
            distances=np.concatenate(dist_parts) if dist_parts else np.zeros(0, np.uint8),
        )

    def pairs(self, k: int | None = None) -> Pairs:
        """Self-join: every unordered pair of stored ids within Hamming ``<= k``, once."""
        radius = self._radius(k)
        ids, fps = self.arrays()
        a_parts, b_parts, d_parts = [], [], []
        for start in range(0, len(ids), _QUERY_CHUNK):
            lims, hit, dist = self._range(fps[start : start + _QUERY_CHUNK], radius)
            query = np.repeat(ids[start : start + _QUERY_CHUNK], np.diff(lims))
            keep = query < hit
            a_parts.append(query[keep])
            b_parts.append(hit[keep])
            d_parts.append(dist[keep])
        if not a_parts:
            return Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
        a, b, d = np.concatenate(a_parts), np.concatenate(b_parts), np.concatenate(d_parts)
        order = np.lexsort((b, a))
        return Pairs(a[order], b[order], d[order])

    # -- internals ---------------------------------------------------------------------------

    def _radius(self, k: int | None) -> int:
        radius = self.k if k is None else k
        if not 0 <= radius <= self.k:
            raise ValueError(f"radius {radius} outside [0, {self.k}] (the index's k)")
        return radius

    def _range(
        self, queries: FpArray, radius: int
    ) -> tuple[npt.NDArray[np.int64], IdArray, DistArray]:
        """One FAISS range search; dead positions dropped, positions mapped to ids, sorted."""
        if not len(queries) or not len(self):
            empty = np.zeros(0, np.int64)
            return np.zeros(len(queries) + 1, np.int64), empty, np.zeros(0, np.uint8)
        lims, dist, pos = self._faiss.range_search(as_codes(queries), radius + 1)
        lims = lims.astype(np.int64)
        keep = self._alive[pos]
        row = np.repeat(np.arange(len(queries)), np.diff(lims))[keep]
        ids, dist = self._ids[pos[keep]], dist[keep].astype(np.uint8)
        order = np.lexsort((ids, dist, row))
        counts = np.bincount(row, minlength=len(queries))
        new_lims = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return new_lims, ids[order], dist[order]

    def _build(self, ids: IdArray, fps: FpArray) -> None:
        self._layout = self._forced or choose_layout(self.k, len(ids))
        self._layout_n = len(ids)
        # imported here: a process that reads only this module's types (a pool worker making
        # passage rows) does not load FAISS
        import faiss

        index = faiss.IndexBinaryMultiHash(64, self._layout.nhash, self._layout.b)
        index.nflip = self._layout.nflip
        self._faiss = index
        n = len(ids)
        self._fps, self._ids, self._alive = fps.copy(), ids.copy(), np.ones(n, bool)
        self._pos = np.full(int(ids.max()) + 1 if n else 0, -1, np.int64)
        self._pos[ids] = np.arange(n)
        self._size, self._dead = n, 0
        if n:
            index.add(as_codes(fps))

    def _reserve(self, size: int, max_id: int) -> None:
        """Grow the arrays (doubling) to hold ``size`` positions and ids up to ``max_id``."""
        if size > len(self._fps):
            cap = max(size, 2 * len(self._fps), 1_024)
            self._fps = np.resize(self._fps, cap)
            self._ids = np.resize(self._ids, cap)
            alive = np.zeros(cap, bool)
            alive[: self._size] = self._alive[: self._size]
            self._alive = alive
        if max_id >= len(self._pos):
            grown = np.full(max(max_id + 1, 2 * len(self._pos)), -1, np.int64)
            grown[: len(self._pos)] = self._pos
            self._pos = grown
