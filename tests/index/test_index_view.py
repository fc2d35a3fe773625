"""The related-articles index against a brute-force reference, and its layout independence."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.index.ids import IdRows, among, sorted_find
from recengine.index.related import scoring
from recengine.index.related import segment as segment_module
from recengine.index.related.scoring import segment_sums
from recengine.index.related.segment import (
    NO_DATE,
    Rows,
    Segment,
    build_segment,
    concat_rows,
    gather_ranges,
)
from recengine.index.related.view import IndexView, Part, RowFilter, SearchParams, exact_dot

EXHAUSTIVE = SearchParams(query_terms=10_000, per_term=10**9, n_candidates=10**9)


def random_rows(seed: int, n: int, vocab: int = 60, first_id: int = 1) -> Rows:
    """``n`` articles with unit vectors over a small vocabulary, labels and dates."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.integers(0, 12, n), vocab)
    hashes, weights = [], []
    for m in lengths:
        h = rng.choice(np.arange(1, vocab + 1, dtype=np.uint64) * 7919, m, replace=False)
        w = np.sort(rng.random(m).astype(np.float32))[::-1]
        w = np.round(w * 4) / 4 + 0.25  # coarse weights: many exact ties
        w = (w / np.linalg.norm(w)).astype(np.float32) if m else w.astype(np.float32)
        hashes.append(h)
        weights.append(w)
    tags = [
        rng.choice(np.array([11, 12, 13], np.uint64), rng.integers(0, 3), False) for _ in lengths
    ]
    return Rows(
        ids=rng.permutation(np.arange(first_id, first_id + n, dtype=np.int64)),
        fingerprints=rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * 2,
        published=np.where(rng.random(n) < 0.2, NO_DATE, rng.integers(0, 100, n)).astype(np.int64),
        category=rng.choice(np.array([0, 5, 6], np.uint64), n),
        tag_indptr=np.concatenate(([0], np.cumsum([len(t) for t in tags]))).astype(np.int64),
        tag_hashes=np.concatenate(tags).astype(np.uint64) if n else np.zeros(0, np.uint64),
        vec_indptr=np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
        vec_hashes=np.concatenate(hashes).astype(np.uint64) if n else np.zeros(0, np.uint64),
        vec_weights=np.concatenate(weights).astype(np.float32) if n else np.zeros(0, np.float32),
    )


def vector(rows: Rows, i: int) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
    s, e = rows.vec_indptr[i], rows.vec_indptr[i + 1]
    return rows.vec_hashes[s:e], rows.vec_weights[s:e]


def brute_force(
    rows: Rows, qh: npt.NDArray[np.uint64], qw: npt.NDArray[np.float32]
) -> dict[int, float]:
    """id -> cosine with the query, for every article sharing a term with it."""
    query = dict(zip(qh.tolist(), qw.astype(np.float64).tolist(), strict=True))
    out = {}
    for i in range(len(rows)):
        h, w = vector(rows, i)
        shared = [
            query[t] * float(x) for t, x in zip(h.tolist(), w.tolist(), strict=True) if t in query
        ]
        if shared:
            out[int(rows.ids[i])] = sum(shared)
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60), terms=st.integers(1, 12))
def test_exhaustive_search_equals_brute_force(seed: int, n: int, terms: int) -> None:
    rows = random_rows(seed, n)
    view = IndexView((Part(build_segment(rows, terms), np.ones(n, bool)),))
    qh, qw = vector(rows, seed % n)
    hits = view.search(qh, qw, SearchParams(10_000, 10**9, 10**9), RowFilter())
    expected = brute_force(rows, qh, qw)
    # every indexed posting is read: exactly the articles sharing an indexed term are found
    assert set(hits.ids.tolist()) <= set(expected)
    for i, score in zip(hits.ids.tolist(), hits.scores.tolist(), strict=True):
        assert score == pytest.approx(expected[i], abs=1e-9)
    if terms >= 12:  # every stored term indexed: nothing is missed
        assert set(hits.ids.tolist()) == set(expected)
    # rank order: score descending, ties by id ascending
    keys = list(zip((-hits.scores).tolist(), hits.ids.tolist(), strict=True))
    assert keys == sorted(keys)


def split(rows: Rows, cut: list[int], terms: int, dead: set[int]) -> IndexView:
    """The same live articles spread over several segments, with some stale copies."""
    order = np.argsort(rows.ids)
    bounds = [0, *sorted(set(cut)), len(rows)]
    parts = []
    for a, b in itertools.pairwise(bounds):
        if b <= a:
            continue
        keep = np.zeros(len(rows), bool)
        keep[order[a:b]] = True
        seg = build_segment(rows_subset(rows, keep), terms)
        parts.append(Part(seg, np.ones(len(seg), bool)))
    # stale copies of some articles (an update not merged away yet): dead in an extra segment
    if dead:
        stale = np.isin(rows.ids, list(dead))
        seg = build_segment(rows_subset(rows, stale), terms)
        parts.append(Part(seg, np.zeros(len(seg), bool)))
    return IndexView(tuple(parts))


def rows_subset(rows: Rows, keep: npt.NDArray[np.bool_]) -> Rows:
    whole = build_segment(rows, 10_000)
    ordered_keep = keep[np.argsort(rows.ids)]
    return whole.rows(ordered_keep)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 80),
    cut=st.lists(st.integers(0, 80), max_size=4),
    per_term=st.integers(1, 6),
    query_terms=st.integers(1, 6),
    n_candidates=st.integers(1, 15),
    scale=st.booleans(),
)
def test_answers_do_not_depend_on_segment_layout(
    seed: int,
    n: int,
    cut: list[int],
    per_term: int,
    query_terms: int,
    n_candidates: int,
    scale: bool,
) -> None:
    rows = random_rows(seed, n)
    params = SearchParams(query_terms, per_term, n_candidates, scale, min_per_term=1)
    one = IndexView((Part(build_segment(rows, 6), np.ones(n, bool)),))
    many = split(rows, [c % n for c in cut], 6, dead=set(rows.ids[: n // 3].tolist()))
    q = seed % n
    qh, qw = vector(rows, q)
    self_id = int(rows.ids[q])
    a = one.search(qh, qw, params, RowFilter(), self_id)
    b = many.search(qh, qw, params, RowFilter(), self_id)
    assert a.ids.tolist() == b.ids.tolist()
    assert a.scores.tolist() == b.scores.tolist()  # bit for bit


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 60))
def test_filters_match_their_definition(seed: int, n: int) -> None:
    rows = random_rows(seed, n)
    seg = build_segment(rows, 10_000)
    rng = np.random.default_rng(seed)
    filt = RowFilter(
        exclude_ids=rng.choice(seg.ids, min(3, n), replace=False),
        categories=np.array([5], np.uint64) if seed % 2 else None,
        tags=np.array([12, 13], np.uint64) if seed % 3 else None,
        published_after=20 if seed % 5 else None,
        published_before=80 if seed % 7 else None,
    )
    got = filt.allows(seg, np.arange(n))
    for i in range(n):
        tags = set(seg.tag_hashes[seg.tag_indptr[i] : seg.tag_indptr[i + 1]].tolist())
        when = int(seg.published[i])
        ok = int(seg.ids[i]) not in set(filt.exclude_ids.tolist())
        ok &= filt.categories is None or int(seg.category[i]) == 5
        ok &= filt.tags is None or bool(tags & {12, 13})
        if filt.published_after is not None or filt.published_before is not None:
            ok &= when != NO_DATE
            ok &= filt.published_after is None or when >= 20
            ok &= filt.published_before is None or when < 80
        assert bool(got[i]) == ok


def test_dead_rows_are_never_returned_and_heads_read_past_them() -> None:
    rows = random_rows(3, 50, vocab=5)
    seg = build_segment(rows, 10_000)
    alive = np.ones(50, bool)
    alive[::2] = False
    view = IndexView((Part(seg, alive),))
    qh, qw = vector(rows, 1)
    hits = view.search(qh, qw, SearchParams(10, 2, 100), RowFilter())
    assert not set(hits.ids.tolist()) & set(seg.ids[~alive].tolist())
    # each query term yields its 2 best *live* postings (weight desc, id asc), dead ones skipped
    expected = set()
    for term in qh.tolist():
        having = []
        for i in np.flatnonzero(alive):
            h = seg.terms[seg.vec_cols[seg.vec_indptr[i] : seg.vec_indptr[i + 1]]]
            if term in set(h.tolist()):
                pos = h.tolist().index(term)
                weight = float(seg.vec_weights[seg.vec_indptr[i] + pos])
                having.append((-weight, int(seg.ids[i])))
        expected |= {i for _, i in sorted(having)[:2]}
    assert set(hits.ids.tolist()) == expected


def test_newest_orders_by_date_then_id_and_puts_undated_last() -> None:
    rows = random_rows(5, 40)
    view = split(rows, [13, 27], 4, dead=set())
    hits = view.newest(40, RowFilter())
    seg = build_segment(rows, 4)
    when = dict(zip(seg.ids.tolist(), seg.published.tolist(), strict=True))
    keys = [(when[i], i) for i in hits.ids.tolist()]
    assert keys == sorted(keys, reverse=True) and len(keys) == 40
    assert view.newest(5, RowFilter()).ids.tolist() == hits.ids[:5].tolist()


def test_segments_refuse_inconsistent_rows() -> None:
    rows = random_rows(1, 5)
    bad = Rows(**{**rows.__dict__, "ids": np.array([1, 1, 2, 3, 4], np.int64)})
    with pytest.raises(ValueError, match="unique"):
        build_segment(bad, 4)
    with pytest.raises(ValueError, match="index_terms"):
        build_segment(rows, 0)
    short = Rows(**{**rows.__dict__, "vec_indptr": rows.vec_indptr[:-1]})
    with pytest.raises(ValueError, match="vec_indptr"):
        build_segment(short, 4)
    assert len(build_segment(concat_rows([rows, random_rows(2, 3, first_id=100)]), 4)) == 8


@contextmanager
def both_paths(compiled: bool) -> Iterator[None]:
    """``index.related.scoring`` taking the compiled kernels (as once they paid) or numpy
    (before)."""
    with scoring.RENTAL.forced(compiled):
        yield


def numpy_exact_dot(
    seg: Segment, rows: npt.NDArray[np.int64], qh: npt.NDArray[np.uint64], qw: npt.NDArray[Any]
) -> npt.NDArray[np.float64]:
    """The numpy formulation the compiled scoring replaced (its reference, bit for bit)."""
    idx, indptr = gather_ranges(seg.vec_indptr, rows)
    if not len(seg.terms):
        return np.zeros(len(rows), np.float64)
    pos = np.minimum(np.searchsorted(seg.terms, qh), len(seg.terms) - 1)
    known = seg.terms[pos] == qh
    order = np.argsort(pos[known], kind="stable")
    q_cols, q_w = pos[known][order], qw[known][order].astype(np.float64)
    if not len(q_cols):  # numpy's formulation failed here (IndexError): no term in common
        return np.zeros(len(rows), np.float64)
    cols = seg.vec_cols[idx]
    at = np.minimum(np.searchsorted(q_cols, cols), max(len(q_cols) - 1, 0))
    match = (q_cols[at] == cols) if len(q_cols) else np.zeros(len(cols), bool)
    contrib = np.where(match, seg.vec_weights[idx].astype(np.float64) * q_w[at], 0.0)
    return segment_sums(contrib, indptr)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10_000),
    st.lists(st.integers(0, 700), min_size=1, max_size=12),
    st.integers(0, 400),
)
def test_exact_scores_are_numpys_bit_for_bit(seed: int, lengths: list[int], shared: int) -> None:
    """Rows of every length numpy sums differently (under 8, up to 128, halves above),
    empty ones, rows asked twice, query terms the segment does not have."""
    rng = np.random.default_rng(seed)
    vocab = np.arange(1, 3_001, dtype=np.uint64) * 104_729
    hashes = [rng.choice(vocab, n, replace=False) for n in lengths]
    weights = [(rng.random(n) * 10.0 ** rng.integers(-4, 2, n)).astype(np.float32) for n in lengths]
    n = len(lengths)
    seg = build_segment(
        Rows(
            ids=np.arange(1, n + 1, dtype=np.int64),
            fingerprints=np.zeros(n, np.uint64),
            published=np.full(n, NO_DATE, np.int64),
            category=np.zeros(n, np.uint64),
            tag_indptr=np.zeros(n + 1, np.int64),
            tag_hashes=np.zeros(0, np.uint64),
            vec_indptr=np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
            vec_hashes=np.concatenate(hashes).astype(np.uint64),
            vec_weights=np.concatenate(weights).astype(np.float32),
        ),
        index_terms=10,
    )
    unknown = np.arange(1, 30, dtype=np.uint64) * 104_729 + 1
    qh = rng.permutation(np.concatenate((rng.choice(vocab, shared, replace=False), unknown)))
    qw = rng.random(len(qh)).astype(np.float32)
    rows = rng.integers(0, n, 2 * n).astype(np.int64)
    want_bits = numpy_exact_dot(seg, rows, qh, qw).view(np.int64).tolist()
    for compiled in (True, False):  # the kernels once they pay, numpy before
        with both_paths(compiled):
            got = exact_dot(seg, rows, qh, qw)
        assert got.dtype == np.float64 and len(got) == len(rows)
        assert got.view(np.int64).tolist() == want_bits, compiled
    query = dict(zip(qh.tolist(), qw.astype(np.float64).tolist(), strict=True))
    for row, value in zip(rows.tolist(), got.tolist(), strict=True):
        h, w = hashes[row], weights[row].astype(np.float64)
        want = sum(float(x) * query.get(int(t), 0.0) for t, x in zip(h, w, strict=True))
        assert value == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_rows_of_a_part_sharing_no_term_with_the_query_score_zero() -> None:
    """A dense neighbour can sit in a part none of whose terms the query has (an article
    ingested a moment ago, about the same thing in other words): it is scored 0 on the sparse
    side. The numpy formulation failed there with an IndexError (a 500 on the related list)."""
    rows = random_rows(3, 40)
    first = build_segment(rows_subset(rows, rows.ids <= 30), 4)
    lone = Rows(
        ids=np.array([99], np.int64),
        fingerprints=np.zeros(1, np.uint64),
        published=np.full(1, NO_DATE, np.int64),
        category=np.zeros(1, np.uint64),
        tag_indptr=np.zeros(2, np.int64),
        tag_hashes=np.zeros(0, np.uint64),
        vec_indptr=np.array([0, 2], np.int64),
        vec_hashes=np.array([3, 5], np.uint64),  # no term of the vocabulary of random_rows
        vec_weights=np.array([0.8, 0.6], np.float32),
    )
    second = build_segment(lone, 4)
    view = IndexView((Part(first, np.ones(len(first), bool)), Part(second, np.ones(1, bool))))
    qh, qw = vector(rows, int(np.flatnonzero(rows.ids == 1)[0]))
    hits = view.score(np.array([0, 1], np.intp), np.array([0, 0], np.intp), qh, qw)
    assert dict(zip(hits.ids.tolist(), hits.scores.tolist(), strict=True))[99] == 0.0
    assert exact_dot(second, np.array([0]), qh, qw).tolist() == [0.0]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 3_000), st.integers(1, 5_000))
def test_candidate_sums_are_bincounts_bit_for_bit(seed: int, n: int, distinct: int) -> None:
    """The partial scores of the candidate stage: each id's values added in input order
    (repeated ids, negative and huge ids, values of mixed magnitude)."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(-(2**62), 2**62, distinct)
    ids = pool[rng.integers(0, distinct, n)].astype(np.int64)
    values = rng.random(n) * 10.0 ** rng.integers(-6, 3, n)
    unique, inverse = np.unique(ids, return_inverse=True)
    want = np.bincount(inverse.ravel(), weights=values, minlength=len(unique))
    for compiled in (True, False):
        with both_paths(compiled):
            first, sums = scoring.sum_by_id(ids, values)
        assert first.dtype == np.int64 and sums.dtype == np.float64
        assert sorted(ids[first].tolist()) == unique.tolist()
        assert first.tolist() == sorted(first.tolist())  # order of first appearance
        assert all(ids[: int(f)].tolist().count(int(ids[f])) == 0 for f in first[:50])
        at = np.searchsorted(unique, ids[first])
        assert sums.view(np.int64).tolist() == want[at].view(np.int64).tolist()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(0, 5_000),
    st.sampled_from([1, 2, 5, 1_000]),
    st.integers(-(2**40), 2**40),
)
def test_id_rows_agree_with_a_binary_search(seed: int, n: int, gap: int, first: int) -> None:
    """The rows of ids, by the table (nearly contiguous ids) or the search (wide ranges, small
    parts), for ids held, ids between them, below, above and far outside the range."""
    rng = np.random.default_rng(seed)
    ids = np.unique(first + np.cumsum(rng.integers(1, gap + 1, n))).astype(np.int64)
    asked = np.concatenate(
        (ids[rng.integers(0, max(len(ids), 1), 300)] if len(ids) else ids, ids[:50] + 1)
    )
    asked = np.concatenate((asked, [first - 5, first, 2**62, -(2**62)])).astype(np.int64)
    rows = IdRows(ids).find(asked)
    pos = np.minimum(np.searchsorted(ids, asked), max(len(ids) - 1, 0))
    want = np.where(ids[pos] == asked, pos, -1) if len(ids) else np.full(len(asked), -1)
    assert rows.dtype == np.intp and rows.tolist() == want.tolist()


def test_id_rows_use_a_table_only_for_nearly_contiguous_ids() -> None:
    ids = np.arange(10, 20_010, dtype=np.int64)
    assert IdRows(ids)._table is not None  # a sequence's ids: one read per id
    assert IdRows(ids * 5)._table is None  # a range 5x the rows: searched
    assert IdRows(ids[:100])._table is None  # a small part: searched
    assert IdRows(ids).find(np.array([10, 20_009, 9, 20_010]))[:4].tolist() == [0, 19_999, -1, -1]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-(2**62), 2**62), max_size=60),
    st.lists(st.integers(-(2**62), 2**62), max_size=60),
    st.integers(0, 2**31),
)
def test_among_is_numpys_isin(values: list[int], others: list[int], seed: int) -> None:
    """Membership of a list's ids (repeats, any order, shared values drawn in) as
    ``np.isin`` answers it."""
    rng = np.random.default_rng(seed)
    a = np.array(values + others[: len(others) // 2], np.int64)
    b = np.array(others + values[: len(values) // 3], np.int64)
    rng.shuffle(a)
    rng.shuffle(b)
    assert among(a, b).tolist() == np.isin(a, b).tolist()


def test_a_segments_term_columns_are_the_binary_searchs_and_the_last_queries_are_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Segment.columns``: each query's columns as a search of the terms gives them, asked
    again from what is held (the same array), never more than ``COLUMNS_HELD`` queries."""
    monkeypatch.setattr(segment_module, "COLUMNS_HELD", 2)
    seg = build_segment(random_rows(3, 40), 10_000)
    rng = np.random.default_rng(3)
    queries = [
        np.concatenate((rng.choice(seg.terms, 5), np.array([1, 2**63 + 5], np.uint64)))
        for _ in range(4)
    ]
    for q in queries:
        got = seg.columns(q)
        assert got.tolist() == sorted_find(seg.terms, q).tolist()
        assert seg.columns(q.copy()) is got  # held: equal hashes, another array
        assert len(seg._columns) <= 2
    assert seg.columns(queries[0]).tolist() == sorted_find(seg.terms, queries[0]).tolist()
