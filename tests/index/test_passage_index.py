"""The passage index against a brute-force reference: queries and the self-join, after any
sequence of additions, replacements and removals, with stop passages."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.index.neardup.passages import PassageIndex
from recengine.text.neardup.passages import passages

hash_sets = st.lists(st.integers(0, 30), max_size=8).map(
    lambda xs: np.unique(np.array(xs, dtype=np.uint64))
)
ops = st.lists(
    st.tuples(st.sampled_from(["add", "add", "remove"]), st.integers(0, 25), hash_sets),
    min_size=1,
    max_size=60,
)


def brute(live: dict[int, np.ndarray], stop_df: int) -> tuple[dict[int, set[int]], set]:
    holders: dict[int, set[int]] = {}
    for i, p in live.items():
        for h in p.tolist():
            holders.setdefault(h, set()).add(i)
    usable = {h: ids for h, ids in holders.items() if len(ids) <= stop_df}
    pairs = {(a, b) for ids in usable.values() for a, b in combinations(sorted(ids), 2)}
    return usable, pairs


@settings(max_examples=300, deadline=None)
@given(ops, st.integers(2, 6))
def test_queries_and_self_join_equal_brute_force(steps: list, stop_df: int) -> None:
    index = PassageIndex(stop_df=stop_df)
    live: dict[int, np.ndarray] = {}
    for kind, i, p in steps:
        if kind == "add":
            index.add([i], [p])
            live[i] = p
        else:
            index.remove([i])
            live.pop(i, None)
        usable, pairs = brute(live, stop_df)
        for j, q in list(live.items())[:5]:
            expected = sorted({x for h in q.tolist() for x in usable.get(h, ())} - {j})
            assert index.query(q, exclude=j).tolist() == expected
    got = index.pairs()
    assert set(zip(got.a.tolist(), got.b.tolist(), strict=True)) == pairs
    assert len(got) == len(pairs) and bool(np.all(got.a < got.b))
    assert len(index) == len(live)


def test_bulk_build_on_real_passages_equals_brute_force() -> None:
    rng = np.random.default_rng(1)
    words = ["数据库", "索引", "事务", "隔离级别", "缓存", "一致性", "分布式", "锁", "查询", "优化"]
    texts = ["".join(rng.choice(words, size=int(rng.integers(5, 40)))) for _ in range(300)]
    texts += texts[:40]  # exact copies share every passage
    sets = [passages(t) for t in texts]
    index = PassageIndex(stop_df=20)
    index.add(list(range(len(sets))), sets)
    _, pairs = brute(dict(enumerate(sets)), 20)
    got = index.pairs()
    assert set(zip(got.a.tolist(), got.b.tolist(), strict=True)) == pairs
    assert pairs  # the copies at least


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="stop_df"):
        PassageIndex(stop_df=1)
    with pytest.raises(ValueError, match="ids but"):
        PassageIndex().add([1, 2], [np.zeros(1, np.uint64)])
