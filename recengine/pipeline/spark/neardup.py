"""Near-duplicate pairs on Spark: the exact permuted-block join (Manku, Jain & Das Sarma 2007).

Two 64-bit fingerprints within Hamming distance k differ in at most k bits, so when the 64 bits
are cut into k + 1 disjoint blocks, at least one block holds none of those bits (pigeonhole):
the two are equal on that block. Hence:

1. every ``(id, fingerprint)`` is emitted once per block, keyed by ``(block, block value)``;
2. a shuffle groups equal keys; within a group every pair is a candidate;
3. each candidate is verified (``popcount(a ^ b) <= k``), and kept only by the **first** block
   on which the two agree, so every pair comes out exactly once without a ``distinct`` shuffle;
4. (:func:`verified_edges`) both articles' fingerprints, vectors and text shingles are joined
   to each pair and the local engine's criterion (``features.neardup.NearDupCriterion``)
   decides, on the executors; the driver then clusters the edges with
   ``pipeline.clustering.assign``.

Cost: with the default k = 3 the blocks are 16 bits wide, so a block value is shared by about
n / 65,536 articles and the candidates grow as n^2 / 65,536 per block; with k = 8 (7-bit
blocks) as n^2 / 128: fine for a few million articles, not for hundreds of millions (there,
more and longer keys, e.g. C(n, n - k) block combinations, trade shuffle volume for fewer
candidates).

Exact: no pair within k is missed, none beyond k is kept (``tests/test_spark.py`` compares with
brute force). A block value shared by very many articles (e.g. a crowd of exact copies) makes a
large group whose pairs are checked with vectorised numpy, ``chunk`` rows at a time.

Array contracts: ids ``int64``, fingerprints ``uint64``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming_many
from recengine.features.tfidf import SparseVector
from recengine.index.blocks import block_layout
from recengine.pipeline.clustering import Edge
from recengine.text.compare import Compared

Pair = tuple[int, int, int]  # (smaller id, larger id, distance)


def block_values(fingerprint: int, layout: list[tuple[int, int]]) -> list[int]:
    return [(fingerprint >> off) & ((1 << width) - 1) for off, width in layout]


def block_keys(
    item: tuple[int, int], layout: list[tuple[int, int]]
) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """``((block, value), (id, fingerprint))`` for every block of one fingerprint."""
    article_id, fingerprint = item
    for block, value in enumerate(block_values(fingerprint, layout)):
        yield (block, value), (article_id, fingerprint)


def group_pairs(
    key: tuple[int, int],
    members: Iterable[tuple[int, int]],
    k: int,
    layout: list[tuple[int, int]],
    chunk: int = 2_048,
) -> Iterator[Pair]:
    """Verified pairs of one group that agree on no block before ``key``'s block."""
    block = key[0]
    items = sorted(members)
    if len(items) < 2:
        return
    ids = np.fromiter((i for i, _ in items), dtype=np.int64, count=len(items))
    fps = np.fromiter((f for _, f in items), dtype=np.uint64, count=len(items))
    earlier = [_block_array(fps, off, width) for off, width in layout[:block]]
    for start in range(0, len(items), chunk):
        rows = slice(start, start + chunk)
        dist = hamming_many(fps[rows, None], fps[None, :])
        i, j = np.nonzero(dist <= k)
        keep = j > i + start  # each unordered pair once, never an article with itself
        i, j = i[keep] + start, j[keep]
        for values in earlier:  # agreeing on an earlier block: that block emits the pair
            first = values[i] != values[j]
            i, j = i[first], j[first]
        for a, b in zip(i.tolist(), j.tolist(), strict=True):
            yield int(ids[a]), int(ids[b]), int(dist[a - start, b])


def _block_array(fps: npt.NDArray[np.uint64], offset: int, width: int) -> npt.NDArray[np.uint64]:
    mask = np.uint64((1 << width) - 1)
    return (fps >> np.uint64(offset)) & mask


def near_duplicate_pairs(fingerprints: object, k: int, partitions: int) -> object:
    """An RDD of ``(id_a, id_b, distance)``, ``id_a < id_b``, for every pair within ``k``.

    Args:
        fingerprints: an RDD of ``(article id, fingerprint)``.
        k: the Hamming radius (inclusive).
        partitions: shuffle partitions of the block join.
    """
    layout = block_layout(k)
    keyed = fingerprints.flatMap(lambda item: block_keys(item, layout))  # type: ignore[attr-defined]
    groups = keyed.groupByKey(partitions)
    return groups.flatMap(lambda kv: group_pairs(kv[0], kv[1], k, layout))


def passage_pairs(passages: Any, stop_df: int, partitions: int) -> Any:
    """An RDD of ``(id_a, id_b, 0)``, ``id_a < id_b``, for every pair sharing a passage hash
    held by at most ``stop_df`` of the articles (the local ``index.passages.PassageIndex``'s
    self-join: a hash held by more is a stop passage).

    Args:
        passages: an RDD of ``(article id, passage hashes)``, each id once.
    """
    keyed = passages.flatMap(lambda item: ((h, item[0]) for h in item[1]))
    return keyed.groupByKey(partitions).flatMap(lambda kv: run_pairs(kv[1], stop_df))


def run_pairs(members: Iterable[int], stop_df: int) -> Iterator[Pair]:
    """Every pair of the articles holding one passage hash, unless they are more than
    ``stop_df``."""
    ids = sorted(set(members))
    if not 2 <= len(ids) <= stop_df:
        return
    for j, a in enumerate(ids):
        for b in ids[j + 1 :]:
            yield a, b, 0


def candidate_pairs(features: Any, passages: Any, k: int, stop_df: int, partitions: int) -> Any:
    """Both candidate sources, each pair once: the block join within ``k`` of ``features``'
    fingerprints, and the passage pairs of the articles with terms among ``passages`` (the
    local engine indexes the same articles in both)."""
    radius: Any = near_duplicate_pairs(features.map(lambda r: (r[0], r[1])), k, partitions)
    if passages is None:
        return radius
    with_terms = features.filter(lambda r: r[3] > 0).map(lambda r: (r[0], None))
    held = passages.join(with_terms, partitions).map(lambda kv: (kv[0], kv[1][0]))
    both = radius.union(passage_pairs(held, stop_df, partitions))
    keyed = both.map(lambda p: ((p[0], p[1]), p[2])).reduceByKey(max, partitions)
    return keyed.map(lambda kv: (kv[0][0], kv[0][1], kv[1]))


def verify_partition(
    params: tuple[int, float, float, float, float, int, float], rows: Iterable[tuple[int, Any]]
) -> Iterator[tuple[int, int, int, float, str]]:
    """Candidate pairs joined with both articles' features -> verified edges.

    Each row is ``(b, ((a, b, distance, info_a), info_b))`` where an article's ``info`` is
    ``((fingerprint, vector bytes), Compared bytes)``; the verdict is
    :meth:`NearDupCriterion.judge` (built from ``params``, ``NearDupCriterion.params``), the
    local engine's own, on what it compares of the texts.
    """
    criterion = NearDupCriterion(*params)
    for _, ((a, b, _d, ((fp_a, vec_a), sh_a)), ((fp_b, vec_b), sh_b)) in rows:
        verdict = criterion.judge(
            fp_a,
            SparseVector.from_bytes(vec_a),
            fp_b,
            SparseVector.from_bytes(vec_b),
            Compared.from_bytes(sh_a),
            Compared.from_bytes(sh_b),
        )
        if verdict.duplicate:
            yield a, b, verdict.distance, verdict.score, verdict.rule


def verified_edges(
    features: Any,
    shingles_of: Callable[[Any], Any],
    criterion: NearDupCriterion,
    partitions: int,
    passages: Any = None,
    stop_df: int = 200,
) -> list[Edge]:
    """Every verified near-duplicate pair among ``features`` rows ``(id, fp, vector, n)``.

    Args:
        features: RDD of ``(id, fingerprint, vector bytes, n_tokens)``.
        shingles_of: given a broadcast set of article ids, an RDD of ``(id, Compared bytes)``
            for those articles (what the decision compares, computed on the executors).
        criterion: the local engine's criterion (radius and thresholds).
        partitions: shuffle partitions.
        passages: RDD of ``(id, passage hashes)`` of every article (the second candidate
            source, ``text.compare.article_passages``); None: the block join alone.
        stop_df: ``neardup.passage_stop_df``.

    Candidates come from the block join and the passage join (:func:`candidate_pairs`). Only
    articles in some candidate pair get their shingles computed (their ids are broadcast, so
    no other text travels), and both articles' fingerprints, vectors and shingles are joined to
    each candidate; the criterion runs on the executors.
    """
    pairs: Any = candidate_pairs(features, passages, criterion.k, stop_df, partitions)
    pairs.persist()
    try:
        ids = pairs.flatMap(lambda p: (p[0], p[1])).distinct().collect()
        if not ids:
            return []
        wanted = features.context.broadcast(frozenset(ids))
        candidates = features.filter(lambda r: r[0] in wanted.value)
        info = candidates.map(lambda r: (r[0], (r[1], r[2]))).join(shingles_of(wanted), partitions)
        with_a = pairs.map(lambda p: (p[0], p)).join(info, partitions)
        keyed_b = with_a.map(lambda kv: (kv[1][0][1], (*kv[1][0], kv[1][1])))
        both = keyed_b.join(info, partitions)
        params = criterion.params()
        edges = both.mapPartitions(lambda rows: verify_partition(params, rows)).collect()
        wanted.destroy()
    finally:
        pairs.unpersist()
    return [Edge(*edge) for edge in sorted(edges)]
