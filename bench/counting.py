"""Counting after ``cut``: the tokenizer's two formulations (``recengine.text.words.vocabulary``)
beside bare rjieba on the same texts, in one process, alternated.

Usage::

    python -m bench.counting [--corpus long|long-mix] [--mb 55] [--rounds 4] [--batch 1000]

Rows (CPU seconds of this thread, ``time.thread_time``; medians of ``--rounds``, each round runs
every row once in turn, so a slow phase of the shared host touches all of them):

* bare rjieba ``cut`` (HMM off) of the cleaned texts: the floor;
* ``Tokenizer.count_many`` in batches of ``--batch`` texts with the Python path (``Counter``
  and dictionary look-ups) and with the compiled path, each **cold** (a tokenizer new in the
  round, built before the clock starts: every raw word's filter runs once, as in a new
  process) and **warm** (one tokenizer that met every word already: as in the later batches
  of a long reindex).

The compiled path's numba load is not in these figures (it is loaded before the first round);
it costs ~0.5 s once per process, which the rental only pays after ~2 million words.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.cli_run import corpus
from recengine.config import TokenizerSettings
from recengine.pipeline.featurize import text_of
from recengine.text.words.tokenize import Tokenizer, build_tokenizer
from recengine.text.words.vocabulary import COUNTING


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="long", choices=["long", "real", "long-mix"])
    parser.add_argument("--mb", type=float, default=55.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1_000)
    args = parser.parse_args()

    import rjieba

    docs = corpus(args.corpus, args.mb)
    texts = [text_of(d.title, d.content) for d in docs]
    batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
    mb = sum(d.nbytes for d in docs) / 1e6
    print(f"{args.corpus}: {len(texts)} texts, {mb:.1f} MB; load {os.getloadavg()[0]:.2f}")
    bare = rjieba.Jieba()
    bare.cut("预热", False)
    COUNTING.buy()

    def counted(compiled: bool, tokenizer: Tokenizer) -> None:
        with COUNTING.forced(compiled):
            for batch in batches:
                tokenizer.count_many(batch)

    warm = {False: build_tokenizer(TokenizerSettings()), True: build_tokenizer(TokenizerSettings())}
    for compiled, tokenizer in warm.items():
        counted(compiled, tokenizer)  # the warm tokenizers meet every word once first
    names = ["bare rjieba cut"] + [
        f"count_many, {'compiled' if c else 'Python'}, {w}"
        for w in ("cold", "warm")
        for c in (False, True)
    ]
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        cold = {c: build_tokenizer(TokenizerSettings()) for c in (False, True)}  # not timed
        for name in names:
            start = time.thread_time()
            if name == "bare rjieba cut":
                for text in texts:
                    bare.cut(text, False)
            else:
                compiled = "compiled" in name
                counted(compiled, (cold if "cold" in name else warm)[compiled])
            seconds[name].append(time.thread_time() - start)
    floor = statistics.median(seconds["bare rjieba cut"])
    print(f"\n{'row':<30} {'CPU s (median)':>15} {'x bare cut':>11}  all rounds")
    for name, values in seconds.items():
        median = statistics.median(values)
        rounds = " ".join(f"{v:.2f}" for v in values)
        print(f"{name:<30} {median:>15.2f} {median / floor:>11.2f}  {rounds}")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
