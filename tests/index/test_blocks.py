"""The block tables of the reindex's leader pass (index/neardup/blocks.py) give exactly the pairs a
brute-force comparison gives: earlier canonicals within the radius, and pairs within a block,
each once, for every radius the product accepts, in uniform data, in crowded groups (many
equal blocks) and in a clique with one canonical (the chain walk instead of the scan)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from recengine.index.neardup import block_kernels
from recengine.index.neardup.blocks import BlockTables, block_layout


def near(fps: np.ndarray, p: int, qs: range | np.ndarray, k: int) -> set[int]:
    q = np.asarray(qs, dtype=np.int64)
    return set(q[np.bitwise_count(fps[q] ^ fps[p]) <= k].tolist())


def run_pass(fps: np.ndarray, k: int, block: int, canonical: np.ndarray) -> None:
    """Walk ``fps`` a block at a time, comparing both answers with brute force and marking
    the positions ``canonical`` says after each block."""
    tables = BlockTables(fps, k)
    marked = np.zeros(len(fps), bool)
    for start in range(0, len(fps), block):
        stop = min(len(fps), start + block)
        rows, cols = tables.earlier(start, stop)
        got = list(zip((rows + start).tolist(), cols.tolist(), strict=True))
        assert len(got) == len(set(got))  # each pair once
        earlier_canonicals = np.flatnonzero(marked)
        want = {(p, q) for p in range(start, stop) for q in near(fps, p, earlier_canonicals, k)}
        assert set(got) == want
        rows, cols = tables.within(start, stop)
        got = list(zip((rows + start).tolist(), (cols + start).tolist(), strict=True))
        assert len(got) == len(set(got))
        want = {(p, q) for p in range(start, stop) for q in near(fps, p, range(start, p), k)}
        assert set(got) == want
        fresh = start + np.flatnonzero(canonical[start:stop])
        marked[fresh] = True
        tables.add_canonicals(fresh)


def clustered(rng: np.random.Generator, n: int, k: int, centres: int) -> np.ndarray:
    """Fingerprints around ``centres`` random ones, 0..k+2 random bits flipped each."""
    base = rng.integers(0, 2**64, size=centres, dtype=np.uint64)
    fps = base[rng.integers(0, centres, size=n)]
    for i in range(n):
        for bit in rng.integers(0, 64, size=int(rng.integers(0, k + 3))).tolist():
            fps[i] ^= np.uint64(1) << np.uint64(bit)
    return fps


@examples(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 300),
    k=st.integers(0, 10),
    block=st.integers(1, 64),
    share=st.floats(0.0, 1.0),
)
def test_tables_equal_brute_force(seed: int, n: int, k: int, block: int, share: float) -> None:
    rng = np.random.default_rng(seed)
    fps = clustered(rng, n, k, max(1, n // 10))
    run_pass(fps, k, block, rng.random(n) < share)


def test_clique_with_one_canonical_walks_the_chain() -> None:
    """2,000 copies within 2 bits of each other, the first the only canonical: every group's
    part before an article is far longer than SCAN_SHARE per canonical, so the chain is
    walked; a second canonical late in the run is found by the articles after it."""
    rng = np.random.default_rng(3)
    centre = np.uint64(rng.integers(0, 2**63))
    flips = np.uint64(1) << rng.integers(0, 64, size=2_000).astype(np.uint64)
    fps = np.where(rng.random(2_000) < 0.9, centre ^ flips, centre).astype(np.uint64)
    canonical = np.zeros(2_000, bool)
    canonical[[0, 1_500]] = True
    assert block_kernels.SCAN_SHARE * 2 + block_kernels.SCAN_MIN < 1_000
    run_pass(fps, 2, 100, canonical)


def test_uniform_fingerprints_with_planted_copies() -> None:
    """The benchmark's shape at a small size: uniform fingerprints (groups of about
    ``n / 2**16``), copies with 1..3 bits flipped, every article canonical unless a copy."""
    rng = np.random.default_rng(11)
    fps = rng.integers(0, 2**64, size=3_000, dtype=np.uint64)
    copies = rng.integers(0, 2_000, size=300)
    for j, src in enumerate(copies.tolist()):
        fp = int(fps[src])
        for bit in rng.integers(0, 64, size=int(rng.integers(1, 4))).tolist():
            fp ^= 1 << bit
        fps[2_000 + j] = fp
    run_pass(fps, 3, 256, rng.random(3_000) < 0.8)


def test_blocks_cover_the_bits_once() -> None:
    for k in range(64):
        bits = block_layout(k)
        assert len(bits) == k + 1
        assert sum(width for _, width in bits) == 64
        assert all(a[0] + a[1] == b[0] for a, b in pairwise(bits)) and bits[0][0] == 0
    with pytest.raises(ValueError, match="k must be"):
        block_layout(64)


def test_empty_tables() -> None:
    tables = BlockTables(np.zeros(0, np.uint64), 3)
    rows, cols = tables.earlier(0, 0)
    assert len(rows) == len(cols) == 0
    tables.add_canonicals(np.zeros(0, np.int64))
