"""The cards a Spark reindex derives on its executors (``pipeline.reindex.cards``).

The driver finds the live articles whose card is missing or stale (one streaming query of ids)
and cuts them into ranges of about ``spark.read_partition_rows``; each task derives and writes
the cards of its range, page by page in short transactions, with recengine's own SQL (the
database must be reachable from the executors, as for the rest of the job). Cards are derived
from the stored articles whatever the job's input (an export file holds no cards).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.reindex.cards import derive_page
from recengine.pipeline.reindex.spark.source import worker_factory
from recengine.storage.db import transaction
from recengine.storage.models import Article
from recengine.text.cleaning.excerpt import card_rule


def fill_cards_on(
    spark: Any, factory: sessionmaker[Session], url: str, settings: Settings, blob: str
) -> int:
    """Derive the missing and stale cards on ``spark``'s executors; returns how many were
    looked at (``blob``: the settings as executors read them, ``spark.compute.settings_blob``)."""
    ranges = stale_ranges(factory, settings)
    if not ranges:
        return 0
    rdd = spark.sparkContext.parallelize(ranges, len(ranges))
    return int(rdd.map(lambda bounds: derive_range(url, blob, bounds)).sum())


def stale_ranges(factory: sessionmaker[Session], settings: Settings) -> list[tuple[int, int]]:
    """``(after, before)`` id ranges holding about ``spark.read_partition_rows`` live articles
    whose card is missing or stale each."""
    rule = card_rule(settings.ingest.summary_chars)
    per_range = settings.spark.read_partition_rows
    starts: list[int] = []
    last = None
    with transaction(factory) as session:
        ids = session.execute(
            select(Article.id)
            .where(
                Article.deleted_at.is_(None),
                or_(Article.card_rule.is_(None), Article.card_rule != rule),
            )
            .order_by(Article.id),
            execution_options={"yield_per": 10_000},
        ).scalars()
        for n, article_id in enumerate(ids):
            if n % per_range == 0:
                starts.append(article_id)
            last = article_id
    if last is None:
        return []
    return [(start - 1, end) for start, end in pairwise([*starts, last + 1])]


def derive_range(url: str, blob: str, bounds: tuple[int, int]) -> int:
    """On an executor: the cards of the stale articles with ``after < id < before``."""
    settings = Settings(**json.loads(blob))
    factory = worker_factory(url)
    after, before = bounds
    done = 0
    for n in _pages(factory, settings, after, before):
        done += n
    return done


def _pages(
    factory: sessionmaker[Session], settings: Settings, after: int, before: int
) -> Iterator[int]:
    while True:
        n, after = derive_page(factory, settings, after, before)
        if n == 0:
            return
        yield n
