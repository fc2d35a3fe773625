"""The near-duplicate index against a brute-force reference: every pair within k, none beyond."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recengine.features.simhash import hamming
from recengine.index.neardup.layout import Layout, choose_layout
from recengine.index.neardup.radius import NearDupIndex

U64 = st.integers(min_value=0, max_value=(1 << 64) - 1)


def flip(fp: int, bits: list[int]) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


@st.composite
def corpora(draw: st.DrawFn) -> tuple[int, list[int], list[int]]:
    """k, ids, fingerprints: random ones plus planted copies 0..k+1 bits away (some >= 2**63)."""
    k = draw(st.integers(min_value=0, max_value=10))
    base = draw(st.lists(U64 | st.sampled_from([0, 1 << 63, (1 << 64) - 1]), max_size=40))
    fps = list(base)
    for fp in base:
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            n_bits = draw(st.integers(min_value=0, max_value=k + 2))
            bits = draw(st.lists(st.integers(0, 63), min_size=n_bits, max_size=n_bits, unique=True))
            fps.append(flip(fp, bits))
    ids = draw(st.permutations(range(0, 3 * len(fps) + 1)))[: len(fps)]
    return k, list(ids), fps


def brute_pairs(ids: list[int], fps: list[int], k: int) -> set[tuple[int, int, int]]:
    out = set()
    for i in range(len(ids)):
        for j in range(i + 1, len(ids)):
            d = hamming(fps[i], fps[j])
            if d <= k:
                out.add((min(ids[i], ids[j]), max(ids[i], ids[j]), d))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_search_and_self_join_equal_brute_force(case: tuple[int, list[int], list[int]]) -> None:
    k, ids, fps = case
    index = NearDupIndex(k)
    index.add(np.array(ids, dtype=np.int64), np.array(fps, dtype=np.uint64))
    assert len(index) == len(ids)
    pairs = index.pairs()
    got = set(zip(pairs.a.tolist(), pairs.b.tolist(), pairs.distances.tolist(), strict=True))
    assert got == brute_pairs(ids, fps, k)
    result = index.search_many(np.array(fps, dtype=np.uint64))
    for q, fp in enumerate(fps):
        hit_ids, dists = result.hits(q)
        expected = sorted((hamming(fp, f), i) for i, f in zip(ids, fps, strict=True))
        assert list(zip(dists.tolist(), hit_ids.tolist(), strict=True)) == [
            e for e in expected if e[0] <= k
        ]


@settings(max_examples=60, deadline=None)
@given(corpora(), st.data())
def test_removed_and_updated_ids_never_come_back(
    case: tuple[int, list[int], list[int]], data: st.DataObject
) -> None:
    k, ids, fps = case
    index = NearDupIndex(k)
    index.add(np.array(ids, dtype=np.int64), np.array(fps, dtype=np.uint64))
    current = dict(zip(ids, fps, strict=True))
    for _ in range(data.draw(st.integers(0, 6))):
        if not current:
            break
        victim = data.draw(st.sampled_from(sorted(current)))
        if data.draw(st.booleans()):
            assert index.remove(np.array([victim])) == 1
            del current[victim]
        else:
            current[victim] = data.draw(U64)
            index.add(np.array([victim]), np.array([current[victim]], dtype=np.uint64))
    live_ids, live_fps = list(current), list(current.values())
    pairs = index.pairs()
    got = set(zip(pairs.a.tolist(), pairs.b.tolist(), pairs.distances.tolist(), strict=True))
    assert got == brute_pairs(live_ids, live_fps, k)
    assert index.arrays()[0].tolist() == sorted(current)


@pytest.mark.parametrize("k", [0, 3, 6, 8, 10, 16, 40])
@pytest.mark.parametrize("n", [10, 100_000, 10_000_000])
def test_chosen_layouts_are_exact(k: int, n: int) -> None:
    layout = choose_layout(k, n)
    assert layout.exact_for(k)
    assert layout.nhash * layout.b <= 64


def test_every_exact_layout_finds_planted_pairs() -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**64, size=500, dtype=np.uint64)
    k = 7
    planted = base.copy()
    for i in range(len(planted)):
        for bit in rng.choice(64, size=k, replace=False):
            planted[i] ^= np.uint64(1) << np.uint64(bit)
    fps = np.concatenate([base, planted])
    for layout in (Layout(8, 8, 0), Layout(4, 16, 1), Layout(2, 32, 3), Layout(3, 21, 2)):
        index = NearDupIndex(k, layout)
        index.add(np.arange(len(fps)), fps)
        pairs = set(zip(index.pairs().a.tolist(), index.pairs().b.tolist(), strict=True))
        assert {(i, i + 500) for i in range(500)} <= pairs


def test_compaction_keeps_answers() -> None:
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**64, size=5_000, dtype=np.uint64)
    index = NearDupIndex(3)
    index.add(np.arange(5_000), fps)
    index.remove(np.arange(0, 4_000))  # well past the compaction threshold
    index.add(np.array([4_500]), np.array([fps[10]]))  # updated to a removed one's value
    ids, dists = index.search(int(fps[10]))
    assert ids.tolist() == [4_500] and dists.tolist() == [0]
    assert len(index) == 1_000


@pytest.mark.parametrize(
    ("ids", "fps", "message"),
    [
        ([1, 1], [1, 2], "twice"),
        ([-1], [1], "ids must be"),
        ([1], [-5], "unsigned"),
        ([1, 2], [1], "need 2"),
        ([[1]], [1], "1-d"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    ids: list[int], fps: list[int], message: str
) -> None:
    index = NearDupIndex(3)
    index.add(np.array([7]), np.array([9], dtype=np.uint64))
    with pytest.raises(ValueError, match=message):
        index.add(np.array(ids), np.array(fps))
    assert index.arrays()[0].tolist() == [7]
    with pytest.raises(ValueError, match="radius"):
        index.search(9, k=4)
    with pytest.raises(ValueError, match="k must be"):
        NearDupIndex(64)
    with pytest.raises(ValueError, match="does not find"):
        NearDupIndex(5, Layout(2, 32, 1))
