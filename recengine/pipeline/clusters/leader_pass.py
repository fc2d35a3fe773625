"""The full recluster's leader pass in rank blocks: work bounded by the articles and the
canonicals within their reach, never by the pairs of a cluster (issue 13.1).

The rule is :func:`recengine.pipeline.clusters.leader_rule.assign`'s: in rank order, an article
joins the earliest-ranked canonical among its candidates that passes the criterion, otherwise it is
a canonical. Enumerating every candidate pair first (the self-join) costs the square of a cluster
whose articles are all within the radius of each other: a templated page type of 10,000 pages
is 5e7 pairs (~1 GB of pair arrays, and a Python pass over each) for about 10,000
verifications. Only the *canonicals* an article may join matter, so the pass walks the
articles in rank order, ``block`` at a time, over block tables of every fingerprint
(:class:`recengine.index.neardup.blocks.BlockTables`, built once: positions in rank order) on which
the canonicals decided so far are marked:

1. **earlier blocks**: the tables give each article of the block the earlier canonicals within
   the radius (and only canonicals: a group of 10,000 copies shows one), and the other
   candidate pairs (``extra``: the passage index's, bounded by its stop rule) give the earlier
   canonicals that share a passage. Each article is verified against those, earliest first,
   until one passes: it is then a member, whatever the rest of its block does (every earlier
   block ranks before it);
2. **within the block**: the tables give the pairs within the block (group neighbours), the
   ``extra`` pairs within it are added, and the articles still open are decided in rank order
   against the open ones before them that stayed canonicals;
3. the block's canonicals are marked in the tables.

An article therefore meets exactly the candidates ``assign`` would give it that are canonicals
ranking before it, earliest first, and the result is the same
(``tests/clusters/test_leader_pass.py`` checks it against a brute-force reference with a large
clique). Work: the table entries an article's groups hold before it (about 150 per table at 10M
uniform fingerprints; a group's canonical chain instead when few of them are canonicals), the pairs
within its block, and the verifications; a 10,000-page cluster costs one canonical hit and one
verification per page. Measured on 10M uniform fingerprints (BENCHMARKS.md): the pass over the
tables ~30 s, where a FAISS index of the canonicals searched once per article took 517 s.
Texts are loaded a block at a time, for the articles with a candidate and the canonicals they
meet.

Array contracts: ids ``int64 (n,)`` and fingerprints ``uint64 (n,)`` in rank order (position
``p`` is the ``p``-th earliest); ``extra`` as :class:`recengine.index.neardup.radius.Pairs` (ids).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from recengine.index.neardup.blocks import BlockTables
from recengine.index.neardup.radius import FpArray, IdArray, Pairs
from recengine.pipeline.clusters.leader_rule import Edge, Member, rank_key

BLOCK = 1_024  # articles per block: the texts one block may load at once
RANK_CHUNK = 50_000  # ids whose publication dates are read at once
Verify = Callable[[int, int], Edge | None]
Bools = npt.NDArray[np.bool_]


def rank_order(
    ids: IdArray,
    fps: FpArray,
    dates: Callable[[Sequence[int]], Mapping[int, datetime | None]],
    chunk: int = RANK_CHUNK,
) -> tuple[IdArray, FpArray]:
    """``(ids, fps)`` sorted by :func:`~recengine.pipeline.clusters.leader_rule.rank_key` (an id
    missing from ``dates`` counts as undated), the dates read ``chunk`` ids at a time into
    arrays."""
    undated = np.zeros(len(ids), np.int8)
    seconds = np.zeros(len(ids), np.float64)
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk].tolist()
        found = dates(part)
        keys = [rank_key(i, found.get(i)) for i in part]
        undated[start : start + len(part)] = [k[0] for k in keys]
        seconds[start : start + len(part)] = [k[1] for k in keys]
    order = np.lexsort((ids, seconds, undated))
    return ids[order], fps[order]


def leader_blocks(
    ids: IdArray,
    fps: FpArray,
    k: int,
    extra: Pairs,
    verify: Verify,
    prefetch: Callable[[set[int]], None] | None = None,
    block: int | None = None,
    skip: Bools | None = None,
) -> list[Member]:
    """Leader clustering of articles in rank order (see the module docstring).

    Args:
        ids, fps: every article of the recluster, in rank order.
        k: the candidate radius (Hamming ``<= k``).
        extra: candidate pairs of the other sources (ids outside ``ids`` are ignored).
        verify: ``(article, canonical) -> Edge or None``; an edge returned is final (the
            article joins that canonical): a rules-aware caller records it
            (``pipeline.clusters.constraints_pass``).
        prefetch: called before each block with the ids it may verify (its own and the
            earlier canonicals in its reach): a caller loads their texts at once.
        block: articles per block (``BLOCK`` when None).
        skip: ``bool (n,)``, positions that take no part (neither decide nor lead: no row,
            never a canonical; the editors' overrides place them afterwards).

    Returns:
        Member rows sorted by article id; canonicals and singletons have none.

    Raises:
        ValueError: ``block < 1`` or ``ids`` and ``fps`` differ in length.
    """
    size = BLOCK if block is None else block
    if size < 1:
        raise ValueError(f"block must be >= 1, got {size}")
    if len(ids) != len(fps):
        raise ValueError(f"{len(ids)} ids but {len(fps)} fingerprints")
    run = _Pass(ids, fps, k, _Earlier.of(ids, extra), verify, skip)
    for start in range(0, len(ids), size):
        run.block(start, min(len(ids), start + size), prefetch)
    run.members.sort(key=lambda m: m.article_id)
    return run.members


class _Pass:
    """The state of one pass: which positions are canonicals, their radius index, the rows."""

    def __init__(
        self,
        ids: IdArray,
        fps: FpArray,
        k: int,
        earlier: _Earlier,
        verify: Verify,
        skip: Bools | None = None,
    ) -> None:
        self.ids, self.fps, self.k, self.earlier, self.verify = ids, fps, k, earlier, verify
        self.skip = skip
        self.canon = np.zeros(len(ids), bool)
        self.tables = BlockTables(fps, k)  # every position; the canonicals on their chains
        self.members: list[Member] = []

    def block(self, start: int, stop: int, prefetch: Callable[[set[int]], None] | None) -> None:
        """Decide positions ``start..stop`` (every earlier one is decided)."""
        extra = self.earlier.of_range(start, stop)  # the extra pairs of the block's rows
        mine = np.ones(stop - start, bool)  # still a canonical, by offset in the block
        if self.skip is not None:
            mine &= ~self.skip[start:stop]
        rows, hits = self._from_earlier_blocks(start, stop, extra)
        rows, hits = rows[mine[rows]], hits[mine[rows]]
        pairs = self._within_block(start, stop, extra)  # offsets in the block, col < row
        if prefetch is not None:  # those that may verify: articles with a candidate
            may = np.concatenate([start + rows, hits, start + pairs[0], start + pairs[1]])
            prefetch(set(self.ids[np.unique(may)].tolist()))
        offsets = np.arange(start, stop)
        self._lead(rows, hits, offsets, None, None, mine)
        keep = mine[pairs[0]] & mine[pairs[1]]  # the open ones left: among themselves
        self._lead(pairs[0][keep], pairs[1][keep], offsets, offsets, mine, mine)
        fresh = start + np.flatnonzero(mine)
        self.canon[fresh] = True
        self.tables.add_canonicals(fresh)

    def _from_earlier_blocks(
        self, start: int, stop: int, extra: tuple[IdArray, IdArray]
    ) -> tuple[IdArray, IdArray]:
        """The earlier blocks' canonicals in reach of each article of the block: ``(rows,
        cols)`` sorted by row then col, once each (rows: offsets in the block; cols:
        positions). ``extra``: the block's extra pairs (``_Earlier.of_range``)."""
        rows, cols = self.tables.earlier(start, stop)
        more_rows, more = extra
        keep = (more < start) & self.canon[more]
        return _grouped(np.concatenate([rows, more_rows[keep]]), np.concatenate([cols, more[keep]]))

    def _within_block(
        self, start: int, stop: int, extra: tuple[IdArray, IdArray]
    ) -> tuple[IdArray, IdArray]:
        """Candidate pairs within the block (``stop - start`` fingerprints compared with each
        other, and the extra pairs ``extra``): ``(rows, cols)`` as offsets, ``col < row``,
        sorted by row then col, once each."""
        rows, cols = self.tables.within(start, stop)
        more_rows, more = extra
        inside = more >= start
        return _grouped(
            np.concatenate([rows, more_rows[inside]]),
            np.concatenate([cols, more[inside] - start]),
        )

    def _lead(
        self,
        rows: IdArray,
        cols: IdArray,
        row_pos: IdArray,
        col_pos: IdArray | None,
        canonical: Bools | None,
        still: Bools,
    ) -> None:
        """For each row (ascending), its cols that are ``canonical`` (all when None), earliest
        first, verified until one passes: the row is then a member and no longer ``still`` a
        canonical. ``row_pos`` / ``col_pos`` map rows / cols to positions (cols are positions
        when ``col_pos`` is None). ``canonical`` may be ``still``: a row decided before a
        later one is final when the later one reads it (rows ascending, cols before rows)."""
        ends: list[int] = []
        if len(rows):
            ends = (np.flatnonzero(np.r_[rows[1:] != rows[:-1], True]) + 1).tolist()
        begin = 0
        for end in ends:
            row, found = int(rows[begin]), cols[begin:end]
            if canonical is not None:
                found = found[canonical[found]]
            for c in found.tolist():
                member = self._member(int(row_pos[row]), c if col_pos is None else int(col_pos[c]))
                if member is not None:
                    self.members.append(member)
                    still[row] = False
                    break
            begin = end

    def _member(self, x: int, c: int) -> Member | None:
        """The member row of position ``x`` under position ``c`` if the pair verifies."""
        a, head = int(self.ids[x]), int(self.ids[c])
        edge = self.verify(a, head)
        return None if edge is None else Member(a, head, edge.distance, edge.score, edge.rule)


class _Earlier:
    """The ``extra`` pairs by rank position: for position ``p``, the positions before it that
    it is paired with (CSR: ``cols[ptr[p]:ptr[p + 1]]``, ascending)."""

    def __init__(self, ptr: IdArray, cols: IdArray) -> None:
        self.ptr, self.cols = ptr, cols

    @classmethod
    def of(cls, ids: IdArray, extra: Pairs) -> _Earlier:
        n = len(ids)
        top = max(
            int(ids.max(initial=-1)), int(extra.a.max(initial=-1)), int(extra.b.max(initial=-1))
        )
        where = np.full(top + 1, -1, np.int64)
        where[ids] = np.arange(n)
        pa, pb = where[extra.a], where[extra.b]
        keep = (pa >= 0) & (pb >= 0) & (pa != pb)
        lo, hi = np.minimum(pa, pb)[keep], np.maximum(pa, pb)[keep]
        order = np.lexsort((lo, hi))
        ptr = np.concatenate(([0], np.cumsum(np.bincount(hi, minlength=n)))).astype(np.int64)
        return cls(ptr, lo[order])

    def of_range(self, start: int, stop: int) -> tuple[IdArray, IdArray]:
        """``(rows, cols)`` of positions ``start..stop``: rows as offsets (``p - start``),
        cols as positions."""
        counts = np.diff(self.ptr[start : stop + 1])
        rows = np.repeat(np.arange(stop - start, dtype=np.int64), counts)
        return rows, self.cols[int(self.ptr[start]) : int(self.ptr[stop])]


def _grouped(rows: IdArray, cols: IdArray) -> tuple[IdArray, IdArray]:
    """``(rows, cols)`` sorted by row then col, repeats dropped."""
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    fresh = np.ones(len(rows), bool)
    fresh[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    return rows[fresh], cols[fresh]
