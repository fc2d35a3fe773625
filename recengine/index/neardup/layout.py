"""How to cut 64-bit fingerprints into hash tables so that a radius-k search is exact and cheap.

FAISS ``IndexBinaryMultiHash(64, nhash, b)`` keys table ``h`` on bits ``h*b .. h*b+b-1`` of the
fingerprint and, with ``nflip`` flips, probes every bucket whose key is within Hamming ``nflip``
of the query's key. The search is **exact** for radius ``k`` when ``nflip >= k // nhash``:

    the tables cover disjoint bit blocks, so two fingerprints that differ in at most k bits
    differ in at most k bits over all blocks together, and by the pigeonhole principle some
    block differs in at most floor(k / nhash) of them: that block's probe finds the pair.

(Bits not covered by any block only lower the count.) With ``nhash = k + 1`` blocks and no flips
this is the scheme of DESIGN.md (Manku, Jain & Das Sarma 2007).

The cost of one query is modelled as ``3 * lookups + candidates``, where ``lookups = nhash *
sum_{i<=nflip} C(b, i)`` hash probes and ``candidates = lookups * n / 2**b`` stored fingerprints
put on the shortlist and compared (for uniformly spread fingerprints). The weights come from
timing FAISS 1.15 at 1M fingerprints: a probe (flip enumeration + ``unordered_map`` find) costs
about three shortlist entries (``unordered_set`` insert + popcount), and both are far dearer
than one brute-force comparison. Keys are capped at ``bit_length(n) + 1`` bits (about two
buckets per fingerprint; memory grows with the number of distinct keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

BITS = 64
MAX_LOOKUPS = 20_000


@dataclass(frozen=True)
class Layout:
    """``nhash`` tables of ``b`` bits, probed with up to ``nflip`` flipped bits."""

    nhash: int
    b: int
    nflip: int

    def exact_for(self, k: int) -> bool:
        """Whether a radius-``k`` search with this layout finds every fingerprint."""
        return self.nhash * self.b <= BITS and self.nflip >= k // self.nhash

    def lookups(self) -> int:
        return self.nhash * sum(comb(self.b, i) for i in range(self.nflip + 1))

    def cost(self, n: int) -> float:
        """Expected probes + candidate comparisons per query over ``n`` uniform fingerprints."""
        probes = self.lookups()
        return 3 * probes + probes * n / 2.0**self.b


def choose_layout(k: int, n: int) -> Layout:
    """The cheapest exact layout for radius ``k`` over about ``n`` fingerprints.

    Args:
        k: search radius in bits, ``0 <= k < 64``.
        n: expected number of stored fingerprints (the layout is chosen again at each rebuild).

    Raises:
        ValueError: ``k`` is out of range.

    Example:
        >>> choose_layout(3, 1_000_000)
        Layout(nhash=4, b=16, nflip=0)
    """
    if not 0 <= k < BITS:
        raise ValueError(f"radius must be in [0, 63], got {k}")
    max_b = max(16, min(32, max(n, 1).bit_length() + 1))
    best: Layout | None = None
    for nhash in range(1, min(k + 1, 16) + 1):
        b = min(BITS // nhash, max_b)
        layout = Layout(nhash=nhash, b=b, nflip=k // nhash)
        if layout.lookups() > MAX_LOOKUPS and nhash <= k:
            continue
        if best is None or layout.cost(n) < best.cost(n):
            best = layout
    assert best is not None  # nhash = min(k + 1, 16) needs at most a few hundred probes
    return best
