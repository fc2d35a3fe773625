"""The dense index (index/dense.py) against a brute-force inner-product search."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.index.dense import (
    DOTS,
    DenseIndex,
    DenseParams,
    build_dense,
    dense_from_arrays,
    dots,
)

F32 = npt.NDArray[np.float32]


def unit(n: int, d: int, seed: int) -> F32:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute(ids: npt.NDArray[np.int64], x: F32, q: F32, n: int) -> list[int]:
    s = np.sum(x.astype(np.float64) * q.astype(np.float64), axis=1)
    return [int(ids[i]) for i in np.lexsort((ids, -s))[:n]]


def live_of(index: DenseIndex) -> tuple[npt.NDArray[np.int64], F32]:
    m = index.main
    ids = np.concatenate((m.ids[m.alive], index.delta_ids))
    x = np.concatenate((m.vectors[m.alive], index.delta_vectors))
    return ids, x


FLAT = DenseParams(ivf_min=10_000)


def test_flat_search_is_exact_and_ties_go_to_the_smaller_id() -> None:
    ids = np.arange(10, 510, dtype=np.int64) * 3
    x = unit(500, 16, 1)
    x[7] = x[3]  # an exact tie
    index = build_dense(ids, x, FLAT, 16)
    for q in [*unit(20, 16, 2).tolist(), x[3].tolist()]:
        got, scores = index.search(np.array(q, np.float32), 25)
        assert got.tolist() == brute(ids, x, np.array(q, np.float32), 25)
        assert np.all(np.diff(scores) <= 0)
    got, _ = index.search(x[3], 2)
    assert got.tolist() == [int(ids[3]), int(ids[7])]


def test_ivf_with_every_list_probed_equals_flat() -> None:
    ids = np.arange(2_000, dtype=np.int64) + 1
    x = unit(2_000, 8, 3)
    for half, kind in ((True, "ivf-fp16"), (False, "ivf")):
        params = DenseParams(ivf_min=100, nlist=16, nprobe=16, half=half)
        ivf = build_dense(ids, x, params, 8)
        assert ivf.describe()["faiss"] == kind and ivf.main.lists.shape == (2_000,)
        for q in unit(10, 8, 4):  # float16 lists too: the exact order, with its ties
            assert ivf.search(q, 30)[0].tolist() == brute(ids, x, q, 30)
    # fewer lists probed: a subset of the true neighbours, still exactly scored
    few = build_dense(ids, x, DenseParams(ivf_min=100, nlist=16, nprobe=2), 8)
    got, scores = few.search(x[5], 10)
    assert got[0] == ids[5] and scores[0] == pytest.approx(1.0, abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_changes_deletions_and_compaction_match_a_rebuild(data: st.DataObject) -> None:
    ivf = data.draw(st.booleans())
    params = DenseParams(ivf_min=50 if ivf else 10_000, nlist=8, nprobe=8, delta_max_rows=30)
    n = 120
    ids = np.arange(1, n + 1, dtype=np.int64)
    x = unit(n, 6, data.draw(st.integers(0, 100)))
    index = build_dense(ids, x, params, 6)
    truth = dict(zip(ids.tolist(), list(x), strict=True))
    for step in range(data.draw(st.integers(1, 5))):
        drop = data.draw(st.lists(st.sampled_from(sorted(truth)), max_size=15, unique=True))
        new = data.draw(st.lists(st.integers(1, 400), max_size=10, unique=True))
        new = sorted(set(new) - set(drop))
        vectors = unit(len(new), 6, 1000 + step)
        changed = np.array(sorted(set(drop) | set(new)), np.int64)
        index = index.with_changes(changed, np.array(new, np.int64), vectors)
        for i in drop:
            truth.pop(i, None)
        truth.update(zip(new, list(vectors), strict=True))
    assert len(index) == len(truth)
    live_ids = np.array(sorted(truth), np.int64)
    live_x = np.array([truth[i] for i in live_ids.tolist()], np.float32).reshape(-1, 6)
    for q in unit(5, 6, 7):
        assert index.search(q, 12)[0].tolist() == brute(live_ids, live_x, q, 12)
    found, got = index.lookup(np.array([*live_ids.tolist()[:5], 10_000], np.int64))
    assert found.tolist() == [True] * min(5, len(live_ids)) + [False]
    assert np.array_equal(got[: min(5, len(live_ids))], live_x[:5])
    compact = index.compacted()
    assert len(compact.delta_ids) == 0 and compact.main.alive.all()
    assert np.array_equal(live_of(compact)[0], live_ids)
    for q in unit(5, 6, 8):
        assert compact.search(q, 12)[0].tolist() == brute(live_ids, live_x, q, 12)


def test_arrays_round_trip_and_damaged_arrays_are_refused() -> None:
    ids = np.arange(1, 301, dtype=np.int64)
    x = unit(300, 8, 5)
    params = DenseParams(ivf_min=100, nlist=8, nprobe=3)
    index = build_dense(ids, x, params, 8).with_changes(
        np.array([4, 9, 301], np.int64), np.array([9, 301], np.int64), unit(2, 8, 6)
    )
    back = dense_from_arrays(index.arrays(), params, 8)
    for q in unit(8, 8, 9):
        a, b = index.search(q, 20), back.search(q, 20)
        assert a[0].tolist() == b[0].tolist() and np.array_equal(a[1], b[1])
    broken = {**index.arrays(), "lists": np.full(300, 99, np.int64)}
    with pytest.raises(ValueError, match="lists out of range"):
        dense_from_arrays(broken, params, 8)
    with pytest.raises(ValueError, match="vectors"):
        dense_from_arrays(index.arrays(), params, 4)
    with pytest.raises(ValueError, match="no 'alive' array"):
        dense_from_arrays({k: v for k, v in index.arrays().items() if k != "alive"}, params, 8)


def test_an_index_without_dimensions_counts_articles_and_finds_nothing() -> None:
    off = build_dense(np.arange(1, 6, dtype=np.int64), np.zeros((5, 0), np.float32), FLAT, 0)
    assert len(off) == 5 and off.search(np.zeros(0, np.float32), 3)[0].size == 0
    off = off.with_changes(np.array([2, 7], np.int64), np.array([7], np.int64), np.zeros((1, 0)))
    assert len(off) == 5 and off.lookup(np.array([7, 2], np.int64))[0].tolist() == [True, False]


def test_compaction_is_due_after_many_changes() -> None:
    index = build_dense(np.arange(1, 101, dtype=np.int64), unit(100, 4, 1), FLAT, 4)
    assert not index.compaction_due()
    params = DenseParams(ivf_min=10_000, delta_max_rows=5)
    index = build_dense(np.arange(1, 101, dtype=np.int64), unit(100, 4, 1), params, 4)
    more = np.arange(200, 206, dtype=np.int64)
    assert index.with_changes(more, more, unit(6, 4, 2)).compaction_due()


@pytest.mark.parametrize("dims", [0, 1, 7, 8, 9, 64, 127, 128, 129, 300, 512, 576, 1025])
def test_compiled_inner_products_equal_numpys_bit_for_bit(dims: int) -> None:
    """``dots`` once its kernel paid (``index.dense_kernels``) gives numpy's floats: the
    exact re-scoring ranks the same whichever runs."""
    rng = np.random.default_rng(dims)
    vectors = rng.standard_normal((60, dims)).astype(np.float32)
    query = rng.standard_normal(dims)
    rows = rng.integers(0, 60, 90).astype(np.int64)
    want = np.sum(vectors[rows].astype(np.float64) * query, axis=1)
    for compiled in (True, False):
        with DOTS.forced(compiled):
            got = dots(vectors, query, rows)
            whole = dots(vectors, query)
        assert got.view(np.int64).tolist() == want.view(np.int64).tolist(), compiled
        assert (
            whole.view(np.int64).tolist()
            == np.sum(vectors.astype(np.float64) * query, axis=1).view(np.int64).tolist()
        )
