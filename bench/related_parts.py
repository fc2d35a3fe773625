"""Each part of the related-articles ranking measured on its own (the ablation of issue 15).

Exact whole-corpus rankings in memory (no index, no suppression: what each *scoring* gives),
on the labelled real corpora of ../shared/data. Every article is a query; the queries are
split in two halves by a seeded hash of their id: the choices were made on the half of seed
11 ("tuning"), the other half ("held out") was only looked at for the report. Both halves
rank against the whole corpus.

Rows (precision@10 of "same category / shared tag"):

* exact cosine: the stored vectors as shipped before issue 15 (sublinear TF-IDF, 128 terms);
* + title x B: title term counts weigh B times (the title is counted B times in all);
* + corpus stop-terms: terms in more than ``S`` of the corpus's documents dropped;
* + new words: words discovered on the corpus (``text.words.newwords``) added to the tokenizer;
* + dense (LSA a, d): ``(1 - a) * sparse cosine + a * LSA cosine``, LSA = truncated SVD of the
  TF-IDF matrix to ``d`` dimensions, rows L2-normalised;
* BM25 MLT: BM25 over all terms with the article's top 25 TF-IDF terms as the query.

Usage: ``python -m bench.related_parts [--only csl-papers] [--half tuning|held-out|all]``
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.corpus import Doc
from bench.related_common import bm25_mlt, labelled, related
from recengine.config import load_settings
from recengine.features.tfidf import TfidfVectorizer, fit_idf
from recengine.pipeline.featurize import Featurizer, text_of
from recengine.text.cleaning.clean import clean

K = 10
SEED = 11


def half_of(doc_id: str, seed: int = SEED) -> str:
    """ "tuning" or "held-out", by a hash of the id and the seed (stable across runs)."""
    h = hashlib.sha256(f"{seed}:{doc_id}".encode()).digest()[0]
    return "tuning" if h % 2 == 0 else "held-out"


@dataclass
class Analysed:
    """Per document: term counts of the title and of the whole text (title + body)."""

    title: list[dict[str, int]]
    text: list[dict[str, int]]


def analyse(docs: Sequence[Doc], featurizer: Featurizer) -> Analysed:
    tok = featurizer.tokenizer
    return Analysed(
        [tok.term_counts(clean(d.title)) for d in docs],
        [featurizer.analyze(d.title, d.content).counts for d in docs],
    )


def combine(a: Analysed, title_boost: float) -> list[dict[str, float]]:
    """Counts where each title occurrence counts ``title_boost`` times (1 = as today)."""
    out = []
    for title, text in zip(a.title, a.text, strict=True):
        c: dict[str, float] = dict(text)
        for t, n in title.items():
            c[t] = c.get(t, 0) + (title_boost - 1) * n
        out.append(c)
    return out


def tfidf_matrix(
    counts: list[dict[str, float]], max_terms: int = 128, max_df: float = 1.0
) -> sp.csr_matrix:
    """Rows = L2-normalised sublinear TF-IDF (the stored vectors' formula), over a shared
    vocabulary; terms in more than ``max_df`` of the documents dropped first."""
    model = fit_idf(counts)
    limit = max_df * model.n_docs
    if max_df < 1.0:
        counts = [{t: n for t, n in c.items() if model.df[t] <= limit} for c in counts]
    vec = TfidfVectorizer(model, max_terms, sublinear_tf=True)
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for i, c in enumerate(counts):
        v = vec.transform(c)  # type: ignore[arg-type]
        for t, w in zip(v.terms, v.weights.tolist(), strict=True):
            rows.append(i)
            cols.append(vocab.setdefault(t, len(vocab)))
            vals.append(w)
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(counts), len(vocab)), dtype=np.float64)


def new_words_matrix(docs: Sequence[Doc], settings: Any) -> sp.csr_matrix:
    """The TF-IDF matrix with the words discovered on these texts, as a reindex with
    ``tokenizer.new_words`` finds and uses them (``pipeline.reindex.new_words.words_in``)."""
    from recengine.pipeline.reindex.new_words import words_in
    from recengine.text.words.newwords import DiscoveryParams

    featurizer = Featurizer(settings)
    texts = [text_of(d.title, d.content) for d in docs]
    words = words_in(texts, featurizer.tokenizer_for(()), DiscoveryParams())
    featurizer.use_words(words)
    print(f"  ({len(words)} new words: {' '.join(words[:15])} ...)")
    return tfidf_matrix(combine(analyse(docs, featurizer), 1))


def product_lsa(counts: list[dict[str, float]], dims: int) -> np.ndarray[Any, Any]:
    """Dense vectors of ``recengine.features.lsa`` fitted on the stored vectors' formula."""
    from recengine.features.lsa import fit_lsa

    vec = TfidfVectorizer(fit_idf(counts), 128, sublinear_tf=True)
    vectors = [vec.transform(c) for c in counts]  # type: ignore[arg-type]
    hashes = [v.hashes for v in vectors]
    weights = [v.weights for v in vectors]
    model = fit_lsa(hashes, weights, min(dims, len(counts) - 1))
    return model.project(hashes, weights).astype(np.float64)


def lsa(x: sp.csr_matrix, dims: int, seed: int = 0) -> np.ndarray[Any, Any]:
    """Truncated SVD (``scipy.sparse.linalg.svds``) rows ``U * S``, L2-normalised."""
    from scipy.sparse.linalg import svds

    d = min(dims, min(x.shape) - 1)
    rng = np.random.default_rng(seed)
    u, s, _ = svds(x, k=d, v0=rng.standard_normal(min(x.shape)))
    z = u * s
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return np.asarray(z / np.where(norms == 0, 1, norms))


def cos_prf(x: sp.csr_matrix, s: np.ndarray[Any, Any], m: int, beta: float) -> np.ndarray[Any, Any]:
    """Rocchio feedback: each query vector plus ``beta`` x the mean of its ``m`` nearest rows."""
    s = s.copy()
    np.fill_diagonal(s, -np.inf)
    top = np.argsort(-s, axis=1, kind="stable")[:, :m]
    n = x.shape[0]
    w = sp.csr_matrix(
        (np.full(n * m, beta / m), top.ravel(), np.arange(0, n * m + 1, m)), shape=(n, n)
    )
    q = x + w @ x
    norms = np.sqrt(np.asarray(q.multiply(q).sum(axis=1))).ravel()
    q = sp.diags(1 / np.where(norms == 0, 1, norms)) @ q
    return np.asarray((q @ x.T).toarray())


def tag_overlap(docs: Sequence[Doc]) -> np.ndarray[Any, Any]:
    """Jaccard of the tag sets."""
    sets = [set(d.tags) for d in docs]
    out = np.zeros((len(docs), len(docs)))
    for i, a in enumerate(sets):
        if a:
            for j, b in enumerate(sets):
                if b and (a & b):
                    out[i, j] = len(a & b) / len(a | b)
    return out


def precision(scores: np.ndarray[Any, Any], docs: Sequence[Doc], queries: list[int]) -> float:
    hits = []
    for i in queries:
        s = scores[i].copy()
        s[i] = -np.inf
        top = np.lexsort((np.arange(len(s)), -s))[:K]
        hits.append(sum(related(docs[i], docs[j]) for j in top if s[j] > 0) / K)
    return float(np.mean(hits))


def list_precision(lists: list[list[int]], docs: Sequence[Doc], queries: list[int]) -> float:
    return float(
        np.mean([sum(related(docs[i], docs[j]) for j in lists[i][:K]) / K for i in queries])
    )


def run(name: str, docs: list[Doc], halves: list[str], args: argparse.Namespace) -> None:
    settings = load_settings()
    t0 = time.perf_counter()
    base = analyse(docs, Featurizer(settings))
    qs = {h: [i for i, d in enumerate(docs) if half_of(d.id) == h] for h in ("tuning", "held-out")}
    qs["all"] = list(range(len(docs)))
    rows: list[tuple[str, Callable[[], np.ndarray[Any, Any]]]] = []

    def cos(x: sp.csr_matrix) -> np.ndarray[Any, Any]:
        return np.asarray((x @ x.T).toarray())

    x0 = tfidf_matrix(combine(base, 1))
    s0 = cos(x0)
    rows.append(("exact cosine (shipped vectors)", lambda: s0))
    for b in args.title_boosts:
        rows.append((f"+ title x {b:g}", lambda b=b: cos(tfidf_matrix(combine(base, b)))))
    for m in args.max_df:
        rows.append(
            (
                f"+ stop-terms (df > {m:g} dropped)",
                lambda m=m: cos(tfidf_matrix(combine(base, 1), max_df=m)),
            )
        )
    for dims in args.dims:
        z = lsa(x0, dims)
        dense = z @ z.T
        rows.append((f"LSA alone d={dims}", lambda dense=dense: dense))
        for a in args.alphas:
            rows.append(
                (f"+ dense a={a:g} d={dims}", lambda a=a, dense=dense: (1 - a) * s0 + a * dense)
            )
    if args.new_words:
        xw = new_words_matrix(docs, settings)
        rows.append(("+ new words", lambda: cos(xw)))
    for dims, a in args.lsa:
        zl = product_lsa(combine(base, 1), int(dims))
        dl = zl @ zl.T
        rows.append((f"LSA (features.lsa) alone d={dims:g}", lambda dl=dl: dl))
        rows.append(
            (f"+ dense (features.lsa) a={a:g} d={dims:g}", lambda a=a, dl=dl: (1 - a) * s0 + a * dl)
        )
    for m, beta in args.prf:
        rows.append(
            (
                f"+ feedback (top {m:g}, beta {beta:g})",
                lambda m=int(m), beta=beta: cos_prf(x0, s0, m, beta),
            )
        )
    for dims, a, m, beta in args.combo:
        z = lsa(x0, int(dims))
        dz = z @ z.T
        rows.append(
            (
                f"+ feedback {m:g}/{beta:g} + dense a={a:g} d={dims:g}",
                lambda a=a, dz=dz, m=int(m), beta=beta: (
                    (1 - a) * cos_prf(x0, (1 - a) * s0 + a * dz, m, beta) + a * dz
                ),
            )
        )
    for g in args.tag_prior:
        rows.append((f"+ tag prior {g:g}", lambda g=g: s0 + g * tag_overlap(docs)))
    print(
        f"\n{name}: {len(docs)} articles, queries tuning {len(qs['tuning'])} / held-out "
        f"{len(qs['held-out'])}; analysed in {time.perf_counter() - t0:.1f} s"
    )
    print(f"  {'method':<40}" + "".join(f"{h:>10}" for h in halves))
    for label, scores_of in rows:
        s = scores_of()
        print(f"  {label:<40}" + "".join(f"{precision(s, docs, qs[h]):>10.4f}" for h in halves))
    if args.floors:
        print(f"  relevance floor on exact cosine ({args.floors} queries)")
        floor_table(s0, docs, qs[args.floors])
    model = fit_idf(base.text)
    mlt = TfidfVectorizer(model, 25, sublinear_tf=True)
    top25 = [list(mlt.transform(c).terms) for c in base.text]
    bm = bm25_mlt(base.text, top25, K)
    print(
        f"  {'BM25 MLT (top 25 terms)':<40}"
        + "".join(f"{list_precision(bm, docs, qs[h]):>10.4f}" for h in halves)
    )


def floor_table(scores: np.ndarray[Any, Any], docs: Sequence[Doc], queries: list[int]) -> None:
    """What a relevance floor drops from the top 10: absolute ``score >= f`` and relative
    ``score >= r * best``. "p dropped" is the share of dropped items that are relevant (low is
    good: the floor removes junk), "p shown" the share of shown items that are."""
    tops = []
    for i in queries:
        s = scores[i].copy()
        s[i] = -np.inf
        top = [j for j in np.lexsort((np.arange(len(s)), -s))[:K] if s[j] > 0]
        tops.append((i, [(float(s[j]), related(docs[i], docs[j])) for j in top]))
    print(
        f"  {'floor':<16} {'mean shown':>10} {'dropped':>8} {'p dropped':>10} {'p shown':>8} "
        f"{'p@10':>7} {'empty lists':>11}"
    )
    rules: list[tuple[str, Callable[[float, float], bool]]] = [("none", lambda s, b: True)]
    rules += [
        (f"score >= {f:g}", lambda s, b, f=f: s >= f) for f in (0.02, 0.04, 0.06, 0.08, 0.1, 0.15)
    ]
    rules += [
        (f"score >= {r:g} x best", lambda s, b, r=r: s >= r * b) for r in (0.2, 0.3, 0.4, 0.5)
    ]
    for label, ok in rules:
        shown = dropped = hit_shown = hit_dropped = empty = 0
        for _, top in tops:
            best = top[0][0] if top else 0.0
            kept = [rel for sc, rel in top if ok(sc, best)]
            gone = [rel for sc, rel in top if not ok(sc, best)]
            shown += len(kept)
            dropped += len(gone)
            hit_shown += sum(kept)
            hit_dropped += sum(gone)
            empty += not kept
        n = len(tops)
        print(
            f"  {label:<16} {shown / n:>10.2f} {dropped / n:>8.2f} "
            f"{hit_dropped / max(dropped, 1):>10.3f} {hit_shown / max(shown, 1):>8.3f} "
            f"{hit_shown / n / K:>7.4f} {empty:>11}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default=None)
    p.add_argument("--half", default="tuning,held-out,all")
    p.add_argument("--title-boosts", type=float, nargs="*", default=[2, 3, 4])
    p.add_argument("--max-df", type=float, nargs="*", default=[0.5, 0.3])
    p.add_argument("--dims", type=int, nargs="*", default=[128])
    p.add_argument("--alphas", type=float, nargs="*", default=[0.2, 0.4])
    p.add_argument("--prf", type=float, nargs=2, action="append", default=[])
    p.add_argument("--floors", default="", help="tuning|held-out|all: the floor table")
    p.add_argument("--new-words", action="store_true", help="rows with discovered words")
    p.add_argument("--lsa", type=float, nargs=2, action="append", default=[])
    p.add_argument("--combo", type=float, nargs=4, action="append", default=[])
    p.add_argument("--tag-prior", type=float, nargs="*", default=[])
    args = p.parse_args()
    halves = args.half.split(",")
    for name, docs in labelled().items():
        if args.only in (None, name):
            run(name, docs, halves, args)


if __name__ == "__main__":
    main()
