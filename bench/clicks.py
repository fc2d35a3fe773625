"""A click simulator: what readers' signals do to a site's clicks, coverage and new articles.

Readers with a known interest read a real labelled corpus (``bench.related_common.labelled``:
csl-papers 2,000 abstracts in 13 categories, javaguide 429 articles in 25) and click its
related lists, served by the product itself (``RelatedArticles``, on a SQLite copy of one
indexed database per arm); their clicks go through the feedback counter
(``FeedbackCounter.commit``) and their reads through the feeds' event recorder, and the
signals' summaries refresh every simulated hour (their clock is the simulation's).

**The world** (seeded; ``--seed``):

* ``--readers`` readers, each interested in one category (drawn by category size);
* each article has an *appeal* ``a`` (log-normal, ``--appeal-sigma``, mean 1: titles and topics
  some readers click more than others; 0: every article equal) and a popularity (Zipf,
  exponent 0.8, over a random order: how often a page is a landing page);
* a visit: a reader lands on an article of their category (``--on-topic``, by popularity) or
  on any article (by popularity), reads it, and sees its related list (k = 10, the reader's
  id as the split key): one impression per slot;
* **the position-bias model** (stated): the reader looks at slot ``j`` (0-based) with
  probability ``e(j) = (1 + j) ** -eta`` (``--eta``, 1.0: examination falls as 1 / rank, the
  shape eye-tracking studies of ranked lists report, Joachims et al. 2005); a looked-at item is
  clicked with probability ``min(1, a * rho)``, ``rho = 0.12`` when the item's category is the
  reader's interest and ``0.01`` otherwise; a click is a read too;
* ``--days`` days of ``--impressions`` impressions in all, spread evenly over the hours;
* at 30 % of the run a *new article* arrives: a held-out real article (never ingested before)
  with the appeal of the corpus's 90th percentile.

**Figures** per arm (content only; + engagement; + co-reads; + exploration; all three):
CTR (clicks / impressions) over the run and over its second half; the share of the corpus's
articles ever shown; the impressions the new article received until it stood in the top 3 of
one of its *probe* lists (checked every simulated hour), and of at least half of them ("-":
not within the run); its probe lists are the articles of its category whose content-only
list ranks it 4th to 10th (relevant, but not in the top 3 by its text); the thread CPU of a
list (p50 / p99; the machine's other load included).

Usage: ``python -m bench.clicks [--corpus csl-papers] [--seed 11] [--arms all]
[--impressions 100000] [--engagement 0.5 --coread 0.3 --explore 0.1]``
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import Doc
from bench.related_common import labelled
from bench.store import sqlite_store
from recengine.config import Settings, load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.feedback import CLICK, IMPRESSION, Event, FeedbackCounter
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.recommend.signals.scoring import Signals
from recengine.storage.db import make_engine, make_session_factory

K = 10
RHO_RELATED, RHO_OTHER = 0.12, 0.01
ZIPF = 0.8
NEW_AT = 0.3  # share of the run after which the new article arrives
HELD_BACK = 40  # articles kept out of the database, candidates for the new article


@dataclass
class World:
    """The simulated readers and articles (see the module docstring)."""

    docs: list[Doc]  # in the database from the start
    held: list[Doc]  # kept out: the new article is one of them (choose_new)
    appeal: dict[str, float]
    popularity: np.ndarray  # per doc of ``docs``
    interests: list[str]  # per reader: a category
    rng: np.random.Generator
    new: Doc | None = None
    probes: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, corpus: list[Doc], args: argparse.Namespace) -> World:
        rng = np.random.default_rng(args.seed)
        order = rng.permutation(len(corpus))
        held = [corpus[i] for i in order[:HELD_BACK]]
        docs = [corpus[i] for i in sorted(order[HELD_BACK:])]
        sigma = args.appeal_sigma
        draws = rng.lognormal(-sigma * sigma / 2, sigma, len(corpus)) if sigma else None
        appeal = {d.id: float(draws[i]) if draws is not None else 1.0 for i, d in enumerate(corpus)}
        ranks = rng.permutation(len(docs)) + 1
        popularity = ranks.astype(np.float64) ** -ZIPF
        sizes: dict[str, int] = {}
        for d in docs:
            sizes[d.category or ""] = sizes.get(d.category or "", 0) + 1
        names = sorted(sizes)
        shares = np.array([sizes[n] for n in names], np.float64) / len(docs)
        interests = [names[i] for i in rng.choice(len(names), args.readers, p=shares)]
        return cls(docs, held, appeal, popularity, interests, rng)

    def choose_new(self, base: Path, probes: int) -> None:
        """The new article: of the held-back ones, the one ranked 4th to 10th by its text in
        the most lists of its own category (its *probes*: relevant there, not top 3), given
        the appeal of the corpus's 90th percentile."""
        best: tuple[int, Doc, list[str]] | None = None
        with tempfile.TemporaryDirectory(prefix="recengine-clicks-new-") as tmp:
            folder = Path(tmp)
            shutil.copy(base / "base.db", folder / "base.db")
            settings = arm_settings(folder, arm_weights("content", None), None)
            engine = make_engine(settings.resolved_database_url)
            factory = make_session_factory(engine)
            Ingester(factory, Featurizer(settings)).ingest_records(d.record() for d in self.held)
            related = RelatedArticles(settings, LiveIndex(settings, factory, background=False))
            category = {d.id: d.category for d in self.docs}
            for held in self.held:
                near = [i["id"] for i in _list(related, factory, held.id, 30, min_score=0)]
                mine = [i for i in near if i in category and category[i] == held.category]
                found = []
                for doc in mine[:15]:
                    ids = [i["id"] for i in _list(related, factory, doc, K)]
                    if held.id in ids[3:]:
                        found.append(doc)
                if best is None or len(found) > best[0]:
                    best = (len(found), held, found[:probes])
            engine.dispose()
        assert best is not None
        self.new, self.probes = best[1], best[2]
        self.appeal[self.new.id] = max(float(np.quantile(list(self.appeal.values()), 0.9)), 1.0)

    def landing(self, reader: int, on_topic: float) -> int:
        """The article a reader's visit lands on (an index into ``docs``)."""
        weights = self.popularity
        if self.rng.random() < on_topic:
            mine = np.array([(d.category or "") == self.interests[reader] for d in self.docs])
            weights = weights * mine
        return int(self.rng.choice(len(self.docs), p=weights / weights.sum()))


@dataclass
class Outcome:
    """One arm's figures."""

    name: str
    impressions: int = 0
    clicks: int = 0
    late_impressions: int = 0
    late_clicks: int = 0
    shown: set[str] = field(default_factory=set)
    new_impressions: int = 0
    new_top3_after: int | None = None  # in half the probe lists
    new_top3_first: int | None = None  # in one of them
    probes: int = 0
    seconds: float = 0.0
    cpu_ms: list[float] = field(default_factory=list)  # thread CPU of each list

    @property
    def ctr(self) -> float:
        return self.clicks / max(self.impressions, 1)

    @property
    def late_ctr(self) -> float:
        return self.late_clicks / max(self.late_impressions, 1)


def _list(
    related: RelatedArticles, factory: Any, article: str, k: int, **kw: Any
) -> list[dict[str, Any]]:
    with factory() as session:
        items: list[dict[str, Any]] = related.related(article, session=session, k=k, **kw)["items"]
    return items


def examined(slot: int, eta: float) -> float:
    return float((1.0 + slot) ** -eta)


def base_database(docs: list[Doc], folder: Path) -> None:
    """The corpus ingested and reindexed once; every arm runs on a copy."""
    settings, engine, factory = sqlite_store(folder, "base.db")
    featurizer = Featurizer(settings)
    Ingester(factory, featurizer).ingest_records(d.record() for d in docs)
    reindex(factory=factory, featurizer=featurizer)
    engine.dispose()


def arm_settings(folder: Path, weights: dict[str, float], args: Any) -> Settings:
    """The product's settings for an arm (``args`` None: the shipped signals settings)."""
    if args is None:
        args = argparse.Namespace(product_eta=1.0, prior_strength=50.0)
    return load_settings(
        {
            "data_dir": str(folder),
            "database_url": f"sqlite:///{folder / 'base.db'}",
            "related": weights,
            "signals": {
                "refresh_s": 3600,
                "examination_decay": args.product_eta,
                "prior_strength": args.prior_strength,
            },
        }
    )


class Clock:
    """The simulation's time (the signals' summaries refresh by it)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Visits:
    """The visits of a run, the same for every arm (common random numbers): reader, landing
    article (index into ``World.docs``) and a uniform draw per slot for the clicks."""

    readers: np.ndarray
    landings: np.ndarray
    draws: np.ndarray  # (visits, K)

    @classmethod
    def make(cls, world: World, n: int, on_topic: float) -> Visits:
        readers = world.rng.integers(0, len(world.interests), n)
        landings = np.array([world.landing(int(r), on_topic) for r in readers], np.int64)
        return cls(readers, landings, world.rng.random((n, K)))


def run_arm(
    name: str, weights: dict[str, float], world: World, visits: Visits, base: Path, args: Any
) -> Outcome:
    """One arm on a copy of the base database (see the module docstring)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="recengine-clicks-") as tmp:
        folder = Path(tmp)
        shutil.copy(base / "base.db", folder / "base.db")
        if (base / "index").exists():
            shutil.copytree(base / "index", folder / "index")
        run = _Run(name, arm_settings(folder, weights, args), world, visits, args)
        try:
            run.all_hours()
        finally:
            run.engine.dispose()
    run.out.seconds = time.perf_counter() - started
    return run.out


class _Run:
    def __init__(
        self, name: str, settings: Settings, world: World, visits: Visits, args: Any
    ) -> None:
        self.settings, self.world, self.visits, self.args = settings, world, visits, args
        self.engine = make_engine(settings.resolved_database_url)
        self.factory = make_session_factory(self.engine)
        self.index = LiveIndex(settings, self.factory, background=False)
        self.clock = Clock(
            datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
            - timedelta(days=args.days + 1)
        )
        self.related = RelatedArticles(settings, self.index)
        self.related.signals = Signals(settings, self.clock)
        self.feeds = ReaderFeeds(settings, self.index)
        self.counter = FeedbackCounter(settings, self.factory, self.related.variants.names)
        self.out = Outcome(name)
        self.by_id = {d.id: d for d in world.docs}
        self.probes: list[str] = []
        self.new_in = False

    def all_hours(self) -> None:
        n = len(self.visits.readers)
        hours = self.args.days * 24
        hour_of = (np.arange(n) * hours) // n
        for hour in range(hours):
            self.clock.now += timedelta(hours=1)
            if not self.new_in and hour >= NEW_AT * hours:
                self.arrive()
            events: list[Event] = []
            reads: dict[int, list[str]] = {}
            for v in np.flatnonzero(hour_of == hour):
                self.visit(int(v), bool(v >= n // 2), events, reads)
            self.commit(events, reads)
            if self.new_in and self.out.new_top3_after is None:
                self.check_probes()

    def visit(self, v: int, late: bool, events: list[Event], reads: dict[int, list[str]]) -> None:
        world, reader = self.world, int(self.visits.readers[v])
        source = world.docs[int(self.visits.landings[v])]
        started = time.thread_time()
        with self.factory() as session:
            body = self.related.related(
                source.id, session=session, k=K, split_by=f"reader:{reader}"
            )
        self.out.cpu_ms.append(1e3 * (time.thread_time() - started))
        read = reads.setdefault(reader, [])
        read.append(source.id)
        interest = world.interests[reader]
        for slot, entry in enumerate(body["items"]):
            item = entry["id"]
            doc = self.by_id.get(item) or world.new
            assert doc is not None
            events.append(Event(IMPRESSION, source.id, "default", slot, item))
            self.out.impressions += 1
            self.out.late_impressions += late
            self.out.shown.add(item)
            self.out.new_impressions += item == doc.id and doc is world.new
            rho = RHO_RELATED if (doc.category or "") == interest else RHO_OTHER
            p = examined(slot, self.args.eta) * min(1.0, world.appeal[item] * rho)
            if self.visits.draws[v, slot] < p:
                events.append(Event(CLICK, source.id, "default", slot, item))
                self.out.clicks += 1
                self.out.late_clicks += late
                read.append(item)

    def commit(self, events: list[Event], reads: dict[int, list[str]]) -> None:
        day = self.clock.now.date()
        limit = self.settings.feedback.max_events
        for start in range(0, len(events), limit):
            self.counter.commit(events[start : start + limit], day)
        with self.factory.begin() as session:
            for reader, read in reads.items():
                self.feeds.record_reads(f"u{reader}", read, session=session, at=self.clock.now)

    def arrive(self) -> None:
        """The new article is published (its probe lists were found beforehand, ``World``)."""
        assert self.world.new is not None
        Ingester(self.factory, Featurizer(self.settings)).ingest_records([self.world.new.record()])
        self.new_in = True
        self.probes = list(self.world.probes)
        self.out.probes = len(self.probes)

    def check_probes(self) -> None:
        if not self.probes:
            return
        assert self.world.new is not None
        top = 0
        for probe in self.probes:
            ids = [i["id"] for i in _list(self.related, self.factory, probe, K)]
            top += self.world.new.id in ids[:3]
        if top and self.out.new_top3_first is None:
            self.out.new_top3_first = self.out.new_impressions
        if top * 2 >= len(self.probes):
            self.out.new_top3_after = self.out.new_impressions


ARMS = {
    "content": {},
    "+engagement": {"engagement_weight": None},
    "+coreads": {"coread_weight": None},
    "+exploration": {"explore_share": None},
    "all": {"engagement_weight": None, "coread_weight": None, "explore_share": None},
}


def arm_weights(name: str, args: Any) -> dict[str, float]:
    given = {
        "engagement_weight": getattr(args, "engagement", 0.0),
        "coread_weight": getattr(args, "coread", 0.0),
        "explore_share": getattr(args, "explore", 0.0),
    }
    weights = {"engagement_weight": 0.0, "coread_weight": 0.0, "explore_share": 0.0}
    weights.update({k: given[k] for k in ARMS[name]})
    return weights


def report(outcomes: list[Outcome], corpus: int) -> None:
    base = outcomes[0]
    print(
        f"{'arm':<14}{'CTR':>8}{'vs content':>12}{'2nd half':>10}{'vs content':>12}"
        f"{'coverage':>10}{'new: top 3 of 1 / half':>26}{'list CPU p50/p99':>18}"
    )
    for o in outcomes:
        one = "-" if o.new_top3_first is None else str(o.new_top3_first)
        half = "-" if o.new_top3_after is None else str(o.new_top3_after)
        new = f"{one} / {half} (of {o.new_impressions})"
        p50, p99 = np.percentile(o.cpu_ms, [50, 99]) if o.cpu_ms else (0.0, 0.0)
        print(
            f"{o.name:<14}{o.ctr:>8.4f}{o.ctr / base.ctr - 1:>+12.1%}{o.late_ctr:>10.4f}"
            f"{o.late_ctr / base.late_ctr - 1:>+12.1%}{len(o.shown) / corpus:>10.3f}"
            f"{new:>26}{p50:>11.1f}/{p99:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="csl-papers", choices=["csl-papers", "javaguide"])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--impressions", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--readers", type=int, default=500)
    parser.add_argument("--on-topic", type=float, default=0.85)
    parser.add_argument("--appeal-sigma", type=float, default=0.5)
    parser.add_argument("--eta", type=float, default=1.0, help="the readers' position bias")
    parser.add_argument("--product-eta", type=float, default=1.0, help="the product's model")
    parser.add_argument("--engagement", type=float, default=0.5)
    parser.add_argument("--coread", type=float, default=0.3)
    parser.add_argument("--explore", type=float, default=0.1)
    parser.add_argument("--probes", type=int, default=10)
    parser.add_argument("--prior-strength", type=float, default=50.0)
    parser.add_argument("--arms", default=",".join(ARMS))
    args = parser.parse_args()
    corpus = labelled()[args.corpus]
    world = World.make(corpus, args)
    visits = Visits.make(world, args.impressions // K, args.on_topic)
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="recengine-clicks-base-") as tmp:
        base = Path(tmp)
        base_database(world.docs, base)
        world.choose_new(base, args.probes)
        assert world.new is not None
        print(
            f"{args.corpus}: {len(world.docs)} articles (+1 new: {world.new.id}, "
            f"{len(world.probes)} probe lists), seed {args.seed}, {args.impressions:,} "
            f"impressions over {args.days} days, {args.readers} readers, appeal sigma "
            f"{args.appeal_sigma}, eta {args.eta} (product {args.product_eta}), weights "
            f"engagement {args.engagement} coread {args.coread} explore {args.explore}, "
            f"prior strength {args.prior_strength}",
            flush=True,
        )
        for name in args.arms.split(","):
            found = run_arm(name, arm_weights(name, args), world, visits, base, args)
            outcomes.append(found)
            print(f"  {name}: CTR {found.ctr:.4f} ({found.seconds:.0f} s)", flush=True)
    report(outcomes, len(world.docs) + 1)


if __name__ == "__main__":
    main()
