"""Cluster upkeep at ingest: work per write must not grow with the cluster it joins (issue 13.1).

Data: templated pages (the way a weather or stock-notice page type, or a spam burst, fills a
site: one template, a few values changed per page), each a near-duplicate of every other, all
joining one cluster; plus, as the reference in the same process, unique pages (real inews
articles) written one at a time beside it at the same database size. SQLite, default settings,
``Ingester.ingest_records`` end to end (clean, tokenize, features, index, clusters, commit).

Figures:

* templated batches: ``--batches`` batches of ``--batch`` pages each; seconds per batch
  (target: every batch within 1.5x the first: total work linear in the pages);
* one write into a cluster of size M (after each batch, and at the small sizes the issue
  measured: 25, 100, 400): median of ``--writes`` single-page writes (target: under 50 ms at
  10,000), each followed by one write of a unique real article (their median beside it).

With ``--pinned N`` (issue 13.1, the editors' overrides): then a second cluster of ``N``
templated pages of another page type (stock notices), its canonical pinned to a later page
and one page marked ``not_duplicate`` against all; figures: the two override changes, one more
write into it (median of ``--writes``, target under 50 ms at 10,000) beside one into the plain
cluster, and the full recluster (``Deduplicator.recluster``) before and after the overrides.

Usage::

    python -m bench.cluster_upkeep [--batches 10] [--batch 1000] [--writes 5] [--pinned 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bench.corpus import inews_docs
from bench.store import sqlite_store
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.overrides import NewOverride, Overrides
from recengine.storage.db import transaction
from recengine.storage.models import Article, ClusterMember
from recengine.storage.state import begin_write

_CITIES = ("北京", "上海", "广州", "深圳", "成都", "杭州", "武汉", "西安", "南京", "重庆")
_SKY = ("晴", "多云", "阴", "小雨", "阵雨", "雷阵雨", "小雪", "雾")
_TEMPLATE = (
    "{city}市气象台{month}月{day}日{hour}时发布天气预报：今天白天{sky}，最高气温{hi}℃，"
    "最低气温{lo}℃，{wind}风{level}级。夜间{sky2}，相对湿度{hum}%。\n"
    "气象台提醒：近期早晚温差较大，请市民注意适时增减衣物，预防感冒；雨天路滑，驾车出行请减速"
    "慢行，注意交通安全。空气质量方面，今天全市空气质量以良为主，首要污染物为细颗粒物，"
    "易感人群应适当减少户外活动。更多天气信息请关注本台官方网站和微信公众号，或拨打气象服务"
    "热线查询未来七天的天气预报和生活气象指数。"
)


_NOTICE = (
    "{code}{name}股份有限公司关于{year}年第{q}季度业绩预告的公告。本公司及董事会全体成员保证信息"
    "披露的内容真实、准确、完整，没有虚假记载、误导性陈述或重大遗漏。一、本期业绩预计情况：预计"
    "归属于上市公司股东的净利润{profit}万元，同比{trend}{pct}%。二、业绩预告预审计情况：本次业绩"
    "预告未经注册会计师预审计。三、业绩变动原因说明：报告期内公司主营业务{cause}。四、其他相关"
    "说明：本次业绩预告是公司财务部门初步测算的结果，具体财务数据以公司披露的定期报告为准，敬请"
    "广大投资者注意投资风险。特此公告。{name}股份有限公司董事会 {year}年{month}月{day}日"
)


def notices(n: int, rnd: random.Random, start: int) -> list[dict[str, Any]]:
    """``n`` stock notices of one template: another page type, far from the weather pages."""
    out = []
    for i in range(start, start + n):
        values = {
            "code": f"{rnd.randint(600000, 603999)}",
            "name": "华东科技",
            "year": rnd.randint(2015, 2024),
            "q": rnd.randint(1, 4),
            "profit": rnd.randint(1000, 90000),
            "trend": rnd.choice(("增长", "下降")),
            "pct": rnd.randint(1, 90),
            "cause": rnd.choice(("稳步发展", "受市场波动影响", "新产品放量", "成本上升")),
            "month": rnd.randint(1, 12),
            "day": rnd.randint(1, 28),
        }
        out.append(
            {
                "id": f"notice-{i}",
                "title": f"华东科技 {values['year']}年第{values['q']}季度业绩预告",
                "content": _NOTICE.format(**values),
                "published_at": f"2025-{1 + i // 5000 % 12:02d}-01T00:00:00+00:00",
            }
        )
    return out


def templated(n: int, rnd: random.Random, start: int) -> list[dict[str, Any]]:
    """``n`` weather pages of one template (one city: they are all the same page type)."""
    out = []
    for i in range(start, start + n):
        values = {
            "city": "北京",
            "month": rnd.randint(1, 12),
            "day": rnd.randint(1, 28),
            "hour": rnd.choice((6, 11, 17)),
            "sky": rnd.choice(_SKY),
            "sky2": rnd.choice(_SKY),
            "hi": rnd.randint(10, 35),
            "lo": rnd.randint(-5, 9),
            "wind": rnd.choice(("东", "南", "西", "北", "东北", "西南")),
            "level": rnd.randint(1, 5),
            "hum": rnd.randint(20, 95),
        }
        out.append(
            {
                "id": f"weather-{i}",
                "title": f"北京天气预报 {values['month']}月{values['day']}日",
                "content": _TEMPLATE.format(**values),
                "published_at": f"2024-{1 + i // 5000 % 12:02d}-01T00:00:00+00:00",
            }
        )
    return out


class Timed:
    """Wraps ``Deduplicator.update`` to time the cluster upkeep alone."""

    def __init__(self, ingester: Ingester) -> None:
        self.seconds = 0.0
        inner = ingester.dedup.update

        def update(session: Any, changed: Any) -> int:
            start = time.perf_counter()
            try:
                return inner(session, changed)
            finally:
                self.seconds += time.perf_counter() - start

        ingester.dedup.update = update  # type: ignore[method-assign]


def one_write(ingester: Ingester, timer: Timed, record: dict[str, Any]) -> tuple[float, float]:
    """Seconds of one single-record ingest, and of its cluster upkeep."""
    before = timer.seconds
    start = time.perf_counter()
    ingester.ingest_records([record])
    return time.perf_counter() - start, timer.seconds - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--writes", type=int, default=5)
    parser.add_argument("--pinned", type=int, default=0)
    args = parser.parse_args()
    rnd = random.Random(5)
    unique = [d.record() for d in inews_docs() if len(d.content) > 400]
    rnd.shuffle(unique)
    with tempfile.TemporaryDirectory() as tmp:
        settings, engine, factory = sqlite_store(Path(tmp))
        featurizer = Featurizer(settings)
        ingester = Ingester(factory, featurizer)
        timer = Timed(ingester)
        ingester.ingest_records(unique[:1_000])  # a corpus to fit the model on
        reindex(factory=factory, featurizer=featurizer)
        spare = iter(unique[1_000:])
        made = 0
        print(f"load average {os.getloadavg()[0]:.1f}")
        print(
            f"{'step':<34} {'cluster':>8} {'seconds':>9} {'one write ms':>13} {'upkeep ms':>10}"
            f" {'unique ms':>10} {'upkeep ms':>10}"
        )
        for size in (25, 100, 400):
            ingester.ingest_records(templated(size - made, rnd, made))
            made = size
            report(
                ingester, timer, factory, f"grown to {size}", None, made, rnd, spare, args.writes
            )
            made += args.writes
        first = None
        for b in range(args.batches):
            start = time.perf_counter()
            ingester.ingest_records(templated(args.batch, rnd, made))
            seconds = time.perf_counter() - start
            made += args.batch
            first = first or seconds
            report(
                ingester,
                timer,
                factory,
                f"batch {b + 1} ({seconds / first:.2f}x the first)",
                seconds,
                made,
                rnd,
                spare,
                args.writes,
            )
            made += args.writes
        if args.pinned:
            pinned(ingester, timer, factory, rnd, made, args.pinned, args.writes)
        print(f"load average {os.getloadavg()[0]:.1f}")
        engine.dispose()


def pinned(
    ingester: Ingester,
    timer: Timed,
    factory: Any,
    rnd: random.Random,
    made: int,
    size: int,
    writes: int,
) -> None:
    """The ``--pinned`` figures (module docstring), beside the plain cluster of ``made``."""
    for start in range(0, size, 1_000):
        ingester.ingest_records(notices(min(1_000, size - start), rnd, start))
    seconds = recluster(ingester, factory)
    print(f"\n{size} notices ingested; full recluster, no override: {seconds:.1f} s")
    editors = Overrides(factory, ingester.dedup)
    for kind, page in (("canonical", size // 2), ("not_duplicate", size // 3)):
        start = time.perf_counter()
        editors.add(NewOverride.parse(kind, f"notice-{page}", None, by="bench"))
        print(f"override {kind} on notice-{page}: {time.perf_counter() - start:.2f} s")
    with factory() as session:
        names = {r[0]: r[1] for r in session.execute(select(Article.external_id, Article.id))}
        rows = session.scalars(select(ClusterMember.canonical_id)).all()
    print(f"cluster of notice-{size // 2}: {rows.count(names[f'notice-{size // 2}']) + 1}")
    pins, plain = [], []
    pages = zip(notices(writes, rnd, size), templated(writes, rnd, made), strict=True)
    for notice, page in pages:  # interleaved: both see the same moments
        pins.append(one_write(ingester, timer, notice))
        plain.append(one_write(ingester, timer, page))
    for label, runs in (("into the pinned cluster", pins), ("into the plain cluster", plain)):
        ms = [1000 * statistics.median(x[i] for x in runs) for i in (0, 1)]
        print(f"one write {label}: {ms[0]:.1f} ms (upkeep {ms[1]:.1f} ms)", flush=True)
    print(f"full recluster with the overrides: {recluster(ingester, factory):.1f} s")


def recluster(ingester: Ingester, factory: Any) -> float:
    """Seconds of one full recluster of the active version (one transaction)."""
    start = time.perf_counter()
    with transaction(factory) as session:
        begin_write(session=session)
        ingester.dedup.recluster(session)
    return time.perf_counter() - start


def report(
    ingester: Ingester,
    timer: Timed,
    factory: Any,
    label: str,
    seconds: float | None,
    made: int,
    rnd: random.Random,
    spare: Any,
    writes: int,
) -> None:
    with factory() as session:
        cluster = session.query(ClusterMember).count() + 1
    dup, solo = [], []
    for record in templated(writes, rnd, made):  # interleaved: both see the same moments
        dup.append(one_write(ingester, timer, record))
        solo.append(one_write(ingester, timer, next(spare)))
    shown = f"{seconds:9.2f}" if seconds is not None else f"{'':>9}"
    ms = [1000 * statistics.median(x[i] for x in runs) for runs in (dup, solo) for i in (0, 1)]
    print(
        f"{label:<34} {cluster:>8} {shown} {ms[0]:>13.1f} {ms[1]:>10.1f} {ms[2]:>10.1f} "
        f"{ms[3]:>10.1f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
