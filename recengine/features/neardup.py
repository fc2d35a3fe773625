"""The near-duplicate criterion, in one place: are two articles the same article?

Candidates come from two sources (``recengine.index``): fingerprints within Hamming distance
``k`` (``features.hamming_k``; a weighted simhash bit differs with probability ``angle / pi``
of the two weight vectors, Charikar 2002), which finds whole-article reposts fast, and shared
passage hashes (``recengine.text.neardup.passages``), which finds partial copies (excerpts, digests)
that lie far away in simhash space. Then the **verification** decides, on the two texts'
5-character shingles (:class:`recengine.text.neardup.compare.Compared`: title + body, quoted reply
text removed). With ``S_a, S_b`` the shingle sets, ``common = |S_a & S_b|``:

* **resemblance** ``common / |S_a | S_b| >= min_resemblance`` (0.45; Broder 1997): a repost
  with a header, a footer, typos, reordered paragraphs or 10-20% of its sentences changed;
* or **containment**: ``common / min(|S_a|, |S_b|) >= min_containment`` (0.8) *and*
  ``common / max(|S_a|, |S_b|) >= min_coverage`` (0.35): the smaller text lies (nearly) whole
  inside the larger and is a large enough share of it. An excerpt of 50-70% of an article has
  resemblance 0.5-0.7 of what it should (below 0.5 often) but containment ~1 and coverage
  0.5-0.7; a digest (post + a short unrelated piece) coverage 0.67-0.83; a short article quoted
  inside a long one containment ~1 but coverage under 0.2, so it is *not* a duplicate: the floor
  on coverage is what tells a partial copy from a quote. Both measures are symmetric in a, b.
* **junk rule**: when either body has fewer than ``min_body_chars`` (100) word characters
  (not counting web addresses: ``text.neardup.compare``), the titles must agree as well (the smaller
  title's shingles ``>= min_title_containment`` (0.6) inside the other's; templated titles of
  different articles, "Netty常见面试题总结(付费)" / "SpringBoot常见面试题总结(付费)", share 0.5).
  Pages whose body is near-empty or only site chrome (redirect
  notices, "特别声明..." footers, forum navigation) otherwise pair up with any page of the same
  site whatever their titles; among the real inews records, 51 of the 84 verified pairs with a
  body under 100 characters had unrelated titles and were such pages (BENCHMARKS.md).

Measured on real text with planted reposts of 13 kinds (BENCHMARKS.md "Near-duplicate
quality", held-out seed): see there for the figures; the thresholds were chosen on seeds 11
and 23 among resemblance 0.4-0.5, containment 0.6-0.9 and coverage 0.2-0.4.

Callers that have only the stored vectors (related-article suppression of articles whose
texts are not at hand) get the vectors' cosine ``>= min_cosine`` (0.93) within the radius.

:meth:`NearDupCriterion.decide` is the one decision on texts, and every caller goes through
it: the clusters of ingest, reindex and the Spark engine (``pipeline.clusters.verify``,
``pipeline.clusters.leader_rule``) and the suppression of copies in related lists through
:meth:`NearDupCriterion.verify` (its verdict on duplicates only, which lets a pair that fails
stop counting early); the duplicates API through :meth:`NearDupCriterion.judge`, which adds
the vectors' cosine and shared terms they show (and decides on the cosine when texts are
missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from recengine.config import Settings
from recengine.features.simhash import hamming
from recengine.features.tfidf import SparseVector
from recengine.rental import Rental

SHOWN_TERMS = 10
U64 = npt.NDArray[np.uint64]


class Compared(Protocol):
    """What the decision reads of one text (``recengine.text.neardup.compare.Compared`` has it; the
    layers keep ``features`` from importing ``text``).

    Attributes:
        shingles: ``uint64 (n,)`` sorted distinct shingle hashes of title + unquoted body.
        title: ``uint64 (t,)`` shingle hashes of the title.
        body_chars: word characters of the unquoted body.
    """

    @property
    def shingles(self) -> npt.NDArray[np.uint64]: ...

    @property
    def title(self) -> npt.NDArray[np.uint64]: ...

    @property
    def body_chars(self) -> int: ...


@dataclass(frozen=True)
class Verdict:
    """Why two articles are, or are not, near-duplicates.

    Attributes:
        duplicate: the criterion holds.
        distance: Hamming distance of the fingerprints (0..64).
        score: the figure of the rule that decided (or would have come closest): the
            resemblance or the containment when texts were given, otherwise the cosine.
        cosine: cosine of the TF-IDF vectors, 0 when either is empty.
        resemblance: Jaccard index of the shingle sets, None when not given.
        shared_terms: the terms contributing most to the cosine, largest first (at most 10).
        rule: which rule matched: ``"resemblance"``, ``"containment"``, ``"cosine"``, or
            ``""`` when none did.
        containment: share of the smaller text inside the larger, None without texts.
        coverage: share of the larger text it covers, None without texts.
    """

    duplicate: bool
    distance: int
    score: float
    cosine: float
    resemblance: float | None
    shared_terms: tuple[str, ...]
    rule: str = ""
    containment: float | None = None
    coverage: float | None = None


@dataclass(frozen=True)
class Decision:
    """The decision on two texts alone (:meth:`NearDupCriterion.decide`): a :class:`Verdict`
    without the vectors' cosine and shared terms, which no rule on texts reads. What builds
    a cluster edge needs only this; computing the cosine too cost a third of a verification of
    long articles (``np.intersect1d`` of two vectors)."""

    duplicate: bool
    distance: int
    score: float
    resemblance: float
    rule: str
    containment: float
    coverage: float


def cosine(a: SparseVector, b: SparseVector) -> tuple[float, tuple[str, ...]]:
    """Cosine of two unit vectors and their shared terms by contribution (largest first)."""
    if not len(a) or not len(b):
        return 0.0, ()
    common, ia, ib = np.intersect1d(a.hashes, b.hashes, assume_unique=True, return_indices=True)
    if not len(common):
        return 0.0, ()
    products = a.weights[ia].astype(np.float64) * b.weights[ib]
    order = np.argsort(-products, kind="stable")[:SHOWN_TERMS]
    score = float(min(1.0, products.sum()))
    return score, tuple(a.terms[i] for i in ia[order].tolist())


class NearDupCriterion:
    """Whether two articles are near-duplicates (see the module docstring).

    Args:
        k: candidate radius in bits, ``0 <= k < 64``.
        min_cosine: vectors-only threshold on the cosine, in ``[0, 1]``.
        min_resemblance: threshold on the shingles' Jaccard index, in ``(0, 1]``.
        min_containment: share of the smaller text inside the larger, in ``(0, 1]``.
        min_coverage: share of the larger text the smaller covers, in ``(0, 1]``.
        min_body_chars: below this many body characters the titles must agree.
        min_title_containment: how much of the smaller title the other must contain.

    Raises:
        ValueError: a parameter is out of range.

    Example:
        >>> from recengine.features.tfidf import EMPTY_VECTOR
        >>> from recengine.text.neardup.compare import compared
        >>> c = NearDupCriterion(k=8, min_cosine=0.9, min_body_chars=0)
        >>> post = "某市发布新的交通管理办法。对电动自行车的登记作出规定。违规者将被处罚。"
        >>> v = c.judge(0, EMPTY_VECTOR, 0, EMPTY_VECTOR,
        ...             compared("", post), compared("", post[:16]))
        >>> v.duplicate, v.rule, round(v.score, 2), round(v.resemblance, 2)
        (True, 'containment', 1.0, 0.39)
    """

    def __init__(
        self,
        k: int,
        min_cosine: float,
        min_resemblance: float = 0.45,
        min_containment: float = 0.8,
        min_coverage: float = 0.35,
        min_body_chars: int = 100,
        min_title_containment: float = 0.6,
    ) -> None:
        if not 0 <= k < 64:
            raise ValueError(f"k must be in [0, 63], got {k}")
        if not 0.0 <= min_cosine <= 1.0:
            raise ValueError(f"min_cosine must be in [0, 1], got {min_cosine}")
        for name, value in (
            ("min_resemblance", min_resemblance),
            ("min_containment", min_containment),
            ("min_coverage", min_coverage),
            ("min_title_containment", min_title_containment),
        ):
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        if min_body_chars < 0:
            raise ValueError(f"min_body_chars must be >= 0, got {min_body_chars}")
        self.k = k
        self.min_cosine = min_cosine
        self.min_resemblance = min_resemblance
        self.min_containment = min_containment
        self.min_coverage = min_coverage
        self.min_body_chars = min_body_chars
        self.min_title_containment = min_title_containment

    @classmethod
    def from_settings(cls, settings: Settings) -> NearDupCriterion:
        n = settings.neardup
        return cls(
            settings.features.hamming_k,
            n.min_cosine,
            n.min_resemblance,
            n.min_containment,
            n.min_coverage,
            n.min_body_chars,
            n.min_title_containment,
        )

    def params(self) -> tuple[int, float, float, float, float, int, float]:
        """The constructor's arguments, in order (to rebuild the criterion elsewhere, e.g. on
        Spark executors)."""
        return (
            self.k,
            self.min_cosine,
            self.min_resemblance,
            self.min_containment,
            self.min_coverage,
            self.min_body_chars,
            self.min_title_containment,
        )

    def judge(
        self,
        fp_a: int,
        vector_a: SparseVector,
        fp_b: int,
        vector_b: SparseVector,
        text_a: Compared | None = None,
        text_b: Compared | None = None,
    ) -> Verdict:
        """The verdict on two articles.

        Args:
            fp_a, fp_b: unsigned 64-bit fingerprints.
            vector_a, vector_b: their TF-IDF vectors (same model version as the fingerprints).
            text_a, text_b: what the decision compares of each text
                (``Featurizer.compared``); when both are given they decide, at any
                distance; otherwise the cosine decides, within the radius.
        """
        cos, shared = cosine(vector_a, vector_b)
        if text_a is None or text_b is None:
            distance = hamming(int(fp_a), int(fp_b))
            passed = distance <= self.k and cos >= self.min_cosine and len(shared) > 0
            return Verdict(passed, distance, cos, cos, None, shared, "cosine" if passed else "")
        d = self.decide(fp_a, fp_b, text_a, text_b)
        return Verdict(
            d.duplicate,
            d.distance,
            d.score,
            cos,
            d.resemblance,
            shared,
            d.rule,
            d.containment,
            d.coverage,
        )

    def decide(self, fp_a: int, fp_b: int, text_a: Compared, text_b: Compared) -> Decision:
        """:meth:`judge` on the texts, without the vectors: the same decision, distance and
        score (the texts decide whenever both are given)."""
        common, small, large = overlap(text_a.shingles, text_b.shingles)
        return self._decision(hamming(int(fp_a), int(fp_b)), common, small, large, text_a, text_b)

    def verify(self, fp_a: int, fp_b: int, text_a: Compared, text_b: Compared) -> Decision | None:
        """:meth:`decide` when the pair is a duplicate, None when it is not: the same verdict
        for what builds clusters and suppresses copies, which reads nothing of a pair that
        fails. Cheaper for the pairs that fail (nearly all the candidates a verification is
        given): texts whose sizes no shared count could make pass are not compared at all
        (the larger over ~2.9x the smaller, at the default thresholds), and the count of the
        others stops once it cannot reach :meth:`needed`."""
        small, large = sorted((len(text_a.shingles), len(text_b.shingles)))
        need = self.needed(small, large)
        if need > small:
            return None
        common, _, _ = overlap(text_a.shingles, text_b.shingles, need)
        if common < need:
            return None
        d = self._decision(hamming(int(fp_a), int(fp_b)), common, small, large, text_a, text_b)
        return d if d.duplicate else None

    def needed(self, small: int, large: int) -> int:
        """The fewest shared shingles with which texts of ``small <= large`` shingles pass a
        rule (resemblance, or containment with coverage; the junk rule may still refuse them),
        ``small + 1`` when no count does. Found with the very comparisons :meth:`decide`
        makes (each grows with the count), so that a count below it fails there too."""
        if not small or not self._passes(small, small, large):
            return small + 1
        r, c, v = self.min_resemblance, self.min_containment, self.min_coverage
        guess = min(r * (small + large) / (1 + r), max(c * small, v * large))
        need = min(small, max(0, int(guess)))
        while need > 0 and self._passes(need - 1, small, large):
            need -= 1
        while not self._passes(need, small, large):
            need += 1
        return need

    def _passes(self, common: int, small: int, large: int) -> bool:
        """Whether ``common`` shared shingles of texts of ``small <= large`` shingles pass a
        rule (before the junk rule)."""
        return bool(self._rule(*_measures(common, small, large)))

    def _rule(self, res: float, cont: float, cover: float) -> str:
        """The rule that resemblance ``res``, containment ``cont`` and coverage ``cover``
        pass, ``""`` for none: the one place the thresholds are compared."""
        if res >= self.min_resemblance:
            return "resemblance"
        if cont >= self.min_containment and cover >= self.min_coverage:
            return "containment"
        return ""

    def _decision(
        self, distance: int, common: int, small: int, large: int, a: Compared, b: Compared
    ) -> Decision:
        res, cont, cover = _measures(common, small, large)
        rule = self._rule(res, cont, cover)
        if rule and not self._bodies_speak(a, b):
            rule = ""
        score = cont if rule == "containment" else res
        return Decision(bool(rule), distance, score, res, rule, cont, cover)

    def _bodies_speak(self, a: Compared, b: Compared) -> bool:
        """The junk rule: a body too short to tell articles apart needs agreeing titles."""
        if min(a.body_chars, b.body_chars) >= self.min_body_chars:
            return True
        common, small, _ = overlap(a.title, b.title)
        return small > 0 and common / small >= self.min_title_containment


def _measures(common: int, small: int, large: int) -> tuple[float, float, float]:
    """Resemblance, containment and coverage of texts of ``small <= large`` shingles sharing
    ``common`` (0 for an empty text)."""
    res = common / (small + large - common) if small else 0.0
    cont = common / small if small else 0.0
    cover = common / large if large else 0.0
    return res, cont, cover


_MERGED = 64  # smaller sets than this are looked up (no call into compiled code)
_SPARSE = 16  # one set this many times smaller than the other: looked up too
# The compiled count of shared hashes (``features.merge_kernel``), ~3x faster than the look-ups
# on long texts for the same counts (42 against 138 us for sets of 5,600 and 11,300 hashes:
# ~25 ns per hash of the smaller set looked up). Loading numba costs ~0.5 s, what ~20 million
# looked-up hashes cost: a process that verifies many pairs of long articles (a bulk ingest)
# buys it after its first few thousand verifications (:mod:`recengine.rental`); the leader pass
# of a reindex or recluster (``pipeline.clusters.upkeep``), which loads numba for its table walks
# anyway, buys it at once.
MERGE = Rental("recengine.features.merge_kernel", price=20_000_000, at_once=20_000_000)


def overlap(a: U64, b: U64, need: int = 0) -> tuple[int, int, int]:
    """``(|a & b|, min(|a|, |b|), max(|a|, |b|))`` of two sorted arrays of distinct hashes.
    With ``need``, the first is exact only when it is ``>= need``, and otherwise some count
    below it (the compiled merge stops early: ``merge_kernel.shared_count``)."""
    if len(a) > len(b):
        a, b = b, a
    if not len(a):
        return 0, 0, len(b)
    if len(a) >= _MERGED and len(b) < _SPARSE * len(a):
        kernels = MERGE.kernels(len(a))
        if kernels is not None:
            return int(kernels.shared_count(a, b, need)), len(a), len(b)
    # Both sorted and distinct: look each of the smaller set up in the larger (no re-sort).
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    return int(np.count_nonzero(b[at] == a)), len(a), len(b)


def resemblance(a: U64, b: U64) -> float:
    """Jaccard index ``|a & b| / |a | b|`` of two shingle sets, each a sorted array of distinct
    hashes (``recengine.text.neardup.shingles.shingles``); 0 when either is empty."""
    common, small, large = overlap(a, b)
    return common / (small + large - common) if small else 0.0
